//! Action lowering: the instructions that carry out a plan's actions on one
//! edge, and the hash-table helper function they call.
//!
//! All emitted code is stack-neutral: it reads and writes only its own locals
//! and the counter memory, so it can go anywhere between two instructions.

use super::layout::{
    HASH_HEADER_BYTES, HASH_LAST_ENTRY, HASH_LAST_KEY, HASH_LIMIT, HASH_LOST, HASH_MASK, HASH_NEXT,
    MAX_PROBES, ZERO_HEADER_CAPACITY,
};
use super::trace::TraceBuffer;
use pathprof_techniques::{
    Action, ForEachMember, In, MulAdd, Otherwise, PathTable, PppEnd, Push, Width,
};
use wasm_encoder::BlockType;
use wasm_encoder::{Function, InstructionSink, MemArg, ValType};

/// Everything needed to lower the actions of one function.
pub(crate) struct Lowerer {
    /// Per register: its local index and width.
    pub regs: Vec<(u32, Width)>,
    /// The registers hold 8 times the plan's values (see [`Lowerer::scaled`]).
    pub scaled: bool,
    /// The i32 scratch local for array-table addresses.
    pub scratch: u32,
    /// Index of the counter memory.
    pub memory: u32,
    pub paths: PathTable,
    pub paths_offset: u32,
    pub slots_offset: u32,
    /// The PPP table: its byte offset, the PPP id of entry 0, its entries.
    pub ppp_offset: u32,
    pub ppp_min: i64,
    pub ppp_len: u64,
    /// Function indices in the NEW module.
    pub hash_helper: u32,
    /// The trace import: `trace` or `trace_flush` (see [`super::trace`]).
    pub trace: u32,
    /// Where `Trace` appends its records; `None`: it calls `trace` per edge.
    pub trace_buffer: Option<TraceBuffer>,
    /// This function's index in the ORIGINAL module, reported by `Trace`.
    pub func_index: u32,
    /// Global index of module-level register 0 (`ModulePlan::globals`).
    pub globals_base: u32,
    /// Byte offset of the stack region in the counter memory.
    pub stack_base: u32,
    /// The tables of the other functions [`Action::In`] counts in.
    pub foreign: Vec<(u32, Foreign)>,
    /// The helper function (its index in the new module) that runs each
    /// member loop of this function's plan: [`Closers`].
    pub closers: Vec<(CloserKey, u32)>,
}

/// What makes two member loops ([`Action::ForEachMember`]) the same helper
/// function: their body, the registers it reads the member from, and,
/// when the body counts in the function's own tables rather than only
/// [`Action::In`] another's, the function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CloserKey {
    tables: Option<u32>,
    tmp: (u8, u8),
    body: Vec<Action>,
}

impl CloserKey {
    /// The key of loop `m` of the function `func_index` (of the original
    /// module).
    pub fn of(m: &ForEachMember, func_index: u32) -> CloserKey {
        let own = m.body.iter().any(|a| !matches!(a, Action::In(_)));
        CloserKey {
            tables: own.then_some(func_index),
            tmp: m.tmp,
            body: m.body.clone(),
        }
    }
}

/// The member loops of a module, each emitted once as a helper function
/// `closer(ptr, len, acc_bl, acc_ppp)` and called where a plan closes a
/// group (docs/decisions.md#member-loops-out-of-line).
#[derive(Default)]
pub(crate) struct Closers {
    /// Each loop's position among the helpers.
    pub index: std::collections::HashMap<CloserKey, u32>,
    /// Each helper's loop, with the lowering of the first function that
    /// has it (its tables); lowered when every function is laid out, since
    /// the body may count in the tables of a function after it.
    pub loops: Vec<(Lowerer, ForEachMember)>,
}

/// The locals of a closer: its four i64 parameters, then its own.
const CLOSER_PTR: u32 = 0;
const CLOSER_LEN: u32 = 1;
const CLOSER_ACC: (u32, u32) = (2, 3);
const CLOSER_INDEX: u32 = 4;
const CLOSER_TMP: (u32, u32) = (5, 6);
const CLOSER_SCRATCH: u32 = 7;

