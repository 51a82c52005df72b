//! [`typed_error!`](crate::typed_error): how pathprof's library crates
//! define their error enums, so that `pathprof_core::Error` and
//! `pathprof_session::Error` behave alike from one definition.
//!
//! Each enum wraps the errors of the layers below it, one variant a type
//! (each `From` its type, so `?` converts), plus `Invalid(String)` (a
//! request the input cannot satisfy) and `Context { context, source }`
//! (what was being done). `Display` is the outermost message and `{:#}`
//! adds every cause after `: `, as anyhow prints a chain: written out
//! rather than derived with thiserror, whose `Display` cannot look at the
//! `#` flag. A wrapped error's message is the enum's own, so `source`
//! passes on the wrapped error's causes, not the wrapped error itself (no
//! message twice in a chain).
//!
//! The macro also defines, beside the enum, `Result` and a `Context`
//! extension trait for `Result` and `Option` (as anyhow's). Each crate
//! adds its own `invalid!` and `bail!` (a macro cannot define a macro with
//! arguments on stable Rust).

/// Writes `: cause` for every cause of `e`, outermost first.
pub fn write_causes(
    f: &mut std::fmt::Formatter<'_>,
    e: &dyn std::error::Error,
) -> std::fmt::Result {
    let mut cause = e.source();
    while let Some(c) = cause {
        write!(f, ": {c}")?;
        cause = c.source();
    }
    Ok(())
}

/// Defines an error enum of the wrapped variants given and the common
/// ones, with its impls (see the module's documentation).
#[macro_export]
macro_rules! typed_error {
    (
        $(#[$meta:meta])*
        pub enum Error {
            $( $(#[$vmeta:meta])* $variant:ident($ty:ty), )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        #[non_exhaustive]
        pub enum Error {
            $( $(#[$vmeta])* $variant($ty), )*
            /// A request the input cannot satisfy: the message names it
            /// and says why.
            Invalid(String),
            /// `context` was being done when `source` happened.
            Context {
                context: String,
                source: Box<Error>,
            },
        }

        /// A `Result` of this crate.
        pub type Result<T, E = Error> = std::result::Result<T, E>;

        $(
            impl From<$ty> for Error {
                fn from(e: $ty) -> Self {
                    Error::$variant(e)
                }
            }
        )*

        impl Error {
            /// The error under every [`Error::Context`].
            pub fn root(&self) -> &Error {
                match self {
                    Error::Context { source, .. } => source.root(),
                    e => e,
                }
            }

            /// This error, with what was being done when it happened.
            pub fn context<C: std::fmt::Display>(self, context: C) -> Error {
                Error::Context {
                    context: context.to_string(),
                    source: Box::new(self),
                }
            }

            /// The error of a lower layer this one wraps.
            fn wrapped(&self) -> Option<&(dyn std::error::Error + 'static)> {
                match self {
                    $( Error::$variant(e) => Some(e), )*
                    Error::Invalid(_) | Error::Context { .. } => None,
                }
            }
        }

        impl std::fmt::Display for Error {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match (self.wrapped(), self) {
                    (Some(e), _) => write!(f, "{e}")?,
                    (None, Error::Context { context, .. }) => f.write_str(context)?,
                    (None, Error::Invalid(message)) => f.write_str(message)?,
                    (None, _) => unreachable!("the other variants wrap an error"),
                }
                if f.alternate() {
                    $crate::typed_error::write_causes(f, self)?;
                }
                Ok(())
            }
        }

        impl std::error::Error for Error {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                match self {
                    Error::Context { source, .. } => Some(&**source),
                    _ => self.wrapped().and_then(|e| e.source()),
                }
            }
        }

        /// Adds what was being done to an error, as `anyhow::Context` does.
        pub trait Context<T> {
            fn context<C: std::fmt::Display>(self, context: C) -> Result<T>;
            fn with_context<C: std::fmt::Display, F: FnOnce() -> C>(
                self,
                context: F,
            ) -> Result<T>;
        }

        impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
            fn context<C: std::fmt::Display>(self, context: C) -> Result<T> {
                self.map_err(|e| e.into().context(context))
            }

            fn with_context<C: std::fmt::Display, F: FnOnce() -> C>(
                self,
                context: F,
            ) -> Result<T> {
                self.map_err(|e| e.into().context(context()))
            }
        }

        /// A missing value is an [`Error::Invalid`] that says what was
        /// missing.
        impl<T> Context<T> for Option<T> {
            fn context<C: std::fmt::Display>(self, context: C) -> Result<T> {
                self.ok_or_else(|| Error::Invalid(context.to_string()))
            }

            fn with_context<C: std::fmt::Display, F: FnOnce() -> C>(
                self,
                context: F,
            ) -> Result<T> {
                self.ok_or_else(|| Error::Invalid(context().to_string()))
            }
        }
    };
}
