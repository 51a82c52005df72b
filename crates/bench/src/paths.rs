//! Path statistics of a program, as in Tables 2 and 3 of Ball & Larus,
//! *Efficient Path Profiling* (MICRO 1996), computed from the path profiles
//! `pathprof run` writes (docs/profile-format.md).
//!
//! The profile is read through a small mirror of its JSON (only the fields
//! used here), and paths are regenerated with the paper's walk (3.5): from
//! ENTRY, take the out-edge with the largest Val not above the remaining
//! number. This shares no code with the profiler, so it also checks that the
//! documented format is enough to decode a profile.
//!
//! Terms: *flow* is the total number of path executions (path counts plus
//! self-loop iterations, which pathprof counts apart, 4.1); a path's length
//! is the number of CFG edges it runs along (dummy edges excluded, and so the
//! backedge ending a path) and the number of instructions of its blocks.
//!
//! *Definite flow* (Ball, Mataga & Sagiv, *Edge profiling versus path
//! profiling: the showdown*, POPL 1998) is how much of a path's count any
//! path profile consistent with the edge profile must give it, i.e. what an
//! edge profile alone proves. With f the edge frequencies on the Ball-Larus
//! DAG and out(v) the flow leaving v, a path e1..ek gets
//! d1 = f(e1), di = max(0, min(f(ei), d(i-1) - (out(src ei) - f(ei)))):
//! of the flow arriving along the prefix, at most out(v) - f(ei) can leave v
//! by another edge. The share reported is sum of definite flow / flow.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

const ENTRY: u32 = 0;
const EXIT: u32 = 1;

#[derive(Deserialize)]
struct Profile {
    format: String,
    version: u32,
    module_hash: String,
    mode: String,
    functions: Vec<Function>,
}

#[derive(Deserialize)]
struct Function {
    func_index: u32,
    blocks: Vec<Option<Block>>,
    edges: Vec<CfgEdge>,
    data: Data,
}

#[derive(Deserialize)]
struct CfgEdge {
    src: u32,
}

#[derive(Deserialize)]
struct Block {
    instrs: u32,
}

#[derive(Deserialize)]
struct Data {
    numbered: Option<Numbered>,
    counts: Option<Counts>,
}

#[derive(Deserialize)]
struct Numbered {
    num_nodes: usize,
    dag_edges: Vec<DagEdge>,
    total: u64,
    self_loops: Vec<u32>,
}

#[derive(Deserialize)]
struct DagEdge {
    src: u32,
    dst: u32,
    /// `{"Real": edge}`, `"EntryDummy"` or `"ExitDummy"`.
    kind: serde_json::Value,
    val: u64,
}

#[derive(Deserialize)]
struct Counts {
    paths: Vec<(u64, u64)>,
    self_loops: Vec<u64>,
}

/// The path statistics of one program's ref run (and its train run).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PathStats {
    /// Distinct paths with a non-zero count (self loops included).
    pub executed_paths: u64,
    /// Sum over instrumented functions of NumPaths(ENTRY) (after truncation).
    pub potential_paths: f64,
    /// Path executions.
    pub flow: u64,
    pub avg_edges: f64,
    pub avg_instrs: f64,
    /// Share of the flow an edge profile determines (definite flow).
    pub definite_flow_share: f64,
    /// Fewest paths that cover 90 % of the flow.
    pub paths_for_90pct: u64,
    /// Distinct paths executed by both the train and the ref runs.
    pub common_paths: u64,
    /// Distinct paths executed by the train run.
    pub train_paths: u64,
    /// Share of the ref flow along paths the train run also executed.
    pub common_flow_share: f64,
}

/// A path, identified across runs of the same module: (function, number),
/// with self-loop slots numbered from `u64::MAX` down.
type PathKey = (u32, u64);

/// Reads a dense path profile (format version 1 or 2: they differ only in
/// how a block's source is spelt, which is not read here).
fn load(path: &Path) -> Result<Profile> {
    let text =
        fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let p: Profile = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a pathprof profile", path.display()))?;
    if p.format != "pathprof-profile" || !(1..=2).contains(&p.version) || p.mode != "path" {
        bail!(
            "{}: not a dense (version 1 or 2) path profile",
            path.display()
        );
    }
    Ok(p)
}

