//! Preferential Path Profiling (thesis ch. 3): the worked example of 3.3.2,
//! the counterexamples of Lemmas 3.3.1 and 3.3.2 traced by hand through
//! Fig. 3.10, and property tests against brute force on random DAGs.

use std::collections::HashMap;

use proptest::collection::vec;
use proptest::prelude::*;

use pathprof_graph::dag::{Dag, DagEdgeId, DagEdgeKind};
use pathprof_graph::numbering::{number, topological_order, Numbering};
use pathprof_graph::ppp::{
    ball_larus_delta, choose, compute_ppp_increments, delta, ppp_id, PppNumbering, Scheme,
};
use pathprof_graph::testing::{arb_cfg, enumerate_paths};
use pathprof_graph::{Cfg, EdgeId, GraphError, NodeId};

/// A DAG over the named vertices: `s` is ENTRY, `t` EXIT, the others nodes 2..
/// in the order of `names` (which excludes `s` and `t`). Edges are given as
/// `"xy"` pairs and get ids in that order.
fn named_dag(names: &str, edges: &[&str]) -> (Dag, impl Fn(&str) -> Vec<DagEdgeId>) {
    let node = {
        let names = names.to_owned();
        move |c: char| match c {
            's' => Cfg::ENTRY,
            't' => Cfg::EXIT,
            c => NodeId::new(2 + names.find(c).expect("a named vertex")),
        }
    };
    let list: Vec<(NodeId, NodeId, DagEdgeKind)> = edges
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let b = e.as_bytes();
            (
                node(b[0] as char),
                node(b[1] as char),
                DagEdgeKind::Real(EdgeId::new(i)),
            )
        })
        .collect();
    let dag = Dag::from_edges(2 + names.len(), &list);
    let names: Vec<String> = edges.iter().map(|e| e.to_string()).collect();
    // A path written as its vertices, e.g. "sacdt"; no parallel edges here.
    let path = move |p: &str| -> Vec<DagEdgeId> {
        let b = p.as_bytes();
        b.windows(2)
            .map(|w| {
                let e = format!("{}{}", w[0] as char, w[1] as char);
                DagEdgeId::new(
                    names
                        .iter()
                        .position(|n| *n == e)
                        .expect("an edge of the DAG"),
                )
            })
            .collect()
    };
    (dag, path)
}

fn ids(num: &PppNumbering, paths: &[Vec<DagEdgeId>]) -> Vec<i64> {
    paths.iter().map(|p| ppp_id(num, p)).collect()
}

