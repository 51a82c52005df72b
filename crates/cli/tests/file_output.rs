//! `pathprof instrument -o FILE` writes the module piece by piece, its code
//! and metadata records spilled to scratch files as they are produced
//! (`driver::instrument_to_file`; the records only beyond 32 KiB, which the
//! fixtures' barely reach: the benchmark programs' outputs, compared byte
//! for byte with the previous build's, check that part):
//! the file must be byte for byte the module built in memory
//! (`driver::instrument`, which `pathprof run` uses), and an error must
//! leave no file behind.

use pathprof::driver::{self, Technique};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `.wat` fixtures and the built C fixtures (which carry DWARF, so
/// their metadata names source lines).
fn modules() -> Vec<(String, Vec<u8>)> {
    let mut paths: Vec<PathBuf> = Vec::new();
    for (dir, ext) in [
        ("tests/fixtures/wat", "wat"),
        ("tests/fixtures/c/build", "wasm"),
    ] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        paths.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == ext)),
        );
    }
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let bytes = pathprof::input::read_module(p).unwrap();
            (p.display().to_string(), bytes)
        })
        .collect()
}

/// What `pathprof instrument -o PATH` does: the warnings, or the error.
fn to_file(
    module: &[u8],
    technique: Technique,
    opts: &driver::Options,
    path: &Path,
) -> anyhow::Result<Vec<String>> {
    let mut file = pathprof_profile::AtomicFile::create(path)?;
    let warnings = driver::instrument_to_file(module, technique, opts, &mut file)?;
    file.commit()?;
    Ok(warnings)
}

/// The files in `dir`.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn instrumenting_into_a_file_equals_the_module_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.wasm");
    for (name, module) in modules() {
        for technique in [
            Technique::Path,
            Technique::Edge,
            Technique::Ppp,
            Technique::Trace,
        ] {
            for validate_output in [false, true] {
                let opts = driver::Options {
                    validate_output,
                    ..Default::default()
                };
                let label = format!("{name} {technique:?} validate={validate_output}");
                let memory = driver::instrument(&module, technique, &opts);
                let _ = std::fs::remove_file(&out);
                let file = to_file(&module, technique, &opts, &out);
                match (memory, file) {
                    (Ok(memory), Ok(warnings)) => {
                        assert!(std::fs::read(&out).unwrap() == memory.bytes, "{label}");
                        assert_eq!(warnings, memory.warnings, "{label}");
                    }
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{label}"),
                    (a, b) => panic!("{label}: in memory {:?}, to a file {:?}", a.err(), b.err()),
                }
                assert!(
                    listing(dir.path()).len() <= 1,
                    "{label}: scratch files left"
                );
            }
        }
    }
}

#[test]
fn a_failing_instrumentation_leaves_no_file_and_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let module =
        wat::parse_str("(module (func (export \"f\") (param i32) (result i32) local.get 0))")
            .unwrap();
    let opts = driver::Options::default();
    let first = dir.path().join("first.wasm");
    to_file(&module, Technique::Path, &opts, &first).unwrap();
    let instrumented = std::fs::read(&first).unwrap();
    // An instrumented module uses the reserved names: instrumenting it again
    // fails once the output and scratch files exist.
    let again = dir.path().join("again.wasm");
    for technique in [Technique::Path, Technique::Edge] {
        let err = to_file(&instrumented, technique, &opts, &again).unwrap_err();
        assert!(err.to_string().contains("reserved"), "{err}");
        assert_eq!(listing(dir.path()), ["first.wasm"]);
        // Over an existing output, the error leaves it as it was.
        to_file(&instrumented, technique, &opts, &first).unwrap_err();
        assert_eq!(std::fs::read(&first).unwrap(), instrumented);
        assert_eq!(listing(dir.path()), ["first.wasm"]);
    }
}
