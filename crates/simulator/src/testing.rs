//! Helpers shared by the unit tests.

use crate::descriptor::PathDescriptor;
use crate::event::{BranchEvent, BranchKind};

pub fn ev(kind: BranchKind, address: u32, target: u32, backward: bool, instrs: u32) -> BranchEvent {
    BranchEvent {
        kind,
        address,
        target,
        backward,
        instrs,
    }
}

/// A path of `len` one-bit branches.
pub fn path(start: u32, len: u16, outcomes: u128) -> PathDescriptor {
    PathDescriptor {
        start,
        len,
        nbits: len,
        outcomes,
    }
}
