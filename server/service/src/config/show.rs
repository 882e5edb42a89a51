//! `odyssey config show`: the effective configuration as TOML (a file that would configure
//! the same server) or JSON, optionally with each value's source. Secrets are masked: the
//! values of secret settings, and in every other value the credentials a URL carries
//! (`user:password@`, `?token=`) and keys named like credentials.

use std::fmt::Write as _;

use serde_json::json;

use super::schema::Schema;
use super::{Entry, Loaded, MASK};
use odyssey_runtime::secrets::{is_headers_name, is_secret_name, mask_url};

/// The section of `key`: `server` for `server.listen`, `providers.openai` for
/// `providers.openai.base_url`.
fn split(key: &str) -> (&str, &str) {
    key.rsplit_once('.').unwrap_or(("", key))
}

/// Keys in the order they are printed: the settings' order, with the providers' and then
/// the credentials' tables (by name) before `[requirements]`.
fn ordered<'a>(schema: &Schema, loaded: &'a Loaded) -> Vec<(&'a str, &'a Entry)> {
    let mut out = Vec::new();
    let mut tables_done = false;
    let emit_tables = |out: &mut Vec<(&'a str, &'a Entry)>| {
        let sections: [(&str, Vec<&str>); 2] = [
            ("providers", schema.provider.iter().map(|s| s.key).collect()),
            (
                "credentials",
                schema.credential.iter().map(|s| s.key).collect(),
            ),
        ];
        for (section, fields) in sections {
            let prefix = format!("{section}.");
            let mut names: Vec<&str> = loaded
                .entries
                .keys()
                .filter_map(|key| key.strip_prefix(&prefix)?.split_once('.'))
                .map(|(name, _)| name)
                .collect();
            names.dedup();
            for name in names {
                for field in &fields {
                    let key = format!("{prefix}{name}.{field}");
                    if let Some((key, entry)) = loaded.entries.get_key_value(&key) {
                        out.push((key.as_str(), entry));
                    }
                }
            }
        }
    };
    for setting in &schema.server {
        if !tables_done && setting.key.starts_with("requirements.") {
            emit_tables(&mut out);
            tables_done = true;
        }
        if let Some((key, entry)) = loaded.entries.get_key_value(setting.key) {
            out.push((key.as_str(), entry));
        }
    }
    if !tables_done {
        emit_tables(&mut out);
    }
    out
}

fn shown(entry: &Entry) -> toml::Value {
    if entry.secret {
        toml::Value::from(MASK)
    } else {
        masked(&entry.value)
    }
}

