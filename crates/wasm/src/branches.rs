//! The branch stream of a run (Vaswani thesis 5.2), made online from its
//! edge trace: one [`BranchEvent`] per retiring branch, as the commit stage
//! would hand it to the hardware path profiler.
//!
//! [`BranchStream::edge`] takes the run's trace events (function, CFG edge)
//! in order, as the runner's trace sink receives them, and passes each
//! branch to a callback; it keeps a stack of the frames live in the run, so
//! it needs no more memory than the run's call depth.
//!
//! What each edge reports ([`FunctionCfg::edge_kinds`]):
//!
//! | edge                                     | event                          |
//! |------------------------------------------|--------------------------------|
//! | `Entry` (a function starts)              | `Call`, target its first block |
//! | taken `br_if`, `br_on_*`; `if` then-arm  | `Conditional { taken: true }`  |
//! | their not-taken side; `if` else-arm      | `Conditional { taken: false }` |
//! | `br_table` target                        | `Switch { arm, arms }`         |
//! | `br`                                     | `Jump`                         |
//! | any of these into EXIT, `return`, falling off the end | `Return`          |
//! | `return_call*`                           | `TailCall`                     |
//! | `throw`, `throw_ref`, `unreachable`      | `Throw { frames }`             |
//! | `Catch` (a handler starts)               | `Catch`                        |
//! | `Catch` with no `throw` before it        | `Unwind { frames }`, `Catch`   |
//! | a call from an import (a callback)       | `Unwind { frames: 0 }`, indirect `Call` |
//! | `throw` an import catches (no `Catch`)    | `Throw { frames }`, `Unwind { frames: 0 }` |
//! | other fall-through                       | none                           |
//!
//! `backward` is set exactly for the DFS backedges of the CFG: the edges
//! into a loop header from inside its loop (self loops included). Addresses
//! are module byte offsets: a branch's is its instruction's (the last of its
//! block), a target is the first instruction of the target block; a call's
//! address is its call instruction's and its return's target the
//! instruction after it; 0 stands for the host.
//!
//! Departures and approximations:
//! * An arm of `br_table` counts among `arms` once per distinct target
//!   label (one edge per label), and `arm` is the index of its edge among
//!   the block's `br_table` edges: the CFG does not keep which indices of
//!   the table name the same label.
//! * A branch into EXIT (a `br_if` or `br_table` to the function's label)
//!   is a `Return`: control leaves the function.
//! * `unreachable` traps: it is a `Throw` that unwinds every frame, and the
//!   stream ends. Any other trap (or `proc_exit`) just ends the stream;
//!   [`BranchStream::frames`] then lists the frames that were live, whose
//!   paths were in flight.
//! * `Throw { frames }` counts the frames unwound above the frame that
//!   catches (0 when a function catches its own throw). When no traced
//!   function catches, no `Catch` follows: it counts the frames down to the
//!   nearest one entered from outside (all of them, or down to a
//!   callback's, whose import caught the exception and returns or calls
//!   back again into the frame below). An `Unwind { frames: 0 }` then says
//!   that the import's unseen code ran, as before a callback. The trace does not say which activation catches: the
//!   innermost activation of the function whose handler starts is taken.
//!   The event is held until the next trace event says where the exception
//!   landed ([`BranchStream::finish`] flushes it at the end of a run).
//! * A handler that starts with no `throw` before it caught what an import
//!   (or the host) threw: there is no thrower whose path ends, so the
//!   frames unwound, the import's caller among them unless it catches, are
//!   an [`BranchKind::Unwind`] (at address 0, the host) and their paths are
//!   cut short, as the software profilers leave them uncounted.
//! * A function entered while its caller's block has no call site left
//!   that may call it (an indirect call, or a direct call of it) was
//!   called back by an import the block called: an `Unwind { frames: 0 }` (at address 0) cuts the path in
//!   flight short, since the import's unseen branches end it, and the
//!   `Call` is made from the block's next import call and returns after
//!   it (the import may call back again). A callback from an import called
//!   before a later call site of the same block that may call the same
//!   function is taken for a call from that site.
//! * A `TailCall`'s target is known when its callee's entry arrives. A
//!   tail call of an untraced function (an import) is a `Return` to the
//!   caller's caller: the callee returns for the tail caller, and no event
//!   of it is seen, as for the software profilers (its target 0 only when
//!   the run ends before anything else is traced).
//! * Which call instruction of the caller's block made a call is inferred:
//!   the next one in the block that may call the function entered (an
//!   indirect call, or a direct call of it). Calls do not end
//!   blocks, so `instrs` counts a block's instructions when the block is
//!   entered: a call's event includes its whole calling block, and the
//!   branch that ends that block after the return counts none of it.

