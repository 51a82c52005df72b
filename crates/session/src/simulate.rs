//! `pathprof simulate`: the programmable hardware path profiler of
//! Vaswani's thesis (chapter 5) evaluated on a real run.
//!
//! The program runs once on the embedded engine, instrumented with the
//! buffered edge trace; [`crate::branch_trace`] turns its edges into the
//! stream of retiring branches the thesis' profiler reads from its branch
//! queue, and every configuration asked for (one, or a sweep) consumes that
//! stream side by side as it is produced ([`pathprof_simulator::Sweep`]): no
//! trace is stored. Each configuration reports its Hot Path Table, the exact
//! profile of the same path type (an unbounded table fed the same paths),
//! their complete and dynamic overlap (5.5.2), the table's statistics and
//! the modelled overhead per branch-queue length (5.5.3).
//!
//! With a cache-miss metric the module also records its loads and stores
//! ([`pathprof_wasm::trace_accesses`]); they reach the simulators with the
//! batch of branches they fall among, each placed after the branches that
//! preceded it, so a path's misses are those of its own accesses.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::error::{bail, Context, Result};
use pathprof_runner::{Exit, RunOptions};
use pathprof_simulator::{
    BranchEvent, HotPath, HptConfig, IndexFn, MemoryAccess, Metric, PathType, Replacement,
    SimConfig, SimResult, Sweep,
};

use pathprof_core::report::BlockRef;
use pathprof_core::source::SourceMap;
use pathprof_simulator::PathDescriptor;
use pathprof_wasm::branches::{HwStep, PathEnd, Regenerator, WalkRules};

use crate::trace_file::{Header, Record, TraceReader, TraceWriter};

/// Branches handed to the simulators at a time: large enough to amortise
/// the per-batch work, small enough to stay in cache.
const BATCH: usize = 8192;

/// Branches between two calls of [`simulate_with_progress`]'s callback.
pub const PROGRESS_EVERY: u64 = 1 << 24;

/// What one `pathprof simulate` run measured.
pub struct Simulated {
    pub exit: Exit,
    pub results: Vec<SimResult>,
    /// Branch events the run produced.
    pub branches: u64,
    /// Data accesses the run made, when a cache metric asked for them.
    pub accesses: Option<u64>,
    /// Wall time of the run with its simulation (instrumenting and
    /// compiling excluded).
    pub seconds: f64,
    /// CPU time of the thread that ran the program and fed the simulators
    /// over the same span (the program, its trace and the simulation).
    pub cpu_seconds: f64,
    /// The part of `cpu_seconds` spent in the simulators ([`Sweep::feed`]):
    /// `branches / simulator_cpu_seconds` is the simulator's speed.
    pub simulator_cpu_seconds: f64,
}

/// Runs `module` (the original bytes) under `opts` and feeds its branch
/// stream to every configuration of `configs`.
pub fn simulate(
    module: &[u8],
    opts: RunOptions,
    configs: Vec<SimConfig>,
    threads: usize,
) -> Result<Simulated> {
    simulate_with_progress(module, opts, configs, threads, |_| {})
}

/// [`simulate`], telling `progress` the branches simulated so far after
/// every [`PROGRESS_EVERY`] of them.
pub fn simulate_with_progress(
    module: &[u8],
    opts: RunOptions,
    configs: Vec<SimConfig>,
    threads: usize,
    progress: impl FnMut(u64) + Send + 'static,
) -> Result<Simulated> {
    simulate_saving(module, opts, configs, threads, progress, None)
}

/// Whether a configuration of `configs` counts cache misses (the run must
/// record its data accesses).
fn needs_accesses(configs: &[SimConfig]) -> bool {
    configs
        .iter()
        .any(|c| matches!(c.metric, Metric::L1Misses | Metric::L2Misses))
}

