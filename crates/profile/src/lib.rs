//! The pathprof profile file.
//!
//! A profile (documented in `docs/profile-format.md`) holds the format name
//! and version, the hash of the module it was measured on, the mode, how
//! many runs it sums, and per function the facts needed to regenerate its
//! paths without the module (blocks with code offsets, CFG edges, the
//! Ball-Larus DAG with every edge's Val) and the counts. It is written in
//! one of two encodings of the same schema ([`Encoding`]): binary
//! ([`binary`], the default: SQLite's path profile is 0.8 MB and reads in
//! about 12 ms) or a JSON document (29 MB and 130 ms), for files named
//! `*.json`. Readers take either, and JSON profiles of earlier releases.
//!
//! Profiles are written atomically: to a temporary file in the target's
//! folder, then renamed, so a failed write never leaves half a file.

pub mod binary;
pub mod interproc;
pub mod intra_context;
mod location;
mod merge;
pub mod segments;
mod sparse;

use std::path::{Path, PathBuf};

use pathprof_graph::NodeId;
use pathprof_techniques::ball_larus::{Numbered, PathCounts};
use pathprof_techniques::edge::Chords;
use pathprof_techniques::ppp::PppInfo;
use serde::{Deserialize, Serialize};

pub use location::SourceLocation;
pub use merge::{merge, merge_into};

/// The `format` field of every profile.
pub const FORMAT_NAME: &str = "pathprof-profile";
/// The newest version this build writes and reads: a sparse profile's
/// ([`Profile::unrun`]). A profile that lists every function is written as
/// version [`DENSE_VERSION`], which earlier releases read.
pub const FORMAT_VERSION: u32 = 3;
/// The version of a profile that lists every instrumented function.
pub const DENSE_VERSION: u32 = 2;
/// The oldest version this build reads: version 1 differs only in its
/// block sources ([`SourceLocation`]), read into version 2's form.
pub const OLDEST_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The reason is in the message, not the error chain: anyhow's `{:#}`
    /// would print it twice (a field named `source` is thiserror's source).
    #[error("{path}: {reason}")]
    Io {
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("{path}: not a pathprof profile ({reason})")]
    NotAProfile { path: PathBuf, reason: String },
    #[error("{path}: profile format version {found}, this pathprof reads versions {OLDEST_VERSION} to {expected}")]
    Version {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error("{path}: profile is of module {found}, not of this module ({expected})")]
    ModuleMismatch {
        path: PathBuf,
        found: String,
        expected: String,
    },
    #[error("cannot merge: {0}")]
    Merge(String),
}

/// How a profile file is written; readers take either.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Compact columns of varints ([`binary`]): the default.
    Binary,
    /// The JSON document of docs/profile-format.md, for scripts and people.
    Json,
}

impl Encoding {
    /// The file names `merge` takes from a directory.
    pub fn is_profile_name(path: &Path) -> bool {
        path.extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json") || e.eq_ignore_ascii_case("profile"))
    }

    /// JSON for a file named `*.json`, else binary.
    pub fn of_path(path: &Path) -> Encoding {
        match path.extension() {
            Some(e) if e.eq_ignore_ascii_case("json") => Encoding::Json,
            _ => Encoding::Binary,
        }
    }
}

