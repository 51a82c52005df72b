//! The tables whose contents are known before the module runs, and what
//! each of their slots holds: where a `call_indirect` on such a table can
//! only reach the function in the slot its index names, so a technique can
//! dispatch on the index (interprocedural PPP resolves indirect calls so,
//! Vaswani thesis 3.4.4: "indirect calls are segment ends unless a profile
//! resolves them").
//!
//! A table is *static* when nothing but its active element segments ever
//! writes it: it is defined by the module (not imported) and not exported
//! (the host could write it), no instruction writes it (`table.set`,
//! `table.grow`, `table.fill`, `table.copy` into it, `table.init` into it),
//! its initial value is null, and every active segment into it has a
//! constant offset and function items. Segments apply in order, a later
//! one overwriting an earlier. clang's wasm32-wasi programs have one such
//! table unless linked with `--export-table` or `--growable-table`.
//!
//! The same sections say which functions may be entered from outside the
//! module's own calls ([`escaping_functions`]): those whose references it
//! may hand to an import or the host, which may call them back.

use std::collections::BTreeSet;

use wasmparser::{
    ConstExpr, ElementItems, ElementKind, ExternalKind, Operator, Parser, Payload, TableInit,
    TypeRef,
};

use crate::error::{Result, WasmError};

/// Per table index: its slots' functions (module function indices; `None`
/// for a null slot) when the table is static, `None` when it is not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StaticTables(pub Vec<Option<Vec<Option<u32>>>>);

impl StaticTables {
    /// The slots of static table `table` that hold function `func`;
    /// `None` when the table is not static.
    pub fn slots_of(&self, table: u32, func: u32) -> Option<Vec<u32>> {
        let slots = self.0.get(table as usize)?.as_ref()?;
        Some(
            (0..slots.len() as u32)
                .filter(|&i| slots[i as usize] == Some(func))
                .collect(),
        )
    }

    /// Whether table `table` is static.
    pub fn is_static(&self, table: u32) -> bool {
        matches!(self.0.get(table as usize), Some(Some(_)))
    }
}

/// The static tables of module `bytes`.
pub fn static_tables(bytes: &[u8]) -> Result<StaticTables> {
    let err = |e: wasmparser::BinaryReaderError| WasmError::invalid(&e);
    let mut tables: Vec<Option<Vec<Option<u32>>>> = Vec::new();
    let mut written: BTreeSet<u32> = BTreeSet::new();
    let mut segments = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(err)? {
            Payload::ImportSection(r) => {
                for imp in r.into_imports() {
                    if let TypeRef::Table(_) = imp.map_err(err)?.ty {
                        tables.push(None);
                    }
                }
            }
            Payload::TableSection(r) => {
                for t in r {
                    let t = t.map_err(err)?;
                    let null = matches!(t.init, TableInit::RefNull);
                    let size = usize::try_from(t.ty.initial).unwrap_or(usize::MAX);
                    // A table too large to list is treated as not static.
                    tables.push((null && size <= 1 << 24).then(|| vec![None; size]));
                }
            }
            Payload::ExportSection(r) => {
                for e in r {
                    let e = e.map_err(err)?;
                    if e.kind == ExternalKind::Table {
                        written.insert(e.index);
                    }
                }
            }
            Payload::ElementSection(r) => {
                for e in r {
                    let e = e.map_err(err)?;
                    if let ElementKind::Active {
                        table_index,
                        offset_expr,
                    } = e.kind
                    {
                        let table = table_index.unwrap_or(0);
                        match (constant(&offset_expr), functions(&e.items)) {
                            (Some(at), Some(fs)) => segments.push((table, at, fs)),
                            _ => {
                                written.insert(table);
                            }
                        }
                    }
                }
            }
            Payload::CodeSectionEntry(body) => {
                let mut ops = body.get_operators_reader().map_err(err)?;
                while !ops.eof() {
                    if let Some(t) = writes(&ops.read().map_err(err)?) {
                        written.insert(t);
                    }
                }
            }
            _ => {}
        }
    }
    for (table, at, fs) in segments {
        let Some(Some(slots)) = tables.get_mut(table as usize) else {
            continue;
        };
        match slots.get_mut(at as usize..at as usize + fs.len()) {
            Some(range) => range.copy_from_slice(&fs),
            // Out of bounds: instantiation traps; nothing to resolve.
            None => {
                written.insert(table);
            }
        }
    }
    for t in written {
        if let Some(slot) = tables.get_mut(t as usize) {
            *slot = None;
        }
    }
    Ok(StaticTables(tables))
}

