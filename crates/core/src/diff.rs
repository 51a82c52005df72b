//! `pathprof diff A B`: how two path profiles of the same module differ,
//! like `llvm-profdata overlap`: the paths that appear (run in B, not in
//! A), disappear, or change their share of the path executions, and an
//! overlap score, the sum over paths of min(share in A, share in B) (100 %
//! for profiles with the same distribution; the dynamic-overlap formula of
//! the hardware profiler's accuracy metric, Vaswani thesis 5.5).
//!
//! A path is (function, kind, Ball-Larus number), self loops included; the
//! two profiles must number every function alike (same truncation), or
//! their numbers would name different paths. Two segment profiles
//! (`run --segments K`, of one depth) are compared segment by segment.

use std::collections::BTreeMap;

use crate::error::{bail, Context, Result};
use pathprof_profile::{FunctionData, Profile};
use serde::Serialize;

use crate::report::{self, HotPath};

#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    /// Sum over paths of min(share in A, share in B), in percent.
    pub overlap: f64,
    pub executions_a: u64,
    pub executions_b: u64,
    pub appeared: usize,
    pub disappeared: usize,
    pub changed: usize,
    /// What was compared: `paths` or `segments`.
    pub of: &'static str,
    /// Every path whose share differs, largest change first.
    pub paths: Vec<PathChange>,
}

#[derive(Clone, Debug, Serialize)]
pub struct PathChange {
    /// `appeared`, `disappeared` or `changed`.
    pub status: &'static str,
    pub function: String,
    pub kind: String,
    /// The path number (none for a segment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<u64>,
    pub count_a: u64,
    pub count_b: u64,
    /// Shares of each profile's path executions, in percent.
    pub percent_a: f64,
    pub percent_b: f64,
    /// Its blocks (a segment: its subpaths, as `report` prints them).
    pub blocks: String,
}

/// A path or segment of one profile, as the diff compares it.
struct Item {
    key: Key,
    function: String,
    kind: String,
    path: Option<u64>,
    blocks: String,
    count: u64,
}

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// (function, self loop, number).
    Path(u32, bool, u64),
    Segment(pathprof_profile::segments::SegmentKey),
}

fn path_items(p: &Profile) -> Result<Vec<Item>> {
    Ok(report::hot_rows(p, None)?
        .into_iter()
        .map(|r: HotPath| Item {
            key: Key::Path(r.func_index, r.kind.is_self_loop(), r.path),
            blocks: r
                .blocks
                .iter()
                .map(|b| b.block.index().to_string())
                .collect::<Vec<_>>()
                .join(" "),
            function: r.function,
            kind: r.kind.to_string(),
            path: Some(r.path),
            count: r.count,
        })
        .collect())
}

fn segment_items(p: &Profile) -> Vec<Item> {
    let Some(sp) = p.segments.as_deref() else {
        return Vec::new();
    };
    sp.segments
        .iter()
        .filter_map(|s| {
            let row = crate::segments_report::row(p, s, 0)?;
            Some(Item {
                key: Key::Segment(s.key()),
                function: row.segment.split(':').next().unwrap_or("").to_string(),
                kind: "segment".into(),
                path: None,
                blocks: row.segment,
                count: s.count,
            })
        })
        .collect()
}

