//! What instrumenting is told: the options of every technique, the prior
//! profile that weights them, and which of them to lower when the counters
//! do not fit.

use std::path::Path;

use crate::error::Result;
use pathprof_graph::interproc::CallSiteId;
use pathprof_profile::Profile;
use pathprof_techniques::{ball_larus, ppp};

#[derive(Clone, Debug)]
pub struct Options {
    pub ball_larus: ball_larus::Options,
    /// A prior profile whose counts weight the spanning trees.
    pub weights: Option<Profile>,
    pub ppp: PppOptions,
    /// Largest innermost loop (bytes of code) whose first iteration is
    /// emitted apart, so later ones count at constant addresses; 0: none.
    pub peel_max_bytes: u32,
    /// Validate the instrumented module before returning it. Debug builds
    /// always do; a release build need not: an engine validates the module
    /// when it compiles it (`pathprof run` does at once), and the test
    /// suites run every module they instrument (the spec testsuite in path,
    /// edge and PPP modes, wasm-smith modules, the C programs), which
    /// validates it. Validating is about a sixth of the instrumenter's time.
    pub validate_output: bool,
    /// How [`Technique::Trace`](crate::technique::Technique::Trace) reports edges: buffered, or one host call
    /// per edge (for a host that inspects the stack at every edge).
    pub trace_mode: pathprof_wasm::TraceMode,
    /// Which call sites the interprocedural modes profile across.
    pub hybrid: Hybrid,
    /// The interprocedural modes profile across a `call_indirect` on a
    /// static table that may reach at most this many profiled functions, as
    /// direct calls to each (Melski & Reps 9.2.3's dispatch; 0: cut every
    /// indirect call): [`pathprof_wasm::supergraph::ModuleSupergraph::with_cases`].
    pub max_cases: usize,
    /// The depth and interesting segments of the `ippp` mode.
    pub ippp: IpppOptions,
    /// Told how many functions are rewritten, as they are (for a progress
    /// bar on a large module).
    pub progress: Progress,
    /// Keep the decoding metadata made while planning
    /// ([`Instrumented::meta`](crate::driver::Instrumented::meta) then
    /// returns it rather than decoding the section): for a caller that
    /// collects the counters at once (`run`). Techniques planned one
    /// function at a time keep it; the others decode.
    pub keep_meta: bool,
}

/// The prior profile at `path` for [`Options::weights`], checked to be of
/// `module` when it is given (the module is hashed only then).
pub fn read_weights(path: &Path, module: Option<&[u8]>) -> Result<Profile> {
    let profile = Profile::read(path)?;
    if let Some(m) = module {
        profile.check_module(path, &pathprof_wasm::module_hash(m))?;
    }
    Ok(profile)
}

/// Which settings to lower when `e` is that the counters do not fit in a
/// 32-bit memory ([`pathprof_wasm::WasmError::CounterMemoryTooLarge`]), by
/// the command line's names of the fields of `o` and their values:
/// `array_max` when path arrays take most of it (with `array_budget` when
/// functions past `array_max` get arrays too), else `hash_capacity`.
/// `None` for any other error.
pub fn counter_memory_hint(
    e: &pathprof_wasm::WasmError,
    o: &ball_larus::Options,
) -> Option<String> {
    let &pathprof_wasm::WasmError::CounterMemoryTooLarge {
        array_bytes,
        hash_bytes,
        ..
    } = e
    else {
        return None;
    };
    let budget_used = o.array_budget > 0 && o.truncate_above > o.array_max;
    Some(if array_bytes < hash_bytes {
        format!("lower --hash-capacity (now {})", o.hash_capacity)
    } else if budget_used {
        format!(
            "lower --array-max (now {}) or --array-budget (now {})",
            o.array_max, o.array_budget
        )
    } else {
        format!(
            "lower --array-memory-max (now {}) or --array-max (now {}; a function with more paths counts in a hash table)",
            o.array_memory_max, o.array_max
        )
    })
}

/// The default of [`Options::max_cases`]: none, every indirect call cut
/// as the report does. Cases add paths through the call, which the hybrid
/// budget pays for by cutting other call sites: on the suite's zlib, a
/// third fewer executed paths crossed a call with 4
/// (docs/decisions.md#indirect-cases).
pub const DEFAULT_MAX_CASES: usize = 0;

/// A callback told `(functions done, functions in all)` as a module is
/// instrumented one function at a time.
#[derive(Clone, Default)]
pub struct Progress(Option<std::sync::Arc<dyn Fn(u64, u64) + Send + Sync>>);

impl Progress {
    pub fn new(f: impl Fn(u64, u64) + Send + Sync + 'static) -> Self {
        Progress(Some(std::sync::Arc::new(f)))
    }

