//! The `pathprof` binary as a user meets it: exit codes, one-line errors that
//! name the file, no output file after a failure, and the commands end to end.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::bin::{pathprof, stderr};
use common::programs::root;

fn wat_fixture(name: &str) -> String {
    root()
        .join("tests/fixtures/wat")
        .join(name)
        .display()
        .to_string()
}

fn c_fixture(name: &str) -> PathBuf {
    let p = root().join("tests/fixtures/c/build").join(name);
    assert!(
        p.exists(),
        "{}: run scripts/build-c-fixtures.sh first",
        p.display()
    );
    p
}

/// The code section's size, read with wasmparser (not pathprof's reader).
fn code_section_bytes(module: &[u8]) -> u64 {
    wasmparser::Parser::new(0)
        .parse_all(module)
        .find_map(|p| match p.unwrap() {
            wasmparser::Payload::CodeSectionStart { size, .. } => Some(size as u64),
            _ => None,
        })
        .unwrap()
}

/// Bad inputs of every kind, each given to every command that reads a module.
#[test]
fn bad_modules_get_one_line_errors_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    let valid = std::fs::read(c_fixture("sort.O2.wasm")).unwrap();
    let cases = [
        (write("notwasm.txt", b"hello world\n"), "not a WebAssembly module (no \\0asm header)".to_string()),
        (write("truncated.wasm", &valid[..valid.len() / 3]), "".to_string()),
        (write("invalid.wasm", b"\0asm\x01\0\0\0\x01\x05\x01\x60\x00\x01\x7f\x03\x02\x01\x00\x0a\x04\x01\x02\x00\x0b"), "".to_string()),
        (write("component.wasm", b"\0asm\x0d\0\x01\0"), "component".to_string()),
        (dir.path().join("missing.wasm").display().to_string(), "No such file or directory".to_string()),
    ];
    for (file, reason) in &cases {
        let out = dir.path().join("out.json").display().to_string();
        let inst = dir.path().join("out.wasm").display().to_string();
        for args in [
            vec!["run", file.as_str(), "-o", &out],
            vec!["instrument", file.as_str(), "-o", &inst],
            vec!["stats", file.as_str()],
        ] {
            let o = pathprof(&args);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
            assert!(
                err.starts_with(&format!("pathprof: error: {file}: ")),
                "{args:?}: {err}"
            );
            assert!(
                err.contains(reason.as_str()),
                "{args:?}: {err} lacks {reason}"
            );
            assert!(
                !Path::new(&out).exists() && !Path::new(&inst).exists(),
                "{args:?} left an output file"
            );
        }
    }
}

#[test]
fn an_unwritable_output_is_an_error_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let module = c_fixture("sort.O0.wasm").display().to_string();
    let out = dir.path().join("out").display().to_string();
    let t = dir.path().join("t.json").display().to_string();
    let bad = "/nonexistent-dir/out";
    for args in [
        vec!["run", &module, "-o", bad],
        vec!["instrument", &module, "-o", bad],
        // --timings is checked before any work: the program does not run
        // and no output is written.
        vec!["run", "--timings", bad, &module, "-o", &out],
        vec!["instrument", "--timings", bad, &module, "-o", &out],
        vec!["instrument", "--timings", &t, &module, "-o", bad],
    ] {
        let o = pathprof(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(
            err,
            format!("pathprof: error: {bad}: cannot create a file in /nonexistent-dir: no such folder\n"),
            "{args:?}"
        );
        assert!(o.stdout.is_empty(), "{args:?}: the program ran");
        assert!(
            !Path::new(&out).exists() && !Path::new(&t).exists(),
            "{args:?}"
        );
    }
}

#[test]
fn instrument_writes_timings() {
    let dir = tempfile::tempdir().unwrap();
    let module = c_fixture("sort.O2.wasm");
    let bytes = std::fs::read(&module).unwrap();
    let code = code_section_bytes(&bytes);
    let (t, out) = (dir.path().join("t.json"), dir.path().join("out.wasm"));
    let o = pathprof(&[
        "instrument",
        "--timings",
        t.to_str().unwrap(),
        module.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&t).unwrap()).unwrap();
    assert_eq!(v["module_bytes"], bytes.len() as u64);
    assert_eq!(v["code_bytes"], code);
    assert_eq!(v["output_bytes"], std::fs::metadata(&out).unwrap().len());
    assert!(v["instrument_s"].as_f64().unwrap() > 0.0);
    // The counting allocator is installed and counted this command (a
    // module is parsed and a CFG built, so some heap is live at once), and
    // frees are subtracted (the sum of every allocation is far larger).
    let heap = v["peak_heap_bytes"].as_u64().unwrap();
    assert!(
        heap > 0 && heap < 64 * bytes.len() as u64,
        "peak heap {heap}"
    );
}

