//! `pathprof stats --ppp SPEC`: what preferential path profiling makes of a
//! set of interesting paths, per function and over the module: the data
//! behind the thesis' Fig. 3.17 (interval size against the number of
//! interesting paths, δ) and Fig. 3.18 (Ball-Larus δ over PPP δ).
//!
//! The thesis' δ is a ratio, `(max - min + 1) / |I|`; the plans use the
//! number of holes `(max - min + 1) - |I|`. Both are reported.

use pathprof_techniques::ball_larus;
use pathprof_techniques::ppp::{self, IdScheme, PppInfo};
use pathprof_techniques::PathTable;
use pathprof_wasm::ModuleInfo;
use serde::Serialize;

use crate::interesting::Interesting;

/// One function with at least one interesting path.
#[derive(Clone, Debug, Serialize)]
pub struct FunctionPpp {
    pub func_index: u32,
    pub name: String,
    pub interesting: usize,
    /// Size of the PPP interval `max - min + 1`.
    pub interval: u64,
    /// Holes in it, and the thesis' ratio δ = interval / interesting.
    pub delta: u64,
    pub delta_ratio: f64,
    /// The same for the Ball-Larus ids of the same paths.
    pub ball_larus_interval: u64,
    pub ball_larus_delta: u64,
    pub ball_larus_delta_ratio: f64,
    /// `ppp` or `ball-larus` (when PPP would be less compact).
    pub numbering: String,
    /// `table[N]`, or `recorded` when the table would pass the limit.
    pub storage: String,
}

/// The module-wide distribution.
#[derive(Clone, Debug, Serialize)]
pub struct PppSummary {
    pub functions: Vec<FunctionPpp>,
    /// Functions by PPP δ ratio: `1` (perfect), `(1,1.5]`, `(1.5,2]`, `(2,4]`, `>4`.
    pub delta_histogram: Vec<(String, usize)>,
    /// Functions by Ball-Larus δ / PPP δ: `1`, `(1,10]`, `(10,100]`, `(100,1000]`, `>1000`.
    pub ratio_histogram: Vec<(String, usize)>,
    pub interesting: usize,
    /// Sum of the PPP intervals, and of the Ball-Larus ones.
    pub total_interval: u64,
    pub total_ball_larus_interval: u64,
}

/// Plans PPP for every function with interesting paths.
pub fn ppp_stats(
    info: &ModuleInfo,
    chosen: &Interesting,
    opts: &ppp::Options,
) -> crate::error::Result<PppSummary> {
    let mut functions = Vec::new();
    // Every function is planned, in order, for the array budget to go
    // where the instrumenter gives it.
    let ahead = opts.ball_larus.planning();
    let mut budget = ball_larus::ArrayBudget::new(&opts.ball_larus);
    for f in info.functions.iter().flatten() {
        let ids = chosen.paths.get(&f.func_index).map_or(&[][..], |v| &v[..]);
        let name = f
            .name
            .clone()
            .unwrap_or_else(|| format!("func[{}]", f.func_index));
        let planned = budget
            .plan(
                &opts.ball_larus,
                &ahead,
                |bl| {
                    let o = ppp::Options {
                        ball_larus: bl.clone(),
                        ..opts.clone()
                    };
                    let cuts = chosen.cuts.get(&f.func_index).map(Vec::as_slice);
                    ppp::plan(&f.cfg, None, &o, ids, cuts)
                },
                |p| p.plan.paths,
            )
            .map_err(|e| crate::error::invalid!("function {name}: {e}"))?;
        if ids.is_empty() {
            continue;
        }
        functions.push(function_ppp(
            f.func_index,
            name,
            &planned.info,
            &planned.plan,
        ));
    }
    Ok(summarise(functions))
}

