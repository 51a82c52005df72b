//! Source locations of blocks, from the DWARF a module carries when it was
//! built with `-g` (clang puts `.debug_*` custom sections in the module).
//!
//! In wasm DWARF an address is an offset from the start of the code
//! section's contents, so a block at module offset `o` is at address
//! `o - code_start`.
//!
//! The line programs of all units are run once, when the map is loaded,
//! into one compact table: rows of (address, file, line, column), 16 bytes
//! each, with a row dropped when it repeats the previous row's location,
//! and every file path kept once. A block's
//! lookup is then two binary searches and a short walk. This replaced
//! addr2line's `Context`, which kept each unit's abbreviations, rows of
//! 24 bytes and a path per unit's file, and answered each of the instrumenter's tens of
//! thousands of lookups through a boxed iterator per unit: on SQLite the
//! lookups took 5 % of instrumenting and the context a tenth of its heap.
//!
//! The answer is addr2line 0.26's `find_location_range` walked to the
//! first row with a line (see [`SourceMap::locate_parts`]); a test holds
//! the two equal on every instruction of the C fixtures. The rows are
//! read the way addr2line reads them (a row at the address of the one
//! before it replaces it; an empty sequence is dropped; paths joined as it
//! joins them). One departure: addr2line visits units in the order of
//! their address ranges' ends and only where a unit's ranges cover the
//! block, while this table visits line sequences in address order. The two
//! differ only where the sequences of different units overlap, which
//! clang and wasm-ld never produce for code that is in the module (a
//! discarded function's sequence is moved to a tombstone address, and a
//! sequence at address 0, where the code section's function count lies
//! and no code can, is dropped here for the same reason).

use std::collections::HashMap;

use gimli::{EndianSlice, RunTimeEndian};
use pathprof_profile::SourceLocation;

type Reader<'a> = EndianSlice<'a, RunTimeEndian>;

/// A file index that names no file (out of the unit's file table).
const NO_FILE: u32 = u32::MAX;

/// A module's line table, ready for lookups.
pub struct SourceMap {
    code_start: u32,
    /// File paths, each once.
    files: Vec<Box<str>>,
    /// Sorted by start address.
    sequences: Vec<Sequence>,
    rows: Vec<Row>,
}

/// A line sequence: `rows[first..last]`, covering `[start, end)`.
struct Sequence {
    start: u32,
    end: u32,
    first: u32,
    last: u32,
}

/// The line table from `address` until the next row of the sequence.
#[derive(Clone, Copy)]
struct Row {
    address: u32,
    /// Index into `SourceMap::files`, or [`NO_FILE`].
    file: u32,
    /// 0 when the compiler gave no line.
    line: u32,
    /// 0 when the compiler gave no column.
    column: u32,
}

impl SourceMap {
    /// The line table of `module`, or `None` when it has no usable DWARF
    /// (then reports simply show no source). Never fails on a bad table: a
    /// profile without source locations is still a profile; a unit whose
    /// line program cannot be read contributes no rows.
    pub fn load(module: &[u8]) -> Option<SourceMap> {
        let mut sections: HashMap<&str, &[u8]> = HashMap::new();
        let mut code_start = None;
        for payload in wasmparser::Parser::new(0).parse_all(module) {
            match payload.ok()? {
                wasmparser::Payload::CodeSectionStart { range, .. } => {
                    code_start = Some(range.start as u32)
                }
                wasmparser::Payload::CustomSection(s) if s.name().starts_with(".debug_") => {
                    sections.insert(s.name(), s.data());
                }
                _ => {}
            }
        }
        if !sections.contains_key(".debug_line") {
            return None;
        }
        let dwarf = gimli::Dwarf::load(|id| -> Result<Reader<'_>, gimli::Error> {
            let data = sections.get(id.name()).copied().unwrap_or(&[]);
            Ok(EndianSlice::new(data, RunTimeEndian::Little))
        })
        .ok()?;
        let mut map = SourceMap {
            code_start: code_start?,
            files: Vec::new(),
            sequences: Vec::new(),
            rows: Vec::new(),
        };
        let mut builder = Builder::default();
        let mut units = dwarf.units();
        while let Ok(Some(header)) = units.next() {
            if matches!(
                header.type_(),
                gimli::UnitType::Type { .. } | gimli::UnitType::SplitType { .. }
            ) {
                continue;
            }
            let Ok(unit) = dwarf.unit(header) else {
                continue;
            };
            builder.unit(gimli::UnitRef::new(&dwarf, &unit), &mut map);
        }
        map.sequences.sort_by_key(|s| s.start);
        map.rows.shrink_to_fit();
        Some(map)
    }

    /// Whether the line table has no rows (as a `.debug_line` emptied by
    /// a tool after the linker leaves it).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The source of the code at module offsets `start..end` (a block): the
    /// first location in that range with a line number, since optimised
    /// code often begins a block with compiler-made instructions of line 0.
    pub fn locate(&self, start: u32, end: u32) -> Option<SourceLocation> {
        self.locate_parts(start, end)
            .map(|(file, line, column)| SourceLocation {
                file: file.to_string(),
                line,
                column,
            })
    }

    /// As [`SourceMap::locate`], as the file's path, the line (0 when the
    /// line table names only the file) and the column (0: none).
    ///
    /// The rows visited are addr2line's for `find_location_range(low,
    /// high)`: from the row in force at `low` (or the first row of the next
    /// sequence, when `low` falls between sequences) through every row that
    /// starts below `high`, across sequences. The first with a file and a
    /// line wins; failing one, the first with a file.
    pub fn locate_parts(&self, start: u32, end: u32) -> Option<(&str, u32, u32)> {
        let low = start.checked_sub(self.code_start)?;
        let high = end.checked_sub(self.code_start)?.max(low.saturating_add(1));
        let mut seq_idx = self.sequences.partition_point(|s| s.end <= low);
        let mut row_idx = match self.sequences.get(seq_idx) {
            Some(s) => {
                let rows = &self.rows[s.first as usize..s.last as usize];
                s.first as usize + rows.partition_point(|r| r.address <= low).saturating_sub(1)
            }
            None => return None,
        };
        let mut file_only = None;
        while let Some(seq) = self.sequences.get(seq_idx) {
            if seq.start >= high {
                break;
            }
            if row_idx >= seq.last as usize {
                seq_idx += 1;
                row_idx = self.sequences.get(seq_idx).map_or(0, |s| s.first as usize);
                continue;
            }
            let row = self.rows[row_idx];
            if row.address >= high {
                break;
            }
            row_idx += 1;
            let Some(file) = self.files.get(row.file as usize) else {
                continue;
            };
            match row.line {
                0 => file_only = file_only.or(Some((&**file, 0, 0))),
                line => return Some((file, line, row.column)),
            }
        }
        file_only
    }
}

