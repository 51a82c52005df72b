//! The binary encoding of a profile: the same schema as the JSON document
//! (docs/profile-format.md), laid out for size and reading speed.
//!
//! Why: a JSON profile spells every block, CFG edge and DAG edge of every
//! function as an object with its field names; SQLite's path profile was
//! 29 MB (11.5 MB without indentation) and took 0.25 s to report, for 56 KB
//! of counts. Here the same facts are columns of integers, each column
//! delta coded where its neighbours are close (block offsets, edge sources,
//! the CFG edge of each DAG edge), strings (source files, edge kinds) are
//! interned once per profile, and the DAG's real edges do not repeat the
//! ends their CFG edge already gives. The columns are written with postcard
//! (LEB128 varints, zigzag for signed values; wasmtime already builds it),
//! behind an 8-byte magic and the schema version. Decoding checks every
//! index it follows, so a corrupted file is an error, never a panic.

use pathprof_graph::{EdgeId, NodeId};
use pathprof_techniques::ball_larus::{EdgeRole, Numbered, NumberedEdge, PathCounts};
use pathprof_techniques::edge::Chords;
use pathprof_techniques::ppp::PppInfo;
use serde::{Deserialize, Serialize};

use crate::interproc::{InterprocPath, InterprocProfile, SiteInfo};
use crate::intra_context::IntraContextProfile;
use crate::segments::{IpppSummary, SegmentCount, SegmentProfile};
use crate::{Block, Edge, FunctionData, FunctionProfile, Mode, Profile, Skipped, SourceLocation};

/// First bytes of a binary profile. The high byte and the CR LF catch a
/// transfer that mangles binary files, as PNG's signature does.
pub const MAGIC: &[u8; 8] = b"\x89PPROF\r\n";

/// `S`: the layout of the IPPP summary ([`IpppSummaryV1`] for profiles
/// written before it had the truncation fields); `L`: the blocks' lines
/// and columns ([`Lines`]; `()`, nothing, in version 1).
#[derive(Serialize, Deserialize)]
struct Wire<S = IpppSummary, L = Lines> {
    version: u32,
    module_hash: String,
    mode: Mode,
    runs: u64,
    abrupt_runs: u64,
    /// Interned source files (in version 1, `file:line` strings) and edge
    /// kinds.
    sources: Vec<String>,
    edge_kinds: Vec<String>,
    skipped: Vec<Skipped>,
    functions: Vec<WireFunction<L>>,
    interproc: Option<WireInterproc>,
    segments: Option<WireSegments<S>>,
    intra_context: Option<IntraContextProfile>,
}

/// [`SegmentProfile`] with every field written: postcard cannot skip one.
#[derive(Serialize, Deserialize)]
struct WireSegments<S = IpppSummary> {
    k: u32,
    num_imported_funcs: u32,
    segments: Vec<SegmentCount>,
    subpaths: u64,
    ippp: Option<S>,
}

/// [`IpppSummary`] as binary profiles of version 1 wrote it before the
/// expanded graphs were truncated (2026-11-26): read, never written.
#[derive(Serialize, Deserialize)]
struct IpppSummaryV1 {
    interesting: u64,
    through_indirect: u64,
    too_many_paths: u64,
    too_many_contexts: u64,
    policy: String,
    uninteresting: u64,
    untested: Vec<SegmentCount>,
    lost: u64,
}

impl Wire<IpppSummaryV1, ()> {
    fn upgrade(self) -> Wire<IpppSummary, ()> {
        self.map(|s| s, |s| s.map(Self::upgrade_segments), |f| f)
    }

    fn upgrade_segments(s: WireSegments<IpppSummaryV1>) -> WireSegments {
        WireSegments {
            k: s.k,
            num_imported_funcs: s.num_imported_funcs,
            segments: s.segments,
            subpaths: s.subpaths,
            ippp: s.ippp.map(|i| IpppSummary {
                interesting: i.interesting,
                through_indirect: i.through_indirect,
                too_many_paths: i.too_many_paths,
                too_many_contexts: i.too_many_contexts,
                truncated_starts: Vec::new(),
                truncated: 0,
                policy: i.policy,
                uninteresting: i.uninteresting,
                untested: i.untested,
                lost: i.lost,
            }),
        }
    }
}