/// [`simulate_with_progress`], saving the branch stream (and the data
/// accesses, when a cache metric records them) to `save` as the
/// simulators are fed it ([`crate::trace_file`]); `save` is committed
/// only when the run and its simulation succeed.
pub fn simulate_saving(
    module: &[u8],
    opts: RunOptions,
    configs: Vec<SimConfig>,
    threads: usize,
    progress: impl FnMut(u64) + Send + 'static,
    save: Option<pathprof_profile::AtomicFile>,
) -> Result<Simulated> {
    let with_accesses = needs_accesses(&configs);
    let save = save
        .map(|file| {
            let header = Header {
                module_hash: pathprof_wasm::module_hash(module),
                accesses: with_accesses,
            };
            TraceWriter::new(file, &header)
        })
        .transpose()?;
    let state = Arc::new(Mutex::new(Feeder::new(configs, threads, progress, save)?));
    let engine = pathprof_runner::engine_without_fuel()?;
    let feeder = Arc::clone(&state);
    let clock = Instant::now();
    let cpu = crate::run_cmd::thread_cpu_s();
    let (outcome, _frames) = if with_accesses {
        // Branches and accesses interleave: one lock each keeps their order.
        let on_branch = move |ev| lock(&feeder).push(ev);
        let feeder = Arc::clone(&state);
        let on_access = move |addr, store| lock(&feeder).access(addr, store);
        crate::branch_trace::run_command_with_accesses(&engine, module, opts, on_branch, on_access)?
    } else {
        let mut batched = Batched {
            feeder,
            events: Vec::with_capacity(LOCAL_BATCH),
        };
        crate::branch_trace::run_command(
            &engine,
            module,
            opts,
            #[inline(always)]
            move |ev| batched.push(ev),
        )?
    };
    // The run dropped its sink, and with it the last batch, flushed.
    if Arc::strong_count(&state) != 1 {
        bail!("internal error: the branch stream outlived the run");
    }
    let mut state = lock(&state);
    state.finish(outcome.exit, with_accesses, (clock, cpu))
}

fn lock(feeder: &Mutex<Feeder>) -> std::sync::MutexGuard<'_, Feeder> {
    feeder.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Branches between two locks of the feeder.
const LOCAL_BATCH: usize = 4096;

/// The branches of a run on their way to the feeder: written where the
/// branch stream makes them (the push is inlined into it), handed over in
/// bulk under one lock. Passed one by one, each event was read back as
/// 16-byte words right after the stream stored it field by field, a
/// store-forwarding stall, and the feeder was locked for each: a third of
/// a simulated run (zlib). The last batch goes when the run drops it.
struct Batched {
    feeder: Arc<Mutex<Feeder>>,
    events: Vec<BranchEvent>,
}

impl Batched {
    #[inline(always)]
    fn push(&mut self, ev: BranchEvent) {
        self.events.push(ev);
        if self.events.len() == LOCAL_BATCH {
            self.flush();
        }
    }

    #[inline(never)]
    fn flush(&mut self) {
        lock(&self.feeder).push_all(&self.events);
        self.events.clear();
    }
}

impl Drop for Batched {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Simulates the branch stream saved in `trace` (`simulate --save-trace`)
/// instead of running the program, which must be the module whose hash is
/// `module_hash`: the results are those of the run that saved it.
pub fn replay(
    module_hash: &str,
    trace: &std::path::Path,
    configs: Vec<SimConfig>,
    threads: usize,
    progress: impl FnMut(u64) + Send + 'static,
) -> Result<Simulated> {
    let mut reader = TraceReader::open(trace)?;
    if reader.header.module_hash != module_hash {
        bail!(
            "a trace of another module (sha256 {}), not of this one ({module_hash})",
            reader.header.module_hash
        );
    }
    let with_accesses = needs_accesses(&configs);
    if with_accesses && !reader.header.accesses {
        bail!("the trace has no data accesses for a cache metric: save it with --metric l1-misses or l2-misses");
    }
    let mut feeder = Feeder::new(configs, threads, progress, None)?;
    let clock = Instant::now();
    let cpu = crate::run_cmd::thread_cpu_s();
    loop {
        match reader.read_record()? {
            Record::Batch(branches, mut accesses) => {
                // As a live run without a cache metric records none.
                if !with_accesses {
                    accesses.clear();
                }
                feeder.batch = branches;
                feeder.accesses = accesses;
                feeder.flush();
            }
            Record::End(exit) => return feeder.finish(exit, with_accesses, (clock, cpu)),
        }
    }
}

/// The simulators and the batch being filled.
struct Feeder {
    /// Where the stream is saved, if asked, and the first error saving it.
    save: Option<TraceWriter>,
    save_error: Option<crate::error::Error>,
    sweep: Sweep,
    batch: Vec<BranchEvent>,
    /// The data accesses among the batch's branches.
    accesses: Vec<MemoryAccess>,
    branches: u64,
    access_count: u64,
    /// CPU time spent in `sweep.feed`.
    cpu_seconds: f64,
    progress: Box<dyn FnMut(u64) + Send>,
}

impl Feeder {
    fn new(
        configs: Vec<SimConfig>,
        threads: usize,
        progress: impl FnMut(u64) + Send + 'static,
        save: Option<TraceWriter>,
    ) -> Result<Feeder> {
        let mut sweep = Sweep::new(configs)?;
        sweep.set_threads(threads);
        Ok(Feeder {
            save,
            save_error: None,
            sweep,
            batch: Vec::with_capacity(BATCH),
            accesses: Vec::new(),
            branches: 0,
            access_count: 0,
            cpu_seconds: 0.0,
            progress: Box::new(progress),
        })
    }

