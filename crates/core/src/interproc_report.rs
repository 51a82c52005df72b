//! `pathprof report` of a `context` or `piecewise` profile: each counted
//! interprocedural path as the blocks it runs, function by function, with
//! the calls and returns it crosses (Melski & Reps, TR 1382, 3.4): for
//! example `main: 4 5 6 | call@0x1a2 pow: 2 3 4 | ret main: 7 8`. A context
//! path's context-prefix (how the active-suffix was reached, up to its last
//! surrogate entry edge) is shown apart from its active-suffix.

use crate::error::{bail, Result};
use pathprof_graph::interproc::{FuncId, PathStep};
use pathprof_graph::Cfg;
use pathprof_profile::interproc::{InterprocPath, InterprocProfile};
use pathprof_profile::{FunctionProfile, Profile};

use crate::report::ProfileFunctions;
use serde::Serialize;

/// One counted path, rendered.
#[derive(Clone, Debug, Serialize)]
pub struct InterprocRow {
    pub number: u64,
    pub count: u64,
    /// Share of all path executions, in percent.
    pub percent: f64,
    /// The context-prefix (empty for piecewise paths and paths with none).
    pub context: String,
    pub active: String,
    /// Calls and returns the whole path crosses.
    pub calls: usize,
    /// The module indices of the functions it passes through, in order of
    /// first appearance.
    pub functions: Vec<u32>,
    /// `file:line` of the active-suffix's first and last block, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The profile's interprocedural paths, most frequent first (ties by path
/// number); with `function`, only those that pass through it.
pub fn rows(profile: &Profile, function: Option<&str>) -> Result<Vec<InterprocRow>> {
    let Some(ip) = profile.interproc.as_deref() else {
        bail!(
            "the profile has no interprocedural paths (mode {})",
            profile.mode
        );
    };
    let names = Names::new(profile, ip);
    let wanted = match function {
        Some(name) => Some(names.find(name)?),
        None => None,
    };
    let total: u64 = ip.paths.iter().map(|p| p.count).sum();
    let mut out: Vec<InterprocRow> = ip
        .paths
        .iter()
        .map(|p| names.row(p, total))
        .filter(|r| wanted.is_none_or(|w| r.functions.contains(&w)))
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.number.cmp(&b.number)));
    Ok(out)
}

/// Text: a header with the potential and executed paths, then the rows.
pub fn render(profile: &Profile, rows: &[InterprocRow], top: usize) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let Some(ip) = profile.interproc.as_deref() else {
        return s;
    };
    let executions: u64 = ip.paths.iter().map(|p| p.count).sum();
    let crossing = ip.paths.iter().filter(|p| crosses(p)).count();
    let cut = ip.sites.iter().filter(|s| s.cut.is_some()).count();
    let _ = writeln!(
        s,
        "{} paths: {} potential, {} executed ({} across a call), {} executions in {} run(s); {} of {} call sites cut",
        profile.mode,
        ip.potential,
        ip.paths.len(),
        crossing,
        executions,
        profile.runs,
        cut,
        ip.sites.len()
    );
    let text = rows.iter().map(|r| crate::report::ContextRowText {
        count: r.count,
        percent: r.percent,
        label: None,
        context: &r.context,
        active: &r.active,
        source: r.source.as_deref(),
    });
    crate::report::write_context_rows(&mut s, ip.lost, text, top);
    s
}

fn crosses(p: &InterprocPath) -> bool {
    p.path
        .steps
        .iter()
        .any(|s| matches!(s, PathStep::Call { .. } | PathStep::Return(_)))
}

/// Function names and blocks of the profile, by supergraph id.
struct Names<'a> {
    ip: &'a InterprocProfile,
    profile: &'a Profile,
    functions: ProfileFunctions<'a>,
}

impl<'a> Names<'a> {
    fn new(profile: &'a Profile, ip: &'a InterprocProfile) -> Self {
        let functions = ProfileFunctions::new(profile, ip.num_imported_funcs);
        Names {
            ip,
            profile,
            functions,
        }
    }

