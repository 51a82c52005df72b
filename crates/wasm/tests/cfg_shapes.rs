//! The CFG builder on small functions whose graphs are derived by hand.

mod common;

use common::*;
use pathprof_graph::{Cfg, EdgeId, NodeId};
use pathprof_wasm::{analyze, BlockInfo, EdgeKind, EdgeKind::*, FunctionCfg};

fn only_function(wat: &str) -> FunctionCfg {
    let bytes = wat::parse_str(wat).unwrap();
    let info = analyze(&bytes).unwrap();
    info.functions
        .into_iter()
        .next()
        .unwrap()
        .expect("supported")
}

/// Edges as (src, dst, kind) with node indices.
fn edges(f: &FunctionCfg) -> Vec<(usize, usize, EdgeKind)> {
    f.cfg
        .edge_ids()
        .map(|e| {
            (
                f.cfg.src(e).index(),
                f.cfg.dst(e).index(),
                f.edge_kinds[e.index()],
            )
        })
        .collect()
}

#[test]
fn empty_function() {
    let f = only_function("(module (func))");
    assert_eq!(f.cfg.num_nodes(), 3);
    assert_eq!(edges(&f), vec![(0, 2, Entry), (2, 1, Fallthrough)]);
    assert_eq!(f.blocks[0], None);
    assert_eq!(f.blocks[1], None);
    assert_eq!(f.blocks[2].unwrap().instrs, 1); // the function's `end`
}

#[test]
fn block_offsets_cover_the_body() {
    // Body: 0x00 locals, then nop nop end (three one-byte instructions).
    let bytes = wat::parse_str("(module (func nop nop))").unwrap();
    let info = analyze(&bytes).unwrap();
    let f = info.functions[0].as_ref().unwrap();
    let b: BlockInfo = f.blocks[2].unwrap();
    assert_eq!(b.instrs, 3);
    assert_eq!(b.end - b.offset, 3);
    assert_eq!(bytes[b.offset as usize], 0x01); // nop
    assert_eq!(bytes[b.end as usize - 1], 0x0b); // end
    let body_end = wasmparser::Parser::new(0)
        .parse_all(&bytes)
        .find_map(|p| match p {
            Ok(wasmparser::Payload::CodeSectionEntry(body)) => Some(body.range().end),
            _ => None,
        })
        .unwrap();
    assert_eq!(b.end as usize, body_end);
}

#[test]
fn block_with_br_if() {
    // B2 = [block get br_if] -BrIf-> J(4); -Fallthrough-> B3 = [end];
    // B3 -Fallthrough-> J; J = [end] -> EXIT.
    let f = only_function("(module (func (param i32) block local.get 0 br_if 0 end))");
    assert_eq!(
        edges(&f),
        vec![
            (0, 2, Entry),
            (2, 4, BrIf),
            (2, 3, Fallthrough),
            (3, 4, Fallthrough),
            (4, 1, Fallthrough)
        ]
    );
    assert_eq!(f.blocks[2].unwrap().instrs, 3);
    assert_eq!(f.blocks[3].unwrap().instrs, 1);
    assert_eq!(f.blocks[4].unwrap().instrs, 1);
}

#[test]
fn block_without_branches_is_no_boundary() {
    let f = only_function("(module (func block nop end nop))");
    assert_eq!(edges(&f), vec![(0, 2, Entry), (2, 1, Fallthrough)]);
    assert_eq!(f.blocks[2].unwrap().instrs, 5);
}

#[test]
fn loop_at_entry_is_the_entry_block() {
    // The entry block has run nothing when the loop starts: it is the header.
    let f = only_function("(module (func loop br 0 end))");
    assert_eq!(edges(&f), vec![(0, 2, Entry), (2, 2, Br)]);
}

#[test]
fn loop_after_code_gets_its_own_header() {
    let f = only_function("(module (func (param i32) nop loop local.get 0 br_if 0 end))");
    // B2 = [nop loop] -> H3 = [get br_if] -BrIf-> H3, -Fallthrough-> B4 = [end end] -> EXIT.
    assert_eq!(
        edges(&f),
        vec![
            (0, 2, Entry),
            (2, 3, Fallthrough),
            (3, 3, BrIf),
            (3, 4, Fallthrough),
            (4, 1, Fallthrough)
        ]
    );
}

#[test]
fn if_without_else_has_no_parallel_edges() {
    // B2 -IfThen-> B3 = [end] (empty arm, its own node) -> J4; B2 -IfElse-> J4.
    let f = only_function("(module (func (param i32) local.get 0 if end))");
    assert_eq!(
        edges(&f),
        vec![
            (0, 2, Entry),
            (2, 3, IfThen),
            (3, 4, Fallthrough),
            (2, 4, IfElse),
            (4, 1, Fallthrough)
        ]
    );
}