    /// The last batch fed, the trace ended, and what the run measured
    /// (`since`: the wall clock and thread CPU time at its start).
    fn finish(
        &mut self,
        exit: Exit,
        with_accesses: bool,
        since: (Instant, f64),
    ) -> Result<Simulated> {
        self.flush();
        if let Some(e) = self.save_error.take() {
            return Err(e.context("saving the trace"));
        }
        if let Some(save) = self.save.take() {
            save.finish(&exit).context("saving the trace")?;
        }
        Ok(Simulated {
            exit,
            results: self.sweep.results(),
            branches: self.branches,
            accesses: with_accesses.then_some(self.access_count),
            seconds: since.0.elapsed().as_secs_f64(),
            cpu_seconds: crate::run_cmd::thread_cpu_s() - since.1,
            simulator_cpu_seconds: self.cpu_seconds,
        })
    }

    fn push(&mut self, ev: BranchEvent) {
        self.batch.push(ev);
        if self.batch.len() == BATCH {
            self.flush();
        }
    }

    /// [`Feeder::push`] of each of `events`, copied in bulk.
    fn push_all(&mut self, mut events: &[BranchEvent]) {
        while !events.is_empty() {
            let room = BATCH - self.batch.len();
            let (now, rest) = events.split_at(room.min(events.len()));
            self.batch.extend_from_slice(now);
            if self.batch.len() == BATCH {
                self.flush();
            }
            events = rest;
        }
    }

    fn access(&mut self, addr: u32, store: bool) {
        self.accesses.push(MemoryAccess {
            at: self.batch.len() as u32,
            addr: u64::from(addr),
            store,
        });
        // A loop of accesses without a branch must not grow without bound.
        if self.accesses.len() == 4 * BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let before = self.branches / PROGRESS_EVERY;
        self.branches += self.batch.len() as u64;
        if self.branches / PROGRESS_EVERY > before {
            (self.progress)(self.branches);
        }
        self.access_count += self.accesses.len() as u64;
        if let Some(save) = &mut self.save {
            if let Err(e) = save.batch(&self.batch, &self.accesses) {
                // The run goes on; the error is reported at its end.
                self.save_error = Some(e);
                self.save = None;
            }
        }
        let start = crate::run_cmd::thread_cpu_s();
        self.sweep.feed_with_accesses(&self.batch, &self.accesses);
        self.cpu_seconds += crate::run_cmd::thread_cpu_s() - start;
        self.batch.clear();
        self.accesses.clear();
    }
}

/// The grid of `simulate --sweep` around `base` (Figs. 5.6-5.8): HPT sizes
/// 128..4096 entries, 1..32 ways (no more than entries), both index
/// functions, both replacement policies; everything else as in `base`.
pub fn sweep_grid(base: &SimConfig) -> Vec<SimConfig> {
    let mut grid = Vec::new();
    for entries in [128u32, 256, 512, 1024, 2048, 4096] {
        for ways in [1u32, 2, 4, 8, 16, 32] {
            for index in [IndexFn::Address, IndexFn::Xor] {
                for replacement in [Replacement::Lfu, Replacement::Lru] {
                    let mut c = base.clone();
                    c.hpt = HptConfig {
                        entries,
                        ways,
                        index,
                        replacement,
                    };
                    c.label = label(&c.hpt);
                    grid.push(c);
                }
            }
        }
    }
    grid
}

/// `512x4 xor lfu`.
pub fn label(h: &HptConfig) -> String {
    format!(
        "{}x{} {} {}",
        h.entries,
        h.ways,
        index_name(h.index),
        replacement_name(h.replacement)
    )
}

fn index_name(i: IndexFn) -> &'static str {
    match i {
        IndexFn::Address => "address",
        IndexFn::Xor => "xor",
    }
}

