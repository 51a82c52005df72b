//! The increments of [`crate::interproc::chords`] against the rho's they
//! replace, by brute force: every path of every function's local graph,
//! from `Entry_P` or `GEntry_P` to `Exit_P` or `GExit_P`, is cut at its
//! uncut calls into stretches, and along each stretch the increments (with
//! the call's before and after ones) must add up to the rho's, both
//! coefficients, modulo 2^64. At most a few thousand paths a function.

use proptest::collection::vec;
use proptest::prelude::*;

use crate::cfg::{Cfg, NodeId};
use crate::interproc::chords::Placed;
use crate::interproc::{CallSiteId, Interproc, Linear, Local, LocalEdgeKind, Mode};
use crate::testing::interproc::arb_supergraph;

const MAX_PATHS: usize = 4_000;

fn add(x: Linear, y: Linear) -> Linear {
    Linear::new(x.a.wrapping_add(y.a), x.b.wrapping_add(y.b))
}

/// Sums along the stretch so far: the rho's, and the increments.
#[derive(Clone, Copy, Default)]
struct Sums {
    rho: Linear,
    inc: Linear,
}

struct Check<'a> {
    local: &'a Local,
    rho: &'a [Linear],
    placed: &'a Placed,
    paths: usize,
    /// Stretches that ended at an uncut call, and at a sink.
    calls: usize,
    ends: usize,
}

impl Check<'_> {
    /// Follows every path from `v` with `sums` so far; false on a stretch
    /// whose sums differ.
    fn from(&mut self, v: NodeId, sums: Sums) -> bool {
        let succs = self.local.succs(v);
        if succs.is_empty() {
            self.paths += 1;
            self.ends += 1;
            return sums.rho == sums.inc;
        }
        for &d in succs {
            if self.paths >= MAX_PATHS {
                return true;
            }
            let e = self.local.edge(d);
            let next = match e.kind {
                LocalEdgeKind::Call(k) => {
                    let at_call = add(sums.inc, self.placed.before_call[k]);
                    self.calls += 1;
                    if at_call != sums.rho {
                        return false;
                    }
                    // The callee adds to pathNum; the caller's new stretch
                    // starts from zero in both sums.
                    Sums {
                        rho: Linear::ZERO,
                        inc: self.placed.after_call[k],
                    }
                }
                _ => Sums {
                    rho: add(sums.rho, self.rho[d.index()]),
                    inc: add(sums.inc, self.placed.inc[d.index()]),
                },
            };
            if !self.from(e.dst, next) {
                return false;
            }
        }
        true
    }
}

fn mode(piecewise: bool) -> Mode {
    if piecewise {
        Mode::Piecewise
    } else {
        Mode::Context
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn increments_add_up_to_the_rhos_along_every_stretch(
        sg in arb_supergraph(4, 6),
        extra in vec(any::<usize>(), 0..2),
        piecewise in any::<bool>(),
    ) {
        let sites = sg.sites().len();
        let cuts: Vec<CallSiteId> = match sites {
            0 => Vec::new(),
            n => extra.iter().map(|&x| CallSiteId::new(x % n)).collect(),
        };
        let Ok(ip) = Interproc::build_with_cuts(&sg, mode(piecewise), &cuts) else {
            return Ok(());
        };
        for f in (0..sg.functions.len()).map(crate::interproc::FuncId::new) {
            let local = &ip.locals[f.index()];
            let placed = ip.placed(f);
            let rho = &ip.numbering.functions[f.index()].rho;
            let mut check = Check { local, rho, placed: &placed, paths: 0, calls: 0, ends: 0 };
            let sources = std::iter::once(Cfg::ENTRY).chain(local.gentry);
            for s in sources {
                prop_assert!(check.from(s, Sums::default()), "function {}", f.index());
            }
            prop_assert!(check.ends > 0);
            // Fewer instrumented edges than edges, where there is a tree.
            let moved = placed.inc.iter().filter(|&&x| x != Linear::ZERO).count();
            prop_assert!(moved < local.edges.len().max(1));
        }
    }
}

/// A diamond of a diamond, worked by hand: `ENTRY -> A`, `A -> B | C`,
/// `B, C -> D`, `D -> EXIT`, in one loop-free function with no calls. Its
/// two paths get rho sums 0 and 1 (Ball-Larus numbering: `A -> C` has
/// rho 1); the tree keeps 4 of the 5 edges, so exactly one edge adds 1 or
/// -1 in a way that still numbers the paths 0 and 1.
#[test]
fn a_diamond_has_one_instrumented_edge() {
    use crate::interproc::{Function, Supergraph};
    let mut cfg = Cfg::new();
    let [a, b, c, d] = [(); 4].map(|_| cfg.add_node());
    cfg.add_edge(Cfg::ENTRY, a);
    cfg.add_edge(a, b);
    cfg.add_edge(a, c);
    cfg.add_edge(b, d);
    cfg.add_edge(c, d);
    cfg.add_edge(d, Cfg::EXIT);
    let sg = Supergraph {
        functions: vec![Function::new(cfg, Vec::new())],
        entries: vec![crate::interproc::FuncId::new(0)],
    };
    let ip = Interproc::build(&sg, Mode::Context).unwrap();
    let placed = ip.placed(crate::interproc::FuncId::new(0));
    let nonzero: Vec<Linear> = placed
        .inc
        .iter()
        .copied()
        .filter(|&x| x != Linear::ZERO)
        .collect();
    assert_eq!(nonzero.len(), 1, "{placed:?}");
    let rho = &ip.numbering.functions[0].rho;
    let total: Vec<Linear> = rho.iter().copied().filter(|&x| x != Linear::ZERO).collect();
    // One rho in all, on one edge out of A; its increment moves it to one
    // of the four edges of A's two paths, with a sign.
    assert_eq!(total.len(), 1);
    let one = total[0];
    assert!(
        nonzero[0] == one || nonzero[0] == Linear::new(one.a.wrapping_neg(), one.b.wrapping_neg())
    );
}
