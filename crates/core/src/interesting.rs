//! `--interesting SPEC`: which paths preferential path profiling treats as
//! interesting, per function, as Ball-Larus ids of the module being
//! instrumented.
//!
//! A SPEC is either
//! - a profile (binary or JSON, `pathprof run`'s output, path or PPP mode) of the same
//!   module: every path it counted is interesting, and every self loop it saw
//!   iterate is tested; or
//! - a text file, one path per line:
//!   ```text
//!   # comments and blank lines are ignored
//!   main 693                     # FUNCTION BALL-LARUS-NUMBER
//!   main blocks 10 11 14 36      # FUNCTION blocks BLOCK... (ids, or id@0xOFFSET as reports print them)
//!   func[7] 0                    # a function by index, as reports name unnamed ones
//!   ```
//!   A block sequence names every path through exactly those blocks: more
//!   than one when the first block is both the entry and a loop head, when
//!   the last block both returns and takes a backedge, or when a `br_table`
//!   reaches one block by two edges.
//!
//! Ids are checked against the numbering the plan will use: a text spec's
//! at the truncation threshold, a profile's its own. A path profile that
//! cut a function elsewhere than the threshold does (guided by weights,
//! `run --weights`, or at another `--truncate-above`) has it planned with
//! the cuts it records ([`Interesting::cuts`]), and no other spec may name
//! that function's paths at the threshold's numbering, nor another profile
//! with other cuts. Unknown functions, numbers out of range and block
//! sequences that are no path are refused too, with the file and line.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use crate::error::{bail, Context, Result};
use pathprof_graph::dag::Dag;
use pathprof_graph::numbering::{build_numbered, Numbering};
use pathprof_graph::{Cfg, NodeId};
use pathprof_profile::{FunctionData, Profile};
use pathprof_techniques::ball_larus;
use pathprof_wasm::{FunctionCfg, ModuleInfo};

/// The interesting paths of a module, resolved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interesting {
    /// Ball-Larus ids by function index.
    pub paths: BTreeMap<u32, Vec<u64>>,
    /// Indices (into the function's self-loop list) of self loops seen
    /// iterating, by function index (from profiles only).
    pub self_loops: BTreeMap<u32, Vec<u32>>,
    /// By function index: the vertices its DAG is cut at, where a profile
    /// named its paths under other cuts than the truncation threshold's
    /// (a path profile guided by weights).
    pub cuts: BTreeMap<u32, Vec<NodeId>>,
    /// Functions some spec named at the truncation threshold's numbering,
    /// with the first such spec: none may be in `cuts` as well.
    at_threshold: BTreeMap<u32, std::path::PathBuf>,
}

impl Interesting {
    /// Number of interesting paths in all.
    pub fn len(&self) -> usize {
        self.paths.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn add(&mut self, func: u32, ids: impl IntoIterator<Item = u64>) {
        let v = self.paths.entry(func).or_default();
        v.extend(ids);
        v.sort_unstable();
        v.dedup();
    }
}

/// Reads every SPEC file and returns the union of their paths.
pub fn read_specs(
    specs: &[impl AsRef<Path>],
    info: &ModuleInfo,
    truncate_above: u64,
) -> Result<Interesting> {
    let mut out = Interesting::default();
    let numbering = Numberings::new(info, truncate_above);
    for spec in specs {
        let spec = spec.as_ref();
        let bytes = std::fs::read(spec).with_context(|| spec.display().to_string())?;
        if Profile::looks_like(&bytes) {
            from_profile(spec, &bytes, info, &numbering, &mut out)?;
        } else {
            let text = std::str::from_utf8(&bytes)
                .map_err(|e| crate::error::invalid!("{}: not UTF-8 text: {e}", spec.display()))?;
            from_text(spec, text, &numbering, &mut out)?;
        }
    }
    let both = out
        .at_threshold
        .iter()
        .find(|(f, _)| out.cuts.contains_key(f));
    if let Some((f, spec)) = both {
        bail!(
            "{}: names paths of function {} at the truncation threshold's numbering, which another --interesting profile numbered with the cuts of its weights",
            spec.display(),
            numbering.display_name(*f)
        );
    }
    Ok(out)
}

/// The Ball-Larus numbering of every supported function, made on demand.
struct Numberings<'a> {
    info: &'a ModuleInfo,
    truncate_above: u64,
}

