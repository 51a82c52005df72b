//! Hand-traced streams: each expected path is worked out in the comments from
//! Tables 5.1/5.2 and the rules of 5.2, not from the detector's output.

use super::*;
use crate::testing::ev;

const CALL: BranchKind = BranchKind::Call { indirect: false };
const RET: BranchKind = BranchKind::Return;
const JUMP: BranchKind = BranchKind::Jump;
const TAKEN: BranchKind = BranchKind::Conditional { taken: true };
const NOT: BranchKind = BranchKind::Conditional { taken: false };

/// (start, length, outcome bits, events) of each collected path, in order.
type Collected = Vec<(u32, u16, u128, u64)>;

fn run(d: &mut PathDetector, stream: &[BranchEvent]) -> Collected {
    let mut out = Vec::new();
    for e in stream {
        d.step(e, u64::from(e.instrs), &mut |p, n| {
            out.push((p.start, p.len, p.outcomes, n))
        });
    }
    out
}

/// A procedure at 100 with a loop (header 100, latch jump at 110) calling a
/// leaf at 200 once, entered from and returning to the host.
fn loop_and_call() -> Vec<BranchEvent> {
    vec![
        ev(CALL, 0, 100, false, 2),    // host calls 100
        ev(TAKEN, 104, 108, false, 3), // forward, taken
        ev(JUMP, 110, 100, true, 2),   // latch: backward
        ev(NOT, 104, 106, false, 3),   // forward, not taken
        ev(CALL, 106, 200, false, 1),  // call the leaf
        ev(RET, 204, 107, false, 4),   // leaf returns
        ev(RET, 120, 0, false, 5),     // back to the host
    ]
}

#[test]
fn ball_larus_paths_of_a_loop_and_a_call() {
    // Call: count (stack empty: 2 orphan events), push 100.
    // Taken: update 100 -> len 1, bits 1, events 3.
    // Latch: update -> len 2, bits 11, events 5; pop (collect); push 100.
    // Not taken: len 1, bits 0, events 3. Call: count -> 4; push 200.
    // Leaf return: count 4 on 200's empty path; pop (collect).
    // Return: count -> 9 on 100's path; pop (collect).
    let mut d = PathDetector::new(PathType::Bl, 32, 32);
    let got = run(&mut d, &loop_and_call());
    assert_eq!(
        got,
        vec![(100, 2, 0b11, 5), (200, 0, 0, 4), (100, 1, 0b0, 9)]
    );
    let s = d.stats();
    assert_eq!((s.paths, s.orphan_events, s.resyncs), (3, 2, 0));
    assert_eq!((s.stack.pushes, s.stack.pops, s.stack.max_depth), (3, 3, 2));
    assert_eq!(d.in_flight(), 0);
}

#[test]
fn whole_program_path_elements_end_at_calls_and_returns() {
    // Call: count (2 orphan), pop (underflow), push 100.
    // Taken, latch: as for BL, collect (100, 2, 11, 5), push 100.
    // Not taken: len 1, bits 0, events 3. Call: count -> 4; pop (collect);
    // push 200. Leaf return: count 4; pop (collect 200); push 107.
    // Return: count 5 on 107; pop (collect 107); push 0 (the host).
    let mut d = PathDetector::new(PathType::Wpp, 32, 32);
    let got = run(&mut d, &loop_and_call());
    assert_eq!(
        got,
        vec![
            (100, 2, 0b11, 5),
            (100, 1, 0b0, 4),
            (200, 0, 0, 4),
            (107, 0, 0, 5)
        ]
    );
    let s = d.stats();
    assert_eq!((s.stack.underflows, s.stack.max_depth), (1, 1));
    assert_eq!(d.in_flight(), 1, "the path at the host's address 0");
}