use crate::cfg::{EdgeKind, FunctionCfg, ModuleInfo};
use crate::error::{Result, WasmError};
use pathprof_graph::{Cfg, EdgeId, NodeId};
pub use pathprof_simulator::{BranchEvent, BranchKind};
use wasmparser::{BinaryReader, Operator, OperatorsReader};

pub mod regenerate;
pub use regenerate::{HwStep, PathEnd, RegeneratedHwPath, Regenerator, WalkRules};

/// A call instruction of a block.
#[derive(Copy, Clone, Debug)]
struct CallSite {
    /// Module offset of the call instruction.
    at: u32,
    /// Module offset of the instruction after it: where the callee returns.
    next: u32,
    indirect: bool,
    /// Whether it can reach traced code itself; the others (imports,
    /// functions without a CFG) only by calling back.
    traced: bool,
    /// The callee of a direct call.
    callee: Option<u32>,
}

/// What the stream needs of one basic block.
#[derive(Clone, Debug, Default)]
struct Block {
    offset: u32,
    instrs: u32,
    /// Module offset of its last instruction: the branch that ends it.
    last: u32,
    /// Whether that instruction is `return_call_indirect` or `return_call_ref`.
    tail_indirect: bool,
    /// Whether it is a `return_call` of a traced function, which the stream
    /// always reports as a `TailCall` (of an untraced one, as a `Return`).
    tail_traced: bool,
    /// Its call instructions, in order.
    calls: Vec<CallSite>,
}

/// What crossing one edge reports.
#[derive(Copy, Clone, Debug)]
struct Edge {
    src: NodeId,
    dst: NodeId,
    kind: EdgeKind,
    backward: bool,
    /// For a `br_table` edge: its index among its block's `br_table` edges
    /// and their number. For a fall-through, `arms` is 1 when it is the
    /// not-taken side of a conditional branch.
    arm: u32,
    arms: u32,
}

/// What the stream needs of one function: per node and per edge.
#[derive(Clone, Debug)]
struct Function {
    blocks: Vec<Block>,
    edges: Vec<Edge>,
}

/// A live frame, as the stream saw it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Function index in the module.
    pub func: u32,
    /// The block it executes.
    pub block: NodeId,
    /// Index among that block's call sites of the next call to match.
    next_call: u32,
    /// Where it returns to (0: the host).
    return_to: u32,
    /// Entered from outside the traced code (the host, a callback from an
    /// import, or a tail call from such a frame): an exception that leaves
    /// it was caught there.
    hosted: bool,
}

/// An event held until the next trace event completes it.
#[derive(Copy, Clone, Debug)]
enum Held {
    TailCall {
        address: u32,
        indirect: bool,
        instrs: u32,
        return_to: u32,
        hosted: bool,
    },
    Throw {
        address: u32,
        instrs: u32,
    },
}

/// Turns a run's edge trace into its branch stream, online.
pub struct BranchStream<F: FnMut(BranchEvent)> {
    /// Per defined function; `None` for one without a CFG.
    functions: Vec<Option<Function>>,
    num_imported: u32,
    stack: Vec<Frame>,
    /// Instructions of the blocks entered since the last event.
    instrs: u64,
    held: Option<Held>,
    out: F,
}

impl<F: FnMut(BranchEvent)> BranchStream<F> {
    /// A stream for runs of the module `bytes`, which `info` describes,
    /// passing each branch to `out`.
    pub fn new(bytes: &[u8], info: &ModuleInfo, out: F) -> Result<Self> {
        Ok(BranchStream {
            functions: functions(bytes, info)?,
            num_imported: info.num_imported_funcs,
            stack: Vec::new(),
            instrs: 0,
            held: None,
            out,
        })
    }

    /// The frames live now, outermost first: when a run has ended in a trap
    /// or `proc_exit`, the frames whose paths were in flight.
    pub fn frames(&self) -> &[Frame] {
        &self.stack
    }

