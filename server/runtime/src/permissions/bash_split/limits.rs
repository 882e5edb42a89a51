//! Bounds on what the splitter parses. The parser and the walk are recursive, and a model
//! chooses the command line: a line nested a few thousand levels deep (`if if if …`,
//! `[[ ! ! ! … ]]`) would overflow the stack and abort the server. Lines past these bounds
//! are not parsed; they are opaque, so they ask (or are denied under `never`).

/// The longest command line the splitter parses. Bounds the work one tool call can cause.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// How deeply constructs may nest (brackets, substitutions, compound commands, `sh -c`
/// strings) before the line is treated as opaque: far below what a thread's stack holds.
pub const MAX_NESTING: usize = 48;

/// How deeply parentheses may nest in a line or a word before it is opaque without being
/// parsed. The parser backtracks at every parenthesis it fails to close (a subshell, `((`,
/// `$(`, `@(`), so its time grows exponentially with their nesting in a malformed line,
/// about 3.6 times per level: `((w` 14 times took 4 s, and a 74-byte line minutes, on one
/// worker thread. Real commands rarely nest parentheses more than a few levels.
pub const MAX_PAREN_NESTING: usize = 12;

/// How many parameter expansions with an unclosed subscript (`${a[$i}`) a line or word may
/// hold before it is opaque without being parsed: none. The word parser backtracks over
/// every one of them, about 20 times longer per one more (five took 7 s, six in a
/// here-document 7 minutes), and more again beside unclosed `$("` (three of each took
/// 2.7 s). Bash refuses such a word anyway (`bad substitution`); a well-formed subscript
/// (`${a[1]}`) is parsed as usual.
pub const MAX_UNCLOSED_SUBSCRIPTS: usize = 0;

/// How deeply parentheses may nest in an unquoted-delimiter here-document body (`<<EOF`)
/// before it is opaque unparsed. The parser's here-document grammar backtracks far more
/// than its line grammar: four `$((x $($[T` unclosed in a body (12 levels) took 3.7 s,
/// the same on a command line 0.02 s.
pub const MAX_HEREDOC_PAREN_NESTING: usize = 6;

/// How many substitutions (`$(…)`, `$[…]`, `` `…` ``, and `${…}` beyond a plain `${NAME}`)
/// an unquoted-delimiter here-document body may hold before it is opaque unparsed. The
/// parser's here-document grammar tries every `$` construct again at each character it
/// reads as text, without memory, so a body whose substitutions fail to parse costs a
/// multiple per substitution: a 857-byte body with seven took longer than 20 s. A plain
/// `${NAME}` or `$NAME` cannot fail and is not counted. Bodies meant as text are best
/// written with a quoted delimiter (`<<'EOF'`), which expands nothing.
pub const MAX_HEREDOC_SUBSTITUTIONS: usize = 4;

/// The substitutions of a here-document body that count against
/// [`MAX_HEREDOC_SUBSTITUTIONS`], from the text alone (escaped ones count too).
pub(super) fn heredoc_substitutions(body: &str) -> usize {
    let plain_brace = |at: usize| {
        let rest = &body[at + 2..];
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        name_len > 0 && rest[name_len..].starts_with('}')
    };
    body.matches("$(").count()
        + body.matches("$[").count()
        + body.matches('`').count().div_ceil(2)
        + body
            .match_indices("${")
            .filter(|(at, _)| !plain_brace(*at))
            .count()
}

/// Whether a here-document body opens more substitutions (`$(`, `${`, `$[`) than it has
/// closing brackets of their kind. Such a body makes bash fail (`unexpected EOF`), and the
/// parser backtracks over each unclosed one. From the text alone: a quoted or escaped
/// opener counts too, which only makes a body opaque.
pub(super) fn heredoc_unclosed(body: &str) -> bool {
    let count = |s: &str| body.matches(s).count();
    // `$((` opens two parentheses.
    count("$(") + count("$((") > count(")") || count("${") > count("}") || count("$[") > count("]")
}

