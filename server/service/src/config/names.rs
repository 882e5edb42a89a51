//! Names the configuration accepts for the API's listeners: browser origins allowed to
//! call cross-origin, and host names requests may use. Checked when a flag or file is read,
//! so a bad one is refused naming its setting; the gRPC and HTTP sides use the result.

use http::HeaderValue;

/// Parses a `--cors-origin`: `scheme://host[:port]`, exactly as a browser sends it in
/// `Origin` (no path, no trailing slash, no wildcard).
pub fn parse_origin(value: &str) -> Result<HeaderValue, String> {
    let uri: http::Uri = value
        .parse()
        .map_err(|_| format!("`{value}` is not a URL"))?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    let bare = uri.authority().is_some() && uri.path_and_query().is_none_or(|p| p.as_str() == "/");
    if !scheme_ok || !bare || value.ends_with('/') || value.contains('*') {
        return Err(format!(
            "`{value}` is not an origin: expected scheme://host[:port], e.g. https://app.example.com"
        ));
    }
    HeaderValue::from_str(value).map_err(|_| format!("`{value}` is not a valid header value"))
}

/// Checks a `--allowed-host` / `server.allowed_hosts` entry: a DNS name, `*.` and a
/// name for its subdomains, or `*` for any host; no scheme, port or path.
pub fn parse_allowed_host(text: &str) -> Result<String, String> {
    let name = text.trim();
    if name == "*" {
        return Ok(name.to_owned());
    }
    let bare = name.strip_prefix("*.").unwrap_or(name);
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    let bare = bare.trim_end_matches('.');
    if bare.is_empty() || bare.len() > 253 || !bare.split('.').all(label_ok) {
        return Err(format!(
            "`{text}` is not a host name: expected a name such as odyssey.example.com, \
             `*.example.com` for its subdomains, or `*` for any host (no scheme, port or path)"
        ));
    }
    Ok(name.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::{parse_allowed_host, parse_origin};

    #[test]
    fn origins_are_scheme_host_and_port_only() {
        for ok in ["https://app.example.com", "http://127.0.0.1:5173"] {
            assert_eq!(parse_origin(ok).expect(ok), ok);
        }
        for bad in [
            "*",
            "app.example.com",
            "https://app.example.com/",
            "https://app.example.com/path",
            "ftp://app.example.com",
            "https://*.example.com",
        ] {
            let error = parse_origin(bad).expect_err(bad);
            assert!(error.contains(bad), "{error}");
        }
    }

    #[test]
    fn allowed_host_entries_are_names() {
        for ok in [
            "odyssey.example.com",
            "*.example.com",
            "*",
            "gpu-box",
            "Box.",
        ] {
            assert!(parse_allowed_host(ok).is_ok(), "{ok}");
        }
        for bad in [
            "https://odyssey.example.com",
            "odyssey.example.com:443",
            "odyssey.example.com/x",
            "",
            "*.",
            "a..b",
            "-a.example",
        ] {
            let error = parse_allowed_host(bad).expect_err(bad);
            assert!(error.contains("not a host name"), "{error}");
        }
    }
}