#[test]
fn dead_code_has_no_blocks() {
    let f = only_function(
        "(module (func (param i32) (result i32)
            i32.const 1 return
            block loop br 0 end local.get 0 br_if 0 end
            local.get 0 if nop else nop end
            i32.const 2))",
    );
    assert_eq!(edges(&f), vec![(0, 2, Entry), (2, 1, Return)]);
    assert_eq!(f.cfg.num_nodes(), 3);
}

#[test]
fn br_table_gets_one_edge_per_distinct_label() {
    let f = only_function(
        "(module (func (param i32)
            block block local.get 0 br_table 0 1 0 1 1 0 end end))",
    );
    let table: Vec<_> = edges(&f).into_iter().filter(|e| e.2 == BrTable).collect();
    assert_eq!(table.len(), 2);
}

#[test]
fn one_target_br_table_is_unconditional() {
    let f = only_function("(module (func (param i32) block local.get 0 br_table 0 0 0 end))");
    assert_eq!(
        edges(&f),
        vec![(0, 2, Entry), (2, 3, BrTable), (3, 1, Fallthrough)]
    );
}

#[test]
fn exits() {
    let bytes = wat::parse_str(
        r#"(module
            (tag $t)
            (type $f (func))
            (table 1 funcref)
            (func $a return)
            (func unreachable)
            (func return_call $a)
            (func i32.const 0 return_call_indirect (type $f))
            (func ref.func $a return_call_ref $f)
            (func throw $t)
            (func (param exnref) local.get 0 throw_ref)
            (elem declare func $a))"#,
    )
    .unwrap();
    let info = analyze(&bytes).unwrap();
    let kinds: Vec<Vec<EdgeKind>> = info
        .functions
        .iter()
        .map(|f| f.as_ref().unwrap().edge_kinds.clone())
        .collect();
    assert_eq!(
        kinds,
        vec![
            vec![Entry, Return],
            vec![Entry, Unreachable],
            vec![Entry, TailCall],
            vec![Entry, TailCall],
            vec![Entry, TailCall],
            vec![Entry, Throw],
            vec![Entry, ThrowRef],
        ]
    );
    for f in &info.functions {
        let f = f.as_ref().unwrap();
        assert_eq!(f.cfg.edge(EdgeId::new(1)).1, Cfg::EXIT);
    }
}

#[test]
fn catch_clauses_share_one_edge_per_label() {
    let bytes = fixture("exceptions");
    let info = analyze(&bytes).unwrap();
    for f in info.functions.iter().map(|f| f.as_ref().unwrap()) {
        let mut targets: Vec<NodeId> = f
            .cfg
            .edge_ids()
            .filter(|e| f.edge_kinds[e.index()] == Catch)
            .map(|e| f.cfg.dst(e))
            .collect();
        let n = targets.len();
        targets.sort();
        targets.dedup();
        assert_eq!(n, targets.len(), "function {}", f.func_index);
        for e in f
            .cfg
            .edge_ids()
            .filter(|e| f.edge_kinds[e.index()] == Catch)
        {
            assert_eq!(f.cfg.src(e), Cfg::ENTRY);
        }
    }
}

#[test]
fn names_come_from_the_name_section() {
    let bytes = fixture("module_items");
    let info = analyze(&bytes).unwrap();
    assert_eq!(info.num_imported_funcs, 1);
    assert_eq!(
        info.functions[0].as_ref().unwrap().name.as_deref(),
        Some("double")
    );
    assert_eq!(info.functions[0].as_ref().unwrap().func_index, 1);
}

#[test]
fn every_node_but_exit_is_reachable_and_blocks_are_consistent() {
    for (name, bytes) in fixtures() {
        let info = analyze(&bytes).unwrap();
        for f in info.functions.iter().map(|f| f.as_ref().unwrap()) {
            let g = &f.cfg;
            let mut seen = vec![false; g.num_nodes()];
            let mut stack = vec![Cfg::ENTRY];
            seen[0] = true;
            while let Some(n) = stack.pop() {
                for &e in g.succs(n) {
                    let d = g.dst(e);
                    if !seen[d.index()] {
                        seen[d.index()] = true;
                        stack.push(d);
                    }
                }
            }
            for (n, &reached) in seen.iter().enumerate().skip(2) {
                assert!(reached, "{name}: node {n} of {} unreachable", f.func_index);
                let b = f.blocks[n].unwrap();
                assert!(b.instrs > 0 && b.offset < b.end, "{name}: block {n} {b:?}");
            }
            assert_eq!(f.edge_kinds.len(), g.num_edges());
            assert_eq!(f.blocks.len(), g.num_nodes());
        }
    }
}
