//! Registry references: `[registry[:port]/]repository[:tag][@sha256:<hex>]`.
//!
//! The first path component is a registry host when it looks like one (it holds a `.` or a
//! `:`, or is `localhost`), as Docker reads references; otherwise the whole path is a
//! repository on the default registry. Repository, tag and digest syntax are checked with
//! the OCI distribution grammar.

use std::fmt;

use super::error::HubError;

/// A parsed reference to an artifact in a registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryReference {
    /// `host[:port]`.
    pub registry: String,
    /// `namespace/name`, any depth.
    pub repository: String,
    pub tag: Option<String>,
    pub digest: Option<String>,
}

/// The longest reference parsed: a registry host (at most 255), a repository (255), a tag
/// (128) and a digest (71) fit with room to spare; a longer text names nothing, and the
/// grammar check need not read megabytes to say so.
const MAX_REFERENCE_BYTES: usize = 1024;

impl RegistryReference {
    /// Parses `text`; references that name no registry get `default_registry`. `field` is
    /// the request field the text came from, for the error.
    pub fn parse(
        text: &str,
        default_registry: &str,
        field: &'static str,
    ) -> Result<Self, HubError> {
        let bad = |message: &str| HubError::invalid_reference(field, text, message);
        let text = text.trim();
        if text.is_empty() {
            return Err(bad("the reference is empty"));
        }
        if text.len() > MAX_REFERENCE_BYTES {
            return Err(bad(&format!(
                "a reference is at most {MAX_REFERENCE_BYTES} bytes (registry, repository, tag \
                 and digest)"
            )));
        }
        if text.contains("://") {
            return Err(bad(
                "a reference has no scheme; the server decides how to reach each registry",
            ));
        }
        let (name, digest) = match text.split_once('@') {
            Some((name, digest)) => (name, Some(digest.to_owned())),
            None => (text, None),
        };
        let (registry, path) = match name.split_once('/') {
            Some((first, rest))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first.to_owned(), rest)
            }
            _ => (default_registry.to_owned(), name),
        };
        check_host(&registry).map_err(|m| bad(&m))?;
        // A `:` after the last `/` starts the tag.
        let last_segment = path.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match path[last_segment..].find(':') {
            Some(colon) => {
                let at = last_segment + colon;
                (&path[..at], Some(path[at + 1..].to_owned()))
            }
            None => (path, None),
        };
        if repository.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(bad("repository names are lowercase"));
        }
        if let Some(digest) = &digest
            && !is_sha256(digest)
        {
            return Err(bad(
                "a digest is `sha256:` followed by 64 lowercase hex digits",
            ));
        }
        let reference = Self {
            registry,
            repository: repository.to_owned(),
            tag,
            digest,
        };
        // The grammar check reads the reference as Docker Hub's when the host has no `.`
        // or `:`; only the repository, tag and digest are taken from it.
        let probe = match (&reference.tag, &reference.digest) {
            (Some(tag), Some(d)) => format!("example.com/{}:{tag}@{d}", reference.repository),
            (Some(tag), None) => format!("example.com/{}:{tag}", reference.repository),
            (None, Some(d)) => format!("example.com/{}@{d}", reference.repository),
            (None, None) => format!("example.com/{}", reference.repository),
        };
        oci_client::Reference::try_from(probe.as_str()).map_err(|e| bad(&e.to_string()))?;
        Ok(reference)
    }

    /// The same artifact with `tag` instead of any tag or digest it had.
    pub fn with_tag(&self, tag: String) -> Self {
        Self {
            tag: Some(tag),
            digest: None,
            ..self.clone()
        }
    }

    /// The same repository, pinned to `digest`.
    pub fn with_digest(&self, digest: String) -> Self {
        Self {
            digest: Some(digest),
            ..self.clone()
        }
    }

    pub(crate) fn to_oci(&self) -> oci_client::Reference {
        let (registry, repository) = (self.registry.clone(), self.repository.clone());
        match (&self.tag, &self.digest) {
            (Some(tag), Some(digest)) => oci_client::Reference::with_tag_and_digest(
                registry,
                repository,
                tag.clone(),
                digest.clone(),
            ),
            (None, Some(digest)) => {
                oci_client::Reference::with_digest(registry, repository, digest.clone())
            }
            (tag, None) => oci_client::Reference::with_tag(
                registry,
                repository,
                tag.clone().unwrap_or_else(|| "latest".to_owned()),
            ),
        }
    }
}

impl fmt::Display for RegistryReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// `sha256:` and 64 lowercase hex digits, the only digest form taken from outside.
pub(crate) fn is_sha256(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// `host[:port]`: a DNS name or an IP address (IPv6 in brackets), and a numeric port.
fn check_host(host: &str) -> Result<(), String> {
    let (name, port) = match host.strip_prefix('[') {
        Some(rest) => {
            let (ip, after) = rest
                .split_once(']')
                .ok_or_else(|| format!("registry `{host}` has an unclosed `[`"))?;
            if ip.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(format!("registry `{host}` is not a valid IPv6 address"));
            }
            let port = match after {
                "" => None,
                after => Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| format!("registry `{host}` is malformed"))?,
                ),
            };
            (None, port)
        }
        None => match host.split_once(':') {
            Some((name, port)) => (Some(name), Some(port)),
            None => (Some(host), None),
        },
    };
    if let Some(name) = name {
        let valid = !name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty()
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !valid {
            return Err(format!("registry host `{name}` is not a valid host name"));
        }
    }
    if let Some(port) = port
        && !port.parse::<u16>().is_ok_and(|p| p != 0)
    {
        return Err(format!("registry port `{port}` is not a port number"));
    }
    Ok(())
}
