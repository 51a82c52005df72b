//! Module-level reading shared by the CFG builder and the rewriter: the header
//! check, validation, the module hash, and one scan of the sections that both
//! need (types, function signatures, bodies, names).

use crate::error::{Result, WasmError};
use sha2::{Digest, Sha256};
use wasmparser::{
    BinaryReaderError, CompositeInnerType, Encoding, FuncToValidate, FunctionBody, KnownCustom,
    Name, Parser, Payload, TypeRef, ValType, ValidPayload, Validator, ValidatorResources,
    WasmFeatures,
};

/// Names this crate adds to a module all start with this prefix.
pub const RESERVED_PREFIX: &str = "__pathprof";

const MAGIC: [u8; 4] = *b"\0asm";

/// The features accepted on input and checked on output: wasmparser's
/// defaults (which include everything wasmtime 48 enables by default plus
/// multi-memory, tail calls, function references, GC and exceptions), and the
/// legacy exception-handling instructions so that a module using them is read
/// and its functions reported `Unsupported` rather than rejected outright.
pub(crate) fn features() -> WasmFeatures {
    WasmFeatures::default() | WasmFeatures::LEGACY_EXCEPTIONS
}

/// Checks the 8-byte preamble: magic number and a core-module version.
pub(crate) fn check_header(bytes: &[u8]) -> Result<()> {
    if bytes.len() < MAGIC.len() {
        return Err(if !bytes.is_empty() && MAGIC.starts_with(bytes) {
            WasmError::Truncated {
                offset: 0,
                len: bytes.len(),
                message: "incomplete magic number".into(),
            }
        } else {
            WasmError::NotWasm
        });
    }
    if bytes[..4] != MAGIC {
        return Err(WasmError::NotWasm);
    }
    if bytes.len() < 8 {
        return Err(WasmError::Truncated {
            offset: 4,
            len: bytes.len(),
            message: "incomplete version".into(),
        });
    }
    match (
        u16::from_le_bytes([bytes[4], bytes[5]]),
        u16::from_le_bytes([bytes[6], bytes[7]]),
    ) {
        (1, 0) => Ok(()),
        (_, 1) => Err(WasmError::Component),
        (version, layer) => Err(WasmError::Invalid {
            offset: 4,
            message: format!("unknown binary version {version} (layer {layer})"),
        }),
    }
}

/// Classifies a wasmparser error on input of `len` bytes: running out of
/// input is `Truncated`, anything else `Invalid`.
pub(crate) fn input_error(e: &BinaryReaderError, len: usize) -> WasmError {
    // wasmparser reports every read past the end of its buffer with this
    // message; its `needed_hint` is not public.
    if e.message().starts_with("unexpected end-of-file") && e.offset() >= len.saturating_sub(16) {
        WasmError::Truncated {
            offset: e.offset(),
            len,
            message: e.message().to_string(),
        }
    } else {
        WasmError::invalid(e)
    }
}

/// A function body's validator, handed out by [`validate_sections`].
pub(crate) type BodyValidator = FuncToValidate<ValidatorResources>;

/// Header check plus validation with [`features`] of everything but the
/// function bodies, whose validators are returned in function order: the
/// CFG builder runs each one on the operators it decodes, so a body is
/// decoded once for both (`crate::cfg`). The bodies are checked in that
/// order, so an invalid body is reported as `validate_all` would, unless a
/// later section is invalid too.
pub(crate) fn validate_sections(bytes: &[u8]) -> Result<Vec<BodyValidator>> {
    check_header(bytes)?;
    if u32::try_from(bytes.len()).is_err() {
        return Err(WasmError::Invalid {
            offset: 0,
            message: "module larger than 4 GiB".into(),
        });
    }
    let err = |e: BinaryReaderError| input_error(&e, bytes.len());
    let mut validator = Validator::new_with_features(features());
    let mut parser = Parser::new(0);
    parser.set_features(features());
    let mut bodies = Vec::new();
    for payload in parser.parse_all(bytes) {
        if let ValidPayload::Func(func, _) =
            validator.payload(&payload.map_err(err)?).map_err(err)?
        {
            bodies.push(func);
        }
    }
    Ok(bodies)
}