/// Which technique produced the counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Path,
    Edge,
    /// Preferential path profiling: Ball-Larus ids of the interesting paths
    /// (and, under the `record` policy, of the others).
    Ppp,
    /// Melski & Reps' interprocedural context paths ([`Profile::interproc`]).
    Context,
    /// Melski & Reps' interprocedural piecewise paths.
    Piecewise,
    /// Vaswani's depth-k interprocedural path segments
    /// ([`Profile::segments`]), recorded from a trace of the run.
    Segments,
    /// Melski & Reps' intraprocedural context paths (section 7,
    /// [`Profile::intra_context`]).
    #[serde(rename = "intra-context")]
    IntraContext,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Path => "path",
            Mode::Edge => "edge",
            Mode::Ppp => "ppp",
            Mode::Context => "context",
            Mode::Piecewise => "piecewise",
            Mode::Segments => "segments",
            Mode::IntraContext => "intra-context",
        })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub format: String,
    pub version: u32,
    /// SHA-256 (hex) of the original, uninstrumented module.
    pub module_hash: String,
    pub mode: Mode,
    /// Number of runs summed into the counts.
    pub runs: u64,
    pub functions: Vec<FunctionProfile>,
    /// Functions left uninstrumented, with the reason.
    pub skipped: Vec<Skipped>,
    /// Instrumented functions whose counts were all zero, left out of a
    /// sparse profile ([`Profile::make_sparse`]), ascending: their blocks,
    /// edges and numbering are in the instrumented module's metadata, which
    /// the module hash names. Empty in a profile that lists every function.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrun: Vec<u32>,
    /// Runs that ended abruptly (trap, proc_exit): their in-flight paths are
    /// not counted.
    pub abrupt_runs: u64,
    /// The interprocedural paths of the `context` and `piecewise` modes (the
    /// functions then carry the edge counts those paths imply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interproc: Option<Box<interproc::InterprocProfile>>,
    /// The interprocedural path segments of the `segments` mode (the
    /// functions then carry the run's edge counts, from the same trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<Box<segments::SegmentProfile>>,
    /// The intraprocedural context paths of the `intra-context` mode (the
    /// functions then carry no counts of their own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intra_context: Option<Box<intra_context::IntraContextProfile>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub func_index: u32,
    pub name: Option<String>,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionProfile {
    /// Index in the original module's function index space (imports counted).
    pub func_index: u32,
    pub name: Option<String>,
    /// Basic blocks, indexed by CFG node id (ENTRY and EXIT are `None`).
    pub blocks: Vec<Option<Block>>,
    /// CFG edges, indexed by edge id.
    pub edges: Vec<Edge>,
    pub data: FunctionData,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// Module byte offset of the block's first instruction.
    pub offset: u32,
    /// Module byte offset just past its last instruction.
    pub end: u32,
    /// Number of instructions.
    pub instrs: u32,
    /// Where its first located instruction came from, from the module's
    /// DWARF line table when the module has one (built with `-g`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceLocation>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    pub src: NodeId,
    pub dst: NodeId,
    /// How control crosses it (`Fallthrough`, `BrIf`, `Catch`, ...).
    pub kind: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "technique", rename_all = "snake_case")]
pub enum FunctionData {
    /// Ball-Larus path profile; under PPP, with what PPP kept.
    Path {
        numbered: Numbered,
        counts: PathCounts,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ppp: Option<Box<PppInfo>>,
    },
    /// Edge profile: chord counters and every edge's derived count.
    Edge {
        chords: Chords,
        chord_counts: Vec<u64>,
        edge_counts: Vec<u64>,
    },
}

/// The two fields a profile is recognised by, whatever their type.
#[derive(Default, Deserialize)]
struct Head {
    format: Option<serde_json::Value>,
    version: Option<serde_json::Value>,
}

impl Profile {
    /// An empty profile of a module.
    pub fn new(module_hash: String, mode: Mode) -> Self {
        Profile {
            format: FORMAT_NAME.to_string(),
            version: DENSE_VERSION,
            module_hash,
            mode,
            runs: 0,
            functions: Vec::new(),
            skipped: Vec::new(),
            unrun: Vec::new(),
            abrupt_runs: 0,
            interproc: None,
            segments: None,
            intra_context: None,
        }
    }

    /// Reads and checks a profile file.
    pub fn read(path: &Path) -> Result<Profile, ProfileError> {
        let bytes = std::fs::read(path).map_err(|source| ProfileError::Io {
            path: path.into(),
            reason: source,
        })?;
        Self::from_bytes(path, &bytes)
    }

