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
    let (mut meta, records) = index_with(data, foreign)?;
    records.build_into(&mut meta, |_| true)?;
    Ok(meta)
}

/// Reads the section but for its function records: the returned metadata's
/// template lists no function (all are in its `unrun`), and
/// [`Records::build_into`] builds those asked for. Building a function's
/// template renumbers its paths; a sparse profile needs only the functions
/// that ran.
pub fn index_with<'a>(
    data: &'a [u8],
    foreign: &[&'static dyn Profiler],
) -> Result<(Meta, Records<'a>), MetaError> {
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
    // Each function takes at least 5 bytes (length, index, name, two counts).
    let n = r.count(5)?;
    let mut spans = Vec::with_capacity(n);
    for _ in 0..n {
        let len = r.count(1)?;
        let at = r.pos();
        let func_index = r.u32()?;
        let rest = len
            .checked_sub(r.pos() - at)
            .ok_or_else(|| r.corrupt(format!("function {func_index}: its record is too short")))?;
        r.bytes(rest)?;
        spans.push((func_index, at..r.pos()));
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
    check_parts(&r, &spans, &layout, &code_map)?;
    template.unrun = spans.iter().map(|(i, _)| *i).collect();
    template.unrun.sort_unstable();
    let meta = Meta {
        technique,
        template,
        layout,
        code_map,
        interproc: None,
        ippp: None,
    };
    let records = Records {
        data,
        technique,
        truncate_above,
        kinds,
        files,
        spans,
    };
    Ok((meta, records))
}

/// The function records of a metadata section, built into its template
/// when asked ([`index_with`]).
pub struct Records<'a> {
    data: &'a [u8],
    technique: &'static dyn Profiler,
    truncate_above: u64,
    kinds: Vec<String>,
    files: Vec<String>,
    /// Per function, in layout order: its index and its record's bytes.
    spans: Vec<(u32, std::ops::Range<usize>)>,
}

impl Records<'_> {
    /// Builds into `meta`'s template the functions whose position in the
    /// layout `keep` accepts; the others stay in its `unrun`.
    pub fn build_into(
        &self,
        meta: &mut Meta,
        keep: impl Fn(usize) -> bool,
    ) -> Result<(), MetaError> {
        let tables = Tables {
            technique: self.technique,
            truncate_above: self.truncate_above,
            kinds: &self.kinds,
            files: &self.files,
        };
        let mut built = Vec::new();
        for (i, (_, span)) in self.spans.iter().enumerate().filter(|(i, _)| keep(*i)) {
            let mut r = Reader::span(self.data, span.clone());
            let f = function(&mut r, &tables)?;
            r.finish()?;
            let map = &meta.code_map[i];
            if map.blocks.iter().any(|&(_, b)| b.index() >= f.blocks.len()) {
                return Err(r.corrupt(format!(
                    "function {}: code map names no block",
                    f.func_index
                )));
            }
            built.push(f);
        }
        let template = &mut meta.template;
        let done: std::collections::HashSet<u32> = built.iter().map(|f| f.func_index).collect();
        template.unrun.retain(|i| !done.contains(i));
        template.functions.append(&mut built);
        template.functions.sort_by_key(|f| f.func_index);
        Ok(())
    }
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

/// The records, the layout and the code map describe the same functions,
/// in the same order, with distinct indices.
fn check_parts(
    r: &Reader<'_>,
    spans: &[(u32, std::ops::Range<usize>)],
    layout: &CounterLayout,
    code_map: &[CodeMap],
) -> Result<(), MetaError> {
    if layout.functions.len() != spans.len() || code_map.len() != spans.len() {
        return Err(r.corrupt("layout, code map and functions disagree"));
    }
    let mut seen = std::collections::HashSet::with_capacity(spans.len());
    for (((func_index, _), fl), m) in spans.iter().zip(&layout.functions).zip(code_map) {
        if fl.func_index != *func_index || m.func_index != *func_index {
            return Err(r.corrupt("layout, code map and functions disagree"));
        }
        if !seen.insert(*func_index) {
            return Err(r.corrupt(format!("function {func_index} is recorded twice")));
        }
    }
    Ok(())
}
