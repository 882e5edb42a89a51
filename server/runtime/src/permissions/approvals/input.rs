//! Requests for a person's input (an MCP server's `elicitation/create`): what the request
//! carries, and the checks on its schema and on the answer.
//!
//! The MCP specification restricts a requested schema to a flat object whose properties
//! are primitives: strings (with `format`, length bounds, or an enumeration as `enum` or
//! `oneOf` of `const`s), numbers and integers (with bounds), booleans, and arrays of
//! enumerated strings (a multiple choice). Anything else (a nested object, an array of
//! anything else, a `$ref`) is refused when the request arrives, so a person is never asked
//! for something the answer could not be checked against.

use serde_json::{Map, Value};

use crate::events::InputAction;

/// A server's message as kept and shown, at most (the rest is cut, marked).
pub const MAX_MESSAGE_BYTES: usize = 8 * 1024;
/// A requested schema, serialized; a larger one is refused.
pub const MAX_SCHEMA_BYTES: usize = 32 * 1024;
/// An answer, serialized; a larger one is refused.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// Properties a requested schema may have.
pub const MAX_PROPERTIES: usize = 64;

/// What a request for input asks.
#[derive(Clone, Debug, PartialEq)]
pub struct InputRequest {
    /// The MCP server that asks.
    pub server: String,
    /// Its message to the person (bounded).
    pub message: String,
    /// The JSON schema the answer must match (checked by [`check_schema`]).
    pub schema: Value,
}

/// What a person answered.
#[derive(Clone, Debug, PartialEq)]
pub struct InputAnswer {
    pub action: InputAction,
    /// The answer (with `accept` only), checked against the request's schema.
    pub answer: Option<Value>,
}

/// Why a schema or an answer is refused: the place at fault and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InputError {
    /// `requested_schema.properties.age` for a schema, `answer.age` for an answer.
    pub field: String,
    pub message: String,
}

impl InputError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

const PRIMITIVE_KEYWORDS: &[&str] = &[
    "type",
    "title",
    "description",
    "default",
    "format",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "enum",
    "enumNames",
    "oneOf",
    "anyOf",
    "items",
    "minItems",
    "maxItems",
];

/// Whether `schema` is one a request for input may carry: a flat object of primitive
/// properties, within [`MAX_SCHEMA_BYTES`] and [`MAX_PROPERTIES`].
pub fn check_schema(schema: &Value) -> Result<(), InputError> {
    const AT: &str = "requested_schema";
    let size = serde_json::to_vec(schema).map_or(usize::MAX, |s| s.len());
    if size > MAX_SCHEMA_BYTES {
        return Err(InputError::new(
            AT,
            format!("is {size} bytes; at most {MAX_SCHEMA_BYTES} are accepted"),
        ));
    }
    let Some(object) = schema.as_object() else {
        return Err(InputError::new(AT, "must be a JSON object"));
    };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Err(InputError::new(format!("{AT}.type"), "must be \"object\""));
    }
    let properties = match object.get("properties") {
        None => return Ok(()),
        Some(Value::Object(p)) => p,
        Some(_) => {
            return Err(InputError::new(
                format!("{AT}.properties"),
                "must be an object",
            ));
        }
    };
    if properties.len() > MAX_PROPERTIES {
        return Err(InputError::new(
            format!("{AT}.properties"),
            format!(
                "has {} properties; at most {MAX_PROPERTIES} are accepted",
                properties.len()
            ),
        ));
    }
    for (name, property) in properties {
        check_property(&format!("{AT}.properties.{name}"), property)?;
    }
    if let Some(required) = object.get("required") {
        let names = required.as_array().filter(|names| {
            names
                .iter()
                .all(|n| n.as_str().is_some_and(|n| properties.contains_key(n)))
        });
        if names.is_none() {
            return Err(InputError::new(
                format!("{AT}.required"),
                "must list names of properties",
            ));
        }
    }
    Ok(())
}

