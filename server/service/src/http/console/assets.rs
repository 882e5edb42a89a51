//! The console's built files, embedded in the binary: `console/dist/` of the repository,
//! which `console/`'s build writes and `scripts/test` checks is what the sources build to.
//! So a fresh `cargo build` serves the console with no npm at run time.

use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use http::header::{self, HeaderValue};

use crate::http::error::HttpError;

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $type:literal) => {
        Asset {
            name: $name,
            content_type: $type,
            bytes: include_bytes!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../console/dist/",
                $name
            )),
        }
    };
}

const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("console.js", "text/javascript; charset=utf-8"),
    asset!("console.css", "text/css; charset=utf-8"),
];

fn serve(name: &str) -> Response {
    match ASSETS.iter().find(|a| a.name == name) {
        Some(asset) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            )],
            asset.bytes,
        )
            .into_response(),
        None => HttpError::no_console_file(name).into_response(),
    }
}

pub(super) async fn index() -> Response {
    serve("index.html")
}

pub(super) async fn file(Path(file): Path<String>) -> Response {
    serve(&file)
}