#[test]
fn extended_loop_paths_span_one_backward_branch() {
    // Three iterations of body (cond) + latch at 110, then the exit.
    // it1: taken (bit 1), latch: ext 0 < 1 -> update only (bit 1), ext 1.
    // it2: not taken (0), latch: ext 1 = max -> update (1), pop, push 100:
    //      collect (100, 4, bits 1,1,0,1 -> 0b1011, events 2+2+2+2 = 8).
    // it3: taken (1), latch extends (1), ext 1; exit: not taken forward (0);
    // return: count 1, pop: collect (100, 3, bits 1,1,0 -> 0b011, 7).
    let stream = [
        ev(CALL, 0, 100, false, 1),
        ev(TAKEN, 104, 108, false, 2),
        ev(JUMP, 110, 100, true, 2),
        ev(NOT, 104, 106, false, 2),
        ev(JUMP, 110, 100, true, 2),
        ev(TAKEN, 104, 108, false, 2),
        ev(JUMP, 110, 100, true, 2),
        ev(NOT, 112, 116, false, 2),
        ev(RET, 120, 0, false, 1),
    ];
    let mut d = PathDetector::new(PathType::ExtendedLoop { max: 1 }, 32, 32);
    assert_eq!(
        run(&mut d, &stream),
        vec![(100, 4, 0b1011, 8), (100, 3, 0b011, 7)]
    );
}

#[test]
fn extended_call_paths_span_a_call_and_its_return() {
    // 100: taken (1); call 200: ext 0 < 1 -> update (1), ext 1, frames 2;
    // 200: not taken (0); return to 107: ext 1 -> update (1), ext 0,
    // frames 1; taken (1); return to host: count, pop: collect
    // (100, 5, bits 1,1,0,1,1 -> 0b11011, events 1+1+1+1+1+1 = 6 with the
    // host's call orphaned).
    let stream = [
        ev(CALL, 0, 100, false, 1),
        ev(TAKEN, 102, 104, false, 1),
        ev(CALL, 104, 200, false, 1),
        ev(NOT, 202, 204, false, 1),
        ev(RET, 206, 107, false, 1),
        ev(TAKEN, 108, 110, false, 1),
        ev(RET, 112, 0, false, 1),
    ];
    let mut d = PathDetector::new(PathType::ExtendedCall { max: 1 }, 32, 32);
    assert_eq!(run(&mut d, &stream), vec![(100, 5, 0b11011, 6)]);
    assert_eq!(d.stats().orphan_events, 1);
}

#[test]
fn a_path_ending_inside_an_extended_callee_keeps_the_frames() {
    // 100: call 200 extends (bit 1, ext 1, frames 2). 200's latch at 210
    // (backward, bit 1): update, pop: collect (100, 2, 0b11, 2); push 200
    // standing for 2 frames, ext 0. Return to 107: ext 0 but frames 2 ->
    // count, pop: collect (200, 0, 0, 1); push 107 standing for 1 frame.
    // Return to host: count, pop: collect (107, 0, 0, 1); stack empty.
    let stream = [
        ev(CALL, 0, 100, false, 1),
        ev(CALL, 104, 200, false, 1),
        ev(JUMP, 210, 200, true, 1),
        ev(RET, 206, 107, false, 1),
        ev(RET, 112, 0, false, 1),
    ];
    let mut d = PathDetector::new(PathType::ExtendedCall { max: 1 }, 32, 32);
    let got = run(&mut d, &stream);
    assert_eq!(got, vec![(100, 2, 0b11, 2), (200, 0, 0, 1), (107, 0, 0, 1)]);
    assert_eq!((d.in_flight(), d.stats().stack.underflows), (0, 0));
}

