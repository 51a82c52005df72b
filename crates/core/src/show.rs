//! `pathprof show`: the program's source annotated line by line with the
//! profile's counts, like `llvm-cov show`: each line that begins a block
//! with its count (the records of the LCOV export, [`crate::export`]), and
//! with `--path N` the lines one path runs marked in the order it runs
//! them. A module without DWARF lines gets its blocks with their byte
//! offsets and counts instead.
//!
//! Source files are found as the DWARF line table names them, else in each
//! `--source-dir` (by that name, then by its last component); a file not
//! found is named in a note and skipped.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::error::{bail, Result};
use pathprof_profile::{FunctionProfile, Profile};

use crate::export::{self, FileCoverage};
use crate::report::{self, HotPath};

pub struct ShowOptions {
    pub function: Option<String>,
    /// A path (its number in `function`) whose lines are marked.
    pub path: Option<u64>,
    pub source_dirs: Vec<PathBuf>,
}

/// The annotated listing.
pub fn show(profile: &Profile, opts: &ShowOptions) -> Result<String> {
    let chosen = report::select(profile, opts.function.as_deref())?;
    let marks = match (opts.path, &opts.function) {
        (Some(n), Some(f)) => path_lines(profile, f, n)?,
        (Some(_), None) => bail!("--path N names a path of --function F; give the function"),
        (None, _) => BTreeMap::new(),
    };
    let files = match export::coverage_of(chosen.iter().copied()) {
        Ok(files) => files,
        Err(_) => return Ok(blocks_listing(&chosen)),
    };
    let mut out = String::new();
    let mut missing = Vec::new();
    for c in &files {
        match find(&c.file, &opts.source_dirs) {
            Some(path) => listing(&mut out, c, &path, &marks, opts.function.is_some())?,
            None => missing.push(c.file.clone()),
        }
    }
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "note: {} source file(s) not found (give --source-dir DIR): {}",
            missing.len(),
            missing.join(", ")
        );
    }
    Ok(out)
}

/// Per (file, line) the positions (1-based) at which path `n` of `function`
/// runs a block that begins on it.
fn path_lines(
    profile: &Profile,
    function: &str,
    n: u64,
) -> Result<BTreeMap<(String, u32), Vec<usize>>> {
    let row = report::hot_rows(profile, Some(function))?
        .into_iter()
        .find(|r| r.path == n && !r.kind.is_self_loop());
    let Some(row) = row else {
        bail!("function {function} ran no path {n} (report --function {function} lists its paths)");
    };
    let f = report::select(profile, Some(function))?[0];
    Ok(path_marks(f, &row))
}

/// Per (file, line) the positions (1-based) at which `path`, a path of
/// `f`, runs a block that begins on it.
pub fn path_marks(f: &FunctionProfile, path: &HotPath) -> BTreeMap<(String, u32), Vec<usize>> {
    let mut out: BTreeMap<(String, u32), Vec<usize>> = BTreeMap::new();
    for (i, b) in path.blocks.iter().enumerate() {
        if let Some(key) = export::source_line(f, b.block.index()) {
            out.entry(key).or_default().push(i + 1);
        }
    }
    out
}

/// The source file the line table names `file`: that path, else in each of
/// `dirs` by that name, then by its last component.
pub fn find(file: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    let name = Path::new(file);
    let base = name.file_name().map(Path::new);
    std::iter::once(name.to_path_buf())
        .chain(dirs.iter().map(|d| d.join(name)))
        .chain(dirs.iter().filter_map(|d| base.map(|b| d.join(b))))
        .find(|p| p.is_file())
}

/// One line of an annotated listing.
pub struct AnnotatedLine<'t> {
    pub number: u32,
    /// The count of the line, when a block begins on it.
    pub count: Option<u64>,
    pub text: &'t str,
}

/// The lines of `text`, the contents of file `c`, with their counts; with
/// `only_counted`, from two lines before its first counted line to two
/// after its last.
pub fn annotate<'t>(c: &FileCoverage, text: &'t str, only_counted: bool) -> Vec<AnnotatedLine<'t>> {
    let counts: BTreeMap<u32, u64> = c.lines.iter().map(|l| (l.line, l.count)).collect();
    let (first, last) = match (counts.keys().next(), counts.keys().last()) {
        (Some(&a), Some(&b)) if only_counted => (a.saturating_sub(2).max(1), b.saturating_add(2)),
        _ => (1, u32::MAX),
    };
    // Skipped, not filtered: a function's page reads a few lines of what
    // may be a large file (an amalgamation).
    text.lines()
        .enumerate()
        .skip(first as usize - 1)
        .take((last - first) as usize + 1)
        .map(|(i, line)| AnnotatedLine {
            number: i as u32 + 1,
            count: counts.get(&(i as u32 + 1)).copied(),
            text: line,
        })
        .collect()
}

/// One file's lines with their counts (see [`annotate`]).
fn listing(
    out: &mut String,
    c: &FileCoverage,
    path: &Path,
    marks: &BTreeMap<(String, u32), Vec<usize>>,
    only_counted: bool,
) -> Result<()> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| crate::error::invalid!("{}: {e}", path.display()))?;
    let _ = writeln!(out, "{}:", path.display());
    for l in annotate(c, &text, only_counted) {
        let n = l.number;
        let count = l.count.map_or(String::new(), |c| c.to_string());
        let mark = marks.get(&(c.file.clone(), n)).map_or(String::new(), |at| {
            at.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(",")
        });
        let _ = writeln!(out, "{count:>12} {mark:>5} {n:>5}| {}", l.text);
    }
    out.push('\n');
    Ok(())
}

/// Without source lines: each function's blocks with offsets and counts.
fn blocks_listing(chosen: &[&FunctionProfile]) -> String {
    let mut out = String::from("(the module has no DWARF lines: blocks with their byte offsets)\n");
    for f in chosen {
        let entered = export::block_counts(f, &report::edge_counts(f));
        let _ = writeln!(out, "{}:", f.display_name());
        for (b, block) in f.blocks.iter().enumerate() {
            if let Some(block) = block {
                let _ = writeln!(
                    out,
                    "{:>12}   block {b:>4} @{:#x}",
                    entered[b], block.offset
                );
            }
        }
    }
    out
}
