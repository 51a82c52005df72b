//! One function body translated (see the parent module): a first pass
//! finds each legacy `try`'s clauses, which tries are rethrown and where
//! each `delegate` lands; the second emits the standard constructs,
//! renumbering every branch label past the blocks it adds.

use wasm_encoder::{Catch, Encode, InstructionSink, ValType};
use wasmparser::{FunctionBody, Operator};

use super::{err, Sig, TranslateError, Types};
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Kind {
    Func,
    Block,
    Loop,
    If,
    TryTable,
    Try,
}

/// What the first pass found of one construct (in opening order; the
/// function's own frame is 0).
#[derive(Default)]
struct Info {
    /// A try's clauses: `Some(tag)` for `catch`, `None` for `catch_all`.
    clauses: Vec<Option<u32>>,
    /// A try ended by `delegate`: the frame it delegates to, and whether
    /// into that try's body (else around the construct).
    delegate_to: Option<(usize, bool)>,
    /// A `rethrow` names this try: its handlers keep the `exnref`.
    rethrown: bool,
    /// A `delegate` lands in this try's body: its handlers catch there.
    body_land: bool,
    /// A `delegate` lands around this construct.
    outer_land: bool,
}

fn analyse(body: &FunctionBody<'_>) -> Result<(Vec<Kind>, Vec<Info>), TranslateError> {
    let mut kinds = vec![Kind::Func];
    let mut infos = vec![Info::default()];
    // (frame id, in a try's handlers)
    let mut stack = vec![(0usize, false)];
    let mut ops = body.get_operators_reader().map_err(err)?;
    while !ops.eof() {
        let kind = match ops.read().map_err(err)? {
            Operator::Block { .. } => Kind::Block,
            Operator::Loop { .. } => Kind::Loop,
            Operator::If { .. } => Kind::If,
            Operator::TryTable { .. } => Kind::TryTable,
            Operator::Try { .. } => Kind::Try,
            Operator::Catch { tag_index } => {
                let top = stack.last_mut().unwrap();
                top.1 = true;
                infos[top.0].clauses.push(Some(tag_index));
                continue;
            }
            Operator::CatchAll => {
                let top = stack.last_mut().unwrap();
                top.1 = true;
                infos[top.0].clauses.push(None);
                continue;
            }
            Operator::Delegate { relative_depth } => {
                let (id, _) = stack.pop().unwrap();
                let (target, in_catch) = stack[stack.len() - 1 - relative_depth as usize];
                let body = match kinds[target] {
                    Kind::Try => !in_catch,
                    Kind::TryTable => {
                        return Err(err("a `delegate` to a `try_table` is not translated"))
                    }
                    _ => false,
                };
                infos[id].delegate_to = Some((target, body));
                match body {
                    true => infos[target].body_land = true,
                    false => infos[target].outer_land = true,
                }
                continue;
            }
            Operator::Rethrow { relative_depth } => {
                let (target, _) = stack[stack.len() - 1 - relative_depth as usize];
                infos[target].rethrown = true;
                continue;
            }
            Operator::End => {
                stack.pop();
                continue;
            }
            _ => continue,
        };
        stack.push((kinds.len(), false));
        kinds.push(kind);
        infos.push(Info::default());
    }
    Ok((kinds, infos))
}

/// An original construct as emitted.
struct Frame {
    id: usize,
    kind: Kind,
    /// Emitted label a branch to the original label goes to.
    label: u32,
    /// Clauses begun so far.
    clause: usize,
    /// Emitted labels of a try's clause blocks, in clause order.
    handlers: Vec<u32>,
    /// The `$land` block a delegate to the body, or around the construct,
    /// goes to.
    body_land: Option<u32>,
    outer_land: Option<u32>,
    /// The local that keeps a rethrown try's exception.
    exn: Option<u32>,
}

struct Emitter<'t> {
    types: &'t mut Types,
    out: Vec<u8>,
    height: u32,
    frames: Vec<Frame>,
}

