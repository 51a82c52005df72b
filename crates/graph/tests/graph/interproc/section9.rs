//! Section 9's language features on small programs worked by hand: a
//! throw caught up the stack, a tail call whose callee returns to the
//! tail caller's caller, and an indirect call expanded into cases.
//!
//! Both use `main: ENTRY -> A -> B -> EXIT` where block A calls `f`.

use pathprof_graph::cfg::{Cfg, EdgeId, NodeId};
use pathprof_graph::interproc::{
    CallSite, CallSiteId, Callee, Event, FuncId, Function, Interproc, Linear, Mode, PathStep,
    Supergraph, TailCall,
};

const MAIN: FuncId = FuncId::from_u32(0);
const F: FuncId = FuncId::from_u32(1);
const G: FuncId = FuncId::from_u32(2);

fn e(i: usize) -> EdgeId {
    EdgeId::new(i)
}

/// `ENTRY -> X -> EXIT`, X being node 2.
fn straight() -> Cfg {
    let mut cfg = Cfg::new();
    let x = cfg.add_node();
    cfg.add_edge(Cfg::ENTRY, x);
    cfg.add_edge(x, Cfg::EXIT);
    cfg
}

/// `main` (edges: 0 ENTRY->A, 1 A->B, 2 B->EXIT, then `extra`), A calling f.
fn main_calling_f(extra: &[(usize, usize)]) -> Function {
    let mut cfg = Cfg::new();
    let (a, b) = (cfg.add_node(), cfg.add_node());
    for (s, t) in [(Cfg::ENTRY, a), (a, b), (b, Cfg::EXIT)] {
        cfg.add_edge(s, t);
    }
    if !extra.is_empty() {
        cfg.add_node(); // H, node 4
    }
    for &(s, t) in extra {
        cfg.add_edge(NodeId::new(s), NodeId::new(t));
    }
    let calls = vec![CallSite {
        block: a,
        callee: Callee::Direct(F),
    }];
    Function::new(cfg, calls)
}

/// The host enters main, which takes ENTRY -> A and calls f from A; f
/// takes ENTRY -> X.
fn into_f() -> [Event; 4] {
    [
        Event::Call {
            site: None,
            callee: MAIN,
        },
        Event::Edge(e(0)),
        Event::Call {
            site: Some(CallSiteId::new(0)),
            callee: F,
        },
        Event::Edge(e(0)),
    ]
}

/// main's steps from A's last segment: A -> B -> EXIT, and its exit.
fn from_a_to_exit() -> [PathStep; 3] {
    [
        PathStep::Edge {
            func: MAIN,
            edge: e(1),
        },
        PathStep::Edge {
            func: MAIN,
            edge: e(2),
        },
        PathStep::Exit(MAIN),
    ]
}

fn counts(ip: &Interproc, events: &[Event]) -> Vec<(u64, u64)> {
    ip.walk(events).unwrap().into_iter().collect()
}

#[test]
fn throw_caught_by_the_caller() {
    // main also has a handler H (node 4): ENTRY -> H (edge 3), H -> EXIT (4).
    let mut main = main_calling_f(&[(0, 4), (4, 1)]);
    main.handlers = vec![NodeId::new(4)];
    let mut f = Function::new(straight(), Vec::new());
    f.throws = vec![NodeId::new(2)];
    let sg = Supergraph {
        functions: vec![main, f],
        entries: vec![MAIN],
    };
    let ip = Interproc::build(&sg, Mode::Context).unwrap();
    // f: X -> {EXIT, GExit}: psi_X = <1,1>, rho(X -> GExit) = <1,0>.
    // main's ENTRY -> {A <1,1>, H <1,0>, ~H <1,0>}: <3,1>, 4 paths.
    assert_eq!(ip.entry_psi(F), Linear::new(1, 1));
    assert_eq!(ip.entry_psi(MAIN), Linear::new(3, 1));
    assert_eq!(ip.total(), 4);
    let mut run = into_f().to_vec();
    run.extend([
        Event::Throw {
            unwind: 1,
            handler: NodeId::new(4),
        },
        Event::Edge(e(4)),
        Event::Return,
    ]);
    // The throw counts 0 + rho(X -> GExit)(1) = 1; main restarts at
    // pathNumOnEntry 0 + rho(ENTRY -> ~H)(1) = 1 + 2 = 3.
    assert_eq!(counts(&ip, &run), [(1, 1), (3, 1)]);
    let thrown = ip.decode(1).unwrap();
    assert_eq!(
        thrown.steps,
        [
            PathStep::Begin(MAIN),
            PathStep::Edge {
                func: MAIN,
                edge: e(0)
            },
            PathStep::Call {
                site: CallSiteId::new(0),
                callee: F
            },
            PathStep::Edge {
                func: F,
                edge: e(0)
            },
            PathStep::End {
                func: F,
                node: NodeId::new(2)
            },
        ]
    );
    let caught = ip.decode(3).unwrap();
    assert_eq!(
        caught.active_start, 2,
        "context-prefix: main's entry and the surrogate"
    );
    assert_eq!(
        caught.steps[1..],
        [
            PathStep::Resume {
                func: MAIN,
                node: NodeId::new(4)
            },
            PathStep::Edge {
                func: MAIN,
                edge: e(4)
            },
            PathStep::Exit(MAIN),
        ]
    );
}

