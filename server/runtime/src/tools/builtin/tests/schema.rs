//! The schemas the model sees: self-contained object schemas that require exactly the
//! fields the argument structs require.

use serde_json::Value;

use crate::tools::builtin::{BUILTIN_NAMES, builtin, builtin_tools};

fn required(schema: &Value) -> Vec<&str> {
    let mut fields: Vec<&str> = schema["required"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    fields.sort_unstable();
    fields
}

#[test]
fn every_tool_has_an_object_schema_with_the_right_required_fields() {
    let expected: [(&str, &[&str], &[&str]); 8] = [
        ("Read", &["path"], &["limit", "offset", "path"]),
        ("Write", &["content", "path"], &["content", "path"]),
        (
            "Edit",
            &["new_text", "old_text", "path"],
            &["new_text", "old_text", "path", "replace_all"],
        ),
        ("LS", &[], &["path"]),
        ("Glob", &["pattern"], &["pattern"]),
        ("Grep", &["pattern"], &["glob", "path", "pattern"]),
        ("Skill", &[], &["name"]),
        ("UpdatePlan", &["steps"], &["steps"]),
    ];
    for (name, required_fields, properties) in expected {
        let spec = builtin(name).expect("tool").spec();
        assert_eq!(spec.name, name);
        assert!(spec.description.len() > 40, "{name} describes itself");
        let schema = &spec.parameters;
        assert_eq!(schema["type"], "object", "{name}: {schema}");
        assert_eq!(schema["additionalProperties"], false, "{name}: {schema}");
        assert_eq!(required(schema), required_fields, "{name}: {schema}");
        let mut keys: Vec<&str> = schema["properties"]
            .as_object()
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        keys.sort_unstable();
        assert_eq!(keys, properties, "{name}: {schema}");
        let text = schema.to_string();
        assert!(
            !text.contains("$ref") && !text.contains("$schema"),
            "{name}: {text}"
        );
        assert!(!text.contains("\"null\""), "{name}: {text}");
    }
}

#[test]
fn field_docs_reach_the_model() {
    let read = builtin("Read").expect("tool").spec().parameters;
    assert_eq!(read["properties"]["offset"]["type"], "integer");
    assert_eq!(read["properties"]["offset"]["minimum"], 1);
    assert!(
        read["properties"]["offset"].get("format").is_none(),
        "{read}"
    );
    let description = read["properties"]["path"]["description"].as_str();
    assert_eq!(
        description,
        Some("The file to read: relative to the working directory, or absolute.")
    );
    let grep = builtin("Grep").expect("tool").spec().parameters;
    let description = grep["properties"]["path"]["description"]
        .as_str()
        .unwrap_or("");
    assert!(!description.contains('\n'), "running text: {description}");
    let plan = builtin("UpdatePlan").expect("tool").spec().parameters;
    let step = &plan["properties"]["steps"]["items"];
    assert_eq!(step["required"], serde_json::json!(["text", "status"]));
    assert_eq!(
        step["properties"]["status"]["enum"],
        serde_json::json!(["pending", "in_progress", "completed"])
    );
}

#[test]
fn the_registry_holds_the_eight_tools_and_not_bash() {
    let names: Vec<String> = builtin_tools().iter().map(|t| t.spec().name).collect();
    assert_eq!(names, BUILTIN_NAMES);
    assert!(builtin("Bash").is_none());
    assert!(builtin("read").is_none());
}