impl<'a> Numberings<'a> {
    fn new(info: &'a ModuleInfo, truncate_above: u64) -> Self {
        Numberings {
            info,
            truncate_above,
        }
    }

    fn function(&self, func_index: u32) -> Option<&'a FunctionCfg> {
        self.info
            .functions
            .iter()
            .flatten()
            .find(|f| f.func_index == func_index)
    }

    /// A function by the name reports give it: its name, `func[N]`, or N.
    fn by_name(&self, name: &str) -> Option<&'a FunctionCfg> {
        let index = name
            .strip_prefix("func[")
            .and_then(|s| s.strip_suffix(']'))
            .or(Some(name).filter(|s| s.bytes().all(|b| b.is_ascii_digit())))
            .and_then(|s| s.parse::<u32>().ok());
        self.info
            .functions
            .iter()
            .flatten()
            .find(|f| f.name.as_deref() == Some(name) || Some(f.func_index) == index)
    }

    fn number(&self, f: &FunctionCfg) -> Result<(Dag, Numbering)> {
        Ok(build_numbered(&f.cfg, self.truncate_above)?)
    }

    /// Function `func_index` as reports name it.
    fn display_name(&self, func_index: u32) -> String {
        self.function(func_index)
            .and_then(|f| f.name.clone())
            .unwrap_or_else(|| format!("func[{func_index}]"))
    }
}

fn from_profile(
    spec: &Path,
    bytes: &[u8],
    info: &ModuleInfo,
    numberings: &Numberings<'_>,
    out: &mut Interesting,
) -> Result<()> {
    let profile = Profile::from_bytes(spec, bytes)?;
    profile.check_module(spec, &info.module_hash)?;
    for f in &profile.functions {
        let FunctionData::Path {
            numbered, counts, ..
        } = &f.data
        else {
            return Err(crate::report::no_paths(profile.mode, spec));
        };
        let cfg = numberings.function(f.func_index).with_context(|| {
            format!(
                "{}: function {} is not profilable here",
                spec.display(),
                f.display_name()
            )
        })?;
        let (dag, numbering) = numberings.number(cfg)?;
        if ball_larus::numbered(&dag, &numbering) != *numbered {
            // Cut elsewhere (by weights, or another threshold), if the DAG
            // cut at the vertices the profile records numbers as it says.
            let cut = Dag::with_cuts(&cfg.cfg, &numbered.cut_nodes)
                .and_then(|dag| Ok((pathprof_graph::numbering::number(&dag)?, dag)));
            if !cut.is_ok_and(|(n, dag)| ball_larus::numbered(&dag, &n) == *numbered) {
                bail!(
                    "{}: function {} is numbered as no cut of it numbers (a profile of another build?)",
                    spec.display(),
                    f.display_name()
                );
            }
            if out
                .cuts
                .get(&f.func_index)
                .is_some_and(|c| *c != numbered.cut_nodes)
            {
                bail!(
                    "{}: function {} was cut elsewhere by another --interesting profile",
                    spec.display(),
                    f.display_name()
                );
            }
            out.cuts.insert(f.func_index, numbered.cut_nodes.clone());
        } else if counts.paths.iter().any(|&(_, c)| c > 0) {
            out.at_threshold.entry(f.func_index).or_insert(spec.into());
        }
        out.add(
            f.func_index,
            counts
                .paths
                .iter()
                .filter(|&&(_, c)| c > 0)
                .map(|&(p, _)| p),
        );
        let loops = counts
            .self_loops
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(i, _)| i as u32);
        let v = out.self_loops.entry(f.func_index).or_default();
        v.extend(loops);
        v.sort_unstable();
        v.dedup();
    }
    Ok(())
}

