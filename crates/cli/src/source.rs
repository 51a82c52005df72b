//! Source locations of blocks, from the DWARF a module carries when it was
//! built with `-g` (clang puts `.debug_*` custom sections in the module).
//!
//! In wasm DWARF an address is an offset from the start of the code
//! section's contents, so a block at module offset `o` is at address
//! `o - code_start`.

use std::collections::HashMap;

use gimli::{EndianSlice, RunTimeEndian};

/// The DWARF sections are read where they lie in the module, not copied.
type Reader<'a> = EndianSlice<'a, RunTimeEndian>;

/// A module's line table, ready for lookups.
pub struct SourceMap<'a> {
    context: addr2line::Context<Reader<'a>>,
    code_start: u32,
}

impl<'a> SourceMap<'a> {
    /// The line table of `module`, or `None` when it has no usable DWARF
    /// (then reports simply show no source). Never fails on a bad table: a
    /// profile without source locations is still a profile.
    pub fn load(module: &'a [u8]) -> Option<SourceMap<'a>> {
        let mut sections: HashMap<&str, &'a [u8]> = HashMap::new();
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
        let dwarf = gimli::Dwarf::load(|id| -> Result<Reader<'a>, gimli::Error> {
            let data = sections.get(id.name()).copied().unwrap_or(&[]);
            Ok(EndianSlice::new(data, RunTimeEndian::Little))
        })
        .ok()?;
        let context = addr2line::Context::from_dwarf(dwarf).ok()?;
        Some(SourceMap {
            context,
            code_start: code_start?,
        })
    }

    /// `file:line` of the code at module offsets `start..end` (a block): the
    /// first location in that range with a line number, since optimised
    /// code often begins a block with compiler-made instructions of line 0.
    pub fn locate(&self, start: u32, end: u32) -> Option<String> {
        self.locate_parts(start, end)
            .map(|(file, line)| match line {
                0 => file.to_string(),
                line => format!("{file}:{line}"),
            })
    }

    /// As [`SourceMap::locate`], as the file name and the line (0 when the
    /// line table names only the file).
    pub fn locate_parts(&self, start: u32, end: u32) -> Option<(&str, u32)> {
        let low = u64::from(start.checked_sub(self.code_start)?);
        let high = u64::from(end.checked_sub(self.code_start)?).max(low + 1);
        let mut file_only = None;
        for (_, _, loc) in self.context.find_location_range(low, high).ok()? {
            let Some(file) = loc.file else { continue };
            let file = file.rsplit('/').next().unwrap_or(file);
            match loc.line {
                Some(line) if line > 0 => return Some((file, line)),
                _ => file_only = file_only.or(Some((file, 0))),
            }
        }
        file_only
    }
}