    /// Takes the run's next trace event: edge `edge` of function `func`.
    pub fn edge(&mut self, func: u32, edge: u32) -> Result<()> {
        let unknown = || WasmError::UnknownEdge {
            func_index: func,
            edge,
        };
        let f = func
            .checked_sub(self.num_imported)
            .and_then(|i| self.functions.get(i as usize)?.as_ref())
            .ok_or_else(unknown)?;
        let e = *f.edges.get(edge as usize).ok_or_else(unknown)?;
        let src = f.blocks[e.src.index()].clone();
        let (target, entered) = {
            let dst = &f.blocks[e.dst.index()];
            (dst.offset, dst.instrs)
        };
        if let Some(held) = self.held.take() {
            if self.complete(held, func, e, target) {
                self.instrs += u64::from(entered);
                return Ok(());
            }
        }
        match e.kind {
            EdgeKind::Entry => self.call(func, e.dst, target),
            EdgeKind::Catch => {
                // An exception from untraced code (or the host).
                self.catch(func, e.dst, None, target);
            }
            _ if e.dst == Cfg::EXIT => self.leave(e.kind, &src),
            _ => {
                if let Some(kind) = branch_kind(&e) {
                    self.emit(kind, src.last, target, e.backward);
                }
                if let Some(top) = self.stack.last_mut() {
                    top.block = e.dst;
                    top.next_call = 0;
                }
            }
        }
        self.instrs += u64::from(entered);
        Ok(())
    }

    /// Ends the stream: emits an event still held (a throw that nothing
    /// caught, a tail call of an untraced function).
    pub fn finish(&mut self) {
        match self.held.take() {
            Some(Held::Throw { address, instrs }) => {
                let frames = self.stack.len() as u32;
                self.stack.clear();
                self.emit_with(BranchKind::Throw { frames }, address, 0, instrs);
            }
            Some(Held::TailCall {
                address,
                indirect,
                instrs,
                ..
            }) => self.emit_with(BranchKind::TailCall { indirect }, address, 0, instrs),
            None => {}
        }
    }

    /// Completes a held event with the next trace event, edge `e` of
    /// `func`; returns whether that event is accounted for.
    fn complete(&mut self, held: Held, func: u32, e: Edge, target: u32) -> bool {
        match held {
            Held::TailCall {
                address,
                indirect,
                instrs,
                return_to,
                hosted,
            } => {
                let entry = e.kind == EdgeKind::Entry;
                if entry {
                    self.emit_with(BranchKind::TailCall { indirect }, address, target, instrs);
                } else {
                    self.emit_with(BranchKind::Return, address, return_to, instrs);
                }
                if entry {
                    self.stack.push(Frame {
                        func,
                        block: e.dst,
                        next_call: 0,
                        return_to,
                        hosted,
                    });
                }
                entry
            }
            Held::Throw { address, instrs } => {
                if e.kind == EdgeKind::Catch {
                    self.catch(func, e.dst, Some((address, instrs)), target);
                    return true;
                }
                // Caught outside the traced code, by what entered the
                // nearest hosted frame: the frames down to it are left,
                // and the one below runs on.
                let keep = self.stack.iter().rposition(|f| f.hosted).unwrap_or(0);
                let frames = (self.stack.len() - keep) as u32;
                self.stack.truncate(keep);
                self.emit_with(BranchKind::Throw { frames }, address, 0, instrs);
                if keep > 0 {
                    // The import's own code ran since, unseen.
                    self.emit_with(BranchKind::Unwind { frames: 0 }, 0, 0, 0);
                }
                false
            }
        }
    }

    /// A function starts: a call from the frame on top, or from the host.
    fn call(&mut self, func: u32, entry: NodeId, target: u32) {
        let mut callback = false;
        let (address, return_to, indirect) = match self.stack.last_mut() {
            None => (0, 0, false),
            Some(caller) => {
                let f = self.functions[(caller.func - self.num_imported) as usize].as_ref();
                let block = f.map(|f| &f.blocks[caller.block.index()]);
                let from = caller.next_call as usize;
                let rest = block.map_or(&[][..], |b| b.calls.get(from..).unwrap_or(&[]));
                let calls = |c: &CallSite| c.traced && c.callee.is_none_or(|g| g == func);
                match rest.iter().position(calls) {
                    Some(i) => {
                        caller.next_call = (from + i + 1) as u32;
                        let site = &rest[i];
                        (site.at, site.next, site.indirect)
                    }
                    // No call site that reaches traced code is left: a
                    // callback from the block's next import call (which
                    // may call back again), returning after it; from the
                    // block's first instruction when none is left.
                    None => {
                        // No call site names the function called back:
                        // to the profiler it is an indirect call, which
                        // extended-call paths never extend (ppcr.rs), so
                        // a path's outcome bits never stand for it.
                        callback = true;
                        match rest.first() {
                            Some(site) => (site.at, site.next, true),
                            None => {
                                let at = block.map_or(0, |b| b.offset);
                                (at, at, true)
                            }
                        }
                    }
                }
            }
        };
        if callback {
            self.emit_with(BranchKind::Unwind { frames: 0 }, 0, 0, 0);
        }
        let hosted = callback || self.stack.is_empty();
        self.emit(BranchKind::Call { indirect }, address, target, false);
        self.stack.push(Frame {
            func,
            block: entry,
            next_call: 0,
            return_to,
            hosted,
        });
    }

