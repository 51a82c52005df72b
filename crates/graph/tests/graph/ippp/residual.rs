//! Table 3.2's columns computed by hand on small profiles.

use std::collections::{BTreeMap, BTreeSet};

use pathprof_graph::ippp::Residual;

/// Tested: a, b, c. Field: a 90 times, b 5, d 3, e 2, f 0 (not executed).
/// Untested: d and e, 2 of the 4 executed paths (50%), 5 of the 100
/// completions (5%).
#[test]
fn table_3_2_columns_by_hand() {
    let tested: BTreeSet<&str> = ["a", "b", "c"].into();
    let field: BTreeMap<&str, u64> = [("a", 90), ("b", 5), ("d", 3), ("e", 2), ("f", 0)].into();
    let r = Residual::new(&tested, &field);
    assert_eq!(r.untested, BTreeMap::from([("d", 3), ("e", 2)]));
    assert_eq!(r.untested_paths(), 2);
    assert_eq!((r.field_paths, r.field_flow, r.untested_flow), (4, 100, 5));
    assert_eq!(r.percent_untested_paths(), 50.0);
    assert_eq!(r.percent_untested_flow(), 5.0);
}

/// 179.art's row of Table 3.1 shape: half the paths untested and they
/// carry most of the flow: tested x (count 1), field x 1, y 3: 1 of 2
/// paths (50%), 3 of 4 completions (75%).
#[test]
fn untested_paths_can_carry_most_flow() {
    let tested: BTreeSet<u32> = [1].into();
    let field: BTreeMap<u32, u64> = [(1, 1), (2, 3)].into();
    let r = Residual::new(&tested, &field);
    assert_eq!(r.percent_untested_paths(), 50.0);
    assert_eq!(r.percent_untested_flow(), 75.0);
}

#[test]
fn an_empty_field_run_has_nothing_untested() {
    let r = Residual::new(&BTreeSet::<u8>::new(), &BTreeMap::new());
    assert_eq!(r.untested_paths(), 0);
    assert_eq!(r.percent_untested_paths(), 0.0);
    assert_eq!(r.percent_untested_flow(), 0.0);
}
