//! The profile file: round trip, the exact errors for bad files, merging.

use std::path::Path;

use pathprof_graph::{Cfg, NodeId};
use pathprof_profile::binary::MAGIC;
use pathprof_profile::{
    merge, Block, Edge, Encoding, FunctionData, FunctionProfile, Mode, Profile, ProfileError,
    SourceLocation,
};
use pathprof_techniques::ball_larus::{self, PathCounts};

fn at(file: &str, line: u32, column: u32) -> Option<SourceLocation> {
    Some(SourceLocation {
        file: file.into(),
        line,
        column,
    })
}

/// A diamond's blocks: two files of one name in different folders, a
/// block without a source, a file without a line.
fn diamond_blocks() -> Vec<Option<Block>> {
    let sources = [
        at("/src/lib/util.c", 12, 5),
        None,
        at("/src/app/util.c", 3, 0),
        at("/src/lib/util.c", 0, 0),
    ];
    let mut blocks = vec![None, None];
    blocks.extend(sources.into_iter().enumerate().map(|(i, source)| {
        Some(Block {
            offset: 10 * i as u32 + 10,
            end: 10 * i as u32 + 14,
            instrs: 2,
            source,
        })
    }));
    blocks
}

/// A diamond ENTRY->a->{b,c}->d->EXIT: two paths.
fn diamond_profile(hash: &str, counts: &[(u64, u64)]) -> Profile {
    let mut cfg = Cfg::new();
    let n: Vec<NodeId> = (0..4).map(|_| cfg.add_node()).collect();
    for (s, d) in [
        (Cfg::ENTRY, n[0]),
        (n[0], n[1]),
        (n[0], n[2]),
        (n[1], n[3]),
        (n[2], n[3]),
        (n[3], Cfg::EXIT),
    ] {
        cfg.add_edge(s, d);
    }
    let planned = ball_larus::plan(&cfg, None, &ball_larus::Options::default()).unwrap();
    assert_eq!(planned.numbered.total, 2);
    let edges = cfg
        .edge_list()
        .iter()
        .map(|&(src, dst)| Edge {
            src,
            dst,
            kind: "Fallthrough".into(),
        })
        .collect();
    let mut p = Profile::new(hash.into(), Mode::Path);
    p.runs = 1;
    p.functions.push(FunctionProfile {
        func_index: 3,
        name: Some("f".into()),
        blocks: diamond_blocks(),
        edges,
        data: FunctionData::Path {
            numbered: planned.numbered,
            counts: PathCounts {
                paths: counts.to_vec(),
                self_loops: vec![],
                lost: 0,
            },
            ppp: None,
        },
    });
    p
}

fn err_of(bytes: &[u8]) -> String {
    Profile::from_bytes(Path::new("p.json"), bytes)
        .unwrap_err()
        .to_string()
}

#[test]
fn round_trip_through_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = diamond_profile("ab", &[(0, 5), (1, 7)]);
    // JSON for `*.json`, binary for any other name; both read back.
    for (name, first) in [
        ("p.json", &b"{"[..]),
        ("p.JSON", b"{"),
        ("p.profile", MAGIC),
        ("p", MAGIC),
    ] {
        let path = dir.path().join(name);
        p.write(&path).unwrap();
        assert!(std::fs::read(&path).unwrap().starts_with(first), "{name}");
        assert_eq!(Profile::read(&path).unwrap(), p, "{name}");
    }
}

