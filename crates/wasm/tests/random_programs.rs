//! Differential tests on random structured programs: every control
//! instruction the builder models, nested at random, with dead code, calls,
//! tail calls and exceptions. For each seeded program the instrumented
//! module must validate, compute the same results (or traps) as the
//! original, and its trace must form walks whose counts agree with the slot
//! counters and the register-built length histogram.
//!
//! Programs terminate: loops burn a global fuel counter and calls only go to
//! functions with a higher index. Set `PATHPROF_RANDOM_PROGRAMS=n` to try
//! more seeds.

mod common;

use common::*;
use pathprof_graph::testing::Rng;
use pathprof_techniques::{PathTable, Width};
use pathprof_wasm::{instrument, read_counters};
use std::fmt::Write;

#[derive(Clone, Copy, PartialEq)]
enum Label {
    /// Branches carry no value (loops, blocks without result).
    Empty,
    /// Branches carry one i32 (the function, blocks with a result).
    Value,
}

struct Gen {
    rng: Rng,
    out: String,
    labels: Vec<Label>,
    func: usize,
    funcs: usize,
    /// Enclosing try_tables: exceptions may be caught in this function.
    tries: usize,
}

impl Gen {
    fn line(&mut self, s: &str) {
        let _ = writeln!(self.out, "{}{s}", "  ".repeat(self.labels.len() + 1));
    }

    fn cond(&mut self) {
        let m = 2 + self.rng.below(5);
        let r = self.rng.below(m);
        let s = format!("local.get 0 i32.const {m} i32.rem_u i32.const {r} i32.le_u");
        self.line(&s);
    }

    fn bump(&mut self) {
        let k = self.rng.below(7) + 1;
        let op = ["add", "mul", "xor", "sub"][self.rng.below(4) as usize];
        let s = format!("local.get 0 i32.const {k} i32.{op} local.set 0");
        self.line(&s);
    }

    /// A label to branch to: relative depth and its kind.
    fn pick_label(&mut self) -> (usize, Label) {
        let d = self.rng.below(self.labels.len() as u64) as usize;
        (d, self.labels[self.labels.len() - 1 - d])
    }

    fn push_value_for(&mut self, l: Label) {
        if l == Label::Value {
            self.line("local.get 0");
        }
    }

    fn body(&mut self, depth: u32) {
        let n = 1 + self.rng.below(4);
        for _ in 0..n {
            self.stmt(depth);
        }
    }

    /// A stack-neutral statement.
    fn stmt(&mut self, depth: u32) {
        let leaf = depth == 0;
        match self.rng.below(if leaf { 4 } else { 17 }) {
            0 | 1 => self.bump(),
            2 => {
                // br_if
                let (d, l) = self.pick_label();
                self.push_value_for(l);
                self.cond();
                self.line(&format!("br_if {d}"));
                if l == Label::Value {
                    self.line("drop");
                }
            }
            3 if self.func + 1 < self.funcs => {
                let f =
                    self.func + 1 + self.rng.below((self.funcs - self.func - 1) as u64) as usize;
                self.line(&format!("local.get 0 call $f{f} local.set 0"));
            }
            3 => self.bump(),
            4 | 5 => {
                let result = self.rng.chance(40);
                self.line(if result {
                    "block (result i32)"
                } else {
                    "block"
                });
                self.labels
                    .push(if result { Label::Value } else { Label::Empty });
                self.body(depth - 1);
                if result {
                    self.line("local.get 0");
                }
                self.labels.pop();
                self.line("end");
                if result {
                    self.line("local.set 0");
                }
            }
            6 | 7 => {
                self.line("loop");
                self.labels.push(Label::Empty);
                self.line("global.get $fuel i32.eqz if i32.const -1 return end");
                self.line("global.get $fuel i32.const 1 i32.sub global.set $fuel");
                self.body(depth - 1);
                if self.rng.chance(70) {
                    self.cond();
                    self.line("br_if 0");
                }
                self.labels.pop();
                self.line("end");
            }
            8 | 9 => {
                let result = self.rng.chance(40);
                self.cond();
                self.line(if result { "if (result i32)" } else { "if" });
                self.labels
                    .push(if result { Label::Value } else { Label::Empty });
                self.body(depth - 1);
                if result {
                    self.line("local.get 0");
                }
                if result || self.rng.chance(50) {
                    self.line("else");
                    self.body(depth - 1);
                    if result {
                        self.line("local.get 0");
                    }
                }
                self.labels.pop();
                self.line("end");
                if result {
                    self.line("local.set 0");
                }
            }
            10 => {
                // br_table over labels of one kind.
                let (_, kind) = self.pick_label();
                let same: Vec<usize> = (0..self.labels.len())
                    .filter(|&d| self.labels[self.labels.len() - 1 - d] == kind)
                    .collect();
                let mut targets = String::new();
                for _ in 0..1 + self.rng.below(4) {
                    let _ = write!(
                        targets,
                        "{} ",
                        same[self.rng.below(same.len() as u64) as usize]
                    );
                }
                self.push_value_for(kind);
                let m = 1 + self.rng.below(5);
                self.line(&format!(
                    "local.get 0 i32.const {m} i32.rem_u br_table {targets}"
                ));
            }
            11 => {
                let (d, l) = self.pick_label();
                self.push_value_for(l);
                self.line(&format!("br {d}"));
            }
            12 => self.line("local.get 0 return"),
            13 => {
                // try_table catching into an enclosing label.
                let (d, l) = self.pick_label();
                let clause = match l {
                    Label::Empty if self.rng.chance(50) => format!("(catch $t0 {d})"),
                    Label::Empty => format!("(catch_all {d})"),
                    Label::Value => format!("(catch $t1 {d})"),
                };
                self.line(&format!("try_table {clause}"));
                self.labels.push(Label::Empty);
                self.tries += 1;
                self.body(depth - 1);
                self.tries -= 1;
                self.labels.pop();
                self.line("end");
            }
            14 => {
                if self.rng.chance(50) {
                    self.line("throw $t0");
                } else {
                    self.line("local.get 0 throw $t1");
                }
            }
            15 if self.func + 1 < self.funcs => {
                let f =
                    self.func + 1 + self.rng.below((self.funcs - self.func - 1) as u64) as usize;
                self.line(&format!("local.get 0 return_call $f{f}"));
            }
            15 => self.line("unreachable"),
            _ => {
                // A conditional exception, caught here or not.
                self.cond();
                self.line("if local.get 0 throw $t1 end");
            }
        }
    }
}

