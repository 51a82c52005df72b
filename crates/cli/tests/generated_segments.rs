//! Issue 31's segment checks on generated modules (`common::callgen`:
//! direct, indirect and tail calls, recursion, loops, branches and
//! exceptions), not only on the C and WAT fixtures: for k = 1, 2 and 3,
//! - `run --segments K` records exactly the depth-k segments the oracle
//!   cuts from a trace, of a training call and of a field call of `main`
//!   ([`crate::segments_oracle::check`]);
//! - `--mode ippp`, given the training call's recorded segments as the
//!   interesting set, counts each of them in the field call as often as
//!   the oracle finds it there, under every `--uninteresting` policy:
//!   under `record` the other segments too, cut where the
//!   instrumentation cuts them ([`crate::ippp_oracle::check_run`]); under
//!   `count` their closings in the one counter; under `ignore` nothing
//!   else;
//! - `main`'s results, output and exit are those of the uninstrumented
//!   module, traced, recorded and counted alike.

use crate::common::{callgen, programs, segments};

use std::collections::BTreeSet;

use pathprof::driver::{self, Technique};
use pathprof::ippp::IpppOptions;
use pathprof_graph::ippp::SubpathEnd;
use pathprof_graph::testing::ippp::ips;
use pathprof_profile::segments::SegmentCount;
use pathprof_profile::Profile;
use pathprof_runner::RunOptions;
use pathprof_techniques::ppp::Policy;
use programs::Invocation;
use segments::{ids, spell, spelt, Module, Spelt};

/// The seeds checked: 60 modules, each of 2 to 5 functions (about 15 s
/// of CPU in the dev profile).
const SEEDS: std::ops::Range<u64> = 0..60;

/// `main`'s argument in the training call and in the field call. The
/// generated branches test the argument modulo 2, 3 and 4; these two
/// differ modulo 4 only, so that the field call takes some of the
/// training call's segments (673 of them ran over the seeds) and
/// others too.
const TRAIN: &str = "0";
const FIELD: &str = "6";

fn main_of(arg: &str) -> Invocation {
    Invocation::Call {
        export: "main".into(),
        args: vec![arg.into()],
    }
}

/// What the checks saw, to make sure they saw something.
#[derive(Default)]
struct Seen {
    /// Field runs counted, per policy.
    runs: usize,
    /// Interesting segments that ran in the field call.
    interesting_ran: usize,
    /// Of those, through a recursive call (a subpath ending in a call
    /// followed by one of the same function).
    recursive: usize,
    /// Other segments' closings, under `count`.
    uninteresting: u64,
}

/// Whether the segment enters the function it calls from.
fn recursive(s: &Spelt) -> bool {
    s.windows(2)
        .any(|w| matches!(w[0].1.end, SubpathEnd::Call(_)) && w[0].0 == w[1].0)
}

/// `main`'s outcome without its counters and trace.
fn observed(o: &programs::Outcome) -> (&pathprof_runner::Exit, &[u8], &[String]) {
    (&o.exit, &o.stdout, &o.results)
}

/// The training call's depth-`k` segments, recorded; its results must
/// be the uninstrumented call's.
fn train(m: &Module, plain: &programs::Outcome, k: usize) -> Profile {
    let args = [TRAIN.to_string()];
    let rec = m
        .prepared
        .record(k, RunOptions::captured(["module"]), Some(("main", &args)))
        .unwrap_or_else(|e| panic!("{} k={k}: {e:#}", m.name));
    let results: Vec<String> = rec.results.iter().map(|v| v.to_string()).collect();
    assert_eq!(
        (&rec.exit, &results[..]),
        (&plain.exit, &plain.results[..]),
        "{} k={k}: recording changed the training call",
        m.name
    );
    rec.profile
}

