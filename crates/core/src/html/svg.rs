//! A function's CFG as SVG. The layout is layered by block order: ENTRY at
//! the top, one box per basic block in node order (the order of the code),
//! EXIT at the bottom. An edge to the next box is a straight line; a
//! forward edge that skips boxes arcs to the right, a backedge to the left,
//! each the wider the more boxes it spans, so edges of different spans do
//! not overlap. Edge thickness grows with the logarithm of its count, so
//! cold edges stay visible next to hot ones.
//!
//! Every element the script colours has an id: `n{node}` for a block,
//! `e{edge}` for an edge. An edge that ran has class `edge` and its count
//! in `data-count`; one that never ran has class `unrun`.

use std::fmt::Write;

use pathprof_graph::Cfg;

use super::assets::escape;
use super::model::FunctionView;

const BOX_W: u32 = 170;
const BOX_H: u32 = 26;
const ROW: u32 = 40;
/// Room on each side for the arcs.
const MARGIN: u32 = 120;
const TOP: u32 = 10;

/// The SVG element of `v`'s CFG.
pub(crate) fn cfg_svg(v: &FunctionView) -> String {
    let rows = rows(v);
    let height = TOP * 2 + ROW * rows.iter().filter(|r| r.is_some()).count() as u32;
    let width = MARGIN * 2 + BOX_W;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"control-flow graph\">\n"
    );
    let max = v.edge_counts.iter().copied().max().unwrap_or(0);
    for (e, edge) in v.f.edges.iter().enumerate() {
        let (Some(a), Some(b)) = (rows[edge.src.index()], rows[edge.dst.index()]) else {
            continue;
        };
        let count = v.edge_counts.get(e).copied().unwrap_or(0);
        edge_element(&mut s, e, (a, b), count, max, &edge.kind);
    }
    for (n, row) in rows.iter().enumerate() {
        if let Some(r) = row {
            node_element(&mut s, v, n, *r);
        }
    }
    s.push_str("</svg>\n");
    s
}

/// Each node's row: ENTRY first, the blocks in order, EXIT last.
fn rows(v: &FunctionView) -> Vec<Option<u32>> {
    let n = v.f.blocks.len();
    let mut rows = vec![None; n];
    let mut next = 0;
    let order = std::iter::once(Cfg::ENTRY.index())
        .chain((0..n).filter(|&b| v.f.blocks[b].is_some()))
        .chain(std::iter::once(Cfg::EXIT.index()));
    for node in order {
        if node < n {
            rows[node] = Some(next);
            next += 1;
        }
    }
    rows
}

fn y_of(row: u32) -> u32 {
    TOP + row * ROW
}

fn node_element(s: &mut String, v: &FunctionView, n: usize, row: u32) {
    let count = v.block_counts.get(n).copied().unwrap_or(0);
    let (label, ran) = match &v.f.blocks[n] {
        Some(b) => (format!("{n} @{:#x}  ×{count}", b.offset), count > 0),
        None if n == Cfg::ENTRY.index() => ("ENTRY".to_string(), v.flow > 0),
        None => ("EXIT".to_string(), v.flow > 0),
    };
    let class = if ran { "node" } else { "node notrun" };
    let source = v.f.blocks[n].as_ref().and_then(|b| b.source.as_ref());
    let title = match source {
        Some(src) => format!("block {n} ({src}): {count}"),
        None => label.clone(),
    };
    let (x, y) = (MARGIN, y_of(row));
    let _ = writeln!(
        s,
        "<g id=\"n{n}\" class=\"{class}\" data-count=\"{count}\"><title>{}</title>\
         <rect x=\"{x}\" y=\"{y}\" width=\"{BOX_W}\" height=\"{BOX_H}\" rx=\"4\"/>\
         <text x=\"{}\" y=\"{}\">{}</text></g>",
        escape(&title),
        x + 6,
        y + 17,
        escape(&label)
    );
}

/// One edge between the boxes of rows `a` and `b`.
fn edge_element(s: &mut String, e: usize, (a, b): (u32, u32), count: u64, max: u64, kind: &str) {
    let mid = MARGIN + BOX_W / 2;
    let d = if b == a + 1 {
        format!("M{mid} {} L{mid} {}", y_of(a) + BOX_H, y_of(b))
    } else {
        let span = a.abs_diff(b).max(1);
        let bulge = (12 + 8 * span).min(MARGIN - 8);
        // Forward edges leave the right side, backedges the left.
        let (x, out) = match b > a {
            true => (MARGIN + BOX_W, (MARGIN + BOX_W + bulge) as i64),
            false => (MARGIN, MARGIN as i64 - bulge as i64),
        };
        let (y1, y2) = (y_of(a) + BOX_H / 2 + 4, y_of(b) + BOX_H / 2 - 4);
        format!("M{x} {y1} C{out} {y1} {out} {y2} {x} {y2}")
    };
    let (class, width) = match count {
        0 => ("unrun", 1.0),
        c => (
            "edge",
            1.0 + 6.0 * (c as f64).ln_1p() / (max as f64).ln_1p().max(1.0),
        ),
    };
    let _ = writeln!(
        s,
        "<path id=\"e{e}\" class=\"{class}\" data-edge=\"{e}\" data-count=\"{count}\" \
         stroke-width=\"{width:.2}\" d=\"{d}\"><title>{}: {count}</title></path>",
        escape(kind)
    );
}
