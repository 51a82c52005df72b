//! The report of a small hand-built profile, checked against counts the
//! tests derive themselves: paths enumerated over the CFG and numbered by
//! summing the numbering's edge values (Ball & Larus, section 3.2).

use std::collections::BTreeMap;

use pathprof_graph::{Cfg, NodeId};
use pathprof_profile::{Block, Edge, FunctionData, FunctionProfile, Mode, Profile};
use pathprof_techniques::ball_larus::{self, EdgeRole, PathCounts};

use super::{render, HtmlOptions, Report};

mod scrape;
use scrape::attrs;

fn node(i: usize) -> NodeId {
    NodeId::new(i)
}

/// A function of `blocks` blocks, 2.. (block `b` at line `10 + b - 2` of
/// `t.c`), and `edges`, numbered as the instrumenter numbers it, with no
/// counts yet.
fn function(
    func_index: u32,
    name: &str,
    blocks: usize,
    edges: &[(usize, usize)],
) -> FunctionProfile {
    let mut cfg = Cfg::new();
    for _ in 0..blocks {
        cfg.add_node();
    }
    for &(a, b) in edges {
        cfg.add_edge(node(a), node(b));
    }
    let planned = ball_larus::plan(&cfg, None, &Default::default()).unwrap();
    let block = |b: usize| Block {
        offset: 0x100 * func_index + 0x10 * b as u32,
        end: 0x100 * func_index + 0x10 * b as u32 + 8,
        instrs: 3,
        source: Some(pathprof_profile::SourceLocation::from_v1(&format!(
            "t.c:{}",
            10 + b - 2
        ))),
    };
    FunctionProfile {
        func_index,
        name: Some(name.to_string()),
        blocks: (0..blocks + 2)
            .map(|b| (b >= 2).then(|| block(b)))
            .collect(),
        edges: edges
            .iter()
            .map(|&(a, b)| Edge {
                src: node(a),
                dst: node(b),
                kind: "BrIf".into(),
            })
            .collect(),
        data: FunctionData::Path {
            counts: PathCounts {
                paths: Vec::new(),
                self_loops: vec![0; planned.numbered.self_loops.len()],
                lost: 0,
            },
            numbered: planned.numbered,
            ppp: None,
        },
    }
}

/// Every ENTRY->EXIT path of an acyclic function, as its CFG edges.
fn enumerate(f: &FunctionProfile) -> Vec<Vec<usize>> {
    fn walk(f: &FunctionProfile, at: NodeId, so_far: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if at == Cfg::EXIT {
            out.push(so_far.clone());
            return;
        }
        for (e, edge) in f.edges.iter().enumerate().filter(|(_, x)| x.src == at) {
            so_far.push(e);
            walk(f, edge.dst, so_far, out);
            so_far.pop();
        }
    }
    let mut out = Vec::new();
    walk(f, Cfg::ENTRY, &mut Vec::new(), &mut out);
    out
}

/// A path's number: the sum of its edges' values.
fn number(f: &FunctionProfile, path: &[usize]) -> u64 {
    let FunctionData::Path { numbered, .. } = &f.data else {
        unreachable!()
    };
    path.iter()
        .map(|&e| {
            let d = numbered
                .dag_edges
                .iter()
                .find(|d| d.kind == EdgeRole::Real(pathprof_graph::EdgeId::new(e)));
            d.map_or(0, |d| d.val)
        })
        .sum()
}

/// Gives each path of `f` the count of the first of `runs` whose block it
/// passes (`None`: any path), and returns the paths counted, as their
/// edges, with their counts.
fn count(f: &mut FunctionProfile, runs: &[(Option<usize>, u64)]) -> Vec<(Vec<usize>, u64)> {
    let mut out = Vec::new();
    for path in enumerate(f) {
        let passes = |b: usize| path.iter().any(|&e| f.edges[e].dst == node(b));
        if let Some(&(_, c)) = runs.iter().find(|(via, _)| via.is_none_or(passes)) {
            out.push((path, c));
        }
    }
    let mut numbered: Vec<(u64, u64)> = out.iter().map(|(p, c)| (number(f, p), *c)).collect();
    numbered.sort();
    let FunctionData::Path { counts, .. } = &mut f.data else {
        unreachable!()
    };
    counts.paths = numbered;
    out
}