    /// Parses and checks profile bytes, binary or JSON; `path` names them
    /// in errors.
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<Profile, ProfileError> {
        let not = |reason: String| ProfileError::NotAProfile {
            path: path.into(),
            reason,
        };
        if bytes.starts_with(binary::MAGIC) {
            let found =
                binary::version(bytes).ok_or_else(|| not("corrupt binary profile".into()))?;
            if !(OLDEST_VERSION..=FORMAT_VERSION).contains(&found) {
                return Err(ProfileError::Version {
                    path: path.into(),
                    found,
                    expected: FORMAT_VERSION,
                });
            }
            let profile = binary::decode(bytes).map_err(not)?;
            profile.check_consistent().map_err(not)?;
            return Ok(profile);
        }
        // The format and version are read first, with every other value
        // skipped unparsed, and the profile is then read straight into its
        // types: a `serde_json::Value` tree of the whole file first took
        // seven times the file's size (195 MB for a 29 MB SQLite profile).
        let head = match serde_json::from_slice::<Head>(bytes) {
            Ok(head) => head,
            Err(e) if e.is_syntax() || e.is_eof() => return Err(not(format!("not JSON: {e}"))),
            // JSON, but not an object.
            Err(_) => Head::default(),
        };
        if head.format.as_ref().and_then(|f| f.as_str()) != Some(FORMAT_NAME) {
            return Err(not("no \"format\": \"pathprof-profile\" field".into()));
        }
        let found = head.version.as_ref().and_then(|v| v.as_u64()).unwrap_or(0);
        if !(u64::from(OLDEST_VERSION)..=u64::from(FORMAT_VERSION)).contains(&found) {
            let found = u32::try_from(found).unwrap_or(u32::MAX);
            return Err(ProfileError::Version {
                path: path.into(),
                found,
                expected: FORMAT_VERSION,
            });
        }
        let mut profile: Profile = serde_json::from_slice(bytes).map_err(|e| not(e.to_string()))?;
        profile.check_consistent().map_err(not)?;
        // Read into this version's form, it is written as this version.
        profile.version = profile.needed_version();
        Ok(profile)
    }

    /// Whether the bytes claim to be a profile: the binary magic, or a JSON
    /// object (which [`Profile::from_bytes`] then checks).
    pub fn looks_like(bytes: &[u8]) -> bool {
        bytes.starts_with(binary::MAGIC)
            || bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
    }