/// State kept across units while the table is built: the file names seen,
/// so each is stored once.
#[derive(Default)]
struct Builder {
    file_ids: HashMap<Box<str>, u32>,
}

impl Builder {
    /// Runs one unit's line program into `map`. On an error the unit's
    /// rows are taken back out, as addr2line drops a unit whose lines it
    /// cannot parse.
    fn unit(&mut self, unit: gimli::UnitRef<'_, Reader<'_>>, map: &mut SourceMap) {
        let before = (map.rows.len(), map.sequences.len());
        if self.try_unit(unit, map, before).is_err() {
            let (rows_before, seqs_before) = before;
            map.rows.truncate(rows_before);
            map.sequences.truncate(seqs_before);
        }
    }

    /// [`Builder::unit`]; `(rows_before, seqs_before)`: the table's
    /// lengths before this unit.
    fn try_unit(
        &mut self,
        unit: gimli::UnitRef<'_, Reader<'_>>,
        map: &mut SourceMap,
        (rows_before, seqs_before): (usize, usize),
    ) -> Result<(), gimli::Error> {
        let Some(program) = unit.line_program.clone() else {
            return Ok(());
        };
        // Row file indices are the unit's; they are mapped once the
        // header's file table is known, at the end of the program.
        let mut rows = program.rows();
        let mut seq_first = map.rows.len();
        // A sequence with an address past 32 bits can hold no wasm code.
        let mut seq_fits = true;
        while let Some((_, row)) = rows.next_row()? {
            let address = u32::try_from(row.address()).ok();
            seq_fits &= address.is_some();
            if row.end_sequence() {
                let first = map.rows.get(seq_first).map(|r| r.address);
                match (first, address) {
                    (Some(start), Some(end)) if seq_fits && start < end && start != 0 => {
                        map.sequences.push(Sequence {
                            start,
                            end,
                            first: seq_first as u32,
                            last: map.rows.len() as u32,
                        });
                    }
                    _ => map.rows.truncate(seq_first),
                }
                (seq_first, seq_fits) = (map.rows.len(), true);
                continue;
            }
            let (Some(address), true) = (address, seq_fits) else {
                continue;
            };
            let file = u32::try_from(row.file_index()).unwrap_or(NO_FILE);
            let line = row.line().map_or(0, |l| l.get() as u32);
            // A column means nothing without a line (addr2line gives none).
            let column = match row.column() {
                _ if line == 0 => 0,
                gimli::ColumnType::LeftEdge => 0,
                gimli::ColumnType::Column(c) => c.get() as u32,
            };
            match map.rows[seq_first..].last_mut() {
                Some(last) if last.address == address => {
                    (last.file, last.line, last.column) = (file, line, column)
                }
                _ => map.rows.push(Row {
                    address,
                    file,
                    line,
                    column,
                }),
            }
        }
        map.rows.truncate(seq_first);
        let files = self.files(unit, rows.header(), map)?;
        for row in &mut map.rows[rows_before..] {
            row.file = files.get(row.file as usize).copied().unwrap_or(NO_FILE);
        }
        dedup_rows(map, seqs_before);
        Ok(())
    }