/// Another function's tables, as [`Action::In`] counts in them.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Foreign {
    pub paths: PathTable,
    pub paths_offset: u32,
    pub slots_offset: u32,
    pub ppp_offset: u32,
    pub ppp_len: u64,
}

/// Pushes `value` at a register's width (an i32 register keeps the low
/// 32 bits: its arithmetic wraps).
fn push_const(sink: &mut InstructionSink<'_>, width: Width, value: i64) {
    match width {
        Width::I32 => sink.i32_const(value as i32),
        Width::I64 => sink.i64_const(value),
    };
}

/// Adds the two values on top of the stack at a register's width.
fn add(sink: &mut InstructionSink<'_>, width: Width) {
    match width {
        Width::I32 => sink.i32_add(),
        Width::I64 => sink.i64_add(),
    };
}

fn mem32(memory: u32, offset: u64) -> MemArg {
    MemArg {
        offset,
        align: 2,
        memory_index: memory,
    }
}

fn mem64(memory: u32, offset: u64) -> MemArg {
    MemArg {
        offset,
        align: 3,
        memory_index: memory,
    }
}

/// `mem[addr + offset] += 1` for an i64 counter, the address on the stack
/// twice (load address, then store address below it).
fn bump(sink: &mut InstructionSink<'_>, memory: u32, offset: u64) {
    sink.i64_load(mem64(memory, offset))
        .i64_const(1)
        .i64_add()
        .i64_store(mem64(memory, offset));
}

impl Lowerer {
    /// Emits the code of `actions` into `out`.
    pub fn emit(&self, out: &mut Vec<u8>, actions: &[Action]) {
        let mut sink = InstructionSink::new(out);
        for action in actions {
            match *action {
                Action::Set { reg, value } => {
                    let (local, width) = self.regs[reg as usize];
                    push_const(&mut sink, width, self.scale(value));
                    sink.local_set(local);
                }
                Action::Add { reg, value } => {
                    let (local, width) = self.regs[reg as usize];
                    sink.local_get(local);
                    push_const(&mut sink, width, self.scale(value));
                    add(&mut sink, width);
                    sink.local_set(local);
                }
                Action::CountPath { reg, offset } => self.count_path(&mut sink, reg, offset),
                Action::CountPathConst { path } => match self.paths {
                    PathTable::Hash { capacity } => {
                        self.hash_count_const(&mut sink, capacity, path)
                    }
                    // `path < len` was checked, so the address fits in 32 bits.
                    _ => self.bump_const(&mut sink, u64::from(self.paths_offset) + 8 * path),
                },
                Action::CountSlot { index } => self.bump_const(
                    &mut sink,
                    u64::from(self.slots_offset) + 8 * u64::from(index),
                ),
                Action::CountPpp(ref end) => self.count_ppp(&mut sink, end),
                Action::CountInteresting { index } => {
                    self.bump_const(&mut sink, u64::from(self.ppp_offset) + 16 * index + 8)
                }
                Action::Trace { edge } => match self.trace_buffer {
                    Some(buffer) => buffer.emit(&mut sink, self.trace, self.func_index, edge),
                    None => {
                        sink.i32_const(self.func_index as i32)
                            .i32_const(edge as i32)
                            .call(self.trace);
                    }
                },
                Action::GlobalToLocal { reg, global } => {
                    sink.global_get(self.globals_base + global)
                        .local_set(self.regs[reg as usize].0);
                }
                Action::LocalToGlobal { global, reg } => {
                    sink.local_get(self.regs[reg as usize].0)
                        .global_set(self.globals_base + global);
                }
                Action::MulAdd(ref m) => self.mul_add(&mut sink, m),
                Action::Push(ref p) => self.push(&mut sink, p),
                Action::CaptureIndex { reg } => {
                    sink.local_tee(self.regs[reg as usize].0);
                }
                Action::TrapIfAbove { reg, limit } => {
                    let (local, width) = self.regs[reg as usize];
                    sink.local_get(local);
                    match width {
                        Width::I32 => sink.i32_const(limit as i32).i32_gt_u(),
                        Width::I64 => sink.i64_const(i64::from(limit)).i64_gt_u(),
                    };
                    sink.if_(BlockType::Empty).unreachable().end();
                }
                Action::In(ref inner) => {
                    self.emit_in(out, inner);
                    sink = InstructionSink::new(out);
                }
                Action::ForEachMember(ref each) => self.call_closer(&mut sink, each),
                Action::IfNonZero(ref branch) => {
                    let (local, width) = self.regs[branch.reg as usize];
                    sink.local_get(local);
                    if width == Width::I64 {
                        sink.i64_const(0).i64_ne();
                    }
                    sink.if_(BlockType::Empty);
                    // The arms are lowered into the same body: `sink` is
                    // taken again after each.
                    self.emit(out, &branch.then);
                    sink = InstructionSink::new(out);
                    if !branch.otherwise.is_empty() {
                        sink.else_();
                        self.emit(out, &branch.otherwise);
                        sink = InstructionSink::new(out);
                    }
                    sink.end();
                }
            }
        }
    }

