//! Words: quote removal, and the expansions inside a word. Command substitutions found in a
//! word are walked as command lines of their own; expansions that can run code without a
//! visible command (`${x@P}`, `${!x}`, arithmetic on variables) make the line opaque.

use brush_parser::word::{self, Parameter, ParameterExpr, WordPiece, WordPieceWithSource};

use super::ShellWord;
use super::hazards::has_substitution_syntax;
use super::limits::{
    MAX_HEREDOC_PAREN_NESTING, MAX_HEREDOC_SUBSTITUTIONS, MAX_PAREN_NESTING,
    MAX_UNCLOSED_SUBSCRIPTS, heredoc_substitutions, heredoc_unclosed, paren_nesting,
    unclosed_subscripts,
};
use super::walk::{Walker, excerpt, guarded, parser_options};

/// A word being put together from its pieces.
#[derive(Default)]
struct WordBuilder {
    text: String,
    /// The parts that were written literally (quoted, escaped or plain).
    literal: String,
    dynamic: bool,
}

impl WordBuilder {
    fn literal(&mut self, text: &str) {
        self.text.push_str(text);
        self.literal.push_str(text);
    }

    fn expansion(&mut self, source: &str) {
        self.text.push_str(source);
        self.dynamic = true;
    }

    fn finish(self) -> ShellWord {
        ShellWord {
            carries_code: has_substitution_syntax(&self.literal),
            text: self.text,
            dynamic: self.dynamic,
        }
    }
}

impl Walker {
    /// Parses one word as written in the line (quotes included), walks the commands its
    /// substitutions run, and returns it with quotes removed.
    pub(super) fn word(&mut self, raw: &str) -> ShellWord {
        if self.too_deep_to_parse("word", raw) {
            return ShellWord {
                text: raw.to_owned(),
                dynamic: true,
                carries_code: false,
            };
        }
        match guarded(|| word::parse(raw, &parser_options())) {
            Some(Ok(pieces)) => {
                let mut builder = WordBuilder::default();
                self.pieces(raw, &pieces, false, &mut builder);
                builder.finish()
            }
            failed => {
                let why = match failed {
                    Some(Err(e)) => e.to_string(),
                    _ => "the parser failed".to_owned(),
                };
                self.opaque(format!("the word `{}` does not parse: {why}", excerpt(raw)));
                ShellWord {
                    text: raw.to_owned(),
                    dynamic: true,
                    carries_code: false,
                }
            }
        }
    }

    /// Walks the substitutions of an unquoted-delimiter here-document body (`<<EOF`).
    pub(super) fn heredoc(&mut self, body: &str) {
        if self.too_deep_to_parse("here-document", body) {
            return;
        }
        let costly = if paren_nesting(body) > MAX_HEREDOC_PAREN_NESTING {
            Some(format!(
                "nests parentheses more than {MAX_HEREDOC_PAREN_NESTING} levels deep"
            ))
        } else if heredoc_unclosed(body) {
            Some("opens a substitution it does not close, which bash refuses".to_owned())
        } else if heredoc_substitutions(body) > MAX_HEREDOC_SUBSTITUTIONS {
            Some(format!(
                "holds more than {MAX_HEREDOC_SUBSTITUTIONS} substitutions (quote the \
                 delimiter, <<'EOF', for a body meant as text)"
            ))
        } else {
            None
        };
        if let Some(reason) = costly {
            self.unparsed("here-document", body, &reason);
            return;
        }
        match guarded(|| word::parse_heredoc(body, &parser_options())) {
            Some(Ok(pieces)) => self.pieces(body, &pieces, true, &mut WordBuilder::default()),
            _ => self.opaque(format!(
                "the here-document `{}` does not parse",
                excerpt(body)
            )),
        }
    }

    /// Whether `text` is made so that the parser would take too long on it (parentheses
    /// nested past [`MAX_PAREN_NESTING`], more than [`MAX_UNCLOSED_SUBSCRIPTS`] unclosed
    /// subscripts); it is then opaque, unparsed.
    pub(super) fn too_deep_to_parse(&mut self, what: &str, text: &str) -> bool {
        let reason = if paren_nesting(text) > MAX_PAREN_NESTING {
            format!("nests parentheses more than {MAX_PAREN_NESTING} levels deep")
        } else if unclosed_subscripts(text) > MAX_UNCLOSED_SUBSCRIPTS {
            "holds a `${name[` subscript with no `]`, which bash refuses".to_owned()
        } else {
            return false;
        };
        self.unparsed(what, text, &reason);
        true
    }

    /// Makes `text` opaque, left unparsed for `reason`.
    fn unparsed(&mut self, what: &str, text: &str, reason: &str) {
        self.opaque(format!(
            "the {what} `{}` {reason} and was not checked",
            excerpt(text)
        ));
    }

