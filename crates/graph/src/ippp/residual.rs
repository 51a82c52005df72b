//! Residual path profiling (thesis 3.5): which paths a field run executes
//! that the test suite did not, and what share of the run they are.
//!
//! Section 3.5.2 profiles the depth-k IPS of a test run, marks them
//! interesting, and reports the IPS of a field run that are not (Fig.
//! 3.15). Table 3.2 (and the first three columns of Table 3.1, for
//! intraprocedural paths) gives per program:
//! - *#untested paths*: the distinct paths of the field run not tested;
//! - *%untested paths*: their share of the distinct paths of the field run;
//! - *%freq of untested paths*: their share of the field run's path count
//!   (how often paths completed), i.e. of its flow.
//!
//! The same computation serves IPS and intraprocedural paths: the path
//! type is generic.
//!
//! Departures from the thesis: the percentages are of the field run's
//! distinct paths and flow (the text does not say what %untested is a
//! share of; the distinct paths of the field run is the reading under
//! which 179.art's 50% and 47.2% in Table 3.1 can both hold).

use std::collections::{BTreeMap, BTreeSet};

/// The untested paths of a field run and the columns of Table 3.2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Residual<P: Ord> {
    /// The field run's paths not in the tested set, with their counts.
    pub untested: BTreeMap<P, u64>,
    /// Distinct paths of the field run.
    pub field_paths: usize,
    /// How many paths the field run completed (the sum of its counts).
    pub field_flow: u64,
    /// How many of those were untested.
    pub untested_flow: u64,
}

impl<P: Ord + Clone> Residual<P> {
    /// The residual of the `field` profile (path to count; paths counted 0
    /// times are not executed) against the `tested` paths.
    pub fn new(tested: &BTreeSet<P>, field: &BTreeMap<P, u64>) -> Residual<P> {
        let executed = field.iter().filter(|(_, &c)| c > 0);
        let untested: BTreeMap<P, u64> = executed
            .clone()
            .filter(|(p, _)| !tested.contains(*p))
            .map(|(p, &c)| (p.clone(), c))
            .collect();
        Residual {
            field_paths: executed.clone().count(),
            field_flow: executed.map(|(_, &c)| c).fold(0u64, u64::saturating_add),
            untested_flow: untested.values().fold(0u64, |s, &c| s.saturating_add(c)),
            untested,
        }
    }

    /// Table 3.2's *#untested paths*.
    pub fn untested_paths(&self) -> usize {
        self.untested.len()
    }

    /// Table 3.2's *%untested paths*: 0 for an empty field run.
    pub fn percent_untested_paths(&self) -> f64 {
        percent(self.untested.len() as f64, self.field_paths as f64)
    }

    /// Table 3.2's *%freq of untested paths*: 0 for an empty field run.
    pub fn percent_untested_flow(&self) -> f64 {
        percent(self.untested_flow as f64, self.field_flow as f64)
    }
}

fn percent(part: f64, whole: f64) -> f64 {
    if whole == 0.0 {
        0.0
    } else {
        100.0 * part / whole
    }
}