    /// An edge into EXIT, from the block `src`.
    fn leave(&mut self, kind: EdgeKind, src: &Block) {
        let instrs = take(&mut self.instrs);
        match kind {
            EdgeKind::TailCall => {
                let left = self.stack.pop();
                let return_to = left.as_ref().map_or(0, |f| f.return_to);
                self.held = Some(Held::TailCall {
                    address: src.last,
                    indirect: src.tail_indirect,
                    instrs,
                    return_to,
                    hosted: left.is_none_or(|f| f.hosted),
                });
            }
            EdgeKind::Throw | EdgeKind::ThrowRef => {
                self.held = Some(Held::Throw {
                    address: src.last,
                    instrs,
                });
            }
            EdgeKind::Unreachable => {
                let frames = self.stack.len() as u32;
                self.stack.clear();
                self.emit_with(BranchKind::Throw { frames }, src.last, 0, instrs);
            }
            _ => {
                let target = self.stack.pop().map_or(0, |f| f.return_to);
                self.emit_with(BranchKind::Return, src.last, target, instrs);
            }
        }
    }

    /// A handler of `func` starts at `handler`: the frames above the
    /// innermost activation of `func` were unwound (all of them, and a new
    /// activation starts, when it has none). `thrown`: the address and
    /// instructions of the `throw` it caught; `None`: untraced code threw.
    fn catch(&mut self, func: u32, handler: NodeId, thrown: Option<(u32, u32)>, target: u32) {
        let frames = match self.stack.iter().rposition(|f| f.func == func) {
            Some(i) => {
                let frames = self.stack.len() - 1 - i;
                self.stack.truncate(i + 1);
                frames as u32
            }
            None => {
                let frames = self.stack.len() as u32;
                self.stack.clear();
                self.stack.push(Frame {
                    func,
                    block: handler,
                    next_call: 0,
                    return_to: 0,
                    hosted: true,
                });
                frames
            }
        };
        let address = match thrown {
            Some((address, instrs)) => {
                self.emit_with(BranchKind::Throw { frames }, address, 0, instrs);
                address
            }
            None => {
                self.emit_with(BranchKind::Unwind { frames }, 0, 0, 0);
                0
            }
        };
        self.emit(BranchKind::Catch, address, target, false);
        if handler == Cfg::EXIT {
            // A clause naming the function's own label: it returns at once.
            let target = self.stack.pop().map_or(0, |f| f.return_to);
            self.emit(BranchKind::Return, address, target, false);
        } else if let Some(top) = self.stack.last_mut() {
            top.block = handler;
            top.next_call = 0;
        }
    }

    /// Emits a branch, with the instructions retired since the last one.
    fn emit(&mut self, kind: BranchKind, address: u32, target: u32, backward: bool) {
        let instrs = take(&mut self.instrs);
        (self.out)(BranchEvent {
            kind,
            address,
            target,
            backward,
            instrs,
        });
    }

    /// Emits a branch (not backward) whose instructions were counted earlier.
    fn emit_with(&mut self, kind: BranchKind, address: u32, target: u32, instrs: u32) {
        (self.out)(BranchEvent {
            kind,
            address,
            target,
            backward: false,
            instrs,
        });
    }
}

/// The instructions counted so far, saturated to u32, and 0 left.
fn take(instrs: &mut u64) -> u32 {
    u32::try_from(std::mem::take(instrs)).unwrap_or(u32::MAX)
}

/// The branch an edge between two blocks reports, if any.
fn branch_kind(e: &Edge) -> Option<BranchKind> {
    Some(match e.kind {
        EdgeKind::BrIf
        | EdgeKind::BrOnNull
        | EdgeKind::BrOnNonNull
        | EdgeKind::BrOnCast
        | EdgeKind::BrOnCastFail
        | EdgeKind::IfThen => BranchKind::Conditional { taken: true },
        EdgeKind::IfElse => BranchKind::Conditional { taken: false },
        EdgeKind::Fallthrough if e.arms == 1 => BranchKind::Conditional { taken: false },
        EdgeKind::BrTable => BranchKind::Switch {
            arm: e.arm,
            arms: e.arms,
        },
        EdgeKind::Br => BranchKind::Jump,
        _ if e.backward => BranchKind::Jump,
        _ => return None,
    })
}