impl<S, L> Wire<S, L> {
    /// The same profile with its sources, segments and functions mapped
    /// (from one version's layout to another's).
    fn map<S2, L2>(
        self,
        sources: impl FnOnce(Vec<String>) -> Vec<String>,
        segments: impl FnOnce(Option<WireSegments<S>>) -> Option<WireSegments<S2>>,
        function: impl FnMut(WireFunction<L>) -> WireFunction<L2>,
    ) -> Wire<S2, L2> {
        Wire {
            version: self.version,
            module_hash: self.module_hash,
            mode: self.mode,
            runs: self.runs,
            abrupt_runs: self.abrupt_runs,
            sources: sources(self.sources),
            edge_kinds: self.edge_kinds,
            skipped: self.skipped,
            functions: self.functions.into_iter().map(function).collect(),
            interproc: self.interproc,
            segments: segments(self.segments),
            intra_context: self.intra_context,
        }
    }
}

impl<L> WireFunction<L> {
    /// The same function with other block sources and lines.
    fn with_block_lines<L2>(self, block_source: Vec<u32>, block_lines: L2) -> WireFunction<L2> {
        WireFunction {
            block_source,
            block_lines,
            func_index: self.func_index,
            name: self.name,
            num_nodes: self.num_nodes,
            blockless: self.blockless,
            block_offset: self.block_offset,
            block_len: self.block_len,
            block_instrs: self.block_instrs,
            edge_src: self.edge_src,
            edge_dst: self.edge_dst,
            edge_kind: self.edge_kind,
            data: self.data,
        }
    }
}

impl From<SegmentProfile> for WireSegments {
    fn from(s: SegmentProfile) -> Self {
        WireSegments {
            k: s.k,
            num_imported_funcs: s.num_imported_funcs,
            segments: s.segments,
            subpaths: s.subpaths,
            ippp: s.ippp,
        }
    }
}

