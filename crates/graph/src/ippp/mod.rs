//! Interprocedural path segments (IPS) and interprocedural residual path
//! profiling: K. Vaswani, "Efficient Online Path Profiling" (PhD thesis,
//! IISc 2007), sections 3.4 and 3.5. Knows nothing of WebAssembly.
//!
//! - [`subpath`]: subpaths (3.4.1) and their Ball-Larus numbering in each
//!   function's DAG with call-ending cuts;
//! - [`segment`]: the segmenter, a run (a sequence of
//!   [`crate::interproc::Event`]s over a [`crate::interproc::Supergraph`])
//!   to its subpaths (the whole program path, WPP) and its depth-k IPS,
//!   and the profile of a run's depth-k IPS;
//! - [`expand`]: the IPPP numbering (3.4.4-3.4.5): per function, the
//!   expanded graph selective inlining makes for the interesting IPS, its
//!   Ball-Larus and PPP numberings, and the per-context increments;
//! - [`walk`]: the IPPP instrumentation as an executable reference;
//! - [`residual`]: untested IPS (or paths) of a field run against a tested
//!   set, the columns of Tables 3.1-3.2 (3.5, 3.6.3).
//!
//! Terms (3.4.1): a *subpath* `<f, p>` is an acyclic intraprocedural path
//! of function `f` that ends at a call, a backedge or the function's return
//! (and begins at ENTRY, a loop head or a return site). The *WPP* of a run
//! is its sequence of subpaths. An *IPS* is a sequence of subpaths that
//! follows calls and returns. The grammar of 3.4.1 is garbled in the text
//! (`P -> (P | (P) | PP | <f, p>`); what the implementation follows is
//! read off the example of 3.4.2, where the WPP
//! `<f1,p1><f2,p2><f3,p3><f4,p4><f4,p5><f4,p6><f3,p7><f5,p8><f3,p9><f2,p10>`
//! (p1, p2, p3 and p7 ending in calls) has the depth-1 IPS `p1p2`, `p2p3`,
//! `p3p4` and `p7p8p9`:
//! 1. An IPS starts at a subpath that ends in a call (every such subpath
//!    starts one: `p1`, `p2`, `p3`, `p7`). `p4p5` is no IPS because `p4`
//!    ends at a backedge, not a call; nor is `p8p9` (`p8` ends in a
//!    return).
//! 2. It continues with the callee's first subpath (`p1` into `p2`).
//! 3. A depth-k IPS spans calls nested at most `k` deep: a subpath ending
//!    in a call at depth `k` (the callee would be at depth `k + 1`) is the
//!    IPS's last (`p1p2` stops at `p2`, which calls `f3`: the IPS includes
//!    `p2` but not `p3`).
//! 4. A subpath ending at a backedge is the IPS's last (`p3p4` does not
//!    extend to `p5`: "our current implementation does not profile paths
//!    that span across loop boundaries").
//! 5. After a subpath ending in a return to a call the IPS entered, the
//!    caller's continuation follows (`p7p8p9` includes `p9`, the subpath of
//!    `f3` after `f5` returns). A subpath ending in a return out of the
//!    function the IPS started in is its last (`p9` returns from `f3`).
//!
//! For the same WPP, depth 2 gives `p1p2p3`, `p2p3p4`, `p3p4`, `p7p8p9` and
//! depth 3 gives `p1p2p3p4`, `p2p3p4`, `p3p4`, `p7p8p9` (the tests work
//! them by hand). Rule 3 reads "depth k" as call nesting: back in its
//! start function after a return, an IPS enters further calls (`p7p8p9`
//! would go on into a call at the end of `p9`). That is what inlining the
//! call sites an IPS passes gives (3.4.4): in the inlined function the
//! path goes on through every inlined call. Reading "spans at most k
//! procedure calls" as a count of calls agrees on the thesis' example.
//!
//! An IPS is identified by its subpaths, each as (function, subpath id)
//! ([`subpath::SubpathRef`]), the id a Ball-Larus number (see [`subpath`]).
//!
//! Departures from the thesis:
//! - Tail calls and exceptions, which the thesis does not consider: a
//!   tail call ends the subpath and every segment open on the activation
//!   it replaces, and the callee starts afresh
//!   (docs/decisions.md#ips-tail-calls); a throw ends the thrower's
//!   subpath and every segment open on it, and the catching activation
//!   starts a new subpath at its handler
//!   (docs/decisions.md#ips-exceptions).
//!   Host callbacks (a call with no site) start a new activation whose
//!   subpaths no open segment takes.
//! - IPS overlap (`p1p2` and `p2p3` share `p2`). Inlining (3.4.4) would
//!   profile one path per execution step, so `p2` executed inside `f1`'s
//!   inlined copy of `f2` could not also start `f2`'s IPS; here every IPS
//!   has its own register pair (3.4.5's per-context counters), so each is
//!   counted, as the depth-k IPS of the WPP are (3.5.2's first scheme).
//! - An IPS that goes on into a call no interesting IPS takes (in that
//!   context) is cut at that call and reported, not interesting, by its
//!   Ball-Larus id in the expanded graph; decoded, it is the IPS up to
//!   the subpath ending in that call.
//! - The interesting IPS come from the segmenter's profile of a training
//!   run (3.5.2's WPP scheme). The alternative scheme's over-approximation
//!   from intraprocedural profiles (Fig. 3.15, stage II) is the inliner's
//!   (`pathprof inline` with path profiles, in the core crate).

pub mod expand;
pub mod residual;
pub mod segment;
pub mod subpath;
pub mod walk;

pub use expand::{
    expand_all, expand_all_fitting, expand_all_truncated, inlined_contexts, ContextCopy, Expanded,
    Origin,
};
pub use residual::Residual;
pub use segment::{ips_profile, Ips, IpsProfile, Segmenter, Step};
pub use subpath::{Subpath, SubpathEnd, SubpathNumbering, SubpathRef, SubpathStart, SubpathTail};
pub use walk::{Ippp, IpppCounts};
