//! The runner on small WAT programs: WASI I/O, exits, traps, counters, the
//! trace import, abrupt stacks, `invoke`, and the errors.

use std::sync::{Arc, Mutex};

use pathprof_runner::{
    check_imports, engine, invoke, run_command, Exit, RunError, RunOptions, TraceEvent, TraceSink,
    TraceTo, UnknownImports, Value, TRAP_EXIT_CODE,
};

fn wasm(text: &str) -> Vec<u8> {
    wat::parse_str(text).expect("test WAT parses")
}

fn run(text: &str, opts: &RunOptions) -> pathprof_runner::RunOutcome {
    let bytes = wasm(text);
    run_command(&engine().unwrap(), &bytes, opts).expect("the run starts")
}

/// WASI imports and a `$print` helper (iovec at 0..8, nwritten at 8).
/// Function indices: 0 fd_write, 1 proc_exit, 2 args_sizes_get, 3 args_get,
/// 4 environ_sizes_get, 5 environ_get, 6 fd_read, 7 path_open, 8 $print.
const PRELUDE: &str = r#"
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_get" (func $environ_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func $print (param $ptr i32) (param $len i32)
    (i32.store (i32.const 0) (local.get $ptr))
    (i32.store (i32.const 4) (local.get $len))
    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8))))
"#;

fn program(body: &str) -> String {
    format!("(module {PRELUDE} {body})")
}

/// The function index of the first function defined after the prelude.
const FIRST: u32 = 9;

#[test]
fn hello_world() {
    let out = run(
        &program(
            r#"(data (i32.const 100) "hello, world\n")
               (func (export "_start") (call $print (i32.const 100) (i32.const 13)))"#,
        ),
        &RunOptions::captured(["hello"]),
    );
    assert_eq!(out.exit, Exit::Returned);
    assert_eq!(out.exit.code(), 0);
    assert_eq!(out.stdout, b"hello, world\n");
    assert!(out.stderr.is_empty());
    assert_eq!(out.counters, None);
    assert!(out.abrupt_stack.is_empty());
}

#[test]
fn stderr_is_captured_separately() {
    let out = run(
        &program(
            r#"(data (i32.const 100) "oops")
               (func (export "_start")
                 (i32.store (i32.const 0) (i32.const 100))
                 (i32.store (i32.const 4) (i32.const 4))
                 (drop (call $fd_write (i32.const 2) (i32.const 0) (i32.const 1) (i32.const 8))))"#,
        ),
        &RunOptions::captured(["p"]),
    );
    assert_eq!(out.stdout, b"");
    assert_eq!(out.stderr, b"oops");
}

/// Prints the whole argv buffer (NUL-separated strings).
#[test]
fn reads_args() {
    let text = program(
        r#"(func (export "_start")
             (drop (call $args_sizes_get (i32.const 16) (i32.const 20)))
             (drop (call $args_get (i32.const 1000) (i32.const 2000)))
             (call $print (i32.const 2000) (i32.load (i32.const 20))))"#,
    );
    let out = run(&text, &RunOptions::captured(["prog", "a", "b c", "ünï"]));
    assert_eq!(out.stdout, "prog\0a\0b c\0ünï\0".as_bytes());
    assert_eq!(out.exit, Exit::Returned);
}

#[test]
fn reads_env() {
    let text = program(
        r#"(func (export "_start")
             (drop (call $environ_sizes_get (i32.const 16) (i32.const 20)))
             (drop (call $environ_get (i32.const 1000) (i32.const 2000)))
             (call $print (i32.const 2000) (i32.load (i32.const 20))))"#,
    );
    let mut opts = RunOptions::captured(["prog"]);
    opts.env = vec![("A".into(), "1".into()), ("PATH_X".into(), "x=y".into())];
    let out = run(&text, &opts);
    assert_eq!(out.stdout, b"A=1\0PATH_X=x=y\0");
}

/// Echoes up to 4 KiB of stdin.
#[test]
fn reads_stdin() {
    let text = program(
        r#"(func (export "_start")
             (i32.store (i32.const 32) (i32.const 4096))
             (i32.store (i32.const 36) (i32.const 4096))
             (drop (call $fd_read (i32.const 0) (i32.const 32) (i32.const 1) (i32.const 40)))
             (call $print (i32.const 4096) (i32.load (i32.const 40))))"#,
    );
    let mut opts = RunOptions::captured(["prog"]);
    opts.stdin = Some(b"from stdin\n".to_vec());
    assert_eq!(run(&text, &opts).stdout, b"from stdin\n");
    // Without stdin bytes and without inheriting, stdin is empty.
    assert_eq!(run(&text, &RunOptions::captured(["prog"])).stdout, b"");
}