    /// `inner.action` against function `inner.func`'s tables (resolved
    /// when the plan was taken: [`Lowerer::foreign`]).
    fn emit_in(&self, out: &mut Vec<u8>, inner: &In) {
        let (_, t) = self
            .foreign
            .iter()
            .find(|(f, _)| *f == inner.func)
            .expect("foreign tables resolved before lowering");
        let other = Lowerer {
            regs: self.regs.clone(),
            foreign: Vec::new(),
            closers: Vec::new(),
            paths: t.paths,
            paths_offset: t.paths_offset,
            slots_offset: t.slots_offset,
            ppp_offset: t.ppp_offset,
            ppp_min: 0,
            ppp_len: t.ppp_len,
            ..*self
        };
        other.emit(out, std::slice::from_ref(&inner.action));
    }

    /// Pushes the address `ptr + 16 * i` (i64 locals) as an i32 and keeps
    /// it in the scratch local.
    fn member_address(&self, sink: &mut InstructionSink<'_>, ptr: u32, i: u32) {
        sink.local_get(ptr)
            .local_get(i)
            .i64_const(4)
            .i64_shl()
            .i64_add()
            .i32_wrap_i64()
            .local_tee(self.scratch);
    }

    /// `stack[ptr + 16 * len] = (bl, ppp); len += 1`.
    fn push(&self, sink: &mut InstructionSink<'_>, p: &Push) {
        let base = u64::from(self.stack_base);
        let local = |r: u8| self.regs[r as usize].0;
        self.member_address(sink, local(p.ptr), local(p.len));
        sink.local_get(local(p.bl))
            .i64_store(mem64(self.memory, base));
        sink.local_get(self.scratch)
            .local_get(local(p.ppp))
            .i64_store(mem64(self.memory, base + 8));
        let len = local(p.len);
        sink.local_get(len).i64_const(1).i64_add().local_set(len);
    }

    /// A member loop where the plan has it: its helper called when the
    /// group has members, then `len = 0`.
    ///
    /// ```text
    /// if len != 0 { closer(ptr, len, acc.0 + extra.0, acc.1 + extra.1) }
    /// len = 0
    /// ```
    fn call_closer(&self, sink: &mut InstructionSink<'_>, m: &ForEachMember) {
        let key = CloserKey::of(m, self.func_index);
        let (_, helper) = self
            .closers
            .iter()
            .find(|(k, _)| *k == key)
            .expect("member loops settled before lowering");
        let local = |r: u8| self.regs[r as usize].0;
        sink.local_get(local(m.len))
            .i64_const(0)
            .i64_ne()
            .if_(BlockType::Empty)
            .local_get(local(m.ptr))
            .local_get(local(m.len));
        for (acc, extra) in [(m.acc.0, m.extra.0), (m.acc.1, m.extra.1)] {
            sink.local_get(local(acc));
            if extra != 0 {
                sink.i64_const(extra).i64_add();
            }
        }
        sink.call(*helper)
            .end()
            .i64_const(0)
            .local_set(local(m.len));
    }

