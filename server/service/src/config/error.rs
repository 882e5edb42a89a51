//! Why a configuration was refused. Every message names where the bad value came from (a
//! file and line, an environment variable or a flag) and the key, so the operator knows
//! exactly what to change.

use std::path::PathBuf;

use super::source::Source;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the configuration file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// Not TOML.
    #[error("{}:{line}: not valid TOML: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        message: String,
    },

    #[error("{at}: unknown key `{key}`; {hint}")]
    UnknownKey {
        at: Source,
        key: String,
        hint: String,
    },

    /// A value of the wrong type or out of range.
    #[error("{at}: `{key}`: {message}")]
    Value {
        at: Source,
        key: String,
        message: String,
    },

    /// A key this layer may not set (requirements outside the files allowed to hold
    /// them, `server.home` in the home's own file).
    #[error("{at}: `{key}` cannot be set here: {why}")]
    Misplaced {
        at: Source,
        key: String,
        why: String,
    },

    /// A later layer tried to loosen a requirement an earlier one set.
    #[error("{at}: `{key}` would loosen the requirement set at {earlier}: {message}")]
    Loosened {
        at: Source,
        key: String,
        earlier: Box<Source>,
        message: String,
    },

    /// A setting asks for more than a requirement allows.
    #[error("{at}: `{key}` {message} (requirement `{requirement}` at {requirement_at})")]
    ExceedsRequirement {
        at: Source,
        key: String,
        message: String,
        requirement: String,
        requirement_at: Box<Source>,
    },

    /// Settings that only make sense together (a TLS certificate and its key).
    #[error("{0}")]
    Inconsistent(String),
}
