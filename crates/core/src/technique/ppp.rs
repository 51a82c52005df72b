//! Preferential path profiling (Vaswani, Nori & Chilimbi 2007; thesis
//! chapter 3): the plan of `pathprof_techniques::ppp` for the interesting
//! paths of [`Options::ppp`](crate::options::Options::ppp). A function's
//! record keeps the interesting paths, the numbering scheme and interval,
//! the policy, the self loops the test profile saw and the vertices the DAG
//! was cut at (at the truncation threshold, or where a path profile guided
//! by weights cut it, when that profile named the interesting paths);
//! decoding renumbers the DAG cut there.

use pathprof_profile::{FunctionData, Mode, Profile};
use pathprof_techniques::ppp::{self, IdScheme, Policy, PppInfo};

use super::path::{path_data, template};
use super::{Counters, FunctionCfg, PlanCx, Planned, Profiler, Reader, Recorded, Writer};
use crate::error::Result;
use crate::meta::MetaError;

pub(super) struct Ppp;
pub(super) static PPP: Ppp = Ppp;

impl Profiler for Ppp {
    fn name(&self) -> &'static str {
        "ppp"
    }

    fn about(&self) -> &'static str {
        "Preferential path profiling of the paths named by --interesting"
    }

    fn code(&self) -> u8 {
        2
    }

    fn mode(&self) -> Mode {
        Mode::Ppp
    }

    fn plan(&self, f: &FunctionCfg, cx: &PlanCx<'_>) -> Result<Planned> {
        let chosen = &cx.opts.ppp.interesting;
        let interesting = chosen.paths.get(&f.func_index).map_or(&[][..], |v| &v[..]);
        let ppp_opts = ppp::Options {
            ball_larus: cx.ball_larus.clone(),
            policy: cx.opts.ppp.policy,
            force_ball_larus: cx.opts.ppp.force_ball_larus,
        };
        let cuts = chosen.cuts.get(&f.func_index).map(Vec::as_slice);
        let mut p = ppp::plan(&f.cfg, cx.weights, &ppp_opts, interesting, cuts)?;
        p.info.tested_self_loops = chosen
            .self_loops
            .get(&f.func_index)
            .cloned()
            .unwrap_or_default();
        let mut planned = Planned::new(p.plan);
        write_info(&mut planned.record, &p.info);
        let cuts = &p.numbered.cut_nodes;
        planned.record.ascending(cuts.iter().map(|v| v.index()));
        if cx.template {
            planned.template = Some(template(p.numbered, Some(p.info)));
        }
        Ok(planned)
    }

    fn read_record(&self, r: &mut Reader<'_>, f: &Recorded<'_>) -> Result<FunctionData, MetaError> {
        let info = read_info(r)?;
        let cuts = r.ascending(f.blocks.len(), "cut vertex", "a block")?;
        let cuts: Vec<pathprof_graph::NodeId> =
            cuts.into_iter().map(pathprof_graph::NodeId::new).collect();
        path_data(f, &cuts, Some(info)).map_err(|reason| f.corrupt(r, reason))
    }

    fn decode(&self, cx: &Counters<'_>, profile: &mut Profile) -> Result<()> {
        cx.each_function(profile, |f, raw| {
            if let FunctionData::Path {
                numbered,
                counts,
                ppp: Some(info),
            } = &mut f.data
            {
                *counts = ppp::decode(numbered, info, &raw)?;
            }
            Ok(())
        })
    }
}

fn write_info(w: &mut Writer, info: &PppInfo) {
    w.usize(info.interesting.len());
    let mut prev = 0;
    for &id in &info.interesting {
        w.delta(prev, id);
        prev = id;
    }
    w.u8(match info.numbering {
        IdScheme::Ppp => 0,
        IdScheme::BallLarus => 1,
    });
    w.i64(info.min);
    w.i64(info.max);
    w.u64(info.delta);
    w.u64(info.ball_larus_delta);
    w.u8(policy_code(info.policy));
    w.usize(info.tested_self_loops.len());
    for &l in &info.tested_self_loops {
        w.u32(l);
    }
    w.u8(u8::from(info.recorded));
}

fn policy_code(p: Policy) -> u8 {
    match p {
        Policy::Count => 0,
        Policy::Record => 1,
        Policy::Ignore => 2,
    }
}

fn read_info(r: &mut Reader<'_>) -> Result<PppInfo, MetaError> {
    let n = r.count(1)?;
    let mut interesting = Vec::with_capacity(n);
    let mut prev = 0u64;
    for _ in 0..n {
        prev = r.delta(prev)?;
        interesting.push(prev);
    }
    if interesting.windows(2).any(|w| w[0] >= w[1]) {
        return Err(r.corrupt("interesting paths are not sorted"));
    }
    let numbering = match r.u8()? {
        0 => IdScheme::Ppp,
        1 => IdScheme::BallLarus,
        b => return Err(r.corrupt(format!("numbering scheme {b}"))),
    };
    let min = r.i64()?;
    let max = r.i64()?;
    if min > max {
        return Err(r.corrupt(format!("PPP interval [{min}, {max}]")));
    }
    let delta = r.u64()?;
    let ball_larus_delta = r.u64()?;
    let code = r.u8()?;
    let policy = [Policy::Count, Policy::Record, Policy::Ignore]
        .into_iter()
        .find(|&p| policy_code(p) == code)
        .ok_or_else(|| r.corrupt(format!("policy {code}")))?;
    let loops = r.count(1)?;
    let tested_self_loops = (0..loops).map(|_| r.u32()).collect::<Result<_, _>>()?;
    let recorded = r.bool()?;
    Ok(PppInfo {
        interesting,
        numbering,
        min,
        max,
        delta,
        ball_larus_delta,
        policy,
        uninteresting: 0,
        tested_self_loops,
        recorded,
    })
}
