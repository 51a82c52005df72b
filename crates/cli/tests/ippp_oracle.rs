//! `run --mode ippp` (interprocedural PPP, Vaswani 3.4.4-3.4.5) checked on
//! real runs: every C fixture at -O0 and -O2 and every WAT fixture export
//! the mode takes, for k = 1, 2 and 3, with half the segments of the run
//! interesting. The oracle is the brute-force enumerator of
//! [`pathprof_graph::testing::ippp`], which shares no code with the
//! expanded graphs, the plans or the rewriter: it cuts a trace of another
//! run of the program into subpaths and follows each segment forward.
//!
//! What must hold, exactly:
//! - every interesting segment is counted as often as the oracle finds it
//!   in the run (those through an indirect call, which the instrumentation
//!   leaves out, are counted in the profile's summary instead);
//! - under `record`, the interesting and the other segments together are
//!   the oracle's segments cut where the instrumentation cuts them: at a
//!   call into a context no interesting segment enters;
//! - the program's output and exit are those of the uninstrumented run.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::programs::{self, Invocation};
use common::segments::{c_modules, ids, module, record, spell, spelt, wat_recorded, Module, Spelt};
use pathprof::driver::{self, Technique};
use pathprof::ippp::IpppOptions;
use pathprof_graph::interproc::Callee;
use pathprof_graph::interproc::FuncId;
use pathprof_graph::ippp::{Ips, SubpathEnd};
use pathprof_graph::testing::ippp::{edge_marks, ips, ips_truncated, marks, wpp, Truncation};
use pathprof_profile::segments::SegmentCount;
use pathprof_techniques::ppp::Policy;
use pathprof_wasm::supergraph::events;

/// The run's segments as `run --segments K` records them (checked against
/// the oracle by `segments_oracle`): where the interesting ones come from.
fn recorded(m: &Module, inv: &Invocation, k: usize) -> Vec<SegmentCount> {
    record(m, inv, k)
        .segments
        .expect("a segment profile")
        .segments
}

/// The indirect call sites (function, supergraph call) through a table
/// the module or the host may write (by the supergraph's own call list and
/// the module's tables): those the instrumentation cannot resolve.
fn unresolved_sites(m: &Module) -> BTreeSet<(FuncId, usize)> {
    let msg = m.prepared.supergraph();
    let info = pathprof_wasm::analyze(&m.bytes).unwrap();
    let tables = pathprof_wasm::tables::static_tables(&m.bytes).unwrap();
    let mut out = BTreeSet::new();
    for (f, func) in msg.supergraph.functions.iter().enumerate() {
        for (i, call) in func.calls.iter().enumerate() {
            let w = msg.call_index[f][i] as usize;
            let table = match info.functions[f].as_ref().unwrap().calls[w].callee {
                pathprof_wasm::Callee::Indirect { table, .. } => Some(table),
                _ => None,
            };
            if matches!(call.callee, Callee::Indirect(_))
                && !table.is_some_and(|t| tables.is_static(t))
            {
                out.insert((FuncId::new(f), i));
            }
        }
    }
    out
}

/// Whether the spelt segment passes one of the call sites `sites`.
fn through_indirect(sites: &BTreeSet<(FuncId, usize)>, s: &Spelt) -> bool {
    s[..s.len() - 1].iter().any(|(f, p)| match p.end {
        SubpathEnd::Call(i) => sites.contains(&(*f, i)),
        _ => false,
    })
}

/// Whether the spelt segment passes any indirect call site.
fn through_any_indirect(m: &Module, s: &Spelt) -> bool {
    let sg = &m.prepared.supergraph().supergraph;
    s[..s.len() - 1].iter().any(|(f, p)| match p.end {
        SubpathEnd::Call(i) => {
            matches!(sg.functions[f.index()].calls[i].callee, Callee::Indirect(_))
        }
        _ => false,
    })
}

/// What one check covered.
#[derive(Default)]
pub(crate) struct Covered {
    runs: usize,
    interesting_counted: usize,
    untested: usize,
    through_indirect: usize,
    too_many_paths: usize,
    truncated: u64,
    truncated_starts: usize,
    /// Interesting segments through a resolved indirect call that ran.
    resolved_indirect: usize,
    /// Interesting segments closed by a tail call that ran.
    at_tail_call: usize,
    /// Interesting segments closed by a throw that ran.
    pub(crate) at_throw: usize,
}

