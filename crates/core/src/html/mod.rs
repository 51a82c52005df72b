//! `pathprof html`: a profile as a static report of HTML pages that need
//! no server, no network and nothing outside themselves (style, script and
//! SVG inline), to open from disk or attach to a CI run.
//!
//! - `index.html`: the functions by flow, the number of Ball-Larus paths
//!   that ran through each (section 4 of Ball & Larus: every path starts at
//!   the entry or after a backedge), with their coverage ([`index`]);
//! - `f{N}.html` per function that ran (N its module index): the source
//!   annotated as `pathprof show` annotates it, the CFG as SVG and the
//!   hottest paths, one of which is selected: from the URL fragment
//!   (`f3.html#path=12`), else the hottest ([`function`], [`svg`]);
//! - `paths.html` for context, piecewise (Melski & Reps), segment
//!   (Vaswani) and intra-context profiles: their paths, which are not one
//!   function's.
//!
//! Path, edge, PPP and residual profiles get every page (a residual
//! build's untested paths are marked); the others their index and path
//! table, with function pages from the edge counts their functions carry.
//!
//! The report is rendered in memory ([`render`]) and written into a
//! temporary sibling of its folder, renamed into place at the end
//! ([`write`]): a failure leaves no half-written report.

mod assets;
mod function;
mod index;
mod model;
mod svg;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use crate::error::{bail, invalid, Result};
use pathprof_profile::Profile;

pub struct HtmlOptions {
    /// Where to look for the source files the line table names.
    pub source_dirs: Vec<PathBuf>,
    /// Paths listed (and selectable) per function, and rows of the
    /// interprocedural path table.
    pub top: usize,
}

/// The pages of a report, by file name.
pub struct Report {
    pub pages: Vec<(String, String)>,
    /// Source files named by the line table and not found.
    pub missing_sources: Vec<String>,
}

/// The report of `profile`.
pub fn render(profile: &Profile, opts: &HtmlOptions) -> Result<Report> {
    let paths_page = index::paths_page(profile, opts.top)?;
    let through = paths_page.as_ref().map(|p| p.through.clone());
    let views = model::functions(profile, &through.unwrap_or_default())?;
    let mut pages = vec![(
        "index.html".to_string(),
        index::index(profile, &views, paths_page.is_some()),
    )];
    if let Some(page) = paths_page {
        pages.push((index::PATHS_PAGE.to_string(), page.html));
    }
    let mut missing_sources: Vec<String> = Vec::new();
    let mode = profile.mode.to_string();
    let mut sources = function::Sources::default();
    for v in views.iter().filter(|v| v.has_page) {
        let page = function::page(v, &mode, opts, &mut sources);
        for file in page.missing {
            if !missing_sources.contains(&file) {
                missing_sources.push(file);
            }
        }
        pages.push((function::file_name(v.f.func_index), page.html));
    }
    Ok(Report {
        pages,
        missing_sources,
    })
}

/// Refuses an existing `dir` unless `force`, and a `dir` whose parent is
/// not a folder, before anything is computed.
pub fn check_output(dir: &Path, force: bool) -> Result<()> {
    if !force && std::fs::symlink_metadata(dir).is_ok() {
        bail!(
            "{}: already exists (give --force to replace it)",
            dir.display()
        );
    }
    if !parent_of(dir).is_dir() {
        bail!("{}: its parent is not a folder", dir.display());
    }
    Ok(())
}

/// The folder `dir` is in.
fn parent_of(dir: &Path) -> PathBuf {
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `report` as the folder `dir`, replacing it when `force`: into a
/// temporary sibling first, renamed into place once every page is written.
pub fn write(report: &Report, dir: &Path, force: bool) -> Result<()> {
    check_output(dir, force)?;
    let name = dir
        .file_name()
        .ok_or_else(|| invalid!("{}: not a folder name", dir.display()))?
        .to_string_lossy();
    let parent = parent_of(dir);
    let pid = std::process::id();
    let tmp = parent.join(format!(".{name}.tmp-{pid}"));
    let result = write_pages(report, &tmp, dir).and_then(|()| replace(&tmp, dir, &parent, &name));
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

/// Writes the pages into `tmp`; errors name `dir`, the folder asked for.
fn write_pages(report: &Report, tmp: &Path, dir: &Path) -> Result<()> {
    let io = |p: &Path, e: std::io::Error| invalid!("{}: {e}", p.display());
    std::fs::create_dir(tmp).map_err(|e| io(dir, e))?;
    for (file, html) in &report.pages {
        let path = tmp.join(file);
        std::fs::write(&path, html).map_err(|e| io(&path, e))?;
    }
    Ok(())
}

/// Moves `tmp` to `dir`; an old `dir` is moved aside first and removed
/// after, so `dir` is at every moment the old report or the new one.
fn replace(tmp: &Path, dir: &Path, parent: &Path, name: &str) -> Result<()> {
    let io = |p: &Path, e: std::io::Error| invalid!("{}: {e}", p.display());
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    let had_old = std::fs::symlink_metadata(dir).is_ok();
    if had_old {
        std::fs::rename(dir, &old).map_err(|e| io(dir, e))?;
    }
    if let Err(e) = std::fs::rename(tmp, dir) {
        if had_old {
            let _ = std::fs::rename(&old, dir);
        }
        return Err(io(dir, e));
    }
    if had_old {
        let removed = match std::fs::symlink_metadata(&old) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&old),
            _ => std::fs::remove_file(&old),
        };
        removed.map_err(|e| io(&old, e))?;
    }
    Ok(())
}
