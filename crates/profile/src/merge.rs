//! `pathprof merge`: sums profiles of the same module and mode.

use std::collections::BTreeMap;

use crate::{FunctionData, FunctionProfile, Profile, ProfileError};

/// Sums `profiles` (at least one). Profiles of different modules, modes, or
/// whose numbering of a function differs are refused.
pub fn merge(profiles: &[Profile]) -> Result<Profile, ProfileError> {
    let (first, rest) = profiles
        .split_first()
        .ok_or_else(|| ProfileError::Merge("no profiles".into()))?;
    let mut out = first.clone();
    for p in rest {
        merge_into(&mut out, p)?;
    }
    Ok(out)
}

/// Adds `p` into `out`, in place (merging many profiles then takes the
/// memory of one, whatever their number).
pub fn merge_into(out: &mut Profile, p: &Profile) -> Result<(), ProfileError> {
    if p.module_hash != out.module_hash {
        return Err(ProfileError::Merge(
            "the profiles are of different modules".into(),
        ));
    }
    if p.mode != out.mode {
        return Err(ProfileError::Merge(format!(
            "profiles of different modes ({} and {})",
            out.mode, p.mode
        )));
    }
    if p.instrumented() != out.instrumented() {
        return Err(ProfileError::Merge(
            "the profiles instrument different functions".into(),
        ));
    }
    merge_functions(out, p)?;
    match (&mut out.interproc, &p.interproc) {
        (None, None) => {}
        (Some(a), Some(b)) => a.add(b).map_err(ProfileError::Merge)?,
        _ => {
            return Err(ProfileError::Merge(
                "one profile has interprocedural paths, the other not".into(),
            ))
        }
    }
    match (&mut out.intra_context, &p.intra_context) {
        (None, None) => {}
        (Some(a), Some(b)) => a.add(b).map_err(ProfileError::Merge)?,
        _ => {
            return Err(ProfileError::Merge(
                "one profile has intra-context paths, the other not".into(),
            ))
        }
    }
    match (&mut out.segments, &p.segments) {
        (None, None) => {}
        (Some(a), Some(b)) => a.add(b).map_err(ProfileError::Merge)?,
        _ => {
            return Err(ProfileError::Merge(
                "one profile has path segments, the other not".into(),
            ))
        }
    }
    out.runs = out
        .runs
        .checked_add(p.runs)
        .ok_or_else(|| ProfileError::Merge("too many runs".into()))?;
    out.abrupt_runs += p.abrupt_runs.min(p.runs);
    Ok(())
}

/// Adds `p`'s functions into `out`'s, joined by function index: a function
/// one of them left out (sparse profiles) is taken from the other.
fn merge_functions(out: &mut Profile, p: &Profile) -> Result<(), ProfileError> {
    if p.unrun.is_empty() && out.unrun.is_empty() {
        // Both list every function, in the same order.
        for (a, b) in out.functions.iter_mut().zip(&p.functions) {
            merge_function(a, b)?;
        }
        return Ok(());
    }
    let mut listed: BTreeMap<u32, FunctionProfile> = std::mem::take(&mut out.functions)
        .into_iter()
        .map(|f| (f.func_index, f))
        .collect();
    for b in &p.functions {
        match listed.get_mut(&b.func_index) {
            Some(a) => merge_function(a, b)?,
            None => {
                listed.insert(b.func_index, b.clone());
            }
        }
    }
    out.unrun
        .retain(|i| !listed.contains_key(i) && p.unrun.binary_search(i).is_ok());
    out.functions = listed.into_values().collect();
    out.version = out.needed_version();
    Ok(())
}

fn merge_function(a: &mut FunctionProfile, b: &FunctionProfile) -> Result<(), ProfileError> {
    let name = a.display_name();
    let mismatch = || ProfileError::Merge(format!("function {name} was instrumented differently"));
    let overflow = || ProfileError::Merge(format!("function {name}: a count passes 2^64"));
    if a.func_index != b.func_index || a.edges != b.edges {
        return Err(mismatch());
    }
    match (&mut a.data, &b.data) {
        (
            FunctionData::Path {
                numbered: na,
                counts: ca,
                ppp: pa,
            },
            FunctionData::Path {
                numbered: nb,
                counts: cb,
                ppp: pb,
            },
        ) => {
            if na != nb {
                // Same CFG (the edges matched), so another truncation.
                return Err(ProfileError::Merge(format!(
                    "function {name} was numbered differently (another --truncate-above?)"
                )));
            }
            match (pa, pb) {
                (None, None) => {}
                (Some(pa), Some(pb)) => {
                    let uninteresting = pa
                        .uninteresting
                        .checked_add(pb.uninteresting)
                        .ok_or_else(overflow)?;
                    let mut same = pb.clone();
                    same.uninteresting = pa.uninteresting;
                    if *pa != same {
                        return Err(ProfileError::Merge(format!(
                            "function {name}: the profiles have different interesting paths"
                        )));
                    }
                    pa.uninteresting = uninteresting;
                }
                _ => return Err(mismatch()),
            }
            let mut sum: BTreeMap<u64, u64> = ca.paths.iter().copied().collect();
            for &(p, c) in &cb.paths {
                let slot = sum.entry(p).or_insert(0);
                *slot = slot.checked_add(c).ok_or_else(overflow)?;
            }
            ca.paths = sum.into_iter().collect();
            add(&mut ca.self_loops, &cb.self_loops).ok_or_else(overflow)?;
            ca.lost = ca.lost.checked_add(cb.lost).ok_or_else(overflow)?;
        }
        (
            FunctionData::Edge {
                chords: ka,
                chord_counts: cca,
                edge_counts: eca,
            },
            FunctionData::Edge {
                chords: kb,
                chord_counts: ccb,
                edge_counts: ecb,
            },
        ) => {
            if ka != kb {
                return Err(mismatch());
            }
            add(cca, ccb).ok_or_else(overflow)?;
            add(eca, ecb).ok_or_else(overflow)?;
        }
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// Adds `b` into `a` element-wise; `None` if a sum passes 2^64 (counts
/// never wrap silently).
fn add(a: &mut Vec<u64>, b: &[u64]) -> Option<()> {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.checked_add(*y)?;
    }
    Some(())
}

/// Adds the counted items `theirs` to `mine`: items of equal `key` add
/// their counts (`what` names them when a sum overflows), the others are
/// kept; the result is in key order.
pub(crate) fn add_counted<T: Clone, K: Ord>(
    mine: &mut Vec<T>,
    theirs: &[T],
    key: impl Fn(&T) -> K,
    count: impl Fn(&mut T) -> &mut u64,
    what: &str,
) -> Result<(), String> {
    let mut all: BTreeMap<K, T> = std::mem::take(mine)
        .into_iter()
        .map(|t| (key(&t), t))
        .collect();
    for t in theirs {
        let mut add = t.clone();
        let n = *count(&mut add);
        let e = all.entry(key(t)).or_insert_with(|| {
            *count(&mut add) = 0;
            add
        });
        let c = count(e);
        *c = c
            .checked_add(n)
            .ok_or_else(|| format!("a {what} count overflows"))?;
    }
    *mine = all.into_values().collect();
    Ok(())
}