fn replacement_name(r: Replacement) -> &'static str {
    match r {
        Replacement::Lfu => "lfu",
        Replacement::Lru => "lru",
        Replacement::SpaceSaving => "space-saving",
        Replacement::Frequent => "frequent",
    }
}

pub fn path_type_name(t: PathType) -> String {
    match t {
        PathType::Bl => "bl".into(),
        PathType::Wpp => "wpp".into(),
        PathType::ExtendedLoop { max } => format!("extended-loop (max {max})"),
        PathType::ExtendedCall { max } => format!("extended-call (max {max})"),
    }
}

/// Where a hardware path ran, for people: its blocks, walked back from its
/// start address and outcome bits ([`pathprof_wasm::branches::regenerate`]),
/// with their source lines, as `pathprof report` shows a Ball-Larus path.
pub struct Places {
    /// Per defined function: its name and each node's (offset, end).
    functions: HashMap<u32, (String, Vec<Option<(u32, u32)>>)>,
    /// Block start -> (function index, node).
    starts: HashMap<u32, (u32, usize)>,
    regenerator: Regenerator,
    source: Option<SourceMap>,
}

/// A hardware path as blocks, for reports: those of the function it starts
/// in, then, for an extended-call path, each call and return it crosses
/// with the blocks it runs next.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlacedPath {
    pub function: String,
    pub blocks: Vec<BlockRef>,
    /// The extended calls and returns it crosses, in order (none for paths
    /// of other types).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub crossings: Vec<PlacedCrossing>,
    /// Whether it began inside its first block (at a return site).
    pub mid_block: bool,
    pub end: PathEnd,
}

/// An extended call or return of a path, and the blocks it runs next.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlacedCrossing {
    pub step: Crossing,
    /// The call instruction's offset, or for a return the return site's.
    pub at: u32,
    /// The function the path goes on in: the callee, or the caller.
    pub function: String,
    /// Empty when the path was split at the call or return.
    pub blocks: Vec<BlockRef>,
}

/// How a path crosses into another function.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Crossing {
    Call,
    Return,
}

impl PlacedPath {
    /// Every block, in order.
    pub fn all_blocks(&self) -> impl Iterator<Item = &BlockRef> {
        self.blocks
            .iter()
            .chain(self.crossings.iter().flat_map(|c| &c.blocks))
    }
}

impl Places {
    pub fn new(module: &[u8]) -> Result<Places> {
        let info = pathprof_wasm::analyze(module)?;
        let regenerator = Regenerator::new(module, &info)?;
        let mut functions = HashMap::new();
        let mut starts = HashMap::new();
        for f in info.functions.iter().flatten() {
            let name = f
                .name
                .clone()
                .unwrap_or_else(|| format!("func[{}]", f.func_index));
            let spans: Vec<_> = f
                .blocks
                .iter()
                .map(|b| b.map(|b| (b.offset, b.end)))
                .collect();
            for (i, b) in f.blocks.iter().enumerate() {
                if let Some(b) = b {
                    starts.insert(b.offset, (f.func_index, i));
                }
            }
            functions.insert(f.func_index, (name, spans));
        }
        Ok(Places {
            functions,
            starts,
            regenerator,
            source: SourceMap::load(module),
        })
    }

    /// `main block 7@0x2ab [demo.c:38]`, or the bare address.
    pub fn describe(&self, start: u32) -> String {
        let Some(&(func, block)) = self.starts.get(&start) else {
            return format!("{start:#x}");
        };
        let (name, spans) = &self.functions[&func];
        let line = spans[block]
            .and_then(|(offset, end)| self.source.as_ref()?.locate(offset, end))
            .map(|l| format!(" [{l}]"))
            .unwrap_or_default();
        format!("{name} block {block}@{start:#x}{line}")
    }

    fn name(&self, func: u32) -> Option<&String> {
        self.functions.get(&func).map(|f| &f.0)
    }

