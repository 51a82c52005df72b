//! Reading the metadata section back and rebuilding the profile template.
//!
//! Every count and index is checked against what the section can hold and
//! against the function it belongs to, so that a corrupt section gives a
//! [`MetaError`] and `collect` never indexes out of bounds.

use pathprof_graph::NodeId;
use pathprof_profile::{Block, Edge, FunctionProfile, Profile, Skipped, SourceLocation};
use pathprof_techniques::PathTable;
use pathprof_wasm::{CodeMap, CounterIdentity, CounterLayout, FunctionLayout};

use super::codec::Reader;
use super::{Meta, MetaError, MAGIC, META_VERSION};
use crate::technique::{profiler_of, Profiler, Recorded};

/// Decodes a metadata section of one of pathprof's own techniques and
/// rebuilds the zero-count profile template.
pub fn decode(data: &[u8]) -> Result<Meta, MetaError> {
    decode_with(data, &[])
}

/// [`decode`], for a module that may have been instrumented for one of
/// the `foreign` techniques.
pub fn decode_with(data: &[u8], foreign: &[&'static dyn Profiler]) -> Result<Meta, MetaError> {
    if data.first() == Some(&b'{') {
        return Err(MetaError::OldJson);
    }
    let mut r = Reader::new(data);
    if data.len() < MAGIC.len() || r.bytes(MAGIC.len())? != MAGIC {
        return Err(r.corrupt("no PPMETA magic"));
    }
    let version = r.u64()?;
    if version != u64::from(META_VERSION) {
        return Err(MetaError::Version { found: version });
    }
    let kind = r.u8()?;
    let technique =
        profiler_of(kind, foreign).ok_or_else(|| r.corrupt(format!("technique {kind}")))?;
    let module_hash = r.str()?.to_string();
    let truncate_above = r.u64()?;
    let kinds = strings(&mut r)?;
    let files = strings(&mut r)?;
    let mut template = Profile::new(module_hash, technique.mode());
    let tables = Tables {
        technique,
        truncate_above,
        kinds: &kinds,
        files: &files,
    };
    // Each function takes at least 4 bytes (index, name, two counts).
    let n = r.count(4)?;
    for _ in 0..n {
        template.functions.push(function(&mut r, &tables)?);
    }
    for _ in 0..r.count(3)? {
        template.skipped.push(Skipped {
            func_index: r.u32()?,
            name: r.opt_str()?.map(str::to_string),
            reason: r.str()?.to_string(),
        });
    }
    let mut layout = layout(&mut r)?;
    layout.identity.technique = u32::from(technique.code());
    layout.identity.module_hash = pathprof_wasm::digest_from_hex(&template.module_hash)
        .ok_or_else(|| r.corrupt("the module hash is not 64 hex digits"))?;
    let code_map = code_map(&mut r)?;
    r.finish()?;
    check_parts(&r, &template, &layout, &code_map)?;
    Ok(Meta {
        technique,
        template,
        layout,
        code_map,
        interproc: None,
        ippp: None,
    })
}

/// What every function record refers to.
struct Tables<'a> {
    technique: &'static dyn Profiler,
    truncate_above: u64,
    kinds: &'a [String],
    files: &'a [String],
}

fn strings(r: &mut Reader<'_>) -> Result<Vec<String>, MetaError> {
    let n = r.count(1)?;
    (0..n).map(|_| r.str().map(str::to_string)).collect()
}

fn function(r: &mut Reader<'_>, t: &Tables<'_>) -> Result<FunctionProfile, MetaError> {
    let func_index = r.u32()?;
    let name = r.opt_str()?.map(str::to_string);
    let blocks = blocks(r, t)?;
    if blocks.len() < 2 {
        return Err(r.corrupt(format!("function {func_index} has no ENTRY and EXIT")));
    }
    let edges = edges(r, t, blocks.len())?;
    let recorded = Recorded {
        func_index,
        blocks: &blocks,
        edges: &edges,
        truncate_above: t.truncate_above,
    };
    let data = t.technique.read_record(r, &recorded)?;
    Ok(FunctionProfile {
        func_index,
        name,
        blocks,
        edges,
        data,
    })
}

fn blocks(r: &mut Reader<'_>, t: &Tables<'_>) -> Result<Vec<Option<Block>>, MetaError> {
    let n = r.count(1)?;
    let mut blocks = Vec::with_capacity(n);
    let mut prev_end = 0u32;
    for _ in 0..n {
        let tag = r.u8()?;
        if tag == 0 {
            blocks.push(None);
            continue;
        }
        if tag > 2 {
            return Err(r.corrupt(format!("block tag {tag}")));
        }
        let offset = r.delta_u32(prev_end)?;
        let len = r.u32()?;
        let end = offset
            .checked_add(len)
            .ok_or_else(|| r.corrupt("a block ends past 4 GiB"))?;
        let instrs = r.u32()?;
        let source = if tag == 2 { Some(source(r, t)?) } else { None };
        prev_end = end;
        blocks.push(Some(Block {
            offset,
            end,
            instrs,
            source,
        }));
    }
    Ok(blocks)
}

