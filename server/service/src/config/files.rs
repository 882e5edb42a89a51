//! Reading one configuration file into its values, each with the line it is on. Keys the
//! server does not know are errors naming the file, the line and the key: a typo must not
//! leave a setting silently at its default.

use std::path::Path;

use serde::Deserialize;
use toml::de::{DeTable, DeValue, ValueDeserializer};

use super::error::ConfigError;
use super::schema::Schema;
use super::source::{Layer, Source};

/// A value of a file, under its full key (`server.worker_count`,
/// `providers.openai.base_url`).
pub struct Leaf {
    pub key: String,
    pub value: toml::Value,
    pub source: Source,
    /// For an array of tables, the line of each table, so an error in one names it.
    pub element_lines: Vec<usize>,
}

/// Reads `path`'s values. `Ok(None)` when it does not exist and may not (`required`
/// false: the system and home files are optional, a `--config` file is not).
pub fn read(
    path: &Path,
    layer: Layer,
    required: bool,
    schema: &Schema,
) -> Result<Option<Vec<Leaf>>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_owned(),
                source,
            });
        }
    };
    // The message and position only: toml's full report quotes the line, which may hold
    // a secret.
    let table = DeTable::parse(&text).map_err(|e| ConfigError::Syntax {
        path: path.to_owned(),
        line: e.span().map_or(1, |span| line_of(&text, span.start)),
        message: e.message().to_owned(),
    })?;
    let file = File {
        path,
        layer,
        text: &text,
        schema,
    };
    let mut leaves = Vec::new();
    file.walk(table.get_ref(), "", &mut leaves)?;
    Ok(Some(leaves))
}

struct File<'a> {
    path: &'a Path,
    layer: Layer,
    text: &'a str,
    schema: &'a Schema,
}

impl File<'_> {
    fn source(&self, offset: usize) -> Source {
        Source::File {
            layer: self.layer,
            path: self.path.to_owned(),
            line: line_of(self.text, offset),
        }
    }

    fn walk(
        &self,
        table: &DeTable<'_>,
        prefix: &str,
        out: &mut Vec<Leaf>,
    ) -> Result<(), ConfigError> {
        for (key, value) in table.iter() {
            let full = if prefix.is_empty() {
                key.get_ref().to_string()
            } else {
                format!("{prefix}.{}", key.get_ref())
            };
            let at = self.source(key.span().start);
            if self.schema.is_leaf(&full) {
                let element_lines = match value.get_ref() {
                    DeValue::Array(items) => items
                        .iter()
                        .map(|item| line_of(self.text, item.span().start))
                        .collect(),
                    _ => Vec::new(),
                };
                let value = toml::Value::deserialize(ValueDeserializer::from(value.clone()))
                    .map_err(|e| ConfigError::Value {
                        at: at.clone(),
                        key: full.clone(),
                        message: e.message().to_owned(),
                    })?;
                out.push(Leaf {
                    key: full,
                    value,
                    source: at,
                    element_lines,
                });
                continue;
            }
            if !self.schema.is_section(&full) {
                return Err(ConfigError::UnknownKey {
                    hint: self.schema.hint(prefix),
                    at,
                    key: full,
                });
            }
            match value.get_ref() {
                DeValue::Table(inner) => self.walk(inner, &full, out)?,
                other => {
                    return Err(ConfigError::Value {
                        at,
                        key: full,
                        message: format!("must be a table, not a {}", other.type_str()),
                    });
                }
            }
        }
        Ok(())
    }
}

/// The 1-based line holding byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}
