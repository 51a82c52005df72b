//! Function types the rewriter appends to the type section: the signatures of
//! its own functions and the multi-value block types of landing-pad blocks.
//! Existing types are never renumbered.

use crate::cfg::site::Construct;
use crate::module::{ModuleScan, Signature};
use std::collections::HashMap;
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasmparser::ValType;

/// A block type, hashable.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum BlockKey {
    Empty,
    Val(ValType),
    Func(u32),
}

impl From<wasmparser::BlockType> for BlockKey {
    fn from(bt: wasmparser::BlockType) -> Self {
        match bt {
            wasmparser::BlockType::Empty => BlockKey::Empty,
            wasmparser::BlockType::Type(t) => BlockKey::Val(t),
            wasmparser::BlockType::FuncType(i) => BlockKey::Func(i),
        }
    }
}

/// A pad block type that needs a new function type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum PadKey {
    /// Wrapper of an `if [P] -> [R]`: `[P i32] -> [R]`.
    If(BlockKey),
    /// Landing pad inside a loop of type index `i` with params P: `[P] -> [P]`.
    LoopLand(u32),
    /// Wrapper of a function body with result types of type index `i`: `[] -> [R]`.
    FuncBody(u32),
}

/// The types appended after the module's own.
pub(crate) struct NewTypes {
    /// Index of the first appended type.
    pub base: u32,
    pub list: Vec<Signature>,
    by_sig: HashMap<Signature, u32>,
    pads: HashMap<PadKey, u32>,
}

impl NewTypes {
    pub fn new(base: u32) -> Self {
        NewTypes {
            base,
            list: Vec::new(),
            by_sig: HashMap::new(),
            pads: HashMap::new(),
        }
    }

    /// The index of a function type `params -> results`, appended if new.
    pub fn intern(&mut self, params: &[ValType], results: &[ValType]) -> u32 {
        let sig = Signature {
            params: params.into(),
            results: results.into(),
        };
        if let Some(&i) = self.by_sig.get(&sig) {
            return i;
        }
        let i = self.base + self.list.len() as u32;
        self.list.push(sig.clone());
        self.by_sig.insert(sig, i);
        i
    }

    /// Records the type a pad block of `key` needs.
    pub fn add_pad(&mut self, scan: &ModuleScan<'_>, key: PadKey) {
        if self.pads.contains_key(&key) {
            return;
        }
        let (params, results) = match key {
            PadKey::If(bt) => {
                let (mut p, r) = scan.block_signature(block_type(bt));
                p.push(ValType::I32);
                (p, r)
            }
            PadKey::LoopLand(i) => {
                let (p, _) = scan.block_signature(wasmparser::BlockType::FuncType(i));
                (p.clone(), p)
            }
            PadKey::FuncBody(i) => {
                let (_, r) = scan.block_signature(wasmparser::BlockType::FuncType(i));
                (Vec::new(), r)
            }
        };
        let i = self.intern(&params, &results);
        self.pads.insert(key, i);
    }

    /// The type index recorded for `key` by [`NewTypes::add_pad`].
    pub fn pad(&self, key: PadKey) -> Option<u32> {
        self.pads.get(&key).copied()
    }
}

fn block_type(key: BlockKey) -> wasmparser::BlockType {
    match key {
        BlockKey::Empty => wasmparser::BlockType::Empty,
        BlockKey::Val(t) => wasmparser::BlockType::Type(t),
        BlockKey::Func(i) => wasmparser::BlockType::FuncType(i),
    }
}

/// The new function type, if any, that the pads of a construct need.
pub(crate) fn pad_key(
    scan: &ModuleScan<'_>,
    construct: Construct,
    bt: wasmparser::BlockType,
) -> Option<PadKey> {
    match (construct, bt) {
        (Construct::If, bt) => Some(PadKey::If(bt.into())),
        (Construct::Loop, wasmparser::BlockType::FuncType(i)) => {
            let has_params = scan
                .types
                .get(i as usize)
                .and_then(Option::as_ref)
                .is_some_and(|s| !s.params.is_empty());
            has_params.then_some(PadKey::LoopLand(i))
        }
        _ => None,
    }
}

/// The pad key of a function body of type index `ty`, if its results need a
/// function type (more than one result).
pub(crate) fn func_pad_key(scan: &ModuleScan<'_>, ty: u32) -> Option<PadKey> {
    let results = scan
        .types
        .get(ty as usize)
        .and_then(Option::as_ref)
        .map_or(0, |s| s.results.len());
    (results > 1).then_some(PadKey::FuncBody(ty))
}

/// wasmparser value type to wasm-encoder (type indices unchanged).
pub(crate) fn val_type(t: ValType) -> wasm_encoder::ValType {
    RoundtripReencoder
        .val_type(t)
        .unwrap_or(wasm_encoder::ValType::I32)
}

/// wasmparser block type to wasm-encoder (type indices unchanged).
pub(crate) fn encoder_block_type(bt: wasmparser::BlockType) -> wasm_encoder::BlockType {
    match bt {
        wasmparser::BlockType::Empty => wasm_encoder::BlockType::Empty,
        wasmparser::BlockType::Type(t) => wasm_encoder::BlockType::Result(val_type(t)),
        wasmparser::BlockType::FuncType(i) => wasm_encoder::BlockType::FunctionType(i),
    }
}

/// The local type of a path register.
pub(crate) fn val_type_for(width: pathprof_techniques::Width) -> wasm_encoder::ValType {
    match width {
        pathprof_techniques::Width::I32 => wasm_encoder::ValType::I32,
        pathprof_techniques::Width::I64 => wasm_encoder::ValType::I64,
    }
}
