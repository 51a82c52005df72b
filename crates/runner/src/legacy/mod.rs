//! Legacy exception handling rewritten as the standard one, so that the
//! embedded engine runs modules that use it (docs/decisions.md#legacy-exceptions).
//!
//! Wasmtime compiles `try_table` and `throw_ref`, exception handling as
//! standardised, but not the legacy `try`/`catch`/`catch_all`/`rethrow`/
//! `delegate` that many C++ toolchains still emit. [`translate`] rewrites
//! every function that uses them, as binaryen's `--translate-to-exnref`
//! does; the other functions are copied byte for byte.
//!
//! ```text
//! try bt  B  catch $t H1  catch_all H2  end
//! =>
//! block bt                                   ;; $outer: the try's label
//!   block [p*] -> [L2]                       ;; one per clause, the last outermost
//!     block [p*] -> [L1]
//!       try_table bt (catch $t 0) (catch_all 1)   ;; `_ref` when rethrown
//!         B
//!       end
//!       br $outer
//!     end                                    ;; L1: the tag's values (, exnref)
//!     [local.set $exn]  H1  br $outer
//!   end
//!   [local.set $exn]  H2
//! end
//! ```
//!
//! `rethrow` of a try is `local.get $exn  throw_ref`, from an `exnref`
//! local of that try's own. `try B delegate l` is `try_table bt
//! (catch_all_ref $land) B end`, where `$land` is the inner of two blocks,
//! `block [p*] -> [r*]  block [p*] -> [exnref]  …  br 1  end  throw_ref  end`,
//! that wrap the body of label l's try (whose handlers then catch), or the
//! whole construct of label l when it is not a try's body (a block, a loop,
//! an `if`, a try's handler, the function itself), so that the handlers
//! around it catch: the exception is thrown again where the delegate
//! sends it. A function that mixes legacy and standard handlers is not
//! translated (an error).
//!
//! Offsets: a trap's or `proc_exit`'s backtrace gives module offsets of the
//! translated module; [`OffsetMap`] takes them back to the original's, so
//! that the frames an abrupt end leaves are found in the original's CFG.

mod body;

use std::collections::HashMap;

use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasm_encoder::{BlockType, CodeSection, ValType};
use wasmparser::{FunctionBody, Operator, Parser, Payload};

/// Why a module could not be translated.
#[derive(Debug)]
pub struct TranslateError(pub String);

fn err(e: impl std::fmt::Display) -> TranslateError {
    TranslateError(e.to_string())
}

impl std::fmt::Display for TranslateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type Sig = (Vec<ValType>, Vec<ValType>);

/// A translated module and the way back to the original's offsets.
pub struct Translated {
    pub bytes: Vec<u8>,
    pub offsets: OffsetMap,
}

/// Module offsets of the translated functions, back to the original's.
#[derive(Debug, Default)]
pub struct OffsetMap {
    /// Per translated function index: where its body starts in the
    /// translated and in the original module, and the (translated,
    /// original) body-relative offsets of each instruction copied.
    funcs: HashMap<u32, (u32, u32, Vec<(u32, u32)>)>,
}

impl OffsetMap {
    /// The original module's offset of `offset` in function `func` of the
    /// translated module (unchanged for functions copied as they were).
    pub fn original(&self, func: u32, offset: u32) -> u32 {
        let Some((new_start, old_start, points)) = self.funcs.get(&func) else {
            return offset;
        };
        let Some(rel) = offset.checked_sub(*new_start) else {
            return offset;
        };
        let i = points.partition_point(|&(n, _)| n <= rel);
        match i.checked_sub(1).map(|i| points[i]) {
            Some((n, o)) => old_start + o + (rel - n),
            None => *old_start,
        }
    }
}