/// hot: a diamond 2 -> {3, 4, 6} -> 5 where 3 ran 7 times, 4 twice and 6
/// never; warm: one block, 3 times; cold: never ran.
fn sample() -> (Profile, Vec<(Vec<usize>, u64)>) {
    let diamond = [
        (0, 2),
        (2, 3),
        (2, 4),
        (2, 6),
        (3, 5),
        (4, 5),
        (6, 5),
        (5, 1),
    ];
    let mut hot = function(3, "hot<&>", 5, &diamond);
    let runs = count(&mut hot, &[(Some(3), 7), (Some(4), 2)]);
    let mut warm = function(1, "warm", 1, &[(0, 2), (2, 1)]);
    count(&mut warm, &[(None, 3)]);
    let cold = function(2, "cold", 1, &[(0, 2), (2, 1)]);
    let mut profile = Profile::new("ab".repeat(32), Mode::Path);
    profile.runs = 1;
    profile.functions = vec![warm, cold, hot];
    (profile, runs)
}

fn report(profile: &Profile, dirs: Vec<std::path::PathBuf>) -> Report {
    let opts = HtmlOptions {
        source_dirs: dirs,
        top: 20,
    };
    render(profile, &opts).unwrap()
}

fn page<'r>(r: &'r Report, name: &str) -> &'r str {
    let found = r.pages.iter().find(|(n, _)| n == name);
    &found.unwrap_or_else(|| panic!("no page {name}")).1
}

#[test]
fn the_index_lists_functions_by_flow_with_their_counts() {
    let (profile, _) = sample();
    let r = report(&profile, vec![]);
    let index = page(&r, "index.html");
    assert_eq!(
        attrs(index, "data-function=", "data-function"),
        ["hot&lt;&amp;&gt;", "warm", "cold"]
    );
    assert_eq!(attrs(index, "data-function=", "data-flow"), ["9", "3", "0"]);
    assert!(!index.contains("hot<&>"), "the name is escaped");
    // A page per function that ran.
    let mut names: Vec<&str> = r.pages.iter().map(|(n, _)| n.as_str()).collect();
    names.sort();
    assert_eq!(names, ["f1.html", "f3.html", "index.html"]);
}

#[test]
fn a_line_counts_the_paths_through_its_block() {
    let (profile, runs) = sample();
    let dir = std::env::temp_dir().join(format!("pathprof-html-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text: String = (1..=20).map(|i| format!("line {i} <code>\n")).collect();
    std::fs::write(dir.join("t.c"), text).unwrap();
    let r = report(&profile, vec![dir.clone()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(r.missing_sources.is_empty());
    let hot = &profile.functions[2];
    // Block b begins line 10 + b - 2; its count sums the paths through it.
    let mut want: BTreeMap<String, String> = BTreeMap::new();
    for b in 2..7 {
        let through: u64 = runs
            .iter()
            .filter(|(p, _)| p.iter().any(|&e| hot.edges[e].dst == node(b)))
            .map(|(_, c)| c)
            .sum();
        want.insert(format!("k-0-{}", 10 + b - 2), through.to_string());
    }
    let html = page(&r, "f3.html");
    let got: BTreeMap<String, String> = html
        .split("<tr id=\"")
        .skip(1)
        .filter_map(|row| {
            let id = row.split('"').next()?;
            let count = row
                .split("<td class=\"count\">")
                .nth(1)?
                .split('<')
                .next()?;
            (!count.is_empty()).then(|| (id.to_string(), count.to_string()))
        })
        .filter(|(id, _)| id.starts_with("k-"))
        .collect();
    assert_eq!(got, want);
    assert!(
        html.contains("line 12 &lt;code&gt;"),
        "source text is escaped"
    );
}

#[test]
fn the_cfg_has_one_edge_element_per_edge_that_ran() {
    let (profile, runs) = sample();
    let r = report(&profile, vec![]);
    let hot = &profile.functions[2];
    let mut want: BTreeMap<String, String> = BTreeMap::new();
    for (e, _) in hot.edges.iter().enumerate() {
        let c: u64 = runs
            .iter()
            .filter(|(p, _)| p.contains(&e))
            .map(|(_, c)| c)
            .sum();
        if c > 0 {
            want.insert(e.to_string(), c.to_string());
        }
    }
    assert_eq!(want.len(), 6, "two of the eight edges never ran");
    let html = page(&r, "f3.html");
    let ids = attrs(html, "class=\"edge\"", "data-edge");
    let counts = attrs(html, "class=\"edge\"", "data-count");
    let got: BTreeMap<String, String> = ids.into_iter().zip(counts).collect();
    assert_eq!(got, want);
    assert_eq!(attrs(html, "class=\"unrun\"", "data-edge").len(), 2);
    // Without the source, the page says so and keeps the counts.
    assert_eq!(r.missing_sources, ["t.c"]);
    assert!(html.contains("source file t.c not found"));
}
