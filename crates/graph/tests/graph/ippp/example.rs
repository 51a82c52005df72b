//! The WPP example of thesis 3.4.2, made a program: five functions whose
//! run gives exactly the subpaths p1..p10 (and p11, `f1`'s continuation
//! after `f2` returns, which the thesis' substring leaves out), with the
//! depth-1 IPS the thesis lists and depths 2 and 3 worked by hand.

use pathprof_graph::cfg::{Cfg, EdgeId, NodeId};
use pathprof_graph::interproc::{
    CallSite, CallSiteId, Callee, Event, FuncId, Function, Supergraph,
};
use pathprof_graph::ippp::{
    ips_profile, Segmenter, Subpath, SubpathEnd, SubpathNumbering, SubpathRef, SubpathStart,
};

pub(super) const F: [FuncId; 5] = [
    FuncId::from_u32(0),
    FuncId::from_u32(1),
    FuncId::from_u32(2),
    FuncId::from_u32(3),
    FuncId::from_u32(4),
];
/// Block ids: the first block of every function is node 2, the second 3.
pub(super) fn b0() -> NodeId {
    NodeId::new(2)
}
pub(super) fn b1() -> NodeId {
    NodeId::new(3)
}

pub(super) fn func(edges: &[(NodeId, NodeId)], calls: &[(NodeId, FuncId)]) -> Function {
    let blocks = edges.iter().map(|e| e.0.index().max(e.1.index()) + 1).max();
    Function::new(
        Cfg::from_edges(blocks.unwrap_or(2), edges),
        calls
            .iter()
            .map(|&(block, f)| CallSite {
                block,
                callee: Callee::Direct(f),
            })
            .collect(),
    )
}

/// f1: ENTRY -> A -> EXIT, A calls f2 (site 0). f2: the same, calling f3
/// (site 1). f3: ENTRY -> C -> D -> EXIT, C calls f4 (site 2), D calls f5
/// (site 3). f4: ENTRY -> L, L -> M, M -> L (the backedge), L -> EXIT.
/// f5: ENTRY -> X -> EXIT.
pub(super) fn program() -> Supergraph {
    let (en, ex) = (Cfg::ENTRY, Cfg::EXIT);
    Supergraph {
        functions: vec![
            func(&[(en, b0()), (b0(), ex)], &[(b0(), F[1])]),
            func(&[(en, b0()), (b0(), ex)], &[(b0(), F[2])]),
            func(
                &[(en, b0()), (b0(), b1()), (b1(), ex)],
                &[(b0(), F[3]), (b1(), F[4])],
            ),
            func(&[(en, b0()), (b0(), b1()), (b1(), b0()), (b0(), ex)], &[]),
            func(&[(en, b0()), (b0(), ex)], &[]),
        ],
        entries: vec![F[0]],
    }
}

/// Edge `i` of the current function.
pub(super) fn e(i: usize) -> Event {
    Event::Edge(EdgeId::new(i))
}

/// Call site `s` enters function `f`.
pub(super) fn call(s: usize, f: usize) -> Event {
    Event::Call {
        site: Some(CallSiteId::new(s)),
        callee: F[f],
    }
}

/// The host enters f1.
pub(super) fn start() -> Event {
    Event::Call {
        site: None,
        callee: F[0],
    }
}

pub(super) fn run() -> Vec<Event> {
    vec![
        start(),
        e(0),       // f1: ENTRY -> A
        call(0, 1), // p1 ends
        e(0),       // f2: ENTRY -> B
        call(1, 2), // p2 ends
        e(0),       // f3: ENTRY -> C
        call(2, 3), // p3 ends
        e(0),       // f4: ENTRY -> L
        e(1),       // L -> M
        e(2),       // M -> L: p4 ends
        e(1),
        e(2),          // p5 ends
        e(3),          // L -> EXIT
        Event::Return, // p6 ends
        e(1),          // f3: C -> D
        call(3, 4),    // p7 ends
        e(0),
        e(1),
        Event::Return, // p8 ends
        e(2),          // f3: D -> EXIT
        Event::Return, // p9 ends
        e(1),
        Event::Return, // p10 ends
        e(1),
        Event::Return, // p11 ends
    ]
}

/// p1..p11 spelt out by hand.
fn named() -> Vec<(&'static str, FuncId, Subpath)> {
    let sp = |start, edges: &[usize], end| Subpath {
        start,
        edges: edges.iter().map(|&i| EdgeId::new(i)).collect(),
        end,
    };
    use SubpathEnd::{Backedge, Call, Exit};
    use SubpathStart::{AfterCall, Entry, LoopHead};
    vec![
        ("p1", F[0], sp(Entry, &[0], Call(0))),
        ("p2", F[1], sp(Entry, &[0], Call(0))),
        ("p3", F[2], sp(Entry, &[0], Call(0))),
        ("p4", F[3], sp(Entry, &[0, 1], Backedge(b1()))),
        ("p5", F[3], sp(LoopHead(b0()), &[1], Backedge(b1()))),
        ("p6", F[3], sp(LoopHead(b0()), &[3], Exit)),
        ("p7", F[2], sp(AfterCall(0), &[1], Call(1))),
        ("p8", F[4], sp(Entry, &[0, 1], Exit)),
        ("p9", F[2], sp(AfterCall(1), &[2], Exit)),
        ("p10", F[1], sp(AfterCall(0), &[1], Exit)),
        ("p11", F[0], sp(AfterCall(0), &[1], Exit)),
    ]
}