/// Thesis Fig. 3.4 / 3.2.3 / 3.3.2. The DAG, reconstructed from the text:
/// vertices s, a, b, c, d, t; 6 paths; the paths named are sacdt, sact, sbct
/// (interesting), sabct and sbcdt (uninteresting, "sbcddt" in the extraction),
/// and the Ball-Larus ids of sacdt, sact, sbct are 0, 1, 5. Edges s->a, s->b,
/// a->b, a->c, b->c, c->d, c->t, d->t give exactly 6 paths: sacdt, sact,
/// sabcdt, sabct, sbcdt, sbct, which Fig. 5 of Ball-Larus (edges in the order
/// s->a before s->b, a->c before a->b, c->d before c->t, no 5.2 sorting)
/// numbers 0..5 in that order.
#[test]
fn thesis_figure_3_4_example() {
    // Edge ids: 0 sa, 1 sb, 2 ac, 3 ab, 4 bc, 5 cd, 6 ct, 7 dt.
    let (dag, path) = named_dag("abcd", &["sa", "sb", "ac", "ab", "bc", "cd", "ct", "dt"]);
    let interesting = vec![path("sacdt"), path("sact"), path("sbct")];
    // The thesis' Ball-Larus Val (Fig. 3.4(a)): NumPaths d 1, c 2, b 2, a 4,
    // s 6; Val(s->b) = NumPaths(a) = 4, Val(a->b) = NumPaths(c) = 2,
    // Val(c->t) = NumPaths(d) = 1, the others 0.
    let bl = Numbering {
        val: vec![0, 4, 0, 2, 0, 0, 1, 0],
        num_paths: vec![6, 1, 4, 2, 2, 1],
    };
    let bl_ids: Vec<u64> = interesting.iter().map(|p| bl.path_sum(p)).collect();
    assert_eq!(bl_ids, [0, 1, 5], "the text: Ball-Larus ids 0, 1 and 5");
    let num = compute_ppp_increments(&dag, &bl, &interesting).unwrap();
    // Steps 2_d..6_s of 3.3.2: W(d,t) = 0, W(c,d) = 0, W(c,t) = 1,
    // W(b,c) = -1, W(a,c) = 0, W(s,a) = 0, W(s,b) = 2; a->b carries no
    // interesting path (⊥, here 0).
    assert_eq!(num.inc, [0, 2, 0, 0, -1, 0, 1, 0]);
    assert_eq!(
        ids(&num, &interesting),
        [0, 1, 2],
        "the text: PPP ids 0, 1 and 2"
    );
    assert_eq!((num.min, num.max), (0, 2));
    assert_eq!(delta(&num, 3), 0);
    assert_eq!(
        ball_larus_delta(&bl, &interesting),
        3,
        "ids 0..=5 hold 3 paths"
    );
    // 3.2.3: sabct aliases sacdt (0 + 0 - 1 + 1 = 0) and sbcdt aliases sact
    // (2 - 1 + 0 + 0 = 1); sabcdt gets 0 + 0 - 1 + 0 + 0 = -1.
    assert_eq!(
        ids(&num, &[path("sabct"), path("sbcdt"), path("sabcdt")]),
        [0, 1, -1]
    );

    // Prefixes only key the cis map, so any valid Ball-Larus numbering gives
    // the same increments, e.g. this crate's (with the 5.2 sort).
    let sorted = number(&dag).unwrap();
    assert_ne!(sorted.val, bl.val);
    assert_eq!(
        compute_ppp_increments(&dag, &sorted, &interesting).unwrap(),
        num
    );
    // Order and duplicates do not matter.
    let shuffled = vec![
        path("sbct"),
        path("sacdt"),
        path("sbct"),
        path("sact"),
        path("sacdt"),
    ];
    assert_eq!(compute_ppp_increments(&dag, &bl, &shuffled).unwrap(), num);
    assert_eq!(ball_larus_delta(&bl, &shuffled), 3);
}

/// Lemma 3.3.1, Fig. 3.5: s->a, s->b, a->c, b->c, c->d, c->e, d->t, e->t with
/// I = {sacet, sbcdt}; no assignment separates I from the other paths.
///
/// Fig. 3.10 by hand (edge order as listed): d->t and e->t get 0. At c, c->d
/// carries sbcdt with prefix sbc: W = cis(sbc) - 0 = 0; c->e carries sacet
/// with prefix sac: W = cis(sac) - 0 = 0 (a different prefix, its own cis).
/// a->c and b->c get 0. At s (one prefix): s->a gets 0 - 0 = 0, cis(s) = 0 + 1;
/// s->b gets 1 - 0 = 1. So sacet = 0, sbcdt = 1: perfect (delta 0), yet the
/// uninteresting sacdt = 0 and sbcet = 1 fall inside [0, 1], as the lemma says
/// they must for some path.
#[test]
fn lemma_3_3_1_separation_counterexample() {
    // Edge ids: 0 sa, 1 sb, 2 ac, 3 bc, 4 cd, 5 ce, 6 dt, 7 et.
    let (dag, path) = named_dag("abcde", &["sa", "sb", "ac", "bc", "cd", "ce", "dt", "et"]);
    let bl = number(&dag).unwrap();
    let interesting = vec![path("sacet"), path("sbcdt")];
    let num = compute_ppp_increments(&dag, &bl, &interesting).unwrap();
    assert_eq!(num.inc, [0, 1, 0, 0, 0, 0, 0, 0]);
    assert_eq!(ids(&num, &interesting), [0, 1]);
    assert_eq!((num.min, num.max, delta(&num, 2)), (0, 1, 0));
    assert_eq!(ids(&num, &[path("sacdt"), path("sbcet")]), [0, 1]);
    // Ball-Larus by hand: Val(c->e) = 1, Val(s->b) = NumPaths(a) = 2, others
    // 0 (ties keep edge order): sacet = 1, sbcdt = 2, delta 0 as well.
    assert_eq!(bl.val, [0, 2, 0, 0, 0, 1, 0, 0]);
    assert_eq!(ball_larus_delta(&bl, &interesting), 0);
}

