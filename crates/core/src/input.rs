//! Reading what a user names: the program (binary or text wasm) and the
//! profiles a command takes; refusing an output that would replace the
//! program.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use pathprof_profile::Profile;

use crate::error::{Context, Result};

/// Reads a core module from a `.wasm` file, or parses a `.wat` text file.
/// Errors name the file and the reason in one line.
pub fn read_module(path: &Path) -> Result<Vec<u8>> {
    Ok(read_module_file(path)?.0)
}

/// [`read_module`], with the open file the module was read from when it
/// is a binary module in a regular file: the instrumenter can then leave
/// what it only copies in that file (`driver::instrument_file_to_file`),
/// which it reads again. A pipe cannot be read twice.
pub fn read_module_file(path: &Path) -> Result<(Vec<u8>, Option<File>)> {
    let context = || path.display().to_string();
    let mut file = File::open(path).with_context(context)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).with_context(context)?;
    if bytes.starts_with(b"\0asm") {
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        return Ok((bytes, regular.then_some(file)));
    }
    let is_text = path.extension().is_some_and(|e| e == "wat" || e == "wast");
    if !is_text {
        crate::error::bail!(
            "{}: not a WebAssembly module (no \\0asm header)",
            path.display()
        );
    }
    let text = std::str::from_utf8(&bytes)
        .with_context(|| format!("{}: not UTF-8 text", path.display()))?;
    let module = wat::parse_str(text).map_err(|e| wat_error(path, &e.to_string()))?;
    Ok((module, None))
}

/// `FILE:LINE:COL: REASON`, then the source line with a caret under the
/// column, from wat's rendering (`REASON`, `--> <anon>:LINE:COL`, then the
/// excerpt); just `FILE: REASON` if it has no location.
fn wat_error(path: &Path, rendered: &str) -> crate::error::Error {
    let mut lines = rendered.lines();
    let reason = lines.next().unwrap_or("invalid text");
    let location = lines
        .next()
        .and_then(|l| l.trim().strip_prefix("--> <anon>:"))
        .map(str::to_string);
    match location {
        Some(at) => {
            // The excerpt without its empty gutter line.
            let excerpt: Vec<&str> = lines.filter(|l| l.trim() != "|").collect();
            crate::error::invalid!("{}:{at}: {reason}\n{}", path.display(), excerpt.join("\n"))
        }
        None => crate::error::invalid!("{}: {reason}", path.display()),
    }
}

/// Each file with the profile read from it, in order.
pub fn read_profiles(files: &[PathBuf]) -> Result<Vec<(&Path, Profile)>> {
    files
        .iter()
        .map(|f| Ok((f.as_path(), Profile::read(f)?)))
        .collect()
}

/// Refuses an output that is the input module itself (the same file, by
/// whatever name) unless `force`: writing it would lose the program.
pub fn check_not_input(program: &Path, output: &Path, force: bool) -> Result<()> {
    if !force && same_file(program, output) {
        crate::error::bail!(
            "{}: the output would replace the input module; give another -o, or --force",
            output.display()
        );
    }
    Ok(())
}

/// Whether two paths name one existing file (on Unix, the same device and
/// inode: hard links and symbolic links included).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        #[cfg(unix)]
        (Ok(x), Ok(y)) => {
            use std::os::unix::fs::MetadataExt;
            x.dev() == y.dev() && x.ino() == y.ino()
        }
        #[cfg(not(unix))]
        (Ok(_), Ok(_)) => a.canonicalize().ok() == b.canonicalize().ok(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_that_is_the_input_is_refused_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("p.wasm");
        std::fs::write(&program, b"\0asm\x01\0\0\0").unwrap();
        let other_name = dir.path().join(".").join("p.wasm");
        let e = check_not_input(&program, &other_name, false).unwrap_err();
        assert!(
            e.to_string().contains("would replace the input module"),
            "{e}"
        );
        assert!(check_not_input(&program, &other_name, true).is_ok());
        // An output that does not exist yet is another file.
        assert!(check_not_input(&program, &dir.path().join("q.wasm"), false).is_ok());
        assert!(!same_file(&program, &dir.path().join("q.wasm")));
    }
}
