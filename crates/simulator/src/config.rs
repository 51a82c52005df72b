//! One profiler configuration, readable from TOML. Every field has a
//! default, so an empty file is the thesis' chosen profiler:
//!
//! ```toml
//! label = ""
//! path_type = "bl"            # "wpp", { extended_loop = { max = 1 } },
//!                             # { extended_call = { max = 1 } }
//! metric = "frequency"        # "instructions", "mispredictions",
//!                             # "l1_misses", "l2_misses"
//! max_path_len = 32           # branches; longer paths are split (5.2)
//! stack_depth = 32            # path stack entries (5.2)
//! queue_lengths = [4]         # branch queues timed side by side (5.5.3)
//! window_instrs = 100000000   # dynamic overlap windows (5.5.2); omit the
//!                             # key for the default, 0 is an error
//! dynamic_overlap = true      # false: no per-window tables
//!
//! [hpt]                       # 5.4
//! entries = 512
//! ways = 4
//! index = "xor"               # or "address"
//! replacement = "lfu"         # or "lru", "space_saving", "frequent"
//!
//! [latencies]                 # cycles (5.5.3)
//! push = 1
//! pop = 1
//! update = 1
//! update_count = 1
//! hpt_update = 1
//! hpt_miss_per_log2_way = 1
//!
//! [predictor.combined]        # Table 5.3; or [predictor.bimodal] entries,
//! bimodal_entries = 8192      # or [predictor.gshare] entries, history_bits
//! gshare_entries = 8192
//! history_bits = 12
//! meta_entries = 1024
//!
//! [caches.l1]                 # Table 5.3
//! size_bytes = 32768
//! block_bytes = 32
//! ways = 1
//! [caches.l2]
//! size_bytes = 524288
//! block_bytes = 64
//! ways = 4
//! ```

use crate::cache::HierarchyConfig;
use crate::descriptor::MAX_PATH_LEN;
use crate::error::SimError;
use crate::hpt::HptConfig;
use crate::ppcr::PathType;
use crate::predictor::PredictorConfig;
use crate::timing::Latencies;
use serde::{Deserialize, Serialize};

/// The architectural metric accumulated per path (5.3).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// One per path traversal.
    #[default]
    Frequency,
    /// Instructions retired along the path.
    Instructions,
    /// Conditional branches along the path the predictor model got wrong.
    Mispredictions,
    /// Data accesses along the path that missed L1 (memory-access stream).
    L1Misses,
    /// Data accesses along the path that missed L2 (memory-access stream).
    L2Misses,
}

/// The largest path stack and branch queue accepted.
pub const MAX_STACK_DEPTH: u32 = 1 << 16;
pub const MAX_QUEUE_LENGTH: u32 = 1 << 12;
/// The largest latency of one operation, in cycles: with it a branch's sum
/// of latencies stays far from overflowing.
pub const MAX_LATENCY: u32 = 1 << 16;

/// One profiler configuration; see the module docs for the TOML form.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// A name for reports.
    pub label: String,
    pub path_type: PathType,
    pub metric: Metric,
    pub max_path_len: u32,
    pub stack_depth: u32,
    pub queue_lengths: Vec<u32>,
    pub window_instrs: u64,
    pub dynamic_overlap: bool,
    pub hpt: HptConfig,
    pub latencies: Latencies,
    pub predictor: PredictorConfig,
    pub caches: HierarchyConfig,
}

impl Default for SimConfig {
    fn default() -> SimConfig {
        SimConfig {
            label: String::new(),
            path_type: PathType::Bl,
            metric: Metric::Frequency,
            max_path_len: 32,
            stack_depth: 32,
            queue_lengths: vec![4],
            window_instrs: 100_000_000,
            dynamic_overlap: true,
            hpt: HptConfig::default(),
            latencies: Latencies::default(),
            predictor: PredictorConfig::default(),
            caches: HierarchyConfig::default(),
        }
    }
}

fn config_error(what: &'static str, why: String) -> SimError {
    SimError::Config { what, why }
}

impl SimConfig {
    /// Reads and checks a configuration.
    pub fn from_toml(text: &str) -> Result<SimConfig, SimError> {
        let c: SimConfig = toml::from_str(text).map_err(|e| SimError::Toml(e.to_string()))?;
        c.validate()?;
        Ok(c)
    }

