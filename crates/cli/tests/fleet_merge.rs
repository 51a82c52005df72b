//! `pathprof merge` of many profiles (a directory, a list on standard
//! input): the sum equals the counts added up by the test from the raw
//! profiles, and a profile of another module is named in the error.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use common::programs::{self, Invocation};
use pathprof::driver::Technique;
use pathprof_profile::{FunctionData, Profile};

/// Per (function, path number): the summed count; and the runs.
fn sums<'a>(profiles: impl Iterator<Item = &'a Profile>) -> (BTreeMap<(u32, u64), u64>, u64) {
    let (mut out, mut runs) = (BTreeMap::new(), 0);
    for p in profiles {
        runs += p.runs;
        for f in &p.functions {
            if let FunctionData::Path { counts, .. } = &f.data {
                for &(n, c) in &counts.paths {
                    *out.entry((f.func_index, n)).or_insert(0) += c;
                }
            }
        }
    }
    (out, runs)
}

fn pathprof() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pathprof"))
}

#[test]
fn merge_adds_up_a_directory_and_a_list_and_names_the_odd_one() {
    let engine = crate::common::programs::engine();
    let module = std::fs::read(programs::root().join("tests/fixtures/c/build/sort.O2.wasm"))
        .expect("run scripts/build-c-fixtures.sh first");
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("runs");
    std::fs::create_dir(&inputs).unwrap();
    let mut profiles = Vec::new();
    for i in 0..24 {
        let args: Vec<String> = (0..=(i % 7))
            .map(|j| ((i * 7 + j * 13) % 50).to_string())
            .collect();
        let mut argv = vec!["sort", ["-q", "-b", "-i", "-s"][i % 4]];
        argv.extend(args.iter().map(String::as_str));
        let inv = Invocation::command(&argv);
        let (_, p) =
            programs::profiled_run(&engine, &module, Technique::Path, &Default::default(), &inv);
        p.write(&inputs.join(format!("run{i:03}.json"))).unwrap();
        profiles.push(p);
    }
    let want = sums(profiles.iter());
    assert_eq!(want.1, 24);
    let out = dir.path().join("all.json");
    let st = pathprof()
        .arg("merge")
        .arg(&inputs)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let merged = Profile::read(&out).unwrap();
    assert_eq!(sums(std::iter::once(&merged)), want);
    // The same list on standard input, half of it twice.
    let mut child = pathprof()
        .args(["merge", "-", "-o"])
        .arg(dir.path().join("list.json"))
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut list = String::new();
    for i in (0..24).chain(0..12) {
        list += &format!("{}\n", inputs.join(format!("run{i:03}.json")).display());
    }
    child
        .stdin
        .take()
        .unwrap()
        .write_all(list.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let listed = Profile::read(&dir.path().join("list.json")).unwrap();
    let twice = sums(profiles.iter().chain(&profiles[..12]));
    assert_eq!(sums(std::iter::once(&listed)), twice);
    // A profile of another module among them.
    let other =
        std::fs::read(programs::root().join("tests/fixtures/c/build/recurse.O2.wasm")).unwrap();
    let (_, p) = programs::profiled_run(
        &engine,
        &other,
        Technique::Path,
        &Default::default(),
        &Invocation::command(&["recurse", "3"]),
    );
    let odd = inputs.join("run017b.json");
    p.write(&odd).unwrap();
    let bad = dir.path().join("bad.json");
    let o = pathprof()
        .arg("merge")
        .arg(&inputs)
        .arg("-o")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    let first = inputs.join("run000.json");
    assert!(
        err.starts_with(&format!(
            "pathprof: error: cannot merge: {} is a profile of module ",
            odd.display()
        )) && err.contains(&format!(", {} of module ", first.display())),
        "{err}"
    );
    assert!(!bad.exists(), "no output after a failed merge");
}