    pub(crate) fn report(&self, done: u64, total: u64) {
        if let Some(f) = &self.0 {
            f(done, total);
        }
    }
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Progress(callback)"
        } else {
            "Progress(none)"
        })
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ball_larus: Default::default(),
            weights: None,
            ppp: Default::default(),
            peel_max_bytes: pathprof_wasm::PEEL_MAX_BYTES,
            validate_output: false,
            trace_mode: pathprof_wasm::TraceMode::Buffered,
            hybrid: Default::default(),
            max_cases: DEFAULT_MAX_CASES,
            ippp: Default::default(),
            progress: Progress::default(),
            keep_meta: false,
        }
    }
}

impl Options {
    /// Whether the rewriter validates what it produces.
    pub(crate) fn output_check(&self) -> pathprof_wasm::OutputCheck {
        if self.validate_output || cfg!(debug_assertions) {
            pathprof_wasm::OutputCheck::Validate
        } else {
            pathprof_wasm::OutputCheck::Trust
        }
    }
}

/// What [`Technique::Ppp`](crate::technique::Technique::Ppp) needs beyond Ball-Larus' options.
#[derive(Clone, Debug, Default)]
pub struct PppOptions {
    pub policy: ppp::Policy,
    /// See [`ppp::Options::force_ball_larus`].
    pub force_ball_larus: bool,
    /// The interesting paths (and tested self loops), by function index; a
    /// function not in the maps has none.
    pub interesting: crate::interesting::Interesting,
}

/// Which non-recursive call sites are profiled interprocedurally (section 8).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Hybrid {
    /// Every one the numbering can afford: all, or, when the paths would
    /// not fit in 64 bits, all but the fewest largest (`Budget`).
    #[default]
    All,
    /// Only calls to leaf functions (functions that call no profiled one).
    Leaf,
    /// Cut the largest call sites until the number of paths is at most this.
    Budget(u64),
    /// Cut these call sites (by module byte offset of the call, `0x1a2`) and
    /// every call site of these callees (by name or function index); the
    /// largest others too if the paths would not fit in 64 bits.
    Cut(Vec<String>),
    /// [`Hybrid::Cut`] resolved to call site ids.
    Sites(Vec<CallSiteId>),
}

impl std::str::FromStr for Hybrid {
    type Err = String;
    /// `all`, `leaf`, or `budget:N` (at most N paths).
    fn from_str(s: &str) -> Result<Hybrid, String> {
        match s {
            "all" => Ok(Hybrid::All),
            "leaf" => Ok(Hybrid::Leaf),
            "budget" => Ok(Hybrid::Budget(u64::MAX)),
            _ if s.starts_with("cut:") && s.len() > 4 => Ok(Hybrid::Cut(
                s[4..].split(',').map(str::to_string).collect(),
            )),
            _ => match s.strip_prefix("budget:").map(str::parse::<u64>) {
                Some(Ok(n)) if n > 0 => Ok(Hybrid::Budget(n)),
                _ => Err(format!(
                    "unknown hybrid policy {s:?}: expected all, leaf, budget, budget:N (N > 0) or cut:SITE|CALLEE,..."
                )),
            },
        }
    }
}

/// What [`Technique::Ippp`](crate::technique::Technique::Ippp) needs: the depth, the interesting segments
/// and what to do with the others.
#[derive(Clone, Debug, Default)]
pub struct IpppOptions {
    pub k: usize,
    pub interesting: Vec<pathprof_graph::ippp::Ips>,
    pub policy: pathprof_techniques::ppp::Policy,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathprof_wasm::WasmError;

    #[test]
    fn the_hint_names_what_takes_the_counter_memory() {
        let too_large = |array_bytes, hash_bytes| WasmError::CounterMemoryTooLarge {
            bytes: array_bytes + hash_bytes,
            array_bytes,
            hash_bytes,
        };
        let o = ball_larus::Options::default();
        let hint = |e: &WasmError, o: &ball_larus::Options| counter_memory_hint(e, o).unwrap();
        assert!(hint(&too_large(1, 2), &o).starts_with("lower --hash-capacity (now "));
        assert!(hint(&too_large(2, 1), &o).starts_with("lower --array-memory-max (now "));
        // Functions past --array-max get arrays only with a larger
        // --truncate-above and a budget.
        let budget = ball_larus::Options {
            truncate_above: o.array_max + 1,
            array_budget: 1 << 20,
            ..o.clone()
        };
        assert!(hint(&too_large(2, 1), &budget).ends_with("or --array-budget (now 1048576)"));
        let other = WasmError::CorruptCounters { reason: "x".into() };
        assert_eq!(counter_memory_hint(&other, &o), None);
    }
}
