//! Tail calls and exceptions and segments, worked by hand
//! (docs/decisions.md#ips-tail-calls, docs/decisions.md#ips-exceptions): a
//! tail call or a throw ends the activation's subpath and closes every
//! segment open on it. A tail call's callee starts afresh and returns
//! where the tail caller would have; a throw's catcher starts a new
//! subpath along its catch edge, whether or not anything catches.

use std::collections::BTreeMap;

use pathprof_graph::cfg::{Cfg, EdgeId};
use pathprof_graph::interproc::{Callee, Event, FuncId, Supergraph, TailCall};
use pathprof_graph::ippp::{
    ips_profile, Ippp, Subpath, SubpathEnd, SubpathNumbering, SubpathStart,
};

use super::example::{b0, b1, call, e, func, start, F};
use super::props::spell;

/// f1: ENTRY -> A -> EXIT, A calls f2 (site 0); its handler H (catch edge
/// ENTRY -> H, edge 2), H -> EXIT. f2 calls f3 (site 1). f3: ENTRY -> C ->
/// D -> EXIT, C calls f5 (site 2); D tail-calls f5, or throws. f5: ENTRY
/// -> X -> EXIT. (f4 is not called.)
fn program() -> Supergraph {
    let (en, ex) = (Cfg::ENTRY, Cfg::EXIT);
    let mut f1 = func(
        &[(en, b0()), (b0(), ex), (en, b1()), (b1(), ex)],
        &[(b0(), F[1])],
    );
    f1.handlers.push(b1());
    let mut f3 = func(&[(en, b0()), (b0(), b1()), (b1(), ex)], &[(b0(), F[4])]);
    f3.tail_calls.push(TailCall {
        block: b1(),
        callee: Callee::Direct(F[4]),
    });
    f3.throws.push(b1());
    Supergraph {
        functions: vec![
            f1,
            func(&[(en, b0()), (b0(), ex)], &[(b0(), F[2])]),
            f3,
            func(&[(en, b0()), (b0(), ex)], &[]),
            func(&[(en, b0()), (b0(), ex)], &[]),
        ],
        entries: vec![F[0], F[4]],
    }
}

/// Into f3's block D: p1, p2, p3 (f3 calls f5 from C), pa (f5 returns).
fn to_d() -> Vec<Event> {
    vec![
        start(),
        e(0),
        call(0, 1),
        e(0),
        call(1, 2),
        e(0),
        call(2, 4),
        e(0),
        e(1),
        Event::Return,
        e(1), // C -> D
    ]
}

/// D tail-calls f5 (pb), which returns to f2, where f3 would have (pc);
/// f2 returns (p10), and f1 (p11).
fn tail_run() -> Vec<Event> {
    let mut events = to_d();
    events.extend([
        Event::TailCall { callee: F[4] },
        e(0),
        e(1),
        Event::Return,
        e(1),
        Event::Return,
        e(1),
        Event::Return,
    ]);
    events
}

/// D throws (pt), f1 catches at H (ph).
fn throw_run() -> Vec<Event> {
    let mut events = to_d();
    let handler = b1();
    events.extend([Event::Throw { unwind: 2, handler }, e(3), Event::Return]);
    events
}

/// D throws, and no profiled function catches.
fn escape_run() -> Vec<Event> {
    let mut events = to_d();
    events.push(Event::Escape);
    events
}

fn named(name: &str) -> (FuncId, Subpath) {
    let sp = |f, start, edges: &[usize], end| {
        let edges = edges.iter().map(|&i| EdgeId::new(i)).collect();
        (F[f], Subpath { start, edges, end })
    };
    use SubpathEnd::{Call, Exit, TailCall, Throw};
    use SubpathStart::{AfterCall, Entry};
    match name {
        "p1" => sp(0, Entry, &[0], Call(0)),
        "p2" => sp(1, Entry, &[0], Call(0)),
        "p3" => sp(2, Entry, &[0], Call(0)),
        "pa" | "pc" => sp(4, Entry, &[0, 1], Exit),
        "pb" => sp(2, AfterCall(0), &[1], TailCall),
        "pt" => sp(2, AfterCall(0), &[1], Throw),
        "p10" => sp(1, AfterCall(0), &[1], Exit),
        "p11" => sp(0, AfterCall(0), &[1], Exit),
        "ph" => sp(0, Entry, &[2, 3], Exit),
        _ => unreachable!(),
    }
}

