//! The call graph of a module and its strongly connected components: the
//! module-level analysis interprocedural techniques start from. Melski &
//! Reps (1999, "Interprocedural path profiling", section 4) number paths of
//! the supergraph, whose interprocedural edges are the call graph's; a
//! recursive function (one in a cycle of the call graph) needs its paths cut
//! at its recursive call sites (section 5).
//!
//! # Model
//! - One node per function of the module's index space, imports first.
//! - An edge `f -> g` when some call site of `f` may call `g`:
//!   `call g` / `return_call g` calls `g`; `call_indirect t` and `call_ref t`
//!   (and their tail forms) may call every *declared* function (named by an
//!   element segment, an export, or a global or table initialiser: the only
//!   functions a `ref.func` can name, so the only ones of this module that
//!   can reach a table or a reference) whose type is `t` after rec-group
//!   canonicalisation, or a declared subtype of `t`: the run-time check
//!   `call_indirect` and `call_ref` pass.
//! - Imports are leaves.
//! - The call sites of a function the CFG builder models are its
//!   [`FunctionCfg::calls`] (reachable code only); a function it refuses
//!   contributes every call instruction of its body.
//!
//! # Departures and limits
//! - The table of a `call_indirect` is ignored: any table can be written at
//!   run time (`table.set`, `table.init`, by the host) with any declared
//!   function, so the type alone bounds the targets.
//! - Functions of other modules (reached through an imported table or a
//!   reference passed in) are not nodes, and a host that calls back into an
//!   export from an import makes no edge: the graph describes this
//!   module's code only.
//!
//! The strongly connected components come from petgraph's iterative
//! Kosaraju (no recursion over the graph's depth, which reaches 10^5 on
//! large modules), in reverse topological order: a component comes after
//! every component it calls.

use crate::cfg::{Callee, ModuleInfo};
use crate::error::{Result, WasmError};
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::HashMap;
use wasmparser::types::{CoreTypeId, Types};
use wasmparser::{
    ConstExpr, ElementItems, ExternalKind, Operator, Parser, Payload, TableInit, ValidPayload,
    Validator,
};

/// The call graph of one module.
#[derive(Clone, Debug)]
pub struct CallGraph {
    num_imported_funcs: u32,
    /// `callees[callee_start[f]..callee_start[f + 1]]`: the functions `f`
    /// may call, sorted, without repeats.
    callee_start: Vec<u32>,
    callees: Vec<u32>,
    /// Per type index: its class in `class_start` (NONE for a type no
    /// declared function matches).
    type_class: Vec<u32>,
    /// `class_targets[class_start[c]..class_start[c + 1]]`: the declared
    /// functions an indirect call of class `c` may reach, sorted.
    class_start: Vec<u32>,
    class_targets: Vec<u32>,
    /// Per function: its component, numbered in reverse topological order.
    scc_of: Vec<u32>,
    /// `scc_members[scc_start[c]..scc_start[c + 1]]`: component `c`, sorted.
    scc_start: Vec<u32>,
    scc_members: Vec<u32>,
    /// Per function: it has an edge to itself.
    self_loop: Vec<bool>,
}

const NONE: u32 = u32::MAX;

impl CallGraph {
    /// The call graph of the module `bytes` that `info` describes
    /// ([`crate::analyze`] of the same bytes).
    pub fn new(bytes: &[u8], info: &ModuleInfo) -> Result<Self> {
        let expected = crate::module::module_hash(bytes);
        if expected != info.module_hash {
            return Err(WasmError::InfoMismatch {
                expected: info.module_hash.clone(),
                actual: expected,
            });
        }
        let sections = Sections::read(bytes, info)?;
        let num_funcs = sections.types.as_ref().function_count();
        let (type_class, class_start, class_targets) = type_classes(&sections);
        let mut graph = CallGraph {
            num_imported_funcs: info.num_imported_funcs,
            callee_start: Vec::with_capacity(num_funcs as usize + 1),
            callees: Vec::new(),
            type_class,
            class_start,
            class_targets,
            scc_of: Vec::new(),
            scc_start: Vec::new(),
            scc_members: Vec::new(),
            self_loop: vec![false; num_funcs as usize],
        };
        graph.callee_start.push(0);
        let mut out = Vec::new();
        for f in 0..num_funcs {
            out.clear();
            let defined = f.checked_sub(info.num_imported_funcs);
            match defined.and_then(|i| info.functions.get(i as usize)) {
                Some(Ok(fcfg)) => graph.add_sites(fcfg.calls.iter().map(|c| c.callee), &mut out),
                Some(Err(_)) => {
                    let body = defined.and_then(|i| sections.bodies.get(i as usize));
                    graph.add_sites(body.into_iter().flatten().copied(), &mut out)
                }
                None => {}
            }
            out.sort_unstable();
            out.dedup();
            graph.self_loop[f as usize] = out.binary_search(&f).is_ok();
            graph.callees.extend_from_slice(&out);
            graph.callee_start.push(graph.callees.len() as u32);
        }
        graph.components();
        Ok(graph)
    }

