//! Writing the metadata section, one function at a time: each function's
//! record is encoded as soon as it is planned, so no profile template (and
//! no CFG or plan beyond the rewriter's) is kept for it.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;

use pathprof_techniques::PathTable;
use pathprof_wasm::{CodeMap, CounterIdentity, CounterLayout, EdgeKind, FunctionCfg, Unsupported};
use sha2::{Digest, Sha256};

use super::codec::Writer;
use super::{MAGIC, META_VERSION};
use crate::source::SourceMap;

/// Builds the section.
pub struct Encoder {
    /// The technique's code ([`crate::technique::Profiler::code`]).
    technique: u8,
    module_hash: String,
    truncate_above: u64,
    /// The plan hash of the counter memory's header, so far: the technique,
    /// the truncation threshold and every function's record, which hold
    /// all that decoding depends on beyond the counter layout.
    plan_hash: Sha256,
    /// Edge kinds in order of first use; an edge stores its index here.
    kinds: Vec<EdgeKind>,
    files: Vec<String>,
    file_ids: HashMap<String, u32>,
    functions: usize,
    body: Writer,
    /// Where the records go once `body` holds [`SPILL_AT`] bytes, if the
    /// caller gave a file ([`Encoder::spill_to`]).
    spill: Option<Spilled>,
    skipped: Vec<(u32, Option<String>, String)>,
}

/// The records written to a scratch file so far, and their length.
pub struct Spilled {
    pub file: File,
    pub len: u64,
}

/// Bytes of records kept before they are written to the spill file: the
/// records are the bulk of the section (SQLite: 667 KB, which grown by
/// doubling held a 1 MB buffer), and the section is written last. Half of
/// 16 KiB, so that the buffer, grown by doubling, stays at 16 KiB unless a
/// record is larger than 8 KiB: one write per 8 KiB costs nothing beside
/// planning them, and a small module's whole heap is a few times 64 KiB.
const SPILL_AT: usize = 8 * 1024;

impl Encoder {
    pub fn new(module_hash: &str, technique: u8, truncate_above: u64) -> Self {
        let mut plan_hash = Sha256::new();
        plan_hash.update([technique]);
        plan_hash.update(truncate_above.to_le_bytes());
        Encoder {
            technique,
            module_hash: module_hash.to_string(),
            truncate_above,
            plan_hash,
            kinds: Vec::new(),
            files: Vec::new(),
            file_ids: HashMap::new(),
            functions: 0,
            body: Writer::default(),
            spill: None,
            skipped: Vec::new(),
        }
    }

    /// The truncation threshold the module is planned with.
    pub fn truncate_above(&self) -> u64 {
        self.truncate_above
    }

    /// The original module's hash (hex).
    pub fn module_hash(&self) -> &str {
        &self.module_hash
    }

    /// Writes the records to `file` (empty) as they accumulate instead of
    /// keeping them; [`Encoder::finish`] then hands the file back.
    pub fn spill_to(&mut self, file: File) {
        self.spill = Some(Spilled { file, len: 0 });
    }

    /// Moves the records kept so far to the spill file, once they are many.
    fn spill_some(&mut self) -> std::io::Result<()> {
        let Some(spill) = &mut self.spill else {
            return Ok(());
        };
        if self.body.buf.len() >= SPILL_AT {
            spill.file.write_all(&self.body.buf)?;
            spill.len += self.body.buf.len() as u64;
            self.body.buf.clear();
            // A large function's record grew the buffer past what the next
            // ones need; it would stay through the rest of the module.
            self.body.buf.shrink_to(2 * SPILL_AT);
        }
        Ok(())
    }

    /// Records an instrumented function, in the order the rewriter lays out
    /// their counters (function order): its CFG, then `record`, what its
    /// technique keeps of the planning ([`crate::technique::Planned`]).
    pub fn function(
        &mut self,
        f: &FunctionCfg,
        record: &[u8],
        sources: Option<&SourceMap>,
    ) -> std::io::Result<()> {
        self.functions += 1;
        let start = self.body.buf.len();
        self.body.u32(f.func_index);
        self.body.opt_str(f.name.as_deref());
        self.blocks(f, sources);
        self.edges(f);
        self.body.buf.extend_from_slice(record);
        self.plan_hash.update(&self.body.buf[start..]);
        // Each record is preceded by its length, so that a reader can skip
        // to the functions it needs (a sparse profile's, that ran) without
        // rebuilding the numbering of the others.
        let mut len = Writer::default();
        len.usize(self.body.buf.len() - start);
        self.body.buf.splice(start..start, len.buf);
        self.spill_some()
    }

    /// What the header of the counter memory says once every function is
    /// recorded; `extra` is what else decoding depends on (the
    /// interprocedural section). `None` if the module hash is not one.
    pub fn identity(&self, extra: &[u8]) -> Option<CounterIdentity> {
        let mut plan_hash = self.plan_hash.clone();
        plan_hash.update(extra);
        Some(CounterIdentity {
            technique: u32::from(self.technique),
            module_hash: pathprof_wasm::digest_from_hex(&self.module_hash)?,
            plan_hash: plan_hash.finalize().into(),
        })
    }

