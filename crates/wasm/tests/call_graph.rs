//! The call graph and its components against a brute-force oracle: edges
//! from a wasmparser walk written here (direct calls; indirect calls to the
//! declared functions of the same signature; code after an unconditional
//! branch skipped), reachability by a closure over a boolean matrix, two
//! functions in one component iff each reaches the other.

use pathprof_graph::testing::Rng;
use pathprof_wasm::{analyze, CallGraph};
use std::collections::BTreeSet;
use wasmparser::{ElementItems, ExternalKind, Operator, Parser, Payload, TypeRef};

/// Signature of a function type, as the oracle compares types (the
/// modules tested here have no subtyping and no recursive types).
type Sig = (Vec<wasmparser::ValType>, Vec<wasmparser::ValType>);

/// The oracle's call edges, per function of the index space.
fn oracle_edges(bytes: &[u8]) -> Vec<BTreeSet<u32>> {
    let mut sigs: Vec<Option<Sig>> = Vec::new();
    let mut func_types: Vec<u32> = Vec::new();
    let mut declared = BTreeSet::new();
    let mut bodies = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.unwrap() {
            Payload::TypeSection(r) => {
                for sub in r.into_iter_err_on_gc_types() {
                    let f = sub.unwrap();
                    sigs.push(Some((f.params().to_vec(), f.results().to_vec())));
                }
            }
            Payload::ImportSection(r) => {
                for i in r.into_imports() {
                    if let TypeRef::Func(t) = i.unwrap().ty {
                        func_types.push(t);
                    }
                }
            }
            Payload::FunctionSection(r) => func_types.extend(r.into_iter().map(|t| t.unwrap())),
            Payload::ExportSection(r) => {
                for e in r {
                    let e = e.unwrap();
                    if e.kind == ExternalKind::Func {
                        declared.insert(e.index);
                    }
                }
            }
            Payload::ElementSection(r) => {
                for e in r {
                    match e.unwrap().items {
                        ElementItems::Functions(fs) => {
                            declared.extend(fs.into_iter().map(|f| f.unwrap()))
                        }
                        ElementItems::Expressions(_, es) => {
                            for e in es {
                                for op in e.unwrap().get_operators_reader() {
                                    if let Operator::RefFunc { function_index } = op.unwrap() {
                                        declared.insert(function_index);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            Payload::CodeSectionEntry(body) => bodies.push(body),
            _ => {}
        }
    }
    let num_imported = func_types.len() - bodies.len();
    let sig = |t: u32| sigs[t as usize].clone();
    let mut edges = vec![BTreeSet::new(); func_types.len()];
    for (i, body) in bodies.iter().enumerate() {
        let f = num_imported + i;
        for t in live_calls(body) {
            match t {
                Target::Func(g) => {
                    edges[f].insert(g);
                }
                Target::Type(t) => {
                    for &g in &declared {
                        if sig(func_types[g as usize]) == sig(t) {
                            edges[f].insert(g);
                        }
                    }
                }
            }
        }
    }
    edges
}

enum Target {
    Func(u32),
    Type(u32),
}

/// One open construct of the reachability walk.
struct Frame {
    is_loop: bool,
    is_if: bool,
    /// The construct was reachable where it opened.
    live_at_open: bool,
    /// Some reachable branch targets its label.
    targeted: bool,
    /// An `if` whose `else` was seen: whether its then-arm fell through.
    then_live: Option<bool>,
}

/// The call instructions of a body in reachable code: code after an
/// unconditional branch is dead up to the `else` of its `if` or the `end`
/// of a construct some branch targets.
fn live_calls(body: &wasmparser::FunctionBody<'_>) -> Vec<Target> {
    let mut out = Vec::new();
    let mut frames: Vec<Frame> = vec![Frame {
        is_loop: false,
        is_if: false,
        live_at_open: true,
        targeted: false,
        then_live: None,
    }];
    let mut live = true;
    for op in body.get_operators_reader().unwrap() {
        let op = op.unwrap();
        let target = |frames: &mut Vec<Frame>, depth: u32| {
            let n = frames.len();
            frames[n - 1 - depth as usize].targeted = true;
        };
        match op {
            Operator::Block { .. } | Operator::Loop { .. } | Operator::If { .. } => {
                frames.push(Frame {
                    is_loop: matches!(op, Operator::Loop { .. }),
                    is_if: matches!(op, Operator::If { .. }),
                    live_at_open: live,
                    targeted: false,
                    then_live: None,
                });
            }
            Operator::TryTable { ref try_table } => {
                if live {
                    for c in &try_table.catches {
                        let label = match *c {
                            wasmparser::Catch::One { label, .. }
                            | wasmparser::Catch::OneRef { label, .. }
                            | wasmparser::Catch::All { label }
                            | wasmparser::Catch::AllRef { label } => label,
                        };
                        target(&mut frames, label);
                    }
                }
                frames.push(Frame {
                    is_loop: false,
                    is_if: false,
                    live_at_open: live,
                    targeted: false,
                    then_live: None,
                });
            }
            Operator::Else => {
                let top = frames.last_mut().unwrap();
                top.then_live = Some(live);
                live = top.live_at_open;
            }
            Operator::End => {
                let top = frames.pop().unwrap();
                if !top.is_loop {
                    let other_arm = match (top.is_if, top.then_live) {
                        (true, Some(then_live)) => then_live,
                        (true, None) => top.live_at_open, // the false edge
                        _ => false,
                    };
                    live = live || top.targeted || other_arm;
                }
                if frames.is_empty() {
                    break;
                }
            }
            _ if !live => {}
            Operator::Br { relative_depth } => {
                target(&mut frames, relative_depth);
                live = false;
            }
            Operator::BrIf { relative_depth }
            | Operator::BrOnNull { relative_depth }
            | Operator::BrOnNonNull { relative_depth }
            | Operator::BrOnCast { relative_depth, .. }
            | Operator::BrOnCastFail { relative_depth, .. } => target(&mut frames, relative_depth),
            Operator::BrTable { ref targets } => {
                for d in targets.targets() {
                    target(&mut frames, d.unwrap());
                }
                target(&mut frames, targets.default());
                live = false;
            }
            Operator::Call { function_index } => out.push(Target::Func(function_index)),
            Operator::ReturnCall { function_index } => {
                out.push(Target::Func(function_index));
                live = false;
            }
            Operator::CallIndirect { type_index, .. } | Operator::CallRef { type_index } => {
                out.push(Target::Type(type_index))
            }
            Operator::ReturnCallIndirect { type_index, .. }
            | Operator::ReturnCallRef { type_index } => {
                out.push(Target::Type(type_index));
                live = false;
            }
            Operator::Return
            | Operator::Unreachable
            | Operator::Throw { .. }
            | Operator::ThrowRef => live = false,
            _ => {}
        }
    }
    out
}

/// `reach[f][g]`: a path of at least one edge from `f` to `g`.
fn closure(edges: &[BTreeSet<u32>]) -> Vec<Vec<bool>> {
    let n = edges.len();
    let mut reach: Vec<Vec<bool>> = (0..n)
        .map(|f| (0..n).map(|g| edges[f].contains(&(g as u32))).collect())
        .collect();
    for k in 0..n {
        for i in 0..n {
            if reach[i][k] {
                for j in 0..n {
                    if reach[k][j] {
                        reach[i][j] = true;
                    }
                }
            }
        }
    }
    reach
}

/// Checks `bytes`' call graph against the oracle; returns the functions it
/// found recursive.
fn check(name: &str, bytes: &[u8]) -> Vec<u32> {
    let info = analyze(bytes).unwrap();
    let g = CallGraph::new(bytes, &info).unwrap();
    let edges = oracle_edges(bytes);
    let n = edges.len() as u32;
    assert_eq!(g.num_funcs(), n, "{name}");
    for f in 0..n {
        let want: Vec<u32> = edges[f as usize].iter().copied().collect();
        assert_eq!(g.callees(f), &want[..], "{name}: callees of {f}");
    }
    let reach = closure(&edges);
    let mut recursive = Vec::new();
    for f in 0..n {
        assert_eq!(
            g.is_recursive(f),
            reach[f as usize][f as usize],
            "{name}: {f}"
        );
        if g.is_recursive(f) {
            recursive.push(f);
        }
        for h in 0..n {
            let same = f == h || (reach[f as usize][h as usize] && reach[h as usize][f as usize]);
            assert_eq!(g.scc_of(f) == g.scc_of(h), same, "{name}: {f} and {h}");
            if edges[f as usize].contains(&h) {
                assert!(
                    g.scc_of(h) <= g.scc_of(f),
                    "{name}: {f} -> {h} out of order"
                );
            }
        }
        assert!(g.scc(g.scc_of(f)).contains(&f));
    }
    let members: usize = (0..g.num_sccs()).map(|c| g.scc(c).len()).sum();
    assert_eq!(members, n as usize);
    recursive
}

/// Function index by name in the name section.
fn named(bytes: &[u8], wanted: &str) -> u32 {
    for payload in Parser::new(0).parse_all(bytes) {
        if let Payload::CustomSection(s) = payload.unwrap() {
            if let wasmparser::KnownCustom::Name(names) = s.as_known() {
                for sub in names {
                    if let wasmparser::Name::Function(map) = sub.unwrap() {
                        for n in map {
                            let n = n.unwrap();
                            if n.name == wanted {
                                return n.index;
                            }
                        }
                    }
                }
            }
        }
    }
    panic!("no function {wanted}");
}

#[test]
fn c_fixtures_against_the_closure() {
    let build =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/c/build");
    for name in ["recurse", "fnptr", "interp", "sort", "strproc", "deepexit"] {
        for opt in ["O0", "O2"] {
            let path = build.join(format!("{name}.{opt}.wasm"));
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|_| panic!("{}: run scripts/build-c-fixtures.sh", path.display()));
            let recursive = check(&format!("{name}.{opt}"), &bytes);
            if name == "recurse" && opt == "O0" {
                // recurse.c: ackermann calls itself; is_even/is_odd call each other.
                for f in ["ackermann", "is_even", "is_odd"] {
                    assert!(recursive.contains(&named(&bytes, f)), "{f}");
                }
                assert_eq!(
                    CallGraph::new(&bytes, &analyze(&bytes).unwrap())
                        .map(|g| g.scc_of(named(&bytes, "is_even"))
                            == g.scc_of(named(&bytes, "is_odd")))
                        .unwrap(),
                    true
                );
            }
        }
    }
}

/// A module of `n` functions (the first two imported) of two signatures,
/// each making a few random direct, indirect, reference and tail calls,
/// some after a `return` (dead), with a table of random functions.
fn random_module(rng: &mut Rng, n: u64) -> String {
    let sig = |f: u64| if f % 3 == 0 { "$a" } else { "$b" };
    let mut w = String::from("(module (type $a (func)) (type $b (func (param i32)))\n");
    for f in 0..2 {
        w += &format!("(import \"m\" \"f{f}\" (func $f{f} (type {})))\n", sig(f));
    }
    let table: Vec<u64> = (0..rng.below(4) + 1).map(|_| rng.below(n)).collect();
    w += &format!("(table {} funcref)\n(elem (i32.const 0) func", table.len());
    for f in &table {
        w += &format!(" $f{f}");
    }
    w += ")\n";
    let referenced = rng.below(n);
    w += &format!("(elem declare func $f{referenced})\n");
    for f in 2..n {
        w += &format!("(func $f{f} (type {})\n", sig(f));
        for _ in 0..rng.below(4) {
            let g = rng.below(n);
            let arg = if sig(g) == "$b" { "i32.const 1 " } else { "" };
            w += &match rng.below(6) {
                0 | 1 => format!("  {arg}call $f{g}\n"),
                2 => format!("  {arg}i32.const 0 call_indirect (type {})\n", sig(g)),
                3 => {
                    let arg = if sig(referenced) == "$b" {
                        "i32.const 1 "
                    } else {
                        ""
                    };
                    format!(
                        "  {arg}ref.func $f{referenced} call_ref {}\n",
                        sig(referenced)
                    )
                }
                4 => format!("  block return {arg}call $f{g} end\n  i32.const 0 if return end\n"),
                _ => format!("  i32.const 0 if {arg}call $f{g} end\n"),
            };
        }
        if rng.below(3) == 0 && sig(f) == sig(f + 1) && f + 1 < n {
            let g = f + 1;
            let arg = if sig(g) == "$b" { "i32.const 1 " } else { "" };
            w += &format!("  {arg}return_call $f{g}\n");
        }
        w += ")\n";
    }
    w + &format!("(export \"e\" (func $f{}))\n)", n - 1)
}

#[test]
fn random_modules_against_the_closure() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut with_cycles = 0;
    for i in 0..200 {
        let n = 3 + rng.below(12);
        let text = random_module(&mut rng, n);
        let bytes = wat::parse_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        if !check(&format!("random {i}"), &bytes).is_empty() {
            with_cycles += 1;
        }
    }
    // The generator makes cycles often enough to test them.
    assert!(with_cycles > 50, "{with_cycles}");
}

#[test]
fn indirect_targets_by_canonical_type() {
    // Two type indices of one signature are the same type; $t2 differs.
    let bytes = wat::parse_str(
        r#"(module
          (type $t0 (func (param i32)))
          (type $t1 (func (param i32)))
          (type $t2 (func))
          (table 3 funcref)
          (elem (i32.const 0) func $x $z)
          (func $x (type $t0))
          (func $y (type $t1))
          (func $z (type $t2))
          (func (export "go") (param i32)
            local.get 0 i32.const 0 call_indirect (type $t1)
            i32.const 1 call_indirect (type $t2)))"#,
    )
    .unwrap();
    let info = analyze(&bytes).unwrap();
    let g = CallGraph::new(&bytes, &info).unwrap();
    let go = info.functions[3].as_ref().unwrap();
    let targets: Vec<&[u32]> = go.calls.iter().map(|c| g.targets(&c.callee)).collect();
    // $y is never declared (no element, export or ref.func names it);
    // "go" is, by its export, and has the signature of $t1.
    assert_eq!(targets, [&[0u32, 3][..], &[2u32][..]]);
    assert_eq!(g.callees(3), &[0, 2, 3]);
    assert!(g.is_recursive(3));
    assert!(!g.is_recursive(0));
}
