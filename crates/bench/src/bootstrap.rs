//! How far a suite figure could move with other runs: a percentile
//! bootstrap (Efron and Tibshirani, "An Introduction to the Bootstrap",
//! 1993, chapter 13) over the harness's rounds.
//!
//! A suite figure (the geometric mean of the per-program overheads, or the
//! ratio of two of them) comes from five or so runs per program and mode,
//! and one slow run of the uninstrumented program moves every overhead of
//! that program. A target missed or met by a point or two says little
//! unless the spread of the figure is known. Each draw resamples the rounds
//! of every program with replacement, the same rounds for all of its modes
//! (a round runs every mode once, back to back, so a burst of load from
//! other work hits the modes of one round alike), and computes the figure
//! on the resampled runs as the tables do. The interval is the 2.5th and
//! 97.5th percentiles of the draws. The generator is seeded, so a results
//! file always renders the same interval.

use crate::results::{ModeResult, ProgramResult, Results};

/// Draws per interval: the percentiles of 2,000 draws move by well under a
/// tenth of a point between seeds.
pub const DRAWS: usize = 2000;
const SEED: u64 = 0x7061_7468_7072_6f66; // "pathprof"

/// The 95 % percentile interval of `figure` over [`DRAWS`] resamplings of
/// `r`'s rounds; `None` if `figure` has no value on some resampling (or on
/// `r` itself).
pub fn interval(r: &Results, figure: impl Fn(&Results) -> Option<f64>) -> Option<(f64, f64)> {
    figure(r)?;
    let mut rng = fastrand::Rng::with_seed(SEED);
    let mut draws = Vec::with_capacity(DRAWS);
    for _ in 0..DRAWS {
        draws.push(figure(&resample(r, &mut rng))?);
    }
    draws.sort_by(f64::total_cmp);
    Some((percentile(&draws, 0.025), percentile(&draws, 0.975)))
}

/// The `q` quantile of sorted `xs` (nearest rank, rounding down).
fn percentile(xs: &[f64], q: f64) -> f64 {
    let rank = ((xs.len() - 1) as f64 * q).floor() as usize;
    xs[rank]
}

/// `r` with each program's runs drawn again from its own rounds: the
/// timing samples only, which are all a suite overhead reads.
fn resample(r: &Results, rng: &mut fastrand::Rng) -> Results {
    let programs = r
        .programs
        .iter()
        .map(|p| {
            let rounds = p.modes.iter().map(|m| m.execute_s.len()).max().unwrap_or(0);
            let picks: Vec<usize> = (0..rounds).map(|_| rng.usize(0..rounds)).collect();
            ProgramResult {
                name: p.name.clone(),
                modes: p.modes.iter().map(|m| resample_mode(m, &picks)).collect(),
                ..ProgramResult::default()
            }
        })
        .collect();
    Results {
        runs: r.runs,
        modes: r.modes.clone(),
        programs,
        ..Results::default()
    }
}

/// One mode's samples at the rounds `picks`. A mode with fewer samples than
/// rounds (a run that failed) has lost the pairing, and its own samples
/// are taken by the picks modulo its count.
fn resample_mode(m: &ModeResult, picks: &[usize]) -> ModeResult {
    let take = |xs: &[f64]| -> Vec<f64> {
        if xs.is_empty() {
            return Vec::new();
        }
        picks.iter().map(|&i| xs[i % xs.len()]).collect()
    };
    ModeResult {
        mode: m.mode.clone(),
        execute_s: take(&m.execute_s),
        execute_cpu_s: take(&m.execute_cpu_s),
        compile_s: take(&m.compile_s),
        instrument_s: take(&m.instrument_s),
        ..ModeResult::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::suite_geomean;

    fn program(name: &str, modes: &[(&str, &[f64])]) -> ProgramResult {
        ProgramResult {
            name: name.into(),
            modes: modes
                .iter()
                .map(|&(mode, t)| ModeResult {
                    mode: mode.into(),
                    execute_s: t.to_vec(),
                    execute_cpu_s: t.to_vec(),
                    ..ModeResult::default()
                })
                .collect(),
            ..ProgramResult::default()
        }
    }

    fn results(programs: Vec<ProgramResult>) -> Results {
        Results {
            runs: 3,
            modes: vec!["none".into(), "path".into()],
            programs,
            ..Results::default()
        }
    }

    fn path_geomean(r: &Results) -> Option<f64> {
        suite_geomean(r, |p| p.ratio("path"))
    }

    #[test]
    fn runs_that_agree_leave_no_doubt() {
        let r = results(vec![program(
            "a",
            &[("none", &[2.0, 2.0, 2.0]), ("path", &[2.5, 2.5, 2.5])],
        )]);
        assert_eq!(interval(&r, path_geomean), Some((1.25, 1.25)));
    }

    /// Worked by hand: `none` is 1 in every round and `path` is 1.1, 1.2,
    /// 1.3. A draw's median is 1.1 when two or three of its three rounds are
    /// the first: probability 7/27 (0.26), and 1.3 likewise. So the 2.5th
    /// percentile of 2,000 draws (the 50th smallest) is 1.1 and the 97.5th
    /// (the 51st largest) is 1.3, unless one of them comes up in fewer than
    /// about 50 draws where 519 are expected; a fixed seed settles it once
    /// and for all.
    #[test]
    fn the_interval_spans_what_the_rounds_allow() {
        let r = results(vec![program(
            "a",
            &[("none", &[1.0, 1.0, 1.0]), ("path", &[1.2, 1.3, 1.1])],
        )]);
        let (lo, hi) = interval(&r, path_geomean).unwrap();
        assert!(
            (lo - 1.1).abs() < 1e-12 && (hi - 1.3).abs() < 1e-12,
            "{lo} {hi}"
        );
    }

    /// Pairing: when the slow rounds of `none` are those of `path` too (a
    /// burst of load), the ratio is the same in every round, and resampling
    /// rounds together finds no spread; resampling the modes apart would.
    #[test]
    fn modes_of_one_round_are_drawn_together() {
        let r = results(vec![program(
            "a",
            &[("none", &[1.0, 2.0, 4.0]), ("path", &[1.5, 3.0, 6.0])],
        )]);
        let (lo, hi) = interval(&r, path_geomean).unwrap();
        assert!(
            (lo - 1.5).abs() < 1e-12 && (hi - 1.5).abs() < 1e-12,
            "{lo} {hi}"
        );
    }

    #[test]
    fn a_figure_without_a_value_has_no_interval() {
        let r = results(vec![program("a", &[("none", &[1.0, 1.0, 1.0])])]);
        assert_eq!(interval(&r, path_geomean), None);
    }

    #[test]
    fn the_interval_is_the_same_every_time() {
        let r = results(vec![
            program(
                "a",
                &[("none", &[1.0, 1.1, 0.9]), ("path", &[1.2, 1.4, 1.1])],
            ),
            program(
                "b",
                &[("none", &[2.0, 2.2, 2.1]), ("path", &[2.6, 2.4, 2.5])],
            ),
        ]);
        let first = interval(&r, path_geomean).unwrap();
        assert_eq!(interval(&r, path_geomean), Some(first));
        let point = path_geomean(&r).unwrap();
        assert!(first.0 <= point && point <= first.1, "{first:?} {point}");
    }
}
