//! `Grep`: lines matching a regular expression, in one file or a folder tree.

use std::fs::File;
use std::io::Read as _;
use std::ops::ControlFlow;

use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use regex::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::{invalid, parse};
use super::paths::{Access, Scope};
use super::text::{clip_line, human_bytes, looks_binary, trim_eol};
use super::walk::{MAX_VISITED, WalkEnd, walk_files};
use super::{path_subject, spec_of, with_scope};
use crate::provider::ToolSpec;
use crate::sandbox::beneath::Kind;
use crate::tools::{Tool, ToolContext, ToolOutput};

pub(crate) const NAME: &str = "Grep";

/// Matching lines returned per call.
pub(crate) const MAX_MATCHES: usize = 200;
/// Text returned per call.
pub(crate) const MAX_OUTPUT_BYTES: usize = 32 * 1024;
/// Larger files are skipped (logs, data dumps): they are read whole.
pub(crate) const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;
/// Matching lines are cut to this many characters.
const MAX_LINE_CHARS: usize = 300;
/// Compiled-program size limit: a pathological pattern fails instead of eating memory.
const REGEX_SIZE_LIMIT: usize = 10 * 1024 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    /// A regular expression (Rust `regex` syntax, like PCRE without look-around or
    /// backreferences), matched against each line. `(?i)` makes it case-insensitive.
    pattern: String,
    /// The file or folder to search: relative to the working directory, or absolute
    /// (default: the working directory).
    path: Option<String>,
    /// Only search files matching this glob. Without `/` it matches file names
    /// (`*.rs`); with `/` it matches paths relative to `path` (`src/**/*.rs`).
    glob: Option<String>,
}

/// Searches file contents.
pub struct GrepTool;

impl Tool for GrepTool {
    fn spec(&self) -> ToolSpec {
        spec_of::<GrepArgs>(
            NAME,
            "Search file contents for lines matching a regular expression. Answers one \
             line per match as `path:line: text`. Searches a folder recursively (symbolic \
             links to folders are not followed, .gitignore is not applied) or a single \
             file. Skips binary files and files over 2 MiB. Returns at most 200 matches and \
             32 KiB, and says when it stopped early.",
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
            let args: GrepArgs = parse(NAME, arguments)?;
            let regex = RegexBuilder::new(&args.pattern)
                .size_limit(REGEX_SIZE_LIMIT)
                .build()
                .map_err(|e| invalid(NAME, "pattern", e))?;
            let filter = match &args.glob {
                Some(glob) => Some(Filter::new(glob)?),
                None => None,
            };
            let given = args.path.unwrap_or_else(|| ".".to_owned());
            let target = scope.target(&given, Access::Read)?;
            let Some((_, stat)) = scope.locate(&target)? else {
                return Err(ToolOutput::error(format!("`{given}` does not exist")));
            };
            let shown_root = scope.display(&target);
            let mut search = Search::new(regex);
            if Kind::of_stat(&stat) != Kind::Dir {
                // One file: there is nothing left to stop early.
                let _ = search.file(scope.open_read(&target).ok(), &shown_root);
                return Ok(ToolOutput::ok(
                    search.finish(WalkEnd::Complete, &args.pattern),
                ));
            }
            let end = walk_files(&scope, &target, &ctx.cancel, |file| {
                if filter.as_ref().is_some_and(|f| !f.accepts(file.rel)) {
                    return ControlFlow::Continue(());
                }
                let shown = if shown_root == "." {
                    file.rel.to_owned()
                } else {
                    format!("{shown_root}/{}", file.rel)
                };
                search.file(file.open(), &shown)
            });
            if end == WalkEnd::Cancelled {
                return Err(ToolOutput::error("cancelled"));
            }
            Ok(ToolOutput::ok(search.finish(end, &args.pattern)))
        })
    }
}

/// The optional `glob` argument.
struct Filter {
    matcher: GlobMatcher,
    /// Whether it matches whole relative paths rather than file names.
    by_path: bool,
}

