//! The programmable hardware path profiler of Vaswani's thesis (chapter 5,
//! sections 5.1-5.5), simulated on a stream of retired branches.
//!
//! [`event`] is the stream the profiler consumes: one [`BranchEvent`] per
//! retiring branch, as the commit stage would hand it to the branch queue.
//! The simulator knows nothing of WebAssembly; `pathprof-wasm` turns a run's
//! edge trace into this stream.
//!
//! # The model
//!
//! - A *path descriptor* ([`descriptor`]) names a path by its starting
//!   address, its length in branches and its branch outcomes (a switch adds
//!   `ceil(log2(arms))` bits). Paths longer than the configured maximum
//!   (32 branches by default) are split.
//! - The *path stack* ([`stack`], 32 entries by default) holds one path per
//!   active procedure; on overflow the oldest entry is dropped and counted.
//! - The *PPCR* ([`ppcr`]) maps each class of branch to the operations
//!   update or update_count, pop, push (in that fixed order): Table 5.1 for
//!   Ball-Larus paths, Table 5.2 for whole-program-path elements, and the
//!   extension counter's qualifications for paths extended across loops or
//!   calls ([`PathType`]). The *path detector* ([`detector`]) applies them,
//!   splits full paths and repairs the stack on throws and catches.
//! - Each entry's *event counter* accumulates the configured metric (5.3):
//!   path frequency, instructions retired, branch mispredictions of a
//!   direction-predictor model ([`predictor`]) or L1/L2 misses of a
//!   data-cache model ([`cache`]) fed by a separate memory-access stream.
//! - Popped paths go to the *Hot Path Table* ([`hpt`], 5.4): set-associative
//!   (512 entries, 4 ways), indexed by address or by the xor of address,
//!   length and outcomes, LFU or LRU replacement (and, beyond the thesis,
//!   Space-Saving's inherited accumulator or the Frequent algorithm's
//!   admission filter, at the same storage), 32-bit saturating
//!   accumulators; and to an unbounded table, the exact profile.
//! - Accuracy ([`overlap`], 5.5.2): complete overlap
//!   `sum_p min(w1(p)/W1, w2(p)/W2)` of the HPT's profile with the exact
//!   one, and dynamic overlap, its mean over windows of N instructions
//!   (100 million by default).
//! - Overhead ([`timing`], 5.5.3): each branch costs the latencies of its
//!   operations (an HPT miss `log2(ways)` cycles more); a branch queue of
//!   each configured length absorbs bursts and stalls commit when full; the
//!   overhead is stall cycles over base cycles, one per retired instruction.
//! - A [`Simulator`] owns one [`SimConfig`] (TOML-readable, see [`config`])
//!   and consumes batches of branches online, never storing the stream; a
//!   [`Sweep`] feeds the same batches to many configurations. Results are
//!   [`SimResult`]s (serde).
//!
//! # Speed
//!
//! The work is split in a [`front`] (metric models, detector, exact table,
//! window clock: everything that does not depend on the HPT) and a [`back`]
//! (HPT, window HPT, queues), joined by a path-level stream of chunks of
//! branches. A [`Sweep`] runs one front per group of configurations that
//! differ only in HPT, queue lengths and label, and feeds its stream to all
//! their backs, so a sweep of HPT sizes decodes and detects each branch
//! once. Decided on instruction counts (callgrind) in
//! `docs/lab/2026-11-25-simulator-speed.md`: the default configuration
//! takes about 200 instructions per branch (35 M branches per second of
//! CPU on the shared development VM; issue 30 asks for 50 M), a sweep
//! about 100 per branch and configuration. The window HPT mirrors the
//! run's during the first window ([`overlap::WindowTable::mirroring`]),
//! and the exact table is an open-addressing map ([`pathmap`]).
//!
//! # Use
//!
//! ```
//! use pathprof_simulator::{BranchEvent, BranchKind, SimConfig, Simulator};
//!
//! let config = SimConfig::from_toml("queue_lengths = [0, 4]\n[hpt]\nentries = 64")?;
//! let mut sim = Simulator::new(config)?;
//! let ev = |kind, address, target, backward| BranchEvent {
//!     kind,
//!     address,
//!     target,
//!     backward,
//!     instrs: 4,
//! };
//! // The host calls 100; a loop at 100 runs twice; 100 returns.
//! sim.feed(&[ev(BranchKind::Call { indirect: false }, 0, 100, false)]);
//! for _ in 0..2 {
//!     sim.feed(&[ev(BranchKind::Jump, 110, 100, true)]);
//! }
//! sim.feed(&[ev(BranchKind::Return, 120, 0, false)]);
//! let r = sim.result();
//! // (100, one jump) twice, then (100, no branch) ended by the return.
//! let weights: Vec<(u32, u16, u64)> =
//!     r.hardware_profile.iter().map(|h| (h.path.start, h.path.len, h.weight)).collect();
//! assert_eq!(weights, vec![(100, 1, 2), (100, 0, 1)]);
//! assert_eq!(r.complete_overlap, 1.0);
//! assert_eq!(r.timing.len(), 2);
//! # Ok::<(), pathprof_simulator::SimError>(())
//! ```
//!
//! # Departures from the thesis
//!
//! Each module lists its own; in short:
//! - A `br_table` is a multi-way [`BranchKind::Switch`] recorded in the
//!   outcome bits, not an indirect branch that ends the path ([`event`]);
//!   backward means "to a loop header", not "to a lower address".
//! - Outcome bits are a `u128`; a path also splits past 96 outcome bits.
//! - The stack entry's event counter is 64 bits, not 8.
//! - Entries remember how many procedure frames they stand for, so that
//!   extended call paths, throws and returns keep the stack in step; an
//!   update on an empty stack starts a path at the branch (a resync).
//! - Tail calls end the caller's path and start the callee's (count, pop,
//!   push); a throw pops the entries of the frames it unwinds and the catch
//!   arrival restarts the handler frame's path; the paths so cut short are
//!   discarded (counted, never collected), as are paths in flight at the
//!   end, matching the software profiler.
//! - In call mode, indirect calls are never extended.
//! - LFU breaks ties by recency; the HPT update takes one cycle on a hit
//!   (the thesis gives only the miss cost).
//! - The predictor and caches are simple models (SimpleScalar-like
//!   bimodal/gshare/combined, LRU write-allocate caches without write-backs);
//!   only conditional branches are predicted.
//! - The timing model commits one instruction per cycle instead of an
//!   out-of-order pipeline: overheads are comparable across queue lengths
//!   and configurations, not with the thesis' figures.
//! - The dynamic overlap includes the last, partial window.
//! - The power metric of 5.3 is not modelled.

pub mod back;
pub mod cache;
pub mod config;
pub mod descriptor;
pub mod detector;
pub mod error;
pub mod event;
pub mod front;
pub mod hpt;
pub mod overlap;
pub mod pathmap;
pub mod ppcr;
pub mod predictor;
pub mod simulator;
pub mod stack;
pub mod timing;

#[cfg(test)]
mod testing;

pub use config::{Metric, SimConfig, SweepConfig};
pub use descriptor::PathDescriptor;
pub use error::SimError;
pub use event::{BranchEvent, BranchKind, MemoryAccess};
pub use hpt::{HotPath, HptConfig, IndexFn, Replacement};
pub use ppcr::PathType;
pub use simulator::{SimResult, Simulator, Sweep};