fn has_legacy(body: &FunctionBody<'_>) -> bool {
    let Ok(mut ops) = body.get_operators_reader() else {
        return false;
    };
    while !ops.eof() {
        match ops.read() {
            Ok(Operator::Try { .. } | Operator::Rethrow { .. }) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

/// The defined functions' bodies with their function indices.
fn bodies(bytes: &[u8]) -> wasmparser::Result<Vec<(u32, FunctionBody<'_>)>> {
    let mut out = Vec::new();
    let mut next = 0;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::ImportSection(s) => {
                for i in s.into_imports() {
                    if matches!(
                        i?.ty,
                        wasmparser::TypeRef::Func(_) | wasmparser::TypeRef::FuncExact(_)
                    ) {
                        next += 1;
                    }
                }
            }
            Payload::CodeSectionEntry(body) => {
                out.push((next, body));
                next += 1;
            }
            _ => {}
        }
    }
    Ok(out)
}

/// What the translation needs of the module: function types, each
/// function's and each tag's type, and the types it adds.
#[derive(Default)]
struct Types {
    /// Per type index, a function type's parameters and results.
    sigs: Vec<Option<Sig>>,
    /// Per function index, imports included, its type index.
    func_types: Vec<u32>,
    imported_funcs: u32,
    /// Per tag index, its type index.
    tag_types: Vec<u32>,
    added: Vec<Sig>,
    interned: HashMap<Sig, u32>,
}

impl Types {
    fn read(bytes: &[u8]) -> Result<Self, TranslateError> {
        let mut t = Types::default();
        let conv = |v| RoundtripReencoder.val_type(v).map_err(err);
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.map_err(err)? {
                Payload::TypeSection(s) => {
                    for group in s {
                        for sub in group.map_err(err)?.into_types() {
                            t.sigs.push(match &sub.composite_type.inner {
                                wasmparser::CompositeInnerType::Func(f) => Some((
                                    f.params()
                                        .iter()
                                        .map(|&v| conv(v))
                                        .collect::<Result<_, _>>()?,
                                    f.results()
                                        .iter()
                                        .map(|&v| conv(v))
                                        .collect::<Result<_, _>>()?,
                                )),
                                _ => None,
                            });
                        }
                    }
                }
                Payload::ImportSection(s) => {
                    for i in s.into_imports() {
                        match i.map_err(err)?.ty {
                            wasmparser::TypeRef::Func(f) | wasmparser::TypeRef::FuncExact(f) => {
                                t.func_types.push(f);
                                t.imported_funcs += 1;
                            }
                            wasmparser::TypeRef::Tag(tag) => t.tag_types.push(tag.func_type_idx),
                            _ => {}
                        }
                    }
                }
                Payload::FunctionSection(s) => {
                    for f in s {
                        t.func_types.push(f.map_err(err)?);
                    }
                }
                Payload::TagSection(s) => {
                    for tag in s {
                        t.tag_types.push(tag.map_err(err)?.func_type_idx);
                    }
                }
                _ => {}
            }
        }
        Ok(t)
    }

    fn sig(&self, ty: u32) -> Result<&Sig, TranslateError> {
        self.sigs
            .get(ty as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| err(format!("type {ty} is not a function type")))
    }

    /// A block's parameters and results.
    fn block(&self, bt: wasmparser::BlockType) -> Result<Sig, TranslateError> {
        Ok(match bt {
            wasmparser::BlockType::Empty => (vec![], vec![]),
            wasmparser::BlockType::Type(v) => {
                (vec![], vec![RoundtripReencoder.val_type(v).map_err(err)?])
            }
            wasmparser::BlockType::FuncType(i) => self.sig(i)?.clone(),
        })
    }

    /// The block type of a block `params -> results`, a new function type
    /// when it needs one.
    fn block_type(&mut self, params: &[ValType], results: &[ValType]) -> BlockType {
        match (params, results) {
            ([], []) => BlockType::Empty,
            ([], [v]) => BlockType::Result(*v),
            _ => {
                let key = (params.to_vec(), results.to_vec());
                let next = (self.sigs.len() + self.added.len()) as u32;
                let added = &mut self.added;
                let index = *self.interned.entry(key.clone()).or_insert_with(|| {
                    added.push(key);
                    next
                });
                BlockType::FunctionType(index)
            }
        }
    }
}

/// Rewrites the legacy exception handling of `bytes` (see the module
/// documentation).
pub fn translate(bytes: &[u8]) -> Result<Translated, TranslateError> {
    let mut types = Types::read(bytes)?;
    // Per translated function: its body, its offsets, its original start.
    let mut done: HashMap<u32, (Vec<u8>, Vec<(u32, u32)>, u32)> = HashMap::new();
    for (index, body) in bodies(bytes).map_err(err)? {
        if has_legacy(&body) {
            let (out, points) = body::translate(&mut types, index, &body)
                .map_err(|e| err(format!("function {index}: {}", e.0)))?;
            done.insert(index, (out, points, body.range().start as u32));
        }
    }
    let mut re = Rewrite {
        types: &types,
        done: &done,
        next: types.imported_funcs,
    };
    let mut module = wasm_encoder::Module::new();
    re.parse_core_module(&mut module, Parser::new(0), bytes)
        .map_err(|e| err(format!("{e:?}")))?;
    let out = module.finish();
    let mut offsets = OffsetMap::default();
    for (index, body) in bodies(&out).map_err(err)? {
        if let Some((_, points, old_start)) = done.remove(&index) {
            offsets
                .funcs
                .insert(index, (body.range().start as u32, old_start, points));
        }
    }
    Ok(Translated {
        bytes: out,
        offsets,
    })
}

/// The module copied, with the added types after its own and the
/// translated bodies in place of theirs.
struct Rewrite<'a> {
    types: &'a Types,
    done: &'a HashMap<u32, (Vec<u8>, Vec<(u32, u32)>, u32)>,
    /// The function index of the next body.
    next: u32,
}

impl Reencode for Rewrite<'_> {
    type Error = std::convert::Infallible;

    fn parse_type_section(
        &mut self,
        types: &mut wasm_encoder::TypeSection,
        section: wasmparser::TypeSectionReader<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        wasm_encoder::reencode::utils::parse_type_section(self, types, section)?;
        for (params, results) in &self.types.added {
            types
                .ty()
                .function(params.iter().copied(), results.iter().copied());
        }
        Ok(())
    }

    fn parse_function_body(
        &mut self,
        code: &mut CodeSection,
        func: FunctionBody<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        match self.done.get(&self.next) {
            Some((body, ..)) => code.raw(body),
            None => code.raw(func.as_bytes()),
        };
        self.next += 1;
        Ok(())
    }
}