fn check_property(at: &str, property: &Value) -> Result<(), InputError> {
    let Some(object) = property.as_object() else {
        return Err(InputError::new(at, "must be a JSON object"));
    };
    if let Some(keyword) = object
        .keys()
        .find(|k| !PRIMITIVE_KEYWORDS.contains(&k.as_str()))
    {
        return Err(InputError::new(
            format!("{at}.{keyword}"),
            "is not a keyword of a primitive property (a flat object of strings, numbers, \
             integers, booleans and enumerations is accepted)",
        ));
    }
    match object.get("type").and_then(Value::as_str) {
        Some("string") => {
            if let Some(choices) = object.get("oneOf") {
                consts(&format!("{at}.oneOf"), choices)?;
            }
            if let Some(choices) = object.get("enum") {
                strings(&format!("{at}.enum"), choices)?;
            }
            no_items(at, object)
        }
        Some("number" | "integer" | "boolean") => no_items(at, object),
        Some("array") => {
            let items = object.get("items").and_then(Value::as_object);
            let Some(items) = items else {
                return Err(InputError::new(
                    format!("{at}.items"),
                    "is required for an array: a multiple choice of enumerated strings",
                ));
            };
            match (items.get("enum"), items.get("anyOf")) {
                (Some(choices), None)
                    if items.get("type").and_then(Value::as_str) == Some("string") =>
                {
                    strings(&format!("{at}.items.enum"), choices)
                }
                (None, Some(choices)) => consts(&format!("{at}.items.anyOf"), choices),
                _ => Err(InputError::new(
                    format!("{at}.items"),
                    "an array must be a multiple choice: items of type string with `enum`, \
                     or `anyOf` of `const`s",
                )),
            }
        }
        Some(other) => Err(InputError::new(
            format!("{at}.type"),
            format!(
                "`{other}` is not a primitive type (string, number, integer, boolean, or an \
                 array of enumerated strings)"
            ),
        )),
        None => Err(InputError::new(format!("{at}.type"), "is required")),
    }
}

fn no_items(at: &str, object: &Map<String, Value>) -> Result<(), InputError> {
    if object.contains_key("items") {
        return Err(InputError::new(format!("{at}.items"), "is only for arrays"));
    }
    Ok(())
}

fn strings(at: &str, choices: &Value) -> Result<(), InputError> {
    match choices.as_array() {
        Some(list) if !list.is_empty() && list.iter().all(Value::is_string) => Ok(()),
        _ => Err(InputError::new(at, "must be a non-empty list of strings")),
    }
}

fn consts(at: &str, choices: &Value) -> Result<(), InputError> {
    match choices.as_array() {
        Some(list)
            if !list.is_empty()
                && list
                    .iter()
                    .all(|c| c.get("const").is_some_and(Value::is_string)) =>
        {
            Ok(())
        }
        _ => Err(InputError::new(
            at,
            "must be a non-empty list of objects with a string `const`",
        )),
    }
}