/// Lemma 3.3.2, Fig. 3.6: s->{a,b,c}->d->{e,f,g}->t with I = {sadft, sadgt,
/// sbdet, sbdgt, scdet, scdft}; the ids sum to an even number, so no perfect
/// numbering (0..=5, sum 15) exists and delta >= 1.
///
/// Fig. 3.10 by hand (edge order as listed). e->t, f->t, g->t get 0. At d,
/// prefixes A = sad, B = sbd, C = scd, all cis 0:
/// - d->e carries sbdet (B) and scdet (C), pids 0: W = max(0, 0) = 0;
///   cis(B) = cis(C) = 1.
/// - d->f carries sadft (A) and scdft (C): W = max(0 - 0, 1 - 0) = 1 (the
///   join); pids 1; cis(A) = cis(C) = 2.
/// - d->g carries sadgt (A) and sbdgt (B): W = max(2 - 0, 1 - 0) = 2; pids 2;
///   cis(A) = cis(B) = 3.
///
/// At a: a->d carries pids {1, 2}: W = 0 - 1 = -1 (pids 0, 1). At b: pids
/// {0, 2}, W = 0. At c: pids {0, 1}, W = 0. At s: s->a W = 0, cis = 2; s->b
/// W = 2 - 0 = 2 (pids 2, 4), cis = 5; s->c W = 5 (pids 5, 6).
/// Ids: sadft 0, sadgt 1, sbdet 2, sbdgt 4, scdet 5, scdft 6: [0, 6] with a
/// hole at 3, delta 1, the best possible here.
#[test]
fn lemma_3_3_2_perfect_assignment_counterexample() {
    // Edge ids: 0 sa, 1 sb, 2 sc, 3 ad, 4 bd, 5 cd, 6 de, 7 df, 8 dg, 9 et,
    // 10 ft, 11 gt.
    let (dag, path) = named_dag(
        "abcdefg",
        &[
            "sa", "sb", "sc", "ad", "bd", "cd", "de", "df", "dg", "et", "ft", "gt",
        ],
    );
    let bl = number(&dag).unwrap();
    let names = ["sadft", "sadgt", "sbdet", "sbdgt", "scdet", "scdft"];
    let interesting: Vec<Vec<DagEdgeId>> = names.iter().map(|p| path(p)).collect();
    let num = compute_ppp_increments(&dag, &bl, &interesting).unwrap();
    assert_eq!(num.inc, [0, 2, 5, -1, 0, 0, 0, 1, 2, 0, 0, 0]);
    assert_eq!(ids(&num, &interesting), [0, 1, 2, 4, 5, 6]);
    assert_eq!((num.min, num.max, delta(&num, 6)), (0, 6, 1));
    // Ball-Larus by hand: Val(d->f) = 1, Val(d->g) = 2, Val(s->b) = 3,
    // Val(s->c) = 6: ids 1, 2, 3, 5, 6, 7, span 7, delta 1 too.
    assert_eq!(ball_larus_delta(&bl, &interesting), 1);
}

