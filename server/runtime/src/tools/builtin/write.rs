//! `Write`: creates or replaces a whole file in the workspace.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::parse;
use super::paths::Access;
use super::redact::summarize_fields;
use super::{path_subject, spec_of, with_scope};
use crate::provider::ToolSpec;
use crate::tools::{Tool, ToolContext, ToolOutput};

pub(crate) const NAME: &str = "Write";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    /// The file to write: relative to the working directory, or absolute. Missing parent
    /// folders are created.
    path: String,
    /// The file's complete new content.
    content: String,
}

/// Writes whole files, atomically, where the session may write.
pub struct WriteTool;

impl Tool for WriteTool {
    fn spec(&self) -> ToolSpec {
        spec_of::<WriteArgs>(
            NAME,
            "Create a file, or replace an existing file's entire content. Parent folders are \
             created as needed. The file is replaced atomically: readers see the old or the \
             new content, never a mix. Only the workspace and writable mounts can be \
             written. To change part of a file, prefer Edit.",
        )
    }

    fn permission_subject(&self, ctx: &ToolContext, arguments: &Value) -> Option<String> {
        path_subject(ctx, arguments)
    }

    fn sanitize(&self, arguments: &Value) -> Value {
        summarize_fields(arguments, &["content"])
    }

    fn call(&self, ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        with_scope(ctx, move |_, scope| {
            let args: WriteArgs = parse(NAME, arguments)?;
            let target = scope.target(&args.path, Access::Write)?;
            let existed = scope.write(&target, args.content.as_bytes())?;
            let verb = if existed { "replaced" } else { "created" };
            Ok(ToolOutput::ok(format!(
                "{verb} `{}` ({} bytes)",
                args.path,
                args.content.len()
            )))
        })
    }
}
