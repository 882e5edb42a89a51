//! Bundle references: how users name an installed bundle.
//!
//! `name`, `name@version`, `name@latest` (`name` alone means latest), `ns/name`,
//! `ns/name@version`, `ns/name@latest`, `@sha256:<hex>` (any installed bundle with that
//! content) and `[ns/]name@sha256:<hex>`. Without a namespace the namespace is `local`.

use std::fmt;
use std::str::FromStr;

use super::digest::is_digest;
use super::error::BundleError;
use super::names::name_problem;
use crate::error::shorten;

/// The namespace of bundles installed without one.
pub const DEFAULT_NAMESPACE: &str = "local";

/// Which version a named reference selects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VersionSelector {
    /// The highest installed version by semver precedence.
    Latest,
    Exact(semver::Version),
}

/// A parsed bundle reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BundleReference {
    Named {
        namespace: String,
        name: String,
        version: VersionSelector,
    },
    /// Content addressed; `name` (with its namespace) narrows the match when given.
    Digest {
        name: Option<(String, String)>,
        digest: String,
    },
}

impl BundleReference {
    pub fn parse(text: &str) -> Result<Self, BundleError> {
        let bad = |message: String| BundleError::InvalidReference {
            reference: shorten(text),
            message,
        };
        let text_trimmed = text.trim();
        if text_trimmed.is_empty() {
            return Err(bad("the reference is empty".to_owned()));
        }
        let (path, selector) = match text_trimmed.split_once('@') {
            Some((path, selector)) => (path, Some(selector)),
            None => (text_trimmed, None),
        };
        if let Some(selector) = selector
            && selector.starts_with("sha256:")
        {
            let digest = selector.to_ascii_lowercase();
            if !is_digest(&digest) {
                return Err(bad(
                    "a digest is `sha256:` followed by 64 hex digits".to_owned()
                ));
            }
            let name = if path.is_empty() {
                None
            } else {
                Some(split_path(path).map_err(bad)?)
            };
            return Ok(Self::Digest { name, digest });
        }
        let (namespace, name) = split_path(path).map_err(bad)?;
        let version = match selector {
            None | Some("latest") => VersionSelector::Latest,
            Some(v) => VersionSelector::Exact(
                semver::Version::parse(v)
                    .map_err(|e| bad(format!("`{}` is not a semantic version: {e}", shorten(v))))?,
            ),
        };
        Ok(Self::Named {
            namespace,
            name,
            version,
        })
    }
}

/// `ns/name` or `name` into `(namespace, name)`, both checked.
fn split_path(path: &str) -> Result<(String, String), String> {
    let (namespace, name) = match path.split_once('/') {
        Some((ns, name)) => (ns, name),
        None => (DEFAULT_NAMESPACE, path),
    };
    if let Some(problem) = name_problem(namespace) {
        return Err(format!("namespace {problem}"));
    }
    if let Some(problem) = name_problem(name) {
        return Err(format!("name {problem}"));
    }
    Ok((namespace.to_owned(), name.to_owned()))
}

impl FromStr for BundleReference {
    type Err = BundleError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

impl fmt::Display for BundleReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Named {
                namespace,
                name,
                version: VersionSelector::Latest,
            } => write!(f, "{namespace}/{name}@latest"),
            Self::Named {
                namespace,
                name,
                version: VersionSelector::Exact(v),
            } => write!(f, "{namespace}/{name}@{v}"),
            Self::Digest {
                name: Some((ns, name)),
                digest,
            } => write!(f, "{ns}/{name}@{digest}"),
            Self::Digest { name: None, digest } => write!(f, "@{digest}"),
        }
    }
}