    /// Per node: 0 (ENTRY, EXIT), or 1 / 2 (a block without / with a
    /// source location), the offset as a delta from the previous block's
    /// end, its length and instruction count, then the location.
    fn blocks(&mut self, f: &FunctionCfg, sources: Option<&SourceMap>) {
        self.body.usize(f.blocks.len());
        let mut prev_end = 0u64;
        for b in &f.blocks {
            let Some(b) = b else {
                self.body.u8(0);
                continue;
            };
            let source = sources.and_then(|s| s.locate_parts(b.offset, b.end));
            self.body.u8(if source.is_some() { 2 } else { 1 });
            self.body.delta(prev_end, u64::from(b.offset));
            self.body.u32(b.end.wrapping_sub(b.offset));
            self.body.u32(b.instrs);
            prev_end = u64::from(b.end);
            if let Some((file, line, column)) = source {
                let id = self.file_id(file);
                self.body.u32(id);
                self.body.u32(line);
                self.body.u32(column);
            }
        }
    }

    fn file_id(&mut self, file: &str) -> u32 {
        if let Some(&id) = self.file_ids.get(file) {
            return id;
        }
        let id = self.files.len() as u32;
        self.files.push(file.to_string());
        self.file_ids.insert(file.to_string(), id);
        id
    }

    /// Per edge: source as a delta from the previous edge's, target as a
    /// delta from the source, and the kind's index.
    fn edges(&mut self, f: &FunctionCfg) {
        self.body.usize(f.cfg.num_edges());
        let mut prev_src = 0u64;
        for (&(src, dst), &kind) in f.cfg.edge_list().iter().zip(&f.edge_kinds) {
            let (src, dst) = (src.index() as u64, dst.index() as u64);
            self.body.delta(prev_src, src);
            self.body.delta(src, dst);
            prev_src = src;
            let k = match self.kinds.iter().position(|&k| k == kind) {
                Some(k) => k,
                None => {
                    self.kinds.push(kind);
                    self.kinds.len() - 1
                }
            };
            self.body.usize(k);
        }
    }

    /// Records a function left uninstrumented.
    pub fn skipped(&mut self, u: &Unsupported) {
        self.skipped
            .push((u.func_index, u.name.clone(), u.reason.clone()));
    }

    /// The whole section's contents, given what the rewriter chose, in
    /// three pieces to be written one after the other (joining them would
    /// copy the per-function records, the bulk of the section, once more),
    /// and the records spilled to a file, if any, which come before the
    /// second piece.
    pub fn finish(
        self,
        layout: &CounterLayout,
        code_map: &[CodeMap],
    ) -> ([Vec<u8>; 3], Option<Spilled>) {
        let mut head = Writer::default();
        head.buf.extend_from_slice(MAGIC);
        head.u32(META_VERSION);
        head.u8(self.technique);
        head.str(&self.module_hash);
        head.u64(self.truncate_above);
        head.usize(self.kinds.len());
        for k in &self.kinds {
            head.str(&format!("{k:?}"));
        }
        head.usize(self.files.len());
        for f in &self.files {
            head.str(f);
        }
        head.usize(self.functions);
        let mut tail = Writer::default();
        tail.usize(self.skipped.len());
        for (func_index, name, reason) in &self.skipped {
            tail.u32(*func_index);
            tail.opt_str(name.as_deref());
            tail.str(reason);
        }
        write_layout(&mut tail, layout);
        write_code_map(&mut tail, code_map);
        ([head.buf, self.body.buf, tail.buf], self.spill)
    }
}

fn write_layout(w: &mut Writer, layout: &CounterLayout) {
    w.u32(layout.version);
    // The rest of the identity is the section's technique and module hash.
    w.buf.extend_from_slice(&layout.identity.plan_hash);
    w.str(&layout.memory_export);
    w.u64(layout.total_bytes);
    w.usize(layout.functions.len());
    for f in &layout.functions {
        w.u32(f.func_index);
        match f.paths {
            PathTable::None => w.u8(0),
            PathTable::Array { len } => {
                w.u8(1);
                w.u64(len);
            }
            PathTable::Hash { capacity } => {
                w.u8(2);
                w.u32(capacity);
            }
        }
        w.u32(f.paths_offset);
        w.u32(f.slots);
        w.u32(f.slots_offset);
        w.u64(f.ppp_len);
        w.u32(f.ppp_offset);
    }
}

/// Per function, block starts as deltas (they are sorted) and block ids.
fn write_code_map(w: &mut Writer, code_map: &[CodeMap]) {
    w.usize(code_map.len());
    for m in code_map {
        w.u32(m.func_index);
        w.usize(m.blocks.len());
        let mut prev = 0u64;
        for &(at, node) in &m.blocks {
            w.delta(prev, u64::from(at));
            prev = u64::from(at);
            w.usize(node.index());
        }
    }
}
