//! Finding, reading and caching cassette files (format: see the parent module).
//!
//! A cassette path comes from a bundle, i.e. from a client, so it is confined to the
//! bundle root both by its spelling (no absolute path, no `..`) and by where it really
//! leads once symlinks are followed.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::Deserialize;

use crate::chat::{Role, TokenUsage, ToolCall};
use crate::model::ModelSpec;
use crate::provider::ProviderError;

/// Larger than any hand-written or recorded demo; bounds memory per cassette.
pub(crate) const MAX_CASSETTE_BYTES: u64 = 32 * 1024 * 1024;

/// A parsed cassette.
#[derive(Debug)]
pub(crate) struct Cassette {
    /// The path relative to the bundle root, as errors should name it.
    pub path: String,
    pub entries: Vec<Entry>,
}

/// The answer to one model call.
#[derive(Debug)]
pub(crate) struct Entry {
    /// 1-based line in the file, for error messages.
    pub line: usize,
    pub text: Vec<String>,
    pub reasoning: Vec<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<TokenUsage>,
    pub chunk_delay: Duration,
    pub expect: Option<ExpectedMessage>,
    /// The call failed with this message after the chunks above.
    pub error: Option<String>,
}

/// What the last message of the request must be.
#[derive(Debug)]
pub(crate) struct ExpectedMessage {
    pub role: Option<Role>,
    pub content: Option<String>,
}

/// The cassette path of `spec`, relative to the bundle root, checked for escapes.
pub(crate) fn cassette_path(spec: &ModelSpec) -> Result<PathBuf, ProviderError> {
    let named = match spec.config_value("cassette") {
        None | Some(serde_json::Value::Null) => format!("cassettes/{}.jsonl", spec.name),
        Some(serde_json::Value::String(path)) => path.clone(),
        Some(_) => {
            return Err(ProviderError::invalid_model(
                spec.to_string(),
                "config `cassette` must be a string",
            ));
        }
    };
    let refuse = |message: &str| ProviderError::CassettePathRefused {
        path: named.clone(),
        message: message.to_owned(),
    };
    let path = PathBuf::from(&named);
    if named.trim().is_empty() {
        return Err(refuse("the path is empty"));
    }
    for component in path.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => {
                return Err(refuse("`..` is not allowed; name a file inside the bundle"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse(
                    "absolute paths are not allowed; name a file relative to the bundle root",
                ));
            }
        }
    }
    Ok(path)
}

impl Cassette {
    /// Parses cassette text; `path` is only used in messages.
    pub fn parse(path: &str, text: &str) -> Result<Self, ProviderError> {
        let mut entries = Vec::new();
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let invalid = |message: String| ProviderError::CassetteInvalid {
                cassette: path.to_owned(),
                line: Some(number + 1),
                message,
            };
            let raw: RawEntry = serde_json::from_str(line).map_err(|e| invalid(e.to_string()))?;
            entries.push(raw.into_entry(entries.len(), number + 1).map_err(invalid)?);
        }
        Ok(Self {
            path: path.to_owned(),
            entries,
        })
    }

    /// Reads the file found by [`locate`]; `name` is its bundle-relative path.
    fn load(name: &str, real: &Path, stamp: Stamp) -> Result<Self, ProviderError> {
        let invalid = |message: String| ProviderError::CassetteInvalid {
            cassette: name.to_owned(),
            line: None,
            message,
        };
        if stamp.len > MAX_CASSETTE_BYTES {
            return Err(invalid(format!(
                "{} bytes is over the {MAX_CASSETTE_BYTES}-byte limit",
                stamp.len
            )));
        }
        let text =
            std::fs::read_to_string(real).map_err(|e| invalid(format!("cannot read it: {e}")))?;
        Self::parse(name, &text)
    }
}

/// What identifies one version of a file, cheaply: a changed cassette is re-read.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

