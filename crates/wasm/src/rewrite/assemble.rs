//! Re-assembling the module around the rewritten bodies: everything the
//! instrumentation does not change is copied with wasm-encoder's `Reencode`
//! (which also remaps function indices when the trace import shifts them);
//! what it adds is appended to the existing sections, or put in new sections
//! at their place in the section order when the module has none.

use super::hollow::Holes;
use super::layout::{COUNTERS_EXPORT, MAX_PAGES};
use super::lower;
use super::trace::{
    TraceBuffer, TRACE_BUFFER_EXPORT, TRACE_BUFFER_PAGES, TRACE_FLUSH, TRACE_MODULE, TRACE_NAME,
    TRACE_POS_EXPORT,
};
use super::types::{self, NewTypes};
use crate::error::{Result, WasmError};
use crate::module::ModuleScan;
use pathprof_techniques::{global_export_name, Width};
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::ops::Range;
use wasm_encoder::reencode::{self, utils, Reencode};
use wasm_encoder::{ConstExpr, EntityType, ExportKind, MemoryType, SectionId};

/// Re-assembles the module: copies what is unchanged, appends what the
/// instrumentation adds, and inserts sections the module lacks.
pub(crate) struct Assembler<'a> {
    pub scan: &'a ModuleScan<'a>,
    pub shift: u32,
    pub types: &'a NewTypes,
    pub trace_ty: Option<u32>,
    /// A buffered trace's memory and global, added after all others.
    pub trace_buffer: Option<TraceBuffer>,
    pub helper_ty: Option<u32>,
    /// The type of the member loops' helpers, and how many there are
    /// (after the hash helper).
    pub closer_ty: Option<u32>,
    pub num_closers: usize,
    pub memory: u32,
    pub pages: u64,
    pub segments: Vec<(u32, Vec<u8>)>,
    pub custom_sections: &'a [(&'a str, &'a [u8])],
    /// Where the code section goes in the assembled module: it is spliced in
    /// afterwards ([`splice_code`]).
    pub code_at: Option<usize>,
    /// Whether custom sections copied unchanged get only their header in
    /// the assembled module, their contents being written from the input
    /// module by [`write_code`] (see [`Deferred`]).
    pub defer_custom: bool,
    pub deferred: Vec<Deferred>,
    /// Custom sections whose contents were left in the input file.
    pub holes: Option<&'a Holes>,
    /// The module-level registers: globals appended after the module's own.
    pub globals: &'a [Width],
}

/// A custom section copied unchanged into a module written to a file: the
/// assembled module holds its header, ending at `at`, and its contents are
/// `input[data]`, written there from the input. Most of a module built with
/// `-g` is its DWARF; copying it into the assembled module held it twice.
pub(crate) struct Deferred {
    pub at: usize,
    pub contents: Contents,
}

/// Where a deferred custom section's contents are.
pub(crate) enum Contents {
    /// `input[range]`.
    Input(Range<usize>),
    /// Hole `i` of the [`Holes`] (the input file).
    Hole(usize),
}

/// Whether an assembled module has `section` as it is: every custom
/// section but the name section (whose function indices may shift) and
/// code metadata (dropped: its offsets would be stale).
pub(crate) fn copied_unchanged(section: &wasmparser::CustomSectionReader<'_>) -> bool {
    !section.name().starts_with("metadata.code.")
        && !matches!(section.as_known(), wasmparser::KnownCustom::Name(_))
}

/// A custom section's id, size and name, as [`wasm_encoder::CustomSection`]
/// encodes them, without its `data_len` bytes of contents.
struct CustomHeader<'a> {
    name: &'a str,
    data_len: usize,
}

impl wasm_encoder::Encode for CustomHeader<'_> {
    fn encode(&self, sink: &mut Vec<u8>) {
        let name_len = self.name.len() as u32;
        (leb_len(name_len) + self.name.len() + self.data_len).encode(sink);
        self.name.encode(sink);
    }
}

impl wasm_encoder::Section for CustomHeader<'_> {
    fn id(&self) -> u8 {
        SectionId::Custom as u8
    }
}

/// The encoding of an empty code section, which `parse_core_module` leaves
/// where the real one goes.
const EMPTY_CODE_SECTION: [u8; 3] = [SectionId::Code as u8, 1, 0];

