//! The branch stream (issue 30) against the Ball-Larus profile of the same
//! run: the stream of every fixture program (WAT fixtures, C programs at
//! -O0 and -O2) is cut into paths the way a hardware path profiler would
//! cut it (thesis 5.2): a path starts at a call's target, after a backward
//! branch and at a handler; it ends at a backward branch, a return, a tail
//! call or a throw; a call suspends the caller's path until its return.
//! Each path is mapped back to its blocks by walking the CFG from the
//! branch targets (fall-throughs make no event), and the counts of the
//! paths and self loops must equal `pathprof run --mode path`'s exactly.
//!
//! The segmentation reads only the events and the CFG: whether a branch is
//! backward, a call or a return comes from the stream, so a wrong flag or a
//! missing event gives other paths. Truncation cuts (5.3) are a parameter
//! of the profile, taken from it as the trace oracle takes them.

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use common::oracle::{self, Counts, PathKey};
use common::programs::{self, Invocation};
use pathprof::branch_trace::BranchSink;
use pathprof::driver::{self, Technique};
use pathprof_graph::{Cfg, EdgeId, NodeId};
use pathprof_runner::TraceTo;
use pathprof_wasm::branches::{BranchEvent, BranchKind};
use pathprof_wasm::{EdgeKind, FunctionCfg};

/// A frame as the segmentation follows it.
struct Frame {
    func: u32,
    block: NodeId,
    /// The path in flight: how it started and its blocks; `None` after the
    /// frame's path ended at a throw it then catches.
    path: Option<(&'static str, Vec<u32>)>,
}

/// Cuts a branch stream into Ball-Larus paths and counts them.
struct Segmenter {
    functions: HashMap<u32, FunctionCfg>,
    cuts: HashMap<u32, HashSet<NodeId>>,
    /// Per function, the targets of its backedges (self loops apart), by
    /// the oracle's own search: where a cut path starts, it says how.
    loop_heads: HashMap<u32, HashSet<NodeId>>,
    /// Module offset of each function's first block -> function index.
    entries: HashMap<u32, u32>,
    stack: Vec<Frame>,
    counts: Counts,
    /// Events by kind, to show the fixtures exercise them.
    kinds: BTreeMap<&'static str, u64>,
    /// What went wrong first.
    error: Option<String>,
}

impl Segmenter {
    fn new(module: &[u8], graphs: &BTreeMap<u32, oracle::FuncGraph>) -> Self {
        let info = pathprof_wasm::analyze(module).expect("analyze");
        let functions: HashMap<u32, FunctionCfg> = info
            .functions
            .into_iter()
            .flatten()
            .map(|f| (f.func_index, f))
            .collect();
        let entries = functions
            .values()
            .map(|f| {
                (
                    f.blocks[entry_block(f).index()].unwrap().offset,
                    f.func_index,
                )
            })
            .collect();
        Segmenter {
            cuts: graphs.iter().map(|(&f, g)| (f, g.cuts.clone())).collect(),
            loop_heads: graphs
                .iter()
                .map(|(&f, g)| (f, g.cfg.nodes().filter(|&n| g.is_loop_head(n)).collect()))
                .collect(),
            functions,
            entries,
            stack: Vec::new(),
            counts: Counts::default(),
            kinds: BTreeMap::new(),
            error: None,
        }
    }

    fn event(&mut self, ev: BranchEvent) {
        if self.error.is_none() {
            if let Err(e) = self.take(ev) {
                self.error = Some(format!("{ev:?}: {e}"));
            }
        }
    }

    fn take(&mut self, ev: BranchEvent) -> Result<(), String> {
        *self.kinds.entry(kind_name(ev.kind)).or_insert(0) += 1;
        match ev.kind {
            BranchKind::Call { .. } => self.call(ev.target),
            BranchKind::TailCall { .. } => {
                self.advance()?;
                self.end_path("exit");
                self.stack.pop();
                if ev.target != 0 {
                    self.call(ev.target)?;
                }
                Ok(())
            }
            BranchKind::Return => {
                self.advance()?;
                self.end_path("exit");
                self.stack.pop();
                Ok(())
            }
            BranchKind::Throw { frames } => {
                // Thrown here: the path ends at the throw.
                self.advance()?;
                self.end_path("exit");
                if let Some(top) = self.stack.last_mut() {
                    top.path = None;
                }
                let keep = self.stack.len().saturating_sub(frames as usize);
                self.stack.truncate(keep);
                Ok(())
            }
            BranchKind::Unwind { frames } => {
                // Thrown by an import: no path ends; the catch drops the
                // catcher's.
                let keep = self.stack.len().saturating_sub(frames as usize);
                self.stack.truncate(keep);
                Ok(())
            }
            BranchKind::Catch => self.catch(ev.target),
            BranchKind::Conditional { .. } | BranchKind::Jump | BranchKind::Switch { .. } => {
                self.advance()?;
                let e = self.matching_edge(ev)?;
                self.cross(e, ev.backward);
                Ok(())
            }
        }
    }

