//! The Path Profiler Control Register (thesis 5.2): which profiler operations
//! each class of retiring branch performs, for each type of path.
//!
//! Branch classes are the thesis' call, return, forward, backward and
//! indirect, plus tail calls, throws and catch arrivals, which WebAssembly
//! has and the thesis' Alpha stream did not. The operations run in the fixed
//! order update or update_count, then pop, then push.
//!
//! | path type | call | return | forward | backward | indirect |
//! |---|---|---|---|---|---|
//! | [`PathType::Bl`] (Table 5.1) | count, push | count, pop | update | update, pop, push | update, pop, push |
//! | [`PathType::Wpp`] (Table 5.2) | count, pop, push | count, pop, push | update | update, pop, push | update, pop, push |
//!
//! Extended paths reuse Table 5.1, qualified by the top entry's extension
//! counter: [`PathType::ExtendedLoop`] turns a backward branch into a bare
//! update (and counts the extension) while the counter is below `max`;
//! [`PathType::ExtendedCall`] turns a call into an update while the counter is
//! below `max` and a return into an update while it is non-zero (counting
//! down).
//!
//! Departures from the thesis:
//! - A tail call performs update_count, pop, push in every path type: the
//!   caller's path ends and the callee's begins in the same frame.
//! - A throw performs update_count; the unwinding and the catch arrival are
//!   the stack repair of 5.2, done by [`crate::detector`].
//! - In call mode an indirect call is never extended: its target is not in
//!   the outcome bits, so two callees would share one descriptor. An
//!   extended call or return records one outcome bit set to 1, like any
//!   unconditional branch.
//! - In call mode a return whose counter is zero from an entry standing for
//!   several frames (its path began inside an extended callee) performs
//!   update_count, pop, push: the path ends at the return and the caller's
//!   continuation starts a new one, keeping one entry per frame group.

use crate::event::{BranchEvent, BranchKind};
use serde::{Deserialize, Serialize};

/// The type of path the profiler is programmed to detect.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathType {
    /// Ball-Larus paths, ending at backward branches (Table 5.1).
    #[default]
    Bl,
    /// Whole-program-path elements: also ending at calls and returns (Table 5.2).
    Wpp,
    /// Paths extended across up to `max` backward branches.
    ExtendedLoop { max: u32 },
    /// Paths extended across up to `max` nested calls.
    ExtendedCall { max: u32 },
}

/// The thesis' classes of branches, and this stream's additions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BranchClass {
    Call {
        indirect: bool,
    },
    Return,
    Forward,
    Backward,
    /// An indirect jump. A WebAssembly stream has none (a `br_table` is a
    /// switch), but the PPCR keeps the thesis' row for it.
    Indirect,
    TailCall,
    Throw,
    Catch,
}

impl BranchClass {
    /// The class of a retiring branch: direct and multi-way branches are
    /// backward exactly when they go to a loop header.
    pub fn of(event: &BranchEvent) -> BranchClass {
        match event.kind {
            BranchKind::Conditional { .. } | BranchKind::Switch { .. } | BranchKind::Jump => {
                if event.backward {
                    BranchClass::Backward
                } else {
                    BranchClass::Forward
                }
            }
            BranchKind::Call { indirect } => BranchClass::Call { indirect },
            BranchKind::Return => BranchClass::Return,
            BranchKind::TailCall { .. } => BranchClass::TailCall,
            BranchKind::Throw { .. } | BranchKind::Unwind { .. } => BranchClass::Throw,
            BranchKind::Catch => BranchClass::Catch,
        }
    }
}

/// How an operation set moves the top entry's counters.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Extension {
    #[default]
    None,
    /// Extended across a backward branch: extension counter + 1.
    Loop,
    /// Extended into a callee: extension counter and frames + 1.
    CallIn,
    /// Extended back out of a callee: extension counter and frames - 1.
    CallOut,
}

/// The operations one branch performs, in the fixed order update or
/// update_count, pop, push.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Ops {
    pub update: bool,
    pub update_count: bool,
    pub pop: bool,
    pub push: bool,
    pub extension: Extension,
}

const fn ops(update: bool, update_count: bool, pop: bool, push: bool) -> Ops {
    Ops {
        update,
        update_count,
        pop,
        push,
        extension: Extension::None,
    }
}

const COUNT: Ops = ops(false, true, false, false);
const COUNT_PUSH: Ops = ops(false, true, false, true);
const COUNT_POP: Ops = ops(false, true, true, false);
const COUNT_POP_PUSH: Ops = ops(false, true, true, true);
const UPDATE: Ops = ops(true, false, false, false);
const UPDATE_POP_PUSH: Ops = ops(true, false, true, true);

/// The top entry's counters that qualify the operations of extended paths.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TopState {
    pub ext: u32,
    pub frames: u32,
}

/// The Path Profiler Control Register: the programmed path type.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Ppcr {
    pub path_type: PathType,
}

impl Ppcr {
    pub fn new(path_type: PathType) -> Ppcr {
        Ppcr { path_type }
    }

