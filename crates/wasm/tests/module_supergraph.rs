//! The module supergraph (`pathprof_wasm::supergraph`) of a hand-written
//! module of every call kind, blocks and call sites numbered by hand; and
//! the trace converter on hand-made traces of it.

use pathprof_graph::interproc::{CallSiteId, Callee as SgCallee, Event, FuncId, TailCall};
use pathprof_graph::{EdgeId, NodeId};
use pathprof_wasm::analyze;
use pathprof_wasm::supergraph::{events, ModuleSupergraph, TraceError};

/// Function indices: 0 = import $h, 1 = $main, 2 = $leaf, 3 = $ind,
/// 4 = $tail, 5 = $thrower; $leaf and $ind are in the table.
const MODULE: &str = r#"
(module
  (type $v (func))
  (type $ii (func (param i32) (result i32)))
  (import "env" "h" (func $h))
  (tag $e)
  (table 2 funcref)
  (elem (i32.const 0) func $leaf $ind)
  (func $main (export "main") (param i32) (result i32)
    call $h
    local.get 0
    call $leaf
    local.get 0
    i32.const 1
    call_indirect (type $ii)
    i32.add
    local.get 0
    if (result i32)
      local.get 0
      call $tail
    else
      (block $c (try_table (catch $e $c) call $thrower) (return (i32.const 7)))
      i32.const 9
    end
    i32.add)
  (func $leaf (param i32) (result i32)
    local.get 0)
  (func $ind (param i32) (result i32)
    local.get 0
    return_call $leaf)
  (func $tail (param i32) (result i32)
    local.get 0
    i32.const 0
    call_indirect (type $ii))
  (func $thrower
    throw $e)
  (start $thrower)
)"#;

fn supergraph() -> ModuleSupergraph {
    let bytes = wat::parse_str(MODULE).unwrap();
    let info = analyze(&bytes).unwrap();
    ModuleSupergraph::new(&bytes, &info).unwrap()
}

const MAIN: FuncId = FuncId::from_u32(0);
const LEAF: FuncId = FuncId::from_u32(1);
const IND: FuncId = FuncId::from_u32(2);
const TAIL: FuncId = FuncId::from_u32(3);
const THROWER: FuncId = FuncId::from_u32(4);

#[test]
fn sites_tail_calls_throws_handlers_and_entries() {
    let msg = supergraph();
    let sg = &msg.supergraph;
    assert_eq!(sg.functions.len(), 5);
    // main's blocks: 2 = entry block (call $h, call $leaf, call_indirect,
    // if), 3 = then arm, 4 = else arm (try_table body, call $thrower),
    // then the blocks after the try_table and the catch target.
    let main = &sg.functions[MAIN.index()];
    let callees: Vec<(usize, SgCallee)> = main
        .calls
        .iter()
        .map(|c| (c.block.index(), c.callee.clone()))
        .collect();
    // call $h is opaque; call_indirect $ii may reach every declared
    // function of type $ii: $leaf and $ind (table) and $main (export).
    assert_eq!(
        callees,
        [
            (2, SgCallee::Direct(LEAF)),
            (2, SgCallee::Indirect(vec![MAIN, LEAF, IND])),
            (3, SgCallee::Direct(TAIL)),
            (4, SgCallee::Direct(THROWER)),
        ]
    );
    // Local call indices in FunctionCfg::calls: 0 is `call $h`.
    assert_eq!(msg.call_index[MAIN.index()], [1, 2, 3, 4]);
    assert_eq!(msg.calls_of(MAIN, NodeId::new(2)), 0..2);
    assert_eq!(msg.calls_of(MAIN, NodeId::new(4)), 3..4);
    assert_eq!(main.handlers.len(), 1);
    assert_eq!(
        sg.functions[IND.index()].tail_calls,
        [TailCall {
            block: NodeId::new(2),
            callee: SgCallee::Direct(LEAF)
        }]
    );
    assert!(sg.functions[IND.index()].calls.is_empty());
    assert_eq!(
        sg.functions[TAIL.index()].calls[0].callee,
        SgCallee::Indirect(vec![MAIN, LEAF, IND])
    );
    assert_eq!(sg.functions[THROWER.index()].throws, [NodeId::new(2)]);
    // main (export), then the start function.
    assert_eq!(sg.entries, [MAIN, THROWER]);
    assert_eq!(msg.site_start, [0, 4, 4, 4, 5, 5]);
}

#[test]
fn a_trace_becomes_calls_returns_tail_calls() {
    let msg = supergraph();
    let m = msg.num_imported_funcs;
    let main = msg.supergraph.functions[MAIN.index()].cfg.clone();
    let edge_into = |from: usize, to: usize| {
        main.edge_ids()
            .find(|&e| main.edge(e) == (NodeId::new(from), NodeId::new(to)))
            .unwrap()
            .index() as u32
    };
    // main(1): ENTRY -> 2, call $leaf (2 -> EXIT), call_indirect reaching
    // $ind, which tail-calls $leaf, then the then arm calls $tail, whose
    // call_indirect reaches $leaf; main returns.
    let f = |func: FuncId| func.index() as u32 + m;
    let trace = [
        (f(MAIN), 0),
        (f(LEAF), 0),
        (f(LEAF), 1),
        (f(IND), 0),
        (f(IND), 1),
        (f(LEAF), 0),
        (f(LEAF), 1),
        (f(MAIN), edge_into(2, 3)),
        (f(TAIL), 0),
        (f(LEAF), 0),
        (f(LEAF), 1),
        (f(TAIL), 1),
    ];
    let got = events(&msg, &trace).unwrap();
    let call = |site: Option<usize>, callee| Event::Call {
        site: site.map(CallSiteId::new),
        callee,
    };
    let e = |i: u32| Event::Edge(EdgeId::new(i as usize));
    assert_eq!(
        got,
        [
            call(None, MAIN),
            e(0),
            call(Some(0), LEAF),
            e(0),
            e(1),
            Event::Return,
            call(Some(1), IND),
            e(0),
            Event::TailCall { callee: LEAF },
            e(0),
            e(1),
            Event::Return,
            e(edge_into(2, 3)),
            call(Some(2), TAIL),
            e(0),
            call(Some(4), LEAF),
            e(0),
            e(1),
            Event::Return,
            e(1),
            Event::Return,
        ]
    );
    // The trace ended at $tail's return edge: $tail did return (nothing
    // can trap between a return edge and the return), main had not.
    // An edge of main's while $leaf runs does not fit.
    let bad = [(f(MAIN), 0), (f(LEAF), 0), (f(MAIN), edge_into(2, 3))];
    assert!(matches!(
        events(&msg, &bad),
        Err(TraceError::Misplaced { index: 2, .. })
    ));
    // Leaving block 2 before its calls ran: the indirect call reached
    // something unprofiled.
    let skipped = [
        (f(MAIN), 0),
        (f(LEAF), 0),
        (f(LEAF), 1),
        (f(MAIN), edge_into(2, 3)),
    ];
    assert_eq!(
        events(&msg, &skipped),
        Err(TraceError::SkippedSite {
            index: 3,
            func: f(MAIN),
            call: 1
        })
    );
}
