//! What a secret looks like where one may hide in free-form settings: a key named like a
//! credential (`api_key`, `token`, `Authorization`, ...), a header value, a URL with
//! `user:password@` or a credential query parameter (`?token=`, `?key=`). Used to refuse
//! secrets in model configs (which are recorded and streamed), to mask them before a
//! session record or an event is written (so a path that forgets the refusal still leaks
//! nothing), and to mask them in `odyssey config show`.
//!
//! The check is by name and shape, not by value: it cannot know every spelling, so the
//! refusal names what it found and says where keys go instead.

use serde_json::{Map, Value};

/// What replaces a secret wherever one is shown or written.
pub const MASK: &str = "********";

/// Key names (lower case, `-` as `_`) that hold credentials.
const SECRET_NAMES: &[&str] = &[
    "api_key",
    "apikey",
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "authorization",
    "access_token",
    "refresh_token",
    "id_token",
    "auth_token",
    "bearer_token",
    "session_token",
    "api_token",
    "client_secret",
    "secret_key",
    "private_key",
    "sig",
    "signature",
];

/// Endings of key names that hold credentials (`openai_api_key`, `X-Goog-Api-Key`).
const SECRET_SUFFIXES: &[&str] = &[
    "_api_key",
    "_apikey",
    "_secret",
    "_password",
    "_access_token",
    "_auth_token",
];

/// Whether a key (of a config, a header, a URL query) is named like a credential.
pub fn is_secret_name(name: &str) -> bool {
    let name = name.trim().to_ascii_lowercase().replace('-', "_");
    SECRET_NAMES.contains(&name.as_str()) || SECRET_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// Whether a key holds HTTP headers (`headers`, `extra_headers`, `default_headers`): any
/// value in it may be a credential (`Authorization`, `x-api-key`, a custom one).
pub fn is_headers_name(name: &str) -> bool {
    name.trim().to_ascii_lowercase().ends_with("headers")
}

/// `text` with the credentials of any URL in it masked: the userinfo of
/// `scheme://user:password@host` and the value of every query parameter named like a
/// credential. Text that holds no such URL comes back unchanged.
pub fn mask_url(text: &str) -> String {
    let Some(scheme_end) = text.find("://") else {
        return text.to_owned();
    };
    let authority_start = scheme_end + 3;
    let rest = &text[authority_start..];
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_len];
    let mut out = text[..authority_start].to_owned();
    match authority.rfind('@') {
        Some(at) => {
            out.push_str(MASK);
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let tail = &rest[authority_len..];
    let (before_fragment, fragment) = match tail.find('#') {
        Some(at) => tail.split_at(at),
        None => (tail, ""),
    };
    match before_fragment.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            out.push_str(&mask_query(query));
        }
        None => out.push_str(before_fragment),
    }
    out.push_str(fragment);
    out
}

/// A query string with the values of credential-named parameters masked.
fn mask_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if !value.is_empty() && is_secret_name(&decode(name)) => {
                format!("{name}={MASK}")
            }
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// A query parameter's name with its percent-escapes and `+` decoded, for the name check.
fn decode(name: &str) -> String {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(byte) => {
                        out.push(byte);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `text` holds a URL with credentials in it.
pub fn url_has_credentials(text: &str) -> bool {
    mask_url(text) != text
}

/// Why a config value was taken for a secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretKind {
    /// Its key is named like a credential.
    Named,
    /// It is a value of a headers map.
    Header,
    /// It is a URL with userinfo or a credential query parameter.
    Url,
}

/// A secret found in a config: where (`extra_body.api_key`, `headers.X-Token`) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundSecret {
    pub path: String,
    pub kind: SecretKind,
}

impl FoundSecret {
    /// Why the value at `path` counts as a secret, for messages.
    pub fn why(&self) -> &'static str {
        match self.kind {
            SecretKind::Named => "is named like a credential",
            SecretKind::Header => "is a header value, and headers carry credentials",
            SecretKind::Url => {
                "is a URL carrying credentials (user:password@ or a ?key=/?token= parameter)"
            }
        }
    }
}

/// The first secret in `config` (at any depth), if any. A key named like a credential
/// counts whatever its value (an empty one aside), so a nested object under `api_key` is
/// refused too.
pub fn find_secret(config: &Map<String, Value>) -> Option<FoundSecret> {
    find_in_object(config, "")
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

fn find_in_object(object: &Map<String, Value>, prefix: &str) -> Option<FoundSecret> {
    for (key, value) in object {
        let path = join(prefix, key);
        if is_empty(value) {
            continue;
        }
        if is_secret_name(key) {
            return Some(FoundSecret {
                path,
                kind: SecretKind::Named,
            });
        }
        if is_headers_name(key) {
            let header = match value {
                Value::Object(headers) => headers
                    .iter()
                    .find(|(_, v)| !is_empty(v))
                    .map(|(name, _)| join(&path, name)),
                _ => Some(path),
            };
            if let Some(path) = header {
                return Some(FoundSecret {
                    path,
                    kind: SecretKind::Header,
                });
            }
            continue;
        }
        if let Some(found) = find_in_value(value, &path) {
            return Some(found);
        }
    }
    None
}

fn find_in_value(value: &Value, path: &str) -> Option<FoundSecret> {
    match value {
        Value::Object(object) => find_in_object(object, path),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| find_in_value(item, &format!("{path}[{i}]"))),
        Value::String(text) if url_has_credentials(text) => Some(FoundSecret {
            path: path.to_owned(),
            kind: SecretKind::Url,
        }),
        _ => None,
    }
}

