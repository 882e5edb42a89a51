//! What the model reads of an MCP tool's result: its content blocks as text (text as
//! is; audio and binary resources described), images (and embedded image resources)
//! checked and passed on for models that take them, each also described in the text,
//! and its structured content when there is nothing else. The text is capped.

use serde_json::Value;

use crate::chat::ChatImage;
use crate::text::byte_prefix;
use crate::tools::images;

/// A result as the model gets it.
#[derive(Debug, Default, PartialEq)]
pub struct Rendered {
    /// At most the cap given to [`render`]; never holds an image's bytes.
    pub text: String,
    pub images: Vec<ChatImage>,
}

/// The text of a result's `content` (and `structuredContent`), at most `max_bytes`, and
/// its images that pass [`images::check`].
pub fn render(content: &[Value], structured: Option<&Value>, max_bytes: usize) -> Rendered {
    let mut images = Vec::new();
    let mut parts: Vec<String> = content
        .iter()
        .map(|item| block(item, &mut images))
        .collect();
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
    Rendered {
        text: cap(text, max_bytes),
        images,
    }
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

/// An image block's (or embedded resource's) description; the image joins `images` when
/// it passes the checks.
fn image(mime_type: &str, data: &str, images: &mut Vec<ChatImage>) -> String {
    match images::check(mime_type, data) {
        Ok(image) => {
            let text = images::describe(&image.mime_type, image.byte_len(), None);
            images.push(image);
            text
        }
        Err(why) => images::describe(mime_type, data.len() / 4 * 3, Some(&why)),
    }
}

/// One content block, by its `type`.
fn block(block: &Value, images: &mut Vec<ChatImage>) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or_default();
    let base64_bytes = |name: &str| field(name).len() / 4 * 3;
    match field("type") {
        "text" => field("text").to_owned(),
        "image" => image(field("mimeType"), field("data"), images),
        "audio" => format!(
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
            } else if get("mimeType").starts_with("image/") {
                format!(
                    "[resource {}] {}",
                    get("uri"),
                    image(&get("mimeType"), &get("blob"), images)
                )
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
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde_json::json;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn every_kind_of_block_reads_as_text_and_the_whole_is_capped() {
        let content = [
            json!({"type": "text", "text": "hello"}),
            json!({"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}),
            json!({"type": "resource_link", "uri": "file:///a.txt", "name": "a"}),
            json!({"type": "resource", "resource": {"uri": "file:///b", "text": "body"}}),
            json!({"type": "resource", "resource": {"uri": "file:///c", "mimeType": "application/zip", "blob": "AAAAAAAA"}}),
        ];
        let rendered = render(&content, None, 10_000);
        assert_eq!(
            rendered.text,
            "hello\n[audio audio/wav, about 3 bytes, not shown]\n[resource link: file:///a.txt, name a]\n\
             [resource file:///b]\nbody\n[resource file:///c (application/zip), about 6 bytes of binary content, not shown]"
        );
        assert!(rendered.images.is_empty());
        assert_eq!(render(&[], Some(&json!({"n": 3})), 100).text, r#"{"n":3}"#);
        assert_eq!(render(&[], None, 100).text, "(no content)");
        let capped = render(
            &[json!({"type": "text", "text": "é".repeat(100)})],
            None,
            11,
        );
        assert!(
            capped
                .text
                .starts_with("ééééé\n[output truncated: 11 of 200 bytes shown]"),
            "{}",
            capped.text
        );
    }

    #[test]
    fn images_and_embedded_image_resources_are_passed_on_and_described() {
        let png = STANDARD.encode(PNG);
        let content = [
            json!({"type": "image", "mimeType": "image/png", "data": png}),
            json!({"type": "resource", "resource": {"uri": "file:///shot.png", "mimeType": "image/png", "blob": png}}),
            json!({"type": "image", "mimeType": "image/svg+xml", "data": STANDARD.encode("<svg/>")}),
            json!({"type": "image", "mimeType": "image/png", "data": "%%%%"}),
        ];
        let rendered = render(&content, None, 10_000);
        assert_eq!(
            rendered.text,
            "[image image/png, 16 bytes]\n[resource file:///shot.png] [image image/png, 16 bytes]\n\
             [image image/svg+xml, 6 bytes, not shown: the type is not one of png, jpeg, gif, webp]\n\
             [image image/png, 3 bytes, not shown: its data is not valid base64]"
        );
        assert_eq!(rendered.images.len(), 2);
        assert!(rendered.images.iter().all(|i| i.data == png));
        assert!(!rendered.text.contains(&png), "no bytes in the text");
    }
}