    fn pieces(
        &mut self,
        raw: &str,
        pieces: &[WordPieceWithSource],
        quoted: bool,
        out: &mut WordBuilder,
    ) {
        for piece in pieces {
            let source = raw.get(piece.start_index..piece.end_index).unwrap_or("");
            match &piece.piece {
                WordPiece::Text(text) => {
                    // Unquoted globs and brace expansions become file names or several
                    // words (a file named `-rf` among them). A lone `{}` expands to nothing.
                    let braces = text.contains('{') && (text.contains(',') || text.contains(".."));
                    if !quoted && (braces || text.contains(['*', '?', '[', '('])) {
                        out.dynamic = true;
                    }
                    out.literal(text);
                }
                WordPiece::SingleQuotedText(text) => out.literal(text),
                WordPiece::AnsiCQuotedText(text) => match decode_ansi_c(text) {
                    Some(decoded) => out.literal(&decoded),
                    None => out.expansion(source),
                },
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(raw, inner, true, out);
                }
                WordPiece::TildeExpansion(_) => out.expansion(source),
                WordPiece::ParameterExpansion(expr) => {
                    self.parameter(expr, source);
                    out.expansion(source);
                }
                WordPiece::CommandSubstitution(body) => {
                    self.line(body);
                    out.expansion(source);
                }
                WordPiece::BackquotedCommandSubstitution(body) => {
                    self.line(&unescape_backquoted(body));
                    out.expansion(source);
                }
                WordPiece::EscapeSequence(sequence) => {
                    let escaped = sequence.strip_prefix('\\').unwrap_or(sequence);
                    if escaped == "\n" {
                        // A line continuation.
                    } else if !quoted || matches!(escaped, "$" | "`" | "\"" | "\\") {
                        out.literal(escaped);
                    } else {
                        out.literal(sequence);
                    }
                }
                WordPiece::ArithmeticExpression(expr) => {
                    self.arithmetic(&expr.value);
                    out.expansion(source);
                }
            }
        }
    }

    /// Checks a `${…}` expansion: nested words are walked for substitutions; forms that
    /// evaluate text as code make the line opaque.
    fn parameter(&mut self, expr: &ParameterExpr, source: &str) {
        use ParameterExpr as P;
        let (parameter, indirect) = match expr {
            P::Parameter {
                parameter,
                indirect,
            }
            | P::UseDefaultValues {
                parameter,
                indirect,
                ..
            }
            | P::AssignDefaultValues {
                parameter,
                indirect,
                ..
            }
            | P::IndicateErrorIfNullOrUnset {
                parameter,
                indirect,
                ..
            }
            | P::UseAlternativeValue {
                parameter,
                indirect,
                ..
            }
            | P::ParameterLength {
                parameter,
                indirect,
            }
            | P::RemoveSmallestSuffixPattern {
                parameter,
                indirect,
                ..
            }
            | P::RemoveLargestSuffixPattern {
                parameter,
                indirect,
                ..
            }
            | P::RemoveSmallestPrefixPattern {
                parameter,
                indirect,
                ..
            }
            | P::RemoveLargestPrefixPattern {
                parameter,
                indirect,
                ..
            }
            | P::Substring {
                parameter,
                indirect,
                ..
            }
            | P::Transform {
                parameter,
                indirect,
                ..
            }
            | P::UppercaseFirstChar {
                parameter,
                indirect,
                ..
            }
            | P::UppercasePattern {
                parameter,
                indirect,
                ..
            }
            | P::LowercaseFirstChar {
                parameter,
                indirect,
                ..
            }
            | P::LowercasePattern {
                parameter,
                indirect,
                ..
            }
            | P::ReplaceSubstring {
                parameter,
                indirect,
                ..
            } => (Some(parameter), *indirect),
            P::VariableNames { .. } | P::MemberKeys { .. } => (None, false),
        };
        if indirect {
            self.opaque(format!(
                "the indirect expansion `{source}` can evaluate a subscript, which can run \
                 commands"
            ));
        }
        if let Some(Parameter::NamedWithIndex { name, index }) = parameter {
            self.subscript(name, index);
        }
        match expr {
            P::UseDefaultValues {
                default_value: v, ..
            }
            | P::IndicateErrorIfNullOrUnset {
                error_message: v, ..
            }
            | P::UseAlternativeValue {
                alternative_value: v,
                ..
            }
            | P::RemoveSmallestSuffixPattern { pattern: v, .. }
            | P::RemoveLargestSuffixPattern { pattern: v, .. }
            | P::RemoveSmallestPrefixPattern { pattern: v, .. }
            | P::RemoveLargestPrefixPattern { pattern: v, .. }
            | P::UppercaseFirstChar { pattern: v, .. }
            | P::UppercasePattern { pattern: v, .. }
            | P::LowercaseFirstChar { pattern: v, .. }
            | P::LowercasePattern { pattern: v, .. } => {
                self.nested(v.as_deref());
            }
            P::AssignDefaultValues {
                parameter,
                default_value,
                ..
            } => {
                let value = self.nested(default_value.as_deref());
                if let Parameter::Named(name) = parameter {
                    self.check_assignment(name, &value);
                }
            }
            P::ReplaceSubstring {
                pattern,
                replacement,
                ..
            } => {
                self.nested(Some(pattern));
                self.nested(replacement.as_deref());
            }
            P::Substring { offset, length, .. } => {
                self.arithmetic(&offset.value);
                if let Some(length) = length {
                    self.arithmetic(&length.value);
                }
            }
            P::Transform { .. } => self.opaque(format!(
                "the transformation `{source}` can expand prompts, which can run commands"
            )),
            P::Parameter { .. }
            | P::ParameterLength { .. }
            | P::VariableNames { .. }
            | P::MemberKeys { .. } => {}
        }
    }

    /// Walks a word nested in an expansion (`${x:-$(cmd)}`).
    fn nested(&mut self, text: Option<&str>) -> ShellWord {
        match text {
            Some(text) if !text.is_empty() => self.word(text),
            _ => ShellWord::literal(""),
        }
    }
}

/// Inside backquotes, `\\`, `` \` `` and `\$` stand for the character itself; the command
/// line is what remains once they are undone.
fn unescape_backquoted(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&next) = chars.peek()
            && matches!(next, '\\' | '`' | '$')
        {
            out.push(next);
            chars.next();
            continue;
        }
        out.push(c);
    }
    out
}

/// Decodes the common escapes of `$'…'`; any other escape leaves the word dynamic (None),
/// which is the safe answer for a form this module does not interpret.
fn decode_ansi_c(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            '\\' => out.push('\\'),
            '\'' => out.push('\''),
            '"' => out.push('"'),
            _ => return None,
        }
    }
    Some(out)
}
