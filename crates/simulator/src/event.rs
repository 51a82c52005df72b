//! The branch stream (thesis 5.2): what the commit stage passes to the path
//! profiler for every retiring branch.
//!
//! The thesis classifies each branch as a call, a return, an indirect branch,
//! a forward branch or a backward branch (5.2). A WebAssembly producer fills
//! these fields from the CFG: addresses are module byte offsets, and
//! `backward` is set exactly for branches to a loop header (wasm's only
//! backward control transfer), so "backward" does not depend on code layout.
//!
//! Departure from the thesis: a `br_table` has statically known targets, so it
//! is a [`BranchKind::Switch`] whose chosen arm is recorded in the path
//! descriptor (log2 of its arm count in bits), instead of an indirect branch
//! that ends the path. That keeps the hardware's Ball-Larus paths identical to
//! the software profiler's, which do not end at a `br_table`.

use serde::{Deserialize, Serialize};

/// What kind of control transfer retired.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BranchKind {
    /// A two-way conditional branch (`br_if`, `if`, `br_on_*`) and its outcome.
    Conditional { taken: bool },
    /// A multi-way branch with static targets (`br_table`): `arm` of `arms`.
    Switch { arm: u32, arms: u32 },
    /// An unconditional direct branch (`br`; fall-through into a loop header
    /// is reported as one too when it is backward-free, so producers may omit
    /// plain fall-throughs).
    Jump,
    /// A direct or indirect call (`call`, `call_indirect`, `call_ref`): the
    /// target is the callee's first block.
    Call { indirect: bool },
    /// A return to the caller (`return`, falling off the end, `end` of the
    /// function body). `target` is 0 when the caller is the host.
    Return,
    /// A tail call (`return_call*`): the caller's frame ends and the callee
    /// starts in its place.
    TailCall { indirect: bool },
    /// An exception thrown (`throw`, `throw_ref`) or a trap: frames are
    /// unwound to a catch handler or out of the program. `frames` is how
    /// many frames the unwinding pops (those of the stack above the handler).
    Throw { frames: u32 },
    /// Control went through code the stream does not see (an import), and
    /// no branch of the program ends a path there: an exception it threw
    /// unwinds `frames` frames above the one that catches (a `Catch`
    /// follows), or it calls back into the program (`frames` 0, a `Call`
    /// follows). The paths in flight in the frames unwound, and the
    /// catcher's, are cut short; whole-program paths (one in flight) lose
    /// the one in flight, which the unseen code's branches would have ended.
    Unwind { frames: u32 },
    /// Control arrives at a catch handler (`try_table` clause target).
    Catch,
}

/// One retiring branch.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BranchEvent {
    pub kind: BranchKind,
    /// Address of the branch instruction (module byte offset).
    pub address: u32,
    /// Address control goes to: the first instruction of the target block.
    pub target: u32,
    /// The branch goes to a loop header (a backward branch, thesis 5.2).
    pub backward: bool,
    /// Instructions retired since the previous branch event, this branch
    /// included: the base of the "block event counter" (5.3) for the
    /// instructions metric and of the timing model's base cycles (5.4).
    pub instrs: u32,
}

/// A data access (load or store) of the run, for the cache model (5.3's
/// cache-miss metric), placed among a batch's branches: it came after the
/// first `at` branches of the batch and before the others.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MemoryAccess {
    pub at: u32,
    pub addr: u64,
    pub store: bool,
}
