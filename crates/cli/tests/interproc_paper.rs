//! Melski & Reps' worked example (TR 1382, Fig. 4) instrumented for real
//! and run on wasmtime: `main` loops i = 1..18 and calls `pow(i, 2)` when
//! i % 2 == 0 and again when i % 3 == 0 (tests/fixtures/interproc/
//! figure4.wat). The expected figures are the report's, not this code's:
//! - context profiling: 36 potential paths, and the counts of Fig. 9,
//!   twelve non-zero paths counted 1, 9, 9, 3, 3, 3, 6, 3, 3, 3, 5, 1
//!   (49: 19 paths of main plus 2 for each of the 15 calls of pow);
//! - piecewise profiling: 21 potential paths, nine non-zero paths counted
//!   1, 9, 3, 5, 1, 15, 3, 6, 6.

use crate::common;

use common::programs;
use pathprof::driver::{self, Technique};
use pathprof_graph::interproc::{CallSiteId, PathStep};
use pathprof_profile::interproc::InterprocProfile;

fn profile(technique: Technique) -> (Vec<String>, InterprocProfile) {
    let engine = crate::common::programs::engine();
    let (module, inv) = programs::figure4();
    let (out, profile) = programs::profiled_run(
        &engine,
        &module,
        technique,
        &driver::Options::default(),
        &inv,
    );
    (
        out.results,
        *profile.interproc.expect("interprocedural paths"),
    )
}

