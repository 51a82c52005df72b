//! scripts/test.sh runs every test binary and totals them all: a `cargo`
//! that stands in for the real one (which would run this very test again)
//! fails the first binary and passes the second unless asked not to stop.
//! A binary that crashes is named, even when a library's doc tests (a
//! section with a result line but no `Running` line) come after it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// What `cargo test` prints for three binaries and two libraries' doc
/// tests: the first binary has a failure (without `--no-fail-fast` cargo
/// stops after it, as the real one does), the third crashes and is followed
/// by crate a's doc tests, whose result line must not stand in for its.
const FAKE_CARGO: &str = r#"#!/bin/sh
echo "     Running unittests src/lib.rs (target/debug/deps/a-1)"
echo "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out"
echo "error: test failed, to rerun pass \`-p a --lib\`"
case " $* " in *" --no-fail-fast "*) ;; *) exit 101 ;; esac
echo "     Running tests/b.rs (target/debug/deps/b-2)"
echo "test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out"
echo "     Running tests/c.rs (target/debug/deps/c-3)"
echo "error: test failed, to rerun pass \`-p a --test c\` (signal: 11, SIGSEGV)"
echo "   Doc-tests a"
echo "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out"
echo "   Doc-tests d"
echo "test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out"
exit 101
"#;

#[test]
fn test_sh_runs_every_binary_and_totals_them() {
    let dir = tempfile::tempdir().unwrap();
    let cargo = dir.path().join("cargo");
    std::fs::write(&cargo, FAKE_CARGO).unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap()
    );
    let o = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test.sh"))
        .env("PATH", path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        stdout.lines().last(),
        Some(
            "9 passed, 1 failed, 1 of 5 test binaries gave no result: \
             tests/c.rs (target/debug/deps/c-3)"
        ),
        "{stdout}"
    );
    assert_eq!(o.status.code(), Some(101));
}