    /// Checks the internal references a hand-edited or corrupted file could break.
    fn check_consistent(&self) -> Result<(), String> {
        self.check_unrun()?;
        for f in &self.functions {
            let nodes = f.blocks.len();
            if f.edges
                .iter()
                .any(|e| e.src.index() >= nodes || e.dst.index() >= nodes)
            {
                return Err(format!(
                    "function {}: an edge names a block that does not exist",
                    f.func_index
                ));
            }
            match &f.data {
                FunctionData::Path {
                    numbered,
                    counts,
                    ppp,
                } => {
                    if ppp
                        .as_ref()
                        .is_some_and(|i| i.interesting.iter().any(|&p| p >= numbered.total))
                    {
                        return Err(format!(
                            "function {}: an interesting path is out of range",
                            f.func_index
                        ));
                    }
                    if numbered.num_nodes != nodes
                        || numbered
                            .dag_edges
                            .iter()
                            .any(|e| e.src.index() >= nodes || e.dst.index() >= nodes)
                    {
                        return Err(format!(
                            "function {}: its path numbering does not fit its blocks",
                            f.func_index
                        ));
                    }
                    if counts.paths.iter().any(|&(p, _)| p >= numbered.total) {
                        return Err(format!(
                            "function {}: a path number is out of range",
                            f.func_index
                        ));
                    }
                }
                FunctionData::Edge { edge_counts, .. } => {
                    if edge_counts.len() != f.edges.len() {
                        return Err(format!(
                            "function {}: edge counts do not match its edges",
                            f.func_index
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Refuses a profile measured on another module.
    pub fn check_module(&self, path: &Path, module_hash: &str) -> Result<(), ProfileError> {
        if self.module_hash != module_hash {
            return Err(ProfileError::ModuleMismatch {
                path: path.into(),
                found: short(&self.module_hash),
                expected: short(module_hash),
            });
        }
        Ok(())
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        if self.version != self.needed_version() {
            return self.with_needed_version().to_json();
        }
        serde_json::to_string_pretty(self).expect("a profile always serialises")
    }

    /// The version a file of this profile has: [`FORMAT_VERSION`] for a
    /// sparse one, else [`DENSE_VERSION`] (which earlier releases read).
    pub fn needed_version(&self) -> u32 {
        if self.unrun.is_empty() {
            DENSE_VERSION
        } else {
            FORMAT_VERSION
        }
    }

    /// A copy whose `version` is [`Profile::needed_version`], for writing
    /// one whose `unrun` a caller changed without it.
    fn with_needed_version(&self) -> Profile {
        let mut p = self.clone();
        p.version = p.needed_version();
        p
    }

    /// The profile in an encoding.
    pub fn to_bytes(&self, encoding: Encoding) -> Vec<u8> {
        if self.version != self.needed_version() {
            return self.with_needed_version().to_bytes(encoding);
        }
        match encoding {
            Encoding::Binary => binary::encode(self),
            Encoding::Json => self.to_json().into_bytes(),
        }
    }

    /// Writes the profile atomically, in the encoding its name asks for
    /// ([`Encoding::of_path`]).
    pub fn write(&self, path: &Path) -> Result<(), ProfileError> {
        write_atomically(path, &self.to_bytes(Encoding::of_path(path)))
    }

    /// Writes the profile to a file created before (see [`AtomicFile`]),
    /// in the encoding its name asks for.
    pub fn write_to(&self, file: AtomicFile) -> Result<(), ProfileError> {
        let bytes = self.to_bytes(Encoding::of_path(&file.path));
        file.finish(&bytes)
    }

    pub fn function(&self, func_index: u32) -> Option<&FunctionProfile> {
        self.functions.iter().find(|f| f.func_index == func_index)
    }
}

impl FunctionProfile {
    /// A display name: the name section's, or `func[N]`.
    pub fn display_name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("func[{}]", self.func_index))
    }
}

/// The CFG a profile records for a function: its edges over `num_nodes` nodes.
pub fn cfg_of(edges: &[Edge], num_nodes: usize) -> pathprof_graph::Cfg {
    let pairs: Vec<_> = edges.iter().map(|e| (e.src, e.dst)).collect();
    pathprof_graph::Cfg::from_edges(num_nodes, &pairs)
}

fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a
/// rename, so readers never see a partial file and a failure leaves none.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ProfileError> {
    AtomicFile::create(path)?.finish(bytes)
}

/// tempfile's errors name the random temporary path and hide the system's
/// error code; the user named the final path, which the caller adds, so
/// the reason is said in terms of its folder.
fn creation_error(e: std::io::Error, dir: &Path) -> std::io::Error {
    let reason = match e.kind() {
        std::io::ErrorKind::NotFound => "no such folder".to_string(),
        kind => kind.to_string(),
    };
    std::io::Error::new(
        e.kind(),
        format!("cannot create a file in {}: {reason}", dir.display()),
    )
}

/// A file written in the folder of its final path and renamed there when
/// complete ([`AtomicFile::commit`]): readers never see a partial file, and
/// dropping it uncommitted (after an error) removes it.
pub struct AtomicFile {
    path: std::path::PathBuf,
    tmp: tempfile::NamedTempFile,
}

impl AtomicFile {
    pub fn create(path: &Path) -> Result<Self, ProfileError> {
        // Created with mode 0666 less the umask, as any new file is (tempfile's
        // default, 0600, would leave outputs unreadable to others).
        let mut builder = tempfile::Builder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        // Renaming onto a folder would fail only at the end, after the work
        // (with "Device or resource busy" for `.`): refused here instead.
        if path.is_dir() {
            return Err(ProfileError::Io {
                path: path.into(),
                reason: std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "is a folder; name a file to write",
                ),
            });
        }
        let dir = Self::folder(path);
        let tmp = builder
            .tempfile_in(dir)
            .map_err(|source| ProfileError::Io {
                path: path.into(),
                reason: creation_error(source, dir),
            })?;
        Ok(AtomicFile {
            path: path.into(),
            tmp,
        })
    }

    /// The folder the file goes to (where a scratch file of the same size
    /// had best go too).
    pub fn folder(path: &Path) -> &Path {
        match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        }
    }

    /// An anonymous scratch file in the same folder (so on the same file
    /// system), removed when closed.
    pub fn scratch(&self) -> Result<std::fs::File, ProfileError> {
        let dir = Self::folder(&self.path);
        tempfile::tempfile_in(dir).map_err(|e| self.io(creation_error(e, dir)))
    }

    pub fn file(&mut self) -> &mut std::fs::File {
        self.tmp.as_file_mut()
    }

    /// An I/O error on this file, named by its final path.
    pub fn io(&self, source: std::io::Error) -> ProfileError {
        ProfileError::Io {
            path: self.path.clone(),
            reason: source,
        }
    }

    /// Writes `bytes` and commits: for a file created before the work
    /// that produces its contents.
    pub fn finish(mut self, bytes: &[u8]) -> Result<(), ProfileError> {
        use std::io::Write;
        self.file().write_all(bytes).map_err(|e| self.io(e))?;
        self.commit()
    }

    /// Syncs the file and renames it to its final path.
    pub fn commit(self) -> Result<(), ProfileError> {
        self.tmp.as_file().sync_all().map_err(|e| self.io(e))?;
        let path = self.path;
        self.tmp.persist(&path).map_err(|e| ProfileError::Io {
            path,
            reason: e.error,
        })?;
        Ok(())
    }
}