    /// The operations for a branch of `class` when the top entry is `top`
    /// (`None` for an empty stack, where there is no path to extend).
    pub fn ops(&self, class: BranchClass, top: Option<TopState>) -> Ops {
        let extensible = top.is_some();
        let top = top.unwrap_or(TopState { ext: 0, frames: 1 });
        let extend = |extension| Ops {
            extension,
            ..UPDATE
        };
        match (self.path_type, class) {
            (_, BranchClass::Forward) => UPDATE,
            (_, BranchClass::Indirect) => UPDATE_POP_PUSH,
            (_, BranchClass::TailCall) => COUNT_POP_PUSH,
            (_, BranchClass::Throw) => COUNT,
            (_, BranchClass::Catch) => COUNT_POP_PUSH,
            (PathType::ExtendedLoop { max }, BranchClass::Backward)
                if extensible && top.ext < max =>
            {
                extend(Extension::Loop)
            }
            (_, BranchClass::Backward) => UPDATE_POP_PUSH,
            (PathType::Wpp, BranchClass::Call { .. } | BranchClass::Return) => COUNT_POP_PUSH,
            (PathType::ExtendedCall { max }, BranchClass::Call { indirect: false })
                if extensible && top.ext < max =>
            {
                extend(Extension::CallIn)
            }
            (_, BranchClass::Call { .. }) => COUNT_PUSH,
            (PathType::ExtendedCall { .. }, BranchClass::Return) if top.ext > 0 => {
                extend(Extension::CallOut)
            }
            (PathType::ExtendedCall { .. }, BranchClass::Return) if top.frames > 1 => {
                COUNT_POP_PUSH
            }
            (_, BranchClass::Return) => COUNT_POP,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table row as the thesis prints it: update, update-count, pop, push.
    fn row(o: Ops) -> [bool; 4] {
        [o.update, o.update_count, o.pop, o.push]
    }

    const Y: bool = true;
    const N: bool = false;

    #[test]
    fn table_5_1_ball_larus() {
        let p = Ppcr::new(PathType::Bl);
        let expect = [
            (BranchClass::Call { indirect: false }, [N, Y, N, Y]),
            (BranchClass::Call { indirect: true }, [N, Y, N, Y]),
            (BranchClass::Return, [N, Y, Y, N]),
            (BranchClass::Forward, [Y, N, N, N]),
            (BranchClass::Backward, [Y, N, Y, Y]),
            (BranchClass::Indirect, [Y, N, Y, Y]),
        ];
        for (class, r) in expect {
            assert_eq!(row(p.ops(class, None)), r, "{class:?}");
        }
    }

    #[test]
    fn table_5_2_whole_program_path() {
        let p = Ppcr::new(PathType::Wpp);
        let expect = [
            (BranchClass::Call { indirect: false }, [N, Y, Y, Y]),
            (BranchClass::Return, [N, Y, Y, Y]),
            (BranchClass::Forward, [Y, N, N, N]),
            (BranchClass::Backward, [Y, N, Y, Y]),
            (BranchClass::Indirect, [Y, N, Y, Y]),
        ];
        for (class, r) in expect {
            assert_eq!(row(p.ops(class, None)), r, "{class:?}");
        }
    }

    #[test]
    fn extended_loop_updates_until_the_counter_reaches_max() {
        let p = Ppcr::new(PathType::ExtendedLoop { max: 2 });
        let at = |ext| Some(TopState { ext, frames: 1 });
        let ext = p.ops(BranchClass::Backward, at(1));
        assert_eq!((row(ext), ext.extension), ([Y, N, N, N], Extension::Loop));
        assert_eq!(row(p.ops(BranchClass::Backward, at(2))), [Y, N, Y, Y]);
        // Calls and returns keep Table 5.1.
        assert_eq!(row(p.ops(BranchClass::Return, at(1))), [N, Y, Y, N]);
    }

    #[test]
    fn extended_call_extends_direct_calls_and_unwinds_on_returns() {
        let p = Ppcr::new(PathType::ExtendedCall { max: 1 });
        let at = |ext, frames| Some(TopState { ext, frames });
        let into = p.ops(BranchClass::Call { indirect: false }, at(0, 1));
        assert_eq!(
            (row(into), into.extension),
            ([Y, N, N, N], Extension::CallIn)
        );
        let at_max = p.ops(BranchClass::Call { indirect: false }, at(1, 2));
        assert_eq!(row(at_max), [N, Y, N, Y]);
        let indirect = p.ops(BranchClass::Call { indirect: true }, at(0, 1));
        assert_eq!(row(indirect), [N, Y, N, Y]);
        let from_host = p.ops(BranchClass::Call { indirect: false }, None);
        assert_eq!(row(from_host), [N, Y, N, Y], "no path to extend");
        let out = p.ops(BranchClass::Return, at(1, 2));
        assert_eq!(
            (row(out), out.extension),
            ([Y, N, N, N], Extension::CallOut)
        );
        assert_eq!(row(p.ops(BranchClass::Return, at(0, 2))), [N, Y, Y, Y]);
        assert_eq!(row(p.ops(BranchClass::Return, at(0, 1))), [N, Y, Y, N]);
        // Backward branches keep Table 5.1.
        assert_eq!(row(p.ops(BranchClass::Backward, at(0, 1))), [Y, N, Y, Y]);
    }

    #[test]
    fn classes_of_wasm_branches() {
        let ev = |kind, backward| crate::testing::ev(kind, 0, 0, backward, 1);
        let sw = BranchKind::Switch { arm: 1, arms: 3 };
        assert_eq!(BranchClass::of(&ev(sw, true)), BranchClass::Backward);
        assert_eq!(BranchClass::of(&ev(sw, false)), BranchClass::Forward);
        assert_eq!(
            BranchClass::of(&ev(BranchKind::Jump, true)),
            BranchClass::Backward
        );
        let tail = BranchKind::TailCall { indirect: true };
        assert_eq!(BranchClass::of(&ev(tail, false)), BranchClass::TailCall);
    }
}