#[test]
fn run_exits_with_the_programs_code_and_writes_a_profile() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.json");
    let module = c_fixture("deepexit.O2.wasm").display().to_string();
    let o = pathprof(&[
        "run",
        &module,
        "-o",
        &profile.display().to_string(),
        "--",
        "exit",
        "40",
    ]);
    let native = Command::new(c_fixture("deepexit.native"))
        .args(["exit", "40"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), native.status.code());
    assert_eq!(o.stdout, native.stdout);
    assert!(
        stderr(&o).contains("the run ended abruptly"),
        "{}",
        stderr(&o)
    );
    let p = pathprof_profile::Profile::read(&profile).unwrap();
    assert_eq!((p.runs, p.abrupt_runs), (1, 1));

    let o = pathprof(&["report", &profile.display().to_string(), "--top", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.starts_with("path profile of module "), "{text}");
    assert_eq!(
        text.lines().count(),
        2 + 2 + 1 + 3,
        "header, note, truncation header and its one function, column titles, 3 paths:\n{text}"
    );
    // printf_core has more than 2^16 paths: truncated, and some of its path
    // executions ran through a cut; the line's total is its executions.
    let printf = p
        .functions
        .iter()
        .find(|f| f.display_name() == "printf_core")
        .unwrap();
    let pathprof_profile::FunctionData::Path { counts, .. } = &printf.data else {
        unreachable!()
    };
    let executions: u64 =
        counts.paths.iter().map(|&(_, c)| c).sum::<u64>() + counts.self_loops.iter().sum::<u64>();
    let line = text.lines().nth(3).unwrap();
    assert!(
        line.ends_with("printf_core") && line.contains(&format!(" of {executions:>12} (")),
        "{line}"
    );
}

