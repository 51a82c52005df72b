//! Preferential and residual path profiling through the `pathprof` binary:
//! the interesting-path SPEC (profiles and text, with line-numbered errors),
//! the residual workflow on a build that runs on any engine, `stats --ppp`,
//! and merging PPP profiles. Exact counts are proved in ppp_oracle.rs.

use crate::common;

use std::path::{Path, PathBuf};

use common::bin::{pathprof, stderr};
use common::programs::root;
use pathprof_profile::{FunctionData, Profile};

fn sort_o2() -> String {
    root()
        .join("tests/fixtures/c/build/sort.O2.wasm")
        .display()
        .to_string()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

const TEST_ARGS: [&str; 6] = ["-q", "5", "3", "9", "-1", "7"];
const FIELD_ARGS: [&str; 7] = ["-b", "4", "2", "8", "1", "9", "3"];

/// A plain path profile of sort.O2 on `args`, written to `out`.
fn profile(out: &Path, mode: &[&str], args: &[&str]) -> Profile {
    let mut a = vec!["run"];
    a.extend_from_slice(mode);
    let (o, p) = (s(out), sort_o2());
    a.extend(["-o", &o, &p, "--"]);
    a.extend_from_slice(args);
    let r = pathprof(&a);
    assert!(r.status.success(), "{}", stderr(&r));
    Profile::read(out).unwrap()
}

fn interesting_of(p: &Profile) -> Vec<(u32, Vec<u64>)> {
    p.functions
        .iter()
        .filter_map(|f| match &f.data {
            FunctionData::Path {
                ppp: Some(info), ..
            } if !info.interesting.is_empty() => Some((f.func_index, info.interesting.clone())),
            _ => None,
        })
        .collect()
}

fn counted(p: &Profile) -> Vec<(u32, Vec<u64>)> {
    p.functions
        .iter()
        .filter_map(|f| match &f.data {
            FunctionData::Path { counts, .. } if !counts.paths.is_empty() => Some((
                f.func_index,
                counts.paths.iter().map(|&(id, _)| id).collect(),
            )),
            _ => None,
        })
        .collect()
}

/// A text SPEC naming the test run's paths, half by number and half by
/// blocks, selects the same paths as the profile itself (block sequences may
/// name more: a first block that is also a loop head, say).
#[test]
fn text_spec_selects_the_paths_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let test = profile(&dir.path().join("test.json"), &[], &TEST_ARGS);
    let mut text = String::from("# the test run's paths\n\n");
    for (i, p) in pathprof::report::hot_paths(&test, None)
        .unwrap()
        .iter()
        .enumerate()
    {
        let name = if i % 3 == 0 {
            format!("func[{}]", p.func_index)
        } else {
            p.function.clone()
        };
        if i % 2 == 0 {
            text += &format!("{name} {}   # by number\n", p.path);
        } else {
            let blocks: Vec<String> = p
                .blocks
                .iter()
                .enumerate()
                .map(|(j, b)| {
                    if j % 2 == 0 {
                        format!("{}@{:#x}", b.block, b.offset)
                    } else {
                        b.block.to_string()
                    }
                })
                .collect();
            text += &format!("{name} blocks {}\n", blocks.join(" "));
        }
    }
    let spec = dir.path().join("spec.txt");
    std::fs::write(&spec, text).unwrap();
    let out = dir.path().join("ppp.json");
    let by_text = profile(
        &out,
        &["--mode", "ppp", "--interesting", &s(&spec)],
        &TEST_ARGS,
    );
    let by_profile = profile(
        &out,
        &[
            "--mode",
            "ppp",
            "--interesting",
            &s(&dir.path().join("test.json")),
        ],
        &TEST_ARGS,
    );
    assert_eq!(interesting_of(&by_profile), counted(&test));
    for ((fa, a), (fb, b)) in interesting_of(&by_text)
        .iter()
        .zip(interesting_of(&by_profile).iter())
    {
        assert_eq!(fa, fb);
        assert!(
            b.iter().all(|id| a.contains(id)),
            "function {fa}: {a:?} misses some of {b:?}"
        );
    }
    assert_eq!(
        interesting_of(&by_text).len(),
        interesting_of(&by_profile).len()
    );
    // Run on the test input itself, every path is interesting: counts agree.
    assert_eq!(counted(&by_profile), counted(&test));
}

