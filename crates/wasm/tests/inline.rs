//! Selective inlining (thesis 3.4.4 step 2): the output against modules
//! written by hand, and inlined modules run against the originals.

use pathprof_wasm::{analyze, inline, Callee, InlinePlan, InlineTree, WasmError};
use wasmtime::{Engine, Instance, Module, Store, Val};

/// The offsets of function `f`'s direct calls of `g`, in code order.
fn calls(bytes: &[u8], f: u32, g: u32) -> Vec<u32> {
    let info = analyze(bytes).unwrap();
    let imported = info.num_imported_funcs;
    let cfg = info.functions[(f - imported) as usize].as_ref().unwrap();
    cfg.calls
        .iter()
        .filter(|c| c.callee == Callee::Direct(g))
        .map(|c| c.offset)
        .collect()
}

fn tree(at: impl IntoIterator<Item = (u32, u32, InlineTree)>) -> InlineTree {
    InlineTree {
        at: at.into_iter().map(|(o, g, t)| (o, (g, t))).collect(),
    }
}

const TWO_CALLS: &str = r#"(module
  (func $g (param i32) (result i32) (local i32)
    local.get 0
    if
      i32.const 7
      return
    end
    local.get 1
    local.get 0
    i32.add)
  (func $f (param i32) (result i32)
    local.get 0
    call $g
    local.get 0
    call $g
    i32.add)
  (export "f" (func $f)))"#;

/// The first call inlined, written out by hand: the block of g's type, the
/// argument and the zeroed local in fresh locals 1 and 2, `return` as `br`.
const TWO_CALLS_INLINED: &str = r#"(module
  (func $g (param i32) (result i32) (local i32)
    local.get 0
    if
      i32.const 7
      return
    end
    local.get 1
    local.get 0
    i32.add)
  (func $f (param i32) (result i32) (local i32 i32)
    local.get 0
    block (type 0)
      local.set 1
      i32.const 0
      local.set 2
      local.get 1
      if
        i32.const 7
        br 1
      end
      local.get 2
      local.get 1
      i32.add
    end
    local.get 0
    call $g
    i32.add)
  (export "f" (func $f)))"#;

#[test]
fn a_call_inlined_is_the_body_in_a_block() {
    let bytes = wat::parse_str(TWO_CALLS).unwrap();
    let sites = calls(&bytes, 1, 0);
    assert_eq!(sites.len(), 2);
    let plan: InlinePlan = [(1, tree([(sites[0], 0, InlineTree::default())]))].into();
    let out = inline(&bytes, &plan).unwrap();
    assert_eq!(out.kept, 0);
    let out = out.bytes;
    assert_eq!(out, wat::parse_str(TWO_CALLS_INLINED).unwrap());
    for x in [0, 1, 5] {
        assert_eq!(call(&bytes, "f", x), call(&out, "f", x), "f({x})");
    }
}

/// Runs export `name` with one i32.
fn call(bytes: &[u8], name: &str, x: i32) -> Vec<i64> {
    let engine = Engine::default();
    let module = Module::new(&engine, bytes).unwrap();
    let mut store = Store::new(&engine, ());
    let instance = Instance::new(&mut store, &module, &[]).unwrap();
    let f = instance.get_func(&mut store, name).unwrap();
    let n = f.ty(&store).results().len();
    let mut out = vec![Val::I32(0); n];
    f.call(&mut store, &[Val::I32(x)], &mut out).unwrap();
    out.iter()
        .map(|v| match v {
            Val::I32(x) => i64::from(*x),
            Val::I64(x) => *x,
            v => panic!("result {v:?}"),
        })
        .collect()
}

