//! Runs the C fixture programs (tests/fixtures/c) built for wasm32-wasi at -O0
//! and -O2 on the runner, with every input of tests/fixtures/c/cases.txt, and
//! compares stdout and the exit code with the same program built by the host
//! compiler (the independent oracle).
//!
//! The builds come from scripts/build-c-fixtures.sh, run once per test
//! binary. Without clang (or wasi-libc) these tests fail, telling to run
//! scripts/setup.sh; they are never skipped.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use pathprof_runner::{compile, engine, run_compiled, Exit, RunOptions};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds the fixtures (once) and returns the build directory.
fn build_dir() -> &'static Path {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let result = DIR.get_or_init(|| {
        let root = repo_root();
        let script = root.join("scripts/build-c-fixtures.sh");
        let out = root.join("tests/fixtures/c/build");
        let output = Command::new("bash")
            .arg(&script)
            .arg(&out)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if output.status.success() {
            Ok(out)
        } else {
            Err(format!(
                "scripts/build-c-fixtures.sh failed ({}):\n{}{}\n\
                 The C fixture tests need clang, lld, wasi-libc and \
                 libclang-rt-14-dev-wasm32: run scripts/setup.sh (as root).",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
            ))
        }
    });
    match result {
        Ok(dir) => dir,
        Err(msg) => panic!("{msg}"),
    }
}

struct Case {
    line: usize,
    name: String,
    args: Vec<String>,
    stdin: Vec<u8>,
}

fn unescape(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push(b'\n'),
                Some('\\') => out.push(b'\\'),
                Some(other) => panic!("cases.txt: unknown escape \\{other}"),
                None => panic!("cases.txt: trailing backslash"),
            }
        } else {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    out
}

fn cases() -> Vec<Case> {
    let path = repo_root().join("tests/fixtures/c/cases.txt");
    let text = std::fs::read_to_string(&path).expect("tests/fixtures/c/cases.txt");
    let mut cases = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.splitn(3, '|').collect();
        assert!(
            fields.len() >= 2,
            "cases.txt line {}: expected NAME | ARGS [| STDIN]",
            i + 1
        );
        cases.push(Case {
            line: i + 1,
            name: fields[0].trim().to_string(),
            args: fields[1].split_whitespace().map(String::from).collect(),
            stdin: fields
                .get(2)
                .map(|s| unescape(s.trim()))
                .unwrap_or_default(),
        });
    }
    cases
}

fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo_root().join("tests/fixtures/c"))
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            (path.extension()? == "c").then(|| path.file_stem().unwrap().to_string_lossy().into())
        })
        .collect();
    names.sort();
    names
}

