//! The branch stream of small programs, worked out by hand: the kinds of the
//! events in order, and their addresses checked against the instructions at
//! those offsets (read here from the module bytes).

mod common;

use common::{plans_with, trace_plan, Call};
use pathprof_wasm::branches::{BranchEvent, BranchKind};
use pathprof_wasm::{analyze, instrument, BranchStream};

/// The branch events of `calls` on `wat`, made from its per-edge trace.
fn branches(wat: &str, calls: &[Call]) -> (Vec<u8>, Vec<BranchEvent>) {
    let bytes = wat::parse_str(wat).unwrap();
    let info = analyze(&bytes).unwrap();
    let traced = instrument(&bytes, &info, &plans_with(&info, trace_plan), &[]).unwrap();
    let run = common::run(&traced.bytes, calls);
    let mut events = Vec::new();
    let mut stream = BranchStream::new(&bytes, &info, |e| events.push(e)).unwrap();
    for &(func, edge) in &run.events {
        stream.edge(func, edge).unwrap();
    }
    stream.finish();
    assert!(stream.frames().is_empty());
    drop(stream);
    (bytes, events)
}

/// The first offset in `bytes` past `from` holding `opcode`.
fn find(bytes: &[u8], from: u32, opcode: u8) -> u32 {
    from + bytes[from as usize..]
        .iter()
        .position(|&b| b == opcode)
        .unwrap() as u32
}

const CALL: u8 = 0x10;
const END: u8 = 0x0b;
const BR_IF: u8 = 0x0d;
const LOCAL_GET: u8 = 0x20;

/// A loop of two iterations, each calling a leaf; the loop's `br_if` is
/// taken once (backward) and falls through once.
#[test]
fn loop_with_a_call() {
    let wat = r#"(module
      (func $leaf (param i32) (result i32)
        local.get 0 i32.const 1 i32.add)
      (func (export "main") (param $n i32) (result i32) (local $s i32)
        (loop $l
          (local.set $s (i32.add (local.get $s) (call $leaf (local.get $n))))
          (local.set $n (i32.sub (local.get $n) (i32.const 1)))
          (br_if $l (local.get $n)))
        local.get $s))"#;
    let calls = [Call {
        export: "main".into(),
        args: vec![2],
    }];
    let (bytes, events) = branches(wat, &calls);
    let kinds: Vec<BranchKind> = events.iter().map(|e| e.kind).collect();
    let direct = BranchKind::Call { indirect: false };
    let taken = BranchKind::Conditional { taken: true };
    let not_taken = BranchKind::Conditional { taken: false };
    use BranchKind::Return;
    assert_eq!(
        kinds,
        [direct, direct, Return, taken, direct, Return, not_taken, Return]
    );
    // The host calls main: from address 0, into main's first block, which
    // is the loop header (the `loop` opens it; the body starts with
    // `local.get $s`, main's first instruction after the loop opener).
    let main_entry = events[0].target;
    assert_eq!(events[0].address, 0);
    // The leaf is called from the `call` of main's loop body, and returns
    // to the instruction after it (`call 0`: two bytes).
    let call_at = find(&bytes, main_entry, CALL);
    for (c, r) in [(1, 2), (4, 5)] {
        assert_eq!(events[c].address, call_at);
        assert_eq!(events[r].target, call_at + 2);
        assert_eq!(bytes[events[r].address as usize], END, "the leaf's end");
        // The leaf's four instructions, `end` included, retire before it returns.
        assert_eq!(events[r].instrs, 4);
        assert_eq!(bytes[events[c].target as usize], LOCAL_GET);
    }
    // The backward branch is the `br_if`, to the loop header.
    let br_if = find(&bytes, call_at, BR_IF);
    assert_eq!(events[3].address, br_if);
    assert_eq!(events[3].target, main_entry);
    assert!(events[3].backward);
    assert_eq!(events[6].address, br_if);
    assert_eq!(events[6].target, br_if + 2);
    assert!(events.iter().filter(|e| e.backward).count() == 1);
    // main returns to the host from its `end`.
    assert_eq!(bytes[events[7].address as usize], END);
    assert_eq!(events[7].target, 0);
}

/// `br_table` arms, an `if` both ways, and `unreachable` ending the run.
#[test]
fn switch_if_and_a_trap() {
    let wat = r#"(module
      (func (export "f") (param i32) (result i32)
        (block $b2 (block $b1 (block $b0
          (br_table $b0 $b1 $b2 $b1 (local.get 0)))
          (return (i32.const 10)))
          (if (result i32) (i32.eq (local.get 0) (i32.const 1))
            (then (i32.const 11)) (else (i32.const 13)))
          (return))
        unreachable))"#;
    let calls: Vec<Call> = [0, 1, 3, 2]
        .iter()
        .map(|&a| Call {
            export: "f".into(),
            args: vec![a],
        })
        .collect();
    let (_, events) = branches(wat, &calls);
    let kinds: Vec<BranchKind> = events.iter().map(|e| e.kind).collect();
    let call = BranchKind::Call { indirect: false };
    // Three distinct labels: three arms, numbered in label order of the
    // table's first mention ($b0, $b1, $b2).
    let arm = |arm| BranchKind::Switch { arm, arms: 3 };
    let cond = |taken| BranchKind::Conditional { taken };
    use BranchKind::Return;
    assert_eq!(
        kinds,
        [
            call,
            arm(0),
            Return,
            call,
            arm(1),
            cond(true),
            Return,
            call,
            arm(1),
            cond(false),
            Return,
            call,
            arm(2),
            BranchKind::Throw { frames: 1 },
        ]
    );
    assert!(events.iter().all(|e| !e.backward));
}
