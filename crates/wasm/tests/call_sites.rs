//! Call sites of the CFG (`FunctionCfg::calls`): offsets from an independent
//! wasmparser walk of the bodies, blocks numbered by hand.

mod common;

use common::*;
use pathprof_graph::NodeId;
use pathprof_wasm::{analyze, CallSite, Callee};
use wasmparser::{Operator, Parser, Payload};

/// Every call instruction of every defined function, reachable or not, in
/// code order: (module offset, callee, tail), found by wasmparser alone.
fn walk_calls(bytes: &[u8]) -> Vec<Vec<(u32, Callee, bool)>> {
    let mut out = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        let Payload::CodeSectionEntry(body) = payload.unwrap() else {
            continue;
        };
        let mut calls = Vec::new();
        let mut ops = body.get_operators_reader().unwrap();
        while !ops.eof() {
            let (op, offset) = ops.read_with_offset().unwrap();
            let tail = matches!(
                op,
                Operator::ReturnCall { .. }
                    | Operator::ReturnCallIndirect { .. }
                    | Operator::ReturnCallRef { .. }
            );
            let callee = match op {
                Operator::Call { function_index } | Operator::ReturnCall { function_index } => {
                    Callee::Direct(function_index)
                }
                Operator::CallIndirect {
                    type_index,
                    table_index,
                }
                | Operator::ReturnCallIndirect {
                    type_index,
                    table_index,
                } => Callee::Indirect {
                    type_index,
                    table: table_index,
                },
                Operator::CallRef { type_index } | Operator::ReturnCallRef { type_index } => {
                    Callee::Ref(type_index)
                }
                _ => continue,
            };
            calls.push((offset as u32, callee, tail));
        }
        out.push(calls);
    }
    out
}

fn site(walked: (u32, Callee, bool), block: usize) -> CallSite {
    CallSite {
        offset: walked.0,
        block: NodeId::new(block),
        callee: walked.1,
        tail: walked.2,
    }
}

/// Every kind of call, an `if` with both arms, and a call in dead code.
const CALLS: &str = r#"
(module
  (type $v (func))
  (type $ii (func (param i32) (result i32)))
  (import "env" "h" (func $h))
  (table $t0 1 funcref)
  (table $t1 2 funcref)
  (elem (table $t1) (i32.const 0) func $f $g)
  (func $f (type $ii)
    call $h
    local.get 0
    if (result i32)
      local.get 0
      i32.const 1
      i32.sub
      call $f
    else
      i32.const 7
      i32.const 0
      call_indirect $t1 (type $ii)
    end
    drop
    block
      br 0
      call $h
    end
    local.get 0
    ref.func $g
    return_call_ref $ii)
  (func $g (type $ii)
    local.get 0
    return_call $f)
  (func $k
    i32.const 0
    call_indirect $t0 (type $v)
    loop
      i32.const 0
      return_call_indirect $t0 (type $v)
    end))
"#;

#[test]
fn call_sites_of_every_kind() {
    let bytes = wat::parse_str(CALLS).unwrap();
    let info = analyze(&bytes).unwrap();
    let walked = walk_calls(&bytes);
    let f = |i: usize| info.functions[i].as_ref().unwrap();

    // $f: block 2 runs up to `if`; the then-arm is block 3, the else-arm 4,
    // the join after the if 5; the `block` whose label `br 0` targets
    // closes into block 6. The second `call $h` is dead: no site.
    let w = &walked[0];
    assert_eq!(w.len(), 5);
    assert_eq!(w[0].1, Callee::Direct(0));
    assert_eq!(
        w[2].1,
        Callee::Indirect {
            type_index: 1,
            table: 1
        }
    );
    assert_eq!((w[4].1, w[4].2), (Callee::Ref(1), true));
    assert_eq!(
        f(0).calls,
        vec![site(w[0], 2), site(w[1], 3), site(w[2], 4), site(w[4], 6)]
    );
    assert_eq!(f(0).func_index, 1);

    // $g: one block.
    assert_eq!(walked[1][0].1, Callee::Direct(1));
    assert_eq!(f(1).calls, vec![site(walked[1][0], 2)]);

    // $k: block 2, then the loop header gets a block of its own (3)
    // because block 2 ran a call before the `loop`.
    let w = &walked[2];
    assert_eq!(
        w[0].1,
        Callee::Indirect {
            type_index: 0,
            table: 0
        }
    );
    assert_eq!(f(2).calls, vec![site(w[0], 2), site(w[1], 3)]);
}

#[test]
fn call_site_offsets_point_at_call_opcodes() {
    let bytes = wat::parse_str(CALLS).unwrap();
    let info = analyze(&bytes).unwrap();
    let opcodes: Vec<u8> = cfgs(&info)
        .flatten()
        .flat_map(|f| f.calls.iter().map(|c| bytes[c.offset as usize]))
        .collect();
    // call, call, call_indirect, return_call_ref | return_call |
    // call_indirect, return_call_indirect.
    assert_eq!(opcodes, [0x10, 0x10, 0x11, 0x15, 0x12, 0x11, 0x13]);
}

/// Fixtures without dead code: every call instruction the walk finds is a
/// call site, and its block's byte range holds it.
#[test]
fn fixture_call_sites_match_the_walk() {
    for name in ["tail_calls", "module_items", "exceptions", "gc_casts"] {
        let bytes = fixture(name);
        let info = analyze(&bytes).unwrap();
        let walked = walk_calls(&bytes);
        for (i, f) in info.functions.iter().enumerate() {
            let f = f.as_ref().unwrap();
            let got: Vec<(u32, Callee, bool)> = f
                .calls
                .iter()
                .map(|c| (c.offset, c.callee, c.tail))
                .collect();
            assert_eq!(got, walked[i], "{name} function {i}");
            for c in &f.calls {
                let b = f.blocks[c.block.index()].unwrap();
                assert!(b.offset <= c.offset && c.offset < b.end, "{name} {c:?}");
            }
        }
    }
}