/// The functions (module indices) whose references may leave the module:
/// an import or the host may call them, so they are entered from outside
/// the profiled calls (Melski and Reps' entry functions, a callback from an
/// import). A reference can only be made to a function the module declares
/// (an element segment, a global's initialiser, an export), so these are
/// the functions of `ref.func` in code and in globals, of passive and
/// declarative segments, and of active segments into a table the host can
/// read (imported or exported) or the code reads (`table.get`). Exports
/// are [`crate::supergraph`]'s entry functions already; a table that only
/// `call_indirect` reads hands out nothing (its targets are cut sites').
pub fn escaping_functions(bytes: &[u8]) -> Result<BTreeSet<u32>> {
    let err = |e: wasmparser::BinaryReaderError| WasmError::invalid(&e);
    let mut escaping = BTreeSet::new();
    let (mut tables, mut read) = (0u32, BTreeSet::new());
    let mut active: Vec<(u32, Vec<u32>)> = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(err)? {
            Payload::ImportSection(r) => {
                for imp in r.into_imports() {
                    if let TypeRef::Table(_) = imp.map_err(err)?.ty {
                        read.insert(tables);
                        tables += 1;
                    }
                }
            }
            Payload::ExportSection(r) => {
                for e in r {
                    let e = e.map_err(err)?;
                    if e.kind == ExternalKind::Table {
                        read.insert(e.index);
                    }
                }
            }
            Payload::GlobalSection(r) => {
                for g in r {
                    referenced(&g.map_err(err)?.init_expr, &mut escaping);
                }
            }
            Payload::ElementSection(r) => {
                for e in r {
                    let e = e.map_err(err)?;
                    let fs = item_functions(&e.items);
                    match e.kind {
                        ElementKind::Active { table_index, .. } => {
                            active.push((table_index.unwrap_or(0), fs))
                        }
                        ElementKind::Passive | ElementKind::Declared => escaping.extend(fs),
                    }
                }
            }
            Payload::CodeSectionEntry(body) => {
                let mut ops = body.get_operators_reader().map_err(err)?;
                while !ops.eof() {
                    match ops.read().map_err(err)? {
                        Operator::RefFunc { function_index } => {
                            escaping.insert(function_index);
                        }
                        Operator::TableGet { table } => {
                            read.insert(table);
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    for (table, fs) in active {
        if read.contains(&table) {
            escaping.extend(fs);
        }
    }
    Ok(escaping)
}

/// Every function a segment's items name (`ref.func` in expressions).
fn item_functions(items: &ElementItems<'_>) -> Vec<u32> {
    let mut out = BTreeSet::new();
    match items {
        ElementItems::Functions(fs) => out.extend(fs.clone().into_iter().flatten()),
        ElementItems::Expressions(_, es) => {
            for e in es.clone().into_iter().flatten() {
                referenced(&e, &mut out);
            }
        }
    }
    out.into_iter().collect()
}

/// The functions a constant expression takes references to.
fn referenced(e: &ConstExpr<'_>, out: &mut BTreeSet<u32>) {
    let mut r = e.get_operators_reader();
    while let Ok(op) = r.read() {
        if let Operator::RefFunc { function_index } = op {
            out.insert(function_index);
        }
    }
}

/// An `i32.const` offset.
fn constant(e: &ConstExpr<'_>) -> Option<u32> {
    let mut r = e.get_operators_reader();
    match (r.read().ok()?, r.read().ok()?) {
        (Operator::I32Const { value }, Operator::End) => Some(value as u32),
        _ => None,
    }
}

/// A segment's items as function indices (`ref.null` as `None`); `None`
/// if an item is some other expression.
fn functions(items: &ElementItems<'_>) -> Option<Vec<Option<u32>>> {
    match items {
        ElementItems::Functions(fs) => fs.clone().into_iter().map(|f| f.ok().map(Some)).collect(),
        ElementItems::Expressions(_, es) => es
            .clone()
            .into_iter()
            .map(|e| {
                let e = e.ok()?;
                let mut r = e.get_operators_reader();
                match (r.read().ok()?, r.read().ok()?) {
                    (Operator::RefFunc { function_index }, Operator::End) => {
                        Some(Some(function_index))
                    }
                    (Operator::RefNull { .. }, Operator::End) => Some(None),
                    _ => None,
                }
            })
            .collect(),
    }
}

/// The table an instruction writes, if it writes one.
fn writes(op: &Operator<'_>) -> Option<u32> {
    match *op {
        Operator::TableSet { table }
        | Operator::TableGrow { table }
        | Operator::TableFill { table } => Some(table),
        Operator::TableCopy { dst_table, .. } => Some(dst_table),
        Operator::TableInit { table, .. } => Some(table),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(wat: &str) -> StaticTables {
        static_tables(&wat::parse_str(wat).unwrap()).unwrap()
    }

    #[test]
    fn segments_fill_a_static_table_in_order() {
        let t = tables(
            r#"(module
              (table 4 funcref)
              (func $a) (func $b) (func $c)
              (elem (i32.const 0) $a $b)
              (elem (i32.const 1) $c $a))"#,
        );
        assert_eq!(t.0, vec![Some(vec![Some(0), Some(2), Some(0), None])]);
        assert_eq!(t.slots_of(0, 0), Some(vec![0, 2]));
        assert_eq!(t.slots_of(0, 1), Some(vec![]));
    }

    #[test]
    fn a_table_written_exported_or_imported_is_not_static() {
        for wat in [
            r#"(module (table 2 funcref) (func $a (table.set 0 (i32.const 0) (ref.null func))))"#,
            r#"(module (table 2 funcref) (func $a (drop (table.grow 0 (ref.null func) (i32.const 1)))))"#,
            r#"(module (table (export "t") 2 funcref) (func $a))"#,
            r#"(module (import "m" "t" (table 2 funcref)))"#,
            r#"(module (global i32 (i32.const 0)) (table 2 funcref) (func $a) (elem (global.get 0) $a))"#,
        ] {
            let t = tables(wat);
            assert!(!t.is_static(0), "{wat}");
            assert_eq!(t.slots_of(0, 0), None);
        }
    }

    #[test]
    fn functions_escape_by_reference_or_through_a_table_others_read() {
        let escaping = |wat: &str| escaping_functions(&wat::parse_str(wat).unwrap()).unwrap();
        let none = BTreeSet::new();
        // Only call_indirect reads the table: nothing escapes.
        let private = r#"(module (type $t (func)) (table 2 funcref) (func $a) (func $b)
              (elem (i32.const 0) $a $b)
              (func (call_indirect (type $t) (i32.const 0))))"#;
        assert_eq!(escaping(private), none);
        for (wat, want) in [
            (
                r#"(module (func $a) (func $b) (elem declare func $b) (func (drop (ref.func $b))))"#,
                vec![1],
            ),
            (r#"(module (func $a) (func $b) (elem func $a))"#, vec![0]),
            (
                r#"(module (func $a) (global funcref (ref.func $a)))"#,
                vec![0],
            ),
            (
                r#"(module (table (export "t") 2 funcref) (func $a) (func $b) (elem (i32.const 1) $b))"#,
                vec![1],
            ),
            (
                r#"(module (import "m" "t" (table 2 funcref)) (func $a) (elem (i32.const 0) func $a))"#,
                vec![0],
            ),
            (
                r#"(module (table 2 funcref) (func $a) (func $b) (elem (i32.const 0) $a)
                 (func (drop (table.get 0 (i32.const 0)))))"#,
                vec![0],
            ),
        ] {
            assert_eq!(escaping(wat), want.into_iter().collect(), "{wat}");
        }
    }
}