fn tail_calling_program() -> Supergraph {
    let mut f = Function::new(straight(), Vec::new());
    f.tail_calls = vec![TailCall {
        block: NodeId::new(2),
        callee: Callee::Direct(G),
    }];
    Supergraph {
        functions: vec![
            main_calling_f(&[]),
            f,
            Function::new(straight(), Vec::new()),
        ],
        entries: vec![MAIN],
    }
}

/// main calls f, f's X tail-calls g, g returns to main's return site.
fn tail_run() -> Vec<Event> {
    let mut run = into_f().to_vec();
    run.extend([
        Event::TailCall { callee: G },
        Event::Edge(e(0)),
        Event::Edge(e(1)),
        Event::Return,
        Event::Edge(e(1)),
        Event::Edge(e(2)),
    ]);
    run
}

#[test]
fn tail_call_context() {
    let ip = Interproc::build(&tail_calling_program(), Mode::Context).unwrap();
    // g is an entry function (the tail callee). main's return site r_A gets
    // a surrogate entry: ENTRY -> {A <1,1>, ~r_A <1,0>} = <2,1>: 3 paths;
    // g has 1: 4 in all, g's Entry_global edge valued 3.
    assert_eq!(ip.call_graph.entries, [MAIN, G]);
    assert_eq!(ip.entry_psi(MAIN), Linear::new(2, 1));
    assert_eq!(ip.total(), 4);
    let mut run = tail_run();
    run.push(Event::Return);
    // f's path ends at the tail call: 0 + rho(X -> GExit)(1) = 1; g's path
    // is 3; main restarts at 0 + rho(ENTRY -> ~r_A)(1) = 2.
    assert_eq!(counts(&ip, &run), [(1, 1), (2, 1), (3, 1)]);
    let resumed = ip.decode(2).unwrap();
    assert_eq!(resumed.active_start, 2);
    assert_eq!(
        resumed.steps,
        [
            &[
                PathStep::Begin(MAIN),
                PathStep::ResumeAfterCall(CallSiteId::new(0)),
            ][..],
            &from_a_to_exit(),
        ]
        .concat()
    );
    assert_eq!(ip.decode(3).unwrap().steps[0], PathStep::Begin(G));
    // Cut short before main returns: main's restarted path is not counted.
    assert_eq!(counts(&ip, &tail_run()), [(1, 1), (3, 1)]);
}

#[test]
fn tail_call_piecewise() {
    let ip = Interproc::build(&tail_calling_program(), Mode::Piecewise).unwrap();
    // Entry_main 2 paths (ENTRY -> A only), Entry_g 1, GEntry_main 1 (into
    // r_A), GEntry_f and GEntry_g none: values 0, 2, 3, 4, 4.
    let entries = super::entry_values(&ip);
    assert_eq!(entries, [(0, 2), (2, 1), (3, 1), (4, 0), (4, 0)]);
    let mut run = tail_run();
    run.push(Event::Return);
    // f's path 1; g's 2 (a parenthesis is open: no edgeValue); main
    // restarts at GEntry_main: 3.
    assert_eq!(counts(&ip, &run), [(1, 1), (2, 1), (3, 1)]);
    assert_eq!(
        ip.decode(3).unwrap().steps[0],
        PathStep::ResumeAfterCall(CallSiteId::new(0))
    );
}

/// An indirect call at A whose callee is told before the call (9.2.3's
/// dispatch): its cases call f (two paths: X -> EXIT twice), g (one) and
/// opaque code (a cut case, `Indirect` with no profiled target).
fn main_with_cases() -> Supergraph {
    let mut main = main_calling_f(&[]);
    let a = main.calls[0].block;
    main.calls.extend([
        CallSite {
            block: a,
            callee: Callee::Direct(G),
        },
        CallSite {
            block: a,
            callee: Callee::Indirect(Vec::new()),
        },
    ]);
    main.cases = vec![1, 2];
    let mut f = straight();
    f.add_edge(NodeId::new(2), Cfg::EXIT);
    Supergraph {
        functions: vec![
            main,
            Function::new(f, Vec::new()),
            Function::new(straight(), Vec::new()),
        ],
        entries: vec![MAIN],
    }
}