    /// The blocks of the path `p` of a profiler programmed with `config`;
    /// `None` for a descriptor that names no walk of this module, or whose
    /// bits the walk cannot tell apart
    /// ([`pathprof_wasm::branches::regenerate`]).
    pub fn path(&self, p: &PathDescriptor, config: &SimConfig) -> Option<PlacedPath> {
        let r = self.regenerator.regenerate(p, walk_rules(config))?;
        let mut placed = PlacedPath {
            function: self.name(r.func)?.clone(),
            blocks: Vec::new(),
            crossings: Vec::new(),
            mid_block: r.mid_block,
            end: r.end,
        };
        for (i, step) in r.steps.iter().enumerate() {
            let crossing = match *step {
                HwStep::Block { func, node, at } => {
                    let (_, end) = self.functions.get(&func)?.1[node.index()]?;
                    // A block entered at a return site runs from inside.
                    let block = BlockRef {
                        block: node,
                        offset: at,
                        source: self.source.as_ref().and_then(|s| s.locate(at, end)),
                    };
                    match placed.crossings.last_mut() {
                        Some(c) => c.blocks.push(block),
                        None => placed.blocks.push(block),
                    }
                    continue;
                }
                HwStep::Edge { .. } => continue,
                HwStep::Call { at, callee } => (Crossing::Call, at, callee),
                HwStep::Return { to } => {
                    // The caller: the next block's function, or (split
                    // there) the function the return site is in.
                    let caller = match r.steps.get(i + 1) {
                        Some(&HwStep::Block { func, .. }) => func,
                        _ => self.function_at(to)?,
                    };
                    (Crossing::Return, to, caller)
                }
            };
            let (step, at, func) = crossing;
            placed.crossings.push(PlacedCrossing {
                step,
                at,
                function: self.name(func)?.clone(),
                blocks: Vec::new(),
            });
        }
        Some(placed)
    }

    /// The function (module index) with a block holding the address `at`.
    fn function_at(&self, at: u32) -> Option<u32> {
        self.functions.iter().find_map(|(&func, (_, spans))| {
            spans
                .iter()
                .flatten()
                .any(|&(offset, end)| offset <= at && at < end)
                .then_some(func)
        })
    }

    /// `main: 3@0x1a 4@0x2b 7@0x40  [demo.c:31 -> demo.c:40]`, or for a path
    /// that crossed calls `main: 3@0x1a | call@0x1f f: 1@0x50 | ret main:
    /// 3@0x21 5@0x30` (as `report` shows interprocedural paths), or where it
    /// starts when it cannot be walked.
    pub fn path_text(&self, p: &PathDescriptor, config: &SimConfig) -> String {
        let Some(placed) = self.path(p, config) else {
            return self.describe(p.start);
        };
        let blocks = |blocks: &[BlockRef]| -> String {
            blocks
                .iter()
                .map(|b| format!(" {}@{:#x}", b.block.index(), b.offset))
                .collect()
        };
        let mut s = format!("{}:{}", placed.function, blocks(&placed.blocks));
        for c in &placed.crossings {
            s += &match c.step {
                Crossing::Call => format!(" | call@{:#x} {}:", c.at, c.function),
                Crossing::Return => format!(" | ret {}:", c.function),
            };
            s += &blocks(&c.blocks);
        }
        let end = match placed.end {
            PathEnd::Backward => " (backward)",
            PathEnd::Split => " (split)",
            PathEnd::InBlock => "",
        };
        let all: Vec<BlockRef> = placed.all_blocks().cloned().collect();
        format!("{s}{end}{}", pathprof_core::report::source_span(&all))
    }
}

/// What the walk back from a descriptor needs of the configuration.
fn walk_rules(c: &SimConfig) -> WalkRules {
    WalkRules::new(c.path_type, c.max_path_len)
}

