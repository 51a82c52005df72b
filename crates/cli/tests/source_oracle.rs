//! `SourceMap`'s compact line table against addr2line, the crate it
//! replaced: for every instruction of every C fixture (and every run of
//! five instructions, and every whole function body), both must name the
//! same file (its whole path), line and column. addr2line shares no code with the table: it runs
//! the line programs itself, keeps its own rows, and finds units by their
//! ranges in `.debug_info`.
//!
//! `PATHPROF_SOURCE_ORACLE_DIR=DIR` adds every `.wasm` in DIR (the
//! benchmark suite's modules, say) to the fixtures.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gimli::{EndianSlice, RunTimeEndian};
use pathprof::source::SourceMap;

type Reader<'a> = EndianSlice<'a, RunTimeEndian>;

/// The lookup as pathprof did it with addr2line 0.26: the first location
/// in `[start, end)` with a line, else the first with a file.
struct Reference<'a> {
    context: addr2line::Context<Reader<'a>>,
    code_start: u32,
}

impl<'a> Reference<'a> {
    fn load(module: &'a [u8]) -> Reference<'a> {
        let mut sections: HashMap<&str, &'a [u8]> = HashMap::new();
        let mut code_start = 0;
        for payload in wasmparser::Parser::new(0).parse_all(module) {
            match payload.unwrap() {
                wasmparser::Payload::CodeSectionStart { range, .. } => {
                    code_start = range.start as u32
                }
                wasmparser::Payload::CustomSection(s) if s.name().starts_with(".debug_") => {
                    sections.insert(s.name(), s.data());
                }
                _ => {}
            }
        }
        let dwarf = gimli::Dwarf::load(|id| -> Result<Reader<'a>, gimli::Error> {
            let data = sections.get(id.name()).copied().unwrap_or(&[]);
            Ok(EndianSlice::new(data, RunTimeEndian::Little))
        })
        .unwrap();
        Reference {
            context: addr2line::Context::from_dwarf(dwarf).unwrap(),
            code_start,
        }
    }

    fn locate(&self, start: u32, end: u32) -> Option<(String, u32, u32)> {
        let low = u64::from(start - self.code_start);
        let high = u64::from(end - self.code_start).max(low + 1);
        let mut file_only = None;
        for (_, _, loc) in self.context.find_location_range(low, high).ok()? {
            let Some(file) = loc.file else { continue };
            let column = loc.column.unwrap_or(0);
            match loc.line {
                Some(line) if line > 0 => return Some((file.to_string(), line, column)),
                _ => file_only = file_only.or(Some((file.to_string(), 0, column))),
            }
        }
        file_only
    }
}

/// Module offsets of every instruction of every function body, per body,
/// with the body's end.
fn instruction_offsets(module: &[u8]) -> Vec<(Vec<u32>, u32)> {
    let mut out = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        if let wasmparser::Payload::CodeSectionEntry(body) = payload.unwrap() {
            let mut reader = body.get_operators_reader().unwrap();
            let mut offsets = Vec::new();
            while !reader.eof() {
                offsets.push(reader.read_with_offset().unwrap().1 as u32);
            }
            out.push((offsets, body.range().end as u32));
        }
    }
    out
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn modules() -> Vec<PathBuf> {
    let mut dirs = vec![root().join("tests/fixtures/c/build")];
    dirs.extend(std::env::var_os("PATHPROF_SOURCE_ORACLE_DIR").map(PathBuf::from));
    let mut out = Vec::new();
    for dir in dirs {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (run scripts/build-c-fixtures.sh)", dir.display()));
        for entry in entries {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "wasm") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn compact_line_table_answers_as_addr2line_does() {
    let modules = modules();
    assert!(modules.len() >= 12, "the twelve C fixtures: {modules:?}");
    for path in modules {
        let module = std::fs::read(&path).unwrap();
        let ours = SourceMap::load(&module).expect("the fixtures are built with -g");
        let reference = Reference::load(&module);
        let (mut probes, mut located) = (0, 0);
        for (offsets, body_end) in instruction_offsets(&module) {
            let mut ranges = vec![(offsets[0], body_end)];
            for (i, &start) in offsets.iter().enumerate() {
                let next = |k: usize| offsets.get(i + k).copied().unwrap_or(body_end);
                ranges.extend([(start, next(1)), (start, next(5)), (start, start)]);
            }
            for (start, end) in ranges {
                let want = reference.locate(start, end);
                let got = ours
                    .locate_parts(start, end)
                    .map(|(f, l, c)| (f.to_string(), l, c));
                assert_eq!(got, want, "{}: bytes {start}..{end}", path.display());
                probes += 1;
                located += usize::from(want.is_some());
            }
        }
        // Not vacuous: the fixtures are built with -g, and their libc is
        // small beside them (other modules need only have some DWARF).
        let fixture = path.starts_with(root().join("tests/fixtures"));
        assert!(
            if fixture {
                located * 10 > probes * 9
            } else {
                located > 0
            },
            "{}: {located} of {probes} located",
            path.display()
        );
    }
}

#[test]
fn a_module_without_dwarf_has_no_source_map() {
    let module = wat::parse_str("(module (func (result i32) i32.const 1))").unwrap();
    assert!(SourceMap::load(&module).is_none());
}