/// Opens `data.txt` in the first preopened directory (fd 3), prints it;
/// exits with 100 + errno if opening fails.
#[test]
fn reads_a_file_in_a_preopened_dir() {
    let dir = std::env::temp_dir().join(format!("pathprof-runner-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("data.txt"), b"file contents\n").unwrap();
    let text = program(
        r#"(data (i32.const 100) "data.txt")
           (func (export "_start") (local $err i32)
             (local.set $err
               (call $path_open (i32.const 3) (i32.const 0) (i32.const 100) (i32.const 8)
                 (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 48)))
             (if (local.get $err)
               (then (call $proc_exit (i32.add (i32.const 100) (local.get $err)))))
             (i32.store (i32.const 32) (i32.const 4096))
             (i32.store (i32.const 36) (i32.const 4096))
             (drop (call $fd_read (i32.load (i32.const 48)) (i32.const 32) (i32.const 1) (i32.const 40)))
             (call $print (i32.const 4096) (i32.load (i32.const 40))))"#,
    );
    let mut opts = RunOptions::captured(["prog"]);
    opts.dirs = vec![(dir.clone(), "/data".into())];
    let out = run(&text, &opts);
    assert_eq!(out.exit, Exit::Returned, "stdout: {:?}", out.stdout);
    assert_eq!(out.stdout, b"file contents\n");
    // Without the preopen, fd 3 is not a directory.
    let out = run(&text, &RunOptions::captured(["prog"]));
    assert!(
        matches!(out.exit, Exit::ProcExit(n) if n > 100),
        "{:?}",
        out.exit
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_preopen_dir_is_an_error() {
    let mut opts = RunOptions::captured(["prog"]);
    opts.dirs = vec![("/no/such/dir/pathprof".into(), "/x".into())];
    let err = run_command(
        &engine().unwrap(),
        &wasm(&program(r#"(func (export "_start"))"#)),
        &opts,
    )
    .unwrap_err();
    assert!(matches!(err, RunError::Preopen { .. }), "{err}");
    assert!(err.to_string().contains("/no/such/dir/pathprof"), "{err}");
}

/// `_start` (FIRST) → $f (FIRST+1) → $g (FIRST+2) → proc_exit(3).
#[test]
fn proc_exit_from_a_call_chain() {
    let text = program(
        r#"(data (i32.const 100) "before exit\n")
           (func (export "_start") (call $f) (unreachable))
           (func $f (call $print (i32.const 100) (i32.const 12)) (call $g))
           (func $g (call $proc_exit (i32.const 3)))"#,
    );
    let bytes = wasm(&text);
    let out = run_command(&engine().unwrap(), &bytes, &RunOptions::captured(["p"])).unwrap();
    assert_eq!(out.exit, Exit::ProcExit(3));
    assert_eq!(out.exit.code(), 3);
    assert_eq!(out.stdout, b"before exit\n");
    let funcs: Vec<u32> = out.abrupt_stack.iter().map(|f| f.0).collect();
    assert_eq!(funcs, [FIRST + 2, FIRST + 1, FIRST]);
    // Every frame is stopped at a `call` instruction (opcode 0x10).
    for &(_, offset) in &out.abrupt_stack {
        assert_eq!(bytes[offset as usize], 0x10, "offset {offset}");
    }
    // Distinct call sites.
    assert!(out.abrupt_stack[0].1 != out.abrupt_stack[1].1);
}

#[test]
fn proc_exit_zero_is_not_a_return() {
    let out = run(
        &program(r#"(func (export "_start") (call $proc_exit (i32.const 0)))"#),
        &RunOptions::captured(["p"]),
    );
    assert_eq!(out.exit, Exit::ProcExit(0));
    assert_eq!(out.exit.code(), 0);
    assert_eq!(out.abrupt_stack.len(), 1);
}

#[test]
fn invalid_proc_exit_status_is_a_trap() {
    let out = run(
        &program(r#"(func (export "_start") (call $proc_exit (i32.const 200)))"#),
        &RunOptions::captured(["p"]),
    );
    match &out.exit {
        Exit::Trap(msg) => assert!(msg.contains("exit status"), "{msg}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(out.exit.code(), TRAP_EXIT_CODE);
}

/// `_start` (FIRST) → $f (FIRST+1) → $h (FIRST+2) → unreachable; output
/// before the trap and counters written before it are kept.
#[test]
fn trap_keeps_output_counters_and_stack() {
    let text = program(
        r#"(memory $counters (export "__pathprof_counters") 1)
           (data (i32.const 100) "partial")
           (func (export "_start")
             (i32.store $counters (i32.const 0) (i32.const 0x04030201))
             (call $f))
           (func $f
             (call $print (i32.const 100) (i32.const 7))
             (i64.store $counters (i32.const 8) (i64.const -1))
             (call $h))
           (func $h (unreachable))"#,
    );
    let bytes = wasm(&text);
    let out = run_command(&engine().unwrap(), &bytes, &RunOptions::captured(["p"])).unwrap();
    match &out.exit {
        Exit::Trap(msg) => {
            assert!(msg.contains("unreachable"), "{msg}");
            assert!(!msg.contains("backtrace"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(out.exit.code(), 134);
    assert_eq!(out.stdout, b"partial");
    let counters = out.counters.expect("counters exported");
    assert_eq!(counters.len(), 65536);
    assert_eq!(
        &counters[..16],
        &[1, 2, 3, 4, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255]
    );
    assert!(counters[16..].iter().all(|&b| b == 0));
    let funcs: Vec<u32> = out.abrupt_stack.iter().map(|f| f.0).collect();
    assert_eq!(funcs, [FIRST + 2, FIRST + 1, FIRST]);
    // The innermost frame is at the `unreachable` (0x00), the others at calls.
    assert_eq!(bytes[out.abrupt_stack[0].1 as usize], 0x00);
    assert_eq!(bytes[out.abrupt_stack[1].1 as usize], 0x10);
    assert_eq!(bytes[out.abrupt_stack[2].1 as usize], 0x10);
}

#[test]
fn counters_after_a_normal_return() {
    let text = r#"(module
        (memory (export "__pathprof_counters") 1 1)
        (func (export "_start")
          (i64.store (i32.const 65528) (i64.const 0x0102030405060708))))"#;
    let out = run(text, &RunOptions::captured(["p"]));
    assert_eq!(out.exit, Exit::Returned);
    let counters = out.counters.unwrap();
    assert_eq!(&counters[65528..], &[8, 7, 6, 5, 4, 3, 2, 1]);
}

#[test]
fn memory_fault_trap_message() {
    let out = run(
        r#"(module (memory 1) (func (export "_start") (drop (i32.load (i32.const 70000)))))"#,
        &RunOptions::captured(["p"]),
    );
    match &out.exit {
        Exit::Trap(msg) => assert!(msg.contains("out of bounds"), "{msg}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(out.abrupt_stack.len(), 1);
}

#[test]
fn deep_recursion_stack_is_complete() {
    // $rec counts down from 5000 and traps at 0: 5000 + 2 frames live.
    let text = r#"(module
        (func $rec (param i32)
          (if (i32.eqz (local.get 0)) (then unreachable))
          (call $rec (i32.sub (local.get 0) (i32.const 1))))
        (func (export "_start") (call $rec (i32.const 5000))))"#;
    let out = run(text, &RunOptions::captured(["p"]));
    assert!(matches!(out.exit, Exit::Trap(_)));
    assert_eq!(out.abrupt_stack.len(), 5002);
    assert!(out.abrupt_stack[..5001].iter().all(|f| f.0 == 0));
    assert_eq!(out.abrupt_stack[5001].0, 1);
}

#[test]
fn stack_overflow_is_a_trap() {
    let text = r#"(module
        (func $rec (call $rec))
        (func (export "_start") (call $rec)))"#;
    let out = run(text, &RunOptions::captured(["p"]));
    match &out.exit {
        Exit::Trap(msg) => assert!(msg.contains("call stack exhausted"), "{msg}"),
        other => panic!("{other:?}"),
    }
    assert!(out.abrupt_stack.len() > 1000, "{}", out.abrupt_stack.len());
    assert!(out.abrupt_stack.len() < pathprof_runner::MAX_BACKTRACE_FRAMES);
    assert_eq!(out.abrupt_stack.last().unwrap().0, 1);
}

const TRACE_PROGRAM: &str = r#"(module
    (import "__pathprof" "trace" (func $trace (param i32 i32)))
    (func (export "_start")
      (call $trace (i32.const 1) (i32.const 2))
      (call $trace (i32.const 3) (i32.const 4))
      (call $trace (i32.const -1) (i32.const 7))
      (unreachable)))"#;

/// A sink that keeps each batch as it came.
#[derive(Default)]
struct Batches(Vec<Vec<(u32, u32)>>);

impl TraceSink for Batches {
    fn events(&mut self, events: &[TraceEvent]) {
        self.0
            .push(events.iter().map(|e| (e.func, e.edge)).collect());
    }
}

/// Runs `text` with its trace sent to a [`Batches`].
fn run_traced(text: &str) -> (pathprof_runner::RunOutcome, Vec<Vec<(u32, u32)>>) {
    let batches = Arc::new(Mutex::new(Batches::default()));
    let mut opts = RunOptions::captured(["p"]);
    opts.trace = Some(TraceTo::new(batches.clone()));
    let out = run(text, &opts);
    let batches = std::mem::take(&mut batches.lock().unwrap().0);
    (out, batches)
}

#[test]
fn trace_events_are_recorded() {
    let (out, batches) = run_traced(TRACE_PROGRAM);
    // Fewer events than a batch: handed over at once when the run ends.
    assert_eq!(batches, [vec![(1, 2), (3, 4), (u32::MAX, 7)]]);
    assert!(matches!(out.exit, Exit::Trap(_)));
    // frame: _start is function 1 (the import is 0).
    assert_eq!(out.abrupt_stack.len(), 1);
    assert_eq!(out.abrupt_stack[0].0, 1);
}

/// The buffered protocol, written by hand: two records and a flush, which
/// must empty the buffer (the third record is written at position 0),
/// then a record left in the buffer when the run traps.
#[test]
fn buffered_trace_is_flushed_and_drained_after_a_trap() {
    let text = r#"(module
        (import "__pathprof" "trace_flush" (func $flush))
        (memory (export "__pathprof_trace") 1 1)
        (global $pos (export "__pathprof_trace_pos") (mut i32) (i32.const 0))
        (func (export "_start")
          (i64.store (i32.const 0) (i64.const 0x0000000200000001))
          (i64.store (i32.const 8) (i64.const 0x00000004fffffffd))
          (global.set $pos (i32.const 16))
          (call $flush)
          (i64.store (global.get $pos) (i64.const 0x0000000600000005))
          (global.set $pos (i32.add (global.get $pos) (i32.const 8)))
          (unreachable)))"#;
    let (out, batches) = run_traced(text);
    assert_eq!(batches, [vec![(1, 2), (u32::MAX - 2, 4)], vec![(5, 6)]]);
    assert!(matches!(out.exit, Exit::Trap(_)));
}

/// A per-edge trace longer than a batch comes in full batches, the rest
/// when the run ends (here by `proc_exit`).
#[test]
fn per_edge_events_come_in_batches() {
    let n = pathprof_runner::trace::BATCH as i32 + 3;
    let text = format!(
        r#"(module
        (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
        (import "__pathprof" "trace" (func $trace (param i32 i32)))
        (memory (export "memory") 1)
        (func (export "_start") (local $i i32)
          (loop $l
            (call $trace (i32.const 9) (local.get $i))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br_if $l (i32.lt_u (local.get $i) (i32.const {n}))))
          (call $exit (i32.const 3))))"#
    );
    let (out, batches) = run_traced(&text);
    assert_eq!(out.exit, Exit::ProcExit(3));
    let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
    assert_eq!(sizes, [n as usize - 3, 3]);
    let events: Vec<(u32, u32)> = batches.concat();
    let expected: Vec<(u32, u32)> = (0..n as u32).map(|i| (9, i)).collect();
    assert_eq!(events, expected);
}

#[test]
fn trace_import_is_provided_even_when_not_recording() {
    let out = run(TRACE_PROGRAM, &RunOptions::captured(["p"]));
    assert!(matches!(out.exit, Exit::Trap(_)));
}

#[test]
fn trace_import_of_the_wrong_type_is_an_instantiation_error() {
    let bytes = wasm(
        r#"(module (import "__pathprof" "trace" (func (param i64)))
                   (func (export "_start")))"#,
    );
    let err = run_command(&engine().unwrap(), &bytes, &RunOptions::captured(["p"])).unwrap_err();
    assert!(matches!(err, RunError::Instantiate(_)), "{err}");
    assert!(err.to_string().contains("trace"), "{err}");
}

/// An import the runner does not provide is found before the module is
/// compiled: this module's `_start` does not validate (it returns nothing
/// where an i32 is due), and the error is still the import's.
#[test]
fn unknown_imports_are_refused_before_compiling() {
    let bytes = wasm(
        r#"(module (import "env" "mystery" (func)) (import "env" "limit" (global i32))
                   (func (export "_start") (result i32)))"#,
    );
    let err = run_command(&engine().unwrap(), &bytes, &RunOptions::captured(["p"])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "imports that the embedded engine does not provide (it provides WASI preview 1): \
         env::mystery (function), env::limit (global)"
    );
    // Trapping functions stand in for functions only.
    let err = check_imports(&engine().unwrap(), &bytes, UnknownImports::Trap, &[]).unwrap_err();
    assert!(
        matches!(&err, RunError::UnknownImports { imports } if imports == &["env::limit (global)"]),
        "{err}"
    );
    check_imports(&engine().unwrap(), &bytes, UnknownImports::Default, &[]).unwrap();
    // WASI and the trace imports are provided.
    let provided = wasm(
        r#"(module
             (import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))
             (import "__pathprof" "trace" (func (param i32 i32)))
             (import "__pathprof" "trace_flush" (func))
             (func (export "_start")))"#,
    );
    check_imports(&engine().unwrap(), &provided, UnknownImports::Refuse, &[]).unwrap();
}

/// With a stand-in for an unknown import, the exports that do not call it
/// run; calling it traps (`trap`) or gives zero (`default`), as
/// `wasmtime run -Wunknown-imports-trap/-default`.
#[test]
fn unknown_imports_trap_or_return_zeros_when_asked() {
    let bytes = wasm(
        r#"(module (import "env" "mystery" (func $m (result i32)))
                   (func (export "calls") (result i32) (i32.add (call $m) (i32.const 1)))
                   (func (export "safe") (result i32) (i32.const 7)))"#,
    );
    let with = |unknown_imports, export: &str| {
        let opts = RunOptions {
            unknown_imports,
            ..RunOptions::captured(["p"])
        };
        invoke(&engine().unwrap(), &bytes, export, &[], &opts).unwrap()
    };
    let safe = with(UnknownImports::Trap, "safe");
    assert_eq!(
        (safe.exit, safe.results),
        (Exit::Returned, vec![Value::I32(7)])
    );
    let calls = with(UnknownImports::Trap, "calls");
    assert!(
        matches!(&calls.exit, Exit::Trap(m) if m.contains("env::mystery")),
        "{:?}",
        calls.exit
    );
    let calls = with(UnknownImports::Default, "calls");
    assert_eq!(
        (calls.exit, calls.results),
        (Exit::Returned, vec![Value::I32(1)])
    );
}

#[test]
fn fuel_limit_stops_an_infinite_loop() {
    let text = r#"(module
        (memory (export "__pathprof_counters") 1)
        (func (export "_start")
          (loop $l
            (i32.store (i32.const 0) (i32.add (i32.load (i32.const 0)) (i32.const 1)))
            (br $l))))"#;
    let mut opts = RunOptions::captured(["p"]);
    opts.fuel = Some(100_000);
    let out = run(text, &opts);
    match &out.exit {
        Exit::Trap(msg) => assert!(msg.contains("fuel"), "{msg}"),
        other => panic!("{other:?}"),
    }
    let counters = out.counters.unwrap();
    let n = u32::from_le_bytes(counters[..4].try_into().unwrap());
    assert!(n > 1000 && n < 100_000, "{n}");
}

#[test]
fn start_section_trap_ends_the_run() {
    let out = run(
        r#"(module (func $s unreachable) (start $s) (func (export "_start")))"#,
        &RunOptions::captured(["p"]),
    );
    assert!(matches!(out.exit, Exit::Trap(_)), "{:?}", out.exit);
    assert_eq!(out.counters, None);
    assert_eq!(
        out.abrupt_stack.iter().map(|f| f.0).collect::<Vec<_>>(),
        [0]
    );
}

#[test]
fn no_start_is_an_error() {
    let bytes = wasm(r#"(module (func (export "main")))"#);
    let err = run_command(&engine().unwrap(), &bytes, &RunOptions::default()).unwrap_err();
    assert!(matches!(err, RunError::NoStart(_)), "{err}");
    let bytes = wasm(r#"(module (func (export "_start") (param i32)))"#);
    let err = run_command(&engine().unwrap(), &bytes, &RunOptions::default()).unwrap_err();
    assert!(matches!(err, RunError::NoStart(_)), "{err}");
}

#[test]
fn components_are_rejected() {
    let engine = engine().unwrap();
    let component = wasm("(component)");
    let err = run_command(&engine, &component, &RunOptions::default()).unwrap_err();
    assert!(matches!(err, RunError::Component), "{err}");
    assert!(err.to_string().contains("component"));
    let err = run_command(&engine, b";; text\n(component)", &RunOptions::default()).unwrap_err();
    assert!(matches!(err, RunError::Component), "{err}");
    let err = invoke(&engine, &component, "f", &[], &RunOptions::default()).unwrap_err();
    assert!(matches!(err, RunError::Component), "{err}");
}

#[test]
fn garbage_is_a_compile_error() {
    let engine = engine().unwrap();
    for bytes in [
        &b""[..],
        b"\0asm",
        b"\0asm\x01\0\0\0\x01",
        b"not wasm at all",
    ] {
        let err = run_command(&engine, bytes, &RunOptions::default()).unwrap_err();
        assert!(matches!(err, RunError::Compile(_)), "{err}");
    }
}

#[test]
fn proposals_are_enabled() {
    // Multi-memory, tail calls, typed function references, GC, exceptions.
    let text = r#"(module
        (type $pair (struct (field i32) (field i32)))
        (type $ft (func (param i32) (result i32)))
        (tag $e (param i32))
        (memory 1) (memory $m2 1)
        (elem declare func $inc)
        (func $inc (type $ft) (i32.add (local.get 0) (i32.const 1)))
        (func $tail (param i32) (result i32) (return_call $inc (local.get 0)))
        (func (export "go") (result i32)
          (local $p (ref $pair))
          (local.set $p (struct.new $pair (i32.const 40) (i32.const 1)))
          (i32.store $m2 (i32.const 0) (struct.get $pair 0 (local.get $p)))
          (block $h (result i32)
            (try_table (catch $e $h)
              (throw $e (call_ref $ft
                (call $tail (i32.load $m2 (i32.const 0)))
                (ref.func $inc))))
            (i32.const -1))))"#;
    let out = invoke(
        &engine().unwrap(),
        &wasm(text),
        "go",
        &[],
        &RunOptions::default(),
    )
    .unwrap();
    assert_eq!(out.results, [Value::I32(42)]);
}

// ---- invoke --------------------------------------------------------------

const LIBRARY: &str = r#"(module
    (memory (export "__pathprof_counters") 1)
    (global $g (export "some_global") i32 (i32.const 0))
    (func (export "add") (param i32 i32) (result i32)
      (i32.store (i32.const 0) (i32.const 1))
      (i32.add (local.get 0) (local.get 1)))
    (func (export "mix") (param i64 f32 f64) (result i64 f64)
      (local.get 0)
      (f64.add (f64.promote_f32 (local.get 1)) (local.get 2)))
    (func (export "none"))
    (func (export "div") (param i32 i32) (result i32)
      (i32.store8 (i32.const 5) (i32.const 9))
      (call $inner (local.get 0) (local.get 1)))
    (func $inner (param i32 i32) (result i32)
      (i32.div_s (local.get 0) (local.get 1)))
    (func (export "takes_ref") (param funcref)))"#;

fn call(export: &str, args: &[&str]) -> Result<pathprof_runner::InvokeOutcome, RunError> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    invoke(
        &engine().unwrap(),
        &wasm(LIBRARY),
        export,
        &args,
        &RunOptions::default(),
    )
}

#[test]
fn invoke_returns_results_and_counters() {
    let out = call("add", &["40", "2"]).unwrap();
    assert_eq!(out.results, [Value::I32(42)]);
    assert_eq!(out.exit, Exit::Returned);
    assert_eq!(&out.counters.unwrap()[..4], &[1, 0, 0, 0]);
    let out = call("add", &["0xffffffff", "-1"]).unwrap();
    assert_eq!(out.results, [Value::I32(-2)]);
    let out = call("mix", &["-9000000000", "1.5", "0.25"]).unwrap();
    assert_eq!(out.results, [Value::I64(-9_000_000_000), Value::F64(1.75)]);
    assert_eq!(out.results[1].to_string(), "1.75");
    let out = call("none", &[]).unwrap();
    assert!(out.results.is_empty());
}

#[test]
fn invoke_trap() {
    let out = call("div", &["1", "0"]).unwrap();
    match &out.exit {
        Exit::Trap(msg) => assert!(msg.contains("divide by zero"), "{msg}"),
        other => panic!("{other:?}"),
    }
    assert!(out.results.is_empty());
    assert_eq!(out.counters.unwrap()[5], 9);
    // div is function 3, $inner 4.
    assert_eq!(
        out.abrupt_stack.iter().map(|f| f.0).collect::<Vec<_>>(),
        [4, 3]
    );
    assert_eq!(call("div", &["7", "2"]).unwrap().results, [Value::I32(3)]);
}

#[test]
fn invoke_errors() {
    let err = call("nope", &[]).unwrap_err();
    assert!(matches!(err, RunError::MissingExport(_)));
    assert!(err.to_string().contains("`nope`"), "{err}");

    let err = call("__pathprof_counters", &[]).unwrap_err();
    assert!(
        matches!(err, RunError::NotAFunction { kind: "memory", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("__pathprof_counters"), "{err}");
    let err = call("some_global", &[]).unwrap_err();
    assert!(
        matches!(err, RunError::NotAFunction { kind: "global", .. }),
        "{err}"
    );

    let err = call("add", &["1"]).unwrap_err();
    assert!(
        matches!(
            err,
            RunError::Arity {
                expected: 2,
                given: 1,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("[i32, i32]"), "{err}");

    let err = call("add", &["1", "two"]).unwrap_err();
    assert!(
        matches!(err, RunError::BadArgument { index: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("\"two\""), "{err}");
    let err = call("add", &["1", "1.0"]).unwrap_err();
    assert!(matches!(err, RunError::BadArgument { .. }), "{err}");
    let err = call("add", &["1", "4294967296"]).unwrap_err();
    assert!(matches!(err, RunError::BadArgument { .. }), "{err}");

    let err = call("takes_ref", &["0"]).unwrap_err();
    assert!(
        matches!(err, RunError::UnsupportedParam { index: 1, .. }),
        "{err}"
    );
}

#[test]
fn invoke_with_wasi_and_reactor_initialize() {
    // `_initialize` sets the global the export then prints.
    let text = program(
        r#"(global $ready (mut i32) (i32.const 0))
           (data (i32.const 100) "not ready\nready\n")
           (func (export "_initialize") (global.set $ready (i32.const 1)))
           (func (export "hello") (result i32)
             (if (global.get $ready)
               (then (call $print (i32.const 110) (i32.const 6)))
               (else (call $print (i32.const 100) (i32.const 10))))
             (i32.const 5))
           (func (export "bye") (call $proc_exit (i32.const 9)))"#,
    );
    let engine = engine().unwrap();
    let opts = RunOptions::captured(["lib"]);
    let out = invoke(&engine, &wasm(&text), "hello", &[], &opts).unwrap();
    assert_eq!(out.stdout, b"ready\n");
    assert_eq!(out.results, [Value::I32(5)]);
    let out = invoke(&engine, &wasm(&text), "bye", &[], &opts).unwrap();
    assert_eq!(out.exit, Exit::ProcExit(9));
    assert_eq!(out.abrupt_stack.len(), 1);
}

#[test]
fn invoke_with_fuel_not_enabled_engine() {
    let engine = pathprof_runner::engine_without_fuel().unwrap();
    let mut opts = RunOptions::default();
    // Without a limit, an engine without fuel metering works.
    let out = invoke(&engine, &wasm(LIBRARY), "none", &[], &opts).unwrap();
    assert_eq!(out.exit, Exit::Returned);
    opts.fuel = Some(10);
    let err = invoke(&engine, &wasm(LIBRARY), "none", &[], &opts).unwrap_err();
    assert!(matches!(err, RunError::FuelNotEnabled), "{err}");
}