fn sorted_counts(p: &InterprocProfile) -> Vec<u64> {
    let mut c: Vec<u64> = p.paths.iter().map(|p| p.count).collect();
    c.sort_unstable();
    c
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

#[test]
fn context_profile_is_figure_9() {
    let (results, p) = profile(Technique::Context);
    // pow(18, 2) + pow(18, 2): the program's own result is unchanged.
    assert_eq!(results, ["648"]);
    assert_eq!(p.potential, 36);
    assert_eq!(
        sorted_counts(&p),
        sorted(vec![1, 9, 9, 3, 3, 3, 6, 3, 3, 3, 5, 1])
    );
    // The count-9 path that enters pow from the first call site and runs
    // pow's first iteration up to its backedge (the i % 2 == 0 calls):
    // no context-prefix, a call through site 0, and it ends in pow.
    let nine: Vec<_> = p.paths.iter().filter(|x| x.count == 9).collect();
    assert!(nine.iter().any(|x| {
        let steps = &x.path.steps;
        x.path.active_start > 0
            && steps
                .iter()
                .any(|s| matches!(s, PathStep::Call { site, .. } if *site == CallSiteId::new(0)))
            && matches!(steps.last(), Some(PathStep::End { func, .. }) if func.index() == 0)
    }));
    // No path is counted that the report's table does not have: 12 paths.
    assert_eq!(p.paths.len(), 12);
    assert!(p.sites.iter().all(|s| s.cut.is_none()));
}

#[test]
fn piecewise_profile_is_the_reports() {
    let (results, p) = profile(Technique::Piecewise);
    assert_eq!(results, ["648"]);
    assert_eq!(p.potential, 21);
    assert_eq!(sorted_counts(&p), sorted(vec![1, 9, 3, 5, 1, 15, 3, 6, 6]));
    // Piecewise paths have no context-prefix.
    assert!(p.paths.iter().all(|x| x.path.active_start == 0));
}

#[test]
fn merged_runs_add_up() {
    let engine = crate::common::programs::engine();
    let (module, inv) = programs::figure4();
    let opts = driver::Options::default();
    let (_, a) = programs::profiled_run(&engine, &module, Technique::Context, &opts, &inv);
    let (_, b) = programs::profiled_run(&engine, &module, Technique::Context, &opts, &inv);
    let merged = pathprof_profile::merge(&[a.clone(), b]).unwrap();
    assert_eq!(merged.runs, 2);
    let m = merged.interproc.unwrap();
    let one = a.interproc.clone().unwrap();
    assert_eq!(m.paths.len(), 12);
    for (x, y) in m.paths.iter().zip(&one.paths) {
        assert_eq!((x.number, x.count), (y.number, 2 * y.count));
    }
    // A path profile of the same module does not merge with it.
    let (_, path) = programs::profiled_run(&engine, &module, Technique::Path, &opts, &inv);
    assert!(pathprof_profile::merge(&[path, a]).is_err());
}

#[test]
fn stats_of_figure_4() {
    let (module, _) = programs::figure4();
    let opts = driver::Options::default();
    for (mode, potential) in [
        (pathprof_graph::interproc::Mode::Context, 36),
        (pathprof_graph::interproc::Mode::Piecewise, 21),
    ] {
        let s = pathprof::interproc::stats(&module, mode, &opts).unwrap();
        assert_eq!(s.potential, potential);
        assert_eq!(s.truncated_functions, 0);
        // pow is entered at most twice on one path (both call sites of one
        // iteration of main's loop), main once; main alone is an entry.
        let f: Vec<(u32, u64, bool, usize)> = s
            .functions
            .iter()
            .map(|f| (f.func_index, f.max_enters, f.entry, f.call_sites))
            .collect();
        assert_eq!(f, [(0, 2, false, 0), (1, 1, true, 2)]);
        assert!(s.sites.iter().all(|x| x.cut.is_none()));
    }
}

/// `--hybrid cut:CALLEE` cuts every call to pow (section 8): main and pow
/// are then numbered apart. By hand, from Figs. 5 and 14: main has 5 paths
/// from its entry (out of the loop at once, or one iteration's 2 x 2
/// choices up to the backedge) and 5 more from the surrogate entry into its
/// loop head; pow has 2 and 2. 14 in all.
#[test]
fn cutting_the_calls_to_pow() {
    let (module, _) = programs::figure4();
    for callee in ["0", "pow"] {
        let opts = driver::Options {
            hybrid: format!("cut:{callee}").parse().unwrap(),
            ..driver::Options::default()
        };
        let s =
            pathprof::interproc::stats(&module, pathprof_graph::interproc::Mode::Context, &opts)
                .unwrap();
        assert_eq!(s.potential, 14, "cut:{callee}");
        assert!(s.sites.iter().all(|x| x.cut.as_deref() == Some("hybrid")));
    }
    let opts = driver::Options {
        hybrid: "cut:nosuch".parse().unwrap(),
        ..driver::Options::default()
    };
    let err = pathprof::interproc::stats(&module, pathprof_graph::interproc::Mode::Context, &opts)
        .unwrap_err();
    assert!(format!("{err:#}").contains("no call site at or of \"nosuch\""));
}

/// `--hybrid cut:F` cuts the case of an indirect call that enters F too
/// (`--dispatch-max`). main calls through a static table of f (two paths)
/// and g (one): 3 paths with both cases profiled across; with f's case cut,
/// main has 2 (g's case, f's summary) and f its own 2.
#[test]
fn cutting_a_case_by_its_callee() {
    let module = wat::parse_str(
        r#"(module
          (type $t (func (param i32) (result i32)))
          (table 2 funcref)
          (elem (i32.const 0) func $f $g)
          (func $f (type $t)
            (if (result i32) (local.get 0) (then (i32.const 1)) (else (i32.const 2))))
          (func $g (type $t) (local.get 0))
          (func (export "main") (param i32) (result i32)
            (call_indirect (type $t) (local.get 0) (local.get 0))))"#,
    )
    .unwrap();
    let stats = |hybrid: &str| {
        let opts = driver::Options {
            hybrid: hybrid.parse().unwrap(),
            max_cases: 4,
            ..driver::Options::default()
        };
        pathprof::interproc::stats(&module, pathprof_graph::interproc::Mode::Context, &opts)
            .unwrap()
    };
    let all = stats("all");
    assert_eq!(all.potential, 3);
    assert_eq!(all.dispatched.len(), 1);
    let cut = stats("cut:f");
    assert_eq!(cut.potential, 4);
    let reasons: Vec<Option<&str>> = cut.sites.iter().map(|x| x.cut.as_deref()).collect();
    assert_eq!(reasons, [Some("hybrid"), None]);
}