/// The code section's entries, each body behind its size, as they are
/// produced: in one buffer that becomes the output module ([`splice_code`]),
/// or spilled to a file ([`CodeEntries::spill_to`]) to be copied behind the
/// sections before the code once those are known ([`write_code`]). Either
/// way no body is kept in a vector of its own.
#[derive(Default)]
pub(crate) struct CodeEntries {
    bytes: Vec<u8>,
    spill: Option<BufWriter<File>>,
    /// Bytes of the entries so far, in `bytes` or spilled.
    size: usize,
    /// Where each body begins among the entries.
    starts: Vec<usize>,
}

impl CodeEntries {
    /// Entries written to `file` (empty, and read back from its start)
    /// instead of kept in memory.
    pub fn spill_to(&mut self, file: File) {
        self.spill = Some(BufWriter::with_capacity(SPILL_BUFFER, file));
    }

    /// Appends the next body.
    pub fn push(&mut self, body: &[u8]) -> Result<()> {
        use wasm_encoder::Encode;
        let mut entry = Vec::with_capacity(5);
        (body.len() as u32).encode(&mut entry);
        self.starts.push(self.size + entry.len());
        self.size += entry.len() + body.len();
        match &mut self.spill {
            Some(file) => {
                file.write_all(&entry)?;
                file.write_all(body)?;
            }
            None => {
                self.bytes.extend_from_slice(&entry);
                self.bytes.extend_from_slice(body);
            }
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Writes the entries to `out`, copying them back from the spill file.
    fn write_to(self, out: &mut File) -> Result<()> {
        match self.spill {
            Some(file) => {
                let mut file = file.into_inner().map_err(|e| e.into_error())?;
                file.seek(SeekFrom::Start(0))?;
                let copied = std::io::copy(&mut file, out)?;
                if copied != self.size as u64 {
                    return Err(WasmError::Io {
                        message: format!("{copied} bytes of code read back for {}", self.size),
                    });
                }
            }
            None => out.write_all(&self.bytes)?,
        }
        Ok(())
    }
}

/// Buffer between the rewriter and the spill file: bodies are mostly a few
/// hundred bytes, and one system call per body would cost more than the
/// rewrite; one per 16 KiB (dozens of bodies) costs nothing beside them
/// (64 KiB was a quarter of a small module's heap).
const SPILL_BUFFER: usize = 16 << 10;

/// The code section's header for `count` entries of `entries` bytes.
fn code_header(count: u32, entries: usize) -> Vec<u8> {
    use wasm_encoder::Encode;
    let mut header = vec![SectionId::Code as u8];
    ((leb_len(count) + entries) as u32).encode(&mut header);
    count.encode(&mut header);
    header
}

fn check_placeholder(module: &[u8], at: usize) -> Result<()> {
    if module.get(at..at + 3) != Some(&EMPTY_CODE_SECTION[..]) {
        return Err(WasmError::InvalidOutput {
            offset: at,
            message: "code section placeholder not found".into(),
        });
    }
    Ok(())
}

/// `module` with its empty code section at `at` replaced by one holding
/// `code` and the helpers, and the module offset where each body of `code`
/// begins. `code` must be in memory.
pub(crate) fn splice_code(
    module: &[u8],
    at: usize,
    mut code: CodeEntries,
    helpers: Vec<wasm_encoder::Function>,
) -> Result<(Vec<u8>, Vec<usize>)> {
    check_placeholder(module, at)?;
    debug_assert!(code.spill.is_none());
    let bodies = code.len();
    for helper in helpers {
        code.push(&helper.into_raw_body())?;
    }
    let header = code_header(code.len() as u32, code.size);
    // The module before the code, moved in front of the entries in place,
    // in a buffer grown once to the module's exact size (`splice` alone
    // would grow it by doubling).
    let before = at + header.len();
    let after = &module[at + EMPTY_CODE_SECTION.len()..];
    code.bytes.reserve_exact(before + after.len());
    code.bytes
        .splice(0..0, module[..at].iter().chain(&header).copied());
    code.bytes.extend_from_slice(after);
    let mut starts = code.starts;
    starts.truncate(bodies);
    for s in &mut starts {
        *s += before;
    }
    Ok((code.bytes, starts))
}

/// Writes `module` to `out` with its empty code section at `at` (if it has
/// one) replaced by one holding `code` and the helpers, as [`splice_code`]
/// builds it, and the contents of the `deferred` custom sections from
/// `input` and the `holes`; returns the module offset where each body of
/// `code` begins.
pub(crate) fn write_code(
    module: &[u8],
    at: Option<usize>,
    code: CodeEntries,
    helpers: Vec<wasm_encoder::Function>,
    deferred: DeferredFrom<'_>,
    out: &mut File,
) -> Result<Vec<usize>> {
    use wasm_encoder::Encode;
    let Some(at) = at else {
        write_with_deferred(out, module, 0..module.len(), &deferred)?;
        return Ok(Vec::new());
    };
    check_placeholder(module, at)?;
    let mut helper_entry = Vec::new();
    let num_helpers = helpers.len();
    for helper in helpers {
        let body = helper.into_raw_body();
        (body.len() as u32).encode(&mut helper_entry);
        helper_entry.extend_from_slice(&body);
    }
    let count = code.len() + num_helpers;
    let header = code_header(count as u32, code.size + helper_entry.len());
    let written_before = write_with_deferred(out, module, 0..at, &deferred)?;
    let before = written_before + header.len();
    let starts = code.starts.iter().map(|s| s + before).collect();
    out.write_all(&header)?;
    code.write_to(out)?;
    out.write_all(&helper_entry)?;
    let rest = at + EMPTY_CODE_SECTION.len()..module.len();
    write_with_deferred(out, module, rest, &deferred)?;
    Ok(starts)
}

/// Writes `module[range]` with the contents of each deferred custom section
/// whose header ends in it (after its first byte: a header ending at the
/// code section's placeholder belongs to the part before it) from `input`;
/// returns the bytes written.
fn write_with_deferred(
    out: &mut File,
    module: &[u8],
    range: Range<usize>,
    from_: &DeferredFrom<'_>,
) -> Result<usize> {
    let (mut from, mut written) = (range.start, 0);
    for d in from_
        .deferred
        .iter()
        .filter(|d| range.start < d.at && d.at <= range.end)
    {
        out.write_all(&module[from..d.at])?;
        written += d.at - from + from_.write(d, out)?;
        from = d.at;
    }
    out.write_all(&module[from..range.end])?;
    Ok(written + range.end - from)
}

/// The deferred custom sections of an assembled module, and where their
/// contents are: the input module and the holes left in its file.
pub(crate) struct DeferredFrom<'a> {
    pub deferred: &'a [Deferred],
    pub input: &'a [u8],
    pub holes: Option<&'a Holes>,
}

impl DeferredFrom<'_> {
    /// Writes `d`'s contents to `out`; returns how many bytes.
    fn write(&self, d: &Deferred, out: &mut File) -> Result<usize> {
        let outside = || WasmError::InvalidOutput {
            offset: d.at,
            message: "a custom section's contents lie outside the input".into(),
        };
        match d.contents {
            Contents::Input(ref data) => {
                let contents = self.input.get(data.clone()).ok_or_else(outside)?;
                out.write_all(contents)?;
                Ok(contents.len())
            }
            Contents::Hole(i) => {
                let holes = self.holes.ok_or_else(outside)?;
                holes.copy(i, out)
            }
        }
    }
}

