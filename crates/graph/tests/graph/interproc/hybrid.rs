//! Section 8 on the report's example: cutting `main`'s first call site
//! (the hook), and the budget policy. Values worked out by hand with eqs.
//! (19)-(22) and (27).

use pathprof_graph::interproc::hybrid::build_within;
use pathprof_graph::interproc::{CallSiteId, Interproc, Linear, Mode};
use pathprof_graph::testing::interproc::{figure4, MAIN, POW};
use pathprof_graph::GraphError;

#[test]
fn cutting_the_first_call_site() {
    let ip = Interproc::build_with_cuts(&figure4(), Mode::Context, &[CallSiteId::new(0)]).unwrap();
    assert_eq!(ip.call_graph.cut, [true, false]);
    // v6 is now a summary edge: psi_v6 = psi_v7 = <0,5>, psi_v5 = <0,10>,
    // psi_v4 = <1,10>, psi_Entry_main = <2,20>; pow becomes an entry
    // function (T3) with psi_Entry_pow(1) = 4 paths.
    assert_eq!(ip.entry_psi(MAIN), Linear::new(2, 20));
    assert_eq!(ip.call_graph.entries, [MAIN, POW]);
    let entries = super::entry_values(&ip);
    assert_eq!(entries, [(0, 22), (22, 4)]);
    assert_eq!(ip.total(), 26);
    assert_eq!(
        ip.max_enters,
        [1, 2],
        "pow: once from Entry_global, once from site 1"
    );
}

#[test]
fn budget_cuts_the_largest_sites_first() {
    let sg = figure4();
    // 36 paths fit: nothing is cut.
    let ip = build_within(&sg, Mode::Context, 36).unwrap();
    assert_eq!(
        (ip.total(), ip.call_graph.cut.clone()),
        (36, vec![false, false])
    );
    // Site 0 is the larger (psi_v6(1) = 12 against psi_v10(1) = 4): 26 paths.
    let ip = build_within(&sg, Mode::Context, 30).unwrap();
    assert_eq!(
        (ip.total(), ip.call_graph.cut.clone()),
        (26, vec![true, false])
    );
    // Both cut: main <2,8> gives 10, pow 4.
    let ip = build_within(&sg, Mode::Context, 25).unwrap();
    assert_eq!(
        (ip.total(), ip.call_graph.cut.clone()),
        (14, vec![true, true])
    );
    // Fewer than the functions' own paths: refused, saying how many every
    // cut leaves.
    assert_eq!(
        build_within(&sg, Mode::Context, 13).unwrap_err(),
        GraphError::BudgetTooSmall {
            bound: 13,
            least: 14
        }
    );
}
