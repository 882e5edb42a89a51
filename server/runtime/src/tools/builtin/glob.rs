//! `Glob`: files whose path matches a pattern, under the working directory.

use std::ops::ControlFlow;

use futures::future::BoxFuture;
use globset::GlobBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::{invalid, parse};
use super::paths::Access;
use super::walk::{MAX_VISITED, WalkEnd, walk_files};
use super::{spec_of, with_scope};
use crate::provider::ToolSpec;
use crate::sandbox::beneath::Kind;
use crate::tools::{Tool, ToolContext, ToolOutput};

pub(crate) const NAME: &str = "Glob";

/// Paths returned per call.
const MAX_RESULTS: usize = 1000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GlobArgs {
    /// A glob relative to the working directory: `*` matches within one path segment,
    /// `**` across segments, `?` one character, `[abc]` a set, `{a,b}` alternatives.
    /// Example: `src/**/*.rs`.
    pattern: String,
}

/// Finds files by path pattern.
pub struct GlobTool;

impl Tool for GlobTool {
    fn spec(&self) -> ToolSpec {
        spec_of::<GlobArgs>(
            NAME,
            "Find files whose path (relative to the working directory) matches a glob \
             pattern such as `**/*.md` or `src/{lib,main}.rs`. Returns matching files \
             (not folders), sorted, one per line, at most 1000. Does not follow symbolic \
             links to folders and does not apply .gitignore.",
        )
    }

    fn read_only(&self) -> bool {
        true
    }

    fn permission_subject(&self, _ctx: &ToolContext, arguments: &Value) -> Option<String> {
        arguments
            .get("pattern")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    fn call(&self, ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        with_scope(ctx, move |ctx, scope| {
            let args: GlobArgs = parse(NAME, arguments)?;
            let pattern = args.pattern.trim_start_matches("./");
            check_pattern(pattern)?;
            let matcher = GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| invalid(NAME, "pattern", e.kind()))?
                .compile_matcher();
            let prefix = literal_prefix(pattern);
            let start =
                scope.target(if prefix.is_empty() { "." } else { &prefix }, Access::Read)?;
            let is_dir = scope
                .locate(&start)?
                .is_some_and(|(_, stat)| Kind::of_stat(&stat) == Kind::Dir);
            if !is_dir {
                return Ok(ToolOutput::ok(no_match(&args.pattern)));
            }

            let mut found = Vec::new();
            let mut more = false;
            let end = walk_files(&scope, &start, &ctx.cancel, |file| {
                let path = if prefix.is_empty() {
                    file.rel.to_owned()
                } else {
                    format!("{prefix}/{}", file.rel)
                };
                if matcher.is_match(&path) {
                    if found.len() == MAX_RESULTS {
                        more = true;
                        return ControlFlow::Break(());
                    }
                    found.push(path);
                }
                ControlFlow::Continue(())
            });
            if end == WalkEnd::Cancelled {
                return Err(ToolOutput::error("cancelled"));
            }
            if found.is_empty() && end == WalkEnd::Complete {
                return Ok(ToolOutput::ok(no_match(&args.pattern)));
            }
            found.sort();
            let mut out: String = found.iter().map(|p| format!("{p}\n")).collect();
            if more {
                out.push_str(&format!(
                    "[truncated: more than {MAX_RESULTS} files match; use a narrower pattern]\n"
                ));
            }
            if end == WalkEnd::Capped {
                out.push_str(&format!(
                    "[incomplete: stopped after looking at {MAX_VISITED} entries; use a \
                     narrower pattern]\n"
                ));
            }
            Ok(ToolOutput::ok(out))
        })
    }
}

/// Patterns stay below the working directory: no absolute paths, no `..`.
fn check_pattern(pattern: &str) -> Result<(), ToolOutput> {
    if pattern.is_empty() {
        return Err(invalid(NAME, "pattern", "must not be empty"));
    }
    if pattern.starts_with('/') {
        return Err(invalid(
            NAME,
            "pattern",
            "must be relative to the working directory (no leading `/`)",
        ));
    }
    if pattern.split('/').any(|segment| segment == "..") {
        return Err(invalid(
            NAME,
            "pattern",
            "must not contain `..`: Glob only searches below the working directory",
        ));
    }
    Ok(())
}

/// The leading folders of `pattern` without glob syntax (`src/app` of `src/app/**/*.rs`),
/// where the walk can start instead of at the working directory.
fn literal_prefix(pattern: &str) -> String {
    let segments: Vec<&str> = pattern.split('/').collect();
    let Some((_, folders)) = segments.split_last() else {
        return String::new();
    };
    folders
        .iter()
        .take_while(|s| !s.is_empty() && !s.contains(['*', '?', '[', ']', '{', '}', '\\']))
        .copied()
        .collect::<Vec<_>>()
        .join("/")
}

fn no_match(pattern: &str) -> String {
    format!("no files match `{pattern}`")
}
