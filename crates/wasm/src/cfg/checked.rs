//! The builder with the body's validator in front of it: wasmparser decodes
//! each operator once and hands it to the function's validator, then, if it
//! is valid, to the builder. Validating the module first and building after
//! decoded every body twice, a fifth of the instrumenter's instructions.
//!
//! A function the builder refuses ([`BuildError::Unsupported`]) is still
//! validated to its end, so a module is rejected or accepted as
//! `Validator::validate_all` would.

use super::builder::{BuildError, Builder};
use wasmparser::{
    BinaryReader, FuncValidator, OperatorsReader, ValidatorResources, VisitOperator,
    VisitSimdOperator,
};

type Visit = Result<(), BuildError>;

/// One body's validator and its builder, visited together.
pub(super) struct Checked<'b> {
    validator: FuncValidator<ValidatorResources>,
    builder: &'b mut Builder,
    /// Module offset of the operator being visited, for the validator's errors.
    offset: usize,
    /// Why the builder stopped, while the validator goes on.
    refused: Option<BuildError>,
}

impl<'b> Checked<'b> {
    /// Reads the locals of the body `reader` holds into the validator and
    /// returns the reader of its operators.
    pub(super) fn new<'a>(
        mut validator: FuncValidator<ValidatorResources>,
        builder: &'b mut Builder,
        mut reader: BinaryReader<'a>,
    ) -> Result<(Self, OperatorsReader<'a>), BuildError> {
        validator.read_locals(&mut reader)?;
        // As `FuncValidator::validate` does: decode with the validator's
        // features, not the parser's.
        reader.set_features(*validator.features());
        let checked = Checked {
            validator,
            builder,
            offset: 0,
            refused: None,
        };
        Ok((checked, OperatorsReader::new(reader)))
    }

    pub(super) fn builder(&mut self) -> &mut Builder {
        self.builder
    }

    /// Visits the next operator of `ops`.
    pub(super) fn visit(&mut self, ops: &mut OperatorsReader<'_>) -> Visit {
        self.offset = ops.original_position();
        self.builder.at = self.offset;
        ops.visit_operator(self)??;
        if self.refused.is_none() {
            self.builder.counted_ends_at(ops.original_position());
        }
        Ok(())
    }

    /// The validator's checks at the end of the body, then the builder's
    /// refusal if it made one.
    pub(super) fn finish(mut self, ops: &OperatorsReader<'_>) -> Visit {
        let end = ops.get_binary_reader();
        end.finish_expression(&self.validator.visitor(end.original_position()))?;
        self.refused.take().map_or(Ok(()), Err)
    }

    /// Hands a valid operator to the builder unless it has refused one.
    fn build(&mut self, visit: impl FnOnce(&mut Builder) -> Visit) -> Visit {
        if self.refused.is_none() {
            if let Err(e) = visit(self.builder) {
                match e {
                    BuildError::Unsupported { .. } => self.refused = Some(e),
                    BuildError::Read(_) => return Err(e),
                }
            }
        }
        Ok(())
    }
}

/// Every `visit_*` method: the validator's, then the builder's. The
/// arguments are cloned for the validator: most are integers, the rest
/// (branch tables, catch lists) borrow the body.
macro_rules! visit_both {
    ($visitor:ident $( @$proposal:ident $op:ident $({ $($arg:ident: $argty:ty),* })? => $visit:ident ($($ann:tt)*))*) => {
        $(
            #[allow(clippy::clone_on_copy, reason = "the operands of one list of operators, Copy or not")]
            fn $visit(&mut self $($(, $arg: $argty)*)?) -> Visit {
                self.validator
                    .$visitor(self.offset)
                    .$visit($($($arg.clone()),*)?)?;
                self.build(|b| b.$visit($($($arg),*)?))
            }
        )*
    };
}

macro_rules! visit_both_plain {
    ($($input:tt)*) => { visit_both!(visitor $($input)*); };
}

macro_rules! visit_both_simd {
    ($($input:tt)*) => { visit_both!(simd_visitor $($input)*); };
}

impl<'a> VisitOperator<'a> for Checked<'_> {
    type Output = Visit;

    fn simd_visitor(&mut self) -> Option<&mut dyn VisitSimdOperator<'a, Output = Visit>> {
        Some(self)
    }

    wasmparser::for_each_visit_operator!(visit_both_plain);
}

impl<'a> VisitSimdOperator<'a> for Checked<'_> {
    wasmparser::for_each_visit_simd_operator!(visit_both_simd);
}
