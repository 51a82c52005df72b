//! Edge profiling with counters on the chords of a maximal spanning tree
//! (Ball & Larus 1994, as section 3.3 of the path profiling paper uses it):
//! the plan of `pathprof_techniques::edge`. A function's record keeps the
//! chords and the blocks an exception may unwind from; every other edge's
//! count is derived from them by flow conservation.

use pathprof_graph::{EdgeId, NodeId};
use pathprof_profile::{FunctionData, Mode, Profile};
use pathprof_techniques::edge::{self, Chords};

use super::{Counters, FunctionCfg, ModuleFacts, PlanCx, Planned, Profiler, Reader, Recorded};
use crate::error::Result;
use crate::meta::MetaError;
use crate::options::Options;

pub(super) struct Edge;
pub(super) static EDGE: Edge = Edge;

impl Profiler for Edge {
    fn name(&self) -> &'static str {
        "edge"
    }

    fn about(&self) -> &'static str {
        "Edge profiling (counters on spanning-tree chords)"
    }

    fn code(&self) -> u8 {
        1
    }

    fn mode(&self) -> Mode {
        Mode::Edge
    }

    /// The blocks where an activation may be unwound get a virtual edge to
    /// EXIT (see `edge::plan`) in a module that may throw, which must be
    /// known before the first function.
    fn facts(&self, scanned: &pathprof_wasm::Scanned, _opts: &Options) -> ModuleFacts {
        ModuleFacts {
            exceptions: scanned.may_throw_or_catch(),
            ..ModuleFacts::default()
        }
    }

    fn plan(&self, f: &FunctionCfg, cx: &PlanCx<'_>) -> Result<Planned> {
        let unwinding = crate::driver::unwinding(f, cx.facts.exceptions);
        let (plan, chords) = edge::plan(&f.cfg, cx.weights, &unwinding);
        let mut planned = Planned::new(plan);
        let w = &mut planned.record;
        w.ascending(chords.chords.iter().map(|e| e.index()));
        w.ascending(chords.unwinding.iter().map(|v| v.index()));
        if cx.template {
            planned.template = Some(template(chords, f.cfg.num_edges()));
        }
        Ok(planned)
    }

    fn read_record(&self, r: &mut Reader<'_>, f: &Recorded<'_>) -> Result<FunctionData, MetaError> {
        let chords = r.ascending(f.edges.len(), "chord", "an edge")?;
        let unwinding = r.ascending(f.blocks.len(), "unwinding block", "a block")?;
        let chords = Chords {
            chords: chords.into_iter().map(EdgeId::new).collect(),
            unwinding: unwinding.into_iter().map(NodeId::new).collect(),
        };
        Ok(template(chords, f.edges.len()))
    }

    fn decode(&self, cx: &Counters<'_>, profile: &mut Profile) -> Result<()> {
        cx.each_function(profile, |f, raw| {
            let ends = cx.abrupt_ends(f.func_index);
            let cfg = pathprof_profile::cfg_of(&f.edges, f.blocks.len());
            if let FunctionData::Edge {
                chords,
                chord_counts,
                edge_counts,
            } = &mut f.data
            {
                if chords.chords.is_empty() {
                    return Ok(()); // no chord: nothing was counted
                }
                *edge_counts = edge::decode(&cfg, chords, &raw.slots, &ends)?;
                *chord_counts = raw.slots;
            }
            Ok(())
        })
    }
}

/// An edge-profiled function's data with zero counts.
fn template(chords: Chords, edges: usize) -> FunctionData {
    FunctionData::Edge {
        chord_counts: vec![0; chords.chords.len()],
        edge_counts: vec![0; edges],
        chords,
    }
}