/// Inlined copies within copies, recursion, a tail call and a multi-value
/// callee inside a loop (its locals must start at zero on every pass),
/// and locals of every defaultable kind.
const NESTED: &str = r#"(module
  (type $pair (func (param i32) (result i32 i64)))
  (func $leaf (param i32) (result i32) (local v128 funcref f64)
    local.get 2
    ref.is_null
    local.get 1
    i32x4.extract_lane 0
    i32.add
    local.get 0
    i32.add
    f64.const 1
    local.set 3
    v128.const i32x4 9 9 9 9
    local.set 1)
  (func $fact (param i32) (result i32)
    local.get 0
    i32.eqz
    if
      i32.const 1
      return
    end
    local.get 0
    local.get 0
    i32.const 1
    i32.sub
    call $fact
    i32.mul)
  (func $tail (param i32) (result i32)
    local.get 0
    i32.const 3
    i32.add
    return_call $leaf)
  (func $pair (type $pair) (local i32)
    local.get 1
    local.get 0
    i32.add
    i32.const 100
    local.set 1
    local.get 0
    call $fact
    i64.extend_i32_u
    local.get 1
    i64.extend_i32_u
    i64.add)
  (func $main (param i32) (result i64) (local i64 i32)
    loop
      local.get 2
      call $pair
      local.get 1
      i64.add
      local.set 1
      i64.extend_i32_u
      local.get 1
      i64.add
      local.set 1
      local.get 2
      call $tail
      i64.extend_i32_u
      local.get 1
      i64.add
      local.set 1
      local.get 2
      i32.const 1
      i32.add
      local.tee 2
      local.get 0
      i32.lt_u
      br_if 0
    end
    local.get 1
    local.get 0
    call $fact
    i64.extend_i32_u
    i64.add)
  (export "main" (func $main)))"#;

#[test]
fn nested_recursive_and_tail_copies_compute_what_the_calls_did() {
    let bytes = wat::parse_str(NESTED).unwrap();
    let (leaf, fact, tail, pair, main) = (0, 1, 2, 3, 4);
    let fact_in_fact = calls(&bytes, fact, fact)[0];
    // fact inlined into itself twice below main and below pair.
    let fact_tree = || {
        tree([(
            fact_in_fact,
            fact,
            tree([(fact_in_fact, fact, InlineTree::default())]),
        )])
    };
    let plan: InlinePlan = [(
        main,
        tree([
            (
                calls(&bytes, main, pair)[0],
                pair,
                tree([(calls(&bytes, pair, fact)[0], fact, fact_tree())]),
            ),
            (
                calls(&bytes, main, tail)[0],
                tail,
                tree([(calls(&bytes, tail, leaf)[0], leaf, InlineTree::default())]),
            ),
            (calls(&bytes, main, fact)[0], fact, fact_tree()),
        ]),
    )]
    .into();
    assert_eq!(plan[&main].sites(), 9);
    let out = inline(&bytes, &plan).unwrap().bytes;
    // Main's own calls are gone, and the tail call of leaf; what is left
    // are the calls the deepest copies of fact make.
    assert!(calls(&out, main, pair).is_empty());
    assert!(calls(&out, main, tail).is_empty());
    assert!(calls(&out, main, leaf).is_empty());
    assert_eq!(calls(&out, main, fact).len(), 2);
    for n in [0, 1, 2, 5, 9] {
        assert_eq!(call(&bytes, "main", n), call(&out, "main", n), "main({n})");
    }
    // Nothing planned, nothing changed but the encoding.
    let same = inline(&bytes, &InlinePlan::new()).unwrap().bytes;
    assert_eq!(call(&same, "main", 4), call(&bytes, "main", 4));
}

#[test]
fn a_plan_that_does_not_fit_the_module_is_refused() {
    let bytes = wat::parse_str(TWO_CALLS).unwrap();
    let site = calls(&bytes, 1, 0)[0];
    let wrong = |plan: InlinePlan| match inline(&bytes, &plan) {
        Err(WasmError::BadPlan { func_index, reason }) => (func_index, reason),
        other => panic!("{other:?}"),
    };
    // Not the call's offset, and the call of another function.
    let (f, why) = wrong([(1, tree([(site + 1, 0, InlineTree::default())]))].into());
    assert_eq!(f, 1);
    assert!(why.contains("is not a call of function 0"), "{why}");
    let (_, why) = wrong([(1, tree([(site, 1, InlineTree::default())]))].into());
    assert!(why.contains("is not a call of function 1"), "{why}");
    // A module that does not validate is refused before anything is read.
    let mut bad = bytes.clone();
    bad.truncate(bytes.len() - 3);
    assert!(matches!(
        inline(&bad, &InlinePlan::new()),
        Err(WasmError::Invalid { .. } | WasmError::Truncated { .. })
    ));
}