/// A conservative guess at how deeply a line nests, from its text alone (quoting is not
/// understood here, so quoted brackets count too). Overestimating only makes a line opaque.
pub(super) fn nesting_estimate(line: &str) -> usize {
    let mut scan = Scan::default();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let next = chars.get(i + 1).copied();
        i += 1;
        if c.is_ascii_alphabetic() {
            scan.word.push(c);
            continue;
        }
        scan.end_word();
        match (c, next) {
            ('[', Some('[')) => {
                // `[[ … ]]` parses its operators recursively: count them inside.
                scan.tests.push(scan.depth);
                scan.open();
                i += 1;
            }
            (']', Some(']')) if !scan.tests.is_empty() => {
                scan.depth = scan.tests.pop().unwrap_or(0);
                i += 1;
            }
            ('&', Some('&')) | ('|', Some('|')) if !scan.tests.is_empty() => {
                scan.open();
                i += 1;
            }
            ('!', _) if !scan.tests.is_empty() => scan.open(),
            ('(' | '{' | '[', _) => scan.open(),
            (')' | '}' | ']', _) => scan.depth = scan.depth.saturating_sub(1),
            ('`', _) => scan.backquotes += 1,
            _ => {}
        }
    }
    scan.end_word();
    scan.max + scan.backquotes / 2
}

/// How deeply parentheses nest in `text`, from its text alone (quoting is not understood,
/// so quoted parentheses count too; overestimating only makes a line opaque).
pub(super) fn paren_nesting(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'(' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// How many `${…` in `text` hold a `[` not closed by a `]` before their `}` (or the end
/// of the text). From the text alone, like [`paren_nesting`]: overcounting only makes a
/// line opaque.
pub(super) fn unclosed_subscripts(text: &str) -> usize {
    text.match_indices("${")
        .filter(|(at, _)| {
            let rest = &text[at + 2..];
            let inner = rest.find('}').map_or(rest, |end| &rest[..end]);
            inner.matches('[').count() > inner.matches(']').count()
        })
        .count()
}

#[derive(Default)]
struct Scan {
    depth: usize,
    max: usize,
    backquotes: usize,
    /// The depth at each open `[[`, restored at its `]]`.
    tests: Vec<usize>,
    word: String,
}

impl Scan {
    fn open(&mut self) {
        self.depth += 1;
        self.max = self.max.max(self.depth);
    }

    /// Compound commands nest through keywords rather than brackets.
    fn end_word(&mut self) {
        match self.word.as_str() {
            "if" | "while" | "until" | "for" | "select" | "case" | "coproc" | "function" => {
                self.open();
            }
            "fi" | "done" | "esac" => self.depth = self.depth.saturating_sub(1),
            _ => {}
        }
        self.word.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unclosed_subscripts_are_counted_closed_ones_are_not() {
        let cases: &[(&str, usize)] = &[
            ("echo ${a[0]} ${b[$i]} ${#c[@]}", 0),
            ("${a[$i}", 1),
            ("${a[$i", 1),
            ("${a[${b[1]}", 1),
            ("${a[$i}or ${a[$i}or ${a[1}", 3),
            ("[ $x ] ${y} [", 0),
        ];
        for (text, count) in cases {
            assert_eq!(unclosed_subscripts(text), *count, "{text}");
        }
    }

    #[test]
    fn heredoc_bodies_with_unclosed_substitutions_are_found() {
        for body in ["$(date", "x ${HOME", "$[1 + 2", "$((1 + $(f))"] {
            assert!(heredoc_unclosed(body), "{body}");
        }
        for body in [
            "$(date) ${HOME} $[1+2] $((1 + 2))",
            "(a note) [1] {x}",
            "plain",
        ] {
            assert!(!heredoc_unclosed(body), "{body}");
        }
    }

    #[test]
    fn heredoc_substitutions_leave_plain_names_out() {
        let cases: &[(&str, usize)] = &[
            ("${HOME} $USER ${A_1}", 0),
            ("$(date) `id` $[1] ${a[1]} ${x:-y}", 5),
            ("$((1 + 2)) ${", 2),
        ];
        for (body, count) in cases {
            assert_eq!(heredoc_substitutions(body), *count, "{body}");
        }
    }

    #[test]
    fn estimates_follow_nesting_not_length() {
        let cases: &[(&str, usize)] = &[
            ("ls -la", 0),
            ("(a) (b) (c)", 1),
            ("((((x))))", 4),
            ("$(a $(b $(c)))", 3),
            ("if a; then if b; then c; fi; fi; if d; then e; fi", 2),
            ("[[ a && b ]] && [[ c || d ]]", 2),
            ("[[ ! a ]]; [[ ! b ]]", 2),
            ("echo `a` `b`", 2),
        ];
        for (line, depth) in cases {
            assert_eq!(nesting_estimate(line), *depth, "{line}");
        }
    }
}
