//! A branch direction predictor *model* (the thesis' baseline, Table 5.3),
//! fed by the same branch stream as the profiler, so that branch
//! mispredictions can be the metric accumulated per path (5.3).
//!
//! Components, as in SimpleScalar's `bpred`: a bimodal table of 2-bit
//! counters indexed by the branch address; gshare, 2-bit counters indexed by
//! the address xor the global history; and the combined predictor, whose
//! 2-bit meta counters (indexed by address) choose gshare at 2 and above and
//! move towards whichever component was right when the two disagree. Table
//! 5.3's default: 8K-entry bimodal, 8K-entry gshare with 12 bits of history,
//! 1K meta entries.
//!
//! Departures from the thesis (this is a model, not SimpleScalar):
//! - Only conditional branches are predicted. The thesis' BTB and return
//!   address stack are not modelled, so calls, returns, jumps and switches
//!   never count a misprediction.
//! - Counters start at 1 (weakly not taken; meta: weakly bimodal).
//! - WebAssembly addresses are byte offsets, so no low bits are dropped
//!   before indexing.

use crate::error::SimError;
use serde::{Deserialize, Serialize};

/// The largest predictor table accepted, in counters.
pub const MAX_ENTRIES: u32 = 1 << 24;

/// A direction predictor's shape.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PredictorConfig {
    Bimodal {
        entries: u32,
    },
    Gshare {
        entries: u32,
        history_bits: u32,
    },
    Combined {
        bimodal_entries: u32,
        gshare_entries: u32,
        history_bits: u32,
        meta_entries: u32,
    },
}

impl Default for PredictorConfig {
    /// Table 5.3: 8K bimodal / 8K gshare (12-bit history), 1K meta.
    fn default() -> PredictorConfig {
        PredictorConfig::Combined {
            bimodal_entries: 8192,
            gshare_entries: 8192,
            history_bits: 12,
            meta_entries: 1024,
        }
    }
}

/// Predictions and mispredictions so far.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PredictorStats {
    pub branches: u64,
    pub mispredictions: u64,
}

/// A table of 2-bit saturating counters.
#[derive(Clone, Debug)]
struct Counters(Box<[u8]>);

impl Counters {
    fn new(what: &'static str, entries: u32) -> Result<Counters, SimError> {
        if !entries.is_power_of_two() || entries > MAX_ENTRIES {
            return Err(SimError::Config {
                what,
                why: format!("{entries} entries: not a power of two up to 2^24"),
            });
        }
        Ok(Counters(vec![1; entries as usize].into_boxed_slice()))
    }

    fn slot(&self, index: u32) -> usize {
        index as usize & (self.0.len() - 1)
    }

    fn predict(&self, index: u32) -> bool {
        self.0[self.slot(index)] >= 2
    }

    fn train(&mut self, index: u32, up: bool) {
        let c = &mut self.0[self.slot(index)];
        *c = if up {
            (*c + 1).min(3)
        } else {
            c.saturating_sub(1)
        };
    }
}

#[derive(Clone, Debug)]
struct Gshare {
    counters: Counters,
    history: u32,
    mask: u32,
}

impl Gshare {
    fn index(&self, address: u32) -> u32 {
        address ^ self.history
    }

    fn train(&mut self, address: u32, taken: bool) {
        self.counters.train(self.index(address), taken);
        self.history = ((self.history << 1) | u32::from(taken)) & self.mask;
    }
}

#[derive(Clone, Debug)]
enum Model {
    Bimodal(Counters),
    Gshare(Gshare),
    Combined {
        bimodal: Counters,
        gshare: Gshare,
        meta: Counters,
    },
}

/// A direction predictor and its counts.
#[derive(Clone, Debug)]
pub struct Predictor {
    model: Model,
    stats: PredictorStats,
}

fn gshare(entries: u32, history_bits: u32) -> Result<Gshare, SimError> {
    if history_bits > 31 {
        return Err(SimError::Config {
            what: "gshare",
            why: format!("{history_bits} history bits: at most 31"),
        });
    }
    Ok(Gshare {
        counters: Counters::new("gshare", entries)?,
        history: 0,
        mask: (1u32 << history_bits) - 1,
    })
}

