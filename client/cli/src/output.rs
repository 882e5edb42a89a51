//! Where command output goes. Commands never touch the process's stdout/stderr directly,
//! so `run_cli` can be driven in-process by tests with two buffers.
//!
//! Everything written here passes through `odyssey-visible`: text the CLI did not write
//! (a model's words, tool arguments and results, file names, descriptions, command output)
//! reaches the terminal with its control characters shown as escapes (`\x1b`, `\r`,
//! `\u202e`), never acted on, while the CLI's own colours stay. Only [`Output::copy_out`]
//! and [`Output::copy_err`] pass text unchanged, and only to a stream that is not a
//! terminal (a pipe or a file gets the bytes, as with `cat`).

use std::io::{self, Write};

use serde_json::Value;

/// How the CLI meets a human: how output looks on the error stream (reasoning, tool
/// lines, notes), whether questions may be asked on the terminal, and which streams are
/// terminals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// Dim reasoning with ANSI codes instead of prefixing it.
    pub color: bool,
    /// A person is at the terminal: approval requests are asked on stderr and answered
    /// on stdin. Off, they are left for `odyssey approve`/`deny` (or auto-answered).
    pub interactive: bool,
    /// Stdout is a terminal: a turn's answer and a command's output are shown with their
    /// control characters escaped. Off, they are written byte for byte.
    pub stdout_terminal: bool,
    /// Stderr is a terminal: as `stdout_terminal`, for a command's error output.
    pub stderr_terminal: bool,
}

impl Style {
    /// No escape codes and no questions: for buffers, pipes, files and tests.
    pub fn plain() -> Self {
        Self::default()
    }

    /// Color when stderr is a terminal and neither `NO_COLOR` nor `TERM=dumb` says otherwise;
    /// interactive when stdin and stderr are both terminals (the question goes to one, the
    /// answer comes from the other).
    pub fn detect() -> Self {
        use std::io::IsTerminal;
        let disabled = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
            || std::env::var("TERM").is_ok_and(|t| t == "dumb");
        let stderr_tty = io::stderr().is_terminal();
        Self {
            color: !disabled && stderr_tty,
            interactive: stderr_tty && io::stdin().is_terminal(),
            stdout_terminal: io::stdout().is_terminal(),
            stderr_terminal: stderr_tty,
        }
    }
}

/// The two streams of a command, and whether it speaks JSON.
pub(crate) struct Output<'a> {
    pub out: &'a mut (dyn Write + Send),
    pub err: &'a mut (dyn Write + Send),
    pub json: bool,
    pub style: Style,
}

