//! What the model reads of an MCP tool's result: its content blocks as text (text as
//! is; images, audio and binary resources described, since tool results reach the
//! providers as text), its structured content when there is nothing else, capped.

use serde_json::Value;

use crate::text::byte_prefix;

/// The text of a result's `content` (and `structuredContent`), at most `max_bytes`.
pub fn render(content: &[Value], structured: Option<&Value>, max_bytes: usize) -> String {
    let mut parts: Vec<String> = content.iter().map(block).collect();
    if parts.is_empty()
        && let Some(structured) = structured
    {
        parts.push(structured.to_string());
    }
    let text = if parts.is_empty() {
        "(no content)".to_owned()
    } else {
        parts.join("\n")
    };
    cap(text, max_bytes)
}

fn cap(text: String, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text;
    }
    let total = text.len();
    let mut kept = byte_prefix(&text, max_bytes).to_owned();
    kept.push_str(&format!(
        "\n[output truncated: {max_bytes} of {total} bytes shown]"
    ));
    kept
}

/// One content block, by its `type`.
fn block(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or_default();
    let base64_bytes = |name: &str| field(name).len() / 4 * 3;
    match field("type") {
        "text" => field("text").to_owned(),
        "image" | "audio" => format!(
            "[{} {}, about {} bytes, not shown]",
            field("type"),
            field("mimeType"),
            base64_bytes("data")
        ),
        "resource_link" => {
            let mut text = format!("[resource link: {}", field("uri"));
            for (label, key) in [("name", "name"), ("type", "mimeType")] {
                if !field(key).is_empty() {
                    text.push_str(&format!(", {label} {}", field(key)));
                }
            }
            text.push(']');
            text
        }
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or_default();
            let get = |name: &str| {
                resource
                    .get(name)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            if resource.get("text").is_some() {
                format!("[resource {}]\n{}", get("uri"), get("text"))
            } else {
                format!(
                    "[resource {} ({}), about {} bytes of binary content, not shown]",
                    get("uri"),
                    get("mimeType"),
                    get("blob").len() / 4 * 3
                )
            }
        }
        other => format!("[{other} content, not shown]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_of_block_reads_as_text_and_the_whole_is_capped() {
        let content = [
            json!({"type": "text", "text": "hello"}),
            json!({"type": "image", "mimeType": "image/png", "data": "AAAA"}),
            json!({"type": "resource_link", "uri": "file:///a.txt", "name": "a"}),
            json!({"type": "resource", "resource": {"uri": "file:///b", "text": "body"}}),
            json!({"type": "resource", "resource": {"uri": "file:///c", "mimeType": "application/zip", "blob": "AAAAAAAA"}}),
        ];
        let text = render(&content, None, 10_000);
        assert_eq!(
            text,
            "hello\n[image image/png, about 3 bytes, not shown]\n[resource link: file:///a.txt, name a]\n\
             [resource file:///b]\nbody\n[resource file:///c (application/zip), about 6 bytes of binary content, not shown]"
        );
        assert_eq!(render(&[], Some(&json!({"n": 3})), 100), r#"{"n":3}"#);
        assert_eq!(render(&[], None, 100), "(no content)");
        let capped = render(
            &[json!({"type": "text", "text": "é".repeat(100)})],
            None,
            11,
        );
        assert!(
            capped.starts_with("ééééé\n[output truncated: 11 of 200 bytes shown]"),
            "{capped}"
        );
    }
}