    /// The helper function that runs member loop `m` (its body lowered
    /// with this function's tables), for a group that has members:
    ///
    /// ```text
    /// closer(ptr, len, acc_bl, acc_ppp):
    ///   index = 0
    ///   loop $next
    ///     tmp = stack[ptr + 16 * index] + acc     ;; both halves
    ///     <body>
    ///     index += 1
    ///     br_if $next (index <u len)
    ///   end
    /// ```
    pub fn closer_body(&self, m: &ForEachMember) -> Function {
        let mut regs = vec![(u32::MAX, Width::I64); usize::from(m.tmp.0.max(m.tmp.1)) + 1];
        regs[usize::from(m.tmp.0)] = (CLOSER_TMP.0, Width::I64);
        regs[usize::from(m.tmp.1)] = (CLOSER_TMP.1, Width::I64);
        let closer = Lowerer {
            regs,
            scaled: false,
            scratch: CLOSER_SCRATCH,
            foreign: self.foreign.clone(),
            closers: Vec::new(),
            ..*self
        };
        let mut f = Function::new([(3, ValType::I64), (1, ValType::I32)]);
        let base = u64::from(self.stack_base);
        let mut out = Vec::new();
        let mut sink = InstructionSink::new(&mut out);
        sink.i64_const(0)
            .local_set(CLOSER_INDEX)
            .loop_(BlockType::Empty);
        closer.member_address(&mut sink, CLOSER_PTR, CLOSER_INDEX);
        sink.i64_load(mem64(self.memory, base))
            .local_get(CLOSER_ACC.0)
            .i64_add()
            .local_set(CLOSER_TMP.0);
        sink.local_get(CLOSER_SCRATCH)
            .i64_load(mem64(self.memory, base + 8))
            .local_get(CLOSER_ACC.1)
            .i64_add()
            .local_set(CLOSER_TMP.1);
        closer.emit(&mut out, &m.body);
        let mut sink = InstructionSink::new(&mut out);
        sink.local_get(CLOSER_INDEX)
            .i64_const(1)
            .i64_add()
            .local_tee(CLOSER_INDEX)
            .local_get(CLOSER_LEN)
            .i64_lt_u()
            .br_if(0)
            .end()
            .end();
        f.raw(out);
        f
    }

    /// `r += a * s + b` at `r`'s width (`s` has it too: checked).
    fn mul_add(&self, sink: &mut InstructionSink<'_>, m: &MulAdd) {
        let (local, width) = self.regs[m.reg as usize];
        sink.local_get(local);
        sink.local_get(self.regs[m.src as usize].0);
        push_const(sink, width, m.a);
        match width {
            Width::I32 => sink.i32_mul(),
            Width::I64 => sink.i64_mul(),
        };
        add(sink, width);
        push_const(sink, width, self.scale(m.b));
        add(sink, width);
        sink.local_set(local);
    }

    /// Whether the registers of a plan can hold 8 times its values: the
    /// byte offset of a path's counter rather than its number, which saves
    /// the shift at every array count. Only the array counts read them then
    /// (no PPP comparison, no hash key), and they are i32: the final index
    /// `r + offset` of a counted path is below 2^29, so 8 times it, exact
    /// modulo 2^32 whatever the wrapped partial sums, is the byte offset.
    pub fn scaled(plan_paths: PathTable, has_ppp: bool, registers: &[Width]) -> bool {
        matches!(plan_paths, PathTable::Array { len } if len <= 1 << 29)
            && !has_ppp
            && registers.iter().all(|&w| w == Width::I32)
    }

    /// A plan's register constant as the register holds it.
    fn scale(&self, value: i64) -> i64 {
        if self.scaled {
            value.wrapping_mul(8)
        } else {
            value
        }
    }

    /// `mem[address] += 1`, the address where [`place`] puts it.
    fn bump_const(&self, sink: &mut InstructionSink<'_>, address: u64) {
        let (index, offset) = place(address);
        sink.i32_const(index as i32).i32_const(index as i32);
        bump(sink, self.memory, offset);
    }