impl Output<'_> {
    /// One line of primary output, control characters escaped.
    pub fn line(&mut self, text: impl AsRef<str>) -> io::Result<()> {
        writeln!(self.out, "{}", odyssey_visible::escape(text.as_ref()))
    }

    /// One JSON object per line, flushed so a reader following the stream sees it now.
    /// Besides what JSON escapes anyway, DEL, C1 controls and bidirectional overrides are
    /// written as `\uNNNN` escapes: the same text, safe to print on a terminal.
    pub fn json_line(&mut self, value: &Value) -> io::Result<()> {
        let mut line = Vec::new();
        serde::Serialize::serialize(
            value,
            &mut serde_json::Serializer::with_formatter(&mut line, VisibleJson),
        )
        .map_err(io::Error::other)?;
        line.push(b'\n');
        self.out.write_all(&line)?;
        self.out.flush()
    }

    /// A side note for humans (progress, hints) on the error stream, so stdout stays data;
    /// control characters escaped.
    pub fn note(&mut self, text: impl AsRef<str>) -> io::Result<()> {
        writeln!(self.err, "{}", odyssey_visible::escape(text.as_ref()))
    }

    /// [`Output::note`], dimmed when color is on.
    pub fn dim_note(&mut self, text: &str) -> io::Result<()> {
        let dimmed = self.dim(text);
        writeln!(self.err, "{dimmed}")
    }

    /// `text` with control characters escaped, wrapped in dim ANSI codes when color is on.
    /// The result holds the CLI's own codes: write it directly, not through `line`/`note`.
    pub fn dim(&self, text: &str) -> String {
        let text = odyssey_visible::escape(text);
        if self.style.color {
            format!("\x1b[2m{text}\x1b[0m")
        } else {
            text.into_owned()
        }
    }

    /// Text the CLI did not write, copied to stdout as it comes (a turn's answer, a
    /// command's output): byte for byte when stdout is not a terminal, as `cat` would;
    /// with control characters escaped on a terminal.
    pub fn copy_out(&mut self, text: &str) -> io::Result<()> {
        copy(&mut *self.out, text, self.style.stdout_terminal)
    }

    /// [`Output::copy_out`] for bytes that may not be UTF-8 (shown lossily on a terminal).
    pub fn copy_out_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.style.stdout_terminal {
            self.copy_out(&String::from_utf8_lossy(bytes))
        } else {
            self.out.write_all(bytes)?;
            self.out.flush()
        }
    }

    /// [`Output::copy_out`] for stderr.
    pub fn copy_err(&mut self, text: &str) -> io::Result<()> {
        copy(&mut *self.err, text, self.style.stderr_terminal)
    }

    /// Labelled values, aligned: the human form of a single record. Values are escaped.
    pub fn fields(&mut self, fields: &[(&str, String)]) -> io::Result<()> {
        let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (key, value) in fields {
            writeln!(
                self.out,
                "{key:<width$}  {}",
                odyssey_visible::escape(value)
            )?;
        }
        Ok(())
    }

    /// A table with a header row; columns as wide as their widest cell. Cells are shown on
    /// one line each, newlines and tabs as `\n` and `\t`, control characters escaped.
    pub fn table(&mut self, headers: &[&str], rows: &[Vec<String>]) -> io::Result<()> {
        let rows: Vec<Vec<String>> = rows
            .iter()
            .map(|row| {
                row.iter()
                    .map(|cell| odyssey_visible::escape_line(cell).into_owned())
                    .collect()
            })
            .collect();
        let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (i, cell) in row.iter().enumerate() {
                if let Some(w) = widths.get_mut(i) {
                    *w = (*w).max(cell.chars().count());
                }
            }
        }
        let header: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
        for row in std::iter::once(&header).chain(&rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate() {
                if i + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    let pad = widths
                        .get(i)
                        .copied()
                        .unwrap_or(0)
                        .saturating_sub(cell.chars().count());
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad + 2));
                }
            }
            writeln!(self.out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

fn copy(stream: &mut (dyn Write + Send), text: &str, terminal: bool) -> io::Result<()> {
    if terminal {
        stream.write_all(odyssey_visible::escape(text).as_bytes())?;
    } else {
        stream.write_all(text.as_bytes())?;
    }
    stream.flush()
}

/// serde_json's compact output, with the characters `odyssey-visible` escapes and JSON
/// does not (DEL, C1 controls, bidirectional overrides) written as `\uNNNN` too.
struct VisibleJson;

impl serde_json::ser::Formatter for VisibleJson {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some(at) = rest.find(odyssey_visible::is_control) {
            writer.write_all(&rest.as_bytes()[..at])?;
            let Some(c) = rest[at..].chars().next() else {
                break;
            };
            write!(writer, "\\u{:04x}", u32::from(c))?;
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut output = Output {
            out: &mut out,
            err: &mut err,
            json: false,
            style: Style::plain(),
        };
        output
            .table(
                &["ID", "NAME"],
                &[
                    vec!["a".into(), "first".into()],
                    vec!["long-id".into(), "x".into()],
                ],
            )
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "ID       NAME\na        first\nlong-id  x\n"
        );
    }

    fn output<'a>(out: &'a mut Vec<u8>, err: &'a mut Vec<u8>, style: Style) -> Output<'a> {
        Output {
            out,
            err,
            json: false,
            style,
        }
    }

    /// Issue 23: every way text reaches the streams shows control characters as escapes,
    /// and the CLI's own colour codes stay.
    #[test]
    fn lines_notes_fields_and_tables_show_control_characters() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let color = Style {
            color: true,
            ..Style::plain()
        };
        let mut output = output(&mut out, &mut err, color);
        output.line("a\x1b]0;title\x07b").unwrap();
        output
            .fields(&[("description", "x\u{202e}y\r".to_owned())])
            .unwrap();
        output
            .table(&["NAME"], &[vec!["two\nlines\x1b[2J".to_owned()]])
            .unwrap();
        output.note("n\u{9b}31m").unwrap();
        output.dim_note("d\x1b[31m").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a\\x1b]0;title\\x07b\ndescription  x\\u202ey\\r\nNAME\ntwo\\nlines\\x1b[2J\n"
        );
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "n\\u009b31m\n\x1b[2md\\x1b[31m\x1b[0m\n"
        );
    }

    /// Issue 23: text copied from a turn or a command is escaped on a terminal and passed
    /// byte for byte to a pipe or a file, as `cat` would.
    #[test]
    fn copies_are_unchanged_off_a_terminal_and_escaped_on_one() {
        let text = "ok \x1b[2J\r\u{202e}\n";
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut piped = output(&mut out, &mut err, Style::plain());
        piped.copy_out(text).unwrap();
        piped.copy_err(text).unwrap();
        assert_eq!(
            (out.as_slice(), err.as_slice()),
            (text.as_bytes(), text.as_bytes())
        );
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let terminals = Style {
            stdout_terminal: true,
            stderr_terminal: true,
            ..Style::plain()
        };
        let mut shown = output(&mut out, &mut err, terminals);
        shown.copy_out(text).unwrap();
        shown.copy_err(text).unwrap();
        let escaped = "ok \\x1b[2J\\r\\u202e\n";
        assert_eq!(String::from_utf8(out).unwrap(), escaped);
        assert_eq!(String::from_utf8(err).unwrap(), escaped);
    }

    /// Issue 23: `--json` stays JSON, and escapes what JSON alone would pass raw.
    #[test]
    fn json_lines_escape_c1_del_and_bidi_overrides() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut output = output(&mut out, &mut err, Style::plain());
        let value = serde_json::json!({ "t\u{202e}": "a\x1b[2J\u{9b}\u{7f}\u{2066}é\n" });
        output.json_line(&value).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert_eq!(
            line,
            "{\"t\\u202e\":\"a\\u001b[2J\\u009b\\u007f\\u2066é\\n\"}\n"
        );
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back, value);
    }
}