/// The text report of one configuration.
pub fn render(r: &SimResult, places: &Places, top: usize) -> String {
    let mut s = String::new();
    let c = &r.config;
    s += &format!(
        "configuration: {} ({} paths, metric {:?}, stack {}, max length {})\n",
        label(&c.hpt),
        path_type_name(c.path_type),
        c.metric,
        c.stack_depth,
        c.max_path_len
    );
    s += &format!(
        "accuracy: complete overlap {:.2} %",
        100.0 * r.complete_overlap
    );
    if let Some(d) = &r.dynamic_overlap {
        s += &format!(
            ", dynamic overlap {:.2} % (mean of {} windows of {} instructions)",
            100.0 * d.mean,
            d.per_window.len(),
            d.window_instrs
        );
    }
    s += "\n";
    let h = &r.hpt;
    s += &format!(
        "hot path table: {} lookups, {} hits, {} misses, {} evictions, {} saturations\n",
        h.lookups, h.hits, h.misses, h.evictions, h.saturations
    );
    let d = &r.detector;
    s += &format!(
        "path stack: {} branches, {} paths ({} split, {} discarded by throws), {} overflows, {} in flight at the end\n",
        d.branches, d.paths, d.splits, d.discarded_paths, d.stack.overflows, r.paths_in_flight
    );
    if let Some(p) = &r.predictor {
        s += &format!(
            "branch predictor (model): {} conditional branches, {} mispredicted ({:.2} %)\n",
            p.branches,
            p.mispredictions,
            pathprof_core::report::percent(p.mispredictions, p.branches)
        );
    }
    let k = &r.caches;
    if k.accesses > 0 {
        s += &format!(
            "data caches (model): {} accesses ({} stores), {} L1 misses ({:.2} %), {} L2 misses ({:.2} %)\n",
            k.accesses,
            k.stores,
            k.l1_misses,
            pathprof_core::report::percent(k.l1_misses, k.accesses),
            k.l2_misses,
            pathprof_core::report::percent(k.l2_misses, k.accesses)
        );
    }
    for t in &r.timing {
        s += &format!(
            "timing: queue of {}: {} stall cycles over {} base cycles = {:.3} % overhead\n",
            t.queue_length,
            t.stall_cycles,
            t.base_cycles,
            100.0 * t.overhead
        );
    }
    let total: u64 = r.exact_profile.iter().map(|p| p.weight).sum();
    s += &format!(
        "hot paths ({} in the table, {} distinct in the run):\n",
        r.hardware_profile.len(),
        r.exact_profile.len()
    );
    s += "      weight       %  exact weight  branches  outcomes  blocks (id@offset)\n";
    let exact: HashMap<_, _> = r.exact_profile.iter().map(|p| (p.path, p.weight)).collect();
    for p in r.hardware_profile.iter().take(top) {
        let exact = exact.get(&p.path).copied().unwrap_or(0);
        s += &row(p, exact, total, &places.path_text(&p.path, c));
    }
    s
}

fn row(p: &HotPath, exact: u64, total: u64, place: &str) -> String {
    let share = pathprof_core::report::percent(p.weight, total);
    let bits = if p.path.nbits == 0 {
        "-".to_string()
    } else {
        format!(
            "{:0width$b}",
            p.path.outcomes,
            width = p.path.nbits as usize
        )
        .chars()
        .rev()
        .collect()
    };
    format!(
        "{:>12} {:>6.2}% {:>13} {:>9}  {:<8}  {}\n",
        p.weight, share, exact, p.path.len, bits, place
    )
}

/// The side-by-side table of a sweep.
pub fn render_sweep(results: &[SimResult]) -> String {
    let mut s = String::from(
        "configuration              complete  dynamic  hits       misses     evictions  overhead\n",
    );
    for r in results {
        let dynamic = r
            .dynamic_overlap
            .as_ref()
            .map_or("-".to_string(), |d| format!("{:.2}%", 100.0 * d.mean));
        let overhead = r
            .timing
            .first()
            .map_or("-".to_string(), |t| format!("{:.3}%", 100.0 * t.overhead));
        s += &format!(
            "{:<26} {:>7.2}%  {:>7}  {:<10} {:<10} {:<10} {}\n",
            label(&r.config.hpt),
            100.0 * r.complete_overlap,
            dynamic,
            r.hpt.hits,
            r.hpt.misses,
            r.hpt.evictions,
            overhead
        );
    }
    s
}