impl Covered {
    /// What the threads of [`c_modules`] covered, together.
    fn sum(parts: Vec<Covered>) -> Covered {
        parts.into_iter().fold(Covered::default(), |a, b| Covered {
            runs: a.runs + b.runs,
            interesting_counted: a.interesting_counted + b.interesting_counted,
            untested: a.untested + b.untested,
            through_indirect: a.through_indirect + b.through_indirect,
            too_many_paths: a.too_many_paths + b.too_many_paths,
            truncated: a.truncated + b.truncated,
            truncated_starts: a.truncated_starts + b.truncated_starts,
            resolved_indirect: a.resolved_indirect + b.resolved_indirect,
            at_tail_call: a.at_tail_call + b.at_tail_call,
            at_throw: a.at_throw + b.at_throw,
        })
    }
}

/// The oracle's segments of a run cut where the instrumentation cuts them:
/// at calls into contexts no interesting segment enters, and below the
/// start functions the profile says were truncated, at edges no
/// interesting segment takes in that context (those returned apart).
pub(crate) fn cut(
    subpaths: &[pathprof_graph::testing::ippp::Done],
    k: usize,
    kept: &BTreeSet<Spelt>,
    sp: &pathprof_profile::segments::SegmentProfile,
) -> (BTreeMap<Spelt, u64>, BTreeMap<Spelt, u64>) {
    let summary = sp.ippp.as_ref().expect("an IPPP summary");
    let kept_edges = edge_marks(kept);
    let truncation = Truncation {
        starts: summary
            .truncated_starts
            .iter()
            .map(|&f| FuncId::new((f - sp.num_imported_funcs) as usize))
            .collect(),
        kept: &kept_edges,
    };
    ips_truncated(subpaths, k, Some(&marks(kept)), Some(&truncation))
}

/// A run of the uninstrumented program: its output and its subpaths.
pub(crate) struct Oracle {
    pub(crate) inv: Invocation,
    pub(crate) run: programs::Outcome,
    pub(crate) subpaths: Vec<pathprof_graph::testing::ippp::Done>,
}

pub(crate) fn oracle(m: &Module, inv: &Invocation) -> Oracle {
    let run = programs::run_compiled(&m.traced, inv, true);
    let exec = events(m.prepared.supergraph(), &run.trace).unwrap();
    let subpaths = wpp(&m.prepared.supergraph().supergraph, &exec);
    Oracle {
        inv: inv.clone(),
        run,
        subpaths,
    }
}

/// Checks every run of `invs` for k = 1, 2, 3, with every other segment
/// the runs recorded interesting (one instrumented build per depth).
pub(crate) fn check(
    engine: &wasmtime::Engine,
    m: &Module,
    invs: &[Invocation],
    covered: &mut Covered,
) {
    let num = m.prepared.numbering();
    let oracles: Vec<Oracle> = invs.iter().map(|inv| oracle(m, inv)).collect();
    let unresolved = unresolved_sites(m);
    for k in 1..=3 {
        let mut seen = BTreeMap::new();
        for inv in invs {
            for s in recorded(m, inv, k) {
                seen.entry(spell(num, &s)).or_insert(s);
            }
        }
        let chosen: Vec<SegmentCount> = seen.into_values().step_by(2).collect();
        let interesting: Vec<Ips> = chosen.iter().map(ids).collect();
        let (indirect, direct): (Vec<Spelt>, Vec<Spelt>) = chosen
            .iter()
            .map(|s| spell(num, s))
            .partition(|s| through_indirect(&unresolved, s));
        let opts = driver::Options {
            ippp: IpppOptions {
                k,
                interesting,
                policy: Policy::Record,
            },
            keep_meta: true,
            ..Default::default()
        };
        let mut inst = driver::instrument(&m.bytes, Technique::Ippp, &opts)
            .unwrap_or_else(|e| panic!("{} k={k}: {e:#}", m.name));
        // `run` collects with the graphs planning made: the same profile.
        let kept = inst.take_kept_meta().expect("metadata kept");
        let meta = inst.meta().expect("metadata decodes");
        assert!(kept == meta, "{} k={k}: kept metadata", m.name);
        let compiled = crate::common::programs::compile(engine, &inst.bytes).unwrap();
        for o in &oracles {
            let out = programs::run_compiled(&compiled, &o.inv, false);
            let collect = |meta| {
                driver::collect(
                    meta,
                    out.counters.as_ref().expect("counters"),
                    out.exit
                        .is_abrupt()
                        .then_some(out.exit.unfinished_frames(&out.abrupt_stack)),
                )
                .expect("collect")
            };
            let profile = collect(&meta);
            let at = format!("{} {:?} k={k}", m.name, o.inv);
            assert_eq!(
                collect(&kept),
                profile,
                "{at}: collected with the kept graphs"
            );
            assert_eq!(out.stdout, o.run.stdout, "{at}: output changed");
            assert_eq!(out.exit, o.run.exit, "{at}: exit changed");
            check_run(m, &profile, o, k, (&indirect, &direct), &at, covered);
        }
    }
}