/// Fig. 3.10 can be less compact than Ball-Larus, so [`choose`] exists.
/// s->b, s->a, a->v, b->v, v->w, v->t, w->x, w->t, x->t (in that order), with
/// I = {sbvwxt, sbvwt, sbvt, savwxt, savt}: all paths but savwt.
///
/// Fig. 3.10 by hand: x->t gets 0. At w, w->x carries savwxt (prefix savw)
/// and sbvwxt (sbvw), W = 0, cis 1 each; w->t carries sbvwt (sbvw), W = 1.
/// At v, v->w carries sav {0} and sbv {0, 1}: W = 0, cis(sav) = 1,
/// cis(sbv) = 2; v->t carries savt and sbvt at 0: W = max(1, 2) = 2, the join
/// leaving sav the ids {0, 2}. a->v and b->v get 0. At s, s->b gets 0 (ids 0,
/// 1, 2), cis = 3; s->a gets 3 - 0 = 3 (savwxt 3, savt 5). [0, 5] for 5
/// paths: delta 1.
///
/// Ball-Larus (5.2 sort, ties in edge order): Val(w->t) = 1; at v the
/// 1-path v->t comes first, Val(v->w) = 1; Val(s->a) = NumPaths(b) = 3. Ids:
/// sbvt 0, sbvwxt 1, sbvwt 2, savt 3, savwxt 4: delta 0.
#[test]
fn ppp_can_lose_to_ball_larus() {
    // Edge ids: 0 sb, 1 sa, 2 av, 3 bv, 4 vw, 5 vt, 6 wx, 7 wt, 8 xt.
    let (dag, path) = named_dag(
        "abvwx",
        &["sb", "sa", "av", "bv", "vw", "vt", "wx", "wt", "xt"],
    );
    let bl = number(&dag).unwrap();
    let interesting: Vec<Vec<DagEdgeId>> = ["sbvwxt", "sbvwt", "sbvt", "savwxt", "savt"]
        .iter()
        .map(|p| path(p))
        .collect();
    let num = compute_ppp_increments(&dag, &bl, &interesting).unwrap();
    assert_eq!(num.inc, [0, 3, 0, 0, 0, 2, 0, 1, 0]);
    assert_eq!(ids(&num, &interesting), [0, 1, 2, 3, 5]);
    assert_eq!((num.min, num.max, delta(&num, 5)), (0, 5, 1));
    assert_eq!(bl.val, [0, 3, 0, 0, 1, 0, 0, 1, 0]);
    let bl_ids: Vec<u64> = interesting.iter().map(|p| bl.path_sum(p)).collect();
    assert_eq!(bl_ids, [1, 2, 0, 4, 3]);
    assert_eq!(ball_larus_delta(&bl, &interesting), 0);

    let chosen = choose(&dag, &bl, &interesting).unwrap();
    assert_eq!(chosen.scheme, Scheme::BallLarus);
    assert_eq!(
        chosen.numbering,
        PppNumbering {
            inc: vec![0, 3, 0, 0, 1, 0, 0, 1, 0],
            min: 0,
            max: 4
        }
    );
    assert_eq!(ids(&chosen.numbering, &interesting), [1, 2, 0, 4, 3]);
    // On a tie (Fig. 3.5, both 0) PPP is kept; where PPP wins it is chosen.
    let (dag, path) = named_dag("abcd", &["sa", "sb", "ac", "ab", "bc", "cd", "ct", "dt"]);
    let fig34 = vec![path("sacdt"), path("sact"), path("sbct")];
    let chosen = choose(&dag, &number(&dag).unwrap(), &fig34).unwrap();
    assert_eq!(
        (chosen.scheme, ids(&chosen.numbering, &fig34)),
        (Scheme::Ppp, vec![0, 1, 2])
    );
    let (dag, path) = named_dag("abcde", &["sa", "sb", "ac", "bc", "cd", "ce", "dt", "et"]);
    let fig35 = vec![path("sacet"), path("sbcdt")];
    assert_eq!(
        choose(&dag, &number(&dag).unwrap(), &fig35).unwrap().scheme,
        Scheme::Ppp
    );
}

