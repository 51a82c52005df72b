//! What a library user matches on: each way a real call fails gives its
//! own variant of `pathprof_core::Error`, with the cause under any context.

use pathprof_core::driver::{self, Options, Technique};
use pathprof_core::Error;
use pathprof_profile::ProfileError;

fn wat(text: &str) -> Vec<u8> {
    wat::parse_str(text).unwrap()
}

/// The error of instrumenting `module` for `technique`, which must fail.
fn refused(module: &[u8], technique: Technique) -> Error {
    let mut opts = Options::default();
    opts.ippp.k = 1;
    match driver::instrument(module, technique, &opts) {
        Ok(_) => panic!("{technique:?} instrumented the module"),
        Err(e) => e,
    }
}

/// A loop that counts down from its argument.
const LOOP: &str = r#"(module
  (func (export "f") (param $n i32)
    (loop $l
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $l (local.get $n)))))"#;

#[test]
fn bytes_that_are_not_a_module_are_a_wasm_error() {
    let e = refused(b"not wasm", Technique::Path);
    assert!(matches!(e.root(), Error::Wasm(_)), "{e:?}");
    assert!(e.wasm().is_some());
}

#[test]
fn a_mode_that_does_not_apply_is_its_own_variant() {
    // A tail call that may enter an import or a function of the module
    // through a table the host may write: the context modes cannot tell
    // which before the call.
    let mixed = wat(r#"(module
          (type $t (func (result i32)))
          (import "env" "h" (func $h (result i32)))
          (func $g (result i32) (i32.const 1))
          (table (export "t") funcref (elem $h $g))
          (func (export "f") (param i32) (result i32)
            (return_call_indirect (type $t) (local.get 0))))"#);
    for technique in [Technique::Context, Technique::Ippp] {
        let e = refused(&mixed, technique);
        assert!(
            matches!(
                e.root(),
                Error::Interproc(pathprof_techniques::interproc::Unsupported::MixedTailCall { .. })
            ),
            "{technique:?}: {e:?}"
        );
    }
}

#[test]
fn counters_of_another_module_are_a_counters_error() {
    let a = driver::instrument(&wat(LOOP), Technique::Path, &Options::default()).unwrap();
    let other = LOOP.replace("i32.const 1", "i32.const 2");
    let b = driver::instrument(&wat(&other), Technique::Path, &Options::default()).unwrap();
    let engine = pathprof_runner::engine_without_fuel().unwrap();
    let run = pathprof_runner::invoke(
        &engine,
        &a.bytes,
        "f",
        &["3".into()],
        &pathprof_runner::RunOptions::default(),
    )
    .unwrap();
    let counters = run.counters.unwrap();
    let e: Error = b
        .meta()
        .unwrap()
        .check_counters(&counters, "a.counters", "b.wasm")
        .unwrap_err()
        .into();
    assert!(matches!(e.root(), Error::Counters(_)), "{e:?}");
    assert!(e.to_string().starts_with("a.counters: "), "{e}");
    // Its own counters pass and decode: one run, the loop's block entered
    // once from the entry and twice around its self loop (Ball & Larus
    // 4.1 count a self loop's iterations apart).
    let meta_a = a.meta().unwrap();
    meta_a
        .check_counters(&counters, "a.counters", "a.wasm")
        .unwrap();
    let p = driver::collect(&meta_a, &counters, None).unwrap();
    let rows = pathprof_core::report::hot_rows(&p, None).unwrap();
    let counts: Vec<(String, u64)> = rows.iter().map(|h| (h.kind.to_string(), h.count)).collect();
    assert_eq!(p.runs, 1);
    assert_eq!(counts, [("self loop".into(), 2), ("entry->exit".into(), 1)]);
}

#[test]
fn a_file_that_is_not_a_profile_is_a_profile_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.profile");
    std::fs::write(&bad, b"{\"a\": 1}").unwrap();
    let e = pathprof_core::fleet::merge_files(&[bad.clone(), bad], || {}).unwrap_err();
    assert!(
        matches!(e.root(), Error::Profile(ProfileError::NotAProfile { .. })),
        "{e:?}"
    );
}
