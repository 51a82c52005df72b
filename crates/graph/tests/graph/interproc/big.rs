//! Limits: path counts past u64 are refused (and the budget cuts them to
//! size), and deep call chains and long CFGs are handled without recursion.
//! Expected values are worked out by hand from eqs. (19)-(22).

use pathprof_graph::cfg::{Cfg, NodeId};
use pathprof_graph::interproc::hybrid::build_within;
use pathprof_graph::interproc::{
    CallSite, CallSiteId, Callee, Event, FuncId, Function, Interproc, Mode,
};
use pathprof_graph::interproc::{Linear, Supergraph};
use pathprof_graph::GraphError;

/// `levels` functions: function `i` branches two ways, and each way calls
/// function `i + 1`; the last one branches and calls nothing. So psi of
/// function `i`'s entry is `<2^(levels - i), 0>`.
fn doubling_chain(levels: usize) -> Supergraph {
    let functions = (0..levels)
        .map(|i| {
            let mut cfg = Cfg::new();
            let [a, b, c, d] = [(); 4].map(|_| cfg.add_node());
            for (s, t) in [
                (Cfg::ENTRY, a),
                (a, b),
                (a, c),
                (b, d),
                (c, d),
                (d, Cfg::EXIT),
            ] {
                cfg.add_edge(s, t);
            }
            let next = Callee::Direct(FuncId::new(i + 1));
            let calls = match i + 1 < levels {
                true => vec![
                    CallSite {
                        block: b,
                        callee: next.clone(),
                    },
                    CallSite {
                        block: c,
                        callee: next,
                    },
                ],
                false => Vec::new(),
            };
            Function::new(cfg, calls)
        })
        .collect();
    Supergraph {
        functions,
        entries: vec![FuncId::new(0)],
    }
}

#[test]
fn counts_past_u64_are_refused() {
    let ip = Interproc::build(&doubling_chain(63), Mode::Context).unwrap();
    assert_eq!(ip.total(), 1 << 63);
    assert_eq!(ip.entry_psi(FuncId::new(0)), Linear::new(1 << 63, 0));
    // maxEnters doubles down the chain.
    assert_eq!(ip.max_enters[62], 1 << 62);
    assert!(matches!(
        Interproc::build(&doubling_chain(64), Mode::Context),
        Err(GraphError::PathCountOverflow { .. })
    ));
    assert!(matches!(
        Interproc::build(&doubling_chain(64), Mode::Piecewise),
        Err(GraphError::PathCountOverflow { .. })
    ));
}

#[test]
fn budget_brings_past_u64_under_it() {
    // Cutting function 0's first site (size 2^63) leaves 2^63 + 1 paths in
    // function 0 and makes function 1 an entry with 2^63: still too many.
    // Cutting its second site too: 2 + 2^63.
    let ip = build_within(&doubling_chain(64), Mode::Context, u64::MAX).unwrap();
    assert_eq!(ip.total(), (1 << 63) + 2);
    let cut: Vec<usize> = (0..ip.sites.len())
        .filter(|&s| ip.is_cut(CallSiteId::new(s)))
        .collect();
    assert_eq!(cut, [0, 1]);
    assert_eq!(ip.call_graph.entries, [FuncId::new(0), FuncId::new(1)]);
}

/// `n` functions, each one block calling the next; the last has a chain of
/// `blocks` blocks.
fn call_chain(n: usize, blocks: usize) -> Supergraph {
    let mut functions: Vec<Function> = (0..n)
        .map(|i| {
            let mut cfg = Cfg::new();
            let b = cfg.add_node();
            cfg.add_edge(Cfg::ENTRY, b);
            if i + 1 < n {
                cfg.add_edge(b, Cfg::EXIT);
            }
            let calls = match i + 1 < n {
                true => vec![CallSite {
                    block: b,
                    callee: Callee::Direct(FuncId::new(i + 1)),
                }],
                false => Vec::new(),
            };
            Function::new(cfg, calls)
        })
        .collect();
    let last = &mut functions[n - 1].cfg;
    let mut v = NodeId::new(2);
    for _ in 0..blocks {
        let w = last.add_node();
        last.add_edge(v, w);
        v = w;
    }
    last.add_edge(v, Cfg::EXIT);
    Supergraph {
        functions,
        entries: vec![FuncId::new(0)],
    }
}

#[test]
fn deep_call_chains_and_long_cfgs() {
    let (n, blocks) = (20_000, 100_000);
    let sg = call_chain(n, blocks);
    for mode in [Mode::Context, Mode::Piecewise] {
        let ip = Interproc::build(&sg, mode).unwrap();
        // One path: Entry_main down the chain and back (piecewise: GEntry
        // edges lead nowhere, as there is no loop).
        assert_eq!(ip.total(), 1);
        let mut events = vec![Event::Call {
            site: None,
            callee: FuncId::new(0),
        }];
        for i in 0..n {
            events.push(Event::Edge(pathprof_graph::EdgeId::new(0)));
            if i + 1 < n {
                events.push(Event::Call {
                    site: Some(CallSiteId::new(i)),
                    callee: FuncId::new(i + 1),
                });
            }
        }
        events.extend((1..blocks + 2).map(|e| Event::Edge(pathprof_graph::EdgeId::new(e))));
        for i in (0..n).rev() {
            if i + 1 < n {
                events.push(Event::Edge(pathprof_graph::EdgeId::new(1)));
            }
            events.push(Event::Return);
        }
        let counts = ip.walk(&events).unwrap();
        assert_eq!(counts.into_iter().collect::<Vec<_>>(), [(0, 1)]);
        let path = ip.decode(0).unwrap();
        // Begin, n - 1 calls and returns, two edges in each caller and
        // blocks + 2 in the last function, Exit.
        assert_eq!(
            path.steps.len(),
            1 + 2 * (n - 1) + 2 * (n - 1) + blocks + 2 + 1
        );
    }
}