#[test]
fn bad_specs_get_line_numbered_errors_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let test = profile(&dir.path().join("test.json"), &[], &TEST_ARGS);
    let main = test
        .functions
        .iter()
        .find(|f| f.name.as_deref() == Some("main"))
        .unwrap();
    let FunctionData::Path { numbered, .. } = &main.data else {
        unreachable!()
    };
    let path = pathprof::report::hot_paths(&test, Some("main"))
        .unwrap()
        .into_iter()
        .find(|p| p.blocks.len() >= 3)
        .unwrap();
    let reversed: Vec<String> = path
        .blocks
        .iter()
        .rev()
        .map(|b| b.block.to_string())
        .collect();
    let first = &path.blocks[0];
    let cases = [
        (
            "nosuch 0".to_string(),
            "no profilable function named `nosuch`".to_string(),
        ),
        (
            format!("main {}", numbered.total),
            format!(
                "path {} is out of range: function main has {} paths",
                numbered.total, numbered.total
            ),
        ),
        (
            format!("main blocks {}", reversed.join(" ")),
            format!(
                "blocks {} are not a path of function main",
                reversed.join(" ")
            ),
        ),
        (
            format!("main blocks {}@0x1", first.block),
            format!(
                "block {} is at {:#x}, not {}@0x1",
                first.block, first.offset, first.block
            ),
        ),
        (
            "main blocks 99999".into(),
            "function has no block 99999".into(),
        ),
        (
            "main".into(),
            "expected `FUNCTION NUMBER` or `FUNCTION blocks BLOCK...`".into(),
        ),
        (
            "main 12 13".into(),
            "expected `FUNCTION NUMBER` or `FUNCTION blocks BLOCK...`".into(),
        ),
        (
            "main x".into(),
            "expected `FUNCTION NUMBER` or `FUNCTION blocks BLOCK...`".into(),
        ),
    ];
    let out = dir.path().join("out.json");
    let inst = dir.path().join("out.wasm");
    for (line, message) in cases {
        let spec = dir.path().join("bad.txt");
        std::fs::write(&spec, format!("# header\nmain 0\n{line}\nmain 1\n")).unwrap();
        let expected = format!("pathprof: error: {}:3: {message}\n", s(&spec));
        let o = pathprof(&[
            "run",
            "--mode",
            "ppp",
            "--interesting",
            &s(&spec),
            "-o",
            &s(&out),
            &sort_o2(),
        ]);
        assert_eq!(
            (o.status.code(), stderr(&o)),
            (Some(1), expected.clone()),
            "{line}"
        );
        let o = pathprof(&[
            "instrument",
            "--mode",
            "ppp",
            "--interesting",
            &s(&spec),
            "-o",
            &s(&inst),
            &sort_o2(),
        ]);
        assert_eq!((o.status.code(), stderr(&o)), (Some(1), expected), "{line}");
        assert!(!out.exists() && !inst.exists());
    }
    // The flags that go together.
    let o = pathprof(&["run", "--mode", "ppp", "-o", &s(&out), &sort_o2()]);
    assert_eq!(
        stderr(&o),
        "pathprof: error: --mode ppp needs --interesting SPEC (a profile, or a list of paths)\n"
    );
    let o = pathprof(&[
        "run",
        "--interesting",
        &s(&dir.path().join("test.json")),
        "-o",
        &s(&out),
        &sort_o2(),
    ]);
    assert_eq!(
        stderr(&o),
        "pathprof: error: --interesting applies to --mode ppp and ippp only\n"
    );
    // A profile numbered with another truncation threshold names its paths
    // in its own numbering: the functions it cut elsewhere are planned with
    // its cuts (a guided profile's case, docs/decisions.md#guided-truncation).
    let t = s(&dir.path().join("test.json"));
    let other = dir.path().join("other.json");
    let ppp_at_100 = |specs: &[&str], out: &Path| {
        let (out, prog) = (s(out), sort_o2());
        let mut args: Vec<&str> = vec!["run", "--mode", "ppp"];
        for &spec in specs {
            args.extend(["--interesting", spec]);
        }
        args.extend(["--truncate-above", "100", "-o", &out, &prog]);
        pathprof(&args)
    };
    let o = ppp_at_100(&[&t], &other);
    // (The program exits non-zero on these arguments; pathprof does not fail.)
    assert!(
        other.exists() && !stderr(&o).contains("error:"),
        "{}",
        stderr(&o)
    );
    let (tested, got) = (
        Profile::read(Path::new(&t)).unwrap(),
        Profile::read(&other).unwrap(),
    );
    let numbered = |p: &Profile, ran_only: bool| -> Vec<(u32, u64, usize)> {
        (p.functions.iter())
            .filter_map(|f| match &f.data {
                FunctionData::Path {
                    numbered, counts, ..
                } if !ran_only || !counts.paths.is_empty() => {
                    Some((f.func_index, numbered.total, numbered.cut_nodes.len()))
                }
                _ => None,
            })
            .collect()
    };
    let ran: Vec<_> = numbered(&tested, true);
    let planned: Vec<_> = numbered(&got, false)
        .into_iter()
        .filter(|f| ran.iter().any(|r| r.0 == f.0))
        .collect();
    assert_eq!(planned, ran, "planned with the test profile's cuts");
    // ... which a text spec cannot mix with the threshold's numbering.
    let text = dir.path().join("mixed.txt");
    let cut = (tested.functions.iter())
        .find(|f| matches!(&f.data, FunctionData::Path { numbered, .. } if !numbered.cut_nodes.is_empty()))
        .map(|f| f.display_name())
        .expect("a function the test profile's threshold cut");
    std::fs::write(&text, format!("{cut} 0\n")).unwrap();
    let o = ppp_at_100(&[&t, &s(&text)], &out);
    assert!(
        stderr(&o).starts_with(&format!("pathprof: error: {}: names paths of function {cut} at the truncation threshold's numbering", s(&text))),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists(), "no output after an error");
    let edges = dir.path().join("edges.json");
    profile(&edges, &["--mode", "edge"], &TEST_ARGS);
    let o = pathprof(&[
        "run",
        "--mode",
        "ppp",
        "--interesting",
        &s(&edges),
        "-o",
        &s(&out),
        &sort_o2(),
    ]);
    assert_eq!(
        stderr(&o),
        format!(
            "pathprof: error: {}: an edge profile has no paths; give a path or PPP profile\n",
            s(&edges)
        )
    );
    assert!(!out.exists());
}