/// Null, `""`, `{}` and `[]` hold nothing.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Masks every secret [`find_secret`] would find, in place; says whether any was.
pub fn mask_secrets(config: &mut Map<String, Value>) -> bool {
    let mut masked = false;
    for (key, value) in config.iter_mut() {
        if is_empty(value) {
            continue;
        }
        if is_secret_name(key) {
            *value = Value::String(MASK.to_owned());
            masked = true;
        } else if is_headers_name(key) {
            match value {
                Value::Object(headers) => {
                    for header in headers.values_mut().filter(|v| !is_empty(v)) {
                        *header = Value::String(MASK.to_owned());
                        masked = true;
                    }
                }
                _ => {
                    *value = Value::String(MASK.to_owned());
                    masked = true;
                }
            }
        } else {
            masked |= mask_value(value);
        }
    }
    masked
}

fn mask_value(value: &mut Value) -> bool {
    match value {
        Value::Object(object) => mask_secrets(object),
        Value::Array(items) => items.iter_mut().fold(false, |m, item| mask_value(item) | m),
        Value::String(text) => {
            let masked = mask_url(text);
            let changed = masked != *text;
            *text = masked;
            changed
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("object")
    }

    #[test]
    fn credential_names_in_any_spelling() {
        for name in [
            "api_key",
            "API_KEY",
            "apiKey",
            "Api-Key",
            "key",
            "token",
            "Secret",
            "password",
            "Authorization",
            "x-api-key",
            "X-Goog-Api-Key",
            "openai_api_key",
            "access_token",
            "client_secret",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in [
            "max_tokens",
            "temperature",
            "base_url",
            "credential",
            "prompt_cache_key",
            "reasoning_effort",
            "keywords",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn urls_lose_their_userinfo_and_credential_parameters() {
        for (url, masked) in [
            (
                "https://user:pw@example.com/v1",
                "https://********@example.com/v1",
            ),
            (
                "https://example.com/hook?token=abc&x=1",
                "https://example.com/hook?token=********&x=1",
            ),
            (
                "http://h/p?Key=1&access_token=2#frag",
                "http://h/p?Key=********&access_token=********#frag",
            ),
            ("https://h/p?api%5Fkey=s", "https://h/p?api%5Fkey=********"),
            ("https://example.com/v1", "https://example.com/v1"),
            (
                "https://h/p?keywords=a&max_tokens=3",
                "https://h/p?keywords=a&max_tokens=3",
            ),
            ("not a url", "not a url"),
        ] {
            assert_eq!(mask_url(url), masked, "{url}");
        }
    }

    #[test]
    fn secrets_are_found_at_any_depth_with_their_path() {
        let cases = [
            (json!({"api_key": "sk-1"}), "api_key", SecretKind::Named),
            (
                json!({"extra_body": {"nested": [{"Token": "t"}]}}),
                "extra_body.nested[0].Token",
                SecretKind::Named,
            ),
            (
                json!({"headers": {"X-Custom": "v"}}),
                "headers.X-Custom",
                SecretKind::Header,
            ),
            (
                json!({"base_url": "https://u:p@h/v1"}),
                "base_url",
                SecretKind::Url,
            ),
        ];
        for (config, path, kind) in cases {
            let found = find_secret(&object(config.clone())).expect("found");
            assert_eq!(found.path, path, "{config}");
            assert_eq!(found.kind, kind, "{config}");
        }
        let clean = json!({
            "temperature": 0.2,
            "max_tokens": 5,
            "api_key": "",
            "headers": {},
            "credential": "team",
            "base_url": "https://example.com/v1",
        });
        assert_eq!(find_secret(&object(clean)), None);
    }

    #[test]
    fn masking_leaves_nothing_to_find() {
        let mut config = object(json!({
            "api_key": "sk-1",
            "temperature": 0.2,
            "headers": {"Authorization": "Bearer x"},
            "extra_body": {"list": [{"password": "p"}], "url": "https://u:p@h/"},
        }));
        assert!(mask_secrets(&mut config));
        let mut again = config.clone();
        mask_secrets(&mut again);
        assert_eq!(again, config, "masking is idempotent");
        let text = Value::Object(config).to_string();
        for secret in ["sk-1", "Bearer x", "\"p\"", "u:p@"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.contains("0.2"));
    }
}