impl Filter {
    fn new(glob: &str) -> Result<Self, ToolOutput> {
        let glob = glob.trim_start_matches("./");
        let matcher = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|e| invalid(NAME, "glob", e.kind()))?
            .compile_matcher();
        Ok(Self {
            matcher,
            by_path: glob.contains('/'),
        })
    }

    fn accepts(&self, rel: &str) -> bool {
        if self.by_path {
            self.matcher.is_match(rel)
        } else {
            let name = rel.rsplit('/').next().unwrap_or(rel);
            self.matcher.is_match(name)
        }
    }
}

/// Matches gathered so far, within the caps.
struct Search {
    regex: Regex,
    out: String,
    matches: usize,
    /// Why the search stopped early, if it did.
    capped: Option<String>,
    binary: usize,
    too_large: usize,
    unreadable: usize,
}

impl Search {
    fn new(regex: Regex) -> Self {
        Self {
            regex,
            out: String::new(),
            matches: 0,
            capped: None,
            binary: 0,
            too_large: 0,
            unreadable: 0,
        }
    }

    /// Searches one file; breaks when a cap is reached.
    fn file(&mut self, opened: Option<(File, rustix::fs::Stat)>, shown: &str) -> ControlFlow<()> {
        let Some((file, stat)) = opened.filter(|(_, stat)| Kind::of_stat(stat) == Kind::File)
        else {
            self.unreadable += 1;
            return ControlFlow::Continue(());
        };
        if u64::try_from(stat.st_size).unwrap_or(u64::MAX) > MAX_FILE_BYTES {
            self.too_large += 1;
            return ControlFlow::Continue(());
        }
        let mut bytes = Vec::new();
        if file
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .is_err()
            || bytes.len() as u64 > MAX_FILE_BYTES
        {
            self.unreadable += 1;
            return ControlFlow::Continue(());
        }
        if looks_binary(&bytes) {
            self.binary += 1;
            return ControlFlow::Continue(());
        }
        let text = String::from_utf8_lossy(&bytes);
        for (index, line) in text.split_inclusive('\n').enumerate() {
            let line = trim_eol(line);
            if !self.regex.is_match(line) {
                continue;
            }
            if self.matches == MAX_MATCHES {
                self.capped = Some(format!("stopped at {MAX_MATCHES} matches"));
                return ControlFlow::Break(());
            }
            let entry = format!(
                "{shown}:{}: {}\n",
                index + 1,
                clip_line(line, MAX_LINE_CHARS)
            );
            if self.out.len() + entry.len() > MAX_OUTPUT_BYTES {
                self.capped = Some(format!(
                    "stopped at {} KiB of output",
                    MAX_OUTPUT_BYTES / 1024
                ));
                return ControlFlow::Break(());
            }
            self.out.push_str(&entry);
            self.matches += 1;
        }
        ControlFlow::Continue(())
    }

    /// The answer: the matches, then notes on what was cut or skipped.
    fn finish(mut self, end: WalkEnd, pattern: &str) -> String {
        let mut notes = Vec::new();
        if let Some(capped) = self.capped.take() {
            notes.push(format!(
                "truncated: {capped}; narrow the pattern, the path or the glob"
            ));
        }
        if end == WalkEnd::Capped {
            notes.push(format!(
                "incomplete: stopped after looking at {MAX_VISITED} entries; narrow the path"
            ));
        }
        if self.binary > 0 {
            notes.push(format!("skipped {} binary file(s)", self.binary));
        }
        if self.too_large > 0 {
            notes.push(format!(
                "skipped {} file(s) larger than {}",
                self.too_large,
                human_bytes(MAX_FILE_BYTES)
            ));
        }
        if self.unreadable > 0 {
            notes.push(format!("skipped {} unreadable file(s)", self.unreadable));
        }
        let mut out = if self.matches == 0 {
            format!("no lines match `{pattern}`\n")
        } else {
            self.out
        };
        for note in notes {
            out.push_str(&format!("[{note}]\n"));
        }
        out
    }
}