/// Garbage and mutated SPEC files never panic the parser.
#[test]
fn garbage_specs_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let module = std::fs::read(sort_o2()).unwrap();
    let info = pathprof_wasm::analyze(&module).unwrap();
    let valid = "main 0\nquick 1\n# c\nfunc[9] 4\nmain 2\n";
    let spec = dir.path().join("g.txt");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut ok, mut err) = (0, 0);
    for i in 0..600 {
        let mut bytes = valid.as_bytes().to_vec();
        if i % 3 == 0 {
            bytes = (0..next() % 64).map(|_| next() as u8).collect();
        } else {
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % bytes.len();
                bytes[at] = b" 0123456789{}@xmainblocks\n#["[(next() % 27) as usize];
            }
        }
        std::fs::write(&spec, &bytes).unwrap();
        match pathprof::interesting::read_specs(&[&spec], &info, 1 << 40) {
            Ok(_) => ok += 1,
            Err(_) => err += 1,
        }
    }
    assert!(ok > 10 && err > 100, "ok {ok}, err {err}");
}

/// The residual workflow with a build for any engine: `residual` writes it,
/// the host runs it and saves the counters, `collect` makes the profile,
/// `residual-report` lists the untested paths. The report equals the one of
/// `run --mode ppp` and the set difference of two plain profiles.
#[test]
fn residual_workflow_on_a_standalone_build() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| s(&dir.path().join(n));
    profile(&dir.path().join("test.json"), &[], &TEST_ARGS);
    profile(&dir.path().join("field_bl.json"), &[], &FIELD_ARGS);
    let o = pathprof(&[
        "residual",
        "--tested",
        &d("test.json"),
        &sort_o2(),
        "-o",
        &d("field.wasm"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let engine = crate::common::programs::engine();
    let bytes = std::fs::read(d("field.wasm")).unwrap();
    let args = std::iter::once("sort").chain(FIELD_ARGS);
    let run = pathprof_runner::run_command(
        &engine,
        &bytes,
        &pathprof_runner::RunOptions::captured(args),
    )
    .unwrap();
    std::fs::write(d("counters.bin"), run.counters.unwrap()).unwrap();
    let o = pathprof(&[
        "collect",
        &d("field.wasm"),
        &d("counters.bin"),
        "-o",
        &d("field.json"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    profile(
        &dir.path().join("field_ppp.json"),
        &["--mode", "ppp", "--interesting", &d("test.json")],
        &FIELD_ARGS,
    );

    let report = |args: &[&str]| -> serde_json::Value {
        let o = pathprof(args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let standalone = report(&[
        "residual-report",
        &d("field.json"),
        "--json",
        "--top",
        "1000",
    ]);
    let embedded = report(&[
        "residual-report",
        &d("field_ppp.json"),
        "--json",
        "--top",
        "1000",
    ]);
    let plain = report(&[
        "residual-report",
        &d("field_bl.json"),
        "--tested",
        &d("test.json"),
        "--json",
        "--top",
        "1000",
    ]);
    assert_eq!(standalone, embedded);
    assert_eq!(standalone, plain);
    let untested = standalone["summary"]["untested_paths"].as_u64().unwrap();
    assert!(untested > 0);
    let listed = standalone["paths"].as_array().unwrap().len()
        + standalone["self_loops"].as_array().unwrap().len();
    assert_eq!(listed as u64, untested);

    // The text report: Table 3.1's rows, then the paths.
    let o = pathprof(&["residual-report", &d("field.json")]);
    let text = String::from_utf8_lossy(&o.stdout);
    for row in [
        "untested paths",
        "% untested",
        "% frequency of untested paths",
        "functions with untested paths",
        "untested edges",
        "functions with untested edges",
        "untested paths in functions with no untested edge",
    ] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(row)),
            "{row} missing:\n{text}"
        );
    }
    // A plain profile needs --tested; an edge profile has no paths.
    let o = pathprof(&["residual-report", &d("field_bl.json")]);
    assert_eq!(
        stderr(&o),
        format!(
            "pathprof: error: {}: a plain path profile needs --tested PROFILE to compare against\n",
            d("field_bl.json")
        )
    );
}

/// `stats --ppp`: per function, the interval PPP gives the interesting paths
/// and what Ball-Larus would; checked against the profile it was given.
#[test]
fn stats_ppp_reports_intervals_and_deltas() {
    let dir = tempfile::tempdir().unwrap();
    let test = profile(&dir.path().join("test.json"), &[], &TEST_ARGS);
    let o = pathprof(&[
        "stats",
        "--ppp",
        &s(&dir.path().join("test.json")),
        &sort_o2(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let functions = v["functions"].as_array().unwrap();
    let expected = counted(&test);
    assert_eq!(functions.len(), expected.len());
    for (f, (index, ids)) in functions.iter().zip(&expected) {
        assert_eq!(f["func_index"].as_u64(), Some(u64::from(*index)));
        let n = ids.len() as u64;
        assert_eq!(f["interesting"].as_u64(), Some(n));
        let (interval, delta) = (
            f["interval"].as_u64().unwrap(),
            f["delta"].as_u64().unwrap(),
        );
        assert_eq!(interval, n + delta);
        // The Ball-Larus interval of these paths, from their ids.
        let bl = ids.iter().max().unwrap() - ids.iter().min().unwrap() + 1;
        assert_eq!(f["ball_larus_interval"].as_u64(), Some(bl));
        assert!(interval <= bl);
    }
    let histogram: u64 = v["delta_histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[1].as_u64().unwrap())
        .sum();
    assert_eq!(histogram, expected.len() as u64);
    let o = pathprof(&[
        "stats",
        "--ppp",
        &s(&dir.path().join("test.json")),
        &sort_o2(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("functions by PPP δ (Fig. 3.17): "), "{text}");
}

/// Two PPP profiles of one build add up; profiles with different interesting
/// paths are refused.
#[test]
fn ppp_profiles_merge_only_with_the_same_interesting_paths() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| -> PathBuf { dir.path().join(n) };
    profile(&d("test.json"), &[], &TEST_ARGS);
    profile(&d("other.json"), &[], &FIELD_ARGS);
    let ppp = ["--mode", "ppp", "--uninteresting", "count", "--interesting"];
    let a = profile(
        &d("a.json"),
        &[&ppp[..], &[&s(&d("test.json"))]].concat(),
        &FIELD_ARGS,
    );
    profile(
        &d("b.json"),
        &[&ppp[..], &[&s(&d("other.json"))]].concat(),
        &FIELD_ARGS,
    );
    let o = pathprof(&[
        "merge",
        &s(&d("a.json")),
        &s(&d("a.json")),
        "-o",
        &s(&d("aa.json")),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let aa = Profile::read(&d("aa.json")).unwrap();
    let uninteresting = |p: &Profile| -> u64 {
        p.functions
            .iter()
            .map(|f| match &f.data {
                FunctionData::Path { ppp: Some(i), .. } => i.uninteresting,
                _ => 0,
            })
            .sum()
    };
    assert!(uninteresting(&a) > 0);
    let o = pathprof(&["report", &s(&d("a.json"))]);
    let interesting: usize = interesting_of(&a).iter().map(|(_, ids)| ids.len()).sum();
    let note = format!(
        "ppp: {interesting} interesting paths in {} functions; {} executions of other paths were counted, not told apart",
        interesting_of(&a).len(),
        uninteresting(&a)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .any(|l| l == note),
        "{note}"
    );
    assert_eq!(uninteresting(&aa), 2 * uninteresting(&a));
    let o = pathprof(&[
        "merge",
        &s(&d("a.json")),
        &s(&d("b.json")),
        "-o",
        &s(&d("ab.json")),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("pathprof: error: cannot merge: function "),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).ends_with(": the profiles have different interesting paths\n"),
        "{}",
        stderr(&o)
    );
    assert!(!d("ab.json").exists());
}
