//! Images a tool hands back for the model to look at, checked before they go anywhere.
//!
//! A tool (an MCP server above all) is code the bundle brought: what it calls an image
//! may be anything. An image is kept only if its media type is one every provider that
//! takes images accepts, its base64 decodes, its bytes start as that type's files do,
//! and it fits [`MAX_IMAGE_BYTES`]; a turn keeps at most [`MAX_TURN_IMAGES`] images and
//! [`MAX_TURN_IMAGE_BYTES`] of them (see [`TurnImages`]). Whatever is not kept is still
//! described to the model in text, with the reason.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::chat::ChatImage;

/// One image's bytes, decoded. Anthropic refuses images over 5 MB; 2 MiB covers a
/// full-screen screenshot while keeping a turn's record small.
pub const MAX_IMAGE_BYTES: usize = 2 * 1024 * 1024;
/// All images of one turn, decoded: what a turn record (and so the session's history and
/// every later request that replays it) holds at most.
pub const MAX_TURN_IMAGE_BYTES: usize = 4 * 1024 * 1024;
/// Images of one turn.
pub const MAX_TURN_IMAGES: usize = 8;

/// The media types kept, with the bytes their files start with.
const ALLOWED: [(&str, &[&[u8]]); 4] = [
    ("image/png", &[b"\x89PNG\r\n\x1a\n"]),
    ("image/jpeg", &[b"\xff\xd8\xff"]),
    ("image/gif", &[b"GIF87a", b"GIF89a"]),
    ("image/webp", &[b"RIFF"]),
];

/// Why an image is described to the model instead of shown.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ImageRefusal {
    #[error("the type is not one of png, jpeg, gif, webp")]
    UnsupportedType,
    #[error("its data is not valid base64")]
    NotBase64,
    #[error("its bytes are not a {0} image")]
    WrongBytes(String),
    #[error("it is over the {max} byte limit for one image")]
    TooLarge { max: usize },
    #[error(
        "the turn's images are over their limit ({MAX_TURN_IMAGES} images, {MAX_TURN_IMAGE_BYTES} bytes)"
    )]
    TurnFull,
}

/// Checks an image as a tool gave it (`mime_type` and base64 `data`). The base64 is
/// decoded only once its length says it may fit.
pub fn check(mime_type: &str, data: &str) -> Result<ChatImage, ImageRefusal> {
    let mime_type = mime_type.trim().to_ascii_lowercase();
    let Some((_, magic)) = ALLOWED.iter().find(|(name, _)| *name == mime_type) else {
        return Err(ImageRefusal::UnsupportedType);
    };
    // Tools may wrap their base64; the providers want it in one piece.
    let data: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if data.len() / 4 * 3 > MAX_IMAGE_BYTES + 2 {
        return Err(ImageRefusal::TooLarge {
            max: MAX_IMAGE_BYTES,
        });
    }
    let bytes = STANDARD
        .decode(data.as_bytes())
        .map_err(|_| ImageRefusal::NotBase64)?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(ImageRefusal::TooLarge {
            max: MAX_IMAGE_BYTES,
        });
    }
    let webp = mime_type != "image/webp" || bytes.get(8..12) == Some(b"WEBP".as_slice());
    if !webp || !magic.iter().any(|m| bytes.starts_with(m)) {
        return Err(ImageRefusal::WrongBytes(mime_type));
    }
    Ok(ChatImage { mime_type, data })
}

/// The text standing for an image in a tool's result: what the event shows and what a
/// model that takes no images reads. `refused` says why the image itself was left out.
pub fn describe(mime_type: &str, bytes: usize, refused: Option<&ImageRefusal>) -> String {
    let mime_type = crate::text::shorten(mime_type, 64);
    match refused {
        None => format!("[image {mime_type}, {bytes} bytes]"),
        Some(why) => format!("[image {mime_type}, {bytes} bytes, not shown: {why}]"),
    }
}

/// The images a turn has kept so far, against its limits.
#[derive(Debug, Default)]
pub struct TurnImages {
    count: usize,
    bytes: usize,
}

impl TurnImages {
    /// Keeps the images that still fit the turn; the others are dropped, and a line per
    /// dropped image is added to `content`.
    pub fn admit(&mut self, images: Vec<ChatImage>, content: &mut String) -> Vec<ChatImage> {
        let mut kept = Vec::with_capacity(images.len());
        for image in images {
            let bytes = image.byte_len();
            if self.count < MAX_TURN_IMAGES && self.bytes + bytes <= MAX_TURN_IMAGE_BYTES {
                self.count += 1;
                self.bytes += bytes;
                kept.push(image);
            } else {
                content.push('\n');
                content.push_str(&describe(
                    &image.mime_type,
                    bytes,
                    Some(&ImageRefusal::TurnFull),
                ));
            }
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn b64(bytes: &[u8]) -> String {
        STANDARD.encode(bytes)
    }

    #[test]
    fn an_image_is_kept_only_when_its_type_base64_bytes_and_size_hold() {
        let image = check("IMAGE/PNG", &b64(PNG)).expect("a png");
        assert_eq!(image.mime_type, "image/png");
        assert_eq!(image.byte_len(), PNG.len());
        let wrapped = format!("{}\n{}", &b64(PNG)[..8], &b64(PNG)[8..]);
        assert_eq!(check("image/png", &wrapped), Ok(image));
        assert_eq!(
            check("image/svg+xml", &b64(b"<svg/>")),
            Err(ImageRefusal::UnsupportedType)
        );
        assert_eq!(
            check("image/png", "not base64!"),
            Err(ImageRefusal::NotBase64)
        );
        assert_eq!(
            check("image/jpeg", &b64(PNG)),
            Err(ImageRefusal::WrongBytes("image/jpeg".into()))
        );
        assert_eq!(
            check("image/webp", &b64(b"RIFF\0\0\0\0WAVEfmt ")),
            Err(ImageRefusal::WrongBytes("image/webp".into()))
        );
        assert!(check("image/webp", &b64(b"RIFF\0\0\0\0WEBPVP8 ")).is_ok());
        assert!(check("image/gif", &b64(b"GIF89a\x01\0")).is_ok());
        let mut huge = PNG.to_vec();
        huge.resize(MAX_IMAGE_BYTES + 1, 0);
        assert_eq!(
            check("image/png", &b64(&huge)),
            Err(ImageRefusal::TooLarge {
                max: MAX_IMAGE_BYTES
            })
        );
        huge.truncate(MAX_IMAGE_BYTES);
        assert!(check("image/png", &b64(&huge)).is_ok());
    }

    #[test]
    fn a_turn_keeps_images_up_to_its_count_and_bytes() {
        let mut big = PNG.to_vec();
        big.resize(MAX_IMAGE_BYTES, 0);
        let big = check("image/png", &b64(&big)).expect("fits one image");
        let small = check("image/png", &b64(PNG)).expect("a png");
        let mut turn = TurnImages::default();
        let mut content = String::from("result");
        let kept = turn.admit(vec![big.clone(), big.clone(), big.clone()], &mut content);
        assert_eq!(kept.len(), 2, "two fill the turn's bytes");
        assert_eq!(
            content,
            format!(
                "result\n[image image/png, {MAX_IMAGE_BYTES} bytes, not shown: the turn's images are over their limit (8 images, 4194304 bytes)]"
            )
        );
        let mut turn = TurnImages::default();
        let mut content = String::new();
        let kept = turn.admit(vec![small; MAX_TURN_IMAGES + 1], &mut content);
        assert_eq!(kept.len(), MAX_TURN_IMAGES);
        assert_eq!(content.matches("not shown").count(), 1);
    }
}
