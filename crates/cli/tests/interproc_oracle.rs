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
//!   decoded. Every module is instrumented, those that throw and catch
//!   exceptions (their own or an import's) included; a run is compared
//!   this way unless its trace has a catch the conversion cannot place (no
//!   live activation of the catching function), which cuts the execution
//!   short: then only the walk is checked.

use crate::common;

use std::collections::BTreeMap;

use common::bin::{pathprof, stderr};
use common::{callgen, programs};
use pathprof::driver::{self, Technique};
use pathprof::interproc::{number, Hybrid};
use pathprof_graph::interproc::{CallSiteId, Callee, Event, Interproc, Mode, ProfiledPath};
use pathprof_graph::testing::interproc::observable_paths;
use pathprof_wasm::supergraph::{EventStream, ModuleSupergraph};

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

/// Indirect calls split into cases up to this many callees (the default
/// is none), so that every run checks them too.
const MAX_CASES: usize = 4;

fn prepare(engine: &wasmtime::Engine, name: &str, module: &[u8]) -> Prepared {
    let opts = driver::Options {
        max_cases: MAX_CASES,
        ..Default::default()
    };
    prepare_with(engine, name, module, &opts)
}

/// [`prepare`] with these options (the oracle's supergraph has the cases
/// they make).
fn prepare_with(
    engine: &wasmtime::Engine,
    name: &str,
    module: &[u8],
    opts: &driver::Options,
) -> Prepared {
    let info = pathprof_wasm::analyze(module).unwrap();
    // With the cases the instrumentation makes of indirect calls (the
    // trace tells which case a call took by the function it entered).
    let live = opts.weights.as_ref().map(|w| w.ran());
    let mut msg =
        ModuleSupergraph::with_live_cases(module, &info, opts.max_cases, live.as_ref()).unwrap();
    let mut numbered = Vec::new();
    for mode in [Mode::Context, Mode::Piecewise] {
        let truncate_above = opts.ball_larus.truncate_above;
        let (ip, _) = number(&mut msg.supergraph, mode, &Hybrid::All, truncate_above).unwrap();
        let technique = match mode {
            Mode::Context => Technique::Context,
            Mode::Piecewise => Technique::Piecewise,
        };
        let built = match driver::instrument(module, technique, opts) {
            Ok(inst) => Some((
                crate::common::programs::compile(engine, &inst.bytes).unwrap(),
                inst.meta().unwrap(),
            )),
            Err(e) => panic!("{name}: {e:#}"),
        };
        numbered.push((mode, ip, built));
    }
    let traced = driver::instrument(module, Technique::Trace, &Default::default())
        .expect("trace instrument");
    let traced = crate::common::programs::compile(engine, &traced.bytes).unwrap();
    Prepared {
        msg,
        numbered,
        traced,
    }
}

/// What [`check`] found of one run.
struct Checked {
    /// Potential paths per mode.
    totals: [u64; 2],
    /// Whether the instrumented modules were checked too.
    instrumented: bool,
    /// Whether a profiled function caught an exception.
    caught: bool,
    /// Whether one caught an exception an import threw.
    import_thrown: bool,
    /// How many times control entered from the host after the first.
    callbacks: usize,
    /// How many exceptions profiled code threw that an import caught,
    /// after which profiled code ran on.
    resumed: usize,
    /// Whether one caught it into its own label (its handler is EXIT).
    caught_at_exit: bool,
    /// Whether a call went through a case of a `call_indirect` (one told
    /// apart by its table slot).
    cased: bool,
    /// Whether one went through the cut case of a `call_indirect` into a
    /// profiled function (one no case of its own calls).
    past_cases: bool,
}

/// Whether call site `s` is a case of a `call_indirect` whose callee the
/// instrumentation tells by the table slot.
fn is_dispatched(msg: &ModuleSupergraph, s: CallSiteId) -> bool {
    let (f, k) = msg.site(s.index());
    !msg.case_slots[f.index()][k].is_empty()
}

