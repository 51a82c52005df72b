//! Random modules with calls, for the interprocedural oracles: a few
//! functions that call each other directly, through a table and by tail
//! calls (recursion included), with loops, branches, early returns, and
//! exceptions thrown anywhere and caught by `try_table` in `$f0` (or by
//! nobody: the run then ends with the exception). Only `$f0` catches, and
//! nothing calls it back, because the trace oracle takes the innermost
//! activation of the catching function as the catcher.
//! Every function entry and loop iteration burns a global fuel counter, so
//! every program ends whatever it calls.

use pathprof_graph::testing::Rng;
use std::fmt::Write;

struct Gen {
    rng: Rng,
    out: String,
    funcs: u64,
    /// Enclosing labels (all without results).
    depth: usize,
    /// Whether the function being written may catch (`$f0`).
    catching: bool,
}

const BURN: &str = "global.get $fuel i32.eqz if local.get 0 return end \
                    global.get $fuel i32.const 1 i32.sub global.set $fuel";

impl Gen {
    fn line(&mut self, s: &str) {
        super::wat_line(&mut self.out, s);
    }

    fn cond(&mut self) {
        let (m, k) = (2 + self.rng.below(3), self.rng.below(2));
        self.line(&format!(
            "local.get 0 i32.const {m} i32.rem_u i32.const {k} i32.eq"
        ));
    }

    /// Any function but `$f0`.
    fn callee(&mut self) -> u64 {
        1 + self.rng.below(self.funcs - 1)
    }

    /// `call_indirect` or `return_call_indirect` through the table (every
    /// function but `$f0`).
    fn indirect(&self, call: &str) -> String {
        format!(
            "local.get 0 local.get 0 i32.const {} i32.rem_u {call} (type $t)",
            self.funcs - 1
        )
    }

    fn body(&mut self, nest: u32) {
        for _ in 0..1 + self.rng.below(3) {
            self.stmt(nest);
        }
    }

    /// A statement leaving the stack as it found it; a tail call or a
    /// return only as the last of an `if` arm (what follows is dead).
    fn stmt(&mut self, nest: u32) {
        let k = self.rng.below(if nest == 0 { 5 } else { 10 });
        match k {
            0 => {
                let c = 1 + self.rng.below(7);
                self.line(&format!("local.get 0 i32.const {c} i32.add local.set 0"));
            }
            1 | 2 => {
                let f = self.callee();
                self.line(&format!("local.get 0 call $f{f} local.set 0"));
            }
            3 => {
                let call = self.indirect("call_indirect");
                self.line(&format!("{call} local.set 0"));
            }
            4 if self.depth > 0 => {
                let d = self.rng.below(self.depth as u64);
                self.cond();
                self.line(&format!("br_if {d}"));
            }
            4 => self.stmt(nest),
            5 | 6 => {
                self.cond();
                self.line("if");
                self.depth += 1;
                self.body(nest - 1);
                self.leave();
                if self.rng.below(2) == 0 {
                    self.line("else");
                    self.body(nest - 1);
                }
                self.depth -= 1;
                self.line("end");
            }
            7 => {
                self.line("loop");
                self.depth += 1;
                self.line(BURN);
                self.body(nest - 1);
                self.cond();
                self.line("br_if 0");
                self.depth -= 1;
                self.line("end");
            }
            8 if self.depth > 0 && self.catching => {
                // The catch clause's label is outside the try_table.
                let d = self.rng.below(self.depth as u64);
                self.line(&format!("try_table (catch_all {d})"));
                self.depth += 1;
                self.body(nest - 1);
                self.depth -= 1;
                self.line("end");
            }
            _ => {
                self.line("block");
                self.depth += 1;
                self.body(nest - 1);
                self.depth -= 1;
                self.line("end");
            }
        }
    }

    /// Sometimes ends an `if` arm by leaving the function.
    fn leave(&mut self) {
        match self.rng.below(5) {
            0 => {
                let f = self.callee();
                self.line(&format!("local.get 0 return_call $f{f}"));
            }
            1 => {
                let call = self.indirect("return_call_indirect");
                self.line(&call);
            }
            2 => self.line("local.get 0 return"),
            3 => self.line("local.get 0 throw $e"),
            _ => {}
        }
    }
}

/// The module of `seed`: export `main (i32) -> i32`.
pub fn module(seed: u64) -> String {
    let mut g = Gen {
        rng: Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
        out: String::new(),
        funcs: 0,
        depth: 0,
        catching: false,
    };
    g.funcs = 2 + g.rng.below(4);
    let names: Vec<String> = (1..g.funcs).map(|f| format!("$f{f}")).collect();
    let mut m = format!(
        "(module\n  (type $t (func (param i32) (result i32)))\n  (tag $e (param i32))\n  \
         (global $fuel (mut i32) (i32.const 0))\n  (table {} funcref)\n  \
         (elem (i32.const 0) func {})\n",
        g.funcs - 1,
        names.join(" ")
    );
    m += "  (func (export \"main\") (param i32) (result i32)\n    \
          i32.const 40 global.set $fuel\n    local.get 0 call $f0)\n";
    for f in 0..g.funcs {
        g.catching = f == 0;
        g.out.clear();
        g.line(BURN);
        let nest = 1 + g.rng.below(3) as u32;
        if g.catching {
            // Most exceptions are caught: around the whole body.
            g.line("block");
            g.line("try_table (catch_all 0)");
            g.depth = 2;
            g.body(nest);
            g.depth = 0;
            g.line("end");
            g.line("end");
        } else {
            g.body(nest);
        }
        g.line("local.get 0");
        let _ = write!(m, "  (func $f{f} (type $t)\n{}  )\n", g.out);
    }
    m.push(')');
    m
}
