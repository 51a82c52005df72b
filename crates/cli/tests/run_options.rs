//! `pathprof run` on programs that need more than a WASI command's `_start`:
//! imports the engine does not provide, reactors with arguments, features
//! the engine enables on request. One-line errors that name the file, exit
//! codes, and no output after a failure.

use crate::common;

use std::path::Path;

use common::bin::{pathprof, stderr};

/// Writes `text` to `dir/name` and returns its path.
fn module(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name).display().to_string();
    std::fs::write(&path, text).unwrap();
    path
}

/// A module importing a function nothing provides, called by `calls` only:
/// refused before it is instrumented or compiled, with the options that run
/// it anyway; with them, what does not call the import runs and is profiled.
#[test]
fn unknown_imports_are_refused_up_front_or_stood_in_for() {
    let dir = tempfile::tempdir().unwrap();
    let module = module(
        &dir,
        "imports.wat",
        r#"(module
             (import "env" "mystery" (func $m (result i32)))
             (func (export "_start"))
             (func (export "calls") (result i32) (i32.add (call $m) (i32.const 1))))"#,
    );
    let out = dir.path().join("p.json").display().to_string();
    let o = pathprof(&["run", &module, "-o", &out]);
    assert_eq!(
        stderr(&o),
        format!(
            "pathprof: error: {module}: imports that the embedded engine does not provide \
             (it provides WASI preview 1): env::mystery (function); to profile the parts of \
             the program that do not use them, give --unknown-imports trap (calling one \
             traps) or default (it returns zeros)\n"
        )
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(!Path::new(&out).exists());

    let run = |extra: &[&str]| {
        let mut args = vec!["run", "-o", &out];
        args.extend_from_slice(extra);
        args.push(&module);
        let o = pathprof(&args);
        assert!(Path::new(&out).exists(), "{args:?}: {}", stderr(&o));
        std::fs::remove_file(&out).unwrap();
        o
    };
    assert_eq!(run(&["--unknown-imports", "trap"]).status.code(), Some(0));
    let trapped = run(&["--unknown-imports", "trap", "--invoke", "calls"]);
    assert_eq!(trapped.status.code(), Some(134));
    assert!(
        stderr(&trapped).contains("env::mystery"),
        "{}",
        stderr(&trapped)
    );
    let zero = run(&["--unknown-imports", "default", "--invoke", "calls"]);
    assert_eq!(zero.status.code(), Some(0), "{}", stderr(&zero));
}

/// A reactor that prints its argv and returns its parameter plus one:
/// `--arg` gives the program its arguments (even ones that begin with `-`),
/// the arguments after `--` are the export's parameters, and what it
/// returns goes to stderr, leaving stdout to the program.
#[test]
fn a_reactor_gets_program_arguments_and_parameters_apart() {
    let dir = tempfile::tempdir().unwrap();
    let module = module(
        &dir,
        "reactor.wat",
        r#"(module
             (import "wasi_snapshot_preview1" "fd_write"
               (func $fd_write (param i32 i32 i32 i32) (result i32)))
             (import "wasi_snapshot_preview1" "args_sizes_get"
               (func $sizes (param i32 i32) (result i32)))
             (import "wasi_snapshot_preview1" "args_get"
               (func $args (param i32 i32) (result i32)))
             (memory (export "memory") 1)
             (func (export "_initialize"))
             (func (export "run") (param i32) (result i32)
               (drop (call $sizes (i32.const 16) (i32.const 20)))
               (drop (call $args (i32.const 1000) (i32.const 2000)))
               (i32.store (i32.const 0) (i32.const 2000))
               (i32.store (i32.const 4) (i32.load (i32.const 20)))
               (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
               (i32.add (local.get 0) (i32.const 1))))"#,
    );
    let out = dir.path().join("p.json").display().to_string();
    let o = pathprof(&[
        "run", "--invoke", "run", "--arg", "-c", "--arg", "print(1)", &module, "-o", &out, "--",
        "41",
    ]);
    assert_eq!(
        stderr(&o),
        format!("pathprof: run returned 42\npathprof: profile written to {out}\n")
    );
    assert_eq!(o.stdout, b"reactor.wat\0-c\0print(1)\0");
    assert_eq!(o.status.code(), Some(0));
    assert!(Path::new(&out).exists());
}