/// A block's file, line and column (0: none).
fn source(r: &mut Reader<'_>, t: &Tables<'_>) -> Result<SourceLocation, MetaError> {
    let id = r.u32()?;
    let file = t
        .files
        .get(id as usize)
        .ok_or_else(|| r.corrupt(format!("file {id} is not in the file table")))?;
    Ok(SourceLocation {
        file: file.clone(),
        line: r.u32()?,
        column: r.u32()?,
    })
}

fn edges(r: &mut Reader<'_>, t: &Tables<'_>, nodes: usize) -> Result<Vec<Edge>, MetaError> {
    let n = r.count(3)?;
    let mut edges = Vec::with_capacity(n);
    let mut prev_src = 0u64;
    for _ in 0..n {
        let src = r.delta(prev_src)?;
        let dst = r.delta(src)?;
        prev_src = src;
        let kind = r.u64()?;
        let kind = usize::try_from(kind)
            .ok()
            .and_then(|k| t.kinds.get(k))
            .ok_or_else(|| r.corrupt(format!("edge kind {kind} is not in the kind table")))?;
        if src >= nodes as u64 || dst >= nodes as u64 {
            return Err(r.corrupt(format!("edge {src}->{dst} names a block past {nodes}")));
        }
        edges.push(Edge {
            src: NodeId::new(src as usize),
            dst: NodeId::new(dst as usize),
            kind: kind.clone(),
        });
    }
    Ok(edges)
}

fn layout(r: &mut Reader<'_>) -> Result<CounterLayout, MetaError> {
    let version = r.u32()?;
    let plan_hash = r.bytes(32)?.try_into().unwrap_or_default();
    let memory_export = r.str()?.to_string();
    let total_bytes = r.u64()?;
    let n = r.count(7)?;
    let mut functions = Vec::with_capacity(n);
    for _ in 0..n {
        let func_index = r.u32()?;
        let paths = match r.u8()? {
            0 => PathTable::None,
            1 => PathTable::Array { len: r.u64()? },
            2 => PathTable::Hash { capacity: r.u32()? },
            b => return Err(r.corrupt(format!("path table kind {b}"))),
        };
        functions.push(FunctionLayout {
            func_index,
            paths,
            paths_offset: r.u32()?,
            slots: r.u32()?,
            slots_offset: r.u32()?,
            ppp_len: r.u64()?,
            ppp_offset: r.u32()?,
        });
    }
    Ok(CounterLayout {
        version,
        memory_export,
        total_bytes,
        functions,
        identity: CounterIdentity {
            plan_hash,
            ..CounterIdentity::default()
        },
    })
}

fn code_map(r: &mut Reader<'_>) -> Result<Vec<CodeMap>, MetaError> {
    let n = r.count(2)?;
    let mut maps = Vec::with_capacity(n);
    for _ in 0..n {
        let func_index = r.u32()?;
        let len = r.count(2)?;
        let mut blocks = Vec::with_capacity(len);
        let mut prev = 0u32;
        for _ in 0..len {
            prev = r.delta_u32(prev)?;
            let node = r.u32()?;
            blocks.push((prev, NodeId::new(node as usize)));
        }
        if blocks.windows(2).any(|w| w[0].0 > w[1].0) {
            return Err(r.corrupt(format!("function {func_index}: code map is not sorted")));
        }
        maps.push(CodeMap { func_index, blocks });
    }
    Ok(maps)
}

/// The template, the layout and the code map describe the same functions,
/// in the same order, and the code map names only their blocks.
fn check_parts(
    r: &Reader<'_>,
    template: &Profile,
    layout: &CounterLayout,
    code_map: &[CodeMap],
) -> Result<(), MetaError> {
    let fs = &template.functions;
    if layout.functions.len() != fs.len() || code_map.len() != fs.len() {
        return Err(r.corrupt("layout, code map and functions disagree"));
    }
    for ((f, fl), m) in fs.iter().zip(&layout.functions).zip(code_map) {
        if fl.func_index != f.func_index || m.func_index != f.func_index {
            return Err(r.corrupt("layout, code map and functions disagree"));
        }
        if m.blocks.iter().any(|&(_, b)| b.index() >= f.blocks.len()) {
            return Err(r.corrupt(format!(
                "function {}: code map names no block",
                f.func_index
            )));
        }
    }
    Ok(())
}
