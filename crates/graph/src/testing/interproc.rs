//! Test support for [`crate::interproc`]: the report's example program
//! (Fig. 4) with its supergraph (Figs. 5 and 14) and an interpreter that
//! runs it into an execution, random supergraphs and executions, and an
//! enumerator that cuts an execution into observable paths by the
//! definitions of sections 3.4 and 6 (no numbers involved).

mod enumerate;
mod random;

pub use crate::interproc::sample::random_execution;
pub use enumerate::{backedges, observable_paths, path_ends};
pub use random::arb_supergraph;

use crate::cfg::{Cfg, EdgeId, NodeId};
use crate::interproc::{CallSite, CallSiteId, Callee, Event, FuncId, Function, Supergraph};

/// `main` and `pow` of Fig. 4.
pub const MAIN: FuncId = FuncId::from_u32(0);
pub const POW: FuncId = FuncId::from_u32(1);

/// Node ids of `main`'s blocks, named as the report's vertices (Fig. 5):
/// `v1` is ENTRY and `v16` EXIT; `v7` and `v11` are the return sites the
/// split creates (nodes 13 and 14) and `v14` is GExit (node 15).
pub const MAIN_NAMES: [&str; 16] = [
    "v1", "v16", "v2", "v3", "v4", "v5", "v6", "v8", "v9", "v10", "v12", "v13", "v15", "v7", "v11",
    "v14",
];
/// Node ids of `pow`'s blocks: `u1` ENTRY, `u8` EXIT, `u6` GExit (node 7).
pub const POW_NAMES: [&str; 8] = ["u1", "u8", "u2", "u3", "u4", "u5", "u7", "u6"];

/// `main`'s edges in insertion order (edge ids 0 to 14), by vertex name.
const MAIN_EDGES: [(&str, &str); 15] = [
    ("v1", "v2"),
    ("v2", "v3"),
    ("v3", "v4"),
    ("v4", "v5"),
    ("v4", "v15"),
    ("v5", "v6"),
    ("v5", "v9"),
    ("v6", "v8"), // leaves v7, v6's return site, once split
    ("v8", "v9"),
    ("v9", "v10"),
    ("v9", "v13"),
    ("v10", "v12"), // leaves v11
    ("v12", "v13"),
    ("v13", "v4"), // the backedge
    ("v15", "v16"),
];
const POW_EDGES: [(&str, &str); 7] = [
    ("u1", "u2"),
    ("u2", "u3"),
    ("u3", "u4"),
    ("u3", "u7"),
    ("u4", "u5"),
    ("u5", "u3"), // the backedge
    ("u7", "u8"),
];

fn node(names: &[&str], name: &str) -> NodeId {
    NodeId::new(
        names
            .iter()
            .position(|&n| n == name)
            .expect("a named vertex"),
    )
}

fn cfg_of(names: &[&str], blocks: usize, edges: &[(&str, &str)]) -> Cfg {
    let list: Vec<(NodeId, NodeId)> = edges
        .iter()
        .map(|&(s, d)| (node(names, s), node(names, d)))
        .collect();
    Cfg::from_edges(blocks, &list)
}

/// The supergraph of Fig. 4's program: `main` calls `pow` from block `v6`
/// (site 0) and block `v10` (site 1); `main` is the entry function.
pub fn figure4() -> Supergraph {
    let main = Function {
        cfg: cfg_of(&MAIN_NAMES, 13, &MAIN_EDGES),
        calls: vec![
            CallSite {
                block: node(&MAIN_NAMES, "v6"),
                callee: Callee::Direct(POW),
            },
            CallSite {
                block: node(&MAIN_NAMES, "v10"),
                callee: Callee::Direct(POW),
            },
        ],
        ..Function::default()
    };
    let pow = Function {
        cfg: cfg_of(&POW_NAMES, 7, &POW_EDGES),
        ..Function::default()
    };
    Supergraph {
        functions: vec![main, pow],
        entries: vec![MAIN],
    }
}

/// The report's name of vertex `v` of `f` (a split node or GExit).
pub fn figure4_name(f: FuncId, v: NodeId) -> &'static str {
    let names: &[&str] = if f == MAIN { &MAIN_NAMES } else { &POW_NAMES };
    names.get(v.index()).copied().unwrap_or("?")
}

/// Runs Fig. 4's program, recording what it executes.
pub fn figure4_execution() -> Vec<Event> {
    let edge = |edges: &[(&str, &str)], s: &str, d: &str| {
        Event::Edge(EdgeId::new(
            edges.iter().position(|&e| e == (s, d)).expect("an edge"),
        ))
    };
    let m = |s, d| edge(&MAIN_EDGES, s, d);
    let p = |s, d| edge(&POW_EDGES, s, d);
    let mut ev = vec![Event::Call {
        site: None,
        callee: MAIN,
    }];
    // double pow(double base, long exp)
    let pow = |ev: &mut Vec<Event>, site: usize, base: f64, mut exp: i64| -> f64 {
        ev.push(Event::Call {
            site: Some(CallSiteId::new(site)),
            callee: POW,
        });
        ev.extend([p("u1", "u2"), p("u2", "u3")]);
        let mut power = 1.0;
        while exp > 0 {
            ev.extend([p("u3", "u4"), p("u4", "u5")]);
            power *= base;
            exp -= 1;
            ev.push(p("u5", "u3"));
        }
        ev.extend([p("u3", "u7"), p("u7", "u8"), Event::Return]);
        power
    };
    ev.extend([m("v1", "v2"), m("v2", "v3"), m("v3", "v4")]);
    let (mut result, mut i) = (0.0, 1);
    while {
        let go = i <= 18;
        ev.push(if go { m("v4", "v5") } else { m("v4", "v15") });
        go
    } {
        if i % 2 == 0 {
            ev.push(m("v5", "v6"));
            result += pow(&mut ev, 0, i as f64, 2);
            ev.extend([m("v6", "v8"), m("v8", "v9")]);
        } else {
            ev.push(m("v5", "v9"));
        }
        if i % 3 == 0 {
            ev.push(m("v9", "v10"));
            result += pow(&mut ev, 1, i as f64, 2);
            ev.extend([m("v10", "v12"), m("v12", "v13")]);
        } else {
            ev.push(m("v9", "v13"));
        }
        i += 1;
        ev.push(m("v13", "v4"));
    }
    // (sum_{j=1..9} (2j)^2) + (sum_{k=1..6} (3k)^2), as Fig. 4 says.
    debug_assert_eq!(result, 1140.0 + 819.0);
    ev.extend([m("v15", "v16"), Event::Return]);
    ev
}
