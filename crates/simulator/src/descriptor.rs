//! Path descriptors (thesis 5.2): a path is its starting instruction
//! address, its length in branches and one outcome per branch.
//!
//! Terms:
//! - *start*: the address of the path's first instruction (the target of the
//!   branch whose `path_stack_push` began it).
//! - *length*: the number of branches recorded by `path_stack_update`.
//! - *outcomes*: the branch outcomes, the first branch in the lowest bits.
//!   A conditional branch adds one bit (1 = taken), an unconditional branch
//!   one bit set to 1 (the thesis' footnote to 5.2), and a multi-way
//!   [`BranchKind::Switch`] adds `ceil(log2(arms))` bits holding the arm.
//!
//! Departures from the thesis:
//! - The outcome bits are a `u128` instead of one bit per branch, because a
//!   switch adds up to 32 bits. A path is full (and split, as the thesis does
//!   when its length passes the threshold) when its length reaches the
//!   configured maximum or its outcome bits pass [`SPLIT_BITS`], so the next
//!   branch, of at most 32 bits, always fits.
//! - The descriptor also keeps the number of outcome bits, so that no two
//!   descriptors differ only in leading zero outcome bits.

use crate::event::BranchKind;
use serde::{Deserialize, Serialize};

/// Outcome bits after which a path is full whatever its length: 128 less the
/// widest outcome of one branch (a switch of 2^32 arms).
pub const SPLIT_BITS: u32 = 96;

/// The largest configurable maximum path length, in branches: every branch
/// but a one-armed switch adds at least one bit, and [`SPLIT_BITS`] bound them.
pub const MAX_PATH_LEN: u32 = SPLIT_BITS;

/// One path, as the path stack hands it to the Hot Path Table. Fixed size, so
/// the hot loop never allocates per path.
#[derive(
    Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct PathDescriptor {
    /// Address of the path's first instruction.
    pub start: u32,
    /// Branches recorded along the path.
    pub len: u16,
    /// How many of `outcomes`' low bits are in use.
    pub nbits: u16,
    /// The branch outcomes, first branch in the lowest bits.
    pub outcomes: u128,
}

/// The outcome one branch adds to a path: `width` bits holding `value`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub value: u32,
    pub width: u32,
}

impl Outcome {
    /// The outcome of a branch of `kind`: conditional 1 bit (1 = taken),
    /// switch `ceil(log2(arms))` bits holding the arm (cut to that width),
    /// anything else one bit set to 1.
    pub fn of(kind: BranchKind) -> Outcome {
        match kind {
            BranchKind::Conditional { taken } => Outcome {
                value: u32::from(taken),
                width: 1,
            },
            BranchKind::Switch { arm, arms } => {
                let width = ceil_log2(arms);
                let mask = if width == 32 {
                    u32::MAX
                } else {
                    (1u32 << width) - 1
                };
                Outcome {
                    value: arm & mask,
                    width,
                }
            }
            _ => Outcome { value: 1, width: 1 },
        }
    }
}

/// `ceil(log2(n))`, 0 for `n <= 1`.
pub fn ceil_log2(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        32 - (n - 1).leading_zeros()
    }
}

impl PathDescriptor {
    /// An empty path starting at `start`.
    pub fn new(start: u32) -> PathDescriptor {
        PathDescriptor {
            start,
            ..PathDescriptor::default()
        }
    }

    /// Records one more branch with outcome `o`.
    #[inline]
    pub fn record(&mut self, o: Outcome) {
        // Both counts read before either is written: otherwise the compiler
        // reads `len` with `nbits` as one word right after storing `nbits`,
        // which stalls on store forwarding (40 % of a forward branch).
        let (len, nbits) = (self.len, self.nbits);
        self.outcomes |= u128::from(o.value) << nbits;
        self.len = len + 1;
        self.nbits = nbits + o.width as u16;
    }

    /// Whether the path must end now: `max_len` branches recorded or more
    /// than [`SPLIT_BITS`] outcome bits in use.
    pub fn is_full(&self, max_len: u32) -> bool {
        u32::from(self.len) >= max_len || u32::from(self.nbits) > SPLIT_BITS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_log2_of_arm_counts() {
        let expected = [
            (0, 0),
            (1, 0),
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 3),
            (8, 3),
            (9, 4),
        ];
        for (n, bits) in expected {
            assert_eq!(ceil_log2(n), bits, "arms {n}");
        }
        assert_eq!(ceil_log2(u32::MAX), 32);
    }

    #[test]
    fn outcomes_pack_first_branch_lowest() {
        // taken (1), not taken (0), switch arm 2 of 5 (3 bits: 010), jump (1):
        // bits from low to high 1, 0, 0 1 0, 1 = 0b1_010_0_1 = 41.
        let mut d = PathDescriptor::new(100);
        d.record(Outcome::of(BranchKind::Conditional { taken: true }));
        d.record(Outcome::of(BranchKind::Conditional { taken: false }));
        d.record(Outcome::of(BranchKind::Switch { arm: 2, arms: 5 }));
        d.record(Outcome::of(BranchKind::Jump));
        assert_eq!(
            d,
            PathDescriptor {
                start: 100,
                len: 4,
                nbits: 6,
                outcomes: 0b10_1001
            }
        );
    }

    #[test]
    fn one_armed_switch_adds_length_not_bits() {
        let mut d = PathDescriptor::new(7);
        d.record(Outcome::of(BranchKind::Switch { arm: 0, arms: 1 }));
        assert_eq!((d.len, d.nbits, d.outcomes), (1, 0, 0));
    }

    #[test]
    fn full_at_max_len_or_past_split_bits() {
        let mut d = PathDescriptor::new(0);
        for _ in 0..3 {
            assert!(!d.is_full(3));
            d.record(Outcome::of(BranchKind::Jump));
        }
        assert!(d.is_full(3));
        // Three 32-bit arms: 96 bits, not past the split; a fourth passes it.
        let mut w = PathDescriptor::new(0);
        let wide = Outcome::of(BranchKind::Switch {
            arm: u32::MAX,
            arms: u32::MAX,
        });
        assert_eq!(wide.width, 32);
        for _ in 0..3 {
            w.record(wide);
        }
        assert!(!w.is_full(32));
        w.record(Outcome::of(BranchKind::Jump));
        assert!(w.is_full(32));
        assert_eq!(w.outcomes, (1u128 << 97) - 1);
    }
}
