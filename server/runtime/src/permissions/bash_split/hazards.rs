//! Shell features that evaluate text as code without a visible command: arithmetic (a
//! variable holding `a[$(cmd)]` runs `cmd` when evaluated), array subscripts, builtins that
//! assign through names (`printf -v`, `declare`), and assignments that change which program
//! runs. The walk calls these checks; each hazard found makes the line opaque.

use brush_parser::ast;

use super::walk::{Walker, excerpt};
use super::{ShellWord, is_sensitive_variable};

/// Builtins that evaluate their arguments (array subscripts, arithmetic, `-v NAME`) inside
/// the shell: `printf -v 'a[$(rm x)]' y` runs `rm x`. Their arguments may not carry
/// substitution syntax, even quoted.
const EVALUATING_BUILTINS: &[&str] = &[
    "printf",
    "read",
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "unset",
    "let",
    "mapfile",
    "readarray",
    "test",
    "[",
    "wait",
];

/// Builtins whose `NAME=value` arguments assign variables.
const DECLARING_BUILTINS: &[&str] = &["declare", "typeset", "local", "export", "readonly"];

pub(super) fn has_substitution_syntax(text: &str) -> bool {
    text.contains("$(") || text.contains('`') || text.contains("${")
}

fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_number_word(word: &ShellWord) -> bool {
    word.as_literal().is_some_and(|t| {
        let t = t.strip_prefix('-').unwrap_or(t);
        !t.is_empty() && t.chars().all(|c| c.is_ascii_digit())
    })
}

impl Walker {
    /// `[[ … ]]` runs no program, but its words may hold substitutions, and its numeric
    /// comparisons evaluate operands as arithmetic (which can run code through subscripts).
    pub(super) fn extended_test(&mut self, expr: &ast::ExtendedTestExpr) {
        use ast::BinaryPredicate as B;
        use ast::ExtendedTestExpr as E;
        match expr {
            E::And(a, b) | E::Or(a, b) => {
                self.extended_test(a);
                self.extended_test(b);
            }
            E::Not(a) | E::Parenthesized(a) => self.extended_test(a),
            E::UnaryTest(predicate, word) => {
                let word = self.word(&word.value);
                if matches!(
                    predicate,
                    ast::UnaryPredicate::ShellVariableIsSetAndAssigned
                ) && !word.as_literal().is_some_and(is_name)
                {
                    self.opaque(format!(
                        "`[[ -v {} ]]` evaluates a subscript, which can run commands",
                        word.text
                    ));
                }
            }
            E::BinaryTest(predicate, left, right) => {
                let left = self.word(&left.value);
                let right = self.word(&right.value);
                let numeric = matches!(
                    predicate,
                    B::ArithmeticEqualTo
                        | B::ArithmeticNotEqualTo
                        | B::ArithmeticLessThan
                        | B::ArithmeticLessThanOrEqualTo
                        | B::ArithmeticGreaterThan
                        | B::ArithmeticGreaterThanOrEqualTo
                );
                if numeric && !(is_number_word(&left) && is_number_word(&right)) {
                    self.opaque(format!(
                        "`[[ {} … {} ]]` compares as arithmetic, which can run commands through \
                         variable values",
                        left.text, right.text
                    ));
                }
            }
        }
    }

    /// Arithmetic on anything but numbers can run commands: a variable whose value is
    /// `a[$(cmd)]` is evaluated, subscript and all.
    pub(super) fn arithmetic(&mut self, expr: &str) {
        let plain =
            |c: char| c.is_ascii_digit() || c.is_whitespace() || "+-*/%<>=!&|^~?:,()".contains(c);
        if !expr.chars().all(plain) {
            self.opaque(format!(
                "the arithmetic `{}` uses variables or expansions, which can run commands",
                excerpt(expr)
            ));
        }
    }

    /// Assignments that redirect program lookup or carry code for later evaluation make
    /// the line opaque.
    pub(super) fn check_assignment(&mut self, name: &str, value: &ShellWord) {
        if is_sensitive_variable(name) {
            self.opaque(format!(
                "it sets {name}, which changes what the commands run"
            ));
        } else if value.carries_code {
            self.opaque(format!(
                "the value given to {name} holds substitution syntax that later evaluation \
                 would run"
            ));
        }
    }

    /// An array subscript is arithmetic: only a plain number is safe.
    pub(super) fn subscript(&mut self, name: &str, index: &str) {
        if index.is_empty() || !index.chars().all(|c| c.is_ascii_digit()) {
            self.opaque(format!(
                "the subscript in `{name}[{}]` is evaluated as arithmetic, which can run \
                 commands",
                excerpt(index)
            ));
        }
    }

    pub(super) fn check_builtin_arguments(&mut self, words: &[ShellWord]) {
        let Some(program) = words.first().and_then(ShellWord::as_literal) else {
            return;
        };
        if !EVALUATING_BUILTINS.contains(&program) {
            return;
        }
        for word in &words[1..] {
            if word.carries_code {
                self.opaque(format!(
                    "the argument `{}` of `{program}` holds substitution syntax, which this \
                     builtin may evaluate",
                    excerpt(&word.text)
                ));
            }
            if program == "let" {
                self.arithmetic(&word.text);
            }
            if DECLARING_BUILTINS.contains(&program)
                && let Some((name, _)) = word.text.split_once('=')
            {
                let name = name.trim_end_matches('+');
                if is_sensitive_variable(name) {
                    self.opaque(format!(
                        "it sets {name}, which changes what the commands run"
                    ));
                }
            }
        }
    }
}