#[test]
fn bad_binary_files_get_one_line_errors_naming_the_file() {
    let bytes = diamond_profile("ab", &[(0, 5), (1, 7)]).to_bytes(Encoding::Binary);
    // The schema version is the first varint after the magic.
    assert_eq!(bytes[MAGIC.len()], 2);
    let mut newer = bytes.clone();
    newer[MAGIC.len()] = 4;
    assert_eq!(
        err_of(&newer),
        "p.json: profile format version 4, this pathprof reads versions 1 to 3"
    );
    assert_eq!(
        err_of(&bytes[..MAGIC.len()]),
        "p.json: not a pathprof profile (corrupt binary profile)"
    );
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(
        err_of(&longer),
        "p.json: not a pathprof profile (bytes after the end of the profile)"
    );
    // Every truncation is refused in one line, none accepted.
    for n in MAGIC.len() + 1..bytes.len() {
        let e = err_of(&bytes[..n]);
        assert!(
            e.starts_with("p.json: not a pathprof profile ("),
            "{n}: {e}"
        );
        assert_eq!(e.lines().count(), 1);
    }
    // A path number the numbering cannot produce, as in JSON.
    let bad = diamond_profile("ab", &[(2, 1)]).to_bytes(Encoding::Binary);
    assert_eq!(
        err_of(&bad),
        "p.json: not a pathprof profile (function 3: a path number is out of range)"
    );
}

#[test]
fn bad_files_get_one_line_errors_naming_the_file() {
    assert_eq!(
        err_of(b"\0asm"),
        "p.json: not a pathprof profile (not JSON: expected value at line 1 column 1)"
    );
    // JSON that is not an object, or whose format is not the string.
    for not_ours in [
        &b"{\"a\": 1}"[..],
        b"[1, 2]",
        b"\"text\"",
        b"{\"format\": 7}",
    ] {
        assert_eq!(
            err_of(not_ours),
            "p.json: not a pathprof profile (no \"format\": \"pathprof-profile\" field)"
        );
    }
    let mut v: serde_json::Value =
        serde_json::from_str(&diamond_profile("ab", &[]).to_json()).unwrap();
    v["version"] = 4.into();
    assert_eq!(
        err_of(v.to_string().as_bytes()),
        "p.json: profile format version 4, this pathprof reads versions 1 to 3"
    );
    let json = diamond_profile("ab", &[]).to_json();
    assert!(err_of(&json.as_bytes()[..json.len() / 2])
        .starts_with("p.json: not a pathprof profile (not JSON: EOF"));
    // A path number the numbering cannot produce.
    let bad = diamond_profile("ab", &[(2, 1)]).to_json();
    assert_eq!(
        err_of(bad.as_bytes()),
        "p.json: not a pathprof profile (function 3: a path number is out of range)"
    );
    for msg in [err_of(b"\0asm"), err_of(b"{}")] {
        assert_eq!(msg.lines().count(), 1);
    }
}

/// Version 1 spelt a block's source `"file:line"` (the file's last
/// component): such a profile reads, as those files and lines without
/// columns, and is written back as version 2.
#[test]
fn a_json_profile_of_version_1_reads() {
    let p = diamond_profile("ab", &[(0, 5)]);
    let mut v: serde_json::Value = serde_json::from_str(&p.to_json()).unwrap();
    v["version"] = 1.into();
    let blocks = v["functions"][0]["blocks"].as_array_mut().unwrap();
    for (b, v1) in blocks[2..]
        .iter_mut()
        .zip(["util.c:12", "", "util.c:3", "util.c"])
    {
        if !v1.is_empty() {
            b["source"] = v1.into();
        }
    }
    let read = Profile::from_bytes(Path::new("p.json"), v.to_string().as_bytes()).unwrap();
    assert_eq!(read.version, 2);
    let sources: Vec<_> = read.functions[0]
        .blocks
        .iter()
        .flatten()
        .map(|b| b.source.clone())
        .collect();
    assert_eq!(
        sources,
        [
            at("util.c", 12, 0),
            None,
            at("util.c", 3, 0),
            at("util.c", 0, 0)
        ]
    );
    assert_eq!(read.to_json().matches("\"column\": 0").count(), 3);
}