    /// A function starts at the block at `target`.
    fn call(&mut self, target: u32) -> Result<(), String> {
        let func = *self
            .entries
            .get(&target)
            .ok_or("no function starts at the target")?;
        let entry = entry_block(&self.functions[&func]);
        self.stack.push(Frame {
            func,
            block: entry,
            path: Some(("entry", vec![entry.index() as u32])),
        });
        Ok(())
    }

    /// A handler of the frame on top starts at `target` (0: the function's
    /// own label, EXIT).
    fn catch(&mut self, target: u32) -> Result<(), String> {
        let top = self.stack.last_mut().ok_or("a catch with no frame")?;
        let f = &self.functions[&top.func];
        let handler = f
            .cfg
            .succs(Cfg::ENTRY)
            .iter()
            .filter(|e| f.edge_kinds[e.index()] == EdgeKind::Catch)
            .map(|&e| f.cfg.dst(e))
            .find(|&d| offset(f, d) == target)
            .ok_or("no handler of the function at the target")?;
        top.block = handler;
        let blocks = if handler == Cfg::EXIT {
            vec![]
        } else {
            vec![handler.index() as u32]
        };
        top.path = Some(("handler", blocks));
        Ok(())
    }

    /// Follows the fall-throughs (which make no event) from the top
    /// frame's block to the block whose branch comes next.
    fn advance(&mut self) -> Result<(), String> {
        loop {
            let top = self.stack.last().ok_or("an event with no frame")?;
            let f = &self.functions[&top.func];
            let succs = f.cfg.succs(top.block);
            let [e] = succs else { return Ok(()) };
            let silent = f.edge_kinds[e.index()] == EdgeKind::Fallthrough
                && f.cfg.dst(*e) != Cfg::EXIT
                && top.block != Cfg::EXIT;
            if !silent {
                return Ok(());
            }
            self.cross(*e, false);
        }
    }

    /// The edge out of the top frame's block that `ev` took.
    fn matching_edge(&self, ev: BranchEvent) -> Result<EdgeId, String> {
        let top = self.stack.last().ok_or("a branch with no frame")?;
        let f = &self.functions[&top.func];
        let out = f.cfg.succs(top.block);
        let kind = |e: &EdgeId| f.edge_kinds[e.index()];
        let found = match ev.kind {
            BranchKind::Switch { arm, arms } => {
                let arms_here: Vec<EdgeId> = out
                    .iter()
                    .copied()
                    .filter(|e| kind(e) == EdgeKind::BrTable)
                    .collect();
                if arms_here.len() != arms as usize {
                    return Err(format!("{} br_table edges here", arms_here.len()));
                }
                arms_here.get(arm as usize).copied()
            }
            _ => out.iter().copied().find(|e| {
                let taken_kinds: &[EdgeKind] = match ev.kind {
                    BranchKind::Conditional { taken: true } => &[
                        EdgeKind::BrIf,
                        EdgeKind::IfThen,
                        EdgeKind::BrOnNull,
                        EdgeKind::BrOnNonNull,
                        EdgeKind::BrOnCast,
                        EdgeKind::BrOnCastFail,
                    ],
                    BranchKind::Conditional { taken: false } => {
                        &[EdgeKind::Fallthrough, EdgeKind::IfElse]
                    }
                    _ => &[EdgeKind::Br, EdgeKind::Fallthrough],
                };
                taken_kinds.contains(&kind(e)) && offset(f, f.cfg.dst(*e)) == ev.target
            }),
        };
        let e = found.ok_or_else(|| format!("no such edge out of block {:?}", top.block))?;
        if offset(f, f.cfg.dst(e)) != ev.target {
            return Err(format!("edge {e:?} does not go to the target"));
        }
        Ok(e)
    }

    /// The top frame crosses `e` (a branch event's when `backward` says so).
    fn cross(&mut self, e: EdgeId, backward: bool) {
        let top = self.stack.last_mut().expect("a frame");
        let (func, f) = (top.func, &self.functions[&top.func]);
        let (src, dst) = f.cfg.edge(e);
        top.block = dst;
        let cut = self.cuts.get(&func).is_some_and(|c| c.contains(&src));
        if backward && src == dst {
            *self
                .counts
                .self_loops
                .entry((func, e.index() as u32))
                .or_insert(0) += 1;
        } else if backward || cut {
            self.end_path(if cut { "cut" } else { "backedge" });
            let head = self.loop_heads.get(&func).is_some_and(|h| h.contains(&dst));
            let start = if head { "loop head" } else { "cut" };
            let top = self.stack.last_mut().expect("a frame");
            top.path = Some((start, vec![dst.index() as u32]));
        } else if let Some((_, blocks)) = &mut top.path {
            blocks.push(dst.index() as u32);
        }
    }

