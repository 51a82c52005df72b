//! Selective inlining for interesting segments (`pathprof inline`, thesis
//! 3.4.4 step 2) checked on real runs: every C fixture at -O0 and -O2 and
//! every WAT fixture export, for k = 1, 2 and 3, with every segment the
//! runs recorded interesting.
//!
//! The oracle shares no code with the planner or the rewriter. It reads
//! the inlining contexts off the recorded segments themselves (each call a
//! segment makes below depth k, as a chain of call sites from the
//! segment's start function) and replays a trace of the *original* run:
//! an activation entered through a call whose chain from the nearest real
//! frame is such a context runs inlined, any other one is a real frame.
//! What must hold, exactly:
//! - each function of the inlined module is entered as often as the
//!   oracle counts real frames of it in the original run;
//! - the output and the exit are the original's.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::programs::{self, Invocation};
use common::segments::{c_modules, module, record, spell, wat_recorded, Module, Spelt};
use pathprof::driver::Technique;
use pathprof_graph::interproc::{Callee, Event, FuncId};
use pathprof_graph::ippp::SubpathEnd;
use pathprof_wasm::supergraph::events;

/// A context: a start function and the chain of (local call, callee)
/// from it.
type Context = (FuncId, Vec<(usize, FuncId)>);

/// The contexts the segments `spelt` pass: every prefix of the chain of
/// calls a segment makes while it is less than `k` deep.
fn contexts(spelt: &[Spelt], k: usize) -> BTreeSet<Context> {
    let mut out = BTreeSet::new();
    for s in spelt {
        let start = s[0].0;
        let mut chain: Vec<(usize, FuncId)> = Vec::new();
        for (j, (_, p)) in s.iter().enumerate() {
            let Some((next, _)) = s.get(j + 1) else {
                break;
            };
            match p.end {
                SubpathEnd::Call(i) if chain.len() < k => {
                    chain.push((i, *next));
                    out.insert((start, chain.clone()));
                }
                SubpathEnd::Exit => {
                    chain.pop();
                }
                _ => break,
            }
        }
    }
    out
}

/// One activation of the original run's replay.
struct Frame {
    func: FuncId,
    /// The real frame it runs in and its chain from there.
    context: Context,
    /// Entered from outside the profiled code.
    hosted: bool,
}

/// Per function, how many real frames of it the original run's trace
/// makes when the calls of `contexts` are inlined. Indirect calls stay
/// calls.
fn real_frames(m: &Module, trace: &[(u32, u32)], contexts: &BTreeSet<Context>) -> Vec<u64> {
    let msg = m.msg();
    let sg = &msg.supergraph;
    let mut entries = vec![0u64; sg.functions.len()];
    let mut stack: Vec<Frame> = Vec::new();
    for e in events(msg, trace).unwrap() {
        match e {
            Event::Call { site, callee } => {
                let inlined = site.and_then(|s| {
                    let (f, i) = msg.site(s.index());
                    let top = stack.last().expect("a call from a frame");
                    assert_eq!(top.func, f);
                    if matches!(sg.functions[f.index()].calls[i].callee, Callee::Indirect(_)) {
                        return None;
                    }
                    let (root, mut chain) = top.context.clone();
                    chain.push((i, callee));
                    let c = (root, chain);
                    contexts.contains(&c).then_some(c)
                });
                let context = inlined.unwrap_or_else(|| {
                    entries[callee.index()] += 1;
                    (callee, Vec::new())
                });
                stack.push(Frame {
                    func: callee,
                    context,
                    hosted: site.is_none(),
                });
            }
            Event::Return => {
                stack.pop();
            }
            // No segment passes a tail call, nor is one inlined from path
            // profiles: the callee runs in a real frame of its own.
            Event::TailCall { callee } => {
                let hosted = stack.pop().is_some_and(|f| f.hosted);
                entries[callee.index()] += 1;
                stack.push(Frame {
                    func: callee,
                    context: (callee, Vec::new()),
                    hosted,
                });
            }
            Event::Throw { unwind, .. } | Event::ImportThrow { unwind, .. } => {
                stack.truncate(stack.len() - unwind)
            }
            // Caught by what entered the nearest frame from outside.
            Event::Escape => while stack.pop().is_some_and(|f| !f.hosted) {},
            Event::Edge(_) => {}
        }
    }
    entries
}