/// Whether an edge of this kind is the taken side of a conditional branch
/// whose not-taken side is a fall-through.
fn conditional(kind: EdgeKind) -> bool {
    matches!(
        kind,
        EdgeKind::BrIf
            | EdgeKind::BrOnNull
            | EdgeKind::BrOnNonNull
            | EdgeKind::BrOnCast
            | EdgeKind::BrOnCastFail
    )
}

/// What the stream needs of each defined function of the module `bytes`,
/// which `info` describes; `None` for one without a CFG.
fn functions(bytes: &[u8], info: &ModuleInfo) -> Result<Vec<Option<Function>>> {
    let traced = |callee: u32| {
        callee
            .checked_sub(info.num_imported_funcs)
            .and_then(|i| info.functions.get(i as usize))
            .is_some_and(|f| f.is_ok())
    };
    info.functions
        .iter()
        .map(|f| {
            f.as_ref()
                .ok()
                .map(|f| function(bytes, f, &traced))
                .transpose()
        })
        .collect()
}

/// What the stream needs of `f`, a function of the module `bytes`;
/// `traced(callee)`: whether a direct call of `callee` can reach traced code.
fn function(bytes: &[u8], f: &FunctionCfg, traced: &dyn Fn(u32) -> bool) -> Result<Function> {
    let blocks = f
        .blocks
        .iter()
        .map(|b| b.map_or(Ok(Block::default()), |b| block(bytes, b, traced)))
        .collect::<Result<Vec<_>>>()?;
    let cfg = &f.cfg;
    let edges = cfg
        .edge_ids()
        .map(|e| {
            let (src, dst) = cfg.edge(e);
            let kind = f.edge_kinds[e.index()];
            let siblings = cfg.succs(src);
            let (arm, arms) = match kind {
                EdgeKind::BrTable => {
                    let arms: Vec<EdgeId> = siblings
                        .iter()
                        .copied()
                        .filter(|s| f.edge_kinds[s.index()] == EdgeKind::BrTable)
                        .collect();
                    let arm = arms.iter().position(|&s| s == e).unwrap_or(0);
                    (arm as u32, arms.len() as u32)
                }
                EdgeKind::Fallthrough => {
                    let not_taken = siblings
                        .iter()
                        .any(|s| conditional(f.edge_kinds[s.index()]));
                    (0, u32::from(not_taken))
                }
                _ => (0, 0),
            };
            Edge {
                src,
                dst,
                kind,
                backward: cfg.is_backedge(e),
                arm,
                arms,
            }
        })
        .collect();
    Ok(Function { blocks, edges })
}

/// What the stream needs of the block `b`, read from the module `bytes`.
fn block(bytes: &[u8], b: crate::BlockInfo, traced: &dyn Fn(u32) -> bool) -> Result<Block> {
    let mut out = Block {
        offset: b.offset,
        instrs: b.instrs,
        last: b.offset,
        ..Block::default()
    };
    let (mut at, end) = (b.offset as usize, b.end as usize);
    let code = bytes.get(..end).ok_or(WasmError::Invalid {
        offset: end,
        message: "a block ends past the module".into(),
    })?;
    while at < end {
        let (op, next) = read_op(code, at)?;
        out.last = at as u32;
        out.tail_indirect = matches!(
            op,
            Operator::ReturnCallIndirect { .. } | Operator::ReturnCallRef { .. }
        );
        out.tail_traced =
            matches!(op, Operator::ReturnCall { function_index } if traced(function_index));
        let call = match op {
            Operator::Call { function_index } => {
                Some((Some(function_index), traced(function_index)))
            }
            Operator::CallIndirect { .. } | Operator::CallRef { .. } => Some((None, true)),
            _ => None,
        };
        if let Some((callee, traced)) = call {
            out.calls.push(CallSite {
                at: at as u32,
                next: next as u32,
                indirect: callee.is_none(),
                traced,
                callee,
            });
        }
        at = next;
    }
    Ok(out)
}

/// The instruction at `at` in `code`, and the offset after it.
fn read_op(code: &[u8], at: usize) -> Result<(Operator<'_>, usize)> {
    if let Some(op) = crate::module::frame_op(code, at).map_err(|e| WasmError::invalid(&e))? {
        return Ok(op);
    }
    let mut ops = OperatorsReader::new(BinaryReader::new(&code[at..], at));
    let op = ops.read().map_err(|e| WasmError::invalid(&e))?;
    Ok((op, ops.original_position()))
}
