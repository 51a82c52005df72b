//! Random executions of a supergraph: the input of the property tests of
//! the interprocedural techniques, and, without a run, a way to pick
//! interesting path segments of a module (the spec-testsuite conformance
//! of the `ippp` mode, which has no profile of the module to take them
//! from). A sample, not a model of any real run.

use crate::cfg::{Cfg, NodeId};
use crate::interproc::{CallSiteId, Event, FuncId, Supergraph};

/// One activation of [`random_execution`].
struct Activation {
    func: FuncId,
    block: NodeId,
    /// How many of the block's calls it has made.
    calls_made: usize,
}

/// An execution of `sg` from the host entering its first entry function:
/// at each step, choice `c` picks the next call of the block (its callee
/// `c % n` among an indirect call's, or among the callees of a call's
/// cases), or the `c % n`-th successor edge, or
/// the return at EXIT; now and then (`c % 16 == 15`) the host enters an
/// entry function (a callback), and (`c % 4 == 2`) a throwing block
/// throws to a handler of some activation (if none has one, the exception
/// escapes and the execution ends), or else (`c % 32 == 22`) an import
/// called where control is throws to one, and (`c % 2 == 1`) a block
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
        // The block's next call not made yet (its first case).
        let pending = func
            .calls
            .iter()
            .enumerate()
            .filter(|&(i, call)| call.block == top.block && !func.is_case(i))
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
        } else if let (2, None, None, true) =
            (c % 4, pending, thrown, func.throws.contains(&top.block))
        {
            events.push(Event::Escape);
            break;
        } else if let (22, Some((unwind, handler))) = (c % 32, thrown) {
            // An import called from here throws.
            events.push(Event::ImportThrow { unwind, handler });
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
        } else if let Some((i, _)) = pending {
            // (case, callee) over the call's cases.
            let cases = func.case_group(i);
            let targets: Vec<(usize, FuncId)> = cases
                .flat_map(|k| func.calls[k].callee.targets().iter().map(move |&g| (k, g)))
                .collect();
            if depth >= max_depth || targets.is_empty() {
                break;
            }
            let (case, callee) = targets[c as usize % targets.len()];
            let site = CallSiteId::new(starts[top.func.index()] + case);
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