/// The difference from `a` to `b` (named `name_b` in errors).
pub fn diff(a: &Profile, b: &Profile, name_b: &str) -> Result<Diff> {
    if a.module_hash != b.module_hash {
        bail!("{name_b}: a profile of another module; diff compares two profiles of one module");
    }
    let (ra, rb) = match (&a.segments, &b.segments) {
        (Some(x), Some(y)) if x.k == y.k => (segment_items(a), segment_items(b)),
        (Some(x), Some(y)) => bail!(
            "{name_b}: segments of depth {}, the first profile's are of depth {}",
            y.k,
            x.k
        ),
        (None, None) => {
            check_numbering(a, b, name_b)?;
            (path_items(a)?, path_items(b)?)
        }
        _ => bail!(
            "{name_b}: diff compares two path profiles or two segment profiles, not one of each"
        ),
    };
    let total = |items: &[Item]| items.iter().map(|p| p.count).sum::<u64>();
    let (ta, tb) = (total(&ra), total(&rb));
    let share = crate::report::percent;
    let mut all: BTreeMap<Key, (Option<&Item>, Option<&Item>)> = BTreeMap::new();
    for p in &ra {
        all.entry(p.key.clone()).or_default().0 = Some(p);
    }
    for p in &rb {
        all.entry(p.key.clone()).or_default().1 = Some(p);
    }
    let mut overlap = 0.0;
    let mut paths = Vec::new();
    for (pa, pb) in all.into_values() {
        let (ca, cb) = (pa.map_or(0, |p| p.count), pb.map_or(0, |p| p.count));
        let (sa, sb) = (share(ca, ta), share(cb, tb));
        overlap += sa.min(sb);
        if sa == sb {
            continue;
        }
        let p = pa.or(pb).expect("in one profile at least");
        paths.push(PathChange {
            status: match (ca, cb) {
                (0, _) => "appeared",
                (_, 0) => "disappeared",
                _ => "changed",
            },
            function: p.function.clone(),
            kind: p.kind.clone(),
            path: p.path,
            count_a: ca,
            count_b: cb,
            percent_a: sa,
            percent_b: sb,
            blocks: p.blocks.clone(),
        });
    }
    paths.sort_by(|x, y| {
        let d = |p: &PathChange| (p.percent_b - p.percent_a).abs();
        d(y).total_cmp(&d(x))
    });
    let count = |s: &str| paths.iter().filter(|p| p.status == s).count();
    Ok(Diff {
        overlap,
        executions_a: ta,
        executions_b: tb,
        appeared: count("appeared"),
        disappeared: count("disappeared"),
        changed: count("changed"),
        of: if a.segments.is_some() {
            "segments"
        } else {
            "paths"
        },
        paths,
    })
}

/// Both profiles have paths, and number each function they share alike.
fn check_numbering(a: &Profile, b: &Profile, name_b: &str) -> Result<()> {
    let (na, nb) = (numbered(a)?, numbered(b).context(name_b.to_string())?);
    for (i, fa) in &na {
        let (FunctionData::Path { numbered: x, .. }, Some(FunctionData::Path { numbered: y, .. })) =
            (fa, nb.get(i))
        else {
            continue;
        };
        if x != y {
            bail!("{name_b}: function {i} is numbered differently (another --truncate-above?)");
        }
    }
    Ok(())
}

/// Each function's path data; an error if a function has none.
fn numbered(p: &Profile) -> Result<BTreeMap<u32, &FunctionData>> {
    let mut out = BTreeMap::new();
    for f in &p.functions {
        if !matches!(f.data, FunctionData::Path { .. }) {
            bail!(
                "a {} profile has no paths; diff compares path or PPP profiles",
                p.mode
            );
        }
        out.insert(f.func_index, &f.data);
    }
    Ok(out)
}

impl Diff {
    /// The diff as JSON, with the `top` paths whose share changed most.
    pub fn to_json(&self, top: usize) -> Result<serde_json::Value> {
        let mut value = serde_json::to_value(self)?;
        if let Some(paths) = value.get_mut("paths").and_then(|p| p.as_array_mut()) {
            paths.truncate(top);
        }
        Ok(value)
    }

    pub fn render(&self, top: usize) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "overlap {:.2}%: {} {of} appeared, {} disappeared, {} changed share ({} executions in A, {} in B)",
            self.overlap,
            self.appeared,
            self.disappeared,
            self.changed,
            self.executions_a,
            self.executions_b,
            of = self.of
        );
        if !self.paths.is_empty() {
            let _ = writeln!(
                s,
                "{:<12} {:>8} {:>8}  {}",
                "",
                "A %",
                "B %",
                if self.of == "paths" {
                    "function path: blocks"
                } else {
                    "segment"
                }
            );
        }
        for p in self.paths.iter().take(top) {
            // A path: `function number: blocks`; a segment: its subpaths.
            let what = match p.path {
                Some(n) => {
                    let self_loop = if p.kind == report::PathKind::SelfLoop.to_string() {
                        " (self loop)"
                    } else {
                        ""
                    };
                    format!("{} {n}{self_loop}: {}", p.function, p.blocks)
                }
                None => p.blocks.clone(),
            };
            let _ = writeln!(
                s,
                "{:<12} {:>7.2}% {:>7.2}%  {what}",
                p.status, p.percent_a, p.percent_b
            );
        }
        if self.paths.len() > top {
            let _ = writeln!(s, "({} more; --top N shows more)", self.paths.len() - top);
        }
        s
    }
}
