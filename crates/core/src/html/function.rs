//! A function's page: the source annotated with counts as `pathprof show`
//! annotates it (or, without DWARF lines, the blocks with their byte
//! offsets), the CFG, and the table of its hottest paths. Selecting a path
//! marks the lines it runs with their positions along it, in the listing
//! and in the CFG.
//!
//! Every listing row a path can mark has an id, `k-{file}-{line}` (file:
//! the function's source files in order) or `k-b{block}`; the page's JSON
//! gives each path the rows it marks with their positions.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::path::PathBuf;

use serde_json::json;

use super::assets::{self, escape};
use super::model::{FunctionView, PathView};
use super::{svg, HtmlOptions};
use crate::export::FileCoverage;
use crate::{report, show};

/// The page, and the source files it could not find.
pub(crate) struct FunctionPage {
    pub html: String,
    pub missing: Vec<String>,
}

/// The file name of a function's page.
pub(crate) fn file_name(func_index: u32) -> String {
    format!("f{func_index}.html")
}

/// The source files read so far, by the name the line table gives (`None`
/// when not found): each is read once for all the pages.
#[derive(Default)]
pub(crate) struct Sources(HashMap<String, Option<String>>);

impl Sources {
    fn text(&mut self, file: &str, dirs: &[PathBuf]) -> Option<&str> {
        self.0
            .entry(file.to_string())
            .or_insert_with(|| show::find(file, dirs).and_then(|p| std::fs::read_to_string(p).ok()))
            .as_deref()
    }
}

pub(crate) fn page(
    v: &FunctionView,
    mode: &str,
    opts: &HtmlOptions,
    sources: &mut Sources,
) -> FunctionPage {
    let shown = &v.paths[..v.paths.len().min(opts.top)];
    let (listing, missing) = match v.files.is_empty() {
        true => (blocks_listing(v), Vec::new()),
        false => source_listing(&v.files, &opts.source_dirs, sources),
    };
    let mut body = header(v, mode);
    for file in &missing {
        let _ = writeln!(
            body,
            "<p class=\"note\">source file {} not found (give --source-dir DIR): its lines show counts only</p>",
            escape(file)
        );
    }
    body.push_str(&selector(v, shown));
    let _ = writeln!(
        body,
        "<div class=\"columns\"><div class=\"source\">{listing}</div>\
         <div class=\"cfg\"><h2>Control-flow graph</h2>{}</div></div>",
        svg::cfg_svg(v)
    );
    body.push_str(&path_table(v, shown));
    let data = json!({ "paths": shown.iter().map(|p| path_json(v, p)).collect::<Vec<_>>() });
    let _ = writeln!(
        body,
        "<script type=\"application/json\" id=\"paths-data\">{}</script>",
        assets::script_json(&data)
    );
    FunctionPage {
        html: assets::page(&v.name, &body, Some(assets::FUNCTION_JS)),
        missing,
    }
}

fn header(v: &FunctionView, mode: &str) -> String {
    let (run, all, what) = v.coverage();
    let blocks = match what {
        "lines" => format!(
            " &middot; {} of {} blocks ran",
            v.blocks_run, v.blocks_total
        ),
        _ => String::new(),
    };
    format!(
        "<p><a href=\"index.html\">&larr; all functions</a></p>\n<h1>{}</h1>\n\
         <p class=\"meta\">function {} &middot; {mode} profile &middot; {} path executions &middot; \
         {run} of {all} {what} ran{blocks}</p>\n",
        escape(&v.name),
        v.f.func_index,
        v.flow,
    )
}

/// The path chooser, and where the script says a fragment named no path.
fn selector(v: &FunctionView, shown: &[PathView]) -> String {
    let mut s = String::from("<p id=\"path-message\" class=\"untested\"></p>\n");
    if shown.is_empty() {
        let why = match v.f.data {
            pathprof_profile::FunctionData::Edge { .. } => "this profile counts edges, not paths",
            _ => "no path of this function ran",
        };
        let _ = writeln!(s, "<p class=\"meta\">No paths to select: {why}.</p>");
        return s;
    }
    s.push_str("<label>Path: <select id=\"path-select\">");
    for p in shown {
        let _ = write!(
            s,
            "<option value=\"{id}\">{} &middot; {} &times; ({:.2}%) &middot; {}</option>",
            label(p),
            p.row.count,
            p.share,
            escape(&p.row.kind.to_string()),
            id = escape(&p.id)
        );
    }
    s.push_str("</select></label>\n");
    s
}

fn label(p: &PathView) -> String {
    match p.id.strip_prefix('s') {
        Some(slot) => format!("self loop {slot}"),
        None => format!("path {}", p.id),
    }
}

