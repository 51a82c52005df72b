//! The call graph of a [`Supergraph`]: which call sites are cut
//! (Transformation 3 of section 3.2, section 8's hybrids, section 9.2.3's
//! indirect calls), the entry functions that result, an order of the
//! functions with callers first, its strongly connected components, and
//! maxEnters (section 3.2).
//!
//! Terms:
//! - *recursive call site*: a direct call site that is a backedge of a
//!   depth-first search of the call graph (its callee is on the search's
//!   stack). Cutting them leaves the call graph acyclic; it need not be
//!   reducible.
//! - *cut call site*: a recursive one, an indirect one, or one a hybrid
//!   policy chose. Its `c -> Entry_Q` and `Exit_Q -> r` edges are replaced
//!   by the summary edge `c -> r`, and `Q` becomes an entry function.
//!
//! Departures from the paper:
//! - The search starts from the entry functions in their order and then
//!   from every function not yet reached (in id order), so a function only
//!   the host enters is classified too.
//! - maxEnters counts one entry from `Entry_global` for every entry function
//!   (the paper's `maxEnters[main] = 1`), plus its calls.

use crate::error::GraphError;
use crate::interproc::supergraph::{CallSiteId, Callee, FuncId, Supergraph};

/// The call graph, classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallGraph {
    /// Per call site, whether it is cut.
    pub cut: Vec<bool>,
    /// Per call site, whether the depth-first search found it recursive.
    pub recursive: Vec<bool>,
    /// The entry functions: the supergraph's, then the targets of cut call
    /// sites and of tail calls not among them, by id. The order of the
    /// `Entry_global` edges.
    pub entries: Vec<FuncId>,
    /// Functions with every caller through an uncut site before its callees.
    pub callers_first: Vec<FuncId>,
    /// Per function, its strongly connected component (over every call
    /// site, cut or not); components are numbered callees first.
    pub scc: Vec<usize>,
}

impl CallGraph {
    /// Classifies `sg`'s call sites; `extra_cuts` marks sites a hybrid
    /// policy cuts (section 8).
    pub fn new(sg: &Supergraph, extra_cuts: &[CallSiteId]) -> CallGraph {
        let calls = call_lists(sg);
        let mut cut: Vec<bool> = calls
            .iter()
            .flatten()
            .map(|(_, callee)| matches!(callee, Callee::Indirect(_)))
            .collect();
        for s in extra_cuts {
            if let Some(c) = cut.get_mut(s.index()) {
                *c = true;
            }
        }
        let recursive = recursive_sites(sg, &calls, &cut);
        for (c, &r) in cut.iter_mut().zip(&recursive) {
            *c |= r;
        }
        let entries = entry_functions(sg, &calls, &cut);
        let callers_first = callers_first(sg, &calls, &cut);
        let scc = sccs(sg.functions.len(), &calls);
        CallGraph {
            cut,
            recursive,
            entries,
            callers_first,
            scc,
        }
    }

    /// Whether `f` calls itself through some chain of call sites.
    pub fn is_recursive(&self, sg: &Supergraph, f: FuncId) -> bool {
        let same = self
            .scc
            .iter()
            .filter(|&&s| s == self.scc[f.index()])
            .count();
        same > 1
            || sg.functions[f.index()]
                .calls
                .iter()
                .any(|c| c.callee.may_call(f))
    }

    /// maxEnters (section 3.2): per function, a bound on how often an
    /// unbalanced-left path enters it.
    pub fn max_enters(&self, sg: &Supergraph) -> Result<Vec<u64>, GraphError> {
        let mut max = vec![0u64; sg.functions.len()];
        for f in &self.entries {
            max[f.index()] = 1;
        }
        let starts = sg.site_starts();
        for &q in &self.callers_first {
            let func = &sg.functions[q.index()];
            for (i, call) in func.calls.iter().enumerate() {
                if let (Callee::Direct(p), false) = (&call.callee, self.cut[starts[q.index()] + i])
                {
                    max[p.index()] = max[p.index()].checked_add(max[q.index()]).ok_or(
                        GraphError::PathCountOverflow {
                            function: Some(p.index()),
                        },
                    )?;
                }
            }
        }
        Ok(max)
    }
}

/// Per function, its call sites as (global id, callee).
type CallLists<'a> = Vec<Vec<(CallSiteId, &'a Callee)>>;

fn call_lists(sg: &Supergraph) -> CallLists<'_> {
    let mut id = 0;
    sg.functions
        .iter()
        .map(|f| {
            f.calls
                .iter()
                .map(|c| {
                    id += 1;
                    (CallSiteId::new(id - 1), &c.callee)
                })
                .collect()
        })
        .collect()
}

