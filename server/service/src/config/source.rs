//! Where a configuration value came from, for errors and `odyssey config show --sources`.

use std::fmt;
use std::path::PathBuf;

/// The layers, lowest first: a later layer's value replaces an earlier one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    Default,
    /// `/etc/odyssey/config.toml`.
    SystemFile,
    /// `<home>/config.toml`.
    HomeFile,
    /// `--config FILE`.
    ConfigFile,
    Env,
    Flag,
}

impl Layer {
    /// Machine-readable name, for `config show --sources --json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::SystemFile => "system_file",
            Self::HomeFile => "home_file",
            Self::ConfigFile => "config_file",
            Self::Env => "env",
            Self::Flag => "flag",
        }
    }
}

/// One value's origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Default,
    File {
        layer: Layer,
        path: PathBuf,
        line: usize,
    },
    /// An `ODYSSEY_*` environment variable.
    Env(String),
    /// A command-line flag, as typed (`--worker-count`).
    Flag(&'static str),
}

impl Source {
    pub fn layer(&self) -> Layer {
        match self {
            Self::Default => Layer::Default,
            Self::File { layer, .. } => *layer,
            Self::Env(_) => Layer::Env,
            Self::Flag(_) => Layer::Flag,
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::File { path, line, .. } => write!(f, "{}:{line}", path.display()),
            Self::Env(name) => write!(f, "env {name}"),
            Self::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}
