//! `Write`: creates or replaces a whole file in the workspace.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::parse;
use super::atomic::{adopt_workspace_owner, write_atomic};
use super::paths::{Access, Scope};
use super::redact::summarize_fields;
use super::{blocking, path_subject, spec_of};
use crate::runtime::provider::ToolSpec;
use crate::runtime::tools::{Tool, ToolContext, ToolOutput};

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
        blocking(move || {
            let args: WriteArgs = parse(NAME, arguments)?;
            let scope = Scope::new(&ctx)?;
            let resolved = scope.resolve(&args.path, Access::Write)?;
            if resolved.real.is_dir() {
                return Err(ToolOutput::error(format!(
                    "`{}` is a folder; give a file path",
                    args.path
                )));
            }
            write_atomic(&resolved.real, args.content.as_bytes(), &args.path)?;
            adopt_workspace_owner(&resolved.real, &ctx.cell.data);
            let verb = if resolved.exists {
                "replaced"
            } else {
                "created"
            };
            Ok(ToolOutput::ok(format!(
                "{verb} `{}` ({} bytes)",
                args.path,
                args.content.len()
            )))
        })
    }
}