/// Per function, how often a run's trace enters it (by a call or a tail
/// call).
fn entries(m: &Module, trace: &[(u32, u32)]) -> Vec<u64> {
    let msg = m.msg();
    let mut entries = vec![0u64; msg.supergraph.functions.len()];
    for e in events(msg, trace).unwrap() {
        if let Event::Call { callee, .. } | Event::TailCall { callee } = e {
            entries[callee.index()] += 1;
        }
    }
    entries
}

/// A run of the inlined module `im` against the original's run: output,
/// exit, and each function's entries against the oracle's real frames.
fn compare(
    m: &Module,
    im: &Module,
    (inv, original): (&Invocation, &programs::Outcome),
    contexts: &BTreeSet<Context>,
    at: &str,
    covered: &mut Covered,
) {
    let run = programs::run_compiled(&im.traced, inv, true);
    assert_eq!(run.stdout, original.stdout, "{at}: output changed");
    assert_eq!(run.exit, original.exit, "{at}: exit changed");
    let want = real_frames(m, &original.trace, contexts);
    let got = entries(im, &run.trace);
    assert_eq!(got, want, "{at}: entries per function");
    covered.inlined_entries +=
        entries(m, &original.trace).iter().sum::<u64>() - got.iter().sum::<u64>();
    covered.runs += 1;
}

#[derive(Default)]
struct Covered {
    runs: usize,
    sites: usize,
    /// Entries the inlined module does not make.
    inlined_entries: u64,
}

impl Covered {
    /// What the threads of [`c_modules`] covered, together.
    fn sum(parts: Vec<Covered>) -> Covered {
        parts.into_iter().fold(Covered::default(), |a, b| Covered {
            runs: a.runs + b.runs,
            sites: a.sites + b.sites,
            inlined_entries: a.inlined_entries + b.inlined_entries,
        })
    }
}

fn check(engine: &wasmtime::Engine, m: &Module, invs: &[Invocation], covered: &mut Covered) {
    let num = m.prepared.numbering();
    let originals: Vec<programs::Outcome> = invs
        .iter()
        .map(|inv| programs::run_compiled(&m.traced, inv, true))
        .collect();
    for k in 1..=3 {
        let mut seen = BTreeMap::new();
        for inv in invs {
            let p = record(m, inv, k);
            for s in p.segments.expect("a segment profile").segments {
                seen.entry(spell(num, &s)).or_insert(s);
            }
        }
        let ips: Vec<_> = seen.values().map(common::segments::ids).collect();
        let spelt: Vec<Spelt> = seen.into_keys().collect();
        let contexts = contexts(&spelt, k);
        let bound = pathprof::driver::Options::default()
            .ball_larus
            .truncate_above;
        let inlined = pathprof::inline::inline(&m.bytes, &ips, k, bound)
            .unwrap_or_else(|e| panic!("{} k={k}: {e:#}", m.name));
        let name = format!("{}.inlined{k}", m.name);
        let im = module(engine, &name, &inlined.bytes).expect("the inlined module records");
        covered.sites += inlined.sites;
        for (inv, original) in invs.iter().zip(&originals) {
            let at = format!("{} {inv:?} k={k}", m.name);
            compare(m, &im, (inv, original), &contexts, &at, covered);
        }
    }
}

#[test]
fn c_programs_inlined_enter_only_their_real_frames() {
    let engine = crate::common::programs::engine();
    let covered = Covered::sum(c_modules(&engine, |m, invs, covered| {
        check(&engine, m, invs, covered)
    }));
    eprintln!(
        "{} runs, {} call sites inlined, {} entries inlined away",
        covered.runs, covered.sites, covered.inlined_entries
    );
    assert!(covered.runs >= 180, "only {} runs checked", covered.runs);
    assert!(covered.sites > 1000, "only {} sites inlined", covered.sites);
    assert!(covered.inlined_entries > 10_000);
}