    /// The unit's file table as indices into `map.files`, rendered as
    /// addr2line renders them (index 0 is the empty name before DWARF 5).
    fn files<'d>(
        &mut self,
        unit: gimli::UnitRef<'_, Reader<'d>>,
        header: &gimli::LineProgramHeader<Reader<'d>>,
        map: &mut SourceMap,
    ) -> Result<Vec<u32>, gimli::Error> {
        let mut ids = Vec::new();
        let mut index = 0;
        loop {
            let path = match header.file(index) {
                Some(file) => render_file(unit, file, header)?,
                None if index == 0 => String::new(),
                None => break,
            };
            let id = match self.file_ids.get(path.as_str()) {
                Some(&id) => id,
                None => {
                    let id = map.files.len() as u32;
                    map.files.push(path.as_str().into());
                    self.file_ids.insert(path.into(), id);
                    id
                }
            };
            ids.push(id);
            index += 1;
        }
        Ok(ids)
    }
}

/// Drops, in the sequences from `seqs_before` on, each row that repeats
/// the file, line and column of the row before it: a walk from any address then
/// meets the same locations in the same order, less the repeats, and
/// [`SourceMap::locate_parts`] takes only the first of each kind.
fn dedup_rows(map: &mut SourceMap, seqs_before: usize) {
    let Some(first) = map.sequences.get(seqs_before).map(|s| s.first as usize) else {
        return;
    };
    let mut write = first;
    for seq in &mut map.sequences[seqs_before..] {
        let (from, to) = (seq.first as usize, seq.last as usize);
        seq.first = write as u32;
        for read in from..to {
            let row = map.rows[read];
            let repeat = read > from && {
                let prev = map.rows[write - 1];
                (prev.file, prev.line, prev.column) == (row.file, row.line, row.column)
            };
            if !repeat {
                map.rows[write] = row;
                write += 1;
            }
        }
        seq.last = write as u32;
    }
    map.rows.truncate(write);
}

/// The file's path: the unit's compilation directory, the file's
/// directory (unless it is index 0, the compilation directory itself) and
/// its name, each replacing what came before when it is absolute, as
/// addr2line 0.26 joins them.
fn render_file<'d>(
    unit: gimli::UnitRef<'_, Reader<'d>>,
    file: &gimli::FileEntry<Reader<'d>>,
    header: &gimli::LineProgramHeader<Reader<'d>>,
) -> Result<String, gimli::Error> {
    let mut path = match &unit.comp_dir {
        Some(dir) => dir.to_string_lossy().into_owned(),
        None => String::new(),
    };
    if file.directory_index() != 0 {
        if let Some(dir) = file.directory(header) {
            push_path(&mut path, &unit.attr_string(dir)?.to_string_lossy());
        }
    }
    push_path(
        &mut path,
        &unit.attr_string(file.path_name())?.to_string_lossy(),
    );
    Ok(path)
}

fn push_path(path: &mut String, part: &str) {
    let slash_root = |p: &str| p.starts_with('/') || p.get(1..3) == Some(":/");
    let backslash_root = |p: &str| p.starts_with('\\') || p.get(1..3) == Some(":\\");
    if slash_root(part) || backslash_root(part) {
        *path = part.to_string();
        return;
    }
    let sep = if backslash_root(path) { '\\' } else { '/' };
    if !path.is_empty() && !path.ends_with(sep) {
        path.push(sep);
    }
    path.push_str(part);
}

/// A warning when `module` looks built by a toolchain (it has DWARF or a
/// `producers` section) yet has no name section, or has a `.debug_line`
/// section from which `map` got no rows: what binaryen's `wasm-opt` leaves,
/// which clang runs after linking an optimised build whenever it finds one.
/// Reports would show `func[N]` and no source lines.
pub fn lost_debug_info(module: &[u8], map: Option<&SourceMap>) -> Option<String> {
    let (mut names, mut producers, mut debug_line) = (false, false, false);
    let mut parser = wasmparser::Parser::new(0);
    let mut data = module;
    while let Ok(wasmparser::Chunk::Parsed { consumed, payload }) = parser.parse(data, true) {
        data = &data[consumed..];
        match payload {
            // Function bodies are not needed: skipped whole.
            wasmparser::Payload::CodeSectionStart { size, .. } => {
                parser.skip_section();
                data = data.get(size as usize..)?;
            }
            wasmparser::Payload::CustomSection(s) => match s.name() {
                "name" => names = true,
                "producers" => producers = true,
                ".debug_line" => debug_line = true,
                _ => {}
            },
            wasmparser::Payload::End(_) => break,
            _ => {}
        }
    }
    let no_names = !names && (producers || debug_line);
    let no_lines = debug_line && map.is_none_or(SourceMap::is_empty);
    let lost = match (no_names, no_lines) {
        (false, false) => return None,
        (true, false) => "no name section (reports name functions func[N])",
        (false, true) => "a .debug_line section that yields no rows (reports show no source lines)",
        (true, true) => "no name section and a .debug_line section that yields no rows (reports show func[N] and no source lines)",
    };
    Some(format!(
        "the module has {lost}: likely stripped after linking by binaryen's wasm-opt, which clang runs on an optimised build when it finds one; to keep them, give clang `-B DIR` with a wasm-opt that does nothing (as scripts/wasi-env.sh does) or, in a newer clang, --no-wasm-opt"
    ))
}