fn name(num: &SubpathNumbering, r: SubpathRef) -> &'static str {
    let decoded = num.decode(r).unwrap();
    named()
        .into_iter()
        .find(|(_, f, p)| *f == r.func && *p == decoded)
        .map(|(n, _, _)| n)
        .expect("a named subpath")
}

#[test]
fn the_run_is_the_thesis_wpp() {
    let num = SubpathNumbering::new(&program()).unwrap();
    let mut seg = Segmenter::new(&num, 1);
    let wpp: Vec<&str> = run()
        .into_iter()
        .filter_map(|e| seg.step(e).unwrap().subpath)
        .map(|r| name(&num, r))
        .collect();
    let expected: Vec<String> = (1..=11).map(|i| format!("p{i}")).collect();
    assert_eq!(wpp, expected);
}

/// Ball-Larus ids by hand. f4's call-cut DAG: ENTRY->L (Val 0),
/// L->M (0), L->EXIT (1), M->EXIT (dummy, 0), ENTRY->L (dummy): NumPaths
/// L = 2, so the dummy's Val is 2. p4 = 0, p5 = 2, p6 = 3 (and 1, ENTRY L
/// EXIT, is not in the run). f3 split at its calls: ENTRY->C, C->EXIT
/// (the call), ENTRY->r0 (the return site) -> D -> EXIT (the second call),
/// ENTRY->r1 -> EXIT; ENTRY's three successors have one path each, so p3
/// = 0, p7 = 1, p9 = 2.
#[test]
fn subpath_ids_by_hand() {
    let num = SubpathNumbering::new(&program()).unwrap();
    let mut seg = Segmenter::new(&num, 1);
    let ids: Vec<(usize, u64)> = run()
        .into_iter()
        .filter_map(|e| seg.step(e).unwrap().subpath)
        .map(|r| (r.func.index(), r.id))
        .collect();
    let f3: Vec<u64> = ids.iter().filter(|x| x.0 == 2).map(|x| x.1).collect();
    let f4: Vec<u64> = ids.iter().filter(|x| x.0 == 3).map(|x| x.1).collect();
    assert_eq!(f3, [0, 1, 2]);
    assert_eq!(f4, [0, 2, 3]);
    assert_eq!(num.functions[3].total(), 4);
    assert_eq!(num.functions[2].total(), 3);
}

/// The IPS of depth `k`, in the order they close, by name.
fn segments(k: usize) -> Vec<String> {
    let num = SubpathNumbering::new(&program()).unwrap();
    let mut seg = Segmenter::new(&num, k);
    let mut out = Vec::new();
    for e in run() {
        for ips in seg.step(e).unwrap().segments {
            out.push(ips.iter().map(|&r| name(&num, r)).collect::<String>());
        }
    }
    out
}

/// Depth 1: the thesis' list. p1p2 closes when p2 calls f3 (depth 2);
/// p2p3 when p3 calls f4; p3p4 at p4's backedge; p7p8p9 when p9 returns
/// from f3, the function it started in.
#[test]
fn depth_1_is_the_thesis_list() {
    assert_eq!(segments(1), ["p1p2", "p2p3", "p3p4", "p7p8p9"]);
}

/// Depth 2: p1p2 goes on into f3 (depth 2) and stops at p3's call (depth
/// 3); p2p3 goes on into f4 and stops at p4's backedge, which also
/// closes p3p4; p7p8p9 as at depth 1 (f5 calls nothing).
#[test]
fn depth_2_by_hand() {
    assert_eq!(segments(2), ["p1p2p3", "p2p3p4", "p3p4", "p7p8p9"]);
}

/// Depth 3: p1p2p3 enters f4 (depth 3) and stops at p4's
/// backedge, which closes all three segments open at that moment.
#[test]
fn depth_3_by_hand() {
    assert_eq!(segments(3), ["p1p2p3p4", "p2p3p4", "p3p4", "p7p8p9"]);
}

#[test]
fn profile_counts_each_segment_once() {
    let num = SubpathNumbering::new(&program()).unwrap();
    let profile = ips_profile(&num, 1, &run()).unwrap();
    assert_eq!(profile.len(), 4);
    assert!(profile.values().all(|&c| c == 1));
}

/// No block of the example throws: a throw is not where control can be.
#[test]
fn throws_where_no_block_throws_are_rejected() {
    let num = SubpathNumbering::new(&program()).unwrap();
    let mut events = run();
    events.truncate(2);
    events.push(Event::Throw {
        unwind: 0,
        handler: b0(),
    });
    assert!(ips_profile(&num, 1, &events).is_err());
}