#[test]
fn empty_set_and_errors() {
    let (dag, path) = named_dag("abcd", &["sa", "sb", "ac", "ab", "bc", "cd", "ct", "dt"]);
    let bl = number(&dag).unwrap();
    let num = compute_ppp_increments(&dag, &bl, &[]).unwrap();
    assert_eq!(
        num,
        PppNumbering {
            inc: vec![0; 8],
            min: 0,
            max: 0
        }
    );
    assert_eq!((delta(&num, 0), ball_larus_delta(&bl, &[])), (0, 0));
    // A single path gets id 0.
    let one = compute_ppp_increments(&dag, &bl, &[path("sabcdt")]).unwrap();
    assert_eq!(
        (
            ppp_id(&one, &path("sabcdt")),
            one.min,
            one.max,
            delta(&one, 1)
        ),
        (0, 0, 0, 0)
    );

    let not_a_path = GraphError::InvalidNumbering {
        reason: "an interesting path is not an ENTRY->EXIT path of the DAG",
    };
    for bad in [
        vec![],
        path("sac"),
        path("acdt"),
        vec![DagEdgeId::new(0), DagEdgeId::new(4)],
        vec![DagEdgeId::new(99)],
    ] {
        assert_eq!(
            compute_ppp_increments(&dag, &bl, &[bad]),
            Err(not_a_path.clone())
        );
    }
    let short = Numbering {
        val: vec![0; 3],
        num_paths: bl.num_paths.clone(),
    };
    assert!(matches!(
        compute_ppp_increments(&dag, &short, &[]),
        Err(GraphError::LengthMismatch { .. })
    ));
}

/// 100 000 nodes in a chain n0 -> n1 -> ... with an edge to EXIT from each:
/// no recursion, and the long path is fine.
#[test]
fn long_chain() {
    let n = 100_000;
    let node = |i: usize| NodeId::new(i + 2);
    let mut edges = vec![(Cfg::ENTRY, node(0), DagEdgeKind::EntryDummy)];
    for i in 0..n {
        edges.push((node(i), Cfg::EXIT, DagEdgeKind::ExitDummy));
        if i + 1 < n {
            edges.push((node(i), node(i + 1), DagEdgeKind::EntryDummy));
        }
    }
    let dag = Dag::from_edges(n + 2, &edges);
    let bl = number(&dag).unwrap();
    // Path leaving the chain at node k: edge 0, then chain edges 2, 4, ...,
    // then the exit edge 2k + 1.
    let leave_at = |k: usize| -> Vec<DagEdgeId> {
        let mut p = vec![DagEdgeId::new(0)];
        p.extend((0..k).map(|i| DagEdgeId::new(2 * i + 2)));
        p.push(DagEdgeId::new(2 * k + 1));
        p
    };
    let interesting: Vec<_> = [n - 1, 0, n / 2, 7].iter().map(|&k| leave_at(k)).collect();
    let num = compute_ppp_increments(&dag, &bl, &interesting).unwrap();
    let mut got = ids(&num, &interesting);
    got.sort_unstable();
    assert_eq!(got, [0, 1, 2, 3]);
    assert_eq!(delta(&num, 4), 0);
}