impl Predictor {
    pub fn new(config: PredictorConfig) -> Result<Predictor, SimError> {
        let model = match config {
            PredictorConfig::Bimodal { entries } => {
                Model::Bimodal(Counters::new("bimodal", entries)?)
            }
            PredictorConfig::Gshare {
                entries,
                history_bits,
            } => Model::Gshare(gshare(entries, history_bits)?),
            PredictorConfig::Combined {
                bimodal_entries,
                gshare_entries,
                history_bits,
                meta_entries,
            } => Model::Combined {
                bimodal: Counters::new("bimodal", bimodal_entries)?,
                gshare: gshare(gshare_entries, history_bits)?,
                meta: Counters::new("meta predictor", meta_entries)?,
            },
        };
        Ok(Predictor {
            model,
            stats: PredictorStats::default(),
        })
    }

    pub fn stats(&self) -> PredictorStats {
        self.stats
    }

    /// Predicts the conditional branch at `address`, then trains on its
    /// outcome. Returns whether the prediction was wrong.
    pub fn mispredicts(&mut self, address: u32, taken: bool) -> bool {
        let predicted = match &mut self.model {
            Model::Bimodal(c) => {
                let p = c.predict(address);
                c.train(address, taken);
                p
            }
            Model::Gshare(g) => {
                let p = g.counters.predict(g.index(address));
                g.train(address, taken);
                p
            }
            Model::Combined {
                bimodal,
                gshare,
                meta,
            } => {
                let b = bimodal.predict(address);
                let g = gshare.counters.predict(gshare.index(address));
                let p = if meta.predict(address) { g } else { b };
                if b != g {
                    meta.train(address, g == taken);
                }
                bimodal.train(address, taken);
                gshare.train(address, taken);
                p
            }
        };
        let wrong = predicted != taken;
        self.stats.branches += 1;
        self.stats.mispredictions += u64::from(wrong);
        wrong
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn misses(config: PredictorConfig, outcomes: &[bool]) -> Vec<bool> {
        let mut p = Predictor::new(config).expect("valid");
        outcomes.iter().map(|&t| p.mispredicts(0, t)).collect()
    }

    const ALTERNATING: [bool; 6] = [true, false, true, false, true, false];

    #[test]
    fn bimodal_counts_up_and_down() {
        // Counter 1: T predicted N (miss) -> 2; T hit -> 3; T hit; N
        // predicted T (miss) -> 2; T hit -> 3.
        let got = misses(
            PredictorConfig::Bimodal { entries: 4 },
            &[true, true, true, false, true],
        );
        assert_eq!(got, vec![true, false, false, true, false]);
        // Alternating outcomes keep the counter between 1 and 2: all miss.
        let got = misses(PredictorConfig::Bimodal { entries: 4 }, &ALTERNATING);
        assert_eq!(got, vec![true; 6]);
    }

    #[test]
    fn gshare_learns_alternation_from_history() {
        // 2 history bits. T at index 0^0 (c=1: miss), h=1; N at 0^1 (c=1:
        // hit), h=2; T at 2 (c=1: miss), h=1; N at 1 (c=0: hit), h=2; T at 2
        // (c=2: hit); N at 1 (hit).
        let g = PredictorConfig::Gshare {
            entries: 16,
            history_bits: 2,
        };
        assert_eq!(
            misses(g, &ALTERNATING),
            vec![true, false, true, false, false, false]
        );
    }

    #[test]
    fn combined_moves_to_gshare_where_it_is_right() {
        // meta 1 (bimodal). b1: both predict N, miss. b2: bimodal T (wrong),
        // gshare N (right): miss, meta -> 2. b3: both N, gshare chosen: miss.
        // b4..b6: gshare right and chosen: hits.
        let c = PredictorConfig::Combined {
            bimodal_entries: 16,
            gshare_entries: 16,
            history_bits: 2,
            meta_entries: 4,
        };
        let got = misses(c, &ALTERNATING);
        assert_eq!(got, vec![true, true, true, false, false, false]);
    }

    #[test]
    fn sizes_must_be_powers_of_two() {
        assert!(Predictor::new(PredictorConfig::Bimodal { entries: 6 }).is_err());
        assert!(Predictor::new(PredictorConfig::Bimodal { entries: 1 << 25 }).is_err());
        let g = PredictorConfig::Gshare {
            entries: 8,
            history_bits: 32,
        };
        assert!(Predictor::new(g).is_err());
        assert!(Predictor::new(PredictorConfig::default()).is_ok());
    }
}
