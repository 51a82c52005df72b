//! Investigation aid (docs/lab/, round 11): the register and counter
//! actions a run executes, exactly, under the Ball-Larus plan of every
//! function of a module, from the run's edge counts (an edge profile, or a
//! path profile's derived ones), with the spanning trees weighted by an
//! optional prior profile. Also how often a taken conditional branch that
//! carries code runs: those go through a landing pad (`rewrite/body.rs`).
//!
//! `cargo run --release --example dynops -- MODULE RUN.json [WEIGHTS.json]`
use anyhow::{bail, Context, Result};
use pathprof_profile::Profile;
use pathprof_techniques::{ball_larus, plan::Action};
use pathprof_wasm::EdgeKind;
use std::path::Path;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !(2..=3).contains(&args.len()) {
        bail!("usage: dynops MODULE RUN.json [WEIGHTS.json]");
    }
    let module = std::fs::read(&args[0]).with_context(|| args[0].clone())?;
    let run = Profile::read(Path::new(&args[1]))?;
    let weights = args
        .get(2)
        .map(|p| Profile::read(Path::new(p)))
        .transpose()?;
    let info = pathprof_wasm::analyze(&module)?;
    let opts = ball_larus::Options::default();
    let mut n = Tally::default();
    for f in info.functions.iter().flatten() {
        let Some(fp) = run.function(f.func_index) else {
            continue;
        };
        let freq = pathprof::report::edge_counts(fp);
        let w = weights
            .as_ref()
            .and_then(|w| w.function(f.func_index))
            .map(pathprof::report::edge_counts);
        let (plan, _) = ball_larus::plan_only(&f.cfg, w.as_deref(), &opts)?;
        for (e, actions) in plan.edges.iter().enumerate() {
            let c = u128::from(freq[e]);
            if !actions.is_empty() && matches!(f.edge_kinds[e], EdgeKind::BrIf | EdgeKind::BrTable)
            {
                n.padded += c;
            }
            for a in actions {
                match a {
                    Action::Set { .. } => n.set += c,
                    Action::Add { .. } => n.add += c,
                    Action::CountPath { .. } | Action::CountPathConst { .. } => n.paths += c,
                    _ => {}
                }
            }
        }
    }
    let per = |x: u128| x as f64 / n.paths.max(1) as f64;
    println!(
        "paths {}  per path: set {:.3} add {:.3} padded {:.3}",
        n.paths,
        per(n.set),
        per(n.add),
        per(n.padded)
    );
    Ok(())
}

#[derive(Default)]
struct Tally {
    paths: u128,
    set: u128,
    add: u128,
    padded: u128,
}