/// A module with a shared memory (the threads proposal) runs and is
/// profiled: the engine enables shared memories, which wasmtime leaves off
/// by default.
#[test]
fn a_module_with_a_shared_memory_runs() {
    let dir = tempfile::tempdir().unwrap();
    let module = module(
        &dir,
        "threads.wat",
        r#"(module
             (memory 1 1 shared)
             (func (export "f") (result i32)
               (i32.atomic.store (i32.const 0) (i32.const 6))
               (i32.add (i32.atomic.load (i32.const 0)) (i32.const 1))))"#,
    );
    let out = dir.path().join("p.json").display().to_string();
    let o = pathprof(&["run", "--invoke", "f", &module, "-o", &out]);
    assert_eq!(
        stderr(&o),
        format!("pathprof: f returned 7\npathprof: profile written to {out}\n")
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(Path::new(&out).exists());
}

/// Legacy exception handling (`try`/`catch`), which the engine does not
/// compile, runs translated to `try_table` (legacy_exceptions.rs checks
/// the translation against V8); what the translation does not take (a
/// `delegate` to a `try_table`) is a one-line error that says what to do
/// instead, with no profile.
#[test]
fn legacy_exception_handling_runs_translated() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = module(
        &dir,
        "legacy.wat",
        r#"(module
             (tag $e)
             (func (export "f") (result i32)
               try (result i32)
                 throw $e
               catch $e
                 i32.const 1
               end))"#,
    );
    let untranslated = module(
        &dir,
        "mixed.wat",
        r#"(module
             (tag $e)
             (func (export "f") (result i32)
               block $h
                 try_table (catch $e $h)
                   try
                     throw $e
                   delegate 0
                 end
               end
               i32.const 2))"#,
    );
    let out = dir.path().join("p.json").display().to_string();
    for mode in ["path", "none"] {
        let o = pathprof(&["run", "--mode", mode, "--invoke", "f", &legacy, "-o", &out]);
        let err = stderr(&o);
        assert!(err.starts_with("pathprof: f returned 1\n"), "{mode}: {err}");
        assert_eq!(o.status.code(), Some(0), "{mode}: {err}");
        std::fs::remove_file(&out).ok();
        let o = pathprof(&[
            "run",
            "--mode",
            mode,
            "--invoke",
            "f",
            &untranslated,
            "-o",
            &out,
        ]);
        let err = stderr(&o);
        let last = err.lines().last().unwrap_or_default();
        assert_eq!(
            last,
            format!(
                "pathprof: error: {untranslated}: the module uses legacy exception handling \
                 (`try`, `catch`, `rethrow`, `delegate`), which the embedded engine cannot run, \
                 and translating it to `try_table` failed (function 0: a `delegate` to a \
                 `try_table` is not translated): `pathprof instrument` it, run that on an engine \
                 that can (V8: node 22 or later, browsers) and `pathprof collect` its counters"
            ),
            "{mode}: {err}"
        );
        assert_eq!(o.status.code(), Some(1));
        assert!(!Path::new(&out).exists());
    }
}

/// `run` keeps compiled modules in wasmtime's compilation cache: the second
/// run of the same module with the same options reads its machine code back
/// (`compile_cached` in the timings) and writes the same profile;
/// `--no-compile-cache` and `PATHPROF_COMPILE_CACHE=off` compile.
#[test]
fn a_second_run_reads_the_compiled_module_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let module = common::programs::root()
        .join("tests/fixtures/c/build/sort.O2.wasm")
        .display()
        .to_string();
    let run = |i: usize, cache_var: &str, extra: &[&str]| {
        let timings = dir.path().join(format!("t{i}.json"));
        let profile = dir.path().join(format!("p{i}.json"));
        let mut args = vec!["run".to_string(), "--timings".into()];
        args.push(timings.display().to_string());
        args.extend(extra.iter().map(|s| s.to_string()));
        args.extend(["-o".into(), profile.display().to_string(), module.clone()]);
        args.extend(["--".into(), "-b".into(), "4".into(), "2".into()]);
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_pathprof"))
            .args(&args)
            .env("PATHPROF_COMPILE_CACHE", cache_var)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let t: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&timings).unwrap()).unwrap();
        let p = pathprof_profile::Profile::read(&profile).unwrap();
        (t["compile_cached"].as_bool().unwrap(), p)
    };
    let cache_var = cache.display().to_string();
    let (first, p1) = run(1, &cache_var, &[]);
    assert!(!first, "an empty cache had the module");
    assert!(std::fs::read_dir(&cache).unwrap().count() > 0);
    let (second, p2) = run(2, &cache_var, &[]);
    assert!(second, "the second run compiled again");
    assert_eq!(p1, p2);
    let (refused, _) = run(3, &cache_var, &["--no-compile-cache"]);
    assert!(!refused);
    let (off, _) = run(4, "off", &[]);
    assert!(!off);
    assert!(!Path::new("off").exists(), "`off` made a directory");
    // A cache that cannot be made (here under a file) is passed over.
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let (unusable, p5) = run(5, &file.join("cache").display().to_string(), &[]);
    assert!(!unusable);
    assert_eq!(p1, p5);
}

