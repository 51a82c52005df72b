//! Custom sections left in the input file while a module is instrumented
//! into another file.
//!
//! A module built with `-g` is mostly DWARF (lz4: 113 of its 215 KB),
//! which the instrumenter reads once, for source lines, and otherwise only
//! copies into its output. Held through the whole run, it was the largest
//! part of the instrumenter's memory. [`hollow`] takes out the contents of
//! the custom sections after the code section that the assembler copies
//! unchanged; each section stays, with its name and no contents, so that
//! the module still parses and no code offset moves. When the module is
//! assembled, such a section gets a header with its true size, and its
//! contents are copied from the input file, checked against a hash taken
//! when they were read: a file changed in the meantime is an error, never
//! a wrong module.
//!
//! Only sections after the code are hollowed: taking bytes out before it
//! would move the code offsets that CFGs, metadata and DWARF name.

use std::fs::File;
use std::hash::{DefaultHasher, Hasher};
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Range;

use wasm_encoder::Encode;
use wasmparser::{BinaryReader, CustomSectionReader};

use super::assemble::copied_unchanged;
use crate::error::{Result, WasmError};

/// A module with some custom sections' contents left in its file.
pub struct Hollowed {
    /// The module, each hollowed section with empty contents.
    pub bytes: Vec<u8>,
    pub holes: Holes,
}

/// The contents [`hollow`] left in the input file, and that file.
pub struct Holes {
    file: File,
    list: Vec<Hole>,
}

/// One hollowed section's contents.
struct Hole {
    /// Where its (empty) contents begin in [`Hollowed::bytes`].
    at: usize,
    /// Where they are in the input file.
    data: Range<u64>,
    /// [`hash`] of them, when they were read.
    hash: u64,
}

/// Sections with less in them stay: a hole costs about as much.
const MIN_HOLE: usize = 64;

/// Bytes copied from the input file at once.
const CHUNK: usize = 64 << 10;

/// `module`, read from `file`, with the contents of its custom sections
/// after the code section that are copied unchanged (all but the name
/// section) taken out, when they have at least [`MIN_HOLE`] bytes. The
/// module must be valid; `file` must hold it from its start. The module
/// is compacted in place, so that it is never held twice.
pub fn hollow(module: Vec<u8>, file: File) -> Result<Hollowed> {
    let holes = find_holes(&module)?;
    let mut bytes = module;
    let mut list = Vec::with_capacity(holes.len());
    // Bytes move towards the start only: a section's new header (its name
    // alone) is no longer than its old one.
    let (mut read, mut write) = (0, 0);
    for h in holes {
        let hash = hash(&bytes[h.data.clone()]);
        bytes.copy_within(read..h.section, write);
        write += h.section - read;
        // The section with its name alone: id, size, name.
        let name = bytes[h.content..h.data.start].to_vec();
        let mut header = vec![0];
        (name.len() as u32).encode(&mut header);
        header.extend_from_slice(&name);
        bytes[write..write + header.len()].copy_from_slice(&header);
        write += header.len();
        list.push(Hole {
            at: write,
            data: h.data.start as u64..h.data.end as u64,
            hash,
        });
        read = h.data.end;
    }
    let len = bytes.len();
    bytes.copy_within(read..len, write);
    bytes.truncate(write + len - read);
    bytes.shrink_to_fit();
    Ok(Hollowed {
        bytes,
        holes: Holes { file, list },
    })
}

/// A section [`hollow`] takes the contents of: where it begins (its id),
/// where its contents begin (its name), and its data.
struct Found {
    section: usize,
    content: usize,
    data: Range<usize>,
}

fn find_holes(module: &[u8]) -> Result<Vec<Found>> {
    let err = |e: wasmparser::BinaryReaderError| WasmError::invalid(&e);
    let mut r = BinaryReader::new(module, 0);
    r.read_bytes(8).map_err(err)?;
    let (mut found, mut after_code) = (Vec::new(), false);
    while !r.eof() {
        let section = r.original_position();
        let id = r.read_u8().map_err(err)?;
        let size = r.read_var_u32().map_err(err)? as usize;
        let content = r.original_position();
        let bytes = r.read_bytes(size).map_err(err)?;
        after_code |= id == 10;
        if id != 0 || !after_code {
            continue;
        }
        let custom = CustomSectionReader::new(BinaryReader::new(bytes, content)).map_err(err)?;
        let data = custom.data_offset()..custom.data_offset() + custom.data().len();
        if copied_unchanged(&custom) && data.len() >= MIN_HOLE {
            found.push(Found {
                section,
                content,
                data,
            });
        }
    }
    Ok(found)
}

impl Holes {
    /// The length of the contents of the hollowed section whose contents
    /// began at `at` of [`Hollowed::bytes`], and its index, if it is one.
    pub(crate) fn at(&self, at: usize) -> Option<(usize, usize)> {
        let i = self.list.binary_search_by_key(&at, |h| h.at).ok()?;
        let data = &self.list[i].data;
        Some((i, (data.end - data.start) as usize))
    }

    /// Copies hole `i`'s contents from the input file to `out`, checking
    /// them against what was read; returns how many bytes.
    pub(crate) fn copy(&self, i: usize, out: &mut File) -> Result<usize> {
        let hole = &self.list[i];
        let changed = |reason: String| WasmError::InputChanged { reason };
        let mut file = &self.file;
        file.seek(SeekFrom::Start(hole.data.start))
            .map_err(|e| changed(format!("seeking to byte {:#x}: {e}", hole.data.start)))?;
        let len = (hole.data.end - hole.data.start) as usize;
        let mut left = len;
        let mut buf = vec![0; left.min(CHUNK)];
        let mut hasher = DefaultHasher::new();
        while left > 0 {
            let chunk = &mut buf[..left.min(CHUNK)];
            file.read_exact(chunk).map_err(|e| {
                changed(format!(
                    "reading bytes {:#x}..{:#x}: {e}",
                    hole.data.start, hole.data.end
                ))
            })?;
            hasher.write(chunk);
            out.write_all(chunk)?;
            left -= chunk.len();
        }
        if hasher.finish() != hole.hash {
            return Err(changed(format!(
                "bytes {:#x}..{:#x} differ from those read",
                hole.data.start, hole.data.end
            )));
        }
        Ok(len)
    }
}

/// A hash of `data` as [`Holes::copy`] computes it, a chunk at a time.
fn hash(data: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for chunk in data.chunks(CHUNK) {
        hasher.write(chunk);
    }
    hasher.finish()
}