/// The real path of `relative` under `bundle_root` and its stamp, refusing symlink escapes.
fn locate(bundle_root: &Path, relative: &Path) -> Result<(PathBuf, Stamp), ProviderError> {
    let name = relative.display().to_string();
    let full = bundle_root.join(relative);
    let metadata = match std::fs::metadata(&full) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ProviderError::CassetteNotFound { cassette: name });
        }
        Err(e) => {
            return Err(ProviderError::CassetteInvalid {
                cassette: name,
                line: None,
                message: format!("cannot read it: {e}"),
            });
        }
    };
    let unreadable = |e: std::io::Error| ProviderError::CassetteInvalid {
        cassette: name.clone(),
        line: None,
        message: format!("cannot resolve its path: {e}"),
    };
    let real = full.canonicalize().map_err(unreadable)?;
    let root = bundle_root.canonicalize().map_err(unreadable)?;
    if !real.starts_with(&root) {
        return Err(ProviderError::CassettePathRefused {
            path: name,
            message: "it leads outside the bundle".into(),
        });
    }
    if !metadata.is_file() {
        return Err(ProviderError::CassetteInvalid {
            cassette: name,
            line: None,
            message: "not a regular file".into(),
        });
    }
    let stamp = Stamp {
        len: metadata.len(),
        modified: metadata.modified().ok(),
    };
    Ok((real, stamp))
}

/// Parsed cassettes by real path, re-read when the file changes. Resolving a replay model
/// happens on every turn; parsing the file every time would not be cheap.
#[derive(Default)]
pub(crate) struct CassetteCache {
    entries: Mutex<HashMap<PathBuf, (Stamp, Arc<Cassette>)>>,
}

impl CassetteCache {
    /// The cassette at `relative` (already checked by [`cassette_path`]) in `bundle_root`.
    pub fn get(&self, bundle_root: &Path, relative: &Path) -> Result<Arc<Cassette>, ProviderError> {
        let name = relative.display().to_string();
        let (real, stamp) = locate(bundle_root, relative)?;
        if let Some((cached_stamp, cassette)) = self.lock().get(&real)
            && *cached_stamp == stamp
            && cassette.path == name
        {
            return Ok(cassette.clone());
        }
        let cassette = Arc::new(Cassette::load(&name, &real, stamp)?);
        self.lock().insert(real, (stamp, cassette.clone()));
        Ok(cassette)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, (Stamp, Arc<Cassette>)>> {
        // The map is always consistent between statements; a panic elsewhere cannot
        // leave it half-written, so a poisoned lock is safe to keep using.
        crate::sync::lock(&self.entries)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    text: Option<Chunks>,
    reasoning: Option<Chunks>,
    #[serde(default)]
    tool_calls: Vec<RawToolCall>,
    usage: Option<RawUsage>,
    chunk_delay_ms: Option<u64>,
    request: Option<RawRequest>,
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Chunks {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolCall {
    id: Option<String>,
    name: String,
    arguments: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cached_input_tokens: u64,
    #[serde(default)]
    reasoning_tokens: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    last_message: Option<RawMessage>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMessage {
    role: Option<Role>,
    content: Option<String>,
}

impl Chunks {
    fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(text) => vec![text],
            Self::Many(chunks) => chunks,
        }
    }
}

impl RawEntry {
    /// `index` is the entry's 0-based position, used for default tool call ids.
    fn into_entry(self, index: usize, line: usize) -> Result<Entry, String> {
        let tool_calls = self
            .tool_calls
            .into_iter()
            .enumerate()
            .map(|(i, call)| {
                let arguments = match call.arguments {
                    None => "{}".to_owned(),
                    Some(serde_json::Value::String(text)) => text,
                    Some(object @ serde_json::Value::Object(_)) => object.to_string(),
                    Some(_) => {
                        return Err(format!(
                            "tool call `{}`: arguments must be a JSON object or a string",
                            call.name
                        ));
                    }
                };
                Ok(ToolCall {
                    id: call.id.unwrap_or_else(|| format!("call_{index}_{i}")),
                    name: call.name,
                    arguments,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Entry {
            line,
            text: self.text.map(Chunks::into_vec).unwrap_or_default(),
            reasoning: self.reasoning.map(Chunks::into_vec).unwrap_or_default(),
            tool_calls,
            usage: self.usage.map(|u| TokenUsage {
                input_tokens: u.input_tokens,
                output_tokens: u.output_tokens,
                cached_input_tokens: u.cached_input_tokens,
                reasoning_tokens: u.reasoning_tokens,
                total_tokens: u.input_tokens.saturating_add(u.output_tokens),
            }),
            chunk_delay: Duration::from_millis(self.chunk_delay_ms.unwrap_or(0)),
            expect: self
                .request
                .and_then(|r| r.last_message)
                .map(|m| ExpectedMessage {
                    role: m.role,
                    content: m.content,
                }),
            error: self.error,
        })
    }
}
