//! Values passed to and returned from exported functions, and parsing of
//! command-line strings into them.

use std::fmt;

use wasmtime::{Val, ValType};

/// A value returned by an exported function.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `i32`.
    I32(i32),
    /// `i64`.
    I64(i64),
    /// `f32`.
    F32(f32),
    /// `f64`.
    F64(f64),
    /// `v128`, as its 128 bits (lane 0 in the low bits).
    V128(u128),
    /// A reference of any type; only described (e.g. `null funcref`, `funcref`).
    Ref(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::I32(v) => write!(f, "{v}"),
            Value::I64(v) => write!(f, "{v}"),
            Value::F32(v) => write!(f, "{v}"),
            Value::F64(v) => write!(f, "{v}"),
            Value::V128(v) => write!(f, "0x{v:032x}"),
            Value::Ref(s) => f.write_str(s),
        }
    }
}

impl Value {
    pub(crate) fn from_val(val: &Val) -> Value {
        match val {
            Val::I32(v) => Value::I32(*v),
            Val::I64(v) => Value::I64(*v),
            Val::F32(bits) => Value::F32(f32::from_bits(*bits)),
            Val::F64(bits) => Value::F64(f64::from_bits(*bits)),
            Val::V128(v) => Value::V128(v.as_u128()),
            Val::FuncRef(None) => Value::Ref("null funcref".into()),
            Val::FuncRef(Some(_)) => Value::Ref("funcref".into()),
            Val::ExternRef(None) => Value::Ref("null externref".into()),
            Val::ExternRef(Some(_)) => Value::Ref("externref".into()),
            Val::AnyRef(None) => Value::Ref("null anyref".into()),
            Val::AnyRef(Some(_)) => Value::Ref("anyref".into()),
            Val::ExnRef(None) => Value::Ref("null exnref".into()),
            Val::ExnRef(Some(_)) => Value::Ref("exnref".into()),
            #[allow(unreachable_patterns)]
            _ => Value::Ref("reference".into()),
        }
    }
}

/// Which parameter types [`parse_arg`] accepts.
pub(crate) fn is_parsable(ty: &ValType) -> bool {
    matches!(
        ty,
        ValType::I32 | ValType::I64 | ValType::F32 | ValType::F64
    )
}

/// Parses one command-line argument as a value of type `ty`.
///
/// Integers: decimal or `0x` hexadecimal, optionally signed, `_` separators
/// allowed; anything in the signed *or* unsigned range of the width is
/// accepted (`4294967295` is the i32 `-1`). Floats: Rust's syntax, which
/// includes `inf`, `-inf` and `NaN`.
pub(crate) fn parse_arg(ty: &ValType, s: &str) -> Option<Val> {
    match ty {
        ValType::I32 => {
            let v = parse_int(s)?;
            if v >= i128::from(i32::MIN) && v <= i128::from(u32::MAX) {
                Some(Val::I32(v as u32 as i32))
            } else {
                None
            }
        }
        ValType::I64 => {
            let v = parse_int(s)?;
            if v >= i128::from(i64::MIN) && v <= i128::from(u64::MAX) {
                Some(Val::I64(v as u64 as i64))
            } else {
                None
            }
        }
        ValType::F32 => s.trim().parse::<f32>().ok().map(|v| Val::F32(v.to_bits())),
        ValType::F64 => s.trim().parse::<f64>().ok().map(|v| Val::F64(v.to_bits())),
        _ => None,
    }
}

fn parse_int(s: &str) -> Option<i128> {
    let s = s.trim();
    let (negative, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let digits: String = rest.chars().filter(|&c| c != '_').collect();
    let magnitude = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        i128::from_str_radix(hex, 16).ok()?
    } else {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<i128>().ok()?
    };
    Some(if negative { -magnitude } else { magnitude })
}

/// A type's name as written in the text format.
pub(crate) fn type_name(ty: &ValType) -> String {
    match ty {
        ValType::I32 => "i32".into(),
        ValType::I64 => "i64".into(),
        ValType::F32 => "f32".into(),
        ValType::F64 => "f64".into(),
        ValType::V128 => "v128".into(),
        ValType::Ref(r) => r.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i32_of(s: &str) -> Option<i32> {
        match parse_arg(&ValType::I32, s)? {
            Val::I32(v) => Some(v),
            _ => None,
        }
    }

    fn i64_of(s: &str) -> Option<i64> {
        match parse_arg(&ValType::I64, s)? {
            Val::I64(v) => Some(v),
            _ => None,
        }
    }

    #[test]
    fn integers() {
        assert_eq!(i32_of("42"), Some(42));
        assert_eq!(i32_of("-7"), Some(-7));
        assert_eq!(i32_of("+7"), Some(7));
        assert_eq!(i32_of("0x10"), Some(16));
        assert_eq!(i32_of("-0x10"), Some(-16));
        assert_eq!(i32_of("4294967295"), Some(-1));
        assert_eq!(i32_of("-2147483648"), Some(i32::MIN));
        assert_eq!(i32_of("4294967296"), None);
        assert_eq!(i32_of("-2147483649"), None);
        assert_eq!(i32_of("1_000"), Some(1000));
        assert_eq!(i32_of(""), None);
        assert_eq!(i32_of("-"), None);
        assert_eq!(i32_of("0x"), None);
        assert_eq!(i32_of("1.5"), None);
        assert_eq!(i32_of("abc"), None);
        assert_eq!(i64_of("18446744073709551615"), Some(-1));
        assert_eq!(i64_of("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(i64_of("18446744073709551616"), None);
        assert_eq!(i64_of("99999999999999999999999999999999999999999999"), None);
    }

    #[test]
    fn floats() {
        let Some(Val::F32(b)) = parse_arg(&ValType::F32, "1.5") else {
            panic!()
        };
        assert_eq!(f32::from_bits(b), 1.5);
        let Some(Val::F64(b)) = parse_arg(&ValType::F64, "-inf") else {
            panic!()
        };
        assert_eq!(f64::from_bits(b), f64::NEG_INFINITY);
        let Some(Val::F64(b)) = parse_arg(&ValType::F64, "NaN") else {
            panic!()
        };
        assert!(f64::from_bits(b).is_nan());
        assert!(parse_arg(&ValType::F64, "one").is_none());
    }
}
