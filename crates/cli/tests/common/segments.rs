//! Modules made ready to record segments, and segment profiles spelt as
//! the brute-force oracle of [`pathprof_graph::testing::ippp`] spells
//! segments.

use std::collections::BTreeMap;

use pathprof::driver::{self, Technique};
use pathprof::segments::Prepared;
use pathprof_graph::interproc::FuncId;
use pathprof_graph::ippp::{Ips, Subpath, SubpathEnd, SubpathNumbering, SubpathRef};
use pathprof_profile::segments::SegmentCount;
use pathprof_profile::Profile;
use pathprof_runner::RunOptions;
use pathprof_wasm::supergraph::ModuleSupergraph;

use super::programs::Invocation;

/// A module, ready to record its segments, and its traced build.
pub struct Module {
    pub name: String,
    pub bytes: Vec<u8>,
    pub prepared: Prepared,
    pub traced: wasmtime::Module,
}

impl Module {
    /// The model the oracle cuts the trace by (truncated where the
    /// recorder truncated it).
    pub fn msg(&self) -> &ModuleSupergraph {
        self.prepared.supergraph()
    }
}

/// The recorder takes every module the engine does (`Some` always, kept
/// an option for the callers' sake).
pub fn module(engine: &wasmtime::Engine, name: &str, bytes: &[u8]) -> Option<Module> {
    prepared(engine, name, bytes, None)
}

/// With `truncate`, every function with more acyclic paths than it is
/// truncated.
pub fn prepared(
    engine: &wasmtime::Engine,
    name: &str,
    bytes: &[u8],
    truncate: Option<u64>,
) -> Option<Module> {
    let prepared = match truncate {
        Some(bound) => Prepared::truncating_above(engine, bytes, bound, true),
        None => Prepared::new(engine, bytes),
    };
    let prepared = match prepared {
        Ok(p) => p,
        Err(e) => panic!("{name}: the recorder refused it: {e:#}"),
    };
    let traced = driver::instrument(bytes, Technique::Trace, &Default::default()).unwrap();
    let traced = super::programs::compile(engine, &traced.bytes).unwrap();
    Some(Module {
        name: name.to_string(),
        bytes: bytes.to_vec(),
        prepared,
        traced,
    })
}

/// The WAT fixtures that need no host imports, each with its module
/// (`None`: the recorder refuses it).
pub fn wat_modules(engine: &wasmtime::Engine) -> Vec<(String, Vec<u8>, Option<Module>)> {
    let mut out = Vec::new();
    for path in super::programs::wat_fixtures() {
        let bytes = pathprof::input::read_module(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if super::programs::needs_host_imports(engine, &bytes) {
            continue;
        }
        let m = module(engine, &name, &bytes);
        out.push((name, bytes, m));
    }
    out
}

/// Each C fixture at -O0 and -O2, with its invocations (the recorder
/// takes every one: none throws), made ready on two threads
/// ([`super::programs::on_two_threads`]): `each` adds what it saw to its
/// thread's `S`. The IPPP and inlining oracles spend most of their time
/// compiling instrumented builds, one module at a time.
pub fn c_modules<S: Default + Send>(
    engine: &wasmtime::Engine,
    each: impl Fn(&Module, &[Invocation], &mut S) + Sync,
) -> Vec<S> {
    let build = super::programs::root().join("tests/fixtures/c/build");
    let mut invocations: BTreeMap<String, Vec<Invocation>> = BTreeMap::new();
    for (name, inv) in super::programs::c_cases() {
        invocations.entry(name).or_default().push(inv);
    }
    let work: Vec<(String, &Vec<Invocation>)> = invocations
        .iter()
        .flat_map(|(name, invs)| ["O0", "O2"].map(|opt| (format!("{name}.{opt}"), invs)))
        .collect();
    super::programs::on_two_threads(&work, |(build_name, invs), state| {
        let bytes = std::fs::read(build.join(format!("{build_name}.wasm")))
            .expect("run scripts/build-c-fixtures.sh first");
        let m =
            module(engine, build_name, &bytes).unwrap_or_else(|| panic!("{build_name} refused"));
        each(&m, invs, state);
    })
}

/// Each WAT fixture the recorder takes, with a call of each export.
pub fn wat_recorded(engine: &wasmtime::Engine, mut each: impl FnMut(&Module, &[Invocation])) {
    for (_, bytes, m) in wat_modules(engine) {
        if let Some(m) = m {
            each(&m, &super::programs::export_calls(engine, &bytes));
        }
    }
}

/// The depth-`k` segments of a run of `inv`, recorded (`run --segments K`).
pub fn record(m: &Module, inv: &Invocation, k: usize) -> Profile {
    let rec = match inv {
        Invocation::Command { args, stdin } => {
            let opts = RunOptions {
                stdin: Some(stdin.clone()),
                preload: super::programs::preload_for(&m.traced),
                ..RunOptions::captured(args.clone())
            };
            m.prepared.record(k, opts, None)
        }
        Invocation::Call { export, args } => {
            let opts = RunOptions {
                preload: super::programs::preload_for(&m.traced),
                ..RunOptions::captured(["module"])
            };
            m.prepared.record(k, opts, Some((export, args)))
        }
    };
    rec.unwrap_or_else(|e| panic!("{} {inv:?}: {e:#}", m.name))
        .profile
}

/// A segment's identity, as the interesting set names it.
pub fn ids(s: &SegmentCount) -> Ips {
    s.steps
        .iter()
        .map(|st| SubpathRef {
            func: st.func,
            id: st.id,
        })
        .collect()
}

/// A segment as its functions and spelt-out subpaths.
pub type Spelt = Vec<(FuncId, Subpath)>;

/// `counts` spelt as the oracle spells them (a backedge's source by its
/// original block, not its split segment), zero counts left out.
pub fn spelt(numbering: &SubpathNumbering, counts: &[SegmentCount]) -> BTreeMap<Spelt, u64> {
    counts
        .iter()
        .filter(|s| s.count > 0)
        .map(|s| (spell(numbering, s), s.count))
        .collect()
}

/// One segment spelt as the oracle spells it.
pub fn spell(numbering: &SubpathNumbering, s: &SegmentCount) -> Spelt {
    s.steps
        .iter()
        .map(|st| {
            let mut p = st.subpath.clone();
            if let SubpathEnd::Backedge(n) = p.end {
                let split = &numbering.functions[st.func.index()].split;
                p.end = SubpathEnd::Backedge(split.block_of[n.index()]);
            }
            (st.func, p)
        })
        .collect()
}