impl Emitter<'_> {
    fn sink(&mut self) -> InstructionSink<'_> {
        InstructionSink::new(&mut self.out)
    }

    fn depth(&self, label: u32) -> u32 {
        self.height - 1 - label
    }

    /// The emitted depth of the original relative depth `d`.
    fn remap(&self, d: u32) -> u32 {
        self.depth(self.frames[self.frames.len() - 1 - d as usize].label)
    }

    fn block(&mut self, params: &[ValType], results: &[ValType]) -> u32 {
        let bt = self.types.block_type(params, results);
        self.sink().block(bt);
        self.height += 1;
        self.height - 1
    }

    /// `block [p*] -> [r*]  block [p*] -> [exnref]`: the `$land` label.
    fn open_land(&mut self, (params, results): &Sig) -> u32 {
        self.block(params, results);
        self.block(params, &[ValType::EXNREF])
    }

    /// `br 1  end  throw_ref  end`: what reaches `$land` is thrown again.
    fn close_land(&mut self) {
        self.sink().br(1).end().throw_ref().end();
        self.height -= 2;
    }
}

/// The translated body (locals included) and its (translated, original)
/// body-relative offsets of each instruction.
pub(super) fn translate(
    types: &mut Types,
    func: u32,
    body: &FunctionBody<'_>,
) -> Result<(Vec<u8>, Vec<(u32, u32)>), TranslateError> {
    let (kinds, infos) = analyse(body)?;
    let ty = *types
        .func_types
        .get(func as usize)
        .ok_or_else(|| err("no type"))?;
    let (params, results) = types.sig(ty)?.clone();
    // Locals: the function's own, then one exnref per rethrown try.
    let mut groups = Vec::new();
    let mut next_local = params.len() as u32;
    for l in body.get_locals_reader().map_err(err)? {
        let (n, t) = l.map_err(err)?;
        groups.push((n, RoundtripReencoder.val_type(t).map_err(err)?));
        next_local += n;
    }
    let rethrown = infos.iter().filter(|i| i.rethrown).count() as u32;
    if rethrown > 0 {
        groups.push((rethrown, ValType::EXNREF));
    }
    let mut out = Vec::new();
    (groups.len() as u32).encode(&mut out);
    for (n, t) in &groups {
        n.encode(&mut out);
        t.encode(&mut out);
    }
    let mut e = Emitter {
        types,
        out,
        height: 1,
        frames: vec![Frame::new(0, Kind::Func, 0)],
    };
    if infos[0].outer_land {
        e.frames[0].outer_land = Some(e.open_land(&(vec![], results.clone())));
    }
    let start = body.range().start;
    let bytes = body.as_bytes();
    let mut points = Vec::new();
    let mut next_id = 1;
    let mut ops = body.get_operators_reader().map_err(err)?;
    while !ops.eof() {
        let at = ops.original_position();
        let op = ops.read().map_err(err)?;
        let raw = &bytes[at - start..ops.original_position() - start];
        points.push((e.out.len() as u32, (at - start) as u32));
        match op {
            Operator::Block { blockty }
            | Operator::Loop { blockty }
            | Operator::If { blockty }
            | Operator::Try { blockty } => {
                let id = next_id;
                next_id += 1;
                let local = infos[id].rethrown.then(|| {
                    next_local += 1;
                    next_local - 1
                });
                e.open(id, kinds[id], &infos[id], blockty, raw, local)?;
            }
            Operator::TryTable { try_table } => {
                let id = next_id;
                next_id += 1;
                let sig = e.types.block(try_table.ty)?;
                let outer = infos[id].outer_land.then(|| e.open_land(&sig));
                let catches: Vec<Catch> = try_table
                    .catches
                    .iter()
                    .map(|c| match *c {
                        wasmparser::Catch::One { tag, label } => Catch::One {
                            tag,
                            label: e.remap(label),
                        },
                        wasmparser::Catch::OneRef { tag, label } => Catch::OneRef {
                            tag,
                            label: e.remap(label),
                        },
                        wasmparser::Catch::All { label } => Catch::All {
                            label: e.remap(label),
                        },
                        wasmparser::Catch::AllRef { label } => Catch::AllRef {
                            label: e.remap(label),
                        },
                    })
                    .collect();
                let bt = RoundtripReencoder.block_type(try_table.ty).map_err(err)?;
                e.sink().try_table(bt, catches);
                let mut f = Frame::new(id, Kind::TryTable, e.height);
                f.outer_land = outer;
                e.frames.push(f);
                e.height += 1;
            }
            Operator::Catch { .. } | Operator::CatchAll => e.handler(),
            Operator::End | Operator::Delegate { .. } => e.close(raw),
            Operator::Rethrow { relative_depth } => {
                let f = &e.frames[e.frames.len() - 1 - relative_depth as usize];
                let exn = f.exn.ok_or_else(|| err("`rethrow` of no catch"))?;
                e.sink().local_get(exn).throw_ref();
            }
            _ => {
                if !e.branch(&op)? {
                    e.out.extend_from_slice(raw);
                }
            }
        }
    }
    Ok((e.out, points))
}

