//! Ball-Larus path profiling (Ball & Larus 1996, sections 3 and 4): the
//! plan of `pathprof_techniques::ball_larus`. A function's record keeps the
//! vertices truncation cut, which may depend on the weights it was planned
//! with; decoding renumbers the DAG cut there (the numbering is
//! deterministic) instead of storing it.

use pathprof_graph::dag::Dag;
use pathprof_graph::{numbering, NodeId};
use pathprof_profile::{FunctionData, Mode, Profile};
use pathprof_techniques::ball_larus::{self, Numbered, PathCounts};
use pathprof_techniques::ppp::PppInfo;

use super::{Counters, FunctionCfg, PlanCx, Planned, Profiler, Reader, Recorded};
use crate::error::Result;
use crate::meta::MetaError;

pub(super) struct Path;
pub(super) static PATH: Path = Path;

impl Profiler for Path {
    fn name(&self) -> &'static str {
        "path"
    }

    fn about(&self) -> &'static str {
        "Ball-Larus path profiling"
    }

    fn code(&self) -> u8 {
        0
    }

    fn mode(&self) -> Mode {
        Mode::Path
    }

    fn plan(&self, f: &FunctionCfg, cx: &PlanCx<'_>) -> Result<Planned> {
        if cx.template {
            // The numbering the plan was made with is the template's.
            let p = ball_larus::plan(&f.cfg, cx.weights, cx.ball_larus)?;
            let mut planned = Planned::new(p.plan);
            let cuts = &p.numbered.cut_nodes;
            planned.record.ascending(cuts.iter().map(|v| v.index()));
            planned.template = Some(template(p.numbered, None));
            return Ok(planned);
        }
        let (plan, cuts) = ball_larus::plan_only(&f.cfg, cx.weights, cx.ball_larus)?;
        let mut planned = Planned::new(plan);
        planned.record.ascending(cuts.iter().map(|v| v.index()));
        Ok(planned)
    }

    fn read_record(&self, r: &mut Reader<'_>, f: &Recorded<'_>) -> Result<FunctionData, MetaError> {
        let cuts = r.ascending(f.blocks.len(), "cut vertex", "a block")?;
        let cuts: Vec<NodeId> = cuts.into_iter().map(NodeId::new).collect();
        path_data(f, &cuts, None).map_err(|reason| f.corrupt(r, reason))
    }

    fn decode(&self, cx: &Counters<'_>, profile: &mut Profile) -> Result<()> {
        cx.each_function(profile, |f, raw| {
            if let FunctionData::Path {
                numbered, counts, ..
            } = &mut f.data
            {
                *counts = ball_larus::decode(numbered, &raw)?;
            }
            Ok(())
        })
    }
}

/// Numbers the CFG cut at `cuts` as `ball_larus::plan` and `ppp::plan`
/// did (both record the vertices they cut: they may depend on the weights
/// planned with, or, for PPP, on the profile that named the interesting
/// paths).
pub(super) fn path_data(
    f: &Recorded<'_>,
    cuts: &[NodeId],
    ppp: Option<PppInfo>,
) -> Result<FunctionData, String> {
    let cfg = pathprof_profile::cfg_of(f.edges, f.blocks.len());
    let (dag, numbering) = Dag::with_cuts(&cfg, cuts)
        .and_then(|dag| numbering::number(&dag).map(|n| (dag, n)))
        .map_err(|e| e.to_string())?;
    let numbered = ball_larus::numbered(&dag, &numbering);
    if let Some(info) = &ppp {
        if info.interesting.iter().any(|&p| p >= numbered.total) {
            return Err("an interesting path is out of range".into());
        }
    }
    Ok(template(numbered, ppp))
}

/// A path-profiled function's data with zero counts.
pub(super) fn template(numbered: Numbered, ppp: Option<PppInfo>) -> FunctionData {
    let counts = PathCounts {
        self_loops: vec![0; numbered.self_loops.len()],
        ..Default::default()
    };
    FunctionData::Path {
        numbered,
        counts,
        ppp: ppp.map(Box::new),
    }
}