/// `--preload NAME=FILE` links a library whose exports are the imports of
/// module NAME, in every mode and with `--segments`: the exceptions it
/// throws are caught by the profiled code (the oracles check the counts on
/// the same fixture; here, that the option reaches the run). By the
/// fixture's arithmetic, `loop 5` returns 1 + 3 + 3 + 7 + 7 = 21, and its
/// handler runs twice (the library throws at i = 3 and 4). Bad preloads
/// are one-line errors naming the file, with no output.
#[test]
fn preloaded_libraries_provide_imports_and_throw_into_the_program() {
    let root = common::programs::root();
    let program = root.join("tests/fixtures/wat/import_throws.wat");
    let library = root.join("tests/fixtures/linked/thrower.wat");
    let (program, library) = (program.display().to_string(), library.display().to_string());
    let preload = format!("thrower={library}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.profile").display().to_string();
    for extra in [
        &["--mode", "path"][..],
        &["--mode", "context"],
        &["--segments", "2"],
    ] {
        let mut args = vec!["run", "--preload", &preload, "--invoke", "loop", "-o", &out];
        args.extend_from_slice(extra);
        args.extend([program.as_str(), "--", "5"]);
        let o = pathprof(&args);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("loop returned 21"), "{}", stderr(&o));
        if extra[1] == "path" {
            let r = pathprof(&["report", &out]);
            let text = String::from_utf8(r.stdout).unwrap();
            let handler = text.lines().find(|l| l.contains("handler->backedge"));
            let count = handler.and_then(|l| l.split_whitespace().next());
            assert_eq!(count, Some("2"), "{text}");
        }
        std::fs::remove_file(&out).unwrap();
    }

    let bad = module(&dir, "bad.wat", "(module (func (export \"e\") (i32.add)))");
    let missing = dir.path().join("missing.wat").display().to_string();
    for (file, reason) in [
        (missing.as_str(), "No such file"),
        (bad.as_str(), "cannot preload"),
    ] {
        let preload = format!("thrower={file}");
        let o = pathprof(&["run", "--preload", &preload, "-o", &out, &program]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(file) && err.contains(reason), "{err}");
        assert!(!Path::new(&out).exists());
    }
    let o = pathprof(&["run", "--preload", "thrower", "-o", &out, &program]);
    assert!(stderr(&o).contains("expected NAME=FILE"), "{}", stderr(&o));
    assert!(!Path::new(&out).exists());
}

/// A library that catches what its callbacks throw (escapes.wat, linked
/// with caller.wat) many times over: under `--mode ippp` the activations
/// the exceptions leave never take their member lists off the stack
/// region, so the profiled caller puts the stack pointer back after each
/// library call (docs/decisions.md#import-catches). Without that, these
/// 340,000 exceptions overflow the region and the run traps. The program
/// returns what it returns uninstrumented.
#[test]
fn exceptions_a_library_catches_leave_the_ippp_stack_region_as_it_was() {
    let root = common::programs::root();
    let program = root.join("tests/fixtures/wat/escapes.wat");
    let library = root.join("tests/fixtures/linked/caller.wat");
    let (program, library) = (program.display().to_string(), library.display().to_string());
    let preload = format!("caller={library}");
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| dir.path().join(name).display().to_string();
    let (segments, profile) = (out("segments.profile"), out("ippp.profile"));
    let run = |extra: &[&str], n: &str| {
        let mut args = vec!["run", "--preload", &preload, "--invoke", "escapes"];
        args.extend_from_slice(extra);
        args.extend([program.as_str(), "--", n]);
        let o = pathprof(&args);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", stderr(&o));
        let err = stderr(&o);
        let line = err.lines().find(|l| l.contains("escapes returned"));
        line.map(str::to_owned).expect("the return value")
    };
    run(&["--segments", "2", "-o", &segments], "5");
    let want = run(&["--mode", "none", "-o", &out("none.profile")], "100000");
    let ippp = [
        "--mode",
        "ippp",
        "--interesting",
        &segments,
        "-k",
        "2",
        "-o",
        &profile,
    ];
    assert_eq!(run(&ippp, "100000"), want);
}
