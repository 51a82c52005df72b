//! `pathprof merge` at fleet scale: adds up any number of profiles of one
//! module (the counter dumps of thousands of deployed copies, collected),
//! streamed: each worker thread reads one profile at a time and adds it
//! into its own sum ([`pathprof_profile::merge_into`]), and the workers'
//! sums are added at the end, so memory is a few profiles' worth whatever
//! the number of inputs, and the work spreads over the cores (rayon).
//!
//! Inputs are files, directories (their `*.profile` and `*.json` files, in name order) and
//! `-` (a list of paths on standard input, one per line), so a list longer
//! than a command line takes is no problem. Every profile is checked
//! against the first: one of another module or mode is named in the error.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use crate::error::{bail, Context, Result};
use pathprof_profile::{merge_into, Profile};
use rayon::prelude::*;

/// The profile files `args` name, in order: directories expanded, `-`
/// replaced by the paths `stdin` lists.
pub fn inputs(args: &[PathBuf], stdin: impl BufRead) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stdin = Some(stdin);
    for a in args {
        if a.as_os_str() == "-" {
            let Some(input) = stdin.take() else {
                bail!("`-` (paths on standard input) given twice");
            };
            for line in input.lines() {
                let line = line.context("reading the list of profiles on standard input")?;
                if !line.trim().is_empty() {
                    out.push(PathBuf::from(line.trim()));
                }
            }
        } else if a.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(a)
                .with_context(|| a.display().to_string())?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| pathprof_profile::Encoding::is_profile_name(p) && p.is_file())
                .collect();
            if found.is_empty() {
                bail!(
                    "{}: a directory with no .profile or .json profile",
                    a.display()
                );
            }
            found.sort();
            out.extend(found);
        } else {
            out.push(a.clone());
        }
    }
    if out.is_empty() {
        bail!("no profiles to merge");
    }
    Ok(out)
}

/// The sum of the profiles at `paths`; `progress` is called once per
/// profile read.
pub fn merge_files(paths: &[PathBuf], progress: impl Fn() + Sync) -> Result<Profile> {
    let first = Profile::read(&paths[0])?;
    let reference = (&paths[0], first.module_hash.clone(), first.mode);
    progress();
    let rest = &paths[1..];
    let workers = rayon::current_num_threads().max(1);
    let chunk = rest.len().div_ceil(workers).max(1);
    let sums: Vec<Option<Profile>> = rest
        .par_chunks(chunk)
        .map(|chunk| {
            let mut sum: Option<Profile> = None;
            for path in chunk {
                let p = read_checked(path, &reference)?;
                match &mut sum {
                    None => sum = Some(p),
                    Some(s) => merge_into(s, &p).with_context(|| path.display().to_string())?,
                }
                progress();
            }
            Ok(sum)
        })
        .collect::<Result<_>>()?;
    let mut total = first;
    for s in sums.into_iter().flatten() {
        merge_into(&mut total, &s)?;
    }
    Ok(total)
}

/// Reads `path`, refusing a profile of another module or mode than the
/// first one's.
fn read_checked(
    path: &Path,
    (first, hash, mode): &(&PathBuf, String, pathprof_profile::Mode),
) -> Result<Profile> {
    let p = Profile::read(path)?;
    let short = |h: &str| h[..h.len().min(12)].to_string();
    if &p.module_hash != hash {
        bail!(
            "cannot merge: {} is a profile of module {}, {} of module {}",
            path.display(),
            short(&p.module_hash),
            first.display(),
            short(hash)
        );
    }
    if p.mode != *mode {
        bail!(
            "cannot merge: {} is a {} profile, {} a {} profile",
            path.display(),
            p.mode,
            first.display(),
            mode
        );
    }
    Ok(p)
}