/// Statistics of the ref profile, with train/ref common paths.
pub fn path_stats(ref_profile: &Path, train_profile: &Path) -> Result<PathStats> {
    let r = load(ref_profile)?;
    let t = load(train_profile)?;
    if r.module_hash != t.module_hash {
        bail!(
            "{} and {} profile different modules",
            ref_profile.display(),
            train_profile.display()
        );
    }
    let mut s = PathStats::default();
    let mut counts: Vec<u64> = Vec::new();
    let mut definite = 0.0;
    let (mut edges_sum, mut instrs_sum) = (0.0, 0.0);
    for f in &r.functions {
        let (Some(n), Some(c)) = (&f.data.numbered, &f.data.counts) else {
            continue;
        };
        s.potential_paths += n.total as f64;
        let fs = function_stats(f, n, c)
            .with_context(|| format!("{}: function {}", ref_profile.display(), f.func_index))?;
        definite += fs.definite;
        edges_sum += fs.edges;
        instrs_sum += fs.instrs;
        counts.extend(fs.counts);
    }
    s.executed_paths = counts.len() as u64;
    s.flow = counts.iter().sum();
    let flow = s.flow.max(1) as f64;
    s.avg_edges = edges_sum / flow;
    s.avg_instrs = instrs_sum / flow;
    s.definite_flow_share = definite / flow;
    s.paths_for_90pct = paths_for_share(&mut counts, 0.9);
    let rk = keyed(&r);
    let tk = keyed(&t);
    s.train_paths = tk.len() as u64;
    let common: Vec<u64> = rk
        .iter()
        .filter(|(k, _)| tk.contains_key(k))
        .map(|(_, &c)| c)
        .collect();
    s.common_paths = common.len() as u64;
    s.common_flow_share = common.iter().sum::<u64>() as f64 / flow;
    Ok(s)
}

/// Every executed path of a profile with its count.
fn keyed(p: &Profile) -> HashMap<PathKey, u64> {
    let mut m = HashMap::new();
    for f in &p.functions {
        let Some(c) = &f.data.counts else { continue };
        for &(n, k) in c.paths.iter().filter(|(_, k)| *k > 0) {
            m.insert((f.func_index, n), k);
        }
        for (i, &k) in c.self_loops.iter().enumerate().filter(|(_, k)| **k > 0) {
            m.insert((f.func_index, u64::MAX - i as u64), k);
        }
    }
    m
}

/// Sorts `counts` descending and returns how many reach `share` of the sum.
fn paths_for_share(counts: &mut [u64], share: f64) -> u64 {
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let goal = counts.iter().sum::<u64>() as f64 * share;
    let mut acc = 0.0;
    for (i, &c) in counts.iter().enumerate() {
        acc += c as f64;
        if acc >= goal {
            return i as u64 + 1;
        }
    }
    counts.len() as u64
}

/// Weighted sums of one function: definite flow, edges, instructions.
#[derive(Default)]
struct FunctionSums {
    counts: Vec<u64>,
    definite: f64,
    edges: f64,
    instrs: f64,
}

fn function_stats(f: &Function, n: &Numbered, c: &Counts) -> Result<FunctionSums> {
    let dag = Dag::new(n)?;
    let executed: Vec<(Vec<usize>, u64)> = c
        .paths
        .iter()
        .filter(|(_, k)| *k > 0)
        .map(|&(num, k)| Ok((dag.regenerate(num)?, k)))
        .collect::<Result<_>>()?;
    let mut freq = vec![0u64; n.dag_edges.len()];
    for (p, k) in &executed {
        for &e in p {
            freq[e] += k;
        }
    }
    let mut out = vec![0u64; n.num_nodes];
    for (e, &fq) in n.dag_edges.iter().zip(&freq) {
        out[e.src as usize] += fq;
    }
    let mut sums = FunctionSums::default();
    let instrs = |b: u32| {
        f.blocks
            .get(b as usize)
            .and_then(|b| b.as_ref())
            .map_or(0, |b| b.instrs)
    };
    for (p, k) in &executed {
        let real: Vec<&DagEdge> = p
            .iter()
            .map(|&e| &n.dag_edges[e])
            .filter(|e| is_real(e))
            .collect();
        let len_instrs: u64 = p
            .iter()
            .map(|&e| n.dag_edges[e].dst)
            .filter(|&d| d != EXIT)
            .map(|d| instrs(d) as u64)
            .sum();
        sums.edges += (real.len() as u64 * k) as f64;
        sums.instrs += (len_instrs * k) as f64;
        sums.definite += definite_flow(p, n, &freq, &out).min(*k) as f64;
        sums.counts.push(*k);
    }
    for (slot, &k) in c.self_loops.iter().enumerate().filter(|(_, k)| **k > 0) {
        // A self loop is one edge, fully determined by its edge count.
        let block = n
            .self_loops
            .get(slot)
            .and_then(|&e| f.edges.get(e as usize))
            .map_or(ENTRY, |e| e.src);
        sums.edges += k as f64;
        sums.instrs += (instrs(block) as u64 * k) as f64;
        sums.definite += k as f64;
        sums.counts.push(k);
    }
    Ok(sums)
}

fn is_real(e: &DagEdge) -> bool {
    e.kind.get("Real").is_some()
}