/// `value` with the credentials inside its URLs and its credential-named keys masked, at
/// any depth (a webhook's `?token=`, a registry's `user:password@`, an override's table).
pub(super) fn masked(value: &toml::Value) -> toml::Value {
    use toml::Value;
    match value {
        Value::String(text) => Value::String(mask_url(text)),
        Value::Array(items) => Value::Array(items.iter().map(masked).collect()),
        Value::Table(table) => Value::Table(
            table
                .iter()
                .map(|(key, value)| {
                    let value = if is_secret_name(key) {
                        Value::from(MASK)
                    } else if let (true, Value::Table(inner)) =
                        (is_headers_name(key) || key == "env", value)
                    {
                        // Header values and an MCP server's variables may hold keys.
                        Value::Table(
                            inner
                                .keys()
                                .map(|k| (k.clone(), Value::from(MASK)))
                                .collect(),
                        )
                    } else {
                        masked(value)
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The configuration as TOML; with `sources`, each value is followed by a comment naming
/// where it came from.
pub fn to_toml(loaded: &Loaded, sources: bool) -> String {
    let schema = Schema::new();
    let mut text = String::from("# The effective configuration of odysseyd (secrets masked).\n");
    if sources {
        let files: Vec<String> = loaded
            .files
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let files = if files.is_empty() {
            "none".to_owned()
        } else {
            files.join(", ")
        };
        let _ = writeln!(text, "# Files read: {files}.");
    }
    let entries = ordered(&schema, loaded);
    let mut index = 0;
    while index < entries.len() {
        let (section, _) = split(entries[index].0);
        let group: Vec<(&str, &Entry)> = entries[index..]
            .iter()
            .copied()
            .take_while(|(key, _)| split(key).0 == section)
            .collect();
        index += group.len();
        let (tables, plain): (Vec<_>, Vec<_>) = group
            .into_iter()
            .partition(|(_, entry)| is_array_of_tables(&entry.value));
        let lines: Vec<(String, String)> = plain
            .iter()
            .map(|(key, entry)| {
                let line = format!("{} = {}", split(key).1, shown(entry));
                (line, entry.source.to_string())
            })
            .collect();
        if !lines.is_empty() {
            let _ = writeln!(text, "\n[{section}]");
            let width = lines.iter().map(|(line, _)| line.len()).max().unwrap_or(0);
            for (line, source) in lines {
                if sources {
                    let _ = writeln!(text, "{line:width$}  # {source}");
                } else {
                    let _ = writeln!(text, "{line}");
                }
            }
        }
        for (key, entry) in tables {
            render_tables(&mut text, key, entry, sources);
        }
    }
    text
}

fn is_array_of_tables(value: &toml::Value) -> bool {
    value
        .as_array()
        .is_some_and(|items| !items.is_empty() && items.iter().all(toml::Value::is_table))
}

/// `[[models.override]]` tables, one block each.
fn render_tables(text: &mut String, key: &str, entry: &Entry, sources: bool) {
    for table in entry.value.as_array().into_iter().flatten() {
        let header = format!("[[{key}]]");
        if sources {
            let _ = writeln!(text, "\n{header}  # {}", entry.source);
        } else {
            let _ = writeln!(text, "\n{header}");
        }
        if let Some(fields) = table.as_table() {
            // The identifying fields first, as an operator writes them.
            let first = ["bundle", "agent", "model"];
            let ordered = first
                .iter()
                .filter_map(|name| fields.get_key_value(*name))
                .chain(
                    fields
                        .iter()
                        .filter(|(name, _)| !first.contains(&name.as_str())),
                );
            for (name, value) in ordered {
                let value = if entry.secret || is_secret_name(name) {
                    toml::Value::from(MASK)
                } else {
                    masked(value)
                };
                let _ = writeln!(text, "{name} = {value}");
            }
        }
    }
}

/// The configuration as JSON: one object shaped like the file or, with `sources`, one
/// object per key (`key`, `value`, `source`, `layer`).
pub fn to_json(loaded: &Loaded, sources: bool) -> Vec<serde_json::Value> {
    let schema = Schema::new();
    let entries = ordered(&schema, loaded);
    if sources {
        return entries
            .into_iter()
            .map(|(key, entry)| {
                json!({
                    "key": key,
                    "value": json_value(&shown(entry)),
                    "source": entry.source.to_string(),
                    "layer": entry.source.layer().as_str(),
                })
            })
            .collect();
    }
    let mut root = serde_json::Map::new();
    for (key, entry) in entries {
        let parts: Vec<&str> = key.split('.').collect();
        insert(&mut root, &parts, json_value(&shown(entry)));
    }
    vec![serde_json::Value::Object(root)]
}

/// Puts `value` at the dotted path `parts` of `table`, creating tables on the way.
fn insert(
    table: &mut serde_json::Map<String, serde_json::Value>,
    parts: &[&str],
    value: serde_json::Value,
) {
    match parts {
        [] => {}
        [leaf] => {
            table.insert((*leaf).to_owned(), value);
        }
        [head, rest @ ..] => {
            let next = table
                .entry((*head).to_owned())
                .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
            if let Some(inner) = next.as_object_mut() {
                insert(inner, rest, value);
            }
        }
    }
}

fn json_value(value: &toml::Value) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}