/// Fig. 3.10 taken literally, as an oracle: a prefix is the sequence of
/// edges before `e` (a `Vec`, not a Ball-Larus sum), `cis` one global map
/// over all prefixes, `⊥` an explicit `None`, `paths_I(e)` found by scanning
/// every path. Quadratic; for small cases.
fn fig_3_10_literal(dag: &Dag, interesting: &[Vec<DagEdgeId>]) -> Vec<Option<i64>> {
    let mut paths = interesting.to_vec();
    paths.sort();
    paths.dedup();
    let mut pid = vec![0i64; paths.len()];
    let mut w: Vec<Option<i64>> = vec![None; dag.num_edges()];
    let mut cis: HashMap<Vec<DagEdgeId>, i64> = HashMap::new();
    for &v in topological_order(dag).unwrap().iter().rev() {
        for &e in dag.succs(v) {
            let through: Vec<(usize, Vec<DagEdgeId>)> = paths
                .iter()
                .enumerate()
                .filter_map(|(i, p)| p.iter().position(|&d| d == e).map(|k| (i, p[..k].to_vec())))
                .collect();
            let mut prefixes: Vec<&Vec<DagEdgeId>> = through.iter().map(|(_, q)| q).collect();
            prefixes.sort();
            prefixes.dedup();
            for &q in &prefixes {
                let min = through
                    .iter()
                    .filter(|(_, r)| r == q)
                    .map(|&(i, _)| pid[i])
                    .min()
                    .unwrap();
                let weight = cis.get(q).copied().unwrap_or(0) - min;
                if w[e.index()].is_none_or(|w| w < weight) {
                    w[e.index()] = Some(weight);
                }
            }
            for &(i, _) in &through {
                pid[i] += w[e.index()].unwrap();
            }
            for &q in &prefixes {
                let max = through
                    .iter()
                    .filter(|(_, r)| r == q)
                    .map(|&(i, _)| pid[i])
                    .max()
                    .unwrap();
                cis.insert(q.clone(), max + 1);
            }
        }
    }
    w
}

/// Ball-Larus Fig. 5 without the 5.2 sort (edge order), the thesis' own
/// numbering: another valid Val, to show prefixes only serve as keys.
fn unsorted_ball_larus(dag: &Dag) -> Numbering {
    let mut val = vec![0u64; dag.num_edges()];
    let mut num_paths = vec![0u64; dag.num_nodes];
    for &v in topological_order(dag).unwrap().iter().rev() {
        let mut sum = if dag.succs(v).is_empty() { 1 } else { 0 };
        for &d in dag.succs(v) {
            val[d.index()] = sum;
            sum += num_paths[dag.edge(d).dst.index()];
        }
        num_paths[v.index()] = sum;
    }
    Numbering { val, num_paths }
}