fn wpp(events: &[Event]) -> Vec<(FuncId, Subpath)> {
    let num = SubpathNumbering::new(&program()).unwrap();
    let mut seg = pathprof_graph::ippp::Segmenter::new(&num, 1);
    (events.iter())
        .filter_map(|&e| seg.step(e).unwrap().subpath)
        .map(|r| spell(&num, r))
        .collect()
}

fn names(list: &str) -> Vec<(FuncId, Subpath)> {
    list.split(' ').map(named).collect()
}

#[test]
fn the_runs_are_the_wpps_by_hand() {
    assert_eq!(wpp(&tail_run()), names("p1 p2 p3 pa pb pc p10 p11"));
    assert_eq!(wpp(&throw_run()), names("p1 p2 p3 pa pt ph"));
    assert_eq!(wpp(&escape_run()), names("p1 p2 p3 pa pt"));
}

/// The depth-k segments of `events`, for k = 1, 2, 3, are `by_k`; the IPPP
/// walk, every one interesting, counts each as often.
fn check(events: &[Event], by_k: [&[&str]; 3]) {
    let num = SubpathNumbering::new(&program()).unwrap();
    for (k, want) in (1..=3).zip(by_k) {
        let want: BTreeMap<Vec<(FuncId, Subpath)>, u64> =
            want.iter().map(|s| (names(s), 1)).collect();
        let profile = ips_profile(&num, k, events).unwrap();
        let spelt: BTreeMap<_, _> = profile
            .iter()
            .map(|(s, &c)| (s.iter().map(|&r| spell(&num, r)).collect(), c))
            .collect();
        assert_eq!(spelt, want, "k = {k}");
        let interesting: Vec<_> = profile.keys().cloned().collect();
        let ip = Ippp::new(&num, k, &interesting).unwrap();
        let counts = ip.walk(events).unwrap();
        assert!(counts.uninteresting.is_empty(), "k = {k}");
        assert_eq!(ip.field_profile(&counts).unwrap(), profile, "k = {k}");
    }
}

#[test]
fn a_tail_call_closes_the_segments_open_on_its_activation() {
    // p3 enters f5 and comes back to f3, whose next subpath ends in the
    // tail call: the segment closes there, as does p2's, at depth 1 in f3
    // (k >= 2). pb opens none; pc belongs to none, nor does p10 (p2's
    // segment closed in f3).
    check(
        &tail_run(),
        [
            &["p1 p2", "p2 p3", "p3 pa pb"],
            &["p1 p2 p3", "p2 p3 pa pb", "p3 pa pb"],
            &["p1 p2 p3 pa pb", "p2 p3 pa pb", "p3 pa pb"],
        ],
    );
}

#[test]
fn a_throw_closes_the_segments_open_on_the_thrower_caught_or_not() {
    // The activations the exception leaves (f3's callers) have none open;
    // f1's handler subpath belongs to none.
    let by_k: [&[&str]; 3] = [
        &["p1 p2", "p2 p3", "p3 pa pt"],
        &["p1 p2 p3", "p2 p3 pa pt", "p3 pa pt"],
        &["p1 p2 p3 pa pt", "p2 p3 pa pt", "p3 pa pt"],
    ];
    check(&throw_run(), by_k);
    check(&escape_run(), by_k);
}

#[test]
fn exits_where_control_cannot_take_them_are_rejected() {
    let num = SubpathNumbering::new(&program()).unwrap();
    let at_d = to_d().len();
    let bad = [
        // f3 cannot tail-call f4.
        (at_d, Event::TailCall { callee: F[3] }),
        // f1's A is no handler.
        (
            at_d,
            Event::Throw {
                unwind: 2,
                handler: b0(),
            },
        ),
        // Nothing catches beyond the outermost activation.
        (
            at_d,
            Event::Throw {
                unwind: 3,
                handler: b1(),
            },
        ),
        // f5's X does not throw.
        (at_d - 3, Event::Escape),
    ];
    for (at, event) in bad {
        let mut events = to_d();
        events.truncate(at);
        events.push(event);
        assert!(ips_profile(&num, 1, &events).is_err(), "{event:?}");
    }
}