    /// Appends the possible targets of `sites` to `out`.
    fn add_sites(&self, sites: impl Iterator<Item = Callee>, out: &mut Vec<u32>) {
        for callee in sites {
            out.extend_from_slice(self.targets(&callee));
        }
    }

    /// Number of functions, imports included.
    pub fn num_funcs(&self) -> u32 {
        (self.callee_start.len() - 1) as u32
    }

    /// Whether function `f` is an import (a leaf).
    pub fn is_import(&self, f: u32) -> bool {
        f < self.num_imported_funcs
    }

    /// The functions `f` may call, sorted, each once.
    pub fn callees(&self, f: u32) -> &[u32] {
        let (from, to) = (
            self.callee_start[f as usize],
            self.callee_start[f as usize + 1],
        );
        &self.callees[from as usize..to as usize]
    }

    /// The functions one call site may call, sorted: one for a direct call,
    /// the declared functions of its type for an indirect one.
    pub fn targets<'s>(&'s self, callee: &'s Callee) -> &'s [u32] {
        let t = match callee {
            Callee::Direct(f) => return std::slice::from_ref(f),
            Callee::Indirect { type_index, .. } | Callee::Ref(type_index) => *type_index,
        };
        let class = self.type_class.get(t as usize).copied().unwrap_or(NONE);
        if class == NONE {
            return &[];
        }
        let (from, to) = (
            self.class_start[class as usize],
            self.class_start[class as usize + 1],
        );
        &self.class_targets[from as usize..to as usize]
    }

    /// Number of strongly connected components.
    pub fn num_sccs(&self) -> u32 {
        (self.scc_start.len() - 1) as u32
    }

    /// The component of function `f`. Components are numbered in reverse
    /// topological order: every function `f` calls is in a component
    /// numbered at most `scc_of(f)`.
    pub fn scc_of(&self, f: u32) -> u32 {
        self.scc_of[f as usize]
    }

    /// The functions of component `c`, sorted.
    pub fn scc(&self, c: u32) -> &[u32] {
        let (from, to) = (self.scc_start[c as usize], self.scc_start[c as usize + 1]);
        &self.scc_members[from as usize..to as usize]
    }

    /// Whether `f` lies on a cycle of the call graph (calls itself, or
    /// shares its component with another function).
    pub fn is_recursive(&self, f: u32) -> bool {
        self.self_loop[f as usize] || self.scc(self.scc_of(f)).len() > 1
    }

    /// Fills the components, with petgraph's Kosaraju (iterative).
    fn components(&mut self) {
        let n = self.num_funcs();
        let mut g: DiGraph<(), (), u32> = DiGraph::with_capacity(n as usize, self.callees.len());
        for _ in 0..n {
            g.add_node(());
        }
        for f in 0..n {
            for &h in self.callees(f) {
                g.add_edge(NodeIndex::new(f as usize), NodeIndex::new(h as usize), ());
            }
        }
        let sccs = petgraph::algo::kosaraju_scc(&g);
        self.scc_of = vec![0; n as usize];
        self.scc_start = Vec::with_capacity(sccs.len() + 1);
        self.scc_start.push(0);
        self.scc_members = Vec::with_capacity(n as usize);
        for (c, scc) in sccs.iter().enumerate() {
            let from = self.scc_members.len();
            for v in scc {
                self.scc_of[v.index()] = c as u32;
                self.scc_members.push(v.index() as u32);
            }
            self.scc_members[from..].sort_unstable();
            self.scc_start.push(self.scc_members.len() as u32);
        }
    }
}

/// What the call graph needs of the module's sections.
struct Sections {
    types: Types,
    /// Functions a `ref.func` may name, in any order, maybe repeated.
    declared: Vec<u32>,
    /// Per defined function the builder refused: the callees of its body's
    /// call instructions (empty for the others).
    bodies: Vec<Vec<Callee>>,
}

