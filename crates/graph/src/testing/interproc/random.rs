//! Random supergraphs and executions of them.

use proptest::collection::vec;
use proptest::prelude::*;

use crate::cfg::{Cfg, NodeId};
use crate::interproc::{CallSite, Callee, FuncId, Function, Supergraph, TailCall};
use crate::testing::arb_cfg;

/// Random supergraphs of 1 to `max_funcs` functions, each a random CFG of
/// [`arb_cfg`] with up to `max_blocks` blocks and up to 4 calls, several
/// per block at times: mostly direct calls to any function (so there is
/// recursion, direct and mutual), some indirect calls to one or two
/// functions; sometimes a throwing block and a handler (with an edge from
/// ENTRY), and a block that tail-calls; now and then a call with further
/// cases ([`Function::cases`]). Function 0 is an entry function, and
/// sometimes another.
pub fn arb_supergraph(max_funcs: usize, max_blocks: usize) -> impl Strategy<Value = Supergraph> {
    (1..=max_funcs.max(1))
        .prop_flat_map(move |n| {
            let funcs = vec(arb_function(n, max_blocks), n);
            (funcs, vec(0..n, 0..=1))
        })
        .prop_map(|(functions, extra)| {
            let mut entries = vec![FuncId::new(0)];
            entries.extend(extra.into_iter().map(FuncId::new));
            Supergraph { functions, entries }
        })
}

fn arb_function(num_funcs: usize, max_blocks: usize) -> impl Strategy<Value = Function> {
    arb_cfg(max_blocks).prop_flat_map(move |cfg| {
        let blocks = cfg.num_nodes();
        let callee = prop_oneof![
            5 => (0..num_funcs).prop_map(|f| Callee::Direct(FuncId::new(f))),
            1 => vec(0..num_funcs, 1..=2)
                .prop_map(|fs| Callee::Indirect(fs.into_iter().map(FuncId::new).collect())),
        ];
        let call = (2..blocks, callee).prop_map(|(b, callee)| CallSite {
            block: NodeId::new(b),
            callee,
        });
        let blocks_list = || vec(2..blocks, 0..=1);
        let tail = (2..blocks, 0..num_funcs).prop_map(|(b, f)| TailCall {
            block: NodeId::new(b),
            callee: Callee::Direct(FuncId::new(f)),
        });
        let lists = (blocks_list(), blocks_list(), vec(tail, 0..=2));
        // Per call: further cases after it (direct calls to these
        // functions, and sometimes an indirect one).
        let case = (vec(0..num_funcs, 1..=2), any::<bool>());
        let cases = vec(prop::option::weighted(0.25, case), 4);
        (Just(cfg), vec(call, 0..=4), lists, cases).prop_map(
            move |(mut cfg, calls, (throws, handlers, tail_calls), more)| {
                let (calls, cases) = with_cases(calls, &more);
                // A handler "block" 2 stands for EXIT at times (a catch
                // clause into the function's own label) when there is a
                // block 3 too.
                let handlers: Vec<NodeId> = handlers
                    .into_iter()
                    .map(|h| match (h, blocks > 3) {
                        (2, true) => Cfg::EXIT,
                        _ => NodeId::new(h),
                    })
                    .collect();
                // Handlers are entered from ENTRY, as the wasm CFG builder does.
                for &h in &handlers {
                    cfg.add_edge(Cfg::ENTRY, h);
                }
                let throws = throws.into_iter().map(NodeId::new).collect();
                // Every fifth eligible edge truncated (Ball-Larus 5.3), so
                // the truncation is exercised with everything else.
                let truncated = cfg
                    .edge_ids()
                    .filter(|&e| cfg.src(e) != Cfg::ENTRY && cfg.dst(e) != Cfg::EXIT)
                    .filter(|e| e.index() % 5 == 2)
                    .collect();
                Function {
                    cfg,
                    calls,
                    throws,
                    handlers,
                    tail_calls,
                    truncated,
                    cases,
                }
            },
        )
    })
}

/// `calls` with the cases `more[i]` says call `i` has: a direct call to
/// each function listed, then, if asked, an indirect call to the first.
fn with_cases(
    calls: Vec<CallSite>,
    more: &[Option<(Vec<usize>, bool)>],
) -> (Vec<CallSite>, Vec<u32>) {
    let (mut out, mut cases) = (Vec::new(), Vec::new());
    for (i, call) in calls.into_iter().enumerate() {
        let block = call.block;
        out.push(call);
        let Some(Some((funcs, indirect))) = more.get(i) else {
            continue;
        };
        let mut add = |callee| {
            cases.push(out.len() as u32);
            out.push(CallSite { block, callee });
        };
        for &f in funcs {
            add(Callee::Direct(FuncId::new(f)));
        }
        if *indirect {
            add(Callee::Indirect(vec![FuncId::new(funcs[0])]));
        }
    }
    (out, cases)
}