/// A random DAG (from a random CFG) with at most 64 paths, and picks of its
/// paths (with repetition) as the interesting set.
fn arb_case() -> impl Strategy<Value = (Dag, Vec<Vec<DagEdgeId>>, Vec<Vec<DagEdgeId>>)> {
    arb_cfg(9)
        .prop_filter_map("too many paths", |cfg| {
            let dag = Dag::new(&cfg).ok()?;
            let paths = enumerate_paths(&dag, 64)?;
            Some((dag, paths))
        })
        .prop_flat_map(|(dag, paths)| {
            let n = paths.len();
            (Just(dag), Just(paths), vec(0..n, 0..=2 * n))
        })
        .prop_map(|(dag, paths, picks)| {
            let interesting = picks.iter().map(|&i| paths[i].clone()).collect();
            (dag, paths, interesting)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Uniqueness within [min, max], min and max attained, delta by brute
    /// force, min = 0 (one prefix at ENTRY), the increments' sums, and
    /// `choose` gives unique ids with the smaller of the two deltas.
    #[test]
    fn ppp_on_random_dags((dag, all, interesting) in arb_case()) {
        let bl = number(&dag).unwrap();
        let num = compute_ppp_increments(&dag, &bl, &interesting).unwrap();
        let mut distinct = interesting.clone();
        distinct.sort();
        distinct.dedup();
        let mut got: Vec<i64> = distinct.iter().map(|p| p.iter().map(|d| num.inc[d.index()]).sum()).collect();
        for (p, &id) in distinct.iter().zip(&got) {
            prop_assert_eq!(ppp_id(&num, p), id);
        }
        got.sort_unstable();
        let before = got.len();
        got.dedup();
        prop_assert_eq!(got.len(), before, "interesting ids are unique");
        match (got.first(), got.last()) {
            (Some(&lo), Some(&hi)) => {
                prop_assert_eq!((num.min, num.max), (lo, hi));
                prop_assert_eq!(lo, 0);
                prop_assert_eq!(delta(&num, distinct.len()), (hi - lo + 1) as u64 - distinct.len() as u64);
                let bl_ids: Vec<u64> = distinct.iter().map(|p| bl.path_sum(p)).collect();
                let bl_brute = bl_ids.iter().max().unwrap() - bl_ids.iter().min().unwrap() + 1 - distinct.len() as u64;
                prop_assert_eq!(ball_larus_delta(&bl, &interesting), bl_brute);
                // Fig. 3.10 alone can lose to Ball-Larus (see
                // ppp_can_lose_to_ball_larus); `choose` never does.
                let chosen = choose(&dag, &bl, &interesting).unwrap();
                let mut chosen_ids: Vec<i64> = distinct.iter().map(|p| ppp_id(&chosen.numbering, p)).collect();
                chosen_ids.sort_unstable();
                chosen_ids.dedup();
                prop_assert_eq!(chosen_ids.len(), distinct.len(), "chosen ids are unique");
                prop_assert_eq!((chosen.numbering.min, chosen.numbering.max), (chosen_ids[0], *chosen_ids.last().unwrap()));
                let ppp_delta = delta(&num, distinct.len());
                let chosen_delta = (chosen_ids.last().unwrap() - chosen_ids[0] + 1) as u64 - distinct.len() as u64;
                prop_assert_eq!(chosen_delta, ppp_delta.min(bl_brute));
                prop_assert_eq!(delta(&chosen.numbering, distinct.len()), chosen_delta);
                prop_assert_eq!(chosen.scheme == Scheme::Ppp, ppp_delta <= bl_brute);
            }
            _ => {
                prop_assert_eq!((num.min, num.max, delta(&num, 0)), (0, 0, 0));
                prop_assert!(num.inc.iter().all(|&w| w == 0));
            }
        }
        // All paths interesting: a perfect numbering (every prefix at a node
        // sees the same full intervals, so the join adds no hole).
        let full = compute_ppp_increments(&dag, &bl, &all).unwrap();
        prop_assert_eq!(delta(&full, all.len()), 0);
    }

    /// The increments are Fig. 3.10 taken literally (edge-sequence prefixes,
    /// a global cis, ⊥ read as 0), whichever valid Ball-Larus numbering keys
    /// the prefixes; and with a useless key (all Val 0, every prefix into a
    /// node merged) the ids are still unique (the delta may go either way:
    /// Fig. 3.10 is greedy, more constraints can happen to help).
    #[test]
    fn ppp_is_fig_3_10((dag, _all, interesting) in arb_case()) {
        let literal: Vec<i64> = fig_3_10_literal(&dag, &interesting).iter().map(|w| w.unwrap_or(0)).collect();
        let sorted = compute_ppp_increments(&dag, &number(&dag).unwrap(), &interesting).unwrap();
        prop_assert_eq!(&sorted.inc, &literal);
        let unsorted = compute_ppp_increments(&dag, &unsorted_ball_larus(&dag), &interesting).unwrap();
        prop_assert_eq!(&unsorted, &sorted);
        let zeros = Numbering { val: vec![0; dag.num_edges()], num_paths: vec![0; dag.num_nodes] };
        let merged = compute_ppp_increments(&dag, &zeros, &interesting).unwrap();
        let mut distinct = interesting.clone();
        distinct.sort();
        distinct.dedup();
        let mut ids: Vec<i64> = distinct.iter().map(|p| ppp_id(&merged, p)).collect();
        ids.sort_unstable();
        ids.dedup();
        prop_assert_eq!(ids.len(), distinct.len());
    }
}