    /// Adds to the i32 index on the stack the part of a table base that
    /// [`place`] puts in the index; returns the part for the memarg offset.
    fn add_base(&self, sink: &mut InstructionSink<'_>, base: u64) -> u64 {
        let (index, offset) = place(base);
        if index != 0 {
            sink.i32_const(index as i32).i32_add();
        }
        offset
    }

    /// Pushes `r + offset` at the register's width.
    fn push_sum(&self, sink: &mut InstructionSink<'_>, reg: u8, offset: i64) {
        let (local, width) = self.regs[reg as usize];
        sink.local_get(local);
        match width {
            Width::I32 if offset != 0 => {
                sink.i32_const(offset as i32).i32_add();
            }
            Width::I64 if offset != 0 => {
                sink.i64_const(offset).i64_add();
            }
            _ => {}
        }
    }

    /// Pushes the Ball-Larus id `r + offset` as an i64.
    fn push_bl_id(&self, sink: &mut InstructionSink<'_>, reg: u8, offset: i64) {
        self.push_sum(sink, reg, offset);
        if self.regs[reg as usize].1 == Width::I32 {
            sink.i64_extend_i32_u();
        }
    }

    /// The end of a path under PPP (thesis 3.2.3): a bounds check of the
    /// PPP index, then a comparison of the entry's Ball-Larus id; on a match
    /// the entry's count is bumped, otherwise `otherwise` runs.
    ///
    /// ```text
    /// block $done
    ///   block $uninteresting
    ///     s = ppp + ppp_offset - min        ;; at the register's width
    ///     br_if $uninteresting (s >=u len)
    ///     s = 16 * s
    ///     br_if $uninteresting (table[s].bl != bl + bl_offset)
    ///     table[s].count++
    ///     br $done
    ///   end
    ///   <otherwise>
    /// end
    /// ```
    fn count_ppp(&self, sink: &mut InstructionSink<'_>, end: &PppEnd) {
        let (bl, ppp) = ((end.bl, end.bl_offset), (end.ppp, end.ppp_offset));
        let index_offset = ppp.1.wrapping_sub(self.ppp_min);
        let table = u64::from(self.ppp_offset);
        sink.block(BlockType::Empty).block(BlockType::Empty);
        self.push_sum(sink, ppp.0, index_offset);
        match self.regs[ppp.0 as usize].1 {
            Width::I32 => {
                sink.local_tee(self.scratch)
                    .i32_const(self.ppp_len as i32)
                    .i32_ge_u()
                    .br_if(0);
            }
            Width::I64 => {
                // The bound check at full width; then the index fits in 32 bits.
                sink.i64_const(self.ppp_len as i64).i64_ge_u().br_if(0);
                self.push_sum(sink, ppp.0, index_offset);
                sink.i32_wrap_i64().local_set(self.scratch);
            }
        }
        sink.local_get(self.scratch).i32_const(4).i32_shl();
        let table = self.add_base(sink, table);
        sink.local_tee(self.scratch);
        sink.i64_load(mem64(self.memory, table));
        self.push_bl_id(sink, bl.0, bl.1);
        sink.i64_ne().br_if(0);
        sink.local_get(self.scratch).local_get(self.scratch);
        bump(sink, self.memory, table + 8);
        sink.br(1).end();
        match end.otherwise {
            Otherwise::Record => self.count_path(sink, bl.0, bl.1),
            Otherwise::Count { slot } => {
                self.bump_const(sink, u64::from(self.slots_offset) + 8 * u64::from(slot))
            }
            Otherwise::Ignore => {}
        }
        sink.end();
    }

