//! Where a block's code came from in the program's source: the file as
//! the module's DWARF line table names it, the line and the column.
//!
//! Version 1 of the profile format kept only `"file:line"`, with the last
//! path component of the file: two sources of one name in different
//! folders (`lib/util.c`, `src/util.c`) then read as one file, an LCOV
//! export merged their lines, and `show`/`html` had to search for the file
//! by name. Version 2 keeps the whole path and the column; version 1's
//! string is still read (as that file name, that line, no column).

use std::fmt;

use serde::{Deserialize, Serialize};

/// A block's source location. Ordered by file, then line, then column.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(from = "LocationForm")]
pub struct SourceLocation {
    /// The file's path as the line table gives it: the unit's compilation
    /// directory joined with the file's directory and name (absolute when
    /// the compiler was given absolute paths, as clang and cargo are). In
    /// profiles read from version 1, only the last component.
    pub file: String,
    /// 1-based; 0 when the line table names only the file.
    pub line: u32,
    /// 1-based; 0 when the line table gives no column (as for version 1).
    pub column: u32,
}

impl SourceLocation {
    /// The last component of [`SourceLocation::file`] (either separator).
    pub fn file_name(&self) -> &str {
        self.file.rsplit(['/', '\\']).next().unwrap_or(&self.file)
    }

    /// Reads version 1's `"file:line"` (or `"file"` where the table gave no
    /// line).
    pub fn from_v1(s: &str) -> SourceLocation {
        let (file, line) = match s.rsplit_once(':') {
            Some((file, line)) => match line.parse() {
                Ok(line) => (file, line),
                Err(_) => (s, 0),
            },
            None => (s, 0),
        };
        SourceLocation {
            file: file.to_string(),
            line,
            column: 0,
        }
    }
}

/// `name:line` (the file's last component), or `name` when there is no
/// line: the short form reports print in their columns. The column is left
/// out: two blocks on one line are one line to a reader of a report.
impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => f.write_str(self.file_name()),
            line => write!(f, "{}:{line}", self.file_name()),
        }
    }
}

/// What a profile's `"source"` may hold: version 2's object, or version 1's
/// string.
#[derive(Deserialize)]
#[serde(untagged)]
enum LocationForm {
    Full {
        file: String,
        #[serde(default)]
        line: u32,
        #[serde(default)]
        column: u32,
    },
    V1(String),
}

impl From<LocationForm> for SourceLocation {
    fn from(form: LocationForm) -> Self {
        match form {
            LocationForm::Full { file, line, column } => SourceLocation { file, line, column },
            LocationForm::V1(s) => SourceLocation::from_v1(&s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(file: &str, line: u32, column: u32) -> SourceLocation {
        SourceLocation {
            file: file.into(),
            line,
            column,
        }
    }

    #[test]
    fn version_1_strings_read_as_file_and_line() {
        assert_eq!(SourceLocation::from_v1("demo.c:38"), at("demo.c", 38, 0));
        assert_eq!(SourceLocation::from_v1("demo.c"), at("demo.c", 0, 0));
        // A colon that is not before a line number is part of the name.
        assert_eq!(SourceLocation::from_v1("C:x.c"), at("C:x.c", 0, 0));
        let v1: SourceLocation = serde_json::from_str("\"a/b.c:7\"").unwrap();
        assert_eq!(v1, at("a/b.c", 7, 0));
    }

    #[test]
    fn version_2_objects_round_trip() {
        let l = at("/src/lib/util.c", 12, 5);
        let json = serde_json::to_string(&l).unwrap();
        assert_eq!(json, r#"{"file":"/src/lib/util.c","line":12,"column":5}"#);
        assert_eq!(serde_json::from_str::<SourceLocation>(&json).unwrap(), l);
    }

    #[test]
    fn display_is_the_short_form() {
        assert_eq!(at("/src/lib/util.c", 12, 5).to_string(), "util.c:12");
        assert_eq!(at("C:\\w\\m.c", 3, 0).to_string(), "m.c:3");
        assert_eq!(at("/src/m.c", 0, 0).to_string(), "m.c");
    }
}