/// The annotated lines of each file, and the files not found.
fn source_listing(
    files: &[FileCoverage],
    dirs: &[PathBuf],
    sources: &mut Sources,
) -> (String, Vec<String>) {
    let (mut s, mut missing) = (String::new(), Vec::new());
    for (i, c) in files.iter().enumerate() {
        let text = sources.text(&c.file, dirs).unwrap_or_else(|| {
            missing.push(c.file.clone());
            ""
        });
        let mut lines = show::annotate(c, text, true);
        if lines.is_empty() {
            // Not found: its counted lines, without their text.
            lines = c
                .lines
                .iter()
                .map(|l| show::AnnotatedLine {
                    number: l.line,
                    count: Some(l.count),
                    text: "",
                })
                .collect();
        }
        let _ = writeln!(s, "<div class=\"file\">{}</div>", escape(&c.file));
        s.push_str("<table class=\"src\">\n");
        for l in lines {
            let id = format!("k-{i}-{}", l.number);
            listing_row(&mut s, &id, l.count, &l.number.to_string(), l.text);
        }
        s.push_str("</table>\n");
    }
    (s, missing)
}

/// Without DWARF lines: the blocks with their byte offsets.
fn blocks_listing(v: &FunctionView) -> String {
    let mut s = String::from(
        "<p class=\"meta\">The module has no DWARF lines: the blocks with their byte offsets.</p>\n\
         <table class=\"src\">\n",
    );
    for (b, block) in v.f.blocks.iter().enumerate() {
        if let Some(block) = block {
            let text = format!("block {b} @{:#x}", block.offset);
            listing_row(
                &mut s,
                &format!("k-b{b}"),
                Some(v.block_counts[b]),
                "",
                &text,
            );
        }
    }
    s.push_str("</table>\n");
    s
}

fn listing_row(s: &mut String, id: &str, count: Option<u64>, number: &str, text: &str) {
    let class = match count {
        None => "",
        Some(0) => "miss",
        Some(_) => "hit",
    };
    let count = count.map_or(String::new(), |c| c.to_string());
    let _ = writeln!(
        s,
        "<tr id=\"{id}\" class=\"{class}\"><td class=\"count\">{count}</td><td class=\"pos\"></td>\
         <td class=\"no\">{number}</td><td class=\"src\">{}</td></tr>",
        escape(text)
    );
}

/// The rows a path marks, with its positions along it (`2,3` when it runs
/// two blocks of a line), in the order it first reaches them.
fn path_keys(v: &FunctionView, p: &PathView) -> Vec<(String, String)> {
    let mut keyed: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    if v.files.is_empty() {
        for (i, b) in p.row.blocks.iter().enumerate() {
            keyed
                .entry(format!("k-b{}", b.block.index()))
                .or_default()
                .push(i + 1);
        }
    } else {
        let file_index: BTreeMap<&str, usize> = v
            .files
            .iter()
            .enumerate()
            .map(|(i, c)| (c.file.as_str(), i))
            .collect();
        for ((file, line), at) in show::path_marks(v.f, &p.row) {
            if let Some(i) = file_index.get(file.as_str()) {
                keyed.insert(format!("k-{i}-{line}"), at);
            }
        }
    }
    let mut keys: Vec<(String, Vec<usize>)> = keyed.into_iter().collect();
    keys.sort_by_key(|(_, at)| at[0]);
    keys.into_iter()
        .map(|(k, at)| {
            (
                k,
                at.iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            )
        })
        .collect()
}

fn path_json(v: &FunctionView, p: &PathView) -> serde_json::Value {
    json!({
        "id": p.id,
        "keys": path_keys(v, p),
        "blocks": p.row.blocks.iter().map(|b| b.block.index()).collect::<Vec<_>>(),
        "edges": p.edges,
    })
}

/// The hottest paths: kind, count, share and blocks.
fn path_table(v: &FunctionView, shown: &[PathView]) -> String {
    if shown.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<h2>Paths</h2>\n<table class=\"list paths\">\n<tr><th class=\"num\">path</th><th>kind</th>\
         <th class=\"num\">count</th><th class=\"num\">share</th><th>blocks (id@offset)</th><th>source</th></tr>\n",
    );
    for p in shown {
        let blocks: Vec<String> = p
            .row
            .blocks
            .iter()
            .map(|b| format!("{}@{:#x}", b.block, b.offset))
            .collect();
        let kind = match p.untested {
            true => format!(
                "{} <span class=\"untested\">untested</span>",
                escape(&p.row.kind.to_string())
            ),
            false => escape(&p.row.kind.to_string()),
        };
        let _ = writeln!(
            s,
            "<tr id=\"p-{id}\" data-path=\"{id}\"><td class=\"num\"><a href=\"#path={id}\">{}</a></td>\
             <td>{kind}</td><td class=\"num\">{}</td><td class=\"num\">{:.2}%</td><td>{}</td><td>{}</td></tr>",
            escape(&label(p)),
            p.row.count,
            p.share,
            escape(&blocks.join(" ")),
            escape(report::source_span(&p.row.blocks).trim()),
            id = escape(&p.id)
        );
    }
    s.push_str("</table>\n");
    if v.paths.len() > shown.len() {
        let _ = writeln!(
            s,
            "<p class=\"meta\">{} more paths (--top)</p>",
            v.paths.len() - shown.len()
        );
    }
    s
}
