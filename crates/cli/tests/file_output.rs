//! `pathprof instrument -o FILE` writes the module piece by piece, its code
//! and metadata records spilled to scratch files as they are produced
//! (`driver::instrument_to_file`; the records only beyond 32 KiB, which a
//! generated module of many functions reaches several times over):
//! the file must be byte for byte the module built in memory
//! (`driver::instrument`, which `pathprof run` uses), also when the custom
//! sections after the code are copied from the input file
//! (`driver::instrument_file_to_file`), and an error must leave no file
//! behind.

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
    let mut modules: Vec<(String, Vec<u8>)> = paths
        .iter()
        .map(|p| {
            let bytes = pathprof::input::read_module(p).unwrap();
            (p.display().to_string(), bytes)
        })
        .collect();
    modules.push(("custom sections".into(), custom_sections()));
    modules
}

/// The contents of the fixture's custom section "after-code", large
/// enough to be left in the input file (`pathprof_wasm::hollow`).
const AFTER_CODE: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef-after";

/// Custom sections before, among and after the others (a file's are
/// written from the input module, around the code section, and those after
/// the code left in the input file if large enough: "after-code" is, "last"
/// is not), and a name section (re-encoded, as the trace import shifts
/// function indices).
fn custom_sections() -> Vec<u8> {
    let module = wat::parse_str(format!(
        r#"(module
          (@custom "first" (before first) "1")
          (@custom "before-code" (before code) "22")
          (@custom "after-code" (after code) "{AFTER_CODE}")
          (@custom "last" (after last) "4444")
          (memory 1)
          (func $loop (export "f") (param i32) (result i32)
            (loop $l
              (br_if $l (i32.lt_s (local.tee 0 (i32.add (local.get 0) (i32.const 1)))
                                  (i32.const 10))))
            (local.get 0))
          (data (i32.const 0) "data"))"#
    ))
    .unwrap();
    let names: Vec<String> = wasmparser::Parser::new(0)
        .parse_all(&module)
        .filter_map(|p| match p.unwrap() {
            wasmparser::Payload::CustomSection(c) => Some(c.name().to_string()),
            _ => None,
        })
        .collect();
    // The fixture is what it claims to be.
    assert_eq!(
        names,
        ["first", "before-code", "after-code", "last", "name"]
    );
    module
}

/// What `pathprof instrument PROGRAM -o PATH` does with `module` read
/// from the file PROGRAM: the warnings, or the error.
fn file_to_file(
    module: &[u8],
    program: &Path,
    technique: Technique,
    opts: &driver::Options,
    path: &Path,
) -> anyhow::Result<Vec<String>> {
    std::fs::write(program, module)?;
    let (bytes, file) = pathprof::input::read_module_file(program)?;
    let mut out = pathprof_profile::AtomicFile::create(path)?;
    let file = file.expect("a binary module keeps its file");
    let warnings = driver::instrument_file_to_file(bytes, file, technique, opts, &mut out)?;
    out.commit()?;
    Ok(warnings)
}

/// What instrumenting a module held in memory to `path` does.
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
    let input_dir = tempfile::tempdir().unwrap();
    let program = input_dir.path().join("in.wasm");
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
                let memory = memory.map_err(|e| e.to_string());
                for from_file in [false, true] {
                    let label = format!("{label} from_file={from_file}");
                    let _ = std::fs::remove_file(&out);
                    let file = if from_file {
                        file_to_file(&module, &program, technique, &opts, &out)
                    } else {
                        to_file(&module, technique, &opts, &out)
                    };
                    match (&memory, file) {
                        (Ok(memory), Ok(warnings)) => {
                            assert!(std::fs::read(&out).unwrap() == memory.bytes, "{label}");
                            assert_eq!(warnings, memory.warnings, "{label}");
                        }
                        (Err(a), Err(b)) => assert_eq!(*a, b.to_string(), "{label}"),
                        (a, b) => panic!(
                            "{label}: in memory {:?}, to a file {:?}",
                            a.as_ref().err(),
                            b.err()
                        ),
                    }
                    assert!(
                        listing(dir.path()).len() <= 1,
                        "{label}: scratch files left"
                    );
                }
            }
        }
    }
}