/// One run's IPPP profile against the oracle's segments of the run.
pub(crate) fn check_run(
    m: &Module,
    profile: &pathprof_profile::Profile,
    o: &Oracle,
    k: usize,
    (indirect, direct): (&[Spelt], &[Spelt]),
    at: &str,
    covered: &mut Covered,
) {
    let num = m.prepared.numbering();
    let all = ips(&o.subpaths, k);
    let sp = profile.segments.as_ref().expect("a segment profile");
    let summary = sp.ippp.as_ref().expect("an IPPP summary");
    assert_eq!(summary.through_indirect, indirect.len() as u64, "{at}");
    // The profiled ones (every one listed, count 0 or not): those the
    // numbering took, the hottest first.
    let kept: Vec<Spelt> = sp.segments.iter().map(|s| spell(num, s)).collect();
    assert!(
        kept.iter().all(|s| direct.contains(s)),
        "{at}: profiled a segment not chosen"
    );
    assert_eq!(summary.interesting, kept.len() as u64, "{at}");
    assert_eq!(
        summary.too_many_paths + summary.too_many_contexts,
        (direct.len() - kept.len()) as u64,
        "{at}"
    );
    assert_eq!(summary.lost, 0, "{at}");
    let got_interesting = spelt(num, &sp.segments);
    for s in &kept {
        assert_eq!(
            got_interesting.get(s).copied().unwrap_or(0),
            all.get(s).copied().unwrap_or(0),
            "{at}: an interesting segment counted wrong: {s:?}"
        );
    }
    covered.resolved_indirect += kept
        .iter()
        .filter(|s| all.get(*s).is_some_and(|&c| c > 0) && through_any_indirect(m, s))
        .count();
    let ran_ending = |end: SubpathEnd| {
        (kept.iter())
            .filter(|s| all.get(*s).is_some_and(|&c| c > 0))
            .filter(|s| s.len() > 1 && s.last().unwrap().1.end == end)
            .count()
    };
    covered.at_tail_call += ran_ending(SubpathEnd::TailCall);
    covered.at_throw += ran_ending(SubpathEnd::Throw);
    let kept_set: BTreeSet<Spelt> = kept.iter().cloned().collect();
    let (want, truncated) = cut(&o.subpaths, k, &kept_set, sp);
    let mut got: BTreeMap<Spelt, u64> = got_interesting.clone();
    let untested = spelt(num, &summary.untested);
    assert_eq!(
        summary.truncated,
        truncated.values().sum::<u64>(),
        "{at}: truncated segments"
    );
    assert_eq!(
        summary.uninteresting,
        untested.values().sum::<u64>() + summary.truncated,
        "{at}"
    );
    for (s, c) in untested {
        assert!(got.insert(s, c).is_none(), "{at}: a segment counted twice");
    }
    assert!(
        got == want,
        "{at}: {} segments ({} closings) counted, the oracle cuts {} ({})",
        got.len(),
        got.values().sum::<u64>(),
        want.len(),
        want.values().sum::<u64>()
    );
    covered.runs += 1;
    covered.truncated += summary.truncated;
    covered.truncated_starts += summary.truncated_starts.len();
    covered.interesting_counted += got_interesting.len();
    covered.untested += summary.untested.len();
    covered.through_indirect += indirect.len();
    covered.too_many_paths += summary.too_many_paths as usize;
}