/// One module: both calls recorded at depths 1 to 3, and the field call
/// counted under each policy with the training call's segments.
fn check(engine: &wasmtime::Engine, seed: u64, seen: &mut Seen) {
    let text = callgen::module(seed);
    let bytes = wat::parse_str(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
    let m = segments::module(engine, &format!("seed {seed}"), &bytes).unwrap();
    let (train_inv, field_inv) = (main_of(TRAIN), main_of(FIELD));
    for inv in [&train_inv, &field_inv] {
        crate::segments_oracle::check(&m, inv);
    }
    let plain_train = programs::run(engine, &bytes, &train_inv, false);
    let field = Field {
        plain: programs::run(engine, &bytes, &field_inv, false),
        oracle: crate::ippp_oracle::oracle(&m, &field_inv),
    };
    let traced = observed(&field.oracle.run);
    assert_eq!(traced, observed(&field.plain), "{}: traced", m.name);
    for k in 1..=3 {
        let tested = train(&m, &plain_train, k).segments.unwrap().segments;
        let profiled: Vec<BTreeSet<Spelt>> = [Policy::Record, Policy::Count, Policy::Ignore]
            .into_iter()
            .map(|policy| count(engine, &m, &field, &tested, k, policy, seen))
            .collect();
        assert!(
            profiled.iter().all(|p| *p == profiled[0]),
            "{} k={k}: the policy changed which segments are profiled",
            m.name
        );
    }
}

/// The field call: uninstrumented, and the oracle's run of it.
struct Field {
    plain: programs::Outcome,
    oracle: crate::ippp_oracle::Oracle,
}

/// The field call counted by IPPP with `tested` interesting, checked
/// against the oracle under `policy`; the segments it profiled.
fn count(
    engine: &wasmtime::Engine,
    m: &Module,
    field: &Field,
    tested: &[SegmentCount],
    k: usize,
    policy: Policy,
    seen: &mut Seen,
) -> BTreeSet<Spelt> {
    let (num, o) = (m.prepared.numbering(), &field.oracle);
    let at = format!("{} k={k} {policy:?}", m.name);
    let opts = driver::Options {
        ippp: IpppOptions {
            k,
            interesting: tested.iter().map(ids).collect(),
            policy,
        },
        ..Default::default()
    };
    let (out, profile) = programs::profiled_run(engine, &m.bytes, Technique::Ippp, &opts, &o.inv);
    assert_eq!(
        observed(&out),
        observed(&field.plain),
        "{at}: outcome changed"
    );
    let sp = profile.segments.as_ref().expect("a segment profile");
    let summary = sp.ippp.as_ref().expect("an IPPP summary");
    // callgen's table is static: every indirect call resolves.
    assert_eq!(summary.through_indirect, 0, "{at}");
    let kept: BTreeSet<Spelt> = sp.segments.iter().map(|s| spell(num, s)).collect();
    let (got, all) = (spelt(num, &sp.segments), ips(&o.subpaths, k));
    for s in &kept {
        let wrong = "an interesting segment counted wrong";
        assert_eq!(got.get(s), all.get(s), "{at}: {wrong}: {s:?}");
    }
    match policy {
        Policy::Record => {
            let chosen: Vec<Spelt> = tested.iter().map(|s| spell(num, s)).collect();
            let mut covered = crate::ippp_oracle::Covered::default();
            let (indirect, direct) = (&[][..], &chosen[..]);
            crate::ippp_oracle::check_run(m, &profile, o, k, (indirect, direct), &at, &mut covered);
            for s in kept.iter().filter(|s| all.contains_key(*s)) {
                seen.interesting_ran += 1;
                seen.recursive += usize::from(recursive(s));
            }
        }
        Policy::Count => {
            let (cut, truncated) = crate::ippp_oracle::cut(&o.subpaths, k, &kept, sp);
            let others = cut.iter().filter(|(s, _)| !kept.contains(*s));
            let want = others.map(|(_, c)| c).sum::<u64>() + truncated.values().sum::<u64>();
            assert_eq!(
                summary.uninteresting, want,
                "{at}: other segments' closings"
            );
            assert!(summary.untested.is_empty(), "{at}: recorded under count");
            seen.uninteresting += want;
        }
        Policy::Ignore => {
            let others = (
                summary.uninteresting,
                summary.truncated,
                summary.untested.len(),
            );
            assert_eq!(others, (0, 0, 0), "{at}: counted what it ignores");
        }
    }
    seen.runs += 1;
    kept
}

#[test]
fn generated_modules_record_and_count_the_oracles_segments() {
    let engine = programs::engine();
    let mut seen = Seen::default();
    for seed in SEEDS {
        check(&engine, seed, &mut seen);
    }
    let modules = (SEEDS.end - SEEDS.start) as usize;
    eprintln!(
        "{modules} modules, {} IPPP runs: {} interesting segments ran ({} through recursion), {} closings of others counted",
        seen.runs, seen.interesting_ran, seen.recursive, seen.uninteresting
    );
    assert_eq!(seen.runs, 9 * modules);
    assert!(seen.interesting_ran >= 400, "{}", seen.interesting_ran);
    assert!(seen.recursive >= 200, "{}", seen.recursive);
    assert!(seen.uninteresting >= 1000, "{}", seen.uninteresting);
}