    /// `count[r + offset]++` in a hash table: the probe of the key's home
    /// entry inlined (a path whose entry sits where its hash puts it, as
    /// most do in a table far from full, costs a multiply, a compare and an
    /// increment, no call), the helper called otherwise. Keys are stored as
    /// key + 1, and the hash is the helper's.
    ///
    /// ```text
    /// k = key + 1; e = table.entries + 16 * ((k * golden) >> 32 & mask)
    /// if mem[e].key == k { mem[e].count++ } else { hash_inc(table, key) }
    /// ```
    fn hash_count(&self, sink: &mut InstructionSink<'_>, reg: u8, offset: i64) {
        let PathTable::Hash { capacity } = self.paths else {
            return;
        };
        let entries = u64::from(self.paths_offset) + HASH_HEADER_BYTES;
        self.push_bl_id(sink, reg, offset);
        sink.i64_const(1).i64_add();
        sink.i64_const(HASH_GOLDEN as i64)
            .i64_mul()
            .i64_const(32)
            .i64_shr_u()
            .i32_wrap_i64();
        sink.i32_const((capacity - 1) as i32)
            .i32_and()
            .i32_const(4)
            .i32_shl();
        let entries = self.add_base(sink, entries);
        sink.local_tee(self.scratch);
        sink.i64_load(mem64(self.memory, entries));
        self.push_bl_id(sink, reg, offset);
        sink.i64_const(1).i64_add().i64_eq();
        sink.if_(BlockType::Empty);
        sink.local_get(self.scratch).local_get(self.scratch);
        bump(sink, self.memory, entries + 8);
        sink.else_();
        sink.i32_const(self.paths_offset as i32);
        self.push_bl_id(sink, reg, offset);
        sink.call(self.hash_helper);
        sink.end();
    }

    /// `count[path]++` in a hash table for a path known statically: its home
    /// entry's address is a constant, so the inline probe is a compare and
    /// an increment; the helper is called when another key holds the entry.
    fn hash_count_const(&self, sink: &mut InstructionSink<'_>, capacity: u32, path: u64) {
        let k = path.wrapping_add(1);
        if k == 0 {
            // The one key the table cannot hold: the helper counts it lost.
            sink.i32_const(self.paths_offset as i32)
                .i64_const(path as i64)
                .call(self.hash_helper);
            return;
        }
        let home = (k.wrapping_mul(HASH_GOLDEN) >> 32) as u32 & (capacity - 1);
        let entry = u64::from(self.paths_offset) + HASH_HEADER_BYTES + 16 * u64::from(home);
        let (index, offset) = place(entry);
        sink.i32_const(index as i32)
            .i64_load(mem64(self.memory, offset))
            .i64_const(k as i64)
            .i64_eq();
        sink.if_(BlockType::Empty);
        self.bump_const(sink, entry + 8);
        sink.else_();
        sink.i32_const(self.paths_offset as i32)
            .i64_const(path as i64)
            .call(self.hash_helper);
        sink.end();
    }

    /// `count[r + offset]++`, with the sum wrapping at the register's width.
    fn count_path(&self, sink: &mut InstructionSink<'_>, reg: u8, offset: i64) {
        if let PathTable::Hash { .. } = self.paths {
            self.hash_count(sink, reg, offset);
            return;
        }
        // Array: the index r + offset is computed at the register's width
        // first. The register alone may be "negative" (wrapped) when the
        // offset brings it back in range, so only the table's base, never
        // 8 * offset, can go into the memarg offset: the effective address
        // (dynamic part + memarg offset) does not wrap at 2^32. A base that
        // [`place`] puts in the index joins the i32 sum instead, which wraps
        // and so comes out exact.
        let paths = u64::from(self.paths_offset);
        let base = if self.scaled {
            // Already a byte offset: `8r + 8 offset`.
            let (index, base) = place(paths);
            self.push_sum(sink, reg, self.scale(offset).wrapping_add(index as i64));
            base
        } else {
            self.push_sum(sink, reg, offset);
            if self.regs[reg as usize].1 == Width::I64 {
                sink.i32_wrap_i64();
            }
            sink.i32_const(3).i32_shl();
            self.add_base(sink, paths)
        };
        sink.local_tee(self.scratch).local_get(self.scratch);
        bump(sink, self.memory, base);
    }
}

/// Largest memarg offset of a counter access: 32 MiB, wasmtime's guard
/// region on 64-bit hosts. An engine need not check the bounds of a 32-bit
/// index whose offset stays within its guard, so wasmtime omits the check
/// below it and adds a compare and a conditional move above it (SQLite's
/// counters take 46 MiB). Addresses below the limit stay in the offset (for
/// tables with a dynamic index too), where Cranelift folds them into the
/// instruction; the others go in the index, with offset 0. Moving all of
/// them made no saving and moved register allocation around (zlib +3.4 %
/// of JIT instructions, lz4 -1.6 %).
const MAX_OFFSET: u64 = 1 << 25;

