//! The report's index: the functions by flow (path executions), most
//! first, each with its share of the profile's flow and a bar of its
//! coverage (the share of its lines, or without DWARF lines of its blocks,
//! that ran). Profiles whose paths cross functions (context, piecewise,
//! segments) or carry loop contexts (intra-context) also get a page of
//! those paths, linked from here.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::error::Result;
use pathprof_profile::{Mode, Profile};

use super::assets::{self, escape};
use super::function::file_name;
use super::model::FunctionView;
use crate::{interproc_report, intra_context, report, segments_report};

/// The page of the paths that are not one function's.
pub(crate) const PATHS_PAGE: &str = "paths.html";

pub(crate) fn index(profile: &Profile, views: &[FunctionView], has_paths_page: bool) -> String {
    let total: u64 = views.iter().map(|v| v.flow).sum();
    let mut body = format!(
        "<h1>pathprof report</h1>\n<p class=\"meta\">{} profile of module {} &middot; {} run(s) &middot; \
         {} functions &middot; {total} path executions</p>\n",
        profile.mode,
        escape(&profile.module_hash.chars().take(12).collect::<String>()),
        profile.runs,
        views.len()
    );
    if profile.abrupt_runs > 0 {
        let _ = writeln!(
            body,
            "<p class=\"note\">{} run(s) ended abruptly; paths in flight then are not counted</p>",
            profile.abrupt_runs
        );
    }
    if has_paths_page {
        let _ = writeln!(
            body,
            "<p><a href=\"{PATHS_PAGE}\">The {} paths of the profile</a></p>",
            profile.mode
        );
    }
    // A residual build's profile: how many paths of each no test ran.
    let residual = views.iter().any(|v| v.untested() > 0);
    let _ = writeln!(
        body,
        "<table class=\"list functions\">\n<tr><th class=\"num\">#</th><th>function</th>\
         <th class=\"num\">flow</th><th class=\"num\">share</th><th class=\"num\">paths</th>\
         {}<th>coverage</th></tr>",
        if residual {
            "<th class=\"num\">untested</th>"
        } else {
            ""
        }
    );
    for (rank, v) in views.iter().enumerate() {
        function_row(&mut body, rank + 1, v, total, residual);
    }
    body.push_str("</table>\n");
    assets::page("pathprof report", &body, None)
}

fn function_row(s: &mut String, rank: usize, v: &FunctionView, total: u64, residual: bool) {
    let name = match v.flow {
        0 => format!(
            "<span class=\"notrun\">{} (did not run)</span>",
            escape(&v.name)
        ),
        _ => format!(
            "<a href=\"{}\">{}</a>",
            file_name(v.f.func_index),
            escape(&v.name)
        ),
    };
    let (run, all, what) = v.coverage();
    let pct = report::percent(run as u64, all as u64);
    let untested = match residual {
        true => format!(
            "<td class=\"num untested\" data-untested=\"{0}\">{0}</td>",
            v.untested()
        ),
        false => String::new(),
    };
    let _ = writeln!(
        s,
        "<tr data-function=\"{}\" data-flow=\"{}\"><td class=\"num\">{rank}</td><td>{name}</td>\
         <td class=\"num\">{}</td><td class=\"num\">{:.2}%</td><td class=\"num\">{}</td>{untested}\
         <td><span class=\"bar\" title=\"{run} of {all} {what}\"><span style=\"width:{pct:.1}%\"></span></span> \
         {pct:.0}% of {all} {what}</td></tr>",
        escape(&v.name),
        v.flow,
        v.flow,
        report::percent(v.flow, total),
        v.paths.len()
    );
}

/// The page of a profile's paths that are not one function's.
pub(crate) struct PathsPage {
    pub html: String,
    /// Per function (module index), the executions of the paths that pass
    /// through it.
    pub through: BTreeMap<u32, u64>,
}

/// The page of a profile's interprocedural or loop-context paths, the
/// `top` most frequent; `None` for the modes whose paths are one
/// function's.
pub(crate) fn paths_page(profile: &Profile, top: usize) -> Result<Option<PathsPage>> {
    let mut through = BTreeMap::new();
    let mut add = |functions: &[u32], count: u64| {
        for &f in functions {
            *through.entry(f).or_insert(0) += count;
        }
    };
    let (heads, rows): (&[&str], Vec<Vec<String>>) = match profile.mode {
        Mode::Context | Mode::Piecewise => {
            let rows = interproc_report::rows(profile, None)?;
            rows.iter().for_each(|r| add(&r.functions, r.count));
            let cells = rows.iter().map(|r| {
                vec![
                    r.number.to_string(),
                    r.count.to_string(),
                    format!("{:.2}%", r.percent),
                    r.context.clone(),
                    r.active.clone(),
                    r.source.clone().unwrap_or_default(),
                ]
            });
            (
                &[
                    "path",
                    "count",
                    "share",
                    "context-prefix",
                    "active-suffix",
                    "source",
                ],
                cells.collect(),
            )
        }
        Mode::Segments => {
            let rows = segments_report::rows(profile, None)?;
            rows.iter().for_each(|r| add(&r.functions, r.count));
            let cells = rows.iter().map(|r| {
                vec![
                    r.count.to_string(),
                    format!("{:.2}%", r.percent),
                    r.segment.clone(),
                    r.source.clone().unwrap_or_default(),
                ]
            });
            (&["count", "share", "segment", "source"], cells.collect())
        }
        Mode::IntraContext => {
            let rows = intra_context::rows(profile, None)?;
            rows.iter().for_each(|r| add(&[r.func_index], r.count));
            let cells = rows.iter().map(|r| {
                vec![
                    r.count.to_string(),
                    format!("{:.2}%", r.percent),
                    r.function.clone(),
                    r.context.clone(),
                    r.active.clone(),
                    r.source.clone().unwrap_or_default(),
                ]
            });
            (
                &["count", "share", "function", "context", "active", "source"],
                cells.collect(),
            )
        }
        _ => return Ok(None),
    };
    Ok(Some(PathsPage {
        html: table_page(profile, heads, &rows, top),
        through,
    }))
}

fn table_page(profile: &Profile, heads: &[&str], rows: &[Vec<String>], top: usize) -> String {
    let mut body = format!(
        "<p><a href=\"index.html\">&larr; all functions</a></p>\n<h1>The {} paths</h1>\n\
         <p class=\"meta\">{} distinct paths, most frequent first</p>\n<table class=\"list interproc\">\n<tr>",
        profile.mode,
        rows.len()
    );
    for h in heads {
        let _ = write!(body, "<th>{h}</th>");
    }
    body.push_str("</tr>\n");
    for row in rows.iter().take(top) {
        body.push_str("<tr>");
        for cell in row {
            let _ = write!(body, "<td>{}</td>", escape(cell));
        }
        body.push_str("</tr>\n");
    }
    body.push_str("</table>\n");
    if rows.len() > top {
        let _ = writeln!(
            body,
            "<p class=\"meta\">{} more (--top)</p>",
            rows.len() - top
        );
    }
    assets::page(&format!("{} paths", profile.mode), &body, None)
}