    /// The top frame's path ends (`end`: how, as the report spells it).
    fn end_path(&mut self, end: &str) {
        let Some(top) = self.stack.last_mut() else {
            return;
        };
        if let Some((start, blocks)) = top.path.take() {
            let key = PathKey {
                func: top.func,
                kind: format!("{start}->{end}"),
                blocks,
            };
            *self.counts.paths.entry(key).or_insert(0) += 1;
        }
    }
}

fn entry_block(f: &FunctionCfg) -> NodeId {
    f.cfg
        .succs(Cfg::ENTRY)
        .iter()
        .find(|e| f.edge_kinds[e.index()] == EdgeKind::Entry)
        .map(|&e| f.cfg.dst(e))
        .expect("an entry edge")
}

/// Module offset of a block's first instruction; 0 for EXIT.
fn offset(f: &FunctionCfg, b: NodeId) -> u32 {
    f.blocks[b.index()].map_or(0, |b| b.offset)
}

fn kind_name(k: BranchKind) -> &'static str {
    match k {
        BranchKind::Conditional { .. } => "conditional",
        BranchKind::Switch { .. } => "switch",
        BranchKind::Jump => "jump",
        BranchKind::Call { .. } => "call",
        BranchKind::Return => "return",
        BranchKind::TailCall { .. } => "tail call",
        BranchKind::Throw { .. } => "throw",
        BranchKind::Unwind { .. } => "unwind",
        BranchKind::Catch => "catch",
    }
}

/// Segments the branch stream of `inv` on `module` and compares its paths
/// with the path profile of the same run; returns the event counts by kind.
fn check(
    engine: &wasmtime::Engine,
    name: &str,
    module: &[u8],
    inv: &Invocation,
) -> BTreeMap<&'static str, u64> {
    let opts = driver::Options::default();
    let (_, profile) = programs::profiled_run(engine, module, Technique::Path, &opts, inv);
    let graphs = programs::graphs_cut_as(module, &profile);
    let seg = Arc::new(Mutex::new(Segmenter::new(module, &graphs)));
    let to_seg = seg.clone();
    let sink = BranchSink::new(module, move |ev| to_seg.lock().unwrap().event(ev)).unwrap();
    let sink = Arc::new(Mutex::new(sink));
    let traced = driver::instrument(module, Technique::Trace, &opts).unwrap();
    programs::run_to(engine, &traced.bytes, inv, Some(TraceTo::new(sink.clone())));
    sink.lock().unwrap().finish().unwrap();
    let mut seg = seg.lock().unwrap();
    if let Some(e) = &seg.error {
        panic!("{name} {inv:?}: {e}");
    }
    let expected = programs::path_counts(&profile);
    let diff = oracle::differences(&seg.counts.paths, &expected.paths);
    assert!(
        diff.is_empty(),
        "{name} {inv:?}: paths:\n{}",
        diff.join("\n")
    );
    let diff = oracle::differences(&seg.counts.self_loops, &expected.self_loops);
    assert!(
        diff.is_empty(),
        "{name} {inv:?}: self loops:\n{}",
        diff.join("\n")
    );
    std::mem::take(&mut seg.kinds)
}

fn add(total: &mut BTreeMap<&'static str, u64>, kinds: BTreeMap<&'static str, u64>) {
    for (k, n) in kinds {
        *total.entry(k).or_insert(0) += n;
    }
}

#[test]
fn wat_fixtures_branch_paths_equal_the_profile() {
    let engine = crate::common::programs::engine();
    let fixtures = programs::wat_fixtures();
    let (mut total, mut checked) = (BTreeMap::new(), 0);
    for path in fixtures {
        let module = pathprof::input::read_module(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        if programs::needs_host_imports(&engine, &module) {
            continue;
        }
        for inv in programs::export_calls(&engine, &module) {
            add(&mut total, check(&engine, &name, &module, &inv));
            checked += 1;
        }
    }
    eprintln!("{checked} calls, events {total:?}");
    assert!(checked >= 50, "only {checked} fixture calls were checked");
    for kind in [
        "conditional",
        "switch",
        "jump",
        "call",
        "return",
        "throw",
        "catch",
    ] {
        assert!(total.get(kind).is_some_and(|&n| n > 0), "no {kind} event");
    }
}

#[test]
fn c_programs_branch_paths_equal_the_profile() {
    let engine = crate::common::programs::engine();
    let build = programs::root().join("tests/fixtures/c/build");
    let (mut total, mut runs) = (BTreeMap::new(), 0);
    for (name, inv) in programs::c_cases() {
        for opt in ["O0", "O2"] {
            let path = build.join(format!("{name}.{opt}.wasm"));
            let module = std::fs::read(&path).expect("run scripts/build-c-fixtures.sh");
            add(
                &mut total,
                check(&engine, &format!("{name}.{opt}"), &module, &inv),
            );
            runs += 1;
        }
    }
    eprintln!("{runs} runs, events {total:?}");
    assert!(runs >= 60, "only {runs} C runs were checked");
    for kind in ["conditional", "switch", "jump", "call", "return"] {
        assert!(total.get(kind).is_some_and(|&n| n > 0), "no {kind} event");
    }
}
