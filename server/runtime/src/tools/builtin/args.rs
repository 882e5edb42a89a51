//! Tool arguments: one struct per tool is both the JSON schema the model sees and the
//! validation of what it sends, so the two cannot drift apart.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tools::ToolOutput;

/// Deserializes a call's arguments. A bad call becomes an error result naming the field at
/// fault (`steps[1].status: unknown variant ...`), which the model can act on.
pub(crate) fn parse<T: DeserializeOwned>(tool: &str, arguments: Value) -> Result<T, ToolOutput> {
    if !arguments.is_object() {
        return Err(ToolOutput::error(format!(
            "invalid arguments for {tool}: expected a JSON object, got {}",
            kind_of(&arguments)
        )));
    }
    serde_path_to_error::deserialize(arguments).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        ToolOutput::error(if path == "." {
            format!("invalid arguments for {tool}: {inner}")
        } else {
            format!("invalid argument `{path}` for {tool}: {inner}")
        })
    })
}

/// A validation failure found after deserializing, in the same words as [`parse`].
pub(crate) fn invalid(tool: &str, field: &str, message: impl std::fmt::Display) -> ToolOutput {
    ToolOutput::error(format!("invalid argument `{field}` for {tool}: {message}"))
}

/// The JSON schema of `T` as providers take it: one self-contained object schema (no
/// `$ref`, no `$schema`, no Rust type name as title), optional fields typed as their value
/// rather than "value or null" (some providers reject type lists; null is still accepted),
/// no Rust integer formats (`uint64`) that strict providers refuse, and descriptions as
/// running text rather than doc-comment lines.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
    }
    tidy(&mut schema);
    schema
}

/// Applies the rewrites [`schema_of`] promises to every subschema.
fn tidy(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".to_owned(), only);
                }
            }
            if map.get("type").is_some_and(|t| t == "integer") {
                map.remove("format");
            }
            if let Some(Value::String(description)) = map.get_mut("description") {
                *description = description.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            map.values_mut().for_each(tidy);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