fn program(seed: u64) -> String {
    let mut g = Gen {
        rng: Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
        out: String::new(),
        labels: vec![],
        func: 0,
        funcs: 0,
        tries: 0,
    };
    g.funcs = 1 + g.rng.below(3) as usize;
    let mut m = String::from(
        "(module\n  (tag $t0)\n  (tag $t1 (param i32))\n  (global $fuel (mut i32) (i32.const 0))\n",
    );
    m += "  (func (export \"main\") (param i32) (result i32)\n    i32.const 60 global.set $fuel\n    local.get 0 call $f0)\n";
    for f in 0..g.funcs {
        g.func = f;
        g.out.clear();
        g.labels = vec![Label::Value];
        let depth = 2 + g.rng.below(4) as u32;
        g.body(depth);
        g.line("local.get 0");
        let _ = write!(m, "  (func $f{f} (param i32) (result i32)\n{}  )\n", g.out);
    }
    m.push(')');
    m
}

#[test]
fn random_programs_behave_the_same_and_agree_with_the_oracle() {
    let seeds: u64 = std::env::var("PATHPROF_RANDOM_PROGRAMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    let calls: Vec<Call> = (0..12)
        .map(|x| Call {
            export: "main".into(),
            args: vec![x],
        })
        .collect();
    let mut kinds_seen = std::collections::BTreeSet::new();
    for seed in 0..seeds {
        let text = program(seed);
        let bytes = wat::parse_str(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let info = analyze_ok(&bytes);
        let original = run(&bytes, &calls);
        let label = |what: &str| format!("seed {seed} ({what})\n{text}");

        let out = instrument(&bytes, &info, &plans_with(&info, trace_plan), &[])
            .unwrap_or_else(|e| panic!("{}: {e}", label("trace")));
        let traced = run(&out.bytes, &calls);
        assert_same_outcomes(
            &label("trace"),
            &calls,
            &traced.outcomes,
            &original.outcomes,
        );
        let walks = reconstruct(&info, &traced);
        for f in info.functions.iter().flatten() {
            kinds_seen.extend(f.edge_kinds.iter().map(|k| format!("{k:?}")));
        }

        let out = instrument(&bytes, &info, &plans_with(&info, slot_plan), &[]).unwrap();
        let r = run(&out.bytes, &calls);
        assert_same_outcomes(&label("slots"), &calls, &r.outcomes, &original.outcomes);
        let memory = r.counters.as_ref().unwrap();
        for fl in &out.layout.functions {
            let raw = read_counters(fl, memory).unwrap();
            let f = function(&info, fl.func_index);
            let expected: Vec<u64> = (0..f.cfg.num_edges() as u32)
                .map(|e| {
                    walks
                        .edge_counts
                        .get(&(fl.func_index, e))
                        .copied()
                        .unwrap_or(0)
                })
                .collect();
            assert_eq!(raw.slots, expected, "{}", label("slot counts"));
        }

        let hist = length_histogram(&walks);
        // The register is "negative" until the offset is added; seeds alternate widths.
        let width = if seed % 2 == 0 {
            Width::I32
        } else {
            Width::I64
        };
        let plans = plans_with(&info, |c| {
            length_plan(c, width, -3, 3, PathTable::Array { len: MAX_WALK })
        });
        let out = instrument(&bytes, &info, &plans, &[]).unwrap();
        let r = run(&out.bytes, &calls);
        assert_same_outcomes(&label("lengths"), &calls, &r.outcomes, &original.outcomes);
        let memory = r.counters.as_ref().unwrap();
        for fl in &out.layout.functions {
            let raw = read_counters(fl, memory).unwrap();
            let expected: Vec<(u64, u64)> = hist
                .get(&fl.func_index)
                .map(|h| h.iter().map(|(&l, &c)| (l, c)).collect())
                .unwrap_or_default();
            assert_eq!(raw.paths, expected, "{}", label("lengths"));
        }
    }
    // The generator reaches every kind of edge it can produce.
    for k in [
        "Entry",
        "Fallthrough",
        "Br",
        "BrIf",
        "BrTable",
        "IfThen",
        "IfElse",
        "Return",
        "TailCall",
        "Throw",
        "Catch",
        "Unreachable",
    ] {
        assert!(kinds_seen.contains(k), "no {k} edge in {seeds} programs");
    }
}