impl Sections {
    fn read(bytes: &[u8], info: &ModuleInfo) -> Result<Self> {
        let err = |e: wasmparser::BinaryReaderError| WasmError::invalid(&e);
        let mut validator = Validator::new_with_features(crate::module::features());
        let mut parser = Parser::new(0);
        parser.set_features(crate::module::features());
        let mut declared = Vec::new();
        let mut bodies = Vec::new();
        let mut types = None;
        for payload in parser.parse_all(bytes) {
            let payload = payload.map_err(err)?;
            match &payload {
                Payload::ElementSection(r) => {
                    for elem in r.clone() {
                        match elem.map_err(err)?.items {
                            ElementItems::Functions(fs) => {
                                for f in fs {
                                    declared.push(f.map_err(err)?);
                                }
                            }
                            ElementItems::Expressions(_, es) => {
                                for e in es {
                                    ref_funcs(&e.map_err(err)?, &mut declared)?;
                                }
                            }
                        }
                    }
                }
                Payload::ExportSection(r) => {
                    for export in r.clone() {
                        let export = export.map_err(err)?;
                        if export.kind == ExternalKind::Func {
                            declared.push(export.index);
                        }
                    }
                }
                Payload::GlobalSection(r) => {
                    for global in r.clone() {
                        ref_funcs(&global.map_err(err)?.init_expr, &mut declared)?;
                    }
                }
                Payload::TableSection(r) => {
                    for table in r.clone() {
                        if let TableInit::Expr(e) = table.map_err(err)?.init {
                            ref_funcs(&e, &mut declared)?;
                        }
                    }
                }
                Payload::CodeSectionEntry(body) => {
                    let refused = matches!(info.functions.get(bodies.len()), Some(Err(_)));
                    bodies.push(if refused {
                        body_calls(body)?
                    } else {
                        Vec::new()
                    });
                }
                _ => {}
            }
            // Sections only: the bodies were validated by `analyze`.
            if let ValidPayload::End(t) = validator.payload(&payload).map_err(err)? {
                types = Some(t);
            }
        }
        let types = types.ok_or_else(|| WasmError::Invalid {
            offset: bytes.len(),
            message: "the module does not end".into(),
        })?;
        Ok(Sections {
            types,
            declared,
            bodies,
        })
    }
}

/// The functions `ref.func` names in a constant expression.
fn ref_funcs(expr: &ConstExpr<'_>, out: &mut Vec<u32>) -> Result<()> {
    for op in expr.get_operators_reader() {
        if let Operator::RefFunc { function_index } = op.map_err(|e| WasmError::invalid(&e))? {
            out.push(function_index);
        }
    }
    Ok(())
}

/// Every call instruction of a body, reachable or not.
fn body_calls(body: &wasmparser::FunctionBody<'_>) -> Result<Vec<Callee>> {
    let err = |e: wasmparser::BinaryReaderError| WasmError::invalid(&e);
    let mut calls = Vec::new();
    for op in body.get_operators_reader().map_err(err)? {
        calls.push(match op.map_err(err)? {
            Operator::Call { function_index } | Operator::ReturnCall { function_index } => {
                Callee::Direct(function_index)
            }
            Operator::CallIndirect {
                type_index,
                table_index,
            }
            | Operator::ReturnCallIndirect {
                type_index,
                table_index,
            } => Callee::Indirect {
                type_index,
                table: table_index,
            },
            Operator::CallRef { type_index } | Operator::ReturnCallRef { type_index } => {
                Callee::Ref(type_index)
            }
            _ => continue,
        });
    }
    Ok(calls)
}

/// Per type index its class, and per class the declared functions an
/// indirect call through a type of that class may reach (CSR).
fn type_classes(s: &Sections) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    // Per canonical type: the declared functions of it or of a subtype.
    let types = s.types.as_ref();
    let mut reach: HashMap<CoreTypeId, Vec<u32>> = HashMap::new();
    let mut declared = s.declared.clone();
    declared.sort_unstable();
    declared.dedup();
    for &f in &declared {
        if f >= types.function_count() {
            continue; // invalid, and rejected by the validator before here
        }
        let mut t = Some(types.core_function_at(f));
        while let Some(id) = t {
            reach.entry(id).or_default().push(f);
            t = types.supertype_of(id);
        }
    }
    let mut class_of: HashMap<CoreTypeId, u32> = HashMap::new();
    let mut start = vec![0u32];
    let mut targets = Vec::new();
    let num_types = types.core_type_count_in_module();
    let mut type_class = Vec::with_capacity(num_types as usize);
    for t in 0..num_types {
        let id = types.core_type_at_in_module(t);
        let class = match (class_of.get(&id), reach.get(&id)) {
            (Some(&c), _) => c,
            (None, Some(fs)) => {
                targets.extend_from_slice(fs);
                start.push(targets.len() as u32);
                let c = start.len() as u32 - 2;
                class_of.insert(id, c);
                c
            }
            (None, None) => NONE,
        };
        type_class.push(class);
    }
    (type_class, start, targets)
}