/// Definite flow of a path (module docs).
fn definite_flow(path: &[usize], n: &Numbered, freq: &[u64], out: &[u64]) -> u64 {
    let mut d = freq[path[0]];
    for &e in &path[1..] {
        let v = n.dag_edges[e].src as usize;
        let elsewhere = out[v].saturating_sub(freq[e]);
        d = d.saturating_sub(elsewhere).min(freq[e]);
    }
    d
}

/// The DAG's out-edges per node, sorted by Val, for regeneration.
struct Dag<'a> {
    n: &'a Numbered,
    out: Vec<Vec<usize>>,
}

impl<'a> Dag<'a> {
    fn new(n: &'a Numbered) -> Result<Dag<'a>> {
        let mut out = vec![Vec::new(); n.num_nodes];
        for (i, e) in n.dag_edges.iter().enumerate() {
            let Some(list) = out.get_mut(e.src as usize) else {
                bail!("DAG edge {i} leaves node {} of {}", e.src, n.num_nodes);
            };
            list.push(i);
        }
        for list in &mut out {
            list.sort_by_key(|&i| n.dag_edges[i].val);
        }
        Ok(Dag { n, out })
    }

    /// The DAG edges of path `number` (Ball & Larus 3.5).
    fn regenerate(&self, number: u64) -> Result<Vec<usize>> {
        if number >= self.n.total {
            bail!(
                "path {number} is not below NumPaths(ENTRY) = {}",
                self.n.total
            );
        }
        let (mut v, mut rest, mut path) = (ENTRY, number, Vec::new());
        while v != EXIT {
            let Some(&e) = self.out[v as usize]
                .iter()
                .rev()
                .find(|&&i| self.n.dag_edges[i].val <= rest)
            else {
                bail!("path {number} cannot be regenerated at node {v}");
            };
            rest -= self.n.dag_edges[e].val;
            path.push(e);
            v = self.n.dag_edges[e].dst;
            if path.len() > self.n.dag_edges.len() {
                bail!("path {number} does not reach EXIT");
            }
        }
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_for_share_counts_the_hottest_first() {
        let mut c = vec![1, 5, 4];
        assert_eq!(paths_for_share(&mut c, 0.5), 1);
        assert_eq!(paths_for_share(&mut c, 0.9), 2);
        assert_eq!(paths_for_share(&mut c, 1.0), 3);
    }

    /// Two diamonds in a row, ENTRY(0) -> 2 -> {3|4} -> 5 -> {6|7} -> 8 -> EXIT(1),
    /// with Val numbering 0..4; `counts` are the four path counts.
    fn two_diamonds(counts: &[(u64, u64)]) -> (Function, Numbered, Counts) {
        let e = |src, dst, val| DagEdge {
            src,
            dst,
            kind: serde_json::json!({"Real": 0}),
            val,
        };
        let dag_edges = vec![
            e(0, 2, 0),
            e(2, 3, 0),
            e(2, 4, 2),
            e(3, 5, 0),
            e(4, 5, 0),
            e(5, 6, 0),
            e(5, 7, 1),
            e(6, 8, 0),
            e(7, 8, 0),
            e(8, 1, 0),
        ];
        let n = Numbered {
            num_nodes: 9,
            dag_edges,
            total: 4,
            self_loops: vec![],
        };
        let blocks = (0..9)
            .map(|b| (b > 1).then_some(Block { instrs: 2 }))
            .collect();
        let f = Function {
            func_index: 0,
            blocks,
            edges: vec![],
            data: Data {
                numbered: None,
                counts: None,
            },
        };
        (
            f,
            n,
            Counts {
                paths: counts.to_vec(),
                self_loops: vec![],
            },
        )
    }

    #[test]
    fn definite_flow_of_correlated_and_independent_branches() {
        // Correlated: only 3-6 and 4-7 run; the edge profile cannot tell
        // them from 3-7 and 4-6, so nothing is definite.
        let (f, n, c) = two_diamonds(&[(0, 2), (3, 2)]);
        let s = function_stats(&f, &n, &c).unwrap();
        assert_eq!(s.definite, 0.0);
        assert_eq!(s.edges, 4.0 * 6.0);
        assert_eq!(s.instrs, 4.0 * 10.0);
        // One side never taken: every path is determined.
        let (f, n, c) = two_diamonds(&[(0, 3), (1, 1)]);
        assert_eq!(function_stats(&f, &n, &c).unwrap().definite, 4.0);
    }

    #[test]
    fn regeneration_follows_val() {
        let (_, n, _) = two_diamonds(&[]);
        let dag = Dag::new(&n).unwrap();
        let dst: Vec<u32> = dag
            .regenerate(3)
            .unwrap()
            .iter()
            .map(|&e| n.dag_edges[e].dst)
            .collect();
        assert_eq!(dst, [2, 4, 5, 7, 8, 1]);
        assert!(dag.regenerate(4).is_err());
    }
}
