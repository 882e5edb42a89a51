//! The one naming rule shared by bundle names, namespaces, agent ids and skill names.
//!
//! Names end up as directory names under the store root and inside references
//! (`ns/name@version`), so the rule keeps them lowercase, portable and free of `/` and `@`.

use super::error::BundleError;
use crate::error::shorten;

/// Longest accepted name, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// Why `value` is not a valid name, or `None` when it is.
pub(crate) fn name_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return Some("must not be empty".to_owned());
    }
    if value.len() > MAX_NAME_LEN {
        return Some(format!("must be at most {MAX_NAME_LEN} characters"));
    }
    let mut chars = value.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c));
    if first_ok && rest_ok {
        None
    } else {
        Some(format!(
            "`{}` must match [a-z0-9][a-z0-9._-]* (lowercase letters, digits, `.`, `_`, `-`)",
            shorten(value)
        ))
    }
}

/// Checks a name the caller passed directly (not from a manifest), e.g. a namespace.
pub(crate) fn check_name(field: &'static str, value: &str) -> Result<(), BundleError> {
    match name_problem(value) {
        None => Ok(()),
        Some(message) => Err(BundleError::InvalidName {
            field,
            value: shorten(value),
            message,
        }),
    }
}