#[test]
fn c_programs_count_their_interesting_segments_exactly() {
    let engine = crate::common::programs::engine();
    let covered = Covered::sum(c_modules(&engine, |m, invs, covered| {
        check(&engine, m, invs, covered)
    }));
    eprintln!(
        "{} runs: {} interesting segments counted ({} through resolved indirect calls ran), {} others, {} through unresolved indirect calls, {} left out (too many paths), {} truncated below {} truncated start functions",
        covered.runs, covered.interesting_counted, covered.resolved_indirect, covered.untested, covered.through_indirect, covered.too_many_paths, covered.truncated, covered.truncated_starts
    );
    assert!(covered.runs >= 180, "only {} runs checked", covered.runs);
    assert!(covered.interesting_counted > 1000);
    assert!(covered.untested > 1000);
    // clang's tables are static: every indirect call resolves.
    assert_eq!(
        covered.through_indirect, 0,
        "an indirect call left unresolved"
    );
    assert!(
        covered.resolved_indirect > 100,
        "only {} segments through indirect calls counted",
        covered.resolved_indirect
    );
    assert!(covered.truncated > 0, "no segment was truncated");
    // The `tailcall` fixture's, direct and through its table of states.
    assert!(covered.at_tail_call > 0, "no segment closed at a tail call");
}

#[test]
fn wat_fixtures_count_their_interesting_segments_exactly() {
    let engine = crate::common::programs::engine();
    let mut covered = Covered::default();
    wat_recorded(&engine, |m, invs| check(&engine, m, invs, &mut covered));
    assert!(covered.runs >= 60, "only {} WAT runs checked", covered.runs);
    // tail_segments.wat; exceptions.wat.
    assert!(covered.at_tail_call > 0, "no segment closed at a tail call");
    assert!(covered.at_throw > 0, "no segment closed at a throw");
}

/// Interprocedural residual profiling with the thesis' field build (3.5.2,
/// Fig. 3.15): `sort`'s depth-k segments of a test run are the field
/// build's interesting set; the field run's residual report (from the
/// field build's profile alone) must give the oracle's untested segments,
/// cut where the field build cuts them, and Table 3.2's columns.
#[test]
fn residual_of_a_field_build_is_the_oracles_untested_segments() {
    let engine = crate::common::programs::engine();
    let path = programs::root().join("tests/fixtures/c/build/sort.O2.wasm");
    let bytes = std::fs::read(&path).expect("run scripts/build-c-fixtures.sh first");
    let m = module(&engine, "sort.O2", &bytes).unwrap();
    let num = m.prepared.numbering();
    let test = Invocation::command(&["sort", "-q", "3", "1"]);
    let field = Invocation::command(&["sort", "-i", "9", "8", "7", "6", "5"]);
    let o = oracle(&m, &field);
    for k in 1..=3 {
        let tested = recorded(&m, &test, k);
        let opts = driver::Options {
            ippp: IpppOptions {
                k,
                interesting: tested.iter().map(ids).collect(),
                policy: Policy::Record,
            },
            ..Default::default()
        };
        let (_, profile) = programs::profiled_run(&engine, &bytes, Technique::Ippp, &opts, &field);
        let sp = profile.segments.as_ref().unwrap();
        let kept: BTreeSet<Spelt> = sp.segments.iter().map(|s| spell(num, s)).collect();
        let (cut, truncated) = cut(&o.subpaths, k, &kept, sp);
        let truncated: u64 = truncated.values().sum();
        let untested: BTreeMap<&Spelt, u64> = cut
            .iter()
            .filter(|(s, _)| !kept.contains(*s))
            .map(|(s, &c)| (s, c))
            .collect();
        assert!(
            !untested.is_empty(),
            "k={k}: the field run took no untested segment"
        );
        let r =
            pathprof::residual_segments::residual(&profile, "field".as_ref(), &[], &[] as &[&str])
                .unwrap();
        let s = &r.summary;
        assert_eq!(s.k, k as u32);
        assert_eq!(s.field_segments, cut.len(), "k={k}");
        assert_eq!(s.untested_segments, untested.len(), "k={k}");
        assert_eq!(
            s.field_executions,
            cut.values().sum::<u64>() + truncated,
            "k={k}"
        );
        assert_eq!(
            s.untested_executions,
            untested.values().sum::<u64>() + truncated,
            "k={k}"
        );
        let mut counts: Vec<u64> = r.untested.iter().map(|row| row.count).collect();
        let mut want: Vec<u64> = untested.values().copied().collect();
        counts.sort_unstable();
        want.sort_unstable();
        assert_eq!(counts, want, "k={k}");
    }
}

