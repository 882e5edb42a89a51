//! `LS`: one folder's entries with their type and size.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::parse;
use super::paths::{Access, Scope, Target};
use super::{path_subject, spec_of, with_scope};
use crate::provider::ToolSpec;
use crate::sandbox::beneath::{self, Kind};
use crate::tools::{Tool, ToolContext, ToolOutput};

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
        with_scope(ctx, move |ctx, scope| {
            let args: LsArgs = parse(NAME, arguments)?;
            let given = args.path.unwrap_or_else(|| ".".to_owned());
            let target = scope.target(&given, Access::Read)?;
            let Some((_, stat)) = scope.locate(&target)? else {
                return Err(ToolOutput::error(format!("`{given}` does not exist")));
            };
            if Kind::of_stat(&stat) != Kind::Dir {
                let name = std::path::Path::new(&given)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| given.clone());
                let size = (Kind::of_stat(&stat) == Kind::File)
                    .then(|| u64::try_from(stat.st_size).unwrap_or(0));
                let entry = Entry {
                    name,
                    kind: kind_name(Kind::of_stat(&stat)),
                    size,
                };
                return Ok(ToolOutput::ok(entry.line()));
            }
            list(&scope, &target, &given, ctx)
        })
    }
}

/// One line of the listing.
struct Entry {
    name: String,
    kind: &'static str,
    size: Option<u64>,
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Dir => "dir",
        Kind::File => "file",
        Kind::Symlink => "link",
        Kind::Other => "other",
    }
}

impl Entry {
    fn line(&self) -> String {
        let size = self.size.map(|s| s.to_string()).unwrap_or_default();
        let slash = if self.kind == "dir" { "/" } else { "" };
        format!("{:<5} {size:>12}  {}{slash}", self.kind, self.name)
    }
}

fn list(
    scope: &Scope,
    target: &Target,
    given: &str,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolOutput> {
    let dir = scope.open_dir(target)?;
    let (found, scan_capped) = scope.entries(target, &dir, MAX_SCANNED)?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolOutput::error("cancelled"));
    }
    let mut entries: Vec<Entry> = found
        .into_iter()
        .map(|entry: beneath::Entry| Entry {
            name: entry.name.to_string_lossy().into_owned(),
            kind: kind_name(entry.kind),
            size: entry.size,
        })
        .collect();
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