fn function_ppp(
    func_index: u32,
    name: String,
    info: &PppInfo,
    plan: &pathprof_techniques::FunctionPlan,
) -> FunctionPpp {
    let n = info.interesting.len();
    let interval = info.table_len();
    let bl_interval = n as u64 + info.ball_larus_delta;
    let ratio = |size: u64| size as f64 / n as f64;
    FunctionPpp {
        func_index,
        name,
        interesting: n,
        interval,
        delta: info.delta,
        delta_ratio: ratio(interval),
        ball_larus_interval: bl_interval,
        ball_larus_delta: info.ball_larus_delta,
        ball_larus_delta_ratio: ratio(bl_interval),
        numbering: match info.numbering {
            IdScheme::Ppp => "ppp".into(),
            IdScheme::BallLarus => "ball-larus".into(),
        },
        storage: match (&plan.ppp, plan.paths) {
            (Some(t), _) => format!("table[{}]", t.expected.len()),
            (None, PathTable::Hash { .. } | PathTable::Array { .. }) => "recorded".into(),
            (None, PathTable::None) => "none".into(),
        },
    }
}

fn summarise(functions: Vec<FunctionPpp>) -> PppSummary {
    let bucket = |bounds: &[(f64, &str)], last: &str, x: f64| {
        bounds
            .iter()
            .find(|&&(b, _)| x <= b)
            .map_or(last.to_string(), |&(_, l)| l.to_string())
    };
    let delta_bounds = [
        (1.0, "1"),
        (1.5, "(1,1.5]"),
        (2.0, "(1.5,2]"),
        (4.0, "(2,4]"),
    ];
    let ratio_bounds = [
        (1.0, "1"),
        (10.0, "(1,10]"),
        (100.0, "(10,100]"),
        (1000.0, "(100,1000]"),
    ];
    let histogram = |bounds: &[(f64, &str)], last: &str, xs: &mut dyn Iterator<Item = f64>| {
        let mut h: Vec<(String, usize)> = bounds
            .iter()
            .map(|&(_, l)| (l.to_string(), 0))
            .chain([(last.to_string(), 0)])
            .collect();
        for x in xs {
            let label = bucket(bounds, last, x);
            if let Some(slot) = h.iter_mut().find(|(l, _)| *l == label) {
                slot.1 += 1;
            }
        }
        h
    };
    let delta_histogram = histogram(
        &delta_bounds,
        ">4",
        &mut functions.iter().map(|f| f.delta_ratio),
    );
    let ratio_histogram = histogram(
        &ratio_bounds,
        ">1000",
        &mut functions
            .iter()
            .map(|f| f.ball_larus_delta_ratio / f.delta_ratio),
    );
    PppSummary {
        interesting: functions.iter().map(|f| f.interesting).sum(),
        total_interval: functions.iter().map(|f| f.interval).sum(),
        total_ball_larus_interval: functions.iter().map(|f| f.ball_larus_interval).sum(),
        delta_histogram,
        ratio_histogram,
        functions,
    }
}

pub fn render(s: &PppSummary) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5} {:<28} {:>11} {:>10} {:>8} {:>8} {:>14} {:>10} {:<10} {:<14}",
        "func",
        "name",
        "interesting",
        "interval",
        "holes",
        "δ",
        "BL interval",
        "BL δ",
        "numbering",
        "storage"
    );
    for f in &s.functions {
        let _ = writeln!(
            out,
            "{:>5} {:<28} {:>11} {:>10} {:>8} {:>8.2} {:>14} {:>10.2} {:<10} {:<14}",
            f.func_index,
            f.name,
            f.interesting,
            f.interval,
            f.delta,
            f.delta_ratio,
            f.ball_larus_interval,
            f.ball_larus_delta_ratio,
            f.numbering,
            f.storage
        );
    }
    let _ = writeln!(
        out,
        "{} interesting paths in {} functions; PPP intervals total {}, Ball-Larus intervals {}",
        s.interesting,
        s.functions.len(),
        s.total_interval,
        s.total_ball_larus_interval
    );
    let line = |h: &[(String, usize)]| {
        h.iter()
            .map(|(l, n)| format!("{l}: {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "functions by PPP δ (Fig. 3.17): {}",
        line(&s.delta_histogram)
    );
    let _ = writeln!(
        out,
        "functions by Ball-Larus δ / PPP δ (Fig. 3.18): {}",
        line(&s.ratio_histogram)
    );
    out
}