/// The names stay (no index moves); DWARF and code metadata go (their
/// offsets no longer hold); other custom sections are copied.
#[test]
fn stale_offsets_are_dropped_and_names_kept() {
    let text = TWO_CALLS.strip_suffix(')').unwrap().to_string()
        + r#"(@custom ".debug_line" "lines") (@custom "metadata.code.branch_hint" "")
        (@custom "keep" "me"))"#;
    let bytes = wat::parse_str(&text).unwrap();
    let customs = |b: &[u8]| -> Vec<String> {
        wasmparser::Parser::new(0)
            .parse_all(b)
            .filter_map(|p| match p.unwrap() {
                wasmparser::Payload::CustomSection(c) => Some(c.name().to_string()),
                _ => None,
            })
            .collect()
    };
    let before = customs(&bytes);
    assert!(before.contains(&".debug_line".to_string()), "{before:?}");
    let site = calls(&bytes, 1, 0)[0];
    let plan: InlinePlan = [(1, tree([(site, 0, InlineTree::default())]))].into();
    let after = customs(&inline(&bytes, &plan).unwrap().bytes);
    assert_eq!(after, ["keep", "name"], "{before:?}");
}

/// Tail calls: a copy inlined at a tail call returns from the function and
/// keeps its own tail calls (a million mutually recursive tail calls, two
/// levels inlined, run in constant stack); a tail call under an exception
/// handler stays a call (the callee's throw leaves the handler behind), and
/// so does a call of a function with one (it would become a call under the
/// handler).
const TAILS: &str = r#"(module
  (tag $e)
  (func $even (export "even") (param i64) (result i32)
    local.get 0
    i64.eqz
    if
      i32.const 1
      return
    end
    local.get 0
    i64.const 1
    i64.sub
    return_call $odd)
  (func $odd (param i64) (result i32)
    local.get 0
    i64.eqz
    if
      i32.const 0
      return
    end
    local.get 0
    i64.const 1
    i64.sub
    return_call $even)
  (func $throw (throw $e))
  (func $tail_in_try (export "tail_in_try")
    block $h
      try_table (catch $e $h)
        return_call $throw
      end
    end)
  (func (export "calls_it") (result i32)
    call $tail_in_try
    i32.const 1))"#;

#[test]
fn tail_calls_stay_tail_calls_and_handlers_stay_behind() {
    let bytes = wat::parse_str(TAILS).unwrap();
    let (even, odd, throw, tail_in_try, calls_it) = (0, 1, 2, 3, 4);
    let to_odd = calls(&bytes, even, odd)[0];
    let to_even = calls(&bytes, odd, even)[0];
    let plan: InlinePlan = [
        (
            even,
            tree([(to_odd, odd, tree([(to_even, even, InlineTree::default())]))]),
        ),
        (
            tail_in_try,
            tree([(
                calls(&bytes, tail_in_try, throw)[0],
                throw,
                InlineTree::default(),
            )]),
        ),
        (
            calls_it,
            tree([(
                calls(&bytes, calls_it, tail_in_try)[0],
                tail_in_try,
                InlineTree::default(),
            )]),
        ),
    ]
    .into();
    let out = inline(&bytes, &plan).unwrap();
    // The tail call under the handler, and the call of its function.
    assert_eq!(out.kept, 2);
    // Two levels inlined; the third is still a tail call.
    let info = analyze(&out.bytes).unwrap();
    let left = &info.functions[even as usize].as_ref().unwrap().calls;
    assert_eq!(left.len(), 1);
    assert_eq!((left[0].callee, left[0].tail), (Callee::Direct(odd), true));
    let engine = Engine::default();
    let module = Module::new(&engine, &out.bytes).unwrap();
    let mut store = Store::new(&engine, ());
    let instance = Instance::new(&mut store, &module, &[]).unwrap();
    let even = instance
        .get_typed_func::<i64, i32>(&mut store, "even")
        .unwrap();
    assert_eq!(even.call(&mut store, 1_000_001).unwrap(), 0);
    assert_eq!(even.call(&mut store, 1_000_000).unwrap(), 1);
    let thrown = |name: &str, store: &mut Store<()>| {
        let f = instance.get_func(&mut *store, name).unwrap();
        let mut res = vec![Val::I32(0); f.ty(&*store).results().len()];
        f.call(&mut *store, &[], &mut res).is_err()
    };
    assert!(
        thrown("tail_in_try", &mut store),
        "the throw left the handler behind"
    );
    assert!(thrown("calls_it", &mut store));
}
