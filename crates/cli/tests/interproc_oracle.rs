//! Melski & Reps' interprocedural path profiling checked on real runs:
//! every C fixture (recursion, indirect calls, loops, deep call chains,
//! `exit()` deep in a chain) and every WAT fixture export is run with the
//! trace instrumentation, its edge trace becomes an execution of the
//! module's supergraph, and an enumerator that shares no code with the
//! numbering cuts it into observable context and piecewise paths. Two
//! things must give exactly those paths and counts:
//! - the reference walk of the run-time instrumentation, then the decoder;
//! - the real thing: the module instrumented by `--mode context` /
//!   `--mode piecewise`, run on wasmtime, its counters collected and
//!   decoded (for every module the instrumentation accepts: not yet those
//!   with tail calls or exceptions).

mod common;

use std::collections::BTreeMap;

use common::programs;
use pathprof::driver::{self, Technique};
use pathprof::interproc::{number, Hybrid};
use pathprof_graph::interproc::{Interproc, Mode, ProfiledPath};
use pathprof_graph::testing::interproc::observable_paths;
use pathprof_wasm::supergraph::{events, ModuleSupergraph};

/// A module prepared once for all its runs: its supergraph, per mode its
/// numbering and its instrumented build (if the instrumentation takes the
/// module), and its trace build.
struct Prepared {
    msg: ModuleSupergraph,
    numbered: Vec<(
        Mode,
        Interproc,
        Option<(wasmtime::Module, pathprof::driver::Meta)>,
    )>,
    traced: wasmtime::Module,
}

fn prepare(engine: &wasmtime::Engine, name: &str, module: &[u8]) -> Prepared {
    let info = pathprof_wasm::analyze(module).unwrap();
    let mut msg = ModuleSupergraph::new(module, &info).unwrap();
    let opts = driver::Options::default();
    let mut numbered = Vec::new();
    for mode in [Mode::Context, Mode::Piecewise] {
        let truncate_above = opts.ball_larus.truncate_above;
        let (ip, _) = number(&mut msg.supergraph, mode, &Hybrid::All, truncate_above).unwrap();
        let technique = match mode {
            Mode::Context => Technique::Context,
            Mode::Piecewise => Technique::Piecewise,
        };
        let built = match driver::instrument(module, technique, &opts) {
            Ok(inst) => Some((
                pathprof_runner::compile(engine, &inst.bytes).unwrap(),
                inst.meta().unwrap(),
            )),
            Err(e) => {
                let msg = format!("{e:#}");
                assert!(
                    msg.contains("tail call") || msg.contains("exceptions"),
                    "{name}: {msg}"
                );
                None
            }
        };
        numbered.push((mode, ip, built));
    }
    let traced = driver::instrument(module, Technique::Trace, &Default::default())
        .expect("trace instrument");
    let traced = pathprof_runner::compile(engine, &traced.bytes).unwrap();
    Prepared {
        msg,
        numbered,
        traced,
    }
}

/// Checks one run in both modes; adds the number of distinct observable
/// paths to `executed`, returns the potential ones per mode and whether
/// the instrumented module was checked too.
fn check(
    p: &Prepared,
    name: &str,
    inv: &programs::Invocation,
    executed: &mut [usize; 2],
) -> ([u64; 2], bool) {
    let trace = programs::run_compiled(&p.traced, inv, true).trace;
    let exec = events(&p.msg, &trace).unwrap_or_else(|e| panic!("{name} {inv:?}: {e}"));
    let mut totals = [0; 2];
    let mut instrumented = true;
    for (m, (mode, ip, built)) in p.numbered.iter().enumerate() {
        let counts = ip
            .walk(&exec)
            .unwrap_or_else(|e| panic!("{name} {inv:?} {mode:?}: {e}"));
        let mut decoded: BTreeMap<ProfiledPath, u64> = BTreeMap::new();
        for (&n, &c) in &counts {
            *decoded.entry(ip.decode(n).unwrap()).or_insert(0) += c;
        }
        let want = observable_paths(
            &p.msg.supergraph,
            &ip.call_graph.cut,
            *mode == Mode::Piecewise,
            &exec,
        );
        assert!(
            decoded == want,
            "{name} {inv:?} {mode:?}: {} decoded paths, {} observable",
            decoded.len(),
            want.len()
        );
        totals[m] = ip.total();
        executed[m] += want.len();
        match built {
            Some(built) => check_instrumented(built, name, inv, *mode, &want),
            None => instrumented = false,
        }
    }
    (totals, instrumented)
}