#[test]
fn sources_keep_their_folders_and_columns() {
    let p = diamond_profile("ab", &[]);
    let json = p.to_json();
    assert!(json.contains(r#""file": "/src/app/util.c""#), "{json}");
    for encoding in [Encoding::Binary, Encoding::Json] {
        let read = Profile::from_bytes(Path::new("p"), &p.to_bytes(encoding)).unwrap();
        assert_eq!(read.functions[0].blocks, diamond_blocks(), "{encoding:?}");
    }
}

#[test]
fn a_profile_of_another_module_is_refused() {
    let p = diamond_profile("aaaaaaaaaaaaaaaa", &[]);
    assert!(p
        .check_module(Path::new("p.json"), "aaaaaaaaaaaaaaaa")
        .is_ok());
    assert_eq!(
        p.check_module(Path::new("p.json"), "bbbbbbbbbbbbbbbbbb")
            .unwrap_err()
            .to_string(),
        "p.json: profile is of module aaaaaaaaaaaa, not of this module (bbbbbbbbbbbb)"
    );
}

#[test]
fn merge_adds_counts_and_runs() {
    let a = diamond_profile("ab", &[(0, 5)]);
    let b = diamond_profile("ab", &[(0, 2), (1, 7)]);
    let m = merge(&[a, b]).unwrap();
    assert_eq!(m.runs, 2);
    let FunctionData::Path { counts, .. } = &m.functions[0].data else {
        panic!()
    };
    assert_eq!(counts.paths, vec![(0, 7), (1, 7)]);
}

#[test]
fn merge_refuses_other_modules_modes_and_overflow() {
    let a = diamond_profile("ab", &[(0, 5)]);
    let other = diamond_profile("cd", &[(0, 5)]);
    assert_eq!(
        merge(&[a.clone(), other]).unwrap_err().to_string(),
        "cannot merge: the profiles are of different modules"
    );
    let mut edge = a.clone();
    edge.mode = Mode::Edge;
    assert_eq!(
        merge(&[a.clone(), edge]).unwrap_err().to_string(),
        "cannot merge: profiles of different modes (path and edge)"
    );
    let big = diamond_profile("ab", &[(0, u64::MAX)]);
    assert_eq!(
        merge(&[a, big]).unwrap_err().to_string(),
        "cannot merge: function f: a count passes 2^64"
    );
    assert!(matches!(merge(&[]), Err(ProfileError::Merge(_))));
}

#[test]
fn an_unwritable_output_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/p.json");
    let err = diamond_profile("ab", &[])
        .write(&missing)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(&missing.display().to_string()), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A profile of three copies of the diamond, functions 3, 5 and 8, with
/// the given path counts.
fn three_diamonds(counts: [&[(u64, u64)]; 3]) -> Profile {
    let mut p = diamond_profile("ab", &[]);
    let f = p.functions.pop().unwrap();
    for (index, c) in [3, 5, 8].into_iter().zip(counts) {
        let mut g = f.clone();
        g.func_index = index;
        if let FunctionData::Path { counts, .. } = &mut g.data {
            counts.paths = c.to_vec();
        }
        p.functions.push(g);
    }
    p
}

fn indices(p: &Profile) -> Vec<u32> {
    p.functions.iter().map(|f| f.func_index).collect()
}

#[test]
fn a_sparse_profile_lists_the_functions_that_ran_and_reads_back() {
    let mut p = three_diamonds([&[], &[(1, 4)], &[]]);
    assert_eq!(p.needed_version(), 2);
    p.make_sparse().unwrap();
    assert_eq!((indices(&p), p.unrun.clone()), (vec![5], vec![3, 8]));
    assert!(p.is_sparse());
    assert_eq!(p.instrumented(), [3, 5, 8]);
    for encoding in [Encoding::Binary, Encoding::Json] {
        let bytes = p.to_bytes(encoding);
        let read = Profile::from_bytes(Path::new("p"), &bytes).unwrap();
        assert_eq!(read, p, "{encoding:?}");
        assert_eq!(read.version, 3);
    }
    // A sparse profile is version 3 (older readers refuse it), a dense
    // one still version 2.
    assert_eq!(p.to_bytes(Encoding::Binary)[MAGIC.len()], 3);
    let dense = three_diamonds([&[], &[(1, 4)], &[]]);
    assert_eq!(dense.to_bytes(Encoding::Binary)[MAGIC.len()], 2);
    // A dense profile's functions come back from a template.
    let mut filled = p.clone();
    filled.fill_unrun(three_diamonds([&[], &[], &[]])).unwrap();
    assert_eq!(filled, dense);
    // A context profile keeps the functions its paths run in: with no
    // path, none.
    let mut ctx = three_diamonds([&[], &[(1, 4)], &[]]);
    ctx.mode = Mode::Context;
    ctx.interproc = Some(Box::default());
    ctx.make_sparse().unwrap();
    assert_eq!((indices(&ctx), ctx.unrun.clone()), (vec![], vec![3, 5, 8]));
    // Segment profiles' segments are the module's.
    let mut seg = three_diamonds([&[], &[], &[]]);
    seg.mode = Mode::Segments;
    assert_eq!(
        seg.make_sparse().unwrap_err(),
        "a segments profile cannot be sparse: its segments are the module's"
    );
}

#[test]
fn a_corrupt_list_of_left_out_functions_is_refused() {
    let mut p = three_diamonds([&[], &[(1, 4)], &[]]);
    p.make_sparse().unwrap();
    let descending = "the functions left out (\"unrun\") are not ascending";
    // The binary file codes the list as deltas: a descending one wraps.
    let wraps = "corrupt binary profile: a left-out function index passes 2^32";
    for (unrun, binary, json) in [
        (vec![8, 3], wraps, descending),
        (vec![3, 3], descending, descending),
        (
            vec![3, 5],
            "function 5 is both listed and left out as unrun",
            "",
        ),
    ] {
        let mut bad = p.clone();
        bad.unrun = unrun;
        let json = if json.is_empty() { binary } else { json };
        for (encoding, why) in [(Encoding::Binary, binary), (Encoding::Json, json)] {
            assert_eq!(
                err_of(&bad.to_bytes(encoding)),
                format!("p.json: not a pathprof profile ({why})"),
                "{encoding:?}"
            );
        }
    }
}

/// Merging joins functions by index: what one sparse profile left out the
/// other may list; the sum equals the sum of the dense profiles, made
/// sparse.
#[test]
fn sparse_profiles_merge_by_function_index() {
    let a = three_diamonds([&[(0, 2)], &[], &[]]);
    let b = three_diamonds([&[], &[], &[(1, 3)]]);
    let c = three_diamonds([&[(0, 1)], &[], &[(0, 5)]]);
    let mut dense = merge(&[a.clone(), b.clone(), c.clone()]).unwrap();
    let sparse_of = |p: &Profile| {
        let mut p = p.clone();
        p.make_sparse().unwrap();
        p
    };
    let mut m = merge(&[sparse_of(&a), sparse_of(&b), sparse_of(&c)]).unwrap();
    assert_eq!((indices(&m), m.unrun.clone()), (vec![3, 8], vec![5]));
    let FunctionData::Path { counts, .. } = &m.functions[1].data else {
        panic!()
    };
    assert_eq!(counts.paths, [(0, 5), (1, 3)]);
    dense.make_sparse().unwrap();
    assert_eq!(m, dense);
    // A dense profile merges with a sparse one; its zero functions stay.
    m = merge(&[sparse_of(&a), b.clone()]).unwrap();
    assert_eq!((indices(&m), m.unrun.clone()), (vec![3, 5, 8], vec![]));
    // Profiles that instrument other functions are refused.
    let mut fewer = sparse_of(&b);
    fewer.unrun.retain(|&i| i != 5);
    assert_eq!(
        merge(&[sparse_of(&a), fewer]).unwrap_err().to_string(),
        "cannot merge: the profiles instrument different functions"
    );
}