fn from_text(
    spec: &Path,
    text: &str,
    numberings: &Numberings<'_>,
    out: &mut Interesting,
) -> Result<()> {
    for (n, line) in text.lines().enumerate() {
        let at = || format!("{}:{}", spec.display(), n + 1);
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let usage = "expected `FUNCTION NUMBER` or `FUNCTION blocks BLOCK...`";
        if words.len() < 2
            || (words.len() > 2 && words[1] != "blocks")
            || (words[1] == "blocks" && words.len() < 3)
        {
            bail!("{}: {usage}", at());
        }
        let f = numberings
            .by_name(words[0])
            .with_context(|| format!("{}: no profilable function named `{}`", at(), words[0]))?;
        let name = f
            .name
            .clone()
            .unwrap_or_else(|| format!("func[{}]", f.func_index));
        let (dag, numbering) = numberings.number(f).with_context(at)?;
        let ids = if words[1] == "blocks" {
            let blocks = parse_blocks(&words[2..], f)
                .map_err(|e| crate::error::invalid!("{}: {e}", at()))?;
            let ids = paths_through(&dag, &numbering, &blocks);
            if ids.is_empty() {
                bail!(
                    "{}: blocks {} are not a path of function {name}",
                    at(),
                    words[2..].join(" ")
                );
            }
            ids
        } else {
            let id: u64 = words[1]
                .parse()
                .map_err(|_| crate::error::invalid!("{}: {usage}", at()))?;
            if id >= numbering.total() {
                bail!(
                    "{}: path {id} is out of range: function {name} has {} paths",
                    at(),
                    numbering.total()
                );
            }
            vec![id]
        };
        out.add(f.func_index, ids);
        out.at_threshold.entry(f.func_index).or_insert(spec.into());
    }
    Ok(())
}

/// Block ids, each `ID` or `ID@0xOFFSET` (the offset must match).
fn parse_blocks(words: &[&str], f: &FunctionCfg) -> Result<Vec<NodeId>, String> {
    words
        .iter()
        .map(|w| {
            let (id, offset) = match w.split_once('@') {
                Some((id, off)) => (id, Some(off)),
                None => (*w, None),
            };
            let id: usize = id
                .parse()
                .map_err(|_| format!("`{w}` is not a block (ID or ID@0xOFFSET)"))?;
            let block = f
                .blocks
                .get(id)
                .and_then(|b| b.as_ref())
                .ok_or_else(|| format!("function has no block {id}"))?;
            if let Some(off) = offset {
                let off = off
                    .strip_prefix("0x")
                    .and_then(|h| u32::from_str_radix(h, 16).ok());
                if off != Some(block.offset) {
                    return Err(format!("block {id} is at {:#x}, not {}", block.offset, w));
                }
            }
            Ok(NodeId::new(id))
        })
        .collect()
}

/// Most paths one block sequence may name before it is refused.
const MAX_PATHS_PER_SEQUENCE: usize = 4096;

/// Ball-Larus ids of every ENTRY->EXIT path of `dag` that runs through
/// exactly `blocks`, by dynamic programming over the set of prefix sums.
fn paths_through(dag: &Dag, numbering: &Numbering, blocks: &[NodeId]) -> Vec<u64> {
    let stops: Vec<NodeId> = std::iter::once(Cfg::ENTRY)
        .chain(blocks.iter().copied())
        .chain(std::iter::once(Cfg::EXIT))
        .collect();
    let mut sums: HashSet<u64> = HashSet::from([0]);
    for pair in stops.windows(2) {
        let mut next = HashSet::new();
        for &d in dag.succs(pair[0]) {
            if dag.edge(d).dst != pair[1] {
                continue;
            }
            for &s in &sums {
                next.insert(s.wrapping_add(numbering.val[d.index()]));
            }
        }
        if next.len() > MAX_PATHS_PER_SEQUENCE {
            return Vec::new();
        }
        sums = next;
    }
    let set: BTreeSet<u64> = sums.into_iter().collect();
    set.into_iter().collect()
}