/// Runs the instrumented module and checks its decoded profile against
/// `want`.
fn check_instrumented(
    (module, meta): &(wasmtime::Module, pathprof::driver::Meta),
    name: &str,
    inv: &programs::Invocation,
    mode: Mode,
    want: &BTreeMap<ProfiledPath, u64>,
) {
    let out = programs::run_compiled(module, inv, false);
    let abrupt = out
        .exit
        .is_abrupt()
        .then_some(out.exit.unfinished_frames(&out.abrupt_stack));
    let counters = out.counters.as_ref().expect("counters");
    let profile = driver::collect(meta, counters, abrupt).expect("collect");
    let ipp = profile.interproc.expect("an interprocedural profile");
    let got: BTreeMap<ProfiledPath, u64> =
        ipp.paths.into_iter().map(|p| (p.path, p.count)).collect();
    assert_eq!(ipp.lost, 0, "{name} {inv:?} {mode:?}: counts lost");
    assert!(
        &got == want,
        "{name} {inv:?} {mode:?}: instrumented run counted {} paths ({} runs of them), observable {} ({})",
        got.len(),
        got.values().sum::<u64>(),
        want.len(),
        want.values().sum::<u64>()
    );
}

/// Per fixture build: potential paths per mode, and the distinct observable
/// paths of its runs (summed over runs) per mode.
type Figures = BTreeMap<String, ([u64; 2], [usize; 2])>;

#[test]
fn c_programs_decoded_walk_equals_observable_paths() {
    let engine = pathprof_runner::engine().unwrap();
    let build = programs::root().join("tests/fixtures/c/build");
    let mut figures = Figures::new();
    let mut prepared: BTreeMap<String, Prepared> = BTreeMap::new();
    let mut runs = 0;
    for (name, inv) in programs::c_cases() {
        for opt in ["O0", "O2"] {
            let build_name = format!("{name}.{opt}");
            let p = prepared.entry(build_name.clone()).or_insert_with(|| {
                let module = std::fs::read(build.join(format!("{build_name}.wasm")))
                    .expect("run scripts/build-c-fixtures.sh first");
                prepare(&engine, &build_name, &module)
            });
            let build = build_name;
            let (totals, executed) = figures.entry(build.clone()).or_default();
            let (t, instrumented) = check(p, &build, &inv, executed);
            *totals = t;
            assert!(
                instrumented,
                "{build}: the C programs have no tail call nor exception"
            );
            runs += 1;
        }
    }
    assert!(runs >= 60, "only {runs} C runs were checked");
    for (build, (totals, executed)) in &figures {
        assert!(executed.iter().all(|&n| n > 0), "{build}: no path");
        eprintln!(
            "{build}: context {} executed of {}, piecewise {} of {}",
            executed[0], totals[0], executed[1], totals[1]
        );
    }
}

/// The WAT fixtures (tail calls, exceptions, loops, every branch kind),
/// each export called with a few arguments.
#[test]
fn wat_fixtures_decoded_walk_equals_observable_paths() {
    let engine = pathprof_runner::engine().unwrap();
    let fixtures = programs::wat_fixtures();
    let (mut checked, mut instrumented) = (0, 0);
    for path in fixtures {
        let module = pathprof::input::read_module(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if programs::needs_host_imports(&engine, &module) {
            continue;
        }
        let p = prepare(&engine, &name, &module);
        for inv in programs::export_calls(&engine, &module) {
            instrumented += usize::from(check(&p, &name, &inv, &mut [0; 2]).1);
            checked += 1;
        }
    }
    assert!(checked >= 50, "only {checked} fixture calls were checked");
    assert!(
        instrumented >= 30,
        "only {instrumented} fixture calls were checked instrumented"
    );
    eprintln!("{checked} fixture calls, {instrumented} also instrumented");
}