#[test]
fn wat_fixtures_inlined_enter_only_their_real_frames() {
    let engine = crate::common::programs::engine();
    let mut covered = Covered::default();
    wat_recorded(&engine, |m, invs| check(&engine, m, invs, &mut covered));
    eprintln!(
        "{} runs, {} call sites inlined, {} entries inlined away",
        covered.runs, covered.sites, covered.inlined_entries
    );
    assert!(covered.runs >= 60, "only {} WAT runs checked", covered.runs);
    assert!(covered.sites >= 9, "only {} sites inlined", covered.sites);
}

/// Fig. 3.15 (b): inlining from intraprocedural path profiles of the
/// runs. The oracle's contexts: every chain of at most `k` direct calls
/// the runs' traces made, from any function (`f` calls `g` at site `i`,
/// `g` calls `h` at `j`, ...), whatever frame made them. Only runs that
/// return are taken: a run that exits leaves paths unfinished, whose calls
/// the profile does not show.
fn check_executed(
    engine: &wasmtime::Engine,
    m: &Module,
    invs: &[Invocation],
    covered: &mut Covered,
) {
    let runs: Vec<(&Invocation, programs::Outcome)> = invs
        .iter()
        .map(|inv| (inv, programs::run_compiled(&m.traced, inv, true)))
        .filter(|(_, o)| !o.exit.is_abrupt())
        .collect();
    let profiles: Vec<pathprof_profile::Profile> = runs
        .iter()
        .map(|(inv, _)| {
            let opts = Default::default();
            programs::profiled_run(engine, &m.bytes, Technique::Path, &opts, inv).1
        })
        .collect();
    let profiles: Vec<&pathprof_profile::Profile> = profiles.iter().collect();
    let msg = m.msg();
    let mut made: BTreeMap<FuncId, BTreeSet<(usize, FuncId)>> = BTreeMap::new();
    for (_, o) in &runs {
        for e in events(msg, &o.trace).unwrap() {
            if let Event::Call {
                site: Some(s),
                callee,
            } = e
            {
                let (f, i) = msg.site(s.index());
                let call = &msg.supergraph.functions[f.index()].calls[i];
                if matches!(call.callee, Callee::Direct(_)) {
                    made.entry(f).or_default().insert((i, callee));
                }
            }
        }
    }
    for k in 1..=2 {
        let mut contexts = BTreeSet::new();
        for &f in made.keys() {
            let mut chains = vec![(f, Vec::new())];
            while let Some((at, chain)) = chains.pop() {
                if chain.len() == k {
                    continue;
                }
                for &(i, g) in made.get(&at).into_iter().flatten() {
                    let mut longer: Vec<(usize, FuncId)> = chain.clone();
                    longer.push((i, g));
                    contexts.insert((f, longer.clone()));
                    chains.push((g, longer));
                }
            }
        }
        let inlined = pathprof::inline::inline_executed(&m.bytes, &profiles, k)
            .unwrap_or_else(|e| panic!("{} k={k}: {e:#}", m.name));
        let im = module(engine, &format!("{}.executed{k}", m.name), &inlined.bytes)
            .expect("the inlined module records");
        covered.sites += inlined.sites;
        for (inv, original) in &runs {
            let at = format!("{} {inv:?} k={k}, from path profiles", m.name);
            compare(m, &im, (inv, original), &contexts, &at, covered);
        }
    }
}

#[test]
fn c_programs_inlined_from_path_profiles_enter_only_their_real_frames() {
    let engine = crate::common::programs::engine();
    let covered = Covered::sum(c_modules(&engine, |m, invs, covered| {
        check_executed(&engine, m, invs, covered)
    }));
    eprintln!(
        "{} runs, {} call sites inlined",
        covered.runs, covered.sites
    );
    assert!(covered.runs >= 80, "only {} runs checked", covered.runs);
    assert!(covered.sites > 1000, "only {} sites inlined", covered.sites);
}