/// Lower-case hex SHA-256 of the module bytes.
/// SHA-256 of the module bytes, in hex: the identity a profile records.
pub fn module_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        s.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('0'));
    }
    s
}

/// The 32 bytes of a SHA-256 digest written as [`module_hash`] writes it
/// (64 lowercase or uppercase hex digits), or `None`.
pub fn digest_from_hex(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut digest = [0u8; 32];
    for (byte, i) in digest.iter_mut().zip((0..64).step_by(2)) {
        *byte = u8::from_str_radix(&hex[i..i + 2], 16).ok()?;
    }
    Some(digest)
}

/// The contents of the first custom section called `name`, if any. Only the
/// section structure is read, not validated.
pub fn custom_section(bytes: &[u8], name: &str) -> Result<Option<Vec<u8>>> {
    check_header(bytes)?;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(|e| input_error(&e, bytes.len()))? {
            Payload::CustomSection(s) if s.name() == name => return Ok(Some(s.data().to_vec())),
            _ => {}
        }
    }
    Ok(None)
}

/// A function signature with module-relative type indices.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Signature {
    pub params: Box<[ValType]>,
    pub results: Box<[ValType]>,
}

/// What one pass over the sections of a validated module learns.
pub(crate) struct ModuleScan<'a> {
    /// Per type index: the signature if it is a function type.
    pub types: Vec<Option<Signature>>,
    /// Per function index (imports first): its type index.
    pub func_types: Vec<u32>,
    pub num_imported_funcs: u32,
    pub num_memories: u32,
    /// Globals, imported and defined: the index of the first one the
    /// rewriter adds.
    pub num_globals: u32,
    pub num_types: u32,
    /// Defined function bodies in order.
    pub bodies: Vec<FunctionBody<'a>>,
    /// Per defined function: its name from the name section.
    pub names: Vec<Option<String>>,
    /// Import module names and export names, to detect reserved-name clashes.
    pub reserved_clash: Option<String>,
    /// Per section id (0..=13): whether the module has that section.
    pub has_section: [bool; 14],
}

