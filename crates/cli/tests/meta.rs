//! The metadata section stores CFGs and plan choices, not numberings:
//! `collect` rebuilds the profile template. These tests check that the
//! rebuilt template equals the one the planners produce at instrument time
//! (built here independently, as pathprof built it before the section was
//! binary), for every fixture and mode, and that a damaged section gives a
//! one-line error, never a panic.

use std::path::PathBuf;

use pathprof::driver::{self, Technique};
use pathprof::source::SourceMap;
use pathprof_profile::{Block, Edge, FunctionData, FunctionProfile, Mode, Profile, Skipped};
use pathprof_techniques::{ball_larus, edge, ppp};
use pathprof_wasm::FunctionCfg;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.wat` fixture and the C fixtures built by scripts/build-c-fixtures.sh
/// (those carry DWARF, so source locations are checked too).
fn fixtures() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in ["tests/fixtures/wat", "tests/fixtures/c/build"] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            let bytes = match p.extension().and_then(|e| e.to_str()) {
                Some("wat") => wat::parse_file(&p).expect("fixture parses"),
                Some("wasm") => std::fs::read(&p).expect("fixture reads"),
                _ => continue,
            };
            out.push((p.display().to_string(), bytes));
        }
    }
    assert!(
        out.len() >= 9,
        "fixtures missing under {}",
        root().display()
    );
    out
}

/// A few interesting paths in every function: the first, the last, the middle.
fn ppp_options(bytes: &[u8]) -> driver::Options {
    let mut opts = driver::Options::default();
    opts.ball_larus.array_max = 0;
    opts.ball_larus.array_budget = 0;
    opts.ppp.policy = ppp::Policy::Count;
    let info = pathprof_wasm::analyze(bytes).unwrap();
    for f in info.functions.iter().flatten() {
        let (_, n) =
            pathprof_graph::numbering::build_numbered(&f.cfg, opts.ball_larus.truncate_above)
                .unwrap();
        let total = n.total();
        let mut ids = vec![0, total / 2, total.saturating_sub(1)];
        ids.dedup();
        opts.ppp.interesting.paths.insert(f.func_index, ids);
        opts.ppp
            .interesting
            .self_loops
            .insert(f.func_index, Vec::new());
    }
    opts
}

/// The template as the planners make it, function by function.
fn expected_template(bytes: &[u8], technique: Technique, opts: &driver::Options) -> Profile {
    let info = pathprof_wasm::analyze(bytes).unwrap();
    let mode = match technique {
        Technique::Edge => Mode::Edge,
        Technique::Ppp => Mode::Ppp,
        _ => Mode::Path,
    };
    let mut p = Profile::new(info.module_hash.clone(), mode);
    let exceptions = info.functions.iter().flatten().any(|f| {
        use pathprof_wasm::EdgeKind::{Catch, Throw, ThrowRef};
        f.edge_kinds
            .iter()
            .any(|k| matches!(k, Throw | ThrowRef | Catch))
    });
    let sources = SourceMap::load(bytes);
    for f in &info.functions {
        match f {
            Ok(f) => {
                let data = expected_data(f, technique, opts, exceptions);
                p.functions
                    .push(expected_function(f, data, sources.as_ref()));
            }
            Err(u) => p.skipped.push(Skipped {
                func_index: u.func_index,
                name: u.name.clone(),
                reason: u.reason.clone(),
            }),
        }
    }
    p
}

fn expected_data(
    f: &FunctionCfg,
    technique: Technique,
    opts: &driver::Options,
    exceptions: bool,
) -> FunctionData {
    let zero_counts = |n: &ball_larus::Numbered| ball_larus::PathCounts {
        self_loops: vec![0; n.self_loops.len()],
        ..Default::default()
    };
    match technique {
        Technique::Path => {
            let numbered = ball_larus::plan(&f.cfg, None, &opts.ball_larus)
                .unwrap()
                .numbered;
            FunctionData::Path {
                counts: zero_counts(&numbered),
                numbered,
                ppp: None,
            }
        }
        Technique::Ppp => {
            let ppp_opts = ppp::Options {
                ball_larus: opts.ball_larus.clone(),
                policy: opts.ppp.policy,
                force_ball_larus: false,
            };
            let ids = &opts.ppp.interesting.paths[&f.func_index];
            let planned = ppp::plan(&f.cfg, None, &ppp_opts, ids, None).unwrap();
            FunctionData::Path {
                counts: zero_counts(&planned.numbered),
                numbered: planned.numbered,
                ppp: Some(Box::new(planned.info)),
            }
        }
        _ => {
            let unwinding = pathprof::driver::unwinding(f, exceptions);
            let (_, chords) = edge::plan(&f.cfg, None, &unwinding);
            FunctionData::Edge {
                chord_counts: vec![0; chords.chords.len()],
                edge_counts: vec![0; f.cfg.num_edges()],
                chords,
            }
        }
    }
}

fn expected_function(
    f: &FunctionCfg,
    data: FunctionData,
    sources: Option<&SourceMap>,
) -> FunctionProfile {
    let blocks = f
        .blocks
        .iter()
        .map(|b| {
            b.map(|b| Block {
                offset: b.offset,
                end: b.end,
                instrs: b.instrs,
                source: sources.and_then(|s| s.locate(b.offset, b.end)),
            })
        })
        .collect();
    let edges = f
        .cfg
        .edge_ids()
        .map(|e| {
            let (src, dst) = f.cfg.edge(e);
            let kind = format!("{:?}", f.edge_kinds[e.index()]);
            Edge { src, dst, kind }
        })
        .collect();
    FunctionProfile {
        func_index: f.func_index,
        name: f.name.clone(),
        blocks,
        edges,
        data,
    }
}

#[test]
fn rebuilt_template_equals_the_planned_one() {
    let mut checked = 0;
    for (name, bytes) in fixtures() {
        for technique in [Technique::Path, Technique::Edge, Technique::Ppp] {
            let opts = match technique {
                Technique::Ppp => ppp_options(&bytes),
                _ => driver::Options::default(),
            };
            let inst = driver::instrument(&bytes, technique, &opts).unwrap();
            let meta = inst.meta().unwrap();
            let expected = expected_template(&bytes, technique, &opts);
            assert!(
                meta.template == expected,
                "{name} ({technique:?}): the rebuilt template differs"
            );
            assert_eq!(meta.layout.functions.len(), expected.functions.len());
            checked += 1;
        }
    }
    println!("{checked} (fixture, mode) templates rebuilt identically");
}

/// `run` collects with the metadata planning made (`Options::keep_meta`)
/// instead of decoding the section it just wrote: the two must be equal,
/// template, layout and code map, for every fixture and technique planned
/// one function at a time, with the array memory spent early (small hash
/// tables) and with weights; and for the techniques planned whole
/// (context and piecewise also keep their numbering).
#[test]
fn kept_metadata_equals_the_decoded_section() {
    let (mut checked, mut whole) = (0, 0);
    for (name, bytes) in fixtures() {
        for technique in [
            Technique::Path,
            Technique::Edge,
            Technique::Ppp,
            Technique::Trace,
        ] {
            let mut opts = match technique {
                Technique::Ppp => ppp_options(&bytes),
                _ => driver::Options::default(),
            };
            opts.keep_meta = true;
            for spill in [false, true] {
                if spill {
                    opts.ball_larus.array_memory_max = 64;
                }
                let mut inst = driver::instrument(&bytes, technique, &opts).unwrap();
                let kept = inst.take_kept_meta().expect("metadata kept");
                let decoded = inst.meta().unwrap();
                assert!(
                    kept == decoded,
                    "{name} ({technique:?}, spill {spill}): the kept metadata differs from the section's"
                );
                checked += 1;
            }
        }
        let mut opts = driver::Options {
            keep_meta: true,
            ..Default::default()
        };
        for technique in [
            Technique::Context,
            Technique::Piecewise,
            Technique::IntraContext,
        ] {
            // (Refused where the mode does not apply yet.)
            let Ok(mut inst) = driver::instrument(&bytes, technique, &opts) else {
                continue;
            };
            let kept = inst.take_kept_meta().expect("metadata kept");
            assert!(
                kept == inst.meta().unwrap(),
                "{name} ({technique:?}): the kept metadata differs from the section's"
            );
            let numbering = kept.interproc.as_ref().map(|m| format!("{:?}", m.numbered));
            assert_eq!(
                numbering.as_deref(),
                (technique != Technique::IntraContext).then_some("kept")
            );
            whole += 1;
        }
        opts.keep_meta = false;
        let mut inst = driver::instrument(&bytes, Technique::Path, &opts).unwrap();
        assert!(inst.take_kept_meta().is_none(), "{name}: kept unasked");
    }
    assert!(checked >= 72, "{checked}");
    assert!(whole >= 30, "{whole}");
}

/// A context profile collected with the numbering planning kept equals the
/// one collected with the numbering rebuilt from the section.
#[test]
fn a_kept_interprocedural_numbering_collects_as_the_rebuilt_one() {
    let bytes = std::fs::read(root().join("tests/fixtures/c/build/recurse.O2.wasm"))
        .expect("run scripts/build-c-fixtures.sh");
    let engine = pathprof_runner::engine().unwrap();
    for technique in [Technique::Context, Technique::Piecewise] {
        let opts = driver::Options {
            keep_meta: true,
            ..Default::default()
        };
        let mut inst = driver::instrument(&bytes, technique, &opts).unwrap();
        let kept = inst.take_kept_meta().unwrap();
        let opts = pathprof_runner::RunOptions::captured(["recurse", "6", "3"]);
        let run = pathprof_runner::run_command(&engine, &inst.bytes, &opts).unwrap();
        assert_eq!(run.exit, pathprof_runner::Exit::Returned);
        let counters = run.counters.unwrap();
        let rebuilt = driver::collect(&inst.meta().unwrap(), &counters, None).unwrap();
        let with_kept = driver::collect(&kept, &counters, None).unwrap();
        assert_eq!(with_kept, rebuilt, "{technique:?}");
        let paths = rebuilt.interproc.as_ref().map_or(0, |i| i.paths.len());
        assert!(paths > 3, "{technique:?}: {paths} paths");
    }
}

/// Truncations, byte flips and other versions of a real section: errors
/// (one line each), never panics.
#[test]
fn damaged_sections_are_one_line_errors() {
    let wasm = wat::parse_file(root().join("tests/fixtures/wat/loops.wat")).unwrap();
    let inst = driver::instrument(&wasm, Technique::Path, &driver::Options::default()).unwrap();
    let section = pathprof_wasm::custom_section(&inst.bytes, driver::META_SECTION)
        .unwrap()
        .unwrap();
    let decode = |data: &[u8]| pathprof::meta::decode(data);
    decode(&section).unwrap();
    for n in 0..section.len() {
        let e = decode(&section[..n]).expect_err("a truncated section decodes");
        assert!(!e.to_string().contains('\n'), "{e}");
    }
    let mut seed = 0x9e37_79b9_u64;
    for i in 0..section.len() * 8 {
        let mut bad = section.clone();
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        bad[i % section.len()] ^= (seed >> 56) as u8 | 1;
        if let Ok(meta) = decode(&bad) {
            // Whatever decodes must collect without panicking.
            let _ = driver::collect(&meta, &[0; 4096], Some(&[(1, 2)]));
        }
    }
    let mut other = section.clone();
    other[6] = 9; // the version varint follows the 6-byte magic
    let e = decode(&other).unwrap_err().to_string();
    assert!(e.contains("version 9"), "{e}");
    let e = decode(b"{\"template\":{}}").unwrap_err().to_string();
    assert!(e.contains("older pathprof"), "{e}");
    let e = driver::read_meta(&wasm).unwrap_err().to_string();
    assert!(e.contains("no __pathprof.meta section"), "{e}");
}
