//! Binaryen's `wasm-opt` on the machine (issue 27.2). clang runs it after
//! linking an optimised wasm32 build whenever it finds one, and it drops the
//! name section and empties the DWARF line tables. The project's builds
//! must not change with it (scripts/wasi-env.sh), and pathprof must say so
//! when a module it is given has lost them.
//!
//! scripts/setup.sh unpacks Debian's binaryen into target/binaryen (not
//! installed machine-wide: other checkouts' builds would change); these
//! tests put its wasm-opt first on clang's PATH, and fail without it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::bin::pathprof;
use common::programs::root;

/// The folder of binaryen's wasm-opt that scripts/setup.sh unpacks.
fn binaryen_bin() -> PathBuf {
    let bin = root().join("target/binaryen/usr/bin");
    assert!(
        bin.join("wasm-opt").is_file(),
        "{}: no wasm-opt; run scripts/setup.sh, which unpacks binaryen there",
        bin.display()
    );
    bin
}

fn wasm_opt() -> PathBuf {
    binaryen_bin().join("wasm-opt")
}

/// PATH with binaryen's folder first, where clang finds it.
fn path_with_binaryen() -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(binaryen_bin()).chain(std::env::split_paths(&path));
    std::env::join_paths(dirs)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().expect("the command runs");
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn clang(args: &[&str]) {
    run(Command::new("clang")
        .env("PATH", path_with_binaryen())
        .current_dir(root())
        .args(["--target=wasm32-wasi", "--sysroot=/usr"])
        .args(args));
}

fn has_section(module: &[u8], name: &str) -> bool {
    wasmparser::Parser::new(0)
        .parse_all(module)
        .any(|p| matches!(p, Ok(wasmparser::Payload::CustomSection(c)) if c.name() == name))
}

/// Every optimised C fixture that scripts/build-c-fixtures.sh builds with
/// wasm-opt on PATH is byte for byte the module clang links when it cannot
/// run wasm-opt at all: compiled with `-O2 -c`, then linked without `-O`
/// (clang runs wasm-opt only from a link given an optimisation level).
/// Without the guard, the same build is changed, and loses its names: the
/// test would catch a script that let wasm-opt run.
#[test]
fn the_fixture_builds_are_the_same_with_wasm_opt_installed() {
    wasm_opt();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("build");
    run(Command::new("bash")
        .env("PATH", path_with_binaryen())
        .current_dir(root())
        .arg("scripts/build-c-fixtures.sh")
        .arg(&out));
    // Canonical, as the script's own: the source path is in the DWARF.
    let sources = root().canonicalize().unwrap().join("tests/fixtures/c");
    let mut names: Vec<String> = std::fs::read_dir(&sources)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "c").then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for name in &names {
        let src = sources.join(format!("{name}.c")).display().to_string();
        let obj = dir.path().join(format!("{name}.o")).display().to_string();
        let reference = dir.path().join(format!("{name}.ref.wasm"));
        // A source's own flags, as the script reads them.
        let text = std::fs::read_to_string(&src).unwrap();
        let extra = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("// wasm-cflags: "))
            .unwrap_or("");
        let mut args: Vec<&str> = extra.split_whitespace().collect();
        args.extend(["-O2", "-g", "-c", &src, "-o", &obj]);
        clang(&args);
        clang(&[&obj, "-o", &reference.display().to_string()]);
        let built = std::fs::read(out.join(format!("{name}.O2.wasm"))).unwrap();
        let reference = std::fs::read(&reference).unwrap();
        assert!(
            has_section(&reference, "name"),
            "{name}: the reference has no names"
        );
        assert!(
            built == reference,
            "{name}.O2.wasm: not the module clang links without wasm-opt"
        );
    }
    // The guard is what keeps them equal.
    let src = sources
        .join(format!("{}.c", names[0]))
        .display()
        .to_string();
    let unguarded = dir.path().join("unguarded.wasm");
    clang(&["-O2", "-g", &src, "-o", &unguarded.display().to_string()]);
    let unguarded = std::fs::read(&unguarded).unwrap();
    assert!(
        !has_section(&unguarded, "name"),
        "clang did not run wasm-opt: this test proves nothing on this machine"
    );
}

fn warnings(o: &Output) -> Vec<String> {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.starts_with("pathprof: warning:"))
        .map(str::to_string)
        .collect()
}

/// A fixture after `wasm-opt -O2` (what clang does with it on the
/// machine) has no name section and line tables without rows: `instrument`
/// and `run` warn once, saying what likely did it; the fixture itself gets
/// no warning.
#[test]
fn a_module_stripped_by_wasm_opt_gets_one_warning() {
    let fixture = root().join("tests/fixtures/c/build/sort.O2.wasm");
    assert!(fixture.exists(), "run scripts/build-c-fixtures.sh first");
    let dir = tempfile::tempdir().unwrap();
    let stripped = dir.path().join("stripped.wasm");
    run(Command::new(wasm_opt())
        .arg(&fixture)
        .args(["-O2", "-o"])
        .arg(&stripped));
    let bytes = std::fs::read(&stripped).unwrap();
    assert!(has_section(&bytes, ".debug_line") && !has_section(&bytes, "name"));

    let out = |n: &str| dir.path().join(n).display().to_string();
    let s = |p: &Path| p.display().to_string();
    for (module, expected) in [(s(&fixture), 0), (s(&stripped), 1)] {
        for args in [
            vec!["instrument", &module, "-o", &out("i.wasm")],
            vec![
                "run",
                &module,
                "-o",
                &out("p.json"),
                "--",
                "-q",
                "3",
                "1",
                "2",
            ],
        ] {
            let w = warnings(&pathprof(&args));
            assert_eq!(w.len(), expected, "{args:?}: {w:?}");
            if let Some(w) = w.first() {
                assert!(
                    w.contains("no name section and a .debug_line section that yields no rows")
                        && w.contains("wasm-opt"),
                    "{w}"
                );
            }
        }
    }
}
