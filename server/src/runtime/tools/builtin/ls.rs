//! `LS`: one folder's entries with their type and size.

use std::fs;
use std::path::Path;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::parse;
use super::paths::{Access, Scope};
use super::{blocking, path_subject, spec_of};
use crate::runtime::provider::ToolSpec;
use crate::runtime::tools::{Tool, ToolContext, ToolOutput};

pub(crate) const NAME: &str = "LS";

/// Entries shown per call.
const MAX_SHOWN: usize = 1000;
/// Entries looked at per call: a folder with millions of files must not stall the turn.
const MAX_SCANNED: usize = 100_000;

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LsArgs {
    /// The folder to list: relative to the working directory, or absolute (default: the
    /// working directory).
    path: Option<String>,
}

/// Lists folders the session may read.
pub struct LsTool;

impl Tool for LsTool {
    fn spec(&self) -> ToolSpec {
        spec_of::<LsArgs>(
            NAME,
            "List a folder's entries, sorted by name, one per line: type (`dir`, `file`, \
             `link`, `other`), size in bytes for files, and name (folders end with `/`). \
             Shows at most 1000 entries. Without `path`, lists the working directory. \
             Symbolic links are shown as links and not followed.",
        )
    }

    fn read_only(&self) -> bool {
        true
    }

    fn permission_subject(&self, ctx: &ToolContext, arguments: &Value) -> Option<String> {
        path_subject(ctx, arguments).or_else(|| Some(Scope::new(ctx).ok()?.permission_subject(".")))
    }

    fn call(&self, ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        blocking(move || {
            let args: LsArgs = parse(NAME, arguments)?;
            let given = args.path.unwrap_or_else(|| ".".to_owned());
            let scope = Scope::new(&ctx)?;
            let resolved = scope.resolve(&given, Access::Read)?;
            if !resolved.exists {
                return Err(ToolOutput::error(format!("`{given}` does not exist")));
            }
            let meta = fs::metadata(&resolved.real)
                .map_err(|e| ToolOutput::error(format!("cannot list `{given}`: {e}")))?;
            if !meta.is_dir() {
                let name = resolved
                    .real
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| given.clone());
                let entry = Entry::of(name, &resolved.real);
                return Ok(ToolOutput::ok(entry.line()));
            }
            list(&resolved.real, &given, &ctx)
        })
    }
}

/// One line of the listing.
struct Entry {
    name: String,
    kind: &'static str,
    size: Option<u64>,
}

impl Entry {
    /// Describes `path` without following a link there.
    fn of(name: String, path: &Path) -> Self {
        let (kind, size) = match fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => ("dir", None),
            Ok(meta) if meta.is_file() => ("file", Some(meta.len())),
            Ok(meta) if meta.file_type().is_symlink() => ("link", None),
            _ => ("other", None),
        };
        Self { name, kind, size }
    }

    fn line(&self) -> String {
        let size = self.size.map(|s| s.to_string()).unwrap_or_default();
        let slash = if self.kind == "dir" { "/" } else { "" };
        format!("{:<5} {size:>12}  {}{slash}", self.kind, self.name)
    }
}

fn list(dir: &Path, given: &str, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let io_error = |e: std::io::Error| ToolOutput::error(format!("cannot list `{given}`: {e}"));
    let mut entries = Vec::new();
    let mut scan_capped = false;
    for entry in fs::read_dir(dir).map_err(io_error)? {
        if entries.len() == MAX_SCANNED {
            scan_capped = true;
            break;
        }
        if ctx.cancel.is_cancelled() {
            return Err(ToolOutput::error("cancelled"));
        }
        let entry = entry.map_err(io_error)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        entries.push(Entry::of(name, &entry.path()));
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    if entries.is_empty() {
        return Ok(ToolOutput::ok(format!("`{given}` is empty")));
    }
    let total = entries.len();
    let mut out: String = entries
        .iter()
        .take(MAX_SHOWN)
        .map(|e| e.line() + "\n")
        .collect();
    if total > MAX_SHOWN || scan_capped {
        let more = if scan_capped {
            format!("more than {}", MAX_SCANNED - MAX_SHOWN)
        } else {
            (total - MAX_SHOWN).to_string()
        };
        out.push_str(&format!(
            "[truncated: {more} more entries not shown; use Glob to narrow down]\n"
        ));
    }
    Ok(ToolOutput::ok(out))
}