/// Direct uncut sites whose callee is on the stack of a depth-first search
/// (explicit stack, call sites in order).
fn recursive_sites(sg: &Supergraph, calls: &CallLists, cut: &[bool]) -> Vec<bool> {
    #[derive(Copy, Clone, PartialEq)]
    enum State {
        New,
        OnStack,
        Done,
    }
    let n = sg.functions.len();
    let mut recursive = vec![false; cut.len()];
    let mut state = vec![State::New; n];
    let roots = sg.entries.iter().map(|f| f.index()).chain(0..n);
    for root in roots {
        if state[root] != State::New {
            continue;
        }
        state[root] = State::OnStack;
        let mut stack = vec![(root, 0usize)];
        while let Some(top) = stack.last_mut() {
            let (f, next) = *top;
            match calls[f].get(next) {
                Some(&(site, callee)) => {
                    top.1 += 1;
                    let Callee::Direct(g) = callee else { continue };
                    if cut[site.index()] {
                        continue;
                    }
                    match state[g.index()] {
                        State::OnStack => recursive[site.index()] = true,
                        State::New => {
                            state[g.index()] = State::OnStack;
                            stack.push((g.index(), 0));
                        }
                        State::Done => {}
                    }
                }
                None => {
                    state[f] = State::Done;
                    stack.pop();
                }
            }
        }
    }
    recursive
}

/// The supergraph's entries, then the targets of cut sites by id.
fn entry_functions(sg: &Supergraph, calls: &CallLists, cut: &[bool]) -> Vec<FuncId> {
    let n = sg.functions.len();
    let mut is_entry = vec![false; n];
    let mut entries = Vec::new();
    for &f in &sg.entries {
        if !is_entry[f.index()] {
            is_entry[f.index()] = true;
            entries.push(f);
        }
    }
    let mut targeted = vec![false; n];
    for &(site, callee) in calls.iter().flatten() {
        if cut[site.index()] {
            for g in callee.targets() {
                targeted[g.index()] = true;
            }
        }
    }
    let tail_callees = sg.functions.iter().flat_map(|f| &f.tail_calls);
    for g in tail_callees.flat_map(|t| t.callee.targets()) {
        targeted[g.index()] = true;
    }
    entries.extend(
        (0..n)
            .filter(|&f| targeted[f] && !is_entry[f])
            .map(FuncId::new),
    );
    entries
}

/// Kahn's algorithm over the uncut direct sites (acyclic once the
/// recursive ones are cut): every caller before its callees.
fn callers_first(sg: &Supergraph, calls: &CallLists, cut: &[bool]) -> Vec<FuncId> {
    let n = sg.functions.len();
    let uncut = |f: usize| {
        calls[f].iter().filter_map(|&(site, callee)| match callee {
            Callee::Direct(g) if !cut[site.index()] => Some(g.index()),
            _ => None,
        })
    };
    let mut indegree = vec![0usize; n];
    for g in (0..n).flat_map(uncut) {
        indegree[g] += 1;
    }
    let mut ready: Vec<usize> = (0..n).rev().filter(|&f| indegree[f] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(f) = ready.pop() {
        order.push(FuncId::new(f));
        for g in uncut(f) {
            indegree[g] -= 1;
            if indegree[g] == 0 {
                ready.push(g);
            }
        }
    }
    debug_assert_eq!(order.len(), n, "cutting recursive sites leaves no cycle");
    order
}

/// Tarjan's strongly connected components with an explicit stack, over
/// every call site (direct and indirect). Components come out callees
/// first (reverse topological order of the condensation).
fn sccs(n: usize, calls: &CallLists) -> Vec<usize> {
    const NONE: usize = usize::MAX;
    let adj: Vec<Vec<usize>> = calls
        .iter()
        .map(|sites| {
            let targets = sites.iter().flat_map(|&(_, c)| c.targets());
            targets.map(|g| g.index()).collect()
        })
        .collect();
    let (mut index, mut low, mut comp) = (vec![NONE; n], vec![0; n], vec![NONE; n]);
    let (mut next_index, mut next_comp) = (0, 0);
    let mut tarjan_stack: Vec<usize> = Vec::new();
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        tarjan_stack.push(root);
        while let Some(top) = stack.last_mut() {
            let (f, i) = *top;
            match adj[f].get(i) {
                Some(&g) => {
                    top.1 += 1;
                    if index[g] == NONE {
                        index[g] = next_index;
                        low[g] = next_index;
                        next_index += 1;
                        tarjan_stack.push(g);
                        stack.push((g, 0));
                    } else if comp[g] == NONE {
                        low[f] = low[f].min(index[g]);
                    }
                }
                None => {
                    stack.pop();
                    if let Some(&(parent, _)) = stack.last() {
                        low[parent] = low[parent].min(low[f]);
                    }
                    if low[f] == index[f] {
                        while let Some(g) = tarjan_stack.pop() {
                            comp[g] = next_comp;
                            if g == f {
                                break;
                            }
                        }
                        next_comp += 1;
                    }
                }
            }
        }
    }
    comp
}