/// A module of `n` functions, each with a branch and a loop (so each has
/// several paths and blocks to record).
fn many_functions(n: usize) -> Vec<u8> {
    let mut wat = String::from("(module\n");
    for i in 0..n {
        wat += &format!(
            "(func $f{i} (export \"f{i}\") (param i32) (result i32)
               (if (local.get 0) (then (local.set 0 (i32.const {i}))))
               (loop $l (br_if $l (local.tee 0 (i32.sub (local.get 0) (i32.const 1)))))
               (local.get 0))\n"
        );
    }
    wat::parse_str(wat + ")").unwrap()
}

/// The size of the metadata section of an instrumented module.
fn meta_section_bytes(module: &[u8]) -> usize {
    wasmparser::Parser::new(0)
        .parse_all(module)
        .find_map(|p| match p.unwrap() {
            wasmparser::Payload::CustomSection(c) if c.name() == pathprof::meta::META_SECTION => {
                Some(c.data().len())
            }
            _ => None,
        })
        .unwrap()
}

#[test]
fn metadata_spilled_to_a_scratch_file_is_copied_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.wasm");
    let module = many_functions(3000);
    let opts = driver::Options::default();
    for technique in [Technique::Path, Technique::Edge, Technique::Ppp] {
        let memory = driver::instrument(&module, technique, &opts).unwrap();
        // Several spills of 32 KiB, and a remainder kept in memory.
        assert!(
            meta_section_bytes(&memory.bytes) > 100 * 1024,
            "{technique:?}"
        );
        to_file(&module, technique, &opts, &out).unwrap();
        assert!(
            std::fs::read(&out).unwrap() == memory.bytes,
            "{technique:?}"
        );
        assert_eq!(listing(dir.path()), ["out.wasm"], "{technique:?}");
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

/// The position of `needle` in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap()
}

/// The custom sections fixture, written to `in.wasm` in `dir` and read
/// back as `pathprof instrument` reads it.
fn custom_sections_file(dir: &Path) -> (PathBuf, Vec<u8>, (Vec<u8>, std::fs::File)) {
    let program = dir.join("in.wasm");
    let module = custom_sections();
    std::fs::write(&program, &module).unwrap();
    let (bytes, file) = pathprof::input::read_module_file(&program).unwrap();
    (program, module, (bytes, file.unwrap()))
}

#[test]
fn custom_sections_after_the_code_stay_in_the_input_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_, module, (_, file)) = custom_sections_file(dir.path());
    let hollowed = pathprof_wasm::hollow(module.clone(), file).unwrap();
    // "after-code" alone is taken out: everything before it is unchanged,
    // and everything after it follows it in the input.
    let at = find(&module, AFTER_CODE.as_bytes());
    let end = at + AFTER_CODE.len();
    assert_eq!(hollowed.bytes.len(), module.len() - AFTER_CODE.len());
    // Its size byte is the only one that changed before it.
    let size_at = at - 1 - "after-code".len() - 1;
    assert_eq!(hollowed.bytes[..size_at], module[..size_at]);
    assert_eq!(usize::from(hollowed.bytes[size_at]), 1 + "after-code".len());
    assert_eq!(hollowed.bytes[size_at + 1..at], module[size_at + 1..at]);
    assert_eq!(hollowed.bytes[at..], module[end..]);
}

#[test]
fn an_input_changed_while_it_is_instrumented_is_an_error_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let (program, module, (bytes, file)) = custom_sections_file(dir.path());
    // Another program rewrites the file in place after it was read.
    let mut changed = module.clone();
    changed[find(&module, AFTER_CODE.as_bytes())] ^= 1;
    std::fs::write(&program, &changed).unwrap();
    let out = dir.path().join("out.wasm");
    let mut file_out = pathprof_profile::AtomicFile::create(&out).unwrap();
    let err = driver::instrument_file_to_file(
        bytes,
        file,
        Technique::Path,
        &driver::Options::default(),
        &mut file_out,
    )
    .unwrap_err();
    drop(file_out);
    assert!(
        format!("{err:#}").contains("the input changed while it was instrumented"),
        "{err:#}"
    );
    assert_eq!(listing(dir.path()), ["in.wasm"]);
}
