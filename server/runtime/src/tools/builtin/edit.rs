//! `Edit`: replaces an exact piece of text in a file, refusing to guess when the piece is
//! missing or appears more than once.

use std::io::Read as _;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::{invalid, parse};
use super::paths::{Access, Scope, Target};
use super::redact::summarize_fields;
use super::text::{human_bytes, looks_binary};
use super::{path_subject, spec_of, with_scope};
use crate::provider::ToolSpec;
use crate::sandbox::beneath::Kind;
use crate::tools::{Tool, ToolContext, ToolOutput};

pub(crate) const NAME: &str = "Edit";

/// Larger files are refused: the whole file is held in memory and rewritten.
const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    /// The file to change: relative to the working directory, or absolute.
    path: String,
    /// The exact text to replace, including whitespace and line breaks. It must occur
    /// exactly once unless `replace_all` is set.
    old_text: String,
    /// The text to put in its place.
    new_text: String,
    /// Replace every occurrence instead of requiring exactly one (default false).
    #[serde(default)]
    replace_all: bool,
}

/// Replaces text in files where the session may write.
pub struct EditTool;

impl Tool for EditTool {
    fn spec(&self) -> ToolSpec {
        spec_of::<EditArgs>(
            NAME,
            "Replace exact text in an existing text file. `old_text` must match the file \
             exactly (whitespace and indentation included) and occur exactly once; include \
             enough surrounding lines to make it unique, or set `replace_all` to change \
             every occurrence. Fails without changing anything when the text is missing or \
             ambiguous. The file is rewritten atomically. Files over 10 MiB are refused.",
        )
    }

    fn permission_subject(&self, ctx: &ToolContext, arguments: &Value) -> Option<String> {
        path_subject(ctx, arguments)
    }

    fn sanitize(&self, arguments: &Value) -> Value {
        summarize_fields(arguments, &["old_text", "new_text"])
    }

    fn call(&self, ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        with_scope(ctx, move |_, scope| {
            let args: EditArgs = parse(NAME, arguments)?;
            if args.old_text.is_empty() {
                return Err(invalid(NAME, "old_text", "must not be empty"));
            }
            if args.old_text == args.new_text {
                return Err(invalid(
                    NAME,
                    "new_text",
                    "is the same as old_text; nothing would change",
                ));
            }
            let target = scope.target(&args.path, Access::Write)?;
            let text = read_text(&scope, &target)?;
            let count = text.matches(args.old_text.as_str()).count();
            let updated = match (count, args.replace_all) {
                (0, _) => {
                    return Err(ToolOutput::error(format!(
                        "old_text was not found in `{}`; read the file again and copy the \
                         text exactly, whitespace included",
                        args.path
                    )));
                }
                (1, _) => text.replacen(args.old_text.as_str(), &args.new_text, 1),
                (n, false) => {
                    return Err(ToolOutput::error(format!(
                        "old_text occurs {n} times in `{}`; include more surrounding text to \
                         make it unique, or set replace_all to replace all {n}",
                        args.path
                    )));
                }
                (_, true) => text.replace(args.old_text.as_str(), &args.new_text),
            };
            scope.write(&target, updated.as_bytes())?;
            let plural = if count == 1 { "" } else { "s" };
            Ok(ToolOutput::ok(format!(
                "replaced {count} occurrence{plural} in `{}`",
                args.path
            )))
        })
    }
}

/// The file as UTF-8 text, refusing folders, binary files and files too large to edit.
fn read_text(scope: &Scope, target: &Target) -> Result<String, ToolOutput> {
    let shown = &target.given;
    let io_error = |e: std::io::Error| ToolOutput::error(format!("cannot read `{shown}`: {e}"));
    let (file, stat) = scope.open_read(target).map_err(|e| match e {
        super::paths::PathError::Missing { .. } => ToolOutput::error(format!(
            "`{shown}` does not exist; use Write to create a file"
        )),
        e => e.into(),
    })?;
    if Kind::of_stat(&stat) != Kind::File {
        return Err(ToolOutput::error(format!(
            "`{shown}` is not a regular file; Edit changes text files"
        )));
    }
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    if size > MAX_FILE_BYTES {
        return Err(ToolOutput::error(format!(
            "`{shown}` is {}; Edit handles files up to {}",
            human_bytes(size),
            human_bytes(MAX_FILE_BYTES)
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ToolOutput::error(format!(
            "`{shown}` grew past {} while it was read; Edit handles files up to that size",
            human_bytes(MAX_FILE_BYTES)
        )));
    }
    if looks_binary(&bytes) {
        return Err(ToolOutput::error(format!(
            "`{shown}` is a binary file; Edit changes text files"
        )));
    }
    String::from_utf8(bytes).map_err(|_| {
        ToolOutput::error(format!(
            "`{shown}` is not UTF-8 text; Edit changes UTF-8 text files"
        ))
    })
}
