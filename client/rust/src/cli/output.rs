//! Where command output goes. Commands never touch the process's stdout/stderr directly,
//! so `run_cli` can be driven in-process by tests with two buffers.

use std::io::{self, Write};

use serde_json::Value;

/// How the CLI meets a human: how output looks on the error stream (reasoning, tool
/// lines, notes), and whether questions may be asked on the terminal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// Dim reasoning with ANSI codes instead of prefixing it.
    pub color: bool,
    /// A person is at the terminal: approval requests are asked on stderr and answered
    /// on stdin. Off, they are left for `odyssey approve`/`deny` (or auto-answered).
    pub interactive: bool,
}

impl Style {
    /// No escape codes and no questions: for buffers, pipes, files and tests.
    pub fn plain() -> Self {
        Self {
            color: false,
            interactive: false,
        }
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
    /// One line of primary output.
    pub fn line(&mut self, text: impl AsRef<str>) -> io::Result<()> {
        writeln!(self.out, "{}", text.as_ref())
    }

    /// One JSON object per line, flushed so a reader following the stream sees it now.
    pub fn json_line(&mut self, value: &Value) -> io::Result<()> {
        writeln!(self.out, "{value}")?;
        self.out.flush()
    }

    /// A side note for humans (progress, hints) on the error stream, so stdout stays data.
    pub fn note(&mut self, text: impl AsRef<str>) -> io::Result<()> {
        writeln!(self.err, "{}", text.as_ref())
    }

    /// Text wrapped in dim ANSI codes when color is on.
    pub fn dim(&self, text: &str) -> String {
        if self.style.color {
            format!("\x1b[2m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Labelled values, aligned: the human form of a single record.
    pub fn fields(&mut self, fields: &[(&str, String)]) -> io::Result<()> {
        let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (key, value) in fields {
            writeln!(self.out, "{key:<width$}  {value}")?;
        }
        Ok(())
    }

    /// A table with a header row; columns as wide as their widest cell.
    pub fn table(&mut self, headers: &[&str], rows: &[Vec<String>]) -> io::Result<()> {
        let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
        for row in rows {
            for (i, cell) in row.iter().enumerate() {
                if let Some(w) = widths.get_mut(i) {
                    *w = (*w).max(cell.chars().count());
                }
            }
        }
        let header: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
        for row in std::iter::once(&header).chain(rows) {
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
}