#[test]
fn report_and_merge_refuse_bad_profiles() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("bogus.json");
    std::fs::write(&bogus, "{\"format\": \"something else\"}").unwrap();
    let b = bogus.display().to_string();
    let o = pathprof(&["report", &b]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), format!("pathprof: error: {b}: not a pathprof profile (no \"format\": \"pathprof-profile\" field)\n"));

    // Two profiles of different modules.
    let (pa, pb) = (dir.path().join("a.json"), dir.path().join("b.json"));
    for (module, out) in [("sort.O0.wasm", &pa), ("sort.O2.wasm", &pb)] {
        let o = pathprof(&[
            "run",
            &c_fixture(module).display().to_string(),
            "-o",
            &out.display().to_string(),
            "--",
            "-q",
            "3",
            "1",
            "2",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let merged = dir.path().join("m.json");
    let o = pathprof(&[
        "merge",
        &pa.display().to_string(),
        &pb.display().to_string(),
        "-o",
        &merged.display().to_string(),
    ]);
    // Each named with its module's hash (SHA-256 of the file, by coreutils).
    let sha = |module: &str| -> String {
        let o = Command::new("sha256sum")
            .arg(c_fixture(module))
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout)[..12].to_string()
    };
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "pathprof: error: cannot merge: {} is a profile of module {}, {} of module {}\n",
            pb.display(),
            sha("sort.O2.wasm"),
            pa.display(),
            sha("sort.O0.wasm")
        )
    );
    assert!(!merged.exists());

    // The same module twice: counts add up.
    let o = pathprof(&[
        "merge",
        &pa.display().to_string(),
        &pa.display().to_string(),
        "-o",
        &merged.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (one, two) = (
        pathprof_profile::Profile::read(&pa).unwrap(),
        pathprof_profile::Profile::read(&merged).unwrap(),
    );
    assert_eq!(two.runs, 2);
    let total = |p: &pathprof_profile::Profile| -> u64 {
        pathprof::report::hot_paths(p, None)
            .unwrap()
            .iter()
            .map(|h| h.count)
            .sum()
    };
    assert_eq!(total(&two), 2 * total(&one));
    assert!(total(&one) > 0);

    // --weights from another module is refused.
    let o = pathprof(&[
        "run",
        &c_fixture("sort.O2.wasm").display().to_string(),
        "--weights",
        &pa.display().to_string(),
        "-o",
        &merged.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with(&format!(
            "pathprof: error: {}: profile is of module ",
            pa.display()
        )),
        "{}",
        stderr(&o)
    );
}

/// `instrument` + a host of one's own + `collect` gives the profile that
/// `run --invoke` gives on the embedded engine.
#[test]
fn validating_the_output_changes_nothing_but_the_time() {
    let dir = tempfile::tempdir().unwrap();
    let wat = wat_fixture("loops.wat");
    let plain = dir.path().join("plain.wasm").display().to_string();
    let checked = dir.path().join("checked.wasm").display().to_string();
    let o = pathprof(&["instrument", &wat, "-o", &plain]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = pathprof(&["instrument", "--validate-output", &wat, "-o", &checked]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&plain).unwrap(),
        std::fs::read(&checked).unwrap()
    );
}

/// A module read from a pipe cannot be read again at the end, as a file's
/// custom sections after the code are (`driver::instrument_file_to_file`):
/// it is held whole instead, and the output is the same.
#[test]
fn a_module_on_a_pipe_instruments_as_from_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let module = c_fixture("sort.O2.wasm");
    let from_file = dir.path().join("file.wasm").display().to_string();
    let from_pipe = dir.path().join("pipe.wasm").display().to_string();
    let o = pathprof(&[
        "instrument",
        &module.display().to_string(),
        "-o",
        &from_file,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut child = Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .args(["instrument", "/dev/stdin", "-o", &from_pipe])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let bytes = std::fs::read(&module).unwrap();
    // The fixture has DWARF after its code: what a file leaves behind.
    assert!(
        wasmparser::Parser::new(0).parse_all(&bytes).any(
            |p| matches!(p, Ok(wasmparser::Payload::CustomSection(c)) if c.name() == ".debug_info")
        ),
        "no DWARF in the fixture"
    );
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &bytes).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read(&from_pipe).unwrap() == std::fs::read(&from_file).unwrap());
}

#[test]
fn instrument_then_collect_equals_run_invoke() {
    let dir = tempfile::tempdir().unwrap();
    let wat = wat_fixture("loops.wat");
    let inst = dir.path().join("loops.inst.wasm");
    let o = pathprof(&["instrument", &wat, "-o", &inst.display().to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));

    // The "host": wasmtime used directly, as a user's own embedding would.
    let bytes = std::fs::read(&inst).unwrap();
    // Copy-on-write images off, as in the runner: other test threads fork
    // (docs/decisions.md#no-memory-cow).
    let mut config = wasmtime::Config::new();
    config.wasm_multi_memory(true).memory_init_cow(false);
    let engine = wasmtime::Engine::new(&config).unwrap();
    let module = wasmtime::Module::new(&engine, &bytes).unwrap();
    let mut store = wasmtime::Store::new(&engine, ());
    let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
    let export = first_i32_export(&module);
    let f = instance
        .get_typed_func::<i32, i32>(&mut store, &export)
        .unwrap();
    let result = f.call(&mut store, 7).unwrap();
    let memory = instance
        .get_memory(&mut store, "__pathprof_counters")
        .unwrap();
    let counters = dir.path().join("counters.bin");
    std::fs::write(&counters, memory.data(&store)).unwrap();

    let collected = dir.path().join("collected.json");
    let o = pathprof(&[
        "collect",
        &inst.display().to_string(),
        &counters.display().to_string(),
        "-o",
        &collected.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    let ran = dir.path().join("ran.json");
    let o = pathprof(&[
        "run",
        "--invoke",
        &export,
        &wat,
        "-o",
        &ran.display().to_string(),
        "--",
        "7",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The result on stderr: stdout is the program's.
    assert!(
        stderr(&o).contains(&format!("pathprof: {export} returned {result}\n")),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());

    let (a, b) = (
        pathprof_profile::Profile::read(&collected).unwrap(),
        pathprof_profile::Profile::read(&ran).unwrap(),
    );
    assert_eq!(a, b);
    assert!(pathprof::report::hot_paths(&a, None).unwrap().len() > 1);
}

/// The README's own-host workflow with the example host it ships: the
/// `wasmtime` package from PyPI runs the instrumented module (installed by
/// scripts/setup.sh), `collect` turns its counters into the profile that
/// `run --invoke` gives.
#[test]
fn the_python_host_example_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let wat = wat_fixture("loops.wat");
    let inst = dir.path().join("loops.inst.wasm").display().to_string();
    let counters = dir.path().join("counters.bin").display().to_string();
    assert!(pathprof(&["instrument", &wat, "-o", &inst])
        .status
        .success());
    let host = root().join("examples/host/python-host.py");
    let o = Command::new("python3")
        .arg(&host)
        .args([&inst, "fib", "12", &counters])
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "the Python host failed (run scripts/setup.sh): {}",
        stderr(&o)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "144");
    let (collected, ran) = (dir.path().join("c.json"), dir.path().join("r.json"));
    assert!(pathprof(&[
        "collect",
        &inst,
        &counters,
        "-o",
        &collected.display().to_string()
    ])
    .status
    .success());
    let o = pathprof(&[
        "run",
        "--invoke",
        "fib",
        &wat,
        "-o",
        &ran.display().to_string(),
        "--",
        "12",
    ]);
    assert!(stderr(&o).contains("pathprof: fib returned 144\n"));
    let (a, b) = (
        pathprof_profile::Profile::read(&collected).unwrap(),
        pathprof_profile::Profile::read(&ran).unwrap(),
    );
    assert_eq!(a, b);
}

/// `fixture` (a C fixture) instrumented with `options` into `dir`, run on
/// the embedded engine with `args`, and its counter memory saved as a host
/// would: the module's path and the counters' path.
fn instrumented_run(
    dir: &Path,
    fixture: &str,
    options: &[&str],
    args: &[&str],
) -> (String, String) {
    let tag = options.join("").replace('-', "");
    let inst = dir
        .join(format!("{fixture}{tag}.inst.wasm"))
        .display()
        .to_string();
    let mut cmd = vec!["instrument"];
    cmd.extend(options);
    let input = c_fixture(fixture).display().to_string();
    cmd.extend([input.as_str(), "-o", &inst]);
    let o = pathprof(&cmd);
    assert!(o.status.success(), "{}", stderr(&o));
    let engine = crate::common::programs::engine();
    let argv = std::iter::once(fixture).chain(args.iter().copied());
    let opts = pathprof_runner::RunOptions::captured(argv);
    let run = pathprof_runner::run_command(&engine, &std::fs::read(&inst).unwrap(), &opts).unwrap();
    assert_eq!(run.exit, pathprof_runner::Exit::Returned);
    let counters = dir
        .join(format!("{fixture}{tag}.counters"))
        .display()
        .to_string();
    std::fs::write(&counters, run.counters.unwrap()).unwrap();
    (inst, counters)
}

/// The first 12 hex digits of the SHA-256 of a C fixture.
fn short_hash(fixture: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(std::fs::read(c_fixture(fixture)).unwrap());
    digest[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// `collect MODULE COUNTERS` fails with one line, exit 1 and no output.
fn collect_error(dir: &Path, module: &str, counters: &str) -> String {
    let out = dir.join("refused.json");
    let o = pathprof(&[
        "collect",
        module,
        counters,
        "-o",
        &out.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(!out.exists());
    assert!(o.stdout.is_empty());
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    e.trim_end().to_string()
}

/// The counters of one C program given with another's module were decoded
/// into a wrong profile (exit 0) when the memory was large enough: the
/// header the modules write tells them apart. The program's own counters
/// still give the profile `pathprof run` gives.
#[test]
fn collect_refuses_the_counters_of_another_module() {
    let dir = tempfile::tempdir().unwrap();
    let (sort, sort_counters) =
        instrumented_run(dir.path(), "sort.O2.wasm", &[], &["-q", "5", "3", "9"]);
    let strproc = instrumented_run(dir.path(), "strproc.O2.wasm", &["--mode", "edge"], &[]);
    let sort_of = (
        "sort.O2.wasm",
        "path",
        (sort.clone(), sort_counters.clone()),
    );
    let strproc_of = ("strproc.O2.wasm", "edge", strproc);
    for (module, counters) in [(&sort_of, &strproc_of), (&strproc_of, &sort_of)] {
        let (inst, file) = (&module.2 .0, &counters.2 .1);
        assert_eq!(
            collect_error(dir.path(), inst, file),
            format!(
                "pathprof: error: {file}: these counters were written by another \
                 instrumented module (mode {}, module hash {}), not by {inst} (mode {}, \
                 module hash {})",
                counters.1,
                short_hash(counters.0),
                module.1,
                short_hash(module.0)
            )
        );
    }
    let not_counters = dir.path().join("notes.txt").display().to_string();
    std::fs::write(&not_counters, "PATH PROFILE\n").unwrap();
    assert_eq!(
        collect_error(dir.path(), &sort, &not_counters),
        format!(
            "pathprof: error: {not_counters}: not a pathprof counter memory (it does not \
             begin with PATHPROF)"
        )
    );
    let (collected, ran) = (dir.path().join("c.json"), dir.path().join("r.json"));
    let o = pathprof(&[
        "collect",
        &sort,
        &sort_counters,
        "-o",
        &collected.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let input = c_fixture("sort.O2.wasm").display().to_string();
    let o = pathprof(&[
        "run",
        &input,
        "-o",
        &ran.display().to_string(),
        "--",
        "-q",
        "5",
        "3",
        "9",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let collected = pathprof_profile::Profile::read(&collected).unwrap();
    assert_eq!(collected, pathprof_profile::Profile::read(&ran).unwrap());
    assert!(!pathprof::report::hot_paths(&collected, None)
        .unwrap()
        .is_empty());
}

/// Edge counters given to a path-mode module of the same program failed
/// with "flow is not conserved" and no file named; counters of the same
/// module and mode but other options are told apart too.
#[test]
fn collect_refuses_counters_of_another_mode_or_other_options() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["-b", "4", "2", "8"];
    let (path, _) = instrumented_run(dir.path(), "sort.O2.wasm", &[], &args);
    let (_, edge_counters) =
        instrumented_run(dir.path(), "sort.O2.wasm", &["--mode", "edge"], &args);
    let hash = short_hash("sort.O2.wasm");
    assert_eq!(
        collect_error(dir.path(), &path, &edge_counters),
        format!(
            "pathprof: error: {edge_counters}: these are edge-mode counters, but {path} was \
             instrumented in path mode (both of module hash {hash}): collect them with the \
             module instrumented in edge mode"
        )
    );
    let (_, truncated) = instrumented_run(
        dir.path(),
        "sort.O2.wasm",
        &["--truncate-above", "2"],
        &args,
    );
    // A counter memory of the previous layout version (16-byte header).
    let mut old = std::fs::read(&truncated).unwrap();
    old[8..12].copy_from_slice(&2u32.to_le_bytes());
    let old_file = dir.path().join("old.counters").display().to_string();
    std::fs::write(&old_file, old).unwrap();
    assert_eq!(
        collect_error(dir.path(), &path, &old_file),
        format!(
            "pathprof: error: {old_file}: a counter memory of layout version 2, this \
             pathprof reads version 3; instrument the module again and rerun it"
        )
    );
    let e = collect_error(dir.path(), &path, &truncated);
    let expected = format!(
        "pathprof: error: {truncated}: these counters were written by another instrumentation \
         of the same module in path mode, with other options (--truncate-above, --array-max, \
         --weights, --interesting, --hybrid ...), not by {path} (instrumentation hash "
    );
    assert!(e.starts_with(&expected), "{e}");
}

/// The first export of type (i32) -> i32.
fn first_i32_export(module: &wasmtime::Module) -> String {
    module
        .exports()
        .find(|e| {
            e.ty().func().is_some_and(|f| {
                f.params().map(|p| p.to_string()).collect::<Vec<_>>() == ["i32"]
                    && f.results().map(|p| p.to_string()).collect::<Vec<_>>() == ["i32"]
            })
        })
        .expect("loops.wat exports an (i32) -> i32 function")
        .name()
        .to_string()
}

/// Reports map blocks back to the source through the module's DWARF: at -O0
/// each function's entry block is on the line that defines the function,
/// which the oracle finds by reading the C source itself, in the file the
/// fixture was built from, named by its whole path.
#[test]
fn blocks_map_back_to_source_lines() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    let o = pathprof(&[
        "run",
        &c_fixture("recurse.O0.wasm").display().to_string(),
        "-o",
        &out.display().to_string(),
        "--",
        "6",
        "3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let profile = pathprof_profile::Profile::read(&out).unwrap();
    let c_file = root().join("tests/fixtures/c/recurse.c");
    let source = std::fs::read_to_string(&c_file).unwrap();
    let mut checked = 0;
    for name in [
        "fib",
        "ackermann",
        "is_even",
        "is_odd",
        "gcd",
        "hanoi",
        "main",
    ] {
        let line = source
            .lines()
            .position(|l| l.contains(&format!(" {name}(")) && l.trim_end().ends_with('{'))
            .unwrap_or_else(|| panic!("{name} is defined in recurse.c"))
            + 1;
        let f = profile
            .functions
            .iter()
            .find(|f| f.name.as_deref() == Some(name))
            .unwrap();
        let entry = f
            .edges
            .iter()
            .find(|e| e.src == pathprof_graph::Cfg::ENTRY)
            .unwrap()
            .dst;
        let block = f.blocks[entry.index()].as_ref().unwrap();
        let at = block.source.as_ref().expect("the fixtures have DWARF");
        assert_eq!(at.line as usize, line, "{name}");
        assert_eq!(
            std::fs::canonicalize(&at.file).ok(),
            std::fs::canonicalize(&c_file).ok(),
            "{name}: {}",
            at.file
        );
        checked += 1;
    }
    assert_eq!(checked, 7);
    // The text report shows where each path begins and ends.
    let o = pathprof(&["report", &out.display().to_string(), "--function", "fib"]);
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.lines().skip(2).all(|l| l.contains("[recurse.c:")),
        "{text}"
    );
}

/// `run --timings` writes where the time went and the sizes: the input's
/// code section size is read independently here (wasmparser) and the run
/// module is the input itself for `--mode none`.
#[test]
fn run_writes_timings() {
    let dir = tempfile::tempdir().unwrap();
    let module = wat::parse_file(wat_fixture("loops.wat")).unwrap();
    let code = code_section_bytes(&module);
    for mode in ["none", "path", "edge"] {
        let t = dir.path().join(format!("{mode}.json"));
        let p = dir.path().join(format!("{mode}.profile.json"));
        let o = pathprof(&[
            "run",
            "--mode",
            mode,
            "--timings",
            t.to_str().unwrap(),
            "-o",
            p.to_str().unwrap(),
            "--invoke",
            "fib",
            &wat_fixture("loops.wat"),
            "--",
            "10",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("pathprof: fib returned 55\n"),
            "{}",
            stderr(&o)
        );
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&t).unwrap()).unwrap();
        assert_eq!(v["module_bytes"], module.len() as u64, "{mode}");
        assert_eq!(v["code_bytes"], code, "{mode}");
        for k in ["instrument_s", "compile_s", "execute_s", "collect_s"] {
            assert!(v[k].as_f64().unwrap() >= 0.0, "{mode} {k}");
        }
        if mode == "none" {
            assert_eq!(v["run_module_bytes"], v["module_bytes"]);
            assert_eq!(v["counter_bytes"], 0);
            assert!(!p.exists());
        } else {
            assert!(
                v["run_code_bytes"].as_u64().unwrap() > code,
                "{mode}: instrumented code grows"
            );
            assert!(v["counter_bytes"].as_u64().unwrap() > 0);
        }
    }
}

/// Modules that need a feature pathprof's validator or the embedded engine
/// does not enable: one error line naming the file and the feature, exit
/// status 1, no output file. Features rejected by validation fail `run` and
/// `instrument` alike; those only the engine lacks fail `run` (the
/// instrumented module is still written by `instrument`, for engines that
/// have the feature).
#[test]
fn features_the_engine_lacks_get_one_line_errors_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let out = dir.path().join("out.json").display().to_string();
    let inst = dir.path().join("out.wasm").display().to_string();
    let no_output = |args: &[&str]| {
        assert!(
            !Path::new(&out).exists() && !Path::new(&inst).exists(),
            "{args:?} left an output file"
        );
    };

    // Rejected by pathprof's validation (crates/wasm/src/module.rs `features`).
    let validation = [
        (
            write(
                "wide.wat",
                r#"(module
                     (func (export "f") (param i64 i64 i64 i64) (result i64 i64)
                       (i64.add128 (local.get 0) (local.get 1) (local.get 2) (local.get 3))))"#,
            ),
            "invalid module at offset 0x2c: wide arithmetic support is not enabled",
        ),
        (
            write(
                "custom_page.wat",
                r#"(module
                     (memory 1 (pagesize 1))
                     (func (export "f") (result i32) (i32.load8_u (i32.const 0))))"#,
            ),
            "invalid module at offset 0x16: the custom page sizes proposal must be enabled \
             to customize a memory's page size",
        ),
        (
            write(
                "stack_switch.wat",
                r#"(module
                     (type $ft (func))
                     (type $ct (cont $ft))
                     (func $g)
                     (elem declare func $g)
                     (func (export "f") (resume $ct (cont.new $ct (ref.func $g)))))"#,
            ),
            "invalid module at offset 0xe: cannot define continuation types when stack \
             switching is disabled",
        ),
    ];
    for (file, reason) in &validation {
        for args in [
            vec!["run", "--invoke", "f", file.as_str(), "-o", &out],
            vec!["instrument", file.as_str(), "-o", &inst],
        ] {
            let o = pathprof(&args);
            assert_eq!(
                stderr(&o),
                format!("pathprof: error: {file}: {reason}\n"),
                "{args:?}"
            );
            assert_eq!(o.status.code(), Some(1), "{args:?}");
            no_output(&args);
        }
    }

    // Valid for pathprof, rejected by the embedded engine (wasmtime 48 as
    // configured by `pathprof_runner::config`): legacy exception handling
    // that the runner does not translate to `try_table` (a `delegate` to a
    // `try_table`), with what to do instead. (Shared memories, which it
    // once refused too, run, and so does the rest of legacy exception
    // handling: run_options.rs.)
    let legacy = write(
        "legacy_exceptions.wat",
        r#"(module
             (tag $e (param i32))
             (func (export "f") (result i32)
               block $h (result i32)
                 try_table (result i32) (catch $e $h)
                   try (result i32)
                     i32.const 7
                     throw $e
                   delegate 0
                 end
               end))"#,
    );
    let engine = [(
        &legacy,
        // pathprof instruments the function (legacy_exceptions.rs runs
        // such modules under V8), with no warning.
        String::new(),
        "the module uses legacy exception handling (`try`, `catch`, `rethrow`, `delegate`), \
         which the embedded engine cannot run, and translating it to `try_table` failed \
         (function 0: a `delegate` to a `try_table` is not translated): `pathprof instrument` \
         it, run that on an engine that can (V8: node 22 or later, browsers) and `pathprof \
         collect` its counters",
    )];
    for (file, warning, reason) in &engine {
        for args in [
            vec!["run", "--invoke", "f", file.as_str(), "-o", &out],
            vec!["run", file.as_str(), "-o", &out],
        ] {
            let o = pathprof(&args);
            assert_eq!(
                stderr(&o),
                format!("{warning}pathprof: error: {file}: {reason}\n"),
                "{args:?}"
            );
            assert_eq!(o.status.code(), Some(1), "{args:?}");
            no_output(&args);
        }
        // `instrument` does not need the engine: the module is for a host
        // that has the feature.
        let o = pathprof(&["instrument", file.as_str(), "-o", &inst]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(Path::new(&inst).exists());
        std::fs::remove_file(&inst).unwrap();
    }
}

/// Outputs get the usual permissions (0666 less the umask, not tempfile's
/// 0600), and a closed stdout ends pathprof by SIGPIPE, quietly, as a Unix
/// tool (`pathprof report p.json | head`), not with a panic.
#[cfg(unix)]
#[test]
fn outputs_are_readable_and_a_closed_pipe_is_quiet() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    let o = pathprof(&[
        "run",
        "-o",
        out.to_str().unwrap(),
        "--invoke",
        "fib",
        &wat_fixture("loops.wat"),
        "--",
        "10",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .map(|u| u32::from_str_radix(u.trim(), 8).unwrap())
        .unwrap();
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666 & !umask);

    // The reading end is closed before pathprof has read its module.
    let mut child = Command::new(env!("CARGO_BIN_EXE_pathprof"))
        .args(["stats", &c_fixture("sort.O2.wasm").display().to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.signal(), Some(13), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
}

/// By default a function's paths are truncated (5.3) at the array limit, so
/// that it counts in an array; a larger `--truncate-above` keeps its paths
/// whole and counts them in a hash table. sort.O2's `main` has 28,023 paths
/// whole (its stats with no truncation say so), more than the limit of 1,000
/// given here.
#[test]
fn paths_are_truncated_at_the_array_limit_unless_asked_to_hash() {
    let sort = c_fixture("sort.O2.wasm").display().to_string();
    let stats = |extra: &[&str]| -> Vec<serde_json::Value> {
        let mut args = vec!["stats", "--json", "--array-max", "1000"];
        args.extend_from_slice(extra);
        args.push(&sort);
        let o = pathprof(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let main = |fs: &[serde_json::Value]| fs.iter().find(|f| f["name"] == "main").unwrap().clone();
    let whole = stats(&["--truncate-above", "1099511627776"]);
    assert_eq!(main(&whole)["potential_paths"], 28023);
    assert_eq!(main(&whole)["truncations"], 0);
    assert_eq!(main(&whole)["storage"], "hash[4096]");
    let truncated = stats(&[]);
    let m = main(&truncated);
    assert!(m["truncations"].as_u64().unwrap() > 0, "{m}");
    assert!(m["potential_paths"].as_u64().unwrap() <= 1000, "{m}");
    for f in &truncated {
        let paths = f["potential_paths"].as_u64().unwrap_or(0);
        assert_eq!(f["storage"], format!("array[{paths}]"), "{f}");
    }

    // Profiles of the two numberings do not merge, and say why.
    let dir = tempfile::tempdir().unwrap();
    let profile = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name).display().to_string();
        let mut args = vec!["run", "--array-max", "1000", "-o", &out];
        args.extend_from_slice(extra);
        args.extend_from_slice(&[&sort, "--", "-q", "3", "1", "2"]);
        let o = pathprof(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        out
    };
    let (a, b) = (
        profile("a.json", &[]),
        profile("b.json", &["--truncate-above", "1099511627776"]),
    );
    let merged = dir.path().join("m.json");
    let o = pathprof(&["merge", "-o", &merged.display().to_string(), &a, &b]);
    assert!(!o.status.success());
    assert_eq!(
        stderr(&o),
        "pathprof: error: cannot merge: function main was numbered differently \
         (another --truncate-above?)\n"
    );
    assert!(!merged.exists());
}

/// Profiles are binary unless named `*.json`; in every mode the two
/// encodings hold the same profile: read back equal, and the binary one
/// exported as a profile document gives the JSON file byte for byte.
#[test]
fn binary_and_json_profiles_hold_the_same_profile_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).display().to_string();
    let module = c_fixture("sort.O2.wasm").display().to_string();
    let o = pathprof(&[
        "run",
        &module,
        "-o",
        &d("tested.profile"),
        "--",
        "-b",
        "4",
        "2",
        "8",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let modes: [&[&str]; 7] = [
        &["--mode", "path"],
        &["--mode", "edge"],
        &["--mode", "ppp", "--interesting", &d("tested.profile")],
        &["--mode", "context"],
        &["--mode", "piecewise"],
        &["--mode", "intra-context"],
        &["--segments", "2"],
    ];
    for mode in modes {
        let name = mode[1];
        let (bin, json, back) = (
            d(&format!("{name}.profile")),
            d(&format!("{name}.json")),
            d(&format!("{name}.back.json")),
        );
        for out in [&bin, &json] {
            let mut args = vec!["run"];
            args.extend_from_slice(mode);
            args.extend([
                module.as_str(),
                "-o",
                out,
                "--",
                "-q",
                "5",
                "3",
                "9",
                "-1",
                "7",
            ]);
            let o = pathprof(&args);
            assert!(o.status.success(), "{name}: {}", stderr(&o));
        }
        let (b, j) = (std::fs::read(&bin).unwrap(), std::fs::read(&json).unwrap());
        assert!(b.starts_with(pathprof_profile::binary::MAGIC), "{name}");
        assert!(j.starts_with(b"{"), "{name}");
        assert!(
            b.len() * 5 < j.len(),
            "{name}: {} against {} bytes",
            b.len(),
            j.len()
        );
        let read = |p: &str| pathprof_profile::Profile::read(Path::new(p)).unwrap();
        assert_eq!(read(&bin), read(&json), "{name}");
        let o = pathprof(&["export", &bin, "--format", "profile", "-o", &back]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(std::fs::read(&back).unwrap(), j, "{name}");
    }
    // merge takes a folder's .profile and .json files alike.
    std::fs::create_dir(d("fleet")).unwrap();
    for f in ["path.profile", "path.json"] {
        std::fs::copy(d(f), dir.path().join("fleet").join(f)).unwrap();
    }
    let o = pathprof(&["merge", &d("fleet"), "-o", &d("both.profile")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (one, both) = (
        pathprof_profile::Profile::read(Path::new(&d("path.profile"))).unwrap(),
        pathprof_profile::Profile::read(Path::new(&d("both.profile"))).unwrap(),
    );
    assert_eq!((one.runs, both.runs), (1, 2));
}

/// The modes of `run` and `instrument` are the techniques by name, listed
/// once in core; the tests' edge trace is not one a user can ask for.
#[test]
fn modes_are_listed_and_the_trace_is_not_one() {
    let techniques = "path, edge, ppp, context, piecewise, intra-context, ippp";
    for (command, listed) in [
        ("instrument", techniques.to_string()),
        ("run", format!("{techniques}, none")),
    ] {
        let o = pathprof(&[command, "--mode", "trace", "prog.wasm", "-o", "out"]);
        assert_eq!(o.status.code(), Some(2), "{command}: a usage error");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("invalid value 'trace' for '--mode <MODE>'"),
            "{command}: {err}"
        );
        assert!(
            err.contains(&format!("[possible values: {listed}]")),
            "{command}: {err}"
        );
    }
}
