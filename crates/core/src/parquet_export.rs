//! `pathprof export --format parquet`: a profile's paths as a table, one
//! row per path that ran (function, path number, kind, count, blocks, the
//! source line it starts on), each row with the module hash, the number
//! of runs and a label, so that the files of many runs (a fleet's, in
//! residual profiling) can be added up by any engine that reads Parquet:
//! DuckDB, Spark, pandas (docs/profile-format.md gives the schema and the
//! query).
//!
//! Written with the `parquet` crate's column writers, without Arrow: one
//! row group, uncompressed pages.

use std::sync::Arc;

use crate::error::{bail, Context, Result};
use parquet::data_type::{ByteArray, ByteArrayType, DataType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedFileWriter, SerializedRowGroupWriter};
use parquet::schema::parser::parse_message_type;
use pathprof_profile::{Mode, Profile};

use crate::report;

/// The table's schema, in Parquet's message syntax.
pub const SCHEMA: &str = "message pathprof_paths {
  REQUIRED BYTE_ARRAY module_hash (UTF8);
  REQUIRED BYTE_ARRAY label (UTF8);
  REQUIRED INT64 runs;
  REQUIRED INT32 function_index;
  REQUIRED BYTE_ARRAY function (UTF8);
  REQUIRED INT64 path;
  REQUIRED BYTE_ARRAY kind (UTF8);
  REQUIRED INT64 count;
  REQUIRED BYTE_ARRAY blocks (UTF8);
  REQUIRED BYTE_ARRAY source (UTF8);
}";

/// The Parquet file of `profile`'s paths (self loops included, as
/// `report` lists them), every row labelled `label`.
pub fn parquet(profile: &Profile, label: &str) -> Result<Vec<u8>> {
    if !matches!(profile.mode, Mode::Path | Mode::Ppp) {
        bail!(
            "--format parquet exports the paths of path and PPP profiles (this one is of mode {})",
            profile.mode
        );
    }
    let rows = report::hot_rows(profile, None)?;
    let schema = Arc::new(parse_message_type(SCHEMA).context("the Parquet schema")?);
    let props = Arc::new(WriterProperties::builder().build());
    let mut out = Vec::new();
    let mut writer = SerializedFileWriter::new(&mut out, schema, props)?;
    let mut group = writer.next_row_group()?;
    let text = |f: &dyn Fn(&report::HotPath) -> String| -> Vec<ByteArray> {
        rows.iter()
            .map(|r| ByteArray::from(f(r).into_bytes()))
            .collect()
    };
    let int = |f: &dyn Fn(&report::HotPath) -> u64| -> Vec<i64> {
        rows.iter()
            .map(|r| i64::try_from(f(r)).unwrap_or(i64::MAX))
            .collect()
    };
    column::<ByteArrayType>(&mut group, &text(&|_| profile.module_hash.clone()))?;
    column::<ByteArrayType>(&mut group, &text(&|_| label.to_string()))?;
    column::<Int64Type>(&mut group, &int(&|_| profile.runs))?;
    let funcs: Vec<i32> = rows.iter().map(|r| r.func_index as i32).collect();
    column::<Int32Type>(&mut group, &funcs)?;
    column::<ByteArrayType>(&mut group, &text(&|r| r.function.clone()))?;
    column::<Int64Type>(&mut group, &int(&|r| r.path))?;
    column::<ByteArrayType>(&mut group, &text(&|r| r.kind.to_string()))?;
    column::<Int64Type>(&mut group, &int(&|r| r.count))?;
    column::<ByteArrayType>(&mut group, &text(&blocks))?;
    column::<ByteArrayType>(&mut group, &text(&source))?;
    group.close()?;
    writer.close()?;
    Ok(out)
}

/// The next column of `group`, all of `values`.
fn column<T: DataType>(
    group: &mut SerializedRowGroupWriter<'_, &mut Vec<u8>>,
    values: &[T::T],
) -> Result<()> {
    let mut col = group
        .next_column()?
        .context("the Parquet schema has fewer columns than written")?;
    col.typed::<T>().write_batch(values, None, None)?;
    col.close()?;
    Ok(())
}

/// The blocks a path runs, as their numbers separated by spaces.
fn blocks(r: &report::HotPath) -> String {
    let ids: Vec<String> = r
        .blocks
        .iter()
        .map(|b| b.block.index().to_string())
        .collect();
    ids.join(" ")
}

/// Where the path starts in the source (`file:line`, the file's whole
/// path as the line table gives it; `file` where it gives no line), or "".
fn source(r: &report::HotPath) -> String {
    match r.blocks.iter().find_map(|b| b.source.as_ref()) {
        Some(l) if l.line > 0 => format!("{}:{}", l.file, l.line),
        Some(l) => l.file.clone(),
        None => String::new(),
    }
}