impl Emitter<'_> {
    /// A branch, its labels renumbered; false for any other instruction.
    fn branch(&mut self, op: &Operator<'_>) -> Result<bool, TranslateError> {
        let cast_fail = matches!(op, Operator::BrOnCastFail { .. });
        match *op {
            Operator::Br { relative_depth } => {
                let d = self.remap(relative_depth);
                self.sink().br(d);
            }
            Operator::BrIf { relative_depth } => {
                let d = self.remap(relative_depth);
                self.sink().br_if(d);
            }
            Operator::BrOnNull { relative_depth } => {
                let d = self.remap(relative_depth);
                self.sink().br_on_null(d);
            }
            Operator::BrOnNonNull { relative_depth } => {
                let d = self.remap(relative_depth);
                self.sink().br_on_non_null(d);
            }
            Operator::BrOnCast {
                relative_depth,
                from_ref_type,
                to_ref_type,
            }
            | Operator::BrOnCastFail {
                relative_depth,
                from_ref_type,
                to_ref_type,
            } => {
                let d = self.remap(relative_depth);
                let from = RoundtripReencoder.ref_type(from_ref_type).map_err(err)?;
                let to = RoundtripReencoder.ref_type(to_ref_type).map_err(err)?;
                match cast_fail {
                    false => self.sink().br_on_cast(d, from, to),
                    true => self.sink().br_on_cast_fail(d, from, to),
                };
            }
            Operator::BrTable { ref targets } => {
                let mut depths = Vec::new();
                for t in targets.targets() {
                    depths.push(self.remap(t.map_err(err)?));
                }
                let default = self.remap(targets.default());
                self.sink().br_table(depths, default);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

impl Frame {
    fn new(id: usize, kind: Kind, label: u32) -> Self {
        Frame {
            id,
            kind,
            label,
            clause: 0,
            handlers: Vec::new(),
            body_land: None,
            outer_land: None,
            exn: None,
        }
    }
}

impl Emitter<'_> {
    /// `block`, `loop`, `if` or a legacy `try`, with the blocks a delegate
    /// landing around it or in its body needs.
    fn open(
        &mut self,
        id: usize,
        kind: Kind,
        info: &Info,
        blockty: wasmparser::BlockType,
        raw: &[u8],
        exn: Option<u32>,
    ) -> Result<(), TranslateError> {
        let sig = self.types.block(blockty)?;
        let outer = if info.outer_land {
            let mut around = sig.clone();
            if kind == Kind::If {
                around.0.push(ValType::I32);
            }
            Some(self.open_land(&around))
        } else {
            None
        };
        let bt = RoundtripReencoder.block_type(blockty).map_err(err)?;
        let mut f = Frame::new(id, kind, self.height);
        f.outer_land = outer;
        f.exn = exn;
        if kind != Kind::Try {
            self.out.extend_from_slice(raw);
            self.height += 1;
            self.frames.push(f);
            return Ok(());
        }
        if let Some((target, body)) = info.delegate_to {
            // Its body's exceptions go to the delegate's `$land`, past any
            // handler in between.
            let land = self.land(target, body)?;
            let label = self.depth(land);
            self.sink().try_table(bt, [Catch::AllRef { label }]);
            self.height += 1;
        } else if info.clauses.is_empty() {
            self.sink().block(bt);
            self.height += 1;
        } else {
            // $outer, then a block per clause (the last outermost), then
            // the try_table that catches into them.
            self.sink().block(bt);
            self.height += 1;
            let mut handlers = vec![0; info.clauses.len()];
            for (k, clause) in info.clauses.iter().enumerate().rev() {
                let mut values = match clause {
                    Some(tag) => {
                        let ty = self.types.tag_types[*tag as usize];
                        self.types.sig(ty)?.0.clone()
                    }
                    None => vec![],
                };
                if info.rethrown {
                    values.push(ValType::EXNREF);
                }
                handlers[k] = self.block(&sig.0, &values);
            }
            let catches: Vec<Catch> = info
                .clauses
                .iter()
                .zip(&handlers)
                .map(|(clause, &h)| {
                    let label = self.depth(h);
                    match (clause, info.rethrown) {
                        (Some(tag), false) => Catch::One { tag: *tag, label },
                        (Some(tag), true) => Catch::OneRef { tag: *tag, label },
                        (None, false) => Catch::All { label },
                        (None, true) => Catch::AllRef { label },
                    }
                })
                .collect();
            self.sink().try_table(bt, catches);
            self.height += 1;
            f.handlers = handlers;
        }
        if info.body_land {
            f.body_land = Some(self.open_land(&sig));
        }
        self.frames.push(f);
        Ok(())
    }

    /// The `$land` label of open frame `id`: in its body, or around it.
    fn land(&self, id: usize, body: bool) -> Result<u32, TranslateError> {
        let f = self.frames.iter().rev().find(|f| f.id == id);
        f.and_then(|f| if body { f.body_land } else { f.outer_land })
            .ok_or_else(|| err("a `delegate` to no open frame"))
    }

    /// `catch`/`catch_all` of the innermost try: the body (or the handler
    /// before) leaves to $outer, and the clause's block ends with its
    /// values on the stack.
    fn handler(&mut self) {
        let top = self.frames.len() - 1;
        let f = &self.frames[top];
        let (k, outer) = (f.clause, f.label);
        if k == 0 {
            if self.frames[top].body_land.take().is_some() {
                self.close_land();
            }
            self.sink().end(); // try_table
            self.height -= 1;
        }
        let d = self.depth(outer);
        self.sink().br(d).end();
        self.height -= 1;
        if let Some(exn) = self.frames[top].exn {
            self.sink().local_set(exn);
        }
        self.frames[top].clause += 1;
    }

    /// `end` (or `delegate`) of the innermost construct.
    fn close(&mut self, raw: &[u8]) {
        let f = self.frames.pop().unwrap();
        if f.kind == Kind::Func {
            if f.outer_land.is_some() {
                self.close_land();
            }
            self.out.extend_from_slice(raw);
            return;
        }
        if f.body_land.is_some() {
            self.close_land();
        }
        if f.kind == Kind::Try {
            // The try_table (`delegate`), the block (no clauses), or $outer
            // (only it is still open after the last handler).
            self.sink().end();
        } else {
            self.out.extend_from_slice(raw);
        }
        self.height -= 1;
        if f.outer_land.is_some() {
            self.close_land();
        }
    }
}