/// A counter address (or a table's base, plus up to 16 bytes of field
/// offsets) as (index, memarg offset).
fn place(address: u64) -> (u64, u64) {
    if address + 16 <= MAX_OFFSET {
        (0, address)
    } else {
        (address, 0)
    }
}

/// The multiplier of the table's hash (Fibonacci hashing: 2^64 / phi).
const HASH_GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

// The hash helper's parameters and locals.
const BASE: u32 = 0; // i32 param: the function's own table
const KEY: u32 = 1; // i64 param
const K: u32 = 2; // i64: key + 1
const STORED: u32 = 3; // i64
const E: u32 = 4; // i32: T + 16 * i; the entry is at E + 32
const I: u32 = 5;
const N: u32 = 6;
const MASK: u32 = 7; // T's; a scratch when T is full
const T: u32 = 8; // the table being probed
const NEW: u32 = 9; // the capacity of a new overflow table

/// Body of `__pathprof_hash_inc(table_base: i32, key: i64)`: open addressing
/// with linear probing over a power-of-two table (Ball & Larus section 5.3),
/// keys stored as key + 1, a fast path for the key counted last, at most
/// `limit` probes per table. A key that finds no entry goes to an overflow
/// table of twice the capacity, grown from the memory (see the layout); the
/// `lost` counter counts it only when the memory cannot grow. Never traps.
pub(crate) fn hash_helper_body(memory: u32) -> Function {
    let m32 = |offset: u64| mem32(memory, offset);
    let m64 = |offset: u64| mem64(memory, offset);
    let entry = HASH_HEADER_BYTES;
    let mut f = Function::new([(2, ValType::I64), (6, ValType::I32)]);
    let mut s = f.instructions();
    // k = key + 1; the key 2^64 - 1 cannot be stored and is lost.
    s.local_get(KEY)
        .i64_const(1)
        .i64_add()
        .local_tee(K)
        .i64_eqz();
    s.if_(BlockType::Empty);
    count_lost(&mut s, memory);
    s.return_().end();
    // Fast path: the key counted last.
    s.local_get(BASE)
        .i64_load(m64(HASH_LAST_KEY))
        .local_get(K)
        .i64_eq();
    s.if_(BlockType::Empty);
    s.local_get(BASE)
        .i32_load(m32(HASH_LAST_ENTRY))
        .local_tee(E)
        .local_get(E);
    s.i64_load(m64(8)).i64_const(1).i64_add().i64_store(m64(8));
    s.return_().end();
    // A table of ZERO_HEADER_CAPACITY entries starts all zero, its header
    // unwritten by the data segments (layout.rs): set it up on first use.
    // (A set-up table's probe limit is at least 1; its mask may be 0.)
    s.local_get(BASE).i32_load(m32(HASH_LIMIT)).i32_eqz();
    s.if_(BlockType::Empty);
    s.local_get(BASE)
        .i32_const(ZERO_HEADER_CAPACITY as i32 - 1)
        .i32_store(m32(HASH_MASK));
    s.local_get(BASE)
        .i32_const(ZERO_HEADER_CAPACITY.min(MAX_PROBES) as i32)
        .i32_store(m32(HASH_LIMIT));
    s.end();
    // Probe the newest overflow table, or the function's own.
    s.local_get(BASE)
        .i32_load(m32(HASH_NEXT))
        .local_tee(T)
        .i32_eqz();
    s.if_(BlockType::Empty);
    s.local_get(BASE).local_set(T);
    s.end();
    s.block(BlockType::Empty); // $found
    s.loop_(BlockType::Empty); // $table
                               // In T: i = (k * golden) >> 32 & mask; n = probe limit.
    s.local_get(T).i32_load(m32(HASH_MASK)).local_set(MASK);
    s.local_get(K)
        .i64_const(HASH_GOLDEN as i64)
        .i64_mul()
        .i64_const(32)
        .i64_shr_u()
        .i32_wrap_i64();
    s.local_get(MASK).i32_and().local_set(I);
    s.local_get(T).i32_load(m32(HASH_LIMIT)).local_set(N);
    s.loop_(BlockType::Empty); // $probe
    s.local_get(T)
        .local_get(I)
        .i32_const(4)
        .i32_shl()
        .i32_add()
        .local_tee(E);
    s.i64_load(m64(entry))
        .local_tee(STORED)
        .local_get(K)
        .i64_eq()
        .br_if(2);
    s.local_get(STORED).i64_eqz();
    s.if_(BlockType::Empty);
    s.local_get(E).local_get(K).i64_store(m64(entry)).br(3);
    s.end();
    s.local_get(I)
        .i32_const(1)
        .i32_add()
        .local_get(MASK)
        .i32_and()
        .local_set(I);
    s.local_get(N).i32_const(1).i32_sub().local_tee(N).br_if(0);
    s.end(); // $probe
    grow_overflow_table(&mut s, memory);
    s.br(0);
    s.end(); // $table
    s.end(); // $found
    s.local_get(E)
        .local_get(E)
        .i64_load(m64(entry + 8))
        .i64_const(1)
        .i64_add()
        .i64_store(m64(entry + 8));
    s.local_get(BASE).local_get(K).i64_store(m64(HASH_LAST_KEY));
    s.local_get(BASE)
        .local_get(E)
        .i32_const(entry as i32)
        .i32_add()
        .i32_store(m32(HASH_LAST_ENTRY));
    s.end();
    f
}