/// Runs the host build; a death by signal N counts as exit code 128 + N.
fn run_native(exe: &Path, case: &Case) -> (Vec<u8>, u8) {
    let mut child = Command::new(exe)
        .args(&case.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    child.stdin.take().unwrap().write_all(&case.stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    let code = match (out.status.code(), out.status.signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        _ => unreachable!(),
    };
    let code = u8::try_from(code).expect("exit codes are 0..=255");
    (out.stdout, code)
}

fn check_fixture(name: &str) {
    let dir = build_dir();
    let cases: Vec<Case> = cases().into_iter().filter(|c| c.name == name).collect();
    assert!(!cases.is_empty(), "no cases for {name} in cases.txt");
    let engine = engine().unwrap();
    let native = dir.join(format!("{name}.native"));
    let mut failures = Vec::new();
    for opt in ["O0", "O2"] {
        let path = dir.join(format!("{name}.{opt}.wasm"));
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let module = compile(&engine, &bytes).unwrap();
        for case in &cases {
            let (want_stdout, want_code) = run_native(&native, case);
            let mut opts =
                RunOptions::captured(std::iter::once(name.to_string()).chain(case.args.clone()));
            opts.stdin = Some(case.stdin.clone());
            let out = run_compiled(&module, &opts).unwrap();
            let what = format!(
                "{name}.{opt}.wasm, cases.txt line {} ({:?})",
                case.line, case.args
            );
            if out.stdout != want_stdout {
                failures.push(format!(
                    "{what}: stdout differs\n--- wasm:\n{}\n--- native:\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&want_stdout)
                ));
            }
            if out.exit.code() != want_code {
                failures.push(format!(
                    "{what}: exit {:?} (code {}), native exit code {want_code}",
                    out.exit,
                    out.exit.code()
                ));
            }
            // Only the abort case traps; everything else returns or exits.
            if want_code != 134 {
                assert!(!matches!(out.exit, Exit::Trap(_)), "{what}: {:?}", out.exit);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_fixture_has_cases_and_every_case_a_fixture() {
    let names = fixture_names();
    assert!(names.len() >= 6, "{names:?}");
    let cases = cases();
    for name in &names {
        assert!(
            cases.iter().filter(|c| &c.name == name).count() >= 3,
            "fixture {name} needs at least 3 cases in cases.txt"
        );
    }
    for case in &cases {
        assert!(
            names.contains(&case.name),
            "cases.txt line {}: no fixture {}.c",
            case.line,
            case.name
        );
    }
}

#[test]
fn every_fixture_is_built() {
    let dir = build_dir();
    for name in fixture_names() {
        for suffix in ["O0.wasm", "O2.wasm", "native"] {
            let path = dir.join(format!("{name}.{suffix}"));
            assert!(path.is_file(), "{} missing", path.display());
        }
    }
}

#[test]
fn fixture_sort() {
    check_fixture("sort");
}

#[test]
fn fixture_interp() {
    check_fixture("interp");
}

#[test]
fn fixture_strproc() {
    check_fixture("strproc");
}

#[test]
fn fixture_recurse() {
    check_fixture("recurse");
}

#[test]
fn fixture_deepexit() {
    check_fixture("deepexit");
}

#[test]
fn fixture_fnptr() {
    check_fixture("fnptr");
}

/// Function names from the module's name section.
fn function_names(bytes: &[u8]) -> HashMap<u32, String> {
    use wasmparser::{KnownCustom, Name, Parser, Payload};
    let mut names = HashMap::new();
    for payload in Parser::new(0).parse_all(bytes) {
        if let Payload::CustomSection(section) = payload.unwrap() {
            if let KnownCustom::Name(reader) = section.as_known() {
                for sub in reader {
                    if let Name::Function(map) = sub.unwrap() {
                        for naming in map {
                            let naming = naming.unwrap();
                            names.insert(naming.index, naming.name.to_string());
                        }
                    }
                }
            }
        }
    }
    names
}

/// exit(7) and abort() from the bottom of deepexit's call chain: the abrupt
/// stack names the whole chain, innermost first.
#[test]
fn deepexit_abrupt_stack_names_the_chain() {
    let dir = build_dir();
    let engine = engine().unwrap();
    for opt in ["O0", "O2"] {
        let bytes = std::fs::read(dir.join(format!("deepexit.{opt}.wasm"))).unwrap();
        let names = function_names(&bytes);
        let module = compile(&engine, &bytes).unwrap();
        for (mode, want_exit) in [("exit", Some(Exit::ProcExit(7))), ("abort", None)] {
            let out =
                run_compiled(&module, &RunOptions::captured(["deepexit", mode, "4"])).unwrap();
            match &want_exit {
                Some(exit) => assert_eq!(&out.exit, exit),
                None => assert!(matches!(out.exit, Exit::Trap(_)), "{:?}", out.exit),
            }
            let stack: Vec<&str> = out
                .abrupt_stack
                .iter()
                .map(|(f, _)| names.get(f).map(String::as_str).unwrap_or("?"))
                .collect();
            // Our frames, innermost first, after libc's (exit, abort, ...).
            let ours: Vec<&str> = stack
                .iter()
                .copied()
                .skip_while(|n| *n != "bottom")
                .take_while(|n| *n != "main" && *n != "__main_void" && *n != "__original_main")
                .collect();
            let mut want = vec!["bottom"];
            want.extend(["descend"; 5]);
            want.extend(["level3", "level2", "level1"]);
            assert_eq!(ours, want, "{opt} {mode}: {stack:?}");
            // Then main (perhaps through wasi-libc's __main_void wrappers),
            // and the command's _start (wasm-ld may wrap it as
            // `_start.command_export`).
            assert!(stack.contains(&"main"), "{opt} {mode}: {stack:?}");
            assert!(
                stack.last().is_some_and(|n| n.starts_with("_start")),
                "{opt} {mode}: {stack:?}"
            );
            for &(_, offset) in &out.abrupt_stack {
                assert!((offset as usize) < bytes.len());
            }
        }
    }
}
