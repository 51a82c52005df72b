//! Random supergraphs and executions of them.

use proptest::collection::vec;
use proptest::prelude::*;

use crate::cfg::{Cfg, NodeId};
use crate::interproc::{
    CallSite, CallSiteId, Callee, Event, FuncId, Function, Supergraph, TailCall,
};
use crate::testing::arb_cfg;

/// Random supergraphs of 1 to `max_funcs` functions, each a random CFG of
/// [`arb_cfg`] with up to `max_blocks` blocks and up to 4 calls, several
/// per block at times: mostly direct calls to any function (so there is
/// recursion, direct and mutual), some indirect calls to one or two
/// functions; sometimes a throwing block and a handler (with an edge from
/// ENTRY), and a block that tail-calls. Function 0 is an entry function, and sometimes another.
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
        (Just(cfg), vec(call, 0..=4), lists).prop_map(
            |(mut cfg, calls, (throws, handlers, tail_calls))| {
                let handlers: Vec<NodeId> = handlers.into_iter().map(NodeId::new).collect();
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
                }
            },
        )
    })
}

/// One activation of [`random_execution`].
struct Activation {
    func: FuncId,
    block: NodeId,
    /// How many of the block's calls it has made.
    calls_made: usize,
}

/// An execution of `sg` from the host entering its first entry function:
/// at each step, choice `c` picks the next call of the block (its callee
/// `c % n` among an indirect call's), or the `c % n`-th successor edge, or
/// the return at EXIT; now and then (`c % 16 == 15`) the host enters an
/// entry function (a callback), and (`c % 4 == 2`) a throwing block
/// throws to a handler of some activation, and (`c % 2 == 1`) a block
/// that tail-calls does. Stops at a dead end, past
/// `max_depth` activations, when the program returns, or when the choices
/// run out.
pub fn random_execution(sg: &Supergraph, choices: &[u32], max_depth: usize) -> Vec<Event> {
    let starts = sg.site_starts();
    let Some(&main) = sg.entries.first() else {
        return Vec::new();
    };
    let mut events = vec![Event::Call {
        site: None,
        callee: main,
    }];
    let mut stack = vec![Activation {
        func: main,
        block: Cfg::ENTRY,
        calls_made: 0,
    }];
    for &c in choices {
        let depth = stack.len();
        let thrown = catch(sg, &stack, c);
        let Some(top) = stack.last_mut() else { break };
        let func = &sg.functions[top.func.index()];
        let pending = func
            .calls
            .iter()
            .enumerate()
            .filter(|(_, call)| call.block == top.block)
            .nth(top.calls_made);
        let enter = |callee: FuncId| Activation {
            func: callee,
            block: Cfg::ENTRY,
            calls_made: 0,
        };
        if c % 16 == 15 && depth < max_depth {
            let callee = sg.entries[c as usize / 16 % sg.entries.len()];
            events.push(Event::Call { site: None, callee });
            stack.push(enter(callee));
        } else if let (2, None, Some((unwind, handler)), true) =
            (c % 4, pending, thrown, func.throws.contains(&top.block))
        {
            events.push(Event::Throw { unwind, handler });
            stack.truncate(stack.len() - unwind);
            let catcher = stack.last_mut().expect("catch leaves one");
            catcher.block = handler;
            catcher.calls_made = 0;
        } else if let (1 | 3, None, Some(tail)) = (
            c % 4,
            pending,
            func.tail_calls.iter().find(|t| t.block == top.block),
        ) {
            let targets = tail.callee.targets();
            if targets.is_empty() {
                break;
            }
            let callee = targets[(c / 4) as usize % targets.len()];
            events.push(Event::TailCall { callee });
            *top = enter(callee);
        } else if let Some((i, call)) = pending {
            let targets = call.callee.targets();
            if depth >= max_depth || targets.is_empty() {
                break;
            }
            let callee = targets[c as usize % targets.len()];
            let site = CallSiteId::new(starts[top.func.index()] + i);
            top.calls_made += 1;
            events.push(Event::Call {
                site: Some(site),
                callee,
            });
            stack.push(enter(callee));
        } else if top.block == Cfg::EXIT {
            events.push(Event::Return);
            stack.pop();
        } else {
            let succs = func.cfg.succs(top.block);
            if succs.is_empty() {
                break;
            }
            let e = succs[c as usize % succs.len()];
            events.push(Event::Edge(e));
            top.block = func.cfg.dst(e);
            top.calls_made = 0;
        }
    }
    events
}

/// Where an exception thrown now is caught: how many activations it leaves
/// and the handler, chosen by `c` among the activations with handlers.
fn catch(sg: &Supergraph, stack: &[Activation], c: u32) -> Option<(usize, NodeId)> {
    let catchers: Vec<usize> = (0..stack.len())
        .filter(|&unwind| {
            let f = stack[stack.len() - 1 - unwind].func;
            !sg.functions[f.index()].handlers.is_empty()
        })
        .collect();
    let unwind = *catchers.get((c / 16) as usize % catchers.len().max(1))?;
    let handlers = &sg.functions[stack[stack.len() - 1 - unwind].func.index()].handlers;
    Some((unwind, handlers[(c / 256) as usize % handlers.len()]))
}