impl<'a> ModuleScan<'a> {
    /// Scans a module whose sections [`validate_sections`] accepted.
    pub fn new(bytes: &'a [u8]) -> Result<Self> {
        let mut scan = ModuleScan {
            types: Vec::new(),
            func_types: Vec::new(),
            num_imported_funcs: 0,
            num_memories: 0,
            num_globals: 0,
            num_types: 0,
            bodies: Vec::new(),
            names: Vec::new(),
            reserved_clash: None,
            has_section: [false; 14],
        };
        let mut func_names: Vec<(u32, String)> = Vec::new();
        let mut export_names: Vec<(u32, String)> = Vec::new();
        let err = |e: BinaryReaderError| WasmError::invalid(&e);
        for payload in Parser::new(0).parse_all(bytes) {
            let payload = payload.map_err(err)?;
            if let Some((id, _)) = payload.as_section() {
                if let Some(seen) = scan.has_section.get_mut(usize::from(id)) {
                    *seen = true;
                }
            }
            match payload {
                Payload::Version {
                    encoding: Encoding::Component,
                    ..
                } => return Err(WasmError::Component),
                Payload::TypeSection(r) => {
                    for group in r {
                        for sub in group.map_err(err)?.into_types() {
                            scan.types.push(match &sub.composite_type.inner {
                                CompositeInnerType::Func(f) => Some(Signature {
                                    params: f.params().into(),
                                    results: f.results().into(),
                                }),
                                _ => None,
                            });
                        }
                    }
                }
                Payload::ImportSection(r) => {
                    for import in r.into_imports() {
                        let import = import.map_err(err)?;
                        if import.module.starts_with(RESERVED_PREFIX) {
                            scan.reserved_clash
                                .get_or_insert_with(|| import.module.to_string());
                        }
                        match import.ty {
                            TypeRef::Func(t) | TypeRef::FuncExact(t) => {
                                scan.func_types.push(t);
                                scan.num_imported_funcs += 1;
                            }
                            TypeRef::Memory(_) => scan.num_memories += 1,
                            TypeRef::Global(_) => scan.num_globals += 1,
                            _ => {}
                        }
                    }
                }
                Payload::FunctionSection(r) => {
                    for t in r {
                        scan.func_types.push(t.map_err(err)?);
                    }
                }
                Payload::MemorySection(r) => scan.num_memories += r.count(),
                Payload::GlobalSection(r) => scan.num_globals += r.count(),
                Payload::ExportSection(r) => {
                    for export in r {
                        let export = export.map_err(err)?;
                        if export.name.starts_with(RESERVED_PREFIX) {
                            scan.reserved_clash
                                .get_or_insert_with(|| export.name.to_string());
                        }
                        if export.kind == wasmparser::ExternalKind::Func {
                            export_names.push((export.index, export.name.to_string()));
                        }
                    }
                }
                Payload::CodeSectionEntry(body) => scan.bodies.push(body),
                Payload::CustomSection(s) => {
                    if let KnownCustom::Name(names) = s.as_known() {
                        // A malformed name section is ignored, as engines do.
                        for sub in names.into_iter().flatten() {
                            if let Name::Function(map) = sub {
                                func_names.extend(
                                    map.into_iter()
                                        .flatten()
                                        .map(|n| (n.index, n.name.to_string())),
                                );
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        scan.num_types = u32::try_from(scan.types.len()).unwrap_or(u32::MAX);
        scan.names = vec![None; scan.bodies.len()];
        // The name section wins; a function it does not name is called by
        // its first export name, which is how a user knows it.
        export_names.reverse();
        for (index, name) in export_names.into_iter().chain(func_names) {
            let defined = index
                .checked_sub(scan.num_imported_funcs)
                .map(|i| i as usize);
            if let Some(slot) = defined.and_then(|i| scan.names.get_mut(i)) {
                *slot = Some(name);
            }
        }
        Ok(scan)
    }

    /// The signature of function `index` (module index space).
    pub fn func_signature(&self, index: u32) -> Option<&Signature> {
        let t = *self.func_types.get(index as usize)?;
        self.types.get(t as usize)?.as_ref()
    }

    /// Parameters and results of a block type (used only for constructs that
    /// get landing pads, so the allocation is not per instruction).
    pub fn block_signature(&self, bt: wasmparser::BlockType) -> (Vec<ValType>, Vec<ValType>) {
        match bt {
            wasmparser::BlockType::Empty => (Vec::new(), Vec::new()),
            wasmparser::BlockType::Type(t) => (Vec::new(), vec![t]),
            wasmparser::BlockType::FuncType(i) => {
                match self.types.get(i as usize).and_then(Option::as_ref) {
                    Some(sig) => (sig.params.to_vec(), sig.results.to_vec()),
                    None => (Vec::new(), Vec::new()),
                }
            }
        }
    }
}

/// Size in bytes of the code section's contents (0 if there is none or the
/// bytes do not parse): the "bytes of code" instrumenter throughput and code
/// growth are measured against.
pub fn code_section_size(bytes: &[u8]) -> usize {
    for payload in Parser::new(0).parse_all(bytes) {
        match payload {
            Ok(Payload::CodeSectionStart { size, .. }) => return size as usize,
            Ok(_) => {}
            Err(_) => return 0,
        }
    }
    0
}

/// The instruction at module offset `at` of `code`, when it is one of those
/// that wasmparser's operator reader checks against the frames it has read
/// (`else`, `catch`, `catch_all`, `delegate`), with the offset after it. A
/// reader made for one instruction has no `if` or legacy `try` open, so it
/// rejects them; their immediates are at most one index, decoded here.
pub(crate) fn frame_op(
    code: &[u8],
    at: usize,
) -> wasmparser::Result<Option<(wasmparser::Operator<'static>, usize)>> {
    use wasmparser::Operator;
    let index = || {
        let mut r = wasmparser::BinaryReader::new(code.get(at + 1..).unwrap_or_default(), at + 1);
        Ok::<_, wasmparser::BinaryReaderError>((r.read_var_u32()?, r.original_position()))
    };
    Ok(match code.get(at) {
        Some(0x05) => Some((Operator::Else, at + 1)),
        Some(0x19) => Some((Operator::CatchAll, at + 1)),
        Some(0x07) => {
            let (tag_index, end) = index()?;
            Some((Operator::Catch { tag_index }, end))
        }
        Some(0x18) => {
            let (relative_depth, end) = index()?;
            Some((Operator::Delegate { relative_depth }, end))
        }
        _ => None,
    })
}
