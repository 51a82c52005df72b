//! The report's example program (Fig. 4): `main` calls `pow(i, 2)` for
//! `i = 1..18` when `i % 2 == 0` and again when `i % 3 == 0`. Expected values
//! are the report's (Fig. 7's caption, Fig. 9's and Figs. 16-17's outputs)
//! or worked out by hand from its equations, never taken from the code.

use std::collections::BTreeMap;

use pathprof_graph::interproc::{
    Event, FuncId, Interproc, Linear, LocalEdgeKind, Mode, PathStep, ProfiledPath,
};
use pathprof_graph::testing::interproc::{figure4, figure4_execution, figure4_name, MAIN, POW};
use pathprof_graph::{Cfg, GraphError, NodeId};

fn lin(a: u64, b: u64) -> Linear {
    Linear::new(a, b)
}

/// psi of the named vertex.
fn psi(ip: &Interproc, f: FuncId, name: &str) -> Linear {
    let v = (0..ip.locals[f.index()].num_nodes)
        .map(NodeId::new)
        .find(|&v| figure4_name(f, v) == name)
        .expect("a named vertex");
    ip.psi(f, v)
}

/// Every edge with a rho other than <0, 0>, as "src->dst <a, b>".
fn nonzero_rho(ip: &Interproc) -> Vec<String> {
    let mut out = Vec::new();
    for f in [MAIN, POW] {
        let local = &ip.locals[f.index()];
        for (i, e) in local.edges.iter().enumerate() {
            let rho = ip.numbering.functions[f.index()].rho[i];
            if rho != Linear::ZERO && !matches!(e.kind, LocalEdgeKind::Call(_)) {
                let (s, d) = (figure4_name(f, e.src), figure4_name(f, e.dst));
                out.push(format!("{s}->{d} {rho}"));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn figure7_psi_and_rho() {
    let ip = Interproc::build(&figure4(), Mode::Context).unwrap();
    // Fig. 7's caption: psi of pow's entry <2,2>, of main's <2,34>; and by
    // eqs. (19)-(22), vertex by vertex from the exits up.
    let pow = [
        ("u1", lin(2, 2)),
        ("u2", lin(1, 1)),
        ("u3", lin(1, 1)),
        ("u4", lin(0, 1)),
        ("u5", lin(0, 1)),
        ("u6", lin(0, 1)),
        ("u7", lin(1, 0)),
        ("u8", lin(1, 0)),
    ];
    for (name, want) in pow {
        assert_eq!(psi(&ip, POW, name), want, "psi of {name}");
    }
    let main = [
        ("v1", lin(2, 34)),
        ("v2", lin(1, 17)),
        ("v3", lin(1, 17)),
        ("v4", lin(1, 17)),
        ("v5", lin(0, 17)),
        ("v6", lin(0, 12)), // <2,2> o <0,5>
        ("v7", lin(0, 5)),
        ("v8", lin(0, 5)),
        ("v9", lin(0, 5)),
        ("v10", lin(0, 4)), // <2,2> o <0,1>
        ("v11", lin(0, 1)),
        ("v12", lin(0, 1)),
        ("v13", lin(0, 1)),
        ("v14", lin(0, 1)),
        ("v15", lin(1, 0)),
        ("v16", lin(1, 0)),
    ];
    for (name, want) in main {
        assert_eq!(psi(&ip, MAIN, name), want, "psi of {name}");
    }
    // "Only six edges are labeled with functions other than <0,0>".
    let mut want = vec![
        "v1->v4 <1, 17>",
        "v4->v15 <0, 17>",
        "v5->v9 <0, 12>",
        "v9->v13 <0, 4>",
        "u1->u3 <1, 1>",
        "u3->u7 <0, 1>",
    ];
    want.sort();
    assert_eq!(nonzero_rho(&ip), want);
    // Fig. 8: "36 possible paths in total"; maxEnters (3.2).
    assert_eq!(ip.total(), 36);
    assert_eq!(ip.max_enters, [1, 2]);
    assert_eq!(ip.call_graph.cut, [false, false], "no recursion");
    assert_eq!(ip.call_graph.entries, [MAIN]);
}

#[test]
fn figure14_piecewise_numbering() {
    let ip = Interproc::build(&figure4(), Mode::Piecewise).unwrap();
    // Section 6.1: 21 = psi_Entry_main(1) + psi_GEntry_main(1) + psi_GEntry_pow(4).
    assert_eq!(ip.total(), 21);
    let pw = ip.numbering.piecewise.as_ref().unwrap();
    assert_eq!(pw.unbal_rl_exit, [1, 4]);
    let entries = super::entry_values(&ip);
    assert_eq!(entries, [(0, 8), (8, 8), (16, 5)]);
    // Fig. 17: pow gets nvc 3 at the first call (psi_v7 = <0,3>) and 1 at the
    // second; the return to v11 with no open parenthesis adds 3; v5->v9
    // adds 4 and v9->v13 2; v4->v15 adds 7.
    assert_eq!(psi(&ip, MAIN, "v7"), lin(0, 3));
    assert_eq!(psi(&ip, MAIN, "v11"), lin(0, 1));
    assert_eq!(pw.return_value, [0, 3]);
    let mut want = vec![
        "v4->v15 <0, 7>",
        "v5->v9 <0, 4>",
        "v9->v13 <0, 2>",
        "u3->u7 <0, 1>",
    ];
    want.sort();
    assert_eq!(nonzero_rho(&ip), want);
}

/// A path in the report's notation: vertices in order, `~v` for a
/// surrogate entry edge into `v`, `X` for `Exit_global`.
fn render(steps: &[PathStep]) -> String {
    let sg = figure4();
    let mut out: Vec<String> = Vec::new();
    for &s in steps {
        let name = |f: FuncId, v: NodeId| figure4_name(f, v).to_string();
        out.push(match s {
            PathStep::Begin(f) => name(f, Cfg::ENTRY),
            PathStep::Resume { func, node } => format!("~{}", name(func, node)),
            PathStep::Edge { func, edge } => name(func, sg.functions[func.index()].cfg.dst(edge)),
            PathStep::Call { callee, .. } => name(callee, Cfg::ENTRY),
            // Return sites: v7 (node 13) for site 0, v11 (node 14) for site 1.
            PathStep::Return(s) => name(MAIN, NodeId::new(13 + s.index())),
            PathStep::Summary(_) => "summary".into(),
            PathStep::ResumeAfterCall(s) => format!("~{}", name(MAIN, NodeId::new(13 + s.index()))),
            PathStep::End { func, .. } => match func {
                MAIN => "v14".into(),
                _ => "u6".into(),
            },
            PathStep::Exit(_) => "X".into(),
        });
    }
    out.join(" ")
}

/// `counts` are exactly the (number, count) pairs of `want`.
fn assert_counts(counts: &BTreeMap<u64, u64>, want: &[(u64, u64, &str)]) {
    let got: Vec<(u64, u64)> = counts.iter().map(|(&n, &c)| (n, c)).collect();
    let expected: Vec<(u64, u64)> = want.iter().map(|&(n, c, _)| (n, c)).collect();
    assert_eq!(got, expected);
}

fn profile(mode: Mode) -> (Interproc, BTreeMap<u64, u64>) {
    let ip = Interproc::build(&figure4(), mode).unwrap();
    let counts = ip.walk(&figure4_execution()).unwrap();
    (ip, counts)
}

#[test]
fn figure9_context_profile() {
    let (ip, counts) = profile(Mode::Context);
    // Fig. 9's output, with each path worked out from Fig. 7's values.
    // A context-prefix is written before "|".
    let want: [(u64, u64, &str); 12] = [
        (16, 1, "v1 v2 v3 v4 v5 v9 v13 v14"),
        (18, 9, "v1 ~v4 | v5 v6 u1 u2 u3 u4 u5 u6"),
        (24, 9, "v1 ~v4 v5 v6 u1 ~u3 | u4 u5 u6"),
        (
            25,
            3,
            "v1 ~v4 v5 v6 u1 ~u3 | u7 u8 v7 v8 v9 v10 u1 u2 u3 u4 u5 u6",
        ),
        (
            27,
            3,
            "v1 ~v4 v5 v6 u1 ~u3 u7 u8 v7 v8 v9 v10 u1 ~u3 | u4 u5 u6",
        ),
        (
            28,
            3,
            "v1 ~v4 v5 v6 u1 ~u3 u7 u8 v7 v8 v9 v10 u1 ~u3 | u7 u8 v11 v12 v13 v14",
        ),
        (29, 6, "v1 ~v4 v5 v6 u1 ~u3 | u7 u8 v7 v8 v9 v13 v14"),
        (30, 3, "v1 ~v4 | v5 v9 v10 u1 u2 u3 u4 u5 u6"),
        (32, 3, "v1 ~v4 v5 v9 v10 u1 ~u3 | u4 u5 u6"),
        (33, 3, "v1 ~v4 v5 v9 v10 u1 ~u3 | u7 u8 v11 v12 v13 v14"),
        (34, 5, "v1 ~v4 | v5 v9 v13 v14"),
        (35, 1, "v1 ~v4 | v15 v16 X"),
    ];
    assert_counts(&counts, &want);
    assert_eq!(
        counts.values().sum::<u64>(),
        49,
        "19 in main, 2 per call of pow"
    );
    for (n, _, path) in want {
        let p = ip.decode(n).unwrap();
        let shown = match p.active_start {
            0 => render(&p.steps),
            _ => format!(
                "{} | {}",
                render(p.context_prefix()),
                render(p.active_suffix())
            ),
        };
        assert_eq!(shown, path, "path {n}");
    }
}

#[test]
fn figure17_piecewise_profile() {
    let (ip, counts) = profile(Mode::Piecewise);
    // The output after Fig. 17, each path worked out from Fig. 14.
    let want: [(u64, u64, &str); 9] = [
        (6, 1, "v1 v2 v3 v4 v5 v9 v13 v14"),
        (8, 9, "~v4 v5 v6 u1 u2 u3 u4 u5 u6"),
        (12, 3, "~v4 v5 v9 v10 u1 u2 u3 u4 u5 u6"),
        (14, 5, "~v4 v5 v9 v13 v14"),
        (15, 1, "~v4 v15 v16 X"),
        (16, 15, "~u3 u4 u5 u6"),
        (17, 3, "~u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u4 u5 u6"),
        (19, 6, "~u3 u7 u8 v7 v8 v9 v13 v14"),
        (20, 6, "~u3 u7 u8 v11 v12 v13 v14"),
    ];
    assert_counts(&counts, &want);
    for (n, _, path) in want {
        let p = ip.decode(n).unwrap();
        assert_eq!(p.active_start, 0, "piecewise paths have no context-prefix");
        assert_eq!(render(&p.steps), path, "path {n}");
    }
    // Path 18 never runs: pow always loops when called from v10.
    assert_eq!(
        render(&ip.decode(18).unwrap().steps),
        "~u3 u7 u8 v7 v8 v9 v10 u1 u2 u3 u7 u8 v11 v12 v13 v14"
    );
}

#[test]
fn every_number_decodes_to_a_distinct_path_and_back() {
    for (mode, total) in [(Mode::Context, 36), (Mode::Piecewise, 21)] {
        let ip = Interproc::build(&figure4(), mode).unwrap();
        let paths: std::collections::BTreeSet<ProfiledPath> =
            (0..total).map(|n| ip.decode(n).unwrap()).collect();
        // Algorithms 5.1 and 6.1 number each one back.
        for (n, p) in (0..total).map(|n| (n, ip.decode(n).unwrap())) {
            assert_eq!(ip.path_number(&p).unwrap(), n);
        }
        assert_eq!(paths.len() as u64, total);
        assert!(ip.decode(total).is_err());
    }
}

#[test]
fn executions_that_break_the_supergraph_are_refused() {
    let ip = Interproc::build(&figure4(), Mode::Context).unwrap();
    let mut ev = figure4_execution();
    // Skip main's first edge: the next one does not leave where control is.
    ev.remove(1);
    assert!(ip.walk(&ev).is_err());
    // pow is not an entry function: the host cannot enter it.
    let host_pow = [Event::Call {
        site: None,
        callee: POW,
    }];
    assert!(ip.walk(&host_pow).is_err());
}

#[test]
fn steps_that_are_no_observable_path_are_refused() {
    let ip = Interproc::build(&figure4(), Mode::Context).unwrap();
    let p = ip.decode(25).unwrap();
    // Without its surrogate entry into u3, pow's path does not start at u3.
    let mut broken = p.clone();
    broken
        .steps
        .retain(|s| !matches!(s, PathStep::Resume { func: POW, .. }));
    assert!(matches!(
        ip.path_number(&broken),
        Err(GraphError::NotAPath { .. })
    ));
    // Cut short: it never reaches Exit_global.
    let mut short = p.clone();
    short.steps.pop();
    assert!(matches!(
        ip.path_number(&short),
        Err(GraphError::NotAPath { .. })
    ));
    // A piecewise start is no context path.
    let piecewise = Interproc::build(&figure4(), Mode::Piecewise).unwrap();
    assert!(ip.path_number(&piecewise.decode(16).unwrap()).is_err());
}