impl From<WireSegments> for SegmentProfile {
    fn from(s: WireSegments) -> Self {
        SegmentProfile {
            k: s.k,
            num_imported_funcs: s.num_imported_funcs,
            segments: s.segments,
            subpaths: s.subpaths,
            ippp: s.ippp,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct WireFunction<L = Lines> {
    func_index: u32,
    name: Option<String>,
    num_nodes: u32,
    /// Nodes without a block (ENTRY, EXIT), delta coded.
    blockless: Vec<u32>,
    /// Per block: offset minus the previous block's end, length, instructions,
    /// and source file (0: none, else 1 + index into `sources`).
    block_offset: Vec<i64>,
    block_len: Vec<u32>,
    block_instrs: Vec<u32>,
    block_source: Vec<u32>,
    block_lines: L,
    /// Per CFG edge: source minus the previous edge's source, destination
    /// minus source, kind (index into `edge_kinds`).
    edge_src: Vec<i64>,
    edge_dst: Vec<i64>,
    edge_kind: Vec<u32>,
    data: WireData,
}

#[derive(Serialize, Deserialize)]
enum WireData {
    Path {
        /// Per DAG edge, its role coded (0: ENTRY dummy, 1: EXIT dummy,
        /// e + 2: CFG edge e), delta coded; then Val(e).
        dag_role: Vec<i64>,
        dag_val: Vec<u64>,
        /// Ends of the dummy edges, in DAG order (a real edge's are its CFG edge's).
        dummy_src: Vec<u32>,
        dummy_dst: Vec<u32>,
        total: u64,
        backedges: Vec<u32>,
        self_loops: Vec<u32>,
        loop_heads: Vec<u32>,
        cut_nodes: Vec<u32>,
        /// Path numbers delta coded, and their counts.
        path_numbers: Vec<u64>,
        path_counts: Vec<u64>,
        self_loop_counts: Vec<u64>,
        lost: u64,
        ppp: Option<PppInfo>,
    },
    Edge {
        chords: Vec<u32>,
        unwinding: Vec<u32>,
        chord_counts: Vec<u64>,
        edge_counts: Vec<u64>,
    },
}

/// Per block with a source file: its line minus the previous such block's
/// (near in a function), and its column.
#[derive(Default, Serialize, Deserialize)]
struct Lines {
    line: Vec<i64>,
    column: Vec<u32>,
}

/// Version 1's blocks: `sources` held `file:line` strings, now split into
/// files and lines (no columns).
impl<S> Wire<S, ()> {
    fn with_lines(self) -> Wire<S, Lines> {
        let mut files = Interner::default();
        let split: Vec<(u32, u32)> = self
            .sources
            .iter()
            .map(|s| {
                let l = SourceLocation::from_v1(s);
                (files.get(&l.file), l.line)
            })
            .collect();
        self.map(
            |_| files.strings,
            |s| s,
            |f| {
                let (mut lines, mut prev) = (Lines::default(), 0i64);
                let block_source = f
                    .block_source
                    .iter()
                    .map(|&s| match split.get((s as usize).wrapping_sub(1)) {
                        Some(&(file, line)) => {
                            lines.line.push(i64::from(line) - prev);
                            lines.column.push(0);
                            prev = i64::from(line);
                            file + 1
                        }
                        // 0, or out of range: refused by the decoder.
                        None => s,
                    })
                    .collect();
                f.with_block_lines(block_source, lines)
            },
        )
    }
}

/// [`InterprocProfile`] with its optional cut spelt out (the JSON omits it
/// when absent, which a format without field names cannot).
#[derive(Serialize, Deserialize)]
struct WireInterproc {
    potential: u64,
    num_imported_funcs: u32,
    sites: Vec<(u32, u32, Option<String>)>,
    max_enters: Vec<u64>,
    paths: Vec<InterprocPath>,
    lost: u64,
}

/// Strings numbered in order of first use.
#[derive(Default)]
struct Interner {
    index: std::collections::HashMap<String, u32>,
    strings: Vec<String>,
}

impl Interner {
    fn get(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.index.insert(s.to_string(), i);
        self.strings.push(s.to_string());
        i
    }
}

fn ids<T: Copy>(v: &[T], index: impl Fn(T) -> usize) -> Vec<u32> {
    v.iter().map(|&x| index(x) as u32).collect()
}

fn deltas(v: impl IntoIterator<Item = i64>) -> Vec<i64> {
    let mut prev = 0i64;
    v.into_iter()
        .map(|x| {
            let d = x.wrapping_sub(prev);
            prev = x;
            d
        })
        .collect()
}

/// Encodes a profile.
pub fn encode(p: &Profile) -> Vec<u8> {
    let mut sources = Interner::default();
    let mut kinds = Interner::default();
    let functions = p
        .functions
        .iter()
        .map(|f| encode_function(f, &mut sources, &mut kinds))
        .collect();
    let wire = Wire {
        version: p.needed_version(),
        module_hash: p.module_hash.clone(),
        mode: p.mode,
        runs: p.runs,
        abrupt_runs: p.abrupt_runs,
        sources: sources.strings,
        edge_kinds: kinds.strings,
        skipped: p.skipped.clone(),
        functions,
        interproc: p.interproc.as_deref().map(|i| WireInterproc {
            potential: i.potential,
            num_imported_funcs: i.num_imported_funcs,
            sites: i
                .sites
                .iter()
                .map(|s| (s.func_index, s.offset, s.cut.clone()))
                .collect(),
            max_enters: i.max_enters.clone(),
            paths: i.paths.clone(),
            lost: i.lost,
        }),
        segments: p.segments.as_deref().cloned().map(WireSegments::from),
        intra_context: p.intra_context.as_deref().cloned(),
    };
    let mut bytes =
        postcard::to_extend(&wire, MAGIC.to_vec()).expect("a profile always serialises");
    if wire.version >= 3 {
        // Version 3 appends the functions a sparse profile left out, delta
        // coded (version 2 readers then refuse it by its version).
        let unrun: Vec<u32> = deltas(p.unrun.iter().map(|&i| i64::from(i)))
            .into_iter()
            .map(|d| d as u32)
            .collect();
        bytes = postcard::to_extend(&unrun, bytes).expect("a list always serialises");
    }
    bytes
}

fn encode_function(
    f: &FunctionProfile,
    sources: &mut Interner,
    kinds: &mut Interner,
) -> WireFunction {
    let blockless = deltas(
        f.blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.is_none())
            .map(|(i, _)| i as i64),
    );
    let blocks: Vec<&Block> = f.blocks.iter().flatten().collect();
    let mut lines = Lines::default();
    let mut prev_line = 0i64;
    for l in blocks.iter().filter_map(|b| b.source.as_ref()) {
        lines.line.push(i64::from(l.line) - prev_line);
        lines.column.push(l.column);
        prev_line = i64::from(l.line);
    }
    let block_offset = {
        let mut prev_end = 0i64;
        blocks
            .iter()
            .map(|b| {
                let d = i64::from(b.offset) - prev_end;
                prev_end = i64::from(b.end);
                d
            })
            .collect()
    };
    WireFunction {
        func_index: f.func_index,
        name: f.name.clone(),
        num_nodes: f.blocks.len() as u32,
        blockless: blockless.into_iter().map(|d| d as u32).collect(),
        block_offset,
        block_len: blocks
            .iter()
            .map(|b| b.end.wrapping_sub(b.offset))
            .collect(),
        block_instrs: blocks.iter().map(|b| b.instrs).collect(),
        block_source: blocks
            .iter()
            .map(|b| b.source.as_ref().map_or(0, |l| sources.get(&l.file) + 1))
            .collect(),
        block_lines: lines,
        edge_src: deltas(f.edges.iter().map(|e| e.src.index() as i64)),
        edge_dst: f
            .edges
            .iter()
            .map(|e| e.dst.index() as i64 - e.src.index() as i64)
            .collect(),
        edge_kind: f.edges.iter().map(|e| kinds.get(&e.kind)).collect(),
        data: encode_data(&f.data),
    }
}

fn encode_data(d: &FunctionData) -> WireData {
    match d {
        FunctionData::Path {
            numbered: n,
            counts,
            ppp,
        } => {
            let role = |e: &NumberedEdge| match e.kind {
                EdgeRole::EntryDummy => 0,
                EdgeRole::ExitDummy => 1,
                EdgeRole::Real(e) => e.index() as i64 + 2,
            };
            let dummies = || {
                n.dag_edges
                    .iter()
                    .filter(|e| !matches!(e.kind, EdgeRole::Real(_)))
            };
            WireData::Path {
                dag_role: deltas(n.dag_edges.iter().map(role)),
                dag_val: n.dag_edges.iter().map(|e| e.val).collect(),
                dummy_src: dummies().map(|e| e.src.index() as u32).collect(),
                dummy_dst: dummies().map(|e| e.dst.index() as u32).collect(),
                total: n.total,
                backedges: ids(&n.backedges, EdgeId::index),
                self_loops: ids(&n.self_loops, EdgeId::index),
                loop_heads: ids(&n.loop_heads, NodeId::index),
                cut_nodes: ids(&n.cut_nodes, NodeId::index),
                path_numbers: {
                    let mut prev = 0u64;
                    counts
                        .paths
                        .iter()
                        .map(|&(p, _)| (p.wrapping_sub(prev), prev = p).0)
                        .collect()
                },
                path_counts: counts.paths.iter().map(|&(_, c)| c).collect(),
                self_loop_counts: counts.self_loops.clone(),
                lost: counts.lost,
                ppp: ppp.as_deref().cloned(),
            }
        }
        FunctionData::Edge {
            chords,
            chord_counts,
            edge_counts,
        } => WireData::Edge {
            chords: ids(&chords.chords, EdgeId::index),
            unwinding: ids(&chords.unwinding, NodeId::index),
            chord_counts: chord_counts.clone(),
            edge_counts: edge_counts.clone(),
        },
    }
}

/// The schema version of a binary profile (its first field), `None` if
/// the bytes are not one.
pub fn version(bytes: &[u8]) -> Option<u32> {
    let rest = bytes.strip_prefix(MAGIC)?;
    postcard::take_from_bytes::<u32>(rest).ok().map(|(v, _)| v)
}

/// Decodes a binary profile. Errors are the reason alone; the
/// caller names the file.
pub fn decode(bytes: &[u8]) -> Result<Profile, String> {
    let body = bytes.strip_prefix(MAGIC).ok_or("no binary profile magic")?;
    let (wire, unrun) = match version(bytes) {
        Some(1) => (decode_v1(body)?.with_lines(), Vec::new()),
        Some(2) => (whole(postcard::take_from_bytes::<Wire>(body))?, Vec::new()),
        _ => {
            let (wire, rest) = postcard::take_from_bytes::<Wire>(body)
                .map_err(|e| format!("corrupt binary profile: {e}"))?;
            let deltas: Vec<u32> = whole(postcard::take_from_bytes(rest))?;
            (wire, unrun_of(&deltas)?)
        }
    };
    let functions = wire
        .functions
        .into_iter()
        .map(|f| decode_function(f, &wire.sources, &wire.edge_kinds))
        .collect::<Result<_, String>>()?;
    Ok(Profile {
        format: crate::FORMAT_NAME.to_string(),
        version: if unrun.is_empty() {
            crate::DENSE_VERSION
        } else {
            crate::FORMAT_VERSION
        },
        module_hash: wire.module_hash,
        mode: wire.mode,
        runs: wire.runs,
        functions,
        skipped: wire.skipped,
        unrun,
        abrupt_runs: wire.abrupt_runs,
        interproc: wire.interproc.map(|i| {
            Box::new(InterprocProfile {
                potential: i.potential,
                num_imported_funcs: i.num_imported_funcs,
                sites: i
                    .sites
                    .into_iter()
                    .map(|(func_index, offset, cut)| SiteInfo {
                        func_index,
                        offset,
                        cut,
                    })
                    .collect(),
                max_enters: i.max_enters,
                paths: i.paths,
                lost: i.lost,
            })
        }),
        segments: wire.segments.map(|s| Box::new(s.into())),
        intra_context: wire.intra_context.map(Box::new),
    })
}

/// Version 1's layout, with the IPPP summary of either of its layouts.
fn decode_v1(bytes: &[u8]) -> Result<Wire<IpppSummary, ()>, String> {
    let current = postcard::take_from_bytes::<Wire<IpppSummary, ()>>(bytes);
    if !matches!(current, Ok((_, []))) {
        // An IPPP profile of the older layout?
        if let Ok((old, [])) = postcard::take_from_bytes::<Wire<IpppSummaryV1, ()>>(bytes) {
            if old.segments.as_ref().is_some_and(|s| s.ippp.is_some()) {
                return Ok(old.upgrade());
            }
        }
    }
    whole(current)
}

/// The indices of a sparse profile's left-out functions from their deltas.
fn unrun_of(deltas: &[u32]) -> Result<Vec<u32>, String> {
    let mut prev = 0u32;
    deltas
        .iter()
        .map(|&d| {
            prev = prev
                .checked_add(d)
                .ok_or("corrupt binary profile: a left-out function index passes 2^32")?;
            Ok(prev)
        })
        .collect()
}

/// A decoded value that used every byte.
fn whole<T>(r: postcard::Result<(T, &[u8])>) -> Result<T, String> {
    match r {
        Ok((t, [])) => Ok(t),
        Ok(_) => Err("bytes after the end of the profile".into()),
        Err(e) => Err(format!("corrupt binary profile: {e}")),
    }
}

/// Sums of deltas, refused where they leave `0..limit`.
fn undelta(d: &[i64], limit: usize, what: &str) -> Result<Vec<usize>, String> {
    let mut prev = 0i64;
    d.iter()
        .map(|&x| {
            prev = prev.wrapping_add(x);
            usize::try_from(prev)
                .ok()
                .filter(|&v| v < limit)
                .ok_or_else(|| format!("{what} out of range"))
        })
        .collect()
}

fn same_len(lens: &[usize], what: &str) -> Result<(), String> {
    if lens.windows(2).any(|w| w[0] != w[1]) {
        return Err(format!(
            "corrupt binary profile: {what} columns differ in length"
        ));
    }
    Ok(())
}

fn decode_function(
    f: WireFunction,
    sources: &[String],
    kinds: &[String],
) -> Result<FunctionProfile, String> {
    let err = |what: &str| format!("function {}: {what}", f.func_index);
    let nodes = f.num_nodes as usize;
    let blocks = decode_blocks(&f, sources).map_err(|e| err(&e))?;
    same_len(
        &[f.edge_src.len(), f.edge_dst.len(), f.edge_kind.len()],
        "edge",
    )
    .map_err(|e| err(&e))?;
    let srcs = undelta(&f.edge_src, nodes, "an edge's source").map_err(|e| err(&e))?;
    let edges = srcs
        .iter()
        .zip(&f.edge_dst)
        .zip(&f.edge_kind)
        .map(|((&src, &d), &k)| {
            let dst = (src as i64)
                .checked_add(d)
                .and_then(|v| usize::try_from(v).ok())
                .filter(|&v| v < nodes)
                .ok_or_else(|| err("an edge's destination out of range"))?;
            let kind = kinds
                .get(k as usize)
                .ok_or_else(|| err("an edge kind out of range"))?;
            Ok(Edge {
                src: NodeId::new(src),
                dst: NodeId::new(dst),
                kind: kind.clone(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let data = decode_data(f.data, &edges, nodes).map_err(|e| err(&e))?;
    Ok(FunctionProfile {
        func_index: f.func_index,
        name: f.name,
        blocks,
        edges,
        data,
    })
}

fn decode_blocks(f: &WireFunction, sources: &[String]) -> Result<Vec<Option<Block>>, String> {
    let nodes = f.num_nodes as usize;
    let n = f.block_offset.len();
    same_len(
        &[
            n,
            f.block_len.len(),
            f.block_instrs.len(),
            f.block_source.len(),
        ],
        "block",
    )?;
    let located = f.block_source.iter().filter(|&&s| s != 0).count();
    same_len(
        &[
            located,
            f.block_lines.line.len(),
            f.block_lines.column.len(),
        ],
        "source line",
    )?;
    let mut lines = f.block_lines.line.iter().zip(&f.block_lines.column);
    let mut prev_line = 0i64;
    let blockless: Vec<i64> = f.blockless.iter().map(|&d| i64::from(d)).collect();
    let blockless = undelta(&blockless, nodes, "a blockless node")?;
    if blockless.len() + n != nodes {
        return Err("its blocks do not fill its nodes".into());
    }
    let mut out = vec![None; nodes];
    let mut holes = blockless.iter().peekable();
    let mut prev_end = 0i64;
    let mut columns = (0..n).map(|i| {
        (
            f.block_offset[i],
            f.block_len[i],
            f.block_instrs[i],
            f.block_source[i],
        )
    });
    for (node, slot) in out.iter_mut().enumerate() {
        if holes.peek() == Some(&&node) {
            holes.next();
            continue;
        }
        let (d, len, instrs, source) = columns.next().ok_or("its blocks do not fill its nodes")?;
        let offset = u32::try_from(prev_end + d).map_err(|_| "a block offset out of range")?;
        let end = offset.checked_add(len).ok_or("a block end out of range")?;
        prev_end = i64::from(end);
        let source = match source {
            0 => None,
            s => {
                let file = sources
                    .get(s as usize - 1)
                    .ok_or("a block source out of range")?;
                let (d, &column) = lines.next().ok_or("a block source without a line")?;
                prev_line = prev_line.wrapping_add(*d);
                let line = u32::try_from(prev_line).map_err(|_| "a source line out of range")?;
                Some(SourceLocation {
                    file: file.clone(),
                    line,
                    column,
                })
            }
        };
        *slot = Some(Block {
            offset,
            end,
            instrs,
            source,
        });
    }
    Ok(out)
}

/// Ids from indices, refused at `limit` and above.
fn checked<T>(v: Vec<u32>, limit: usize, what: &str, id: fn(usize) -> T) -> Result<Vec<T>, String> {
    v.into_iter()
        .map(|x| {
            let x = x as usize;
            (x < limit)
                .then(|| id(x))
                .ok_or_else(|| format!("{what} out of range"))
        })
        .collect()
}

fn node_ids(v: Vec<u32>, limit: usize, what: &str) -> Result<Vec<NodeId>, String> {
    checked(v, limit, what, NodeId::new)
}

fn edge_ids(v: Vec<u32>, limit: usize, what: &str) -> Result<Vec<EdgeId>, String> {
    checked(v, limit, what, EdgeId::new)
}

fn decode_data(d: WireData, edges: &[Edge], nodes: usize) -> Result<FunctionData, String> {
    Ok(match d {
        WireData::Path {
            dag_role,
            dag_val,
            dummy_src,
            dummy_dst,
            total,
            backedges,
            self_loops,
            loop_heads,
            cut_nodes,
            path_numbers,
            path_counts,
            self_loop_counts,
            lost,
            ppp,
        } => {
            same_len(&[dag_role.len(), dag_val.len()], "DAG edge")?;
            same_len(&[dummy_src.len(), dummy_dst.len()], "dummy edge")?;
            same_len(&[path_numbers.len(), path_counts.len()], "path")?;
            let roles = undelta(&dag_role, edges.len() + 2, "a DAG edge's CFG edge")?;
            let mut dummies = dummy_src.into_iter().zip(dummy_dst);
            let dag_edges = roles
                .into_iter()
                .zip(dag_val)
                .map(|(role, val)| {
                    let (kind, src, dst) = match role {
                        0 | 1 => {
                            let (s, d) = dummies.next().ok_or("too few dummy edges")?;
                            let kind = if role == 0 {
                                EdgeRole::EntryDummy
                            } else {
                                EdgeRole::ExitDummy
                            };
                            (kind, s as usize, d as usize)
                        }
                        e => {
                            let edge = &edges[e - 2];
                            (
                                EdgeRole::Real(EdgeId::new(e - 2)),
                                edge.src.index(),
                                edge.dst.index(),
                            )
                        }
                    };
                    if src >= nodes || dst >= nodes {
                        return Err("a DAG edge out of range".to_string());
                    }
                    Ok(NumberedEdge {
                        src: NodeId::new(src),
                        dst: NodeId::new(dst),
                        kind,
                        val,
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            let mut prev = 0u64;
            let paths = path_numbers
                .into_iter()
                .zip(path_counts)
                .map(|(d, c)| {
                    prev = prev.wrapping_add(d);
                    (prev, c)
                })
                .collect();
            FunctionData::Path {
                numbered: Numbered {
                    num_nodes: nodes,
                    dag_edges,
                    total,
                    backedges: edge_ids(backedges, edges.len(), "a backedge")?,
                    self_loops: edge_ids(self_loops, edges.len(), "a self loop")?,
                    loop_heads: node_ids(loop_heads, nodes, "a loop head")?,
                    cut_nodes: node_ids(cut_nodes, nodes, "a cut node")?,
                },
                counts: PathCounts {
                    paths,
                    self_loops: self_loop_counts,
                    lost,
                },
                ppp: ppp.map(Box::new),
            }
        }
        WireData::Edge {
            chords,
            unwinding,
            chord_counts,
            edge_counts,
        } => FunctionData::Edge {
            chords: Chords {
                chords: edge_ids(chords, edges.len(), "a chord")?,
                unwinding: node_ids(unwinding, nodes, "an unwinding block")?,
            },
            chord_counts,
            edge_counts,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A binary profile of version 1, whose `sources` were `file:line`
    /// strings, reads as those files and lines, without columns.
    #[test]
    fn a_binary_profile_of_version_1_reads() {
        let block = |offset, source: Option<&str>| {
            Some(Block {
                offset,
                end: offset + 4,
                instrs: 1,
                source: source.map(SourceLocation::from_v1),
            })
        };
        let mut p = Profile::new("ab".into(), Mode::Edge);
        p.functions.push(FunctionProfile {
            func_index: 1,
            name: None,
            blocks: vec![
                None,
                None,
                block(10, Some("m.c:9")),
                block(20, None),
                block(30, Some("m.c")),
                block(40, Some("n.c:2")),
            ],
            edges: Vec::new(),
            data: FunctionData::Edge {
                chords: pathprof_techniques::edge::Chords {
                    chords: Vec::new(),
                    unwinding: Vec::new(),
                },
                chord_counts: Vec::new(),
                edge_counts: Vec::new(),
            },
        });
        let now: Wire = postcard::from_bytes(&encode(&p)[MAGIC.len()..]).unwrap();
        // Version 1: the same columns, the sources spelt `file:line`.
        let v1 = ["m.c:9", "m.c", "n.c:2"].map(String::from).to_vec();
        let mut old = now.map(|_| v1, |s| s, |f| f.with_block_lines(vec![1, 0, 2, 3], ()));
        old.version = 1;
        let bytes = postcard::to_extend(&old, MAGIC.to_vec()).unwrap();
        let read = decode(&bytes).unwrap();
        assert_eq!(read.version, crate::DENSE_VERSION);
        assert_eq!(read.functions, p.functions);
    }

    /// An IPPP profile written before the summary had the truncation
    /// fields still reads, with none truncated.
    #[test]
    fn an_ippp_profile_of_the_older_layout_reads() {
        let step = |count| SegmentCount {
            steps: Vec::new(),
            count,
        };
        let old: Wire<IpppSummaryV1, ()> = Wire {
            version: 1,
            module_hash: "ab".into(),
            mode: Mode::Segments,
            runs: 1,
            abrupt_runs: 0,
            sources: Vec::new(),
            edge_kinds: Vec::new(),
            skipped: Vec::new(),
            functions: Vec::new(),
            interproc: None,
            segments: Some(WireSegments {
                k: 2,
                num_imported_funcs: 3,
                segments: vec![step(7)],
                subpaths: 0,
                ippp: Some(IpppSummaryV1 {
                    interesting: 1,
                    through_indirect: 2,
                    too_many_paths: 3,
                    too_many_contexts: 4,
                    policy: "record".into(),
                    uninteresting: 5,
                    untested: vec![step(5)],
                    lost: 6,
                }),
            }),
            intra_context: None,
        };
        let bytes = postcard::to_extend(&old, MAGIC.to_vec()).unwrap();
        let p = decode(&bytes).unwrap();
        let s = p.segments.expect("segments");
        assert_eq!((s.k, s.num_imported_funcs, s.segments.len()), (2, 3, 1));
        let i = s.ippp.expect("the summary");
        assert_eq!(
            (
                i.interesting,
                i.through_indirect,
                i.too_many_paths,
                i.too_many_contexts
            ),
            (1, 2, 3, 4)
        );
        assert_eq!((i.uninteresting, i.lost, i.truncated), (5, 6, 0));
        assert_eq!((i.policy.as_str(), i.untested.len()), ("record", 1));
        assert!(i.truncated_starts.is_empty());
        // The current layout round-trips.
        let mut q = Profile::new("ab".into(), Mode::Segments);
        q.segments = Some(Box::new(SegmentProfile {
            k: 2,
            num_imported_funcs: 3,
            segments: vec![step(7)],
            subpaths: 0,
            ippp: Some(IpppSummary {
                truncated_starts: vec![9],
                truncated: 4,
                ..i.clone()
            }),
        }));
        let i2 = decode(&encode(&q)).unwrap().segments.unwrap().ippp.unwrap();
        assert_eq!((i2.truncated_starts, i2.truncated), (vec![9], 4));
    }
}