/// Whether `answer` matches `schema` (one [`check_schema`] accepted): an object holding
/// only the schema's properties, every required one, each of its type and within its
/// bounds and choices.
pub fn check_answer(schema: &Value, answer: &Value) -> Result<(), InputError> {
    const AT: &str = "answer";
    let size = serde_json::to_vec(answer).map_or(usize::MAX, |s| s.len());
    if size > MAX_ANSWER_BYTES {
        return Err(InputError::new(
            AT,
            format!("is {size} bytes; at most {MAX_ANSWER_BYTES} are accepted"),
        ));
    }
    let Some(values) = answer.as_object() else {
        return Err(InputError::new(AT, "must be a JSON object"));
    };
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    if let Some(unknown) = values.keys().find(|k| !properties.contains_key(*k)) {
        let known: Vec<&str> = properties.keys().map(String::as_str).collect();
        return Err(InputError::new(
            format!("{AT}.{unknown}"),
            format!(
                "is not a field of the request (its fields: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ),
        ));
    }
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if let Some(missing) = required
        .iter()
        .filter_map(Value::as_str)
        .find(|name| !values.contains_key(*name))
    {
        return Err(InputError::new(format!("{AT}.{missing}"), "is required"));
    }
    for (name, value) in values {
        if let Some(property) = properties.get(name) {
            check_value(&format!("{AT}.{name}"), property, value)?;
        }
    }
    Ok(())
}

fn check_value(at: &str, property: &Value, value: &Value) -> Result<(), InputError> {
    let kind = property.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "string" => {
            let Some(text) = value.as_str() else {
                return Err(InputError::new(
                    at,
                    format!("must be a string, not {}", type_of(value)),
                ));
            };
            check_string(at, property, text)
        }
        "integer" => {
            let whole = value.as_i64().is_some()
                || value.as_u64().is_some()
                || value.as_f64().is_some_and(|f| f.fract() == 0.0);
            if !value.is_number() || !whole {
                return Err(InputError::new(
                    at,
                    format!("must be an integer, not {value}"),
                ));
            }
            check_range(at, property, value)
        }
        "number" => {
            if !value.is_number() {
                return Err(InputError::new(
                    at,
                    format!("must be a number, not {}", type_of(value)),
                ));
            }
            check_range(at, property, value)
        }
        "boolean" => {
            if !value.is_boolean() {
                return Err(InputError::new(
                    at,
                    format!("must be true or false, not {}", type_of(value)),
                ));
            }
            Ok(())
        }
        "array" => {
            let Some(list) = value.as_array() else {
                return Err(InputError::new(
                    at,
                    format!("must be a list of choices, not {}", type_of(value)),
                ));
            };
            let items = property.get("items").unwrap_or(&Value::Null);
            let choices = choices(items);
            for item in list {
                if !item.as_str().is_some_and(|s| choices.contains(&s)) {
                    return Err(InputError::new(
                        at,
                        format!("{item} is not one of {}", choices.join(", ")),
                    ));
                }
            }
            let count = list.len() as u64;
            if let Some(min) = property.get("minItems").and_then(Value::as_u64)
                && count < min
            {
                return Err(InputError::new(
                    at,
                    format!("must hold at least {min} choices"),
                ));
            }
            if let Some(max) = property.get("maxItems").and_then(Value::as_u64)
                && count > max
            {
                return Err(InputError::new(
                    at,
                    format!("must hold at most {max} choices"),
                ));
            }
            Ok(())
        }
        _ => Err(InputError::new(at, "has no type the request accepts")),
    }
}

fn check_string(at: &str, property: &Value, text: &str) -> Result<(), InputError> {
    let choices = choices(property);
    if !choices.is_empty() && !choices.contains(&text) {
        return Err(InputError::new(
            at,
            format!(
                "`{}` is not one of {}",
                crate::text::shorten(text, 64),
                choices.join(", ")
            ),
        ));
    }
    let length = text.chars().count() as u64;
    if let Some(min) = property.get("minLength").and_then(Value::as_u64)
        && length < min
    {
        return Err(InputError::new(
            at,
            format!("must be at least {min} characters long"),
        ));
    }
    if let Some(max) = property.get("maxLength").and_then(Value::as_u64)
        && length > max
    {
        return Err(InputError::new(
            at,
            format!("must be at most {max} characters long"),
        ));
    }
    let well_formed = match property.get("format").and_then(Value::as_str) {
        Some("email") => text.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && host.contains('.') && !text.contains(char::is_whitespace)
        }),
        Some("uri") => text.split_once(':').is_some_and(|(scheme, rest)| {
            !rest.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }),
        Some("date") => is_date(text),
        Some("date-time") => text
            .split_once(['T', 't'])
            .is_some_and(|(date, time)| is_date(date) && time.len() >= 8),
        _ => true,
    };
    if !well_formed {
        let format = property.get("format").and_then(Value::as_str).unwrap_or("");
        return Err(InputError::new(at, format!("must be a valid {format}")));
    }
    Ok(())
}

