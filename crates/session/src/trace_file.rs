//! A run's branch stream saved to a file (`simulate --save-trace FILE`) and
//! simulated again from it (`simulate --trace FILE`) without running the
//! program: a sweep over more configurations, a changed model or another
//! machine sees exactly the stream the run produced. The rule
//! holds: nothing is stored on disk unless asked.
//!
//! Layout (all integers little-endian):
//! - the magic `PPBTRACE` and the format version (u32);
//! - the header: a u32 length and the postcard encoding of [`Header`] (the
//!   module's SHA-256, whether the run's data accesses are in the file);
//! - records, each a tag byte, a u32 length and a postcard payload: tag 0 a
//!   batch (its branch events and the accesses among them, as the
//!   simulators were fed them), tag 1 the end (how the run ended), last.
//!
//! A file without its end record is refused as truncated: a run that died
//! while saving leaves no file anyway (it is written beside its final name
//! and renamed at the end), so this is a file cut short afterwards.
//!
//! Postcard (varints) because the workspace already builds it for the
//! binary profile; a branch event takes about 10 bytes, so a run of a
//! billion branches takes about 10 GB: the option is for runs that need it.

use std::io::{Read, Write};
use std::path::Path;

use crate::error::{bail, invalid, Context, Result};
use pathprof_runner::Exit;
use pathprof_simulator::{BranchEvent, MemoryAccess};
use serde::{Deserialize, Serialize};

const MAGIC: &[u8; 8] = b"PPBTRACE";
const VERSION: u32 = 1;
const BATCH: u8 = 0;
const END: u8 = 1;
/// The largest record accepted: a batch is 8,192 branches and at most
/// 32,768 accesses, far below this; a larger length is a corrupt file.
const MAX_RECORD: u32 = 64 << 20;

/// What a trace file says about itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// `pathprof_wasm::module_hash` of the module that ran.
    pub module_hash: String,
    /// Whether the run's loads and stores are recorded (for the cache
    /// metrics).
    pub accesses: bool,
}

/// How the run ended, as saved.
#[derive(Serialize, Deserialize)]
enum SavedExit {
    Returned,
    ProcExit(i32),
    Trap(String),
}

/// Writes a trace as the run goes.
pub struct TraceWriter {
    file: pathprof_profile::AtomicFile,
    buf: Vec<u8>,
}

impl TraceWriter {
    /// Starts the trace in `file` (created by the caller, before the run).
    pub fn new(mut file: pathprof_profile::AtomicFile, header: &Header) -> Result<TraceWriter> {
        let f = file.file();
        f.write_all(MAGIC)?;
        f.write_all(&VERSION.to_le_bytes())?;
        let bytes = postcard::to_allocvec(header)?;
        f.write_all(&(bytes.len() as u32).to_le_bytes())?;
        f.write_all(&bytes)?;
        Ok(TraceWriter {
            file,
            buf: Vec::new(),
        })
    }

    /// Appends one batch as the simulators are fed it.
    pub fn batch(&mut self, branches: &[BranchEvent], accesses: &[MemoryAccess]) -> Result<()> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        let buf = postcard::to_extend(&(branches, accesses), buf)?;
        self.record(BATCH, &buf)?;
        self.buf = buf;
        Ok(())
    }

    /// Ends the trace with how the run ended, and gives it its name.
    pub fn finish(mut self, exit: &Exit) -> Result<()> {
        let saved = match exit {
            Exit::Returned => SavedExit::Returned,
            Exit::ProcExit(c) => SavedExit::ProcExit(*c),
            Exit::Trap(m) => SavedExit::Trap(m.clone()),
        };
        self.record(END, &postcard::to_allocvec(&saved)?)?;
        self.file.commit()?;
        Ok(())
    }

    fn record(&mut self, tag: u8, payload: &[u8]) -> Result<()> {
        let f = self.file.file();
        f.write_all(&[tag])?;
        f.write_all(&(payload.len() as u32).to_le_bytes())?;
        f.write_all(payload)?;
        Ok(())
    }
}

/// Reads a trace back, batch by batch.
pub struct TraceReader {
    input: std::io::BufReader<std::fs::File>,
    pub header: Header,
    buf: Vec<u8>,
}

/// What [`TraceReader::read_record`] read.
pub enum Record {
    Batch(Vec<BranchEvent>, Vec<MemoryAccess>),
    End(Exit),
}

impl TraceReader {
    /// Opens `path` and reads its header; errors name what is wrong, the
    /// caller names the file.
    pub fn open(path: &Path) -> Result<TraceReader> {
        let file = std::fs::File::open(path)?;
        let mut input = std::io::BufReader::with_capacity(1 << 20, file);
        let mut magic = [0u8; 12];
        input
            .read_exact(&mut magic)
            .map_err(|_| invalid!("not a pathprof branch trace (too short)"))?;
        if &magic[..8] != MAGIC {
            bail!("not a pathprof branch trace (`simulate --save-trace` writes them)");
        }
        let version = u32::from_le_bytes(magic[8..].try_into().expect("4 bytes"));
        if version != VERSION {
            bail!(
                "a branch trace of format version {version}; this pathprof reads version {VERSION}"
            );
        }
        let mut buf = Vec::new();
        read_sized(&mut input, &mut buf).context("truncated header")?;
        let header = postcard::from_bytes(&buf).map_err(|e| invalid!("corrupt header: {e}"))?;
        Ok(TraceReader { input, header, buf })
    }

    /// The next record; an error where the file ends before its end record.
    pub fn read_record(&mut self) -> Result<Record> {
        let mut tag = [0u8; 1];
        self.input.read_exact(&mut tag).map_err(|_| {
            invalid!("truncated: the trace ends before the record of how the run ended")
        })?;
        read_sized(&mut self.input, &mut self.buf).context("truncated record")?;
        match tag[0] {
            BATCH => {
                let (branches, accesses) =
                    postcard::from_bytes(&self.buf).map_err(|e| invalid!("corrupt batch: {e}"))?;
                Ok(Record::Batch(branches, accesses))
            }
            END => {
                let exit = match postcard::from_bytes(&self.buf)
                    .map_err(|e| invalid!("corrupt end record: {e}"))?
                {
                    SavedExit::Returned => Exit::Returned,
                    SavedExit::ProcExit(c) => Exit::ProcExit(c),
                    SavedExit::Trap(m) => Exit::Trap(m),
                };
                Ok(Record::End(exit))
            }
            t => bail!("corrupt: unknown record tag {t}"),
        }
    }
}

/// A u32 length and that many bytes into `buf`.
fn read_sized(input: &mut impl Read, buf: &mut Vec<u8>) -> Result<()> {
    let mut len = [0u8; 4];
    input.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len);
    if len > MAX_RECORD {
        bail!("a record of {len} bytes, more than a trace holds");
    }
    buf.resize(len as usize, 0);
    input.read_exact(buf)?;
    Ok(())
}