/// Checks one run in both modes; adds the number of distinct observable
/// paths to `executed`.
fn check(
    p: &Prepared,
    name: &str,
    inv: &programs::Invocation,
    executed: &mut [usize; 2],
) -> Checked {
    let traced = programs::run_compiled(&p.traced, inv, true);
    let trace = traced.trace;
    let mut stream = EventStream::new(&p.msg);
    for &(f, e) in &trace {
        stream
            .edge(f, e)
            .unwrap_or_else(|e| panic!("{name} {inv:?}: {e}"));
    }
    // A catch the conversion could not place (no live activation of the
    // catching function): the execution is cut short there, so only the
    // walk is checked against it.
    let over = stream.is_over();
    match traced.exit.is_abrupt() {
        true => stream.finish(),
        false => stream.finish_returned(),
    }
    let exec: Vec<_> = stream.drain().collect();
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
            Some(built) if !over => check_instrumented(built, name, inv, *mode, &want),
            _ => instrumented = false,
        }
    }
    let caught = exec.iter().any(|e| matches!(e, Event::Throw { .. }));
    // Entries from the host after the first: callbacks from an import.
    let callbacks = (exec.iter())
        .filter(|e| matches!(e, Event::Call { site: None, .. }))
        .count()
        .saturating_sub(1);
    let import_thrown = exec.iter().any(|e| matches!(e, Event::ImportThrow { .. }));
    let resumed = (exec.iter().rev().skip(1))
        .filter(|e| matches!(e, Event::Escape))
        .count();
    let caught_at_exit = exec.iter().any(
        |e| matches!(e, Event::Throw { handler, .. } if *handler == pathprof_graph::Cfg::EXIT),
    );
    let cased = exec
        .iter()
        .any(|e| matches!(e, Event::Call { site: Some(s), .. } if is_dispatched(&p.msg, *s)));
    let past_cases = exec.iter().any(|e| {
        let Event::Call { site: Some(s), .. } = e else {
            return false;
        };
        let (f, k) = p.msg.site(s.index());
        let func = &p.msg.supergraph.functions[f.index()];
        func.is_case(k) && matches!(&func.calls[k].callee, Callee::Indirect(v) if !v.is_empty())
    });
    Checked {
        totals,
        instrumented,
        caught,
        callbacks,
        resumed,
        import_thrown,
        caught_at_exit,
        cased,
        past_cases,
    }
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
    let engine = crate::common::programs::engine();
    let build = programs::root().join("tests/fixtures/c/build");
    let mut figures = Figures::new();
    let mut prepared: BTreeMap<String, Prepared> = BTreeMap::new();
    let (mut runs, mut cased) = (0, 0);
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
            let Checked {
                totals: t,
                instrumented,
                cased: c,
                ..
            } = check(p, &build, &inv, executed);
            *totals = t;
            cased += usize::from(c);
            assert!(
                instrumented,
                "{build}: the C programs have no tail call nor exception"
            );
            runs += 1;
        }
    }
    assert!(runs >= 60, "only {runs} C runs were checked");
    // fnptr.c and interp.c call through function-pointer tables in every
    // run (40 runs when written).
    assert!(cased >= 30, "only {cased} C runs called through a case");
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
/// The callbacks callbacks.wat's library makes over
/// [`programs::export_calls`]' arguments 0, 1, 2, 3, 5, 8, 13, -1:
/// `squares(n)` one for each even i < n and two for each odd one (1, 3,
/// 4, 7, 12 and 19); `countdown(n)` n + 1 (one for n <= 0); `halves` two.
/// escapes.wat's: `escapes(n)` five for each i < n and one more for each
/// even one (retry calls back again after the throw), 5n + ceil(n / 2),
/// then two (one when n < 0: middle tail-calls); `passes(n)` one for each
/// i and one more for each even one.
const CALLBACKS: usize = (1 + 3 + 4 + 7 + 12 + 19)
    + (1 + 2 + 3 + 4 + 6 + 9 + 14 + 1)
    + 8 * 2
    + (6 + 11 + 17 + 28 + 44 + 72 + 7 * 2 + 1)
    + (2 + 3 + 5 + 8 + 12 + 20);