/// `YYYY-MM-DD` with a month and day in range.
fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    let [year, month, day] = parts.as_slice() else {
        return false;
    };
    let digits = |s: &str, n: usize| s.len() == n && s.chars().all(|c| c.is_ascii_digit());
    digits(year, 4)
        && digits(month, 2)
        && digits(day, 2)
        && month.parse::<u8>().is_ok_and(|m| (1..=12).contains(&m))
        && day.parse::<u8>().is_ok_and(|d| (1..=31).contains(&d))
}

fn check_range(at: &str, property: &Value, value: &Value) -> Result<(), InputError> {
    let Some(number) = value.as_f64() else {
        return Ok(());
    };
    if let Some(min) = property.get("minimum").and_then(Value::as_f64)
        && number < min
    {
        return Err(InputError::new(at, format!("must be at least {min}")));
    }
    if let Some(max) = property.get("maximum").and_then(Value::as_f64)
        && number > max
    {
        return Err(InputError::new(at, format!("must be at most {max}")));
    }
    Ok(())
}

/// The strings a property (or an array's `items`) may take: its `enum`, or the `const`s of
/// its `oneOf` / `anyOf`. Empty when it is not an enumeration.
fn choices(schema: &Value) -> Vec<&str> {
    if let Some(list) = schema.get("enum").and_then(Value::as_array) {
        return list.iter().filter_map(Value::as_str).collect();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(list) = schema.get(key).and_then(Value::as_array) {
            return list
                .iter()
                .filter_map(|c| c.get("const").and_then(Value::as_str))
                .collect();
        }
    }
    Vec::new()
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "ok": {"type": "boolean"},
                "color": {"type": "string", "enum": ["red", "green"]},
                "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "One"}]},
                "email": {"type": "string", "format": "email"},
                "tools": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1},
            },
            "required": ["name"],
        })
    }

    #[test]
    fn a_flat_schema_of_primitives_is_accepted_and_nested_ones_are_refused() {
        check_schema(&schema()).unwrap();
        let nested = json!({"type": "object", "properties": {"address": {"type": "object", "properties": {}}}});
        let e = check_schema(&nested).unwrap_err();
        assert_eq!(e.field, "requested_schema.properties.address.properties");
        let nested = json!({"type": "object", "properties": {"list": {"type": "array", "items": {"type": "integer"}}}});
        assert_eq!(
            check_schema(&nested).unwrap_err().field,
            "requested_schema.properties.list.items"
        );
        let not_object = json!({"type": "string"});
        assert_eq!(
            check_schema(&not_object).unwrap_err().field,
            "requested_schema.type"
        );
        let bad_required = json!({"type": "object", "properties": {}, "required": ["x"]});
        assert_eq!(
            check_schema(&bad_required).unwrap_err().field,
            "requested_schema.required"
        );
    }

    #[test]
    fn an_answer_is_checked_field_by_field() {
        let schema = schema();
        check_answer(&schema, &json!({"name": "Ada", "age": 36, "ok": true, "color": "red", "hero": "h1", "email": "a@b.io", "tools": ["a"]})).unwrap();
        let refused = |answer: Value| check_answer(&schema, &answer).unwrap_err().field;
        assert_eq!(refused(json!({})), "answer.name");
        assert_eq!(refused(json!({"name": "Ada", "age": "old"})), "answer.age");
        assert_eq!(refused(json!({"name": "Ada", "age": 1.5})), "answer.age");
        assert_eq!(refused(json!({"name": "Ada", "age": 200})), "answer.age");
        assert_eq!(
            refused(json!({"name": "Ada", "color": "blue"})),
            "answer.color"
        );
        assert_eq!(refused(json!({"name": "Ada", "hero": "h2"})), "answer.hero");
        assert_eq!(
            refused(json!({"name": "Ada", "email": "nobody"})),
            "answer.email"
        );
        assert_eq!(
            refused(json!({"name": "Ada", "tools": ["a", "b"]})),
            "answer.tools"
        );
        assert_eq!(refused(json!({"name": "Ada", "extra": 1})), "answer.extra");
        assert_eq!(refused(json!({"name": ""})), "answer.name");
        assert_eq!(refused(json!(["Ada"])), "answer");
    }
}
