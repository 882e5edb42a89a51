//! `Read`: a text file with line numbers, a window of it at a time.

use std::fs::File;
use std::io::{BufRead, BufReader, Read as _};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::args::{invalid, parse};
use super::paths::Access;
use super::text::{SNIFF_BYTES, clip_line, looks_binary, trim_eol};
use super::{path_subject, spec_of, with_scope};
use crate::provider::ToolSpec;
use crate::sandbox::beneath::Kind;
use crate::tools::{Tool, ToolContext, ToolOutput};

pub(crate) const NAME: &str = "Read";

/// Lines returned when the call gives no `limit`, and the most it may ask for.
const MAX_LINES: u64 = 2000;
/// Longer lines are cut (minified files, data dumps).
const MAX_LINE_CHARS: usize = 2000;
/// The most text one call returns, whatever the line count.
const MAX_OUTPUT_BYTES: usize = 100 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// The file to read: relative to the working directory, or absolute.
    path: String,
    /// The first line to return, counting from 1 (default 1).
    #[schemars(range(min = 1))]
    offset: Option<u64>,
    /// How many lines to return (default and maximum 2000).
    #[schemars(range(min = 1, max = 2000))]
    limit: Option<u64>,
}

/// Reads text files from the workspace, the bundle's files and allowed mounts.
pub struct ReadTool;

impl Tool for ReadTool {
    fn spec(&self) -> ToolSpec {
        spec_of::<ReadArgs>(
            NAME,
            "Read a text file. Returns its lines numbered from 1 like `cat -n` \
             (number, tab, text). Reads at most 2000 lines and about 100 KiB per call, and \
             cuts lines longer than 2000 characters; when more follows, the answer ends with \
             the `offset` to continue from. Binary files are refused. Use LS for folders.",
        )
    }

    fn read_only(&self) -> bool {
        true
    }

    fn permission_subject(&self, ctx: &ToolContext, arguments: &Value) -> Option<String> {
        path_subject(ctx, arguments)
    }

    fn call(&self, ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        with_scope(ctx, move |ctx, scope| {
            let args: ReadArgs = parse(NAME, arguments)?;
            if args.offset == Some(0) {
                return Err(invalid(NAME, "offset", "lines are counted from 1"));
            }
            let limit = match args.limit {
                Some(0) => return Err(invalid(NAME, "limit", "must be at least 1")),
                Some(n) if n > MAX_LINES => {
                    return Err(invalid(NAME, "limit", format!("at most {MAX_LINES}")));
                }
                Some(n) => n,
                None => MAX_LINES,
            };
            let target = scope.target(&args.path, Access::Read)?;
            let (file, stat) = scope.open_read(&target)?;
            let window = Window {
                first: args.offset.unwrap_or(1),
                limit,
            };
            read_window(file, &stat, &args.path, window, &ctx.cancel)
        })
    }
}

/// Which lines a call asked for: `first` (from 1) and at most `limit` of them.
struct Window {
    first: u64,
    limit: u64,
}

/// The lines of `window` in the file at `real`, numbered. Skipping to a far offset reads
/// the lines before it, so the loop also watches for the turn being cancelled.
fn read_window(
    mut file: File,
    stat: &rustix::fs::Stat,
    shown: &str,
    window: Window,
    cancel: &CancellationToken,
) -> Result<ToolOutput, ToolOutput> {
    let Window { first, limit } = window;
    let io_error = |e: std::io::Error| ToolOutput::error(format!("cannot read `{shown}`: {e}"));
    match Kind::of_stat(stat) {
        Kind::File => {}
        Kind::Dir => {
            return Err(ToolOutput::error(format!(
                "`{shown}` is a folder; use LS to list it"
            )));
        }
        Kind::Symlink | Kind::Other => {
            return Err(ToolOutput::error(format!(
                "`{shown}` is not a regular file (a device, socket or pipe); Read only reads \
                 files"
            )));
        }
    }
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(io_error)?;
    if looks_binary(&head) {
        return Err(ToolOutput::error(format!(
            "`{shown}` is a binary file ({} bytes); Read only shows text",
            stat.st_size
        )));
    }
    let mut reader = BufReader::new(std::io::Cursor::new(head).chain(file));

    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut shown_lines = 0u64;
    let mut cut_by_size = false;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io_error)? == 0 {
            break;
        }
        number += 1;
        if number.is_multiple_of(65_536) && cancel.is_cancelled() {
            return Err(ToolOutput::error("cancelled"));
        }
        if number < first {
            continue;
        }
        if shown_lines == limit {
            // One more line exists past the window.
            return Ok(ToolOutput::ok(with_note(
                out,
                format!("more lines follow; continue with offset={number}"),
            )));
        }
        let text = String::from_utf8_lossy(&line);
        let entry = format!(
            "{number:>6}\t{}\n",
            clip_line(trim_eol(&text), MAX_LINE_CHARS)
        );
        if out.len() + entry.len() > MAX_OUTPUT_BYTES && shown_lines > 0 {
            cut_by_size = true;
            break;
        }
        out.push_str(&entry);
        shown_lines += 1;
    }
    if cut_by_size {
        let next = first + shown_lines;
        return Ok(ToolOutput::ok(with_note(
            out,
            format!(
                "output capped at {} KiB; continue with offset={next}",
                MAX_OUTPUT_BYTES / 1024
            ),
        )));
    }
    if number == 0 {
        return Ok(ToolOutput::ok(format!("`{shown}` is empty")));
    }
    if shown_lines == 0 {
        return Ok(ToolOutput::ok(format!(
            "`{shown}` has {number} lines; offset {first} is past the end"
        )));
    }
    Ok(ToolOutput::ok(out))
}

fn with_note(mut out: String, note: String) -> String {
    out.push_str(&format!("[truncated: {note}]\n"));
    out
}