/// The flags of `--mode ippp` and the errors a user can make with them.
#[test]
fn ippp_flags_and_errors() {
    use common::bin::{pathprof, stderr};
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &std::path::Path| p.display().to_string();
    let sort = programs::root().join("tests/fixtures/c/build/sort.O2.wasm");
    let other = programs::root().join("tests/fixtures/c/build/sort.O0.wasm");
    let (seg, path, out) = (
        dir.path().join("seg.profile"),
        dir.path().join("path.profile"),
        dir.path().join("ippp.json"),
    );
    for (args, file) in [
        (vec!["--segments", "2"], &seg),
        (vec!["--mode", "path"], &path),
    ] {
        let mut a = vec!["run"];
        a.extend(args);
        let (f, w) = (s(file), s(&sort));
        a.extend(["-o", &f, &w, "--", "-q", "3", "1"]);
        assert!(pathprof(&a).status.success());
    }
    let run = |extra: &[&str]| {
        let (o, w) = (s(&out), s(&sort));
        let mut a = vec!["run", "--mode", "ippp", "-o", &o];
        a.extend(extra);
        a.extend([w.as_str(), "--", "-q", "3", "1"]);
        pathprof(&a)
    };
    let o = run(&[]);
    assert_eq!(
        stderr(&o),
        "pathprof: error: --mode ippp needs --interesting PROFILE (a segment profile: `pathprof run --segments K`)\n"
    );
    let o = run(&["--interesting", &s(&path)]);
    assert_eq!(
        stderr(&o),
        format!("pathprof: error: {}: not a segment profile (make one with `pathprof run --segments K`)\n", s(&path))
    );
    let o = run(&["--interesting", &s(&seg), "-k", "3"]);
    assert_eq!(
        stderr(&o),
        format!(
            "pathprof: error: {}: its segments are of depth 2, not 3 (-k 3); record a profile of depth 3 with `pathprof run --segments 3`\n",
            s(&seg)
        )
    );
    assert!(!out.exists(), "no output after an error");
    // A segment profile of another module.
    let (o2, w2) = (s(&out), s(&other));
    let o = pathprof(&[
        "run",
        "--mode",
        "ippp",
        "--interesting",
        &s(&seg),
        "-o",
        &o2,
        &w2,
    ]);
    assert_eq!(
        stderr(&o),
        format!(
            "pathprof: error: {}: a profile of another module than {}\n",
            s(&seg),
            w2
        )
    );
    let o = pathprof(&["run", "--mode", "path", "-k", "2", "-o", &o2, &s(&sort)]);
    assert_eq!(
        stderr(&o),
        "pathprof: error: -k applies to --mode ippp only\n"
    );
    // The depth from the profile, or the same given again; JSON out.
    let o = run(&[
        "--interesting",
        &s(&seg),
        "-k",
        "2",
        "--uninteresting",
        "count",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p = pathprof_profile::Profile::read(&out).unwrap();
    let sp = p.segments.unwrap();
    assert_eq!(sp.k, 2);
    let ip = sp.ippp.unwrap();
    assert_eq!(ip.policy, "count");
    assert!(ip.untested.is_empty());
    // `instrument` and `collect` give what `run` gives.
    let inst = dir.path().join("sort.ippp.wasm");
    let o = pathprof(&[
        "instrument",
        "--mode",
        "ippp",
        "--interesting",
        &s(&seg),
        "-o",
        &s(&inst),
        &s(&sort),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let meta = driver::read_meta(&std::fs::read(&inst).unwrap()).unwrap();
    assert!(meta.ippp.is_some());
}
