//! Host name patterns: which names a networked sandbox may ask its proxy for.
//!
//! A bundle lists the names it needs (`spec.sandbox.permissions.network`) and the operator
//! may narrow them (`sandbox.network_domains`); a name must match both lists. Patterns are
//! `*` (any host), `example.com` (that name only) and `*.example.com` (its subdomains, at
//! any depth, but not `example.com` itself). Names compare without case and without a
//! trailing dot. Which addresses a name may resolve to is decided afterwards, by address.

use std::fmt;
use std::str::FromStr;

/// The longest host name DNS can carry, in characters (without the trailing dot).
pub const MAX_HOST_LEN: usize = 253;
const MAX_LABEL_LEN: usize = 63;

/// One pattern of a network list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DomainPattern {
    /// `*`: any host.
    Any,
    /// `example.com`: exactly that name.
    Exact(String),
    /// `*.example.com`: names ending in `.example.com`; the stored text has no `*.`.
    Subdomains(String),
}

/// Why a pattern was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{pattern}` is not a host pattern: {reason}; use a host name (`api.github.com`), `*.` and a domain (`*.pypi.org`), or `*`"
)]
pub struct PatternError {
    pub pattern: String,
    pub reason: &'static str,
}

impl FromStr for DomainPattern {
    type Err = PatternError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let refuse = |reason| PatternError {
            pattern: text.chars().take(MAX_HOST_LEN + 8).collect(),
            reason,
        };
        if text == "*" {
            return Ok(Self::Any);
        }
        let (subdomains, name) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if name.contains('*') {
            return Err(refuse(
                "`*` may only stand alone or start the pattern as `*.`",
            ));
        }
        let name = normalize(name).map_err(refuse)?;
        Ok(if subdomains {
            Self::Subdomains(name)
        } else {
            Self::Exact(name)
        })
    }
}

impl fmt::Display for DomainPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Exact(name) => f.write_str(name),
            Self::Subdomains(name) => write!(f, "*.{name}"),
        }
    }
}

impl DomainPattern {
    /// Whether `host` (already normalized, see [`normalize`]) matches.
    pub fn matches(&self, host: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Exact(name) => host == name,
            Self::Subdomains(name) => host
                .strip_suffix(name.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        }
    }
}

/// The host name as patterns compare it: lower case, no trailing dot, each label 1 to 63
/// letters, digits, `-` or `_`, the whole at most 253 characters. IP literals pass as
/// they are (an IPv4 address is four labels of digits; IPv6 ones are checked apart).
pub fn normalize(host: &str) -> Result<String, &'static str> {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() {
        return Err("the name is empty");
    }
    if host.len() > MAX_HOST_LEN {
        return Err("the name is longer than 253 characters");
    }
    for label in host.split('.') {
        if label.is_empty() {
            return Err("the name has an empty label");
        }
        if label.len() > MAX_LABEL_LEN {
            return Err("a label is longer than 63 characters");
        }
        if !label
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err("a name holds only letters, digits, `-`, `_` and dots");
        }
    }
    Ok(host.to_ascii_lowercase())
}

/// A list of patterns; a name is in it when one pattern matches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DomainList(Vec<DomainPattern>);

impl DomainList {
    /// Parses every pattern; the error names the first bad one.
    pub fn parse<S: AsRef<str>>(texts: &[S]) -> Result<Self, PatternError> {
        texts
            .iter()
            .map(|text| text.as_ref().parse())
            .collect::<Result<_, _>>()
            .map(Self)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn patterns(&self) -> &[DomainPattern] {
        &self.0
    }

    /// The first pattern matching `host` (normalized).
    pub fn matching(&self, host: &str) -> Option<&DomainPattern> {
        self.0.iter().find(|pattern| pattern.matches(host))
    }
}

/// The names one session's processes may reach: the bundle's list, narrowed by the
/// operator's (an empty operator list narrows nothing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DomainPolicy {
    pub bundle: DomainList,
    pub operator: DomainList,
}

impl DomainPolicy {
    /// `Ok` with the bundle's pattern that admits `host` (normalized), or why not.
    pub fn check(&self, host: &str) -> Result<&DomainPattern, String> {
        let Some(pattern) = self.bundle.matching(host) else {
            return Err(format!("`{host}` is not in the bundle's network list"));
        };
        if !self.operator.is_empty() && self.operator.matching(host).is_none() {
            return Err(format!(
                "`{host}` is not in the server's network domains (sandbox.network_domains)"
            ));
        }
        Ok(pattern)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> DomainPattern {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn a_star_dot_pattern_matches_subdomains_but_not_the_domain_itself() {
        let pypi = pattern("*.pypi.org");
        assert!(pypi.matches("files.pypi.org"));
        assert!(pypi.matches("a.b.pypi.org"));
        assert!(!pypi.matches("pypi.org"));
        assert!(!pypi.matches("evilpypi.org"));
        assert!(!pypi.matches("pypi.org.evil.com"));
        let exact = pattern("api.github.com");
        assert!(exact.matches("api.github.com"));
        assert!(!exact.matches("x.api.github.com"));
        assert!(pattern("*").matches("anything.example"));
    }

    #[test]
    fn patterns_are_case_insensitive_and_ignore_a_trailing_dot() {
        assert_eq!(pattern("API.GitHub.com."), pattern("api.github.com"));
        assert_eq!(pattern("*.PyPI.org").to_string(), "*.pypi.org");
        assert_eq!(
            normalize("Files.PyPI.org.").as_deref(),
            Ok("files.pypi.org")
        );
    }

    #[test]
    fn malformed_patterns_are_refused_with_a_reason() {
        let long = format!("{}.com", "a".repeat(250));
        let label = format!("{}.com", "a".repeat(64));
        for bad in [
            "",
            "*.",
            "**",
            "a*.com",
            "*.*.com",
            "a..b",
            ".a",
            "a b",
            "a/b",
            "a:80",
            "[::1]",
            long.as_str(),
            label.as_str(),
            "ex*ample.com",
        ] {
            let err = bad.parse::<DomainPattern>().expect_err(bad);
            assert!(err.to_string().contains("is not a host pattern"), "{err}");
        }
    }

    #[test]
    fn the_operator_list_narrows_the_bundle_list() {
        let policy = DomainPolicy {
            bundle: DomainList::parse(&["*.pypi.org", "api.github.com"]).expect("bundle"),
            operator: DomainList::parse(&["files.pypi.org", "api.github.com"]).expect("operator"),
        };
        assert!(policy.check("files.pypi.org").is_ok());
        assert!(policy.check("api.github.com").is_ok());
        let narrowed = policy.check("other.pypi.org").expect_err("narrowed");
        assert!(narrowed.contains("sandbox.network_domains"), "{narrowed}");
        let unlisted = policy.check("example.com").expect_err("unlisted");
        assert!(unlisted.contains("bundle's network list"), "{unlisted}");
        let open = DomainPolicy {
            bundle: DomainList::parse(&["*"]).expect("any"),
            operator: DomainList::default(),
        };
        assert_eq!(open.check("example.com"), Ok(&DomainPattern::Any));
    }
}