/// `lost++` in the function's own table header, of the helper's `BASE`.
fn count_lost(s: &mut InstructionSink<'_>, memory: u32) {
    s.local_get(BASE)
        .local_get(BASE)
        .i64_load(mem64(memory, HASH_LOST))
        .i64_const(1)
        .i64_add()
        .i64_store(mem64(memory, HASH_LOST));
}

/// The helper's table `T` is full for its key: grows the memory by a table
/// of twice its capacity, links it in and makes it `T`; when the memory
/// cannot grow (or the table would pass 2^26 entries, 1 GiB), counts the key
/// lost and returns.
fn grow_overflow_table(s: &mut InstructionSink<'_>, memory: u32) {
    let m32 = |offset: u64| mem32(memory, offset);
    // new capacity = 2 * (mask + 1)
    s.local_get(MASK)
        .i32_const(1)
        .i32_add()
        .i32_const(1)
        .i32_shl()
        .local_tee(NEW);
    s.i32_const(1 << 26).i32_gt_u();
    s.if_(BlockType::Empty);
    count_lost(s, memory);
    s.return_().end();
    // pages = (32 + 16 * capacity + 65535) >> 16; MASK, no longer needed
    // (the probe reloads it from the new T), holds the old size, then the
    // new table's address.
    s.local_get(NEW)
        .i32_const(4)
        .i32_shl()
        .i32_const((HASH_HEADER_BYTES + 65535) as i32)
        .i32_add()
        .i32_const(16)
        .i32_shr_u()
        .memory_grow(memory)
        .local_tee(MASK)
        .i32_const(-1)
        .i32_eq();
    s.if_(BlockType::Empty);
    count_lost(s, memory);
    s.return_().end();
    // The new table: its header, then its link to the table before it.
    s.local_get(MASK).i32_const(16).i32_shl().local_tee(MASK);
    s.local_get(NEW)
        .i32_const(1)
        .i32_sub()
        .i32_store(m32(HASH_MASK));
    s.local_get(MASK)
        .local_get(NEW)
        .i32_const(MAX_PROBES as i32)
        .local_get(NEW)
        .i32_const(MAX_PROBES as i32)
        .i32_lt_u()
        .select()
        .i32_store(m32(HASH_LIMIT));
    s.local_get(MASK)
        .local_get(T)
        .i32_const(0)
        .local_get(T)
        .local_get(BASE)
        .i32_ne()
        .select()
        .i32_store(m32(HASH_NEXT));
    s.local_get(BASE).local_get(MASK).i32_store(m32(HASH_NEXT));
    s.local_get(MASK).local_set(T);
}