/// `pathprof inline` as a user runs it, and the errors a user can make.
#[test]
fn inline_command_and_errors() {
    use common::bin::{pathprof, stderr};
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &std::path::Path| p.display().to_string();
    let sort = s(&programs::root().join("tests/fixtures/c/build/sort.O2.wasm"));
    let other = s(&programs::root().join("tests/fixtures/c/build/sort.O0.wasm"));
    let file = |name: &str| s(&dir.path().join(name));
    let (seg, path, edge, out) = (
        file("seg.profile"),
        file("path.profile"),
        file("edge.profile"),
        file("sort.inlined.wasm"),
    );
    let args = ["--", "-q", "3", "1"];
    let run = |a: &[&str]| pathprof(&[&["run"][..], a, &args].concat());
    let original = run(&["--segments", "2", "-o", &seg, &sort]);
    assert!(original.status.success(), "{}", stderr(&original));
    for (mode, f) in [("path", &path), ("edge", &edge)] {
        let o = run(&["--mode", mode, "-o", f, &sort]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let inline = |extra: &[&str]| pathprof(&[&["inline", "-o", &out][..], extra].concat());
    let either = "give either segment profiles (`run --segments K`) or path profiles (`run --mode path`), not both or another kind";
    let refused: [(Vec<&str>, String); 6] = [
        (vec![&path, &seg], format!("{seg}: {either}")),
        (
            vec![&seg, &path],
            format!("{path}: not a segment profile (make one with `pathprof run --segments K`)"),
        ),
        (vec![&edge], format!("{edge}: {either}")),
        (
            vec![&path, &other],
            format!("{path}: a profile of another module than {other}"),
        ),
        (
            vec![&seg, &other],
            format!("{seg}: a profile of another module than {other}"),
        ),
        (
            vec![&seg, "-k", "1"],
            format!("{seg}: its segments are of depth 2, not 1 (-k 1); record a profile of depth 1 with `pathprof run --segments 1`"),
        ),
    ];
    for (given, want) in refused {
        let mut a = Vec::new();
        for g in &given {
            if g.ends_with(".profile") {
                a.extend(["--interesting", g]);
            } else {
                a.push(g);
            }
        }
        if !a.contains(&other.as_str()) {
            a.push(&sort);
        }
        let o = inline(&a);
        assert_eq!(stderr(&o), format!("pathprof: error: {want}\n"), "{a:?}");
        assert!(!o.status.success());
        assert!(
            !std::path::Path::new(&out).exists(),
            "no output after an error"
        );
    }
    let o = inline(&["--interesting", &path, "-k", "17", &sort]);
    assert_eq!(
        stderr(&o),
        "pathprof: error: -k 17: the depth must be 1 to 16\n"
    );
    let o = pathprof(&["inline", "--interesting", &seg, "-o", &sort, &sort]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("the output would replace the input module"),
        "{e}"
    );
    // From the segments; the inlined module runs as the original did, and
    // profiles.
    let o = inline(&["--interesting", &seg, &sort]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p = file("inlined.profile");
    let r = run(&["--mode", "path", "-o", &p, &out]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert_eq!(r.stdout, original.stdout);
    // From the path profile (Fig. 3.15 (b)), which inlines more.
    let sites = |o: &std::process::Output| -> usize {
        let e = stderr(o);
        let n = e.strip_prefix("pathprof: inlined ");
        let n = n
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok());
        n.unwrap_or_else(|| panic!("{e}"))
    };
    let from_segments = sites(&o);
    let o = inline(&["--interesting", &path, "-k", "2", &sort, "--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(sites(&o) > from_segments, "{}", stderr(&o));
    let r = run(&["--mode", "none", &out]);
    assert_eq!(r.stdout, original.stdout);
}