/// An SVG chart like Figs. 5.6-5.8: complete overlap against HPT size, one
/// line per (ways, index, replacement).
pub fn sweep_chart(results: &[SimResult]) -> String {
    let (w, h, left, bottom, top, right) = (900.0, 520.0, 70.0, 60.0, 40.0, 260.0);
    let plot_w = w - left - right;
    let plot_h = h - top - bottom;
    let mut sizes: Vec<u32> = results.iter().map(|r| r.config.hpt.entries).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let (lo, hi) = (
        f64::from(sizes.first().copied().unwrap_or(1).max(1)).log2(),
        f64::from(sizes.last().copied().unwrap_or(2).max(2)).log2(),
    );
    let span = (hi - lo).max(1.0);
    let x = |entries: u32| left + plot_w * (f64::from(entries.max(1)).log2() - lo) / span;
    let y = |overlap: f64| top + plot_h * (1.0 - overlap.clamp(0.0, 1.0));
    let mut lines: Vec<(String, Vec<(u32, f64)>)> = Vec::new();
    for r in results {
        let key = format!(
            "{}-way {} {}",
            r.config.hpt.ways,
            index_name(r.config.hpt.index),
            replacement_name(r.config.hpt.replacement)
        );
        match lines.iter_mut().find(|(k, _)| *k == key) {
            Some((_, pts)) => pts.push((r.config.hpt.entries, r.complete_overlap)),
            None => lines.push((key, vec![(r.config.hpt.entries, r.complete_overlap)])),
        }
    }
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    svg += &format!("<text x=\"{left}\" y=\"24\" font-size=\"15\">Complete overlap of the hot path table with the exact profile</text>\n");
    for pct in (0..=100).step_by(20) {
        let yy = y(f64::from(pct) / 100.0);
        svg += &format!("<line x1=\"{left}\" y1=\"{yy:.1}\" x2=\"{:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{pct} %</text>\n", left + plot_w, left - 6.0, yy + 4.0);
    }
    for &e in &sizes {
        let xx = x(e);
        svg += &format!(
            "<text x=\"{xx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{e}</text>\n",
            top + plot_h + 18.0
        );
    }
    svg += &format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">HPT entries</text>\n",
        left + plot_w / 2.0,
        h - 12.0
    );
    for (i, (key, mut pts)) in lines.into_iter().enumerate() {
        pts.sort_by_key(|p| p.0);
        let hue = (i * 47) % 360;
        let dash = if key.contains("lru") {
            " stroke-dasharray=\"5,3\""
        } else {
            ""
        };
        let d: Vec<String> = pts
            .iter()
            .map(|&(e, o)| format!("{:.1},{:.1}", x(e), y(o)))
            .collect();
        svg += &format!(
            "<polyline fill=\"none\" stroke=\"hsl({hue},70%,40%)\" stroke-width=\"1.5\"{dash} points=\"{}\"/>\n",
            d.join(" ")
        );
        let ly = top + 14.0 * i as f64;
        svg += &format!("<line x1=\"{:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"hsl({hue},70%,40%)\" stroke-width=\"2\"{dash}/><text x=\"{:.1}\" y=\"{:.1}\">{key}</text>\n", left + plot_w + 12.0, left + plot_w + 32.0, left + plot_w + 36.0, ly + 4.0);
    }
    svg += "</svg>\n";
    svg
}

/// The JSON document of `simulate --json`.
pub fn json(sim: &Simulated, places: &Places) -> Result<String> {
    /// One configuration's results, and its hardware profile's paths as
    /// blocks (`null` where a path cannot be walked back).
    #[derive(serde::Serialize)]
    struct Placed<'a> {
        #[serde(flatten)]
        result: &'a SimResult,
        hot_paths: Vec<Option<PlacedPath>>,
    }
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        branches: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        accesses: Option<u64>,
        seconds: f64,
        cpu_seconds: f64,
        simulator_cpu_seconds: f64,
        exit: String,
        results: Vec<Placed<'a>>,
    }
    let exit = match &sim.exit {
        Exit::Returned => "returned".to_string(),
        Exit::ProcExit(c) => format!("proc_exit({c})"),
        Exit::Trap(m) => format!("trap: {m}"),
    };
    let results = sim
        .results
        .iter()
        .map(|r| Placed {
            result: r,
            hot_paths: r
                .hardware_profile
                .iter()
                .map(|p| places.path(&p.path, &r.config))
                .collect(),
        })
        .collect();
    serde_json::to_string_pretty(&Doc {
        branches: sim.branches,
        accesses: sim.accesses,
        seconds: sim.seconds,
        cpu_seconds: sim.cpu_seconds,
        simulator_cpu_seconds: sim.simulator_cpu_seconds,
        exit,
        results,
    })
    .context("serialising the simulation results")
}