    /// Checks the fields no constructor checks (the HPT, predictor and
    /// caches check their own shapes when built).
    pub fn validate(&self) -> Result<(), SimError> {
        if !(1..=MAX_PATH_LEN).contains(&self.max_path_len) {
            let why = format!("{}: must be 1..={MAX_PATH_LEN}", self.max_path_len);
            return Err(config_error("max_path_len", why));
        }
        if !(1..=MAX_STACK_DEPTH).contains(&self.stack_depth) {
            let why = format!("{}: must be 1..={MAX_STACK_DEPTH}", self.stack_depth);
            return Err(config_error("stack_depth", why));
        }
        if let Some(q) = self.queue_lengths.iter().find(|&&q| q > MAX_QUEUE_LENGTH) {
            let why = format!("{q}: at most {MAX_QUEUE_LENGTH}");
            return Err(config_error("queue_lengths", why));
        }
        if self.window_instrs == 0 {
            return Err(config_error("window_instrs", "must be positive".into()));
        }
        let l = &self.latencies;
        let all = [
            l.push,
            l.pop,
            l.update,
            l.update_count,
            l.hpt_update,
            l.hpt_miss_per_log2_way,
        ];
        if let Some(big) = all.iter().find(|&&c| c > MAX_LATENCY) {
            let why = format!("{big} cycles: at most {MAX_LATENCY}");
            return Err(config_error("latencies", why));
        }
        self.hpt.sets().map(|_| ())
    }
}

/// Several configurations, as a TOML file of `[[config]]` tables.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepConfig {
    #[serde(default)]
    pub config: Vec<SimConfig>,
}

impl SweepConfig {
    pub fn from_toml(text: &str) -> Result<SweepConfig, SimError> {
        let s: SweepConfig = toml::from_str(text).map_err(|e| SimError::Toml(e.to_string()))?;
        for c in &s.config {
            c.validate()?;
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hpt::{IndexFn, Replacement};

    #[test]
    fn empty_file_is_the_thesis_profiler() {
        let c = SimConfig::from_toml("").expect("defaults");
        assert_eq!(c, SimConfig::default());
        assert_eq!((c.hpt.entries, c.hpt.ways), (512, 4));
        assert_eq!(
            (c.hpt.index, c.hpt.replacement),
            (IndexFn::Xor, Replacement::Lfu)
        );
        assert_eq!((c.stack_depth, c.max_path_len), (32, 32));
        assert_eq!(c.queue_lengths, vec![4]);
    }

    #[test]
    fn replacement_policies_read_by_name() {
        for (name, r) in [
            ("lfu", Replacement::Lfu),
            ("lru", Replacement::Lru),
            ("space_saving", Replacement::SpaceSaving),
            ("frequent", Replacement::Frequent),
        ] {
            let c = SimConfig::from_toml(&format!("[hpt]\nreplacement = \"{name}\"\n"))
                .expect("a known policy");
            assert_eq!(c.hpt.replacement, r, "{name}");
        }
        assert!(SimConfig::from_toml("[hpt]\nreplacement = \"fifo\"\n").is_err());
    }

    #[test]
    fn every_field_reads_from_toml() {
        let text = r#"
            label = "loops"
            path_type = { extended_loop = { max = 1 } }
            metric = "l2_misses"
            max_path_len = 16
            stack_depth = 8
            queue_lengths = [0, 1, 2]
            window_instrs = 1000
            dynamic_overlap = false
            [hpt]
            entries = 2048
            ways = 32
            index = "address"
            replacement = "lru"
            [latencies]
            hpt_update = 2
            [predictor.gshare]
            entries = 2048
            history_bits = 11
            [caches.l2]
            size_bytes = 262144
            block_bytes = 64
            ways = 1
        "#;
        let c = SimConfig::from_toml(text).expect("valid");
        assert_eq!(c.path_type, PathType::ExtendedLoop { max: 1 });
        assert_eq!(c.metric, Metric::L2Misses);
        assert_eq!(
            (c.max_path_len, c.stack_depth, c.window_instrs),
            (16, 8, 1000)
        );
        assert_eq!(c.queue_lengths, vec![0, 1, 2]);
        assert!(!c.dynamic_overlap);
        assert_eq!(
            (c.hpt.entries, c.hpt.ways, c.hpt.index),
            (2048, 32, IndexFn::Address)
        );
        assert_eq!((c.latencies.hpt_update, c.latencies.pop), (2, 1));
        let g = PredictorConfig::Gshare {
            entries: 2048,
            history_bits: 11,
        };
        assert_eq!(c.predictor, g);
        assert_eq!(
            (c.caches.l2.size_bytes, c.caches.l1.size_bytes),
            (262144, 32768)
        );
    }

    #[test]
    fn bad_values_are_errors() {
        for text in [
            "max_path_len = 0",
            "max_path_len = 97",
            "stack_depth = 0",
            "queue_lengths = [5000]",
            "window_instrs = 0",
            "[hpt]\nentries = 96",
            "[latencies]\npop = 70000",
            "unknown = 1",
            "path_type = \"loops\"",
        ] {
            assert!(SimConfig::from_toml(text).is_err(), "{text}");
        }
    }

    #[test]
    fn sweeps_list_configurations() {
        let text = "[[config]]\nlabel = \"a\"\n[[config]]\nlabel = \"b\"\npath_type = \"wpp\"\n";
        let s = SweepConfig::from_toml(text).expect("valid");
        let labels: Vec<_> = s
            .config
            .iter()
            .map(|c| (c.label.as_str(), c.path_type))
            .collect();
        assert_eq!(labels, vec![("a", PathType::Bl), ("b", PathType::Wpp)]);
    }
}
