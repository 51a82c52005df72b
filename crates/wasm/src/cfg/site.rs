//! Rewrite sites: where the code of each CFG edge goes in the function body.
//!
//! The builder records them in instruction order; the rewriter walks them with
//! a cursor during its single pass over the body. Within one instruction the
//! order is: sites placed before it ([`Phase::Before`]), sites that change the
//! instruction itself ([`Phase::At`]), sites placed after it ([`Phase::After`]).

use pathprof_graph::EdgeId;

/// One placement, keyed by the module byte offset of an instruction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Site {
    pub offset: u32,
    pub kind: SiteKind,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum SiteKind {
    /// The edge's code goes right before the instruction: the edge is the only
    /// way out of its block there (fall-through into `end`/`else`/`loop`,
    /// `br`, `return`, `unreachable`, tail call, throw, one-target
    /// `br_table`), or it is the function's entry edge.
    Before(EdgeId),
    /// Before an `end` of an `if` without `else`: synthesize `else` followed
    /// by the code of the if's false edge.
    SynthElse(EdgeId),
    /// The instruction branches to the label of control frame `frame`
    /// (0 = the function) along `edge` when taken: br_if, br_table entries,
    /// br_on_*, and try_table catch clauses. When the edge carries code the
    /// branch is retargeted to a landing pad of that label.
    Taken { edge: EdgeId, frame: u32 },
    /// The instruction opens a reachable construct (block, loop, if,
    /// try_table); `pads` is the range in `FunctionCfg::pad_edges` of the
    /// taken edges that target its label, filled in when it closes. Its
    /// block type is not kept: [`open_blockty`] reads it back from the
    /// body, so that a site takes 16 bytes, not 24 (a large function has
    /// thousands, alive through its planning and rewrite).
    Open {
        construct: Construct,
        pads_start: u32,
        pads_len: u32,
    },
    /// The edge's code goes right after the instruction: the not-taken edge of
    /// br_if / br_on_*, and the arm edges of `if` (after `if` and `else`).
    After(EdgeId),
}

const _: () = assert!(std::mem::size_of::<Site>() == 16);

/// The block type of the construct opened at module offset `offset` of
/// `body` (an `Open` site's instruction).
pub(crate) fn open_blockty(
    body: &wasmparser::FunctionBody<'_>,
    offset: u32,
) -> wasmparser::Result<wasmparser::BlockType> {
    let start = (offset as usize).saturating_sub(body.range().start);
    let bytes = body.as_bytes().get(start..).unwrap_or_default();
    let mut ops =
        wasmparser::OperatorsReader::new(wasmparser::BinaryReader::new(bytes, offset as usize));
    Ok(match ops.read()? {
        wasmparser::Operator::Block { blockty }
        | wasmparser::Operator::Loop { blockty }
        | wasmparser::Operator::If { blockty }
        | wasmparser::Operator::Try { blockty } => blockty,
        wasmparser::Operator::TryTable { try_table } => try_table.ty,
        _ => wasmparser::BlockType::Empty,
    })
}

/// The kind of construct an `Open` site opens.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Construct {
    Block,
    Loop,
    If,
    TryTable,
}

/// When a site is handled relative to its instruction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Phase {
    Before,
    At,
    After,
}

impl SiteKind {
    pub fn phase(&self) -> Phase {
        match self {
            SiteKind::Before(_) | SiteKind::SynthElse(_) => Phase::Before,
            SiteKind::Taken { .. } | SiteKind::Open { .. } => Phase::At,
            SiteKind::After(_) => Phase::After,
        }
    }
}