/// main's run through case `site` into `callee`, taking `edges` there.
fn through_case(site: usize, callee: FuncId, edges: &[usize]) -> Vec<Event> {
    let mut run = vec![
        Event::Call {
            site: None,
            callee: MAIN,
        },
        Event::Edge(e(0)),
        Event::Call {
            site: Some(CallSiteId::new(site)),
            callee,
        },
    ];
    run.extend(edges.iter().map(|&i| Event::Edge(e(i))));
    run.extend([
        Event::Return,
        Event::Edge(e(1)),
        Event::Edge(e(2)),
        Event::Return,
    ]);
    run
}

#[test]
fn cases_of_an_indirect_call() {
    let sg = main_with_cases();
    let ip = Interproc::build(&sg, Mode::Context).unwrap();
    // A branches along links to the three cases' call vertices, which
    // return to one join, B's predecessor.
    let split = &ip.splits[MAIN.index()];
    let a = NodeId::new(2);
    let join = split.last[a.index()];
    for k in 0..3 {
        let link = split.link_before[k].expect("a case is entered along a link");
        assert_eq!(split.cfg.edge(link), (a, split.call_vertex[k]));
        let back = split.link_after[k].expect("a case returns to the join");
        assert_eq!(split.cfg.edge(back), (split.return_site[k], join));
        assert_eq!(split.first_case[k], 0);
    }
    // By hand, with x completions after main: psi(c_f) = 2x, psi(c_g) =
    // psi(c_opaque) = x, so psi(A) = psi(Entry_main) = <4,0>; the links'
    // rho are 0, 2x and 3x; f's second edge to EXIT adds x.
    assert_eq!(ip.entry_psi(MAIN), Linear::new(4, 0));
    assert_eq!(ip.total(), 4);
    assert!(!ip.is_cut(CallSiteId::new(0)) && !ip.is_cut(CallSiteId::new(1)));
    assert!(ip.is_cut(CallSiteId::new(2)));
    assert_eq!(counts(&ip, &through_case(0, F, &[0, 1])), [(0, 1)]);
    assert_eq!(counts(&ip, &through_case(0, F, &[0, 2])), [(1, 1)]);
    assert_eq!(counts(&ip, &through_case(1, G, &[0, 1])), [(2, 1)]);
    // A case is a direct call: no other callee, and no skipping to a later
    // case's callee.
    assert!(ip.walk(&through_case(1, F, &[0, 1])).is_err());
    assert!(ip.walk(&through_case(2, G, &[0, 1])).is_err());
    let opaque = ip.decode(3).unwrap();
    assert_eq!(
        opaque.steps,
        [
            &[
                PathStep::Begin(MAIN),
                PathStep::Edge {
                    func: MAIN,
                    edge: e(0)
                },
                PathStep::Summary(CallSiteId::new(2)),
            ][..],
            &from_a_to_exit(),
        ]
        .concat()
    );
    for n in 0..4 {
        assert_eq!(ip.path_number(&ip.decode(n).unwrap()).unwrap(), n);
    }
}

#[test]
fn cases_that_break_the_rules_are_refused() {
    let mut sg = main_with_cases();
    sg.functions[0].cases = vec![0];
    assert!(
        Interproc::build(&sg, Mode::Context).is_err(),
        "the first call"
    );
    let mut sg = main_with_cases();
    sg.functions[0].calls[2].block = NodeId::new(3);
    assert!(
        Interproc::build(&sg, Mode::Context).is_err(),
        "another block"
    );
    let mut sg = main_with_cases();
    sg.functions[0].cases = vec![2, 1];
    assert!(
        Interproc::build(&sg, Mode::Context).is_err(),
        "not ascending"
    );
}

/// The hybrid budget cuts a case before a larger site: what the report
/// cuts anyway goes first. main's A makes a call with cases f (two paths)
/// and g (one), its B calls h (three paths).
#[test]
fn the_budget_cuts_cases_first() {
    let mut sg = main_with_cases();
    let main = &mut sg.functions[0];
    main.calls.truncate(2);
    main.cases = vec![1];
    main.calls.push(CallSite {
        block: NodeId::new(3),
        callee: Callee::Direct(FuncId::from_u32(3)),
    });
    let mut h = straight();
    h.add_edge(NodeId::new(2), Cfg::EXIT);
    h.add_edge(NodeId::new(2), Cfg::EXIT);
    sg.functions.push(Function::new(h, Vec::new()));
    // Uncut: (2 + 1) * 3 = 9 paths. Cutting f's case: main (1 + 1) * 3 and
    // f's own 2, 8; cutting h's site (the larger, psi_c(1) = 3 against 2):
    // main 3 * 1 and h's own 3, 6.
    assert_eq!(Interproc::build(&sg, Mode::Context).unwrap().total(), 9);
    let ip = pathprof_graph::interproc::hybrid::build_within(&sg, Mode::Context, 8).unwrap();
    assert_eq!(
        (ip.total(), ip.call_graph.cut.clone()),
        (8, vec![true, false, false])
    );
    let h_cut = Interproc::build_with_cuts(&sg, Mode::Context, &[CallSiteId::new(2)]).unwrap();
    assert_eq!(h_cut.total(), 6);
}
