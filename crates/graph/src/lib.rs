//! Graph algorithms of Ball-Larus path profiling, independent of WebAssembly.
//!
//! The pipeline (Ball & Larus, "Efficient Path Profiling", MICRO 1996):
//! [`cfg`](mod@cfg) a control-flow graph with ENTRY and EXIT;
//! [`dag`] backedges removed and replaced by dummy edges (section 4), self loops
//! set aside (4.1), truncation cuts (5.3);
//! [`numbering`] Val and NumPaths (Fig. 5, 5.2) and truncation (5.3);
//! [`spanning`] a maximum spanning tree and chord increments by event counting (3.3);
//! [`placement`] where each increment and counter update goes (Fig. 8);
//! [`regenerate`] path number back to a path (3.5);
//! [`ppp`] Preferential Path Profiling: compact ids for a set of interesting
//! paths (Vaswani et al., POPL 2007, Fig. 10);
//! [`weights`] static edge weights from loop nesting (QPT);
//! [`flow`] edge counts from chord counts by flow conservation (QPT2 edge profiling);
//! [`interproc`] interprocedural path profiling with linear edge functions
//! (Melski & Reps, TR 1382): context and piecewise paths across calls;
//! [`intra_context`] intraprocedural context paths (the same report, section 7);
//! [`ippp`] interprocedural path segments and residual path profiling
//! (Vaswani's thesis, 3.4-3.5).
//!
//! A typical use:
//! ```
//! use pathprof_graph::{numbering, placement, regenerate, spanning, weights, Cfg};
//! let mut cfg = Cfg::new();
//! let (a, b) = (cfg.add_node(), cfg.add_node());
//! cfg.add_edge(Cfg::ENTRY, a);
//! cfg.add_edge(a, b);
//! cfg.add_edge(a, Cfg::EXIT);
//! cfg.add_edge(b, Cfg::EXIT);
//! let (dag, numbering) = numbering::build_numbered(&cfg, 1 << 32)?;
//! let w = spanning::dag_weights(&dag, &cfg, &weights::loop_nesting_weights(&cfg));
//! let incs = spanning::chord_increments(&dag, &numbering, &w);
//! let ops = placement::place(&dag, &incs);
//! assert_eq!(numbering.total(), 2);
//! assert_eq!(ops.len(), dag.num_edges());
//! assert_eq!(regenerate::regenerate(&dag, &numbering, 0)?.len(), 3); // ENTRY A B EXIT
//! # Ok::<(), pathprof_graph::GraphError>(())
//! ```
//!
//! No algorithm recurses: graphs of 10^5 nodes and more are searched with
//! explicit stacks, and every step is linear or `n log n`.

pub mod cfg;
pub mod dag;
mod dfs;
pub mod error;
pub mod flow;
pub mod interproc;
pub mod intra_context;
pub mod ippp;
mod mst;
pub mod numbering;
pub mod placement;
pub mod ppp;
pub mod regenerate;
pub mod spanning;
#[cfg(feature = "testing")]
pub mod testing;
pub mod weights;

pub use cfg::{Cfg, EdgeId, NodeId};
pub use dag::{Dag, DagEdgeId, DagEdgeKind};
pub use error::GraphError;