#[test]
fn throw_unwinds_frames_and_catch_restarts_the_handler_frame() {
    // Host calls 100, which calls 200, which calls 300: three entries.
    // 300 throws 2 frames (its own and 200's): count 1 on 300's path, which
    // ends there: collect (300, 0, 0, 1); then pop 200's (discarded).
    // Arrival at 150 in 100's frame: count 1, pop 100's path (discarded),
    // push 150. Return to host: count 1, pop: collect (150, 0, 0, 1).
    // Events discarded: 200's path 1 (its call to 300), 100's path 1 (its
    // call to 200) + 1 (the catch) = 3.
    let stream = [
        ev(CALL, 0, 100, false, 1),
        ev(CALL, 104, 200, false, 1),
        ev(CALL, 204, 300, false, 1),
        ev(BranchKind::Throw { frames: 2 }, 304, 150, false, 1),
        ev(BranchKind::Catch, 304, 150, false, 1),
        ev(RET, 152, 0, false, 1),
    ];
    let mut d = PathDetector::new(PathType::Bl, 32, 32);
    assert_eq!(run(&mut d, &stream), vec![(300, 0, 0, 1), (150, 0, 0, 1)]);
    let s = d.stats();
    assert_eq!((s.discarded_paths, s.discarded_events), (2, 3));
    assert_eq!((s.stack.underflows, d.in_flight()), (0, 0));
}

#[test]
fn tail_call_ends_the_callers_path_in_the_same_frame() {
    // 100: taken (1); tail call 200: count, pop: collect (100, 1, 1, 2);
    // push 200. Return to host: count, pop: collect (200, 0, 0, 1).
    let stream = [
        ev(CALL, 0, 100, false, 1),
        ev(TAKEN, 102, 104, false, 1),
        ev(BranchKind::TailCall { indirect: true }, 106, 200, false, 1),
        ev(RET, 202, 0, false, 1),
    ];
    let mut d = PathDetector::new(PathType::Bl, 32, 32);
    assert_eq!(run(&mut d, &stream), vec![(100, 1, 1, 2), (200, 0, 0, 1)]);
}

#[test]
fn full_paths_split_at_the_branch_target() {
    // Max length 2. 100: taken (1), not taken (0): full -> pop: collect
    // (100, 2, 0b01, 2); push 106 (the second branch's target).
    // Taken (1); return: collect (106, 1, 1, 2).
    let stream = [
        ev(CALL, 0, 100, false, 1),
        ev(TAKEN, 102, 104, false, 1),
        ev(NOT, 105, 106, false, 1),
        ev(TAKEN, 107, 108, false, 1),
        ev(RET, 110, 0, false, 1),
    ];
    let mut d = PathDetector::new(PathType::Bl, 2, 32);
    assert_eq!(
        run(&mut d, &stream),
        vec![(100, 2, 0b01, 2), (106, 1, 1, 2)]
    );
    assert_eq!(d.stats().splits, 1);
    assert_eq!(d.split_starts(), [100], "the path split started at 100");
}

#[test]
fn update_on_an_empty_stack_resyncs_at_the_branch() {
    // No call first: the taken branch at 40 starts a path at 40 (resync);
    // the latch at 48 collects (40, 2, 0b11, 2) and pushes 30.
    let stream = [ev(TAKEN, 40, 44, false, 1), ev(JUMP, 48, 30, true, 1)];
    let mut d = PathDetector::new(PathType::Bl, 32, 32);
    assert_eq!(run(&mut d, &stream), vec![(40, 2, 0b11, 2)]);
    assert_eq!((d.stats().resyncs, d.in_flight()), (1, 1));
}

#[test]
fn op_counts_of_a_backward_branch_and_a_split() {
    let mut d = PathDetector::new(PathType::Bl, 1, 4);
    let none = &mut |_, _| {};
    d.step(&ev(CALL, 0, 100, false, 1), 1, none);
    let back = d.step(&ev(JUMP, 110, 100, true, 1), 1, none);
    let want = OpCounts {
        updates: 1,
        collected: 1,
        pushes: 1,
        ..OpCounts::default()
    };
    assert_eq!(back, want, "update, pop, push: no extra split");
    let split = d.step(&ev(TAKEN, 102, 104, false, 1), 1, none);
    assert_eq!(split, want, "a forward branch filling the path splits it");
}
