//! Sparse profiles: only the functions that ran.
//!
//! A profile that lists every instrumented function grows with the module:
//! on a 95 MB module of 100,000 functions, of which 400 ran, it was 94.5 MB
//! (docs/lab/2026-11-27-large-module.md). A sparse profile keeps the
//! functions with a count and lists the others by index in
//! [`Profile::unrun`]; their structure (blocks, edges, numbering) is in the
//! instrumented module's metadata, which the module hash names, and
//! [`Profile::fill_unrun`] puts it back for the readers that need every
//! function (a coverage export's never-run lines). This is what
//! `llvm-profdata merge --sparse` does to records with zero counts.
//!
//! An intra-context profile's functions carry no counts of their own: one
//! is left out when its section lists no path of it. A context or
//! piecewise profile's paths cross functions: one is left out when no
//! counted path runs in it. Segment profiles are never sparse (their
//! segments name subpaths, not a function's blocks).

use std::collections::BTreeSet;

use crate::{FunctionData, FunctionProfile, Mode, Profile};

impl Mode {
    /// Whether the mode's profiles may be sparse (all but segments).
    pub fn may_be_sparse(self) -> bool {
        !matches!(self, Mode::Segments)
    }
}

impl Profile {
    /// Whether some instrumented functions are left out
    /// ([`Profile::unrun`]).
    pub fn is_sparse(&self) -> bool {
        !self.unrun.is_empty()
    }

    /// Whether the profile may be sparse ([`Mode::may_be_sparse`]).
    pub fn may_be_sparse(&self) -> bool {
        self.mode.may_be_sparse() && self.segments.is_none()
    }

    /// The functions with a count: a path, self loop, lost count, chord or
    /// edge of their own, or one that a path of the module-level section
    /// runs in.
    fn counted(&self) -> impl Fn(&FunctionProfile) -> bool {
        let in_section: Option<BTreeSet<u32>> = self
            .intra_context
            .as_deref()
            .map(|icp| {
                icp.functions
                    .iter()
                    .filter(|f| !f.paths.is_empty())
                    .map(|f| f.func_index)
                    .collect()
            })
            .or_else(|| self.interproc.as_deref().map(on_paths));
        move |f| match &in_section {
            Some(ran) => ran.contains(&f.func_index),
            None => !f.data.is_zero(),
        }
    }

    /// The module indices of the listed functions that counted something:
    /// the ones that ran (a function left out of a sparse profile did not).
    pub fn ran(&self) -> BTreeSet<u32> {
        let counted = self.counted();
        self.functions
            .iter()
            .filter(|f| counted(f))
            .map(|f| f.func_index)
            .collect()
    }

    /// How many listed functions counted nothing (what
    /// [`Profile::make_sparse`] would leave out).
    pub fn never_ran(&self) -> usize {
        let counted = self.counted();
        self.functions.iter().filter(|f| !counted(f)).count()
    }

    /// Leaves out the functions whose counts are all zero, listing them in
    /// [`Profile::unrun`]. Refused for a mode whose paths cross functions.
    pub fn make_sparse(&mut self) -> Result<(), String> {
        if !self.may_be_sparse() {
            return Err(format!(
                "a {} profile cannot be sparse: its segments are the module's",
                self.mode
            ));
        }
        let counted = self.counted();
        let (ran, unrun): (Vec<_>, Vec<_>) = std::mem::take(&mut self.functions)
            .into_iter()
            .partition(|f| counted(f));
        if let Some(icp) = self.intra_context.as_deref_mut() {
            icp.functions.retain(|f| !f.paths.is_empty());
        }
        self.functions = ran;
        self.unrun.extend(unrun.iter().map(|f| f.func_index));
        self.unrun.sort_unstable();
        self.version = self.needed_version();
        Ok(())
    }

    /// Puts back the functions a sparse profile left out, from `template`
    /// (the zero-count profile of the same module's metadata), so that the
    /// profile lists every instrumented function again.
    pub fn fill_unrun(&mut self, mut template: Profile) -> Result<(), String> {
        if template.module_hash != self.module_hash || template.mode != self.mode {
            return Err("the metadata is of another module or mode".into());
        }
        let wanted: std::collections::BTreeSet<u32> = self.unrun.iter().copied().collect();
        template
            .functions
            .retain(|f| wanted.contains(&f.func_index));
        if template.functions.len() != wanted.len() {
            return Err("the metadata lacks functions the profile left out".into());
        }
        self.functions.append(&mut template.functions);
        self.functions.sort_by_key(|f| f.func_index);
        self.unrun.clear();
        self.version = self.needed_version();
        Ok(())
    }

    /// Every function index the profile instruments: those it lists and
    /// those it left out, ascending.
    pub fn instrumented(&self) -> Vec<u32> {
        let mut all: Vec<u32> = self.functions.iter().map(|f| f.func_index).collect();
        all.extend_from_slice(&self.unrun);
        all.sort_unstable();
        all
    }

    /// `unrun` is ascending, distinct, and names no listed function.
    pub(crate) fn check_unrun(&self) -> Result<(), String> {
        if self.unrun.is_empty() {
            return Ok(());
        }
        if !self.may_be_sparse() {
            return Err(format!("a {} profile cannot be sparse", self.mode));
        }
        if self.unrun.windows(2).any(|w| w[0] >= w[1]) {
            return Err("the functions left out (\"unrun\") are not ascending".into());
        }
        let in_section = self
            .intra_context
            .iter()
            .flat_map(|icp| icp.functions.iter().map(|f| f.func_index));
        if let Some(f) = self
            .functions
            .iter()
            .map(|f| f.func_index)
            .chain(in_section)
            .find(|f| self.unrun.binary_search(f).is_ok())
        {
            return Err(format!("function {f} is both listed and left out as unrun"));
        }
        Ok(())
    }
}

/// The functions the counted interprocedural paths run in.
fn on_paths(ip: &crate::interproc::InterprocProfile) -> BTreeSet<u32> {
    use pathprof_graph::interproc::PathStep as S;
    let site = |s| {
        ip.site(s)
            .map(|i: &crate::interproc::SiteInfo| i.func_index)
    };
    ip.paths
        .iter()
        .flat_map(|p| &p.path.steps)
        .filter_map(|step| match *step {
            S::Begin(f) | S::Exit(f) => Some(ip.func_index(f)),
            S::Resume { func, .. } | S::Edge { func, .. } | S::End { func, .. } => {
                Some(ip.func_index(func))
            }
            S::Call { callee, .. } => Some(ip.func_index(callee)),
            S::ResumeAfterCall(s) | S::Return(s) | S::Summary(s) => site(s),
        })
        .collect()
}

impl FunctionData {
    /// Whether nothing was counted: no path, self loop, lost count,
    /// uninteresting path, chord or edge.
    pub fn is_zero(&self) -> bool {
        match self {
            FunctionData::Path { counts, ppp, .. } => {
                counts.paths.iter().all(|&(_, c)| c == 0)
                    && counts.self_loops.iter().all(|&c| c == 0)
                    && counts.lost == 0
                    && ppp.as_ref().map_or(true, |i| i.uninteresting == 0)
            }
            FunctionData::Edge {
                chord_counts,
                edge_counts,
                ..
            } => chord_counts.iter().all(|&c| c == 0) && edge_counts.iter().all(|&c| c == 0),
        }
    }
}