/// Bytes of the unsigned LEB128 encoding of `v`.
fn leb_len(v: u32) -> usize {
    let mut n = 1;
    let mut v = v >> 7;
    while v != 0 {
        v >>= 7;
        n += 1;
    }
    n
}

type RResult<T> = std::result::Result<T, reencode::Error<std::convert::Infallible>>;

/// Position of a section id in the order sections must appear.
fn rank(id: SectionId) -> u8 {
    match id {
        SectionId::Type => 1,
        SectionId::Import => 2,
        SectionId::Function => 3,
        SectionId::Table => 4,
        SectionId::Memory => 5,
        SectionId::Tag => 6,
        SectionId::Global => 7,
        SectionId::Export => 8,
        SectionId::Start => 9,
        SectionId::Element => 10,
        SectionId::DataCount => 11,
        SectionId::Code => 12,
        SectionId::Data => 13,
        _ => 0,
    }
}

impl Assembler<'_> {
    fn add_types(&self, types: &mut wasm_encoder::TypeSection) {
        for sig in &self.types.list {
            types.ty().function(
                sig.params.iter().map(|&t| types::val_type(t)),
                sig.results.iter().map(|&t| types::val_type(t)),
            );
        }
    }
    fn add_imports(&self, imports: &mut wasm_encoder::ImportSection) {
        if let Some(ty) = self.trace_ty {
            let name = match self.trace_buffer {
                Some(_) => TRACE_FLUSH,
                None => TRACE_NAME,
            };
            imports.import(TRACE_MODULE, name, EntityType::Function(ty));
        }
    }
    fn add_functions(&self, functions: &mut wasm_encoder::FunctionSection) {
        if let Some(ty) = self.helper_ty {
            functions.function(ty);
        }
        if let Some(ty) = self.closer_ty {
            for _ in 0..self.num_closers {
                functions.function(ty);
            }
        }
    }
    fn add_memory(&self, memories: &mut wasm_encoder::MemorySection) {
        // The hash helper grows the memory for overflow tables; without it
        // the memory never grows.
        let maximum = if self.helper_ty.is_some() {
            MAX_PAGES
        } else {
            self.pages
        };
        memories.memory(MemoryType {
            minimum: self.pages,
            maximum: Some(maximum),
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
        if self.trace_buffer.is_some() {
            memories.memory(MemoryType {
                minimum: TRACE_BUFFER_PAGES,
                maximum: Some(TRACE_BUFFER_PAGES),
                memory64: false,
                shared: false,
                page_size_log2: None,
            });
        }
    }
    fn add_globals(&self, globals: &mut wasm_encoder::GlobalSection) {
        if self.trace_buffer.is_some() {
            let ty = wasm_encoder::GlobalType {
                val_type: wasm_encoder::ValType::I32,
                mutable: true,
                shared: false,
            };
            globals.global(ty, &ConstExpr::i32_const(0));
        }
        for &w in self.globals {
            let (val_type, init) = match w {
                Width::I32 => (wasm_encoder::ValType::I32, ConstExpr::i32_const(0)),
                Width::I64 => (wasm_encoder::ValType::I64, ConstExpr::i64_const(0)),
            };
            let ty = wasm_encoder::GlobalType {
                val_type,
                mutable: true,
                shared: false,
            };
            globals.global(ty, &init);
        }
    }
    /// Index of the first module-level register: after the module's own
    /// globals and the buffered trace's position, which come first.
    fn globals_base(&self) -> u32 {
        self.scan.num_globals + u32::from(self.trace_buffer.is_some())
    }
    fn add_export(&self, exports: &mut wasm_encoder::ExportSection) {
        exports.export(COUNTERS_EXPORT, ExportKind::Memory, self.memory);
        if let Some(b) = self.trace_buffer {
            exports.export(TRACE_BUFFER_EXPORT, ExportKind::Memory, b.memory);
            exports.export(TRACE_POS_EXPORT, ExportKind::Global, b.pos);
        }
        for g in 0..self.globals.len() as u32 {
            let index = self.globals_base() + g;
            exports.export(&global_export_name(g), ExportKind::Global, index);
        }
    }
    /// The code section of a module that had none (and so no function of
    /// its own): the helper alone.
    fn add_code(&mut self, codes: &mut wasm_encoder::CodeSection) {
        if self.helper_ty.is_some() {
            codes.function(&lower::hash_helper_body(self.memory));
        }
    }
    fn add_data(&self, data: &mut wasm_encoder::DataSection) {
        for (offset, bytes) in &self.segments {
            data.active(
                self.memory,
                &ConstExpr::i32_const(*offset as i32),
                bytes.iter().copied(),
            );
        }
    }
    fn has(&self, id: SectionId) -> bool {
        self.scan.has_section[id as usize]
    }
}

impl Reencode for Assembler<'_> {
    type Error = std::convert::Infallible;

    fn function_index(&mut self, func: u32) -> RResult<u32> {
        Ok(if func >= self.scan.num_imported_funcs {
            func + self.shift
        } else {
            func
        })
    }

    fn parse_type_section(
        &mut self,
        types: &mut wasm_encoder::TypeSection,
        section: wasmparser::TypeSectionReader<'_>,
    ) -> RResult<()> {
        utils::parse_type_section(self, types, section)?;
        self.add_types(types);
        Ok(())
    }

    fn parse_import_section(
        &mut self,
        imports: &mut wasm_encoder::ImportSection,
        section: wasmparser::ImportSectionReader<'_>,
    ) -> RResult<()> {
        utils::parse_import_section(self, imports, section)?;
        self.add_imports(imports);
        Ok(())
    }

    fn parse_function_section(
        &mut self,
        functions: &mut wasm_encoder::FunctionSection,
        section: wasmparser::FunctionSectionReader<'_>,
    ) -> RResult<()> {
        utils::parse_function_section(self, functions, section)?;
        self.add_functions(functions);
        Ok(())
    }

    fn parse_memory_section(
        &mut self,
        memories: &mut wasm_encoder::MemorySection,
        section: wasmparser::MemorySectionReader<'_>,
    ) -> RResult<()> {
        utils::parse_memory_section(self, memories, section)?;
        self.add_memory(memories);
        Ok(())
    }

    fn parse_global_section(
        &mut self,
        globals: &mut wasm_encoder::GlobalSection,
        section: wasmparser::GlobalSectionReader<'_>,
    ) -> RResult<()> {
        utils::parse_global_section(self, globals, section)?;
        self.add_globals(globals);
        Ok(())
    }

    fn parse_export_section(
        &mut self,
        exports: &mut wasm_encoder::ExportSection,
        section: wasmparser::ExportSectionReader<'_>,
    ) -> RResult<()> {
        utils::parse_export_section(self, exports, section)?;
        self.add_export(exports);
        Ok(())
    }

    fn parse_code_section(
        &mut self,
        _codes: &mut wasm_encoder::CodeSection,
        _section: wasmparser::CodeSectionReader<'_>,
    ) -> RResult<()> {
        // The default `parse_core_module` appends the (empty) section we are
        // given after this returns; `splice_code` replaces it.
        Ok(())
    }

    fn data_count(&mut self, count: u32) -> RResult<u32> {
        Ok(count + self.segments.len() as u32)
    }

    fn parse_data_section(
        &mut self,
        data: &mut wasm_encoder::DataSection,
        section: wasmparser::DataSectionReader<'_>,
    ) -> RResult<()> {
        utils::parse_data_section(self, data, section)?;
        self.add_data(data);
        Ok(())
    }

    fn parse_custom_section(
        &mut self,
        module: &mut wasm_encoder::Module,
        section: wasmparser::CustomSectionReader<'_>,
    ) -> RResult<()> {
        if section.name().starts_with("metadata.code.") {
            return Ok(());
        }
        if self.defer_custom && copied_unchanged(&section) {
            let data = section.data_offset()..section.data_offset() + section.data().len();
            let (contents, data_len) = match self.holes.and_then(|h| h.at(data.start)) {
                Some((i, len)) => (Contents::Hole(i), len),
                None => (Contents::Input(data.clone()), data.len()),
            };
            module.section(&CustomHeader {
                name: section.name(),
                data_len,
            });
            self.deferred.push(Deferred {
                at: module.len(),
                contents,
            });
            return Ok(());
        }
        utils::parse_custom_section(self, module, section)
    }

    fn intersperse_section_hook(
        &mut self,
        module: &mut wasm_encoder::Module,
        after: Option<SectionId>,
        before: Option<SectionId>,
    ) -> RResult<()> {
        let lo = after.map_or(0, rank);
        let hi = before.map_or(u8::MAX, rank);
        let gap = |id: SectionId| lo < rank(id) && rank(id) < hi;
        let missing = |this: &Self, id: SectionId| !this.has(id) && gap(id);
        if missing(self, SectionId::Type) && !self.types.list.is_empty() {
            let mut s = wasm_encoder::TypeSection::new();
            self.add_types(&mut s);
            module.section(&s);
        }
        if missing(self, SectionId::Import) && self.trace_ty.is_some() {
            let mut s = wasm_encoder::ImportSection::new();
            self.add_imports(&mut s);
            module.section(&s);
        }
        if missing(self, SectionId::Function) && self.helper_ty.is_some() {
            let mut s = wasm_encoder::FunctionSection::new();
            self.add_functions(&mut s);
            module.section(&s);
        }
        if missing(self, SectionId::Memory) {
            let mut s = wasm_encoder::MemorySection::new();
            self.add_memory(&mut s);
            module.section(&s);
        }
        if missing(self, SectionId::Global)
            && (self.trace_buffer.is_some() || !self.globals.is_empty())
        {
            let mut s = wasm_encoder::GlobalSection::new();
            self.add_globals(&mut s);
            module.section(&s);
        }
        if missing(self, SectionId::Export) {
            let mut s = wasm_encoder::ExportSection::new();
            self.add_export(&mut s);
            module.section(&s);
        }
        if missing(self, SectionId::Code) && self.helper_ty.is_some() {
            let mut s = wasm_encoder::CodeSection::new();
            self.add_code(&mut s);
            module.section(&s);
        }
        if missing(self, SectionId::Data) {
            let mut s = wasm_encoder::DataSection::new();
            self.add_data(&mut s);
            module.section(&s);
        }
        if before == Some(SectionId::Code) {
            // The code section comes next.
            self.code_at = Some(module.len());
        }
        if before.is_none() {
            for (name, data) in self.custom_sections {
                module.section(&wasm_encoder::CustomSection {
                    name: (*name).into(),
                    data: (*data).into(),
                });
            }
        }
        Ok(())
    }
}

pub(crate) fn reencode_error(e: reencode::Error<std::convert::Infallible>) -> WasmError {
    match e {
        reencode::Error::ParseError(e) => WasmError::invalid(&e),
        other => WasmError::Invalid {
            offset: 0,
            message: other.to_string(),
        },
    }
}