    fn function(&self, f: FuncId) -> Option<&'a FunctionProfile> {
        self.functions.get(f)
    }

    fn name(&self, f: FuncId) -> String {
        self.functions.name(f)
    }

    /// The module index of the function named `name` (or numbered so).
    fn find(&self, name: &str) -> Result<u32> {
        Ok(crate::report::select(self.profile, Some(name))?[0].func_index)
    }

    fn site(&self, s: pathprof_graph::interproc::CallSiteId) -> String {
        self.ip.site(s).map_or_else(
            || format!("site{}", s.index()),
            |i| format!("{:#x}", i.offset),
        )
    }

    fn row(&self, p: &InterprocPath, total: u64) -> InterprocRow {
        let (prefix, active) = p.path.steps.split_at(p.path.active_start);
        let mut functions = Vec::new();
        for step in &p.path.steps {
            if let Some(f) = step_func(step) {
                let index = self.ip.func_index(f);
                if !functions.contains(&index) {
                    functions.push(index);
                }
            }
        }
        InterprocRow {
            number: p.number,
            count: p.count,
            percent: crate::report::percent(p.count, total),
            context: self.text(prefix),
            active: self.text(active),
            calls: p
                .path
                .steps
                .iter()
                .filter(|s| matches!(s, PathStep::Call { .. } | PathStep::Return(_)))
                .count(),
            functions,
            source: self.source(active),
        }
    }

    /// `main: 4 5 | call@0x1a pow: 2 3 | ret main: 7 [end]`.
    fn text(&self, steps: &[PathStep]) -> String {
        let mut s = String::new();
        let sep = |s: &mut String| {
            if !s.is_empty() {
                s.push(' ');
            }
        };
        for step in steps {
            match *step {
                PathStep::Begin(f) => {
                    sep(&mut s);
                    s += &format!("{}:", self.name(f));
                }
                PathStep::Resume { node, .. } => {
                    // After `f:` (its Begin or its call): where it restarts.
                    sep(&mut s);
                    s += &format!("[restart] {}", node.index());
                }
                PathStep::ResumeAfterCall(site) => {
                    sep(&mut s);
                    s += &format!("[restart after call@{}]", self.site(site));
                }
                PathStep::Edge { func, edge } => {
                    let dst = self
                        .function(func)
                        .and_then(|f| f.edges.get(edge.index()))
                        .map(|e| e.dst);
                    if let Some(dst) = dst.filter(|&d| d != Cfg::EXIT) {
                        sep(&mut s);
                        s += &dst.index().to_string();
                    }
                }
                PathStep::Call { site, callee } => {
                    sep(&mut s);
                    s += &format!("| call@{} {}:", self.site(site), self.name(callee));
                }
                PathStep::Return(site) => {
                    let caller = self.ip.site(site).map(|i| i.func_index);
                    let name = caller
                        .and_then(|c| self.functions.by_module_index(c))
                        .map_or_else(|| "?".to_string(), |f| f.display_name());
                    sep(&mut s);
                    s += &format!("| ret {name}:");
                }
                PathStep::Summary(site) => {
                    sep(&mut s);
                    s += &format!("[call@{}]", self.site(site));
                }
                PathStep::End { .. } => {
                    sep(&mut s);
                    s += "[end]";
                }
                PathStep::Exit(_) => {
                    sep(&mut s);
                    s += "[exit]";
                }
            }
        }
        s
    }

    /// The source lines of the first and last blocks `steps` run.
    fn source(&self, steps: &[PathStep]) -> Option<String> {
        let lines = steps.iter().filter_map(|step| {
            let PathStep::Edge { func, edge } = *step else {
                return None;
            };
            let f = self.function(func)?;
            let dst = f.edges.get(edge.index())?.dst;
            f.blocks.get(dst.index())?.as_ref()?.source.clone()
        });
        crate::report::source_range(lines)
    }
}

fn step_func(step: &PathStep) -> Option<FuncId> {
    match *step {
        PathStep::Begin(f) | PathStep::Exit(f) => Some(f),
        PathStep::Resume { func, .. }
        | PathStep::Edge { func, .. }
        | PathStep::End { func, .. } => Some(func),
        PathStep::Call { callee, .. } => Some(callee),
        _ => None,
    }
}
