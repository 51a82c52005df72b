//! Random modules with legacy exception handling, for the translation's
//! differential test (legacy_exceptions.rs): nested `try`s with `catch`
//! clauses of two tags and `catch_all`, `delegate`s to any enclosing
//! label, `rethrow`s of any enclosing handler, throws, branches out of
//! handlers and bodies, loops, and calls of later functions (no
//! recursion, so every call ends). Functions fold what they see into a
//! local, `$acc`, that they return.

use pathprof_graph::testing::Rng;
use std::fmt::Write;

#[derive(Copy, Clone, PartialEq)]
enum Label {
    Plain,
    /// The function's own: a branch to it needs the result.
    Func,
    /// A loop's label: not a branch target here (it would iterate anew).
    Loop,
    /// A try, in its body or (`true`) in a handler.
    Try(bool),
}

struct Gen {
    rng: Rng,
    out: String,
    /// This function's index and how many there are.
    func: u64,
    funcs: u64,
    labels: Vec<Label>,
    /// Loop counters used so far.
    loops: u32,
}

impl Gen {
    fn line(&mut self, s: &str) {
        super::wat_line(&mut self.out, s);
    }

    /// Leaves a condition on `$x` and `$acc` on the stack.
    fn cond(&mut self) {
        let m = 2 + self.rng.below(4);
        let k = self.rng.below(m);
        self.line(&format!(
            "local.get $x local.get $acc i32.add i32.const {m} i32.rem_u i32.const {k} i32.eq"
        ));
    }

    fn mix(&mut self) {
        let c = 1 + self.rng.below(9);
        self.line(&format!(
            "local.get $acc i32.const 3 i32.mul i32.const {c} i32.add local.set $acc"
        ));
    }

    fn body(&mut self, nest: u32) {
        for _ in 0..1 + self.rng.below(3) {
            self.stmt(nest);
        }
    }

    /// Depth of a random enclosing label that `pick` accepts.
    fn depth_where(&mut self, pick: impl Fn(Label) -> bool) -> Option<usize> {
        let ok: Vec<usize> = (0..self.labels.len())
            .filter(|&d| pick(self.labels[self.labels.len() - 1 - d]))
            .collect();
        (!ok.is_empty()).then(|| ok[self.rng.below(ok.len() as u64) as usize])
    }

    /// A statement that leaves the stack as it found it.
    fn stmt(&mut self, nest: u32) {
        let k = self.rng.below(if nest == 0 { 4 } else { 12 });
        match k {
            0 => self.mix(),
            1 if self.func + 1 == self.funcs => self.mix(),
            1 => {
                let f = self.func + 1 + self.rng.below(self.funcs - self.func - 1);
                self.line(&format!(
                    "local.get $acc call $f{f} local.get $acc i32.add local.set $acc"
                ));
            }
            2 => {
                self.cond();
                self.line("if");
                match self.rng.below(2) {
                    0 => self.line("local.get $acc throw $a"),
                    _ => self.line("throw $b"),
                }
                self.line("end");
            }
            3 => match self.depth_where(|l| !matches!(l, Label::Loop | Label::Func)) {
                Some(d) => {
                    self.cond();
                    self.line(&format!("br_if {d}"));
                }
                None => self.mix(),
            },
            4 => match self.depth_where(|l| l == Label::Try(true)) {
                Some(d) => {
                    self.cond();
                    self.line(&format!("if rethrow {} end", d + 1));
                }
                None => self.mix(),
            },
            5 | 6 | 7 => self.try_(nest),
            8 => {
                self.cond();
                self.line("if");
                self.labels.push(Label::Plain);
                self.body(nest - 1);
                if self.rng.below(2) == 0 {
                    self.line("else");
                    self.body(nest - 1);
                }
                self.labels.pop();
                self.line("end");
            }
            9 => {
                let i = self.loops;
                self.loops += 1;
                self.line(&format!("i32.const 0 local.set $i{i}"));
                self.line("loop");
                self.labels.push(Label::Loop);
                self.body(nest - 1);
                self.labels.pop();
                self.line(&format!(
                    "local.get $i{i} i32.const 1 i32.add local.tee $i{i} i32.const 3 i32.lt_u br_if 0"
                ));
                self.line("end");
            }
            _ => {
                self.line("block");
                self.labels.push(Label::Plain);
                self.body(nest - 1);
                self.labels.pop();
                self.line("end");
            }
        }
    }

    fn try_(&mut self, nest: u32) {
        self.line("try");
        self.labels.push(Label::Try(false));
        self.body(nest - 1);
        if self.rng.below(4) == 0 {
            self.labels.pop();
            let d = self.rng.below(self.labels.len() as u64);
            self.line(&format!("delegate {d}"));
            return;
        }
        *self.labels.last_mut().unwrap() = Label::Try(true);
        let clauses = self.rng.below(4);
        if clauses & 1 != 0 {
            self.line("catch $a");
            self.line("local.get $acc i32.add i32.const 7 i32.add local.set $acc");
            self.body(nest - 1);
        }
        if clauses & 2 != 0 {
            self.line("catch $b");
            self.mix();
            self.body(nest - 1);
        }
        if clauses == 0 || self.rng.below(2) == 0 {
            self.line("catch_all");
            self.mix();
            self.body(nest - 1);
        }
        self.labels.pop();
        self.line("end");
    }
}

/// The module of `seed`: exports `f0`, `f1`, ... `(i32) -> i32`.
pub fn module(seed: u64) -> String {
    let mut g = Gen {
        rng: Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
        out: String::new(),
        func: 0,
        funcs: 0,
        labels: Vec::new(),
        loops: 0,
    };
    g.funcs = 2 + g.rng.below(3);
    let mut m = String::from("(module\n  (tag $a (param i32))\n  (tag $b)\n");
    for f in 0..g.funcs {
        g.func = f;
        g.out.clear();
        g.loops = 0;
        g.labels = vec![Label::Func];
        let nest = 2 + g.rng.below(3) as u32;
        g.body(nest);
        g.line("local.get $acc");
        let locals: String = (0..g.loops)
            .map(|i| format!(" (local $i{i} i32)"))
            .collect();
        let _ = write!(
            m,
            "  (func $f{f} (export \"f{f}\") (param $x i32) (result i32) (local $acc i32){locals}\n{}  )\n",
            g.out
        );
    }
    m.push(')');
    m
}