/// The exceptions escapes.wat throws that its library catches, over the
/// same arguments: per i < n of `escapes(n)`, risky(i) and the nested
/// risky(i) for odd i, risky(i + 1) after the tail call for even i, and
/// deep(i % 5) when i % 5 is 1 or 3: n + floor(n / 2) + #{i < n : i % 5 in
/// {1, 3}}; then risky(n) after `hop`'s tail call for odd n (1, 3, 5, 13),
/// and boom(n) for n a multiple of 3 as unsigned (0, 3, -1). `passes`
/// throws only through `apply`, to its own handler.
const RESUMED: usize = 1 + 4 + 5 + 9 + 15 + 24 + 4 + 3;

#[test]
fn wat_fixtures_decoded_walk_equals_observable_paths() {
    let engine = crate::common::programs::engine();
    let fixtures = programs::wat_fixtures();
    let (mut checked, mut instrumented, mut thrown, mut at_exit) = (0, 0, 0, 0);
    let (mut import_thrown, mut callbacks, mut resumed) = (0, 0, 0);
    for path in fixtures {
        let module = pathprof::input::read_module(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if programs::needs_host_imports(&engine, &module) {
            continue;
        }
        let p = prepare(&engine, &name, &module);
        for inv in programs::export_calls(&engine, &module) {
            let c = check(&p, &name, &inv, &mut [0; 2]);
            let counted = c.instrumented;
            instrumented += usize::from(counted);
            at_exit += usize::from(counted && c.caught_at_exit);
            if name == "exceptions.wat" {
                thrown += usize::from(counted);
            }
            import_thrown += usize::from(counted && c.import_thrown);
            callbacks += if counted { c.callbacks } else { 0 };
            resumed += if counted { c.resumed } else { 0 };
            checked += 1;
        }
    }
    assert!(checked >= 50, "only {checked} fixture calls were checked");
    assert!(
        instrumented >= 30,
        "only {instrumented} fixture calls were checked instrumented"
    );
    // Every exceptions.wat call but those whose exception escapes to the
    // host (96 of 104 when written).
    assert!(
        thrown >= 90,
        "only {thrown} calls of exceptions.wat were checked instrumented"
    );
    // Thrown by the library import_throws.wat links: 31 calls catch one
    // (by the fixture's arithmetic), all also instrumented.
    assert_eq!(import_thrown, 31, "calls that caught what an import threw");
    // callbacks.wat's library calls back CALLBACKS times (by its arithmetic).
    assert_eq!(callbacks, CALLBACKS, "callbacks from an import");
    assert_eq!(resumed, RESUMED, "exceptions an import caught");
    // Caught into the function's own label, so that a path starts at EXIT.
    assert!(
        at_exit >= 1,
        "no call caught an exception at its function's EXIT"
    );
    eprintln!(
        "{checked} fixture calls, {instrumented} also instrumented ({thrown} with exceptions, {at_exit} caught at EXIT)"
    );
}

/// Random modules with direct, indirect and tail calls and recursion
/// (`common::callgen`), `main` called with a few arguments: the
/// instrumented modules must count exactly the observable paths.
/// `PATHPROF_RANDOM_PROGRAMS=n` tries n seeds.
#[test]
fn generated_modules_with_calls_count_the_observable_paths() {
    let engine = crate::common::programs::engine();
    let seeds: u64 = std::env::var("PATHPROF_RANDOM_PROGRAMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(400);
    let (mut tails, mut across, mut runs, mut counted) = (0, 0, 0, 0);
    let (mut catching, mut throwing, mut caught, mut cased) = (0, 0, 0, 0);
    for seed in 0..seeds {
        let text = callgen::module(seed);
        let module = wat::parse_str(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let name = format!("seed {seed}");
        let p = prepare(&engine, &name, &module);
        let funcs = &p.msg.supergraph.functions;
        tails += usize::from(funcs.iter().any(|f| !f.tail_calls.is_empty()));
        catching += usize::from(!funcs[1].handlers.is_empty()); // $f0
        throwing += usize::from(funcs.iter().any(|f| !f.throws.is_empty()));
        for arg in ["0", "1", "7", "-3"] {
            let inv = programs::Invocation::Call {
                export: "main".into(),
                args: vec![arg.into()],
            };
            let mut executed = [0; 2];
            // Not compared instrumented: a run whose exception escaped.
            let c = check(&p, &name, &inv, &mut executed);
            counted += usize::from(c.instrumented);
            caught += usize::from(c.caught);
            cased += usize::from(c.cased && c.instrumented);
            runs += 1;
            across += executed[0];
        }
    }
    assert!(
        tails * 3 >= seeds as usize,
        "only {tails} of {seeds} modules tail-call"
    );
    assert!(
        counted * 10 >= runs * 7,
        "only {counted} of {runs} runs compared instrumented"
    );
    assert!(
        caught * 20 >= runs,
        "only {caught} of {runs} runs caught an exception"
    );
    assert!(
        cased * 10 >= runs,
        "only {cased} of {runs} runs called through a case, compared instrumented"
    );
    eprintln!("{seeds} modules ({tails} with tail calls, {throwing} throwing, {catching} catching), {runs} runs ({counted} compared instrumented, {caught} caught an exception, {cased} through a case), {across} distinct context paths");
}

/// With a prior profile (`--weights`), only the functions that ran in it
/// count towards an indirect call's cases: fnptr's operation table and
/// qsort's comparator (nine functions of one type, too many) become cases
/// for those that ran in "a down", the others sharing a cut case. Every
/// fnptr run, those that reach the others too, counts exactly the
/// observable paths.
#[test]
fn a_prior_profile_narrows_the_cases_to_the_functions_that_ran() {
    let engine = crate::common::programs::engine();
    let module = std::fs::read(programs::root().join("tests/fixtures/c/build/fnptr.O2.wasm"))
        .expect("run scripts/build-c-fixtures.sh first");
    let runs: Vec<programs::Invocation> = programs::c_cases()
        .into_iter()
        .filter(|(name, _)| name == "fnptr")
        .map(|(_, inv)| inv)
        .collect();
    let train = runs
        .iter()
        .find(|inv| matches!(inv, programs::Invocation::Command { args, .. } if args[1..] == ["a", "down"]))
        .expect("fnptr's `a down` run");
    let inst = driver::instrument(&module, Technique::Path, &Default::default()).unwrap();
    let out = programs::run(&engine, &inst.bytes, train, false);
    let prior =
        driver::collect(&inst.meta().unwrap(), out.counters.as_ref().unwrap(), None).unwrap();
    let ran = prior.ran();
    let opts = driver::Options {
        weights: Some(prior),
        max_cases: MAX_CASES,
        ..Default::default()
    };
    let p = prepare_with(&engine, "fnptr.O2 --weights", &module, &opts);
    // The wasm calls split into cases, and the functions their cases call.
    let cases = |msg: &ModuleSupergraph| -> BTreeMap<(usize, u32), Vec<u32>> {
        let mut out: BTreeMap<(usize, u32), Vec<u32>> = BTreeMap::new();
        for (f, func) in msg.supergraph.functions.iter().enumerate() {
            for (k, call) in func.calls.iter().enumerate() {
                if let (false, Callee::Direct(q)) = (msg.case_slots[f][k].is_empty(), &call.callee)
                {
                    let q = msg.num_imported_funcs + q.index() as u32;
                    out.entry((f, msg.call_index[f][k])).or_default().push(q);
                }
            }
        }
        out
    };
    let info = pathprof_wasm::analyze(&module).unwrap();
    let plain = cases(&ModuleSupergraph::with_cases(&module, &info, opts.max_cases).unwrap());
    let live = cases(&p.msg);
    // Cases call only functions that ran (a call none of whose callees ran
    // has none); calls with too many candidates of their type (main's)
    // have cases now.
    assert!(live.values().flatten().all(|q| ran.contains(q)), "{live:?}");
    assert!(live.keys().any(|c| !plain.contains_key(c)));
    assert!(
        live.len() > plain.len(),
        "{} calls with cases, {} without the profile",
        live.len(),
        plain.len()
    );
    let (mut cased, mut past) = (0, 0);
    for inv in &runs {
        let c = check(&p, "fnptr.O2 --weights", inv, &mut [0; 2]);
        assert!(c.instrumented);
        cased += usize::from(c.cased);
        past += usize::from(c.past_cases);
    }
    assert_eq!(cased, runs.len(), "every run calls through a case");
    assert!(
        past >= 3,
        "only {past} runs reached a function past the cases"
    );
}

/// A tail call through a table that holds an import as well as a profiled
/// function: the table index tells them apart when the module alone fills
/// the table, and the instrumented run counts exactly the observable
/// paths (the import returning for the tail caller, the profiled function
/// starting afresh), called from outside and through an uncut call site.
/// Through a table the host may write (exported), which one it takes is
/// only known at run time: refused with one line naming the file and the
/// call, and no output.
#[test]
fn a_tail_call_that_may_reach_an_import_is_told_apart_by_its_slot() {
    let engine = crate::common::programs::engine();
    let module = |table: &str| {
        format!(
            r#"(module
                 (type $t (func (param i32) (result i32)))
                 (import "wasi_snapshot_preview1" "fd_close" (func $ext (type $t)))
                 (memory (export "memory") 1)
                 (table {table} 3 funcref)
                 (elem (i32.const 0) func $f $ext $f)
                 (func $f (type $t) local.get 0 i32.const 5 i32.add)
                 (func $main (export "main") (param i32) (result i32)
                   local.get 0 i32.const 7 i32.gt_u
                   if (result i32) i32.const 9 else
                   i32.const 100 local.get 0 local.get 0 return_call_indirect (type $t)
                   end)
                 (func (export "outer") (param i32) (result i32)
                   local.get 0 call $main i32.const 1 i32.add))"#
        )
    };
    let wasm = wat::parse_str(module("")).unwrap();
    let p = prepare(&engine, "slot-told", &wasm);
    let mut instrumented = 0;
    for export in ["main", "outer"] {
        for arg in ["0", "1", "2", "8"] {
            let inv = programs::Invocation::Call {
                export: export.into(),
                args: vec![arg.into()],
            };
            instrumented += usize::from(check(&p, export, &inv, &mut [0; 2]).instrumented);
        }
    }
    assert_eq!(instrumented, 8, "every call compared instrumented");
    let dir = tempfile::tempdir().unwrap();
    let mixed = dir.path().join("mixed.wat");
    std::fs::write(&mixed, module(r#"(export "t")"#)).unwrap();
    let out = dir.path().join("out.wasm");
    let (mixed, out_s) = (mixed.display().to_string(), out.display().to_string());
    for mode in ["context", "piecewise"] {
        let o = pathprof(&["instrument", "--mode", mode, &mixed, "-o", &out_s]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "not one line: {err}");
        assert!(
            err.starts_with(&format!("pathprof: error: {mixed}: ")),
            "{err}"
        );
        assert!(
            err.contains("the tail call at 0x") && err.contains("imported"),
            "{err}"
        );
        assert!(!out.exists(), "an output was left");
    }
}
