//! Base URLs an operator allows a server-held key to be sent to.
//!
//! A pattern is a URL, matched exactly (`https://llm.example.com/v1` allows that URL, with
//! or without a trailing `/`), or a URL whose path ends in `/*`, matched as a path prefix
//! at a segment boundary (`https://llm.example.com/*` allows every path on that host). The
//! scheme, host and port always match exactly, so `https://llm.example.com/*` never allows
//! `https://llm.example.com.evil.net/` or another port. URLs are compared after parsing,
//! so `..` segments cannot climb out of an allowed prefix.

use std::fmt;
use std::str::FromStr;

use reqwest::Url;

/// One allowed base URL, exact or a path prefix.
#[derive(Clone, PartialEq, Eq)]
pub struct UrlPattern {
    /// As the operator wrote it, for messages and `config show`.
    text: String,
    scheme: String,
    host: String,
    port: Option<u16>,
    /// Without its trailing `/` (empty for the root).
    path: String,
    prefix: bool,
}

impl UrlPattern {
    /// Whether `url` is allowed by this pattern. URLs with a query or a fragment never
    /// match: a base URL has neither.
    pub fn matches(&self, url: &Url) -> bool {
        if url.query().is_some() || url.fragment().is_some() {
            return false;
        }
        if url.scheme() != self.scheme
            || url.host_str() != Some(self.host.as_str())
            || url.port_or_known_default() != self.port
        {
            return false;
        }
        let path = url.path().trim_end_matches('/');
        path == self.path || (self.prefix && is_below(path, &self.path))
    }

    /// Whether everything this pattern allows is also allowed by `wider`: how a later
    /// configuration layer proves it narrows an operator's list instead of widening it.
    pub fn within(&self, wider: &UrlPattern) -> bool {
        if self.scheme != wider.scheme || self.host != wider.host || self.port != wider.port {
            return false;
        }
        match (wider.prefix, self.prefix) {
            (false, false) => self.path == wider.path,
            (false, true) => false,
            (true, _) => self.path == wider.path || is_below(&self.path, &wider.path),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// `path` lies under `base` at a segment boundary (`/v1/x` under `/v1`, not `/v10`).
fn is_below(path: &str, base: &str) -> bool {
    path.strip_prefix(base)
        .is_some_and(|rest| rest.starts_with('/'))
}

impl FromStr for UrlPattern {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        let (base, prefix) = match trimmed.strip_suffix("/*") {
            Some(base) => (base, true),
            None => (trimmed, false),
        };
        if base.contains('*') {
            return Err(format!(
                "`{text}`: `*` may only end the pattern, as a whole path segment (`https://host/v1/*`)"
            ));
        }
        let url = Url::parse(base).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("`{text}`: only http and https URLs can be allowed"));
        }
        let Some(host) = url.host_str() else {
            return Err(format!("`{text}` has no host"));
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!("`{text}`: a pattern cannot hold credentials"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(format!(
                "`{text}`: a pattern cannot have a query or fragment"
            ));
        }
        Ok(Self {
            text: trimmed.to_owned(),
            scheme: url.scheme().to_owned(),
            host: host.to_owned(),
            port: url.port_or_known_default(),
            path: url.path().trim_end_matches('/').to_owned(),
            prefix,
        })
    }
}

impl fmt::Display for UrlPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for UrlPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UrlPattern({})", self.text)
    }
}

/// Whether `url` points at this machine: a loopback address, or `localhost`.
pub fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> UrlPattern {
        text.parse().unwrap()
    }

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn exact_patterns_match_only_their_url() {
        let p = pattern("https://llm.example.com/v1");
        assert!(p.matches(&url("https://llm.example.com/v1")));
        assert!(p.matches(&url("https://llm.example.com/v1/")));
        assert!(p.matches(&url("https://LLM.example.com:443/v1")));
        for other in [
            "https://llm.example.com/v1/x",
            "https://llm.example.com/v10",
            "http://llm.example.com/v1",
            "https://llm.example.com:8443/v1",
            "https://llm.example.com.evil.net/v1",
            "https://llm.example.com/v1?x=1",
        ] {
            assert!(!p.matches(&url(other)), "{other}");
        }
    }

    #[test]
    fn prefix_patterns_stop_at_segment_boundaries() {
        let p = pattern("https://llm.example.com/v1/*");
        assert!(p.matches(&url("https://llm.example.com/v1")));
        assert!(p.matches(&url("https://llm.example.com/v1/deployments/a")));
        assert!(!p.matches(&url("https://llm.example.com/v10")));
        assert!(!p.matches(&url("https://llm.example.com/v1/../admin")));
        let root = pattern("http://127.0.0.1:8080/*");
        assert!(root.matches(&url("http://127.0.0.1:8080/anything/v1")));
        assert!(!root.matches(&url("http://127.0.0.1:8081/v1")));
    }

    #[test]
    fn malformed_patterns_are_refused_with_the_reason() {
        for (text, why) in [
            ("llm.example.com", "not a URL"),
            ("ftp://h/x", "only http and https"),
            ("https://u:p@h/v1", "credentials"),
            ("https://h/v*/x", "may only end"),
            ("https://h/v1?a=b", "query"),
        ] {
            let e = text.parse::<UrlPattern>().unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn narrower_patterns_are_within_wider_ones() {
        let wide = pattern("https://h/*");
        assert!(pattern("https://h/v1").within(&wide));
        assert!(pattern("https://h/v1/*").within(&wide));
        assert!(wide.within(&wide));
        assert!(!pattern("https://other/v1").within(&wide));
        let exact = pattern("https://h/v1");
        assert!(pattern("https://h/v1/").within(&exact));
        assert!(!pattern("https://h/v1/*").within(&exact));
        assert!(!wide.within(&exact));
    }

    #[test]
    fn loopback_hosts() {
        for local in [
            "http://127.0.0.1:1/v1",
            "http://127.3.2.1/",
            "http://[::1]:9/",
            "http://localhost:11434/v1",
        ] {
            assert!(is_loopback(&url(local)), "{local}");
        }
        for remote in [
            "http://10.0.0.1/",
            "https://example.com/",
            "http://localhost.evil.net/",
        ] {
            assert!(!is_loopback(&url(remote)), "{remote}");
        }
    }
}
