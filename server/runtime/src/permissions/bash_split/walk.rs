//! The walk over a parsed command line: every construct that can run a program is visited,
//! and every simple command found is recorded with its redirections and wrappers.

use std::borrow::Cow;

use brush_parser::ast::{self, IoFileRedirectKind, IoFileRedirectTarget, IoRedirect};
use brush_parser::{Parser, ParserOptions};

use super::limits::{MAX_LINE_BYTES, MAX_NESTING, nesting_estimate};
use super::wrappers::{self, Unwrap};
use super::{Assignment, Redirect, RedirectKind, ShellWord, SimpleCommand, SplitCommand};

/// Collects the simple commands of a line and the reasons parts of it are opaque.
#[derive(Default)]
pub(super) struct Walker {
    commands: Vec<SimpleCommand>,
    pub(super) opaque: Vec<String>,
    /// Wrapper invocations around the line being walked (set while walking `sh -c` strings).
    outer: Vec<Vec<ShellWord>>,
    /// How many lines (substitutions, `sh -c` strings) enclose the one being walked.
    depth: usize,
}

pub(super) fn parser_options() -> ParserOptions {
    ParserOptions::default()
}

/// Runs the third-party parser so that a panic inside it (it parses text a model chose)
/// makes the line opaque instead of failing the turn.
pub(super) fn guarded<T>(parse: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(parse)).ok()
}

impl Walker {
    pub(super) fn finish(mut self) -> SplitCommand {
        self.opaque.dedup();
        SplitCommand {
            commands: self.commands,
            opaque: self.opaque,
        }
    }

    pub(super) fn opaque(&mut self, reason: String) {
        self.opaque.push(reason);
    }

    /// Parses and walks one command line: the input, a command substitution's body, or the
    /// string given to `sh -c` / `eval`.
    pub(super) fn line(&mut self, line: &str) {
        if line.len() > MAX_LINE_BYTES {
            self.opaque(format!(
                "the command line is longer than {MAX_LINE_BYTES} bytes and was not checked"
            ));
            return;
        }
        if self.depth + nesting_estimate(line) > MAX_NESTING {
            self.opaque(format!(
                "the command line nests more than {MAX_NESTING} levels deep and was not checked"
            ));
            return;
        }
        if self.too_deep_to_parse("command line", line) {
            return;
        }
        // The parser's tokenizer loops forever, allocating, when its input ends inside a
        // here-document with an empty delimiter (`echo $(<<- ""`); given a final newline,
        // it reports the unterminated here-document. The newline changes nothing bash runs.
        let terminated = if line.ends_with('\n') {
            Cow::Borrowed(line)
        } else {
            Cow::Owned(format!("{line}\n"))
        };
        let parsed = guarded(|| {
            Parser::new(
                std::io::Cursor::new(terminated.as_bytes()),
                &parser_options(),
            )
            .parse_program()
        });
        match parsed {
            None => self.opaque(format!("`{}` could not be parsed", excerpt(line))),
            Some(Ok(program)) => {
                self.depth += 1;
                for list in &program.complete_commands {
                    self.compound_list(list);
                }
                self.depth -= 1;
            }
            Some(Err(e)) => self.opaque(format!("`{}` does not parse: {e}", excerpt(line))),
        }
    }

    fn compound_list(&mut self, list: &ast::CompoundList) {
        for item in &list.0 {
            self.and_or(&item.0);
        }
    }

    fn and_or(&mut self, list: &ast::AndOrList) {
        self.pipeline(&list.first);
        for next in &list.additional {
            match next {
                ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p),
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline) {
        for command in &pipeline.seq {
            self.command(command);
        }
    }

    fn command(&mut self, command: &ast::Command) {
        match command {
            ast::Command::Simple(simple) => self.simple(simple),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound);
                self.redirect_list(redirects.as_ref());
            }
            ast::Command::Function(function) => {
                // Defining a function runs nothing, but a later call runs its body.
                self.compound(&function.body.0);
                self.redirect_list(function.body.1.as_ref());
            }
            ast::Command::ExtendedTest(test, redirects) => {
                self.extended_test(&test.expr);
                self.redirect_list(redirects.as_ref());
            }
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand) {
        use ast::CompoundCommand as C;
        match compound {
            C::Arithmetic(a) => self.arithmetic(&a.expr.value),
            C::ArithmeticForClause(a) => {
                for expr in [&a.initializer, &a.condition, &a.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(&expr.value);
                }
                self.compound_list(&a.body.list);
            }
            C::BraceGroup(b) => self.compound_list(&b.list),
            C::Subshell(s) => self.compound_list(&s.list),
            C::ForClause(f) => {
                for value in f.values.iter().flatten() {
                    self.word(&value.value);
                }
                self.compound_list(&f.body.list);
            }
            C::CaseClause(c) => {
                self.word(&c.value.value);
                for case in &c.cases {
                    for pattern in &case.patterns {
                        self.word(&pattern.value);
                    }
                    if let Some(list) = &case.cmd {
                        self.compound_list(list);
                    }
                }
            }
            C::IfClause(i) => {
                self.compound_list(&i.condition);
                self.compound_list(&i.then);
                for other in i.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.compound_list(condition);
                    }
                    self.compound_list(&other.body);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.compound_list(&w.0);
                self.compound_list(&w.1.list);
            }
            C::Coprocess(c) => self.command(&c.body),
        }
    }

    fn redirect_list(&mut self, list: Option<&ast::RedirectList>) {
        let Some(list) = list else { return };
        let mut redirects = Vec::new();
        for redirect in &list.0 {
            self.redirect(redirect, &mut redirects);
        }
        if !redirects.is_empty() {
            self.commands.push(SimpleCommand {
                redirects,
                wrapped_by: self.outer.clone(),
                ..SimpleCommand::default()
            });
        }
    }

    fn redirect(&mut self, redirect: &IoRedirect, out: &mut Vec<Redirect>) {
        match redirect {
            IoRedirect::File(_, kind, target) => {
                let kind = match kind {
                    IoFileRedirectKind::Read | IoFileRedirectKind::DuplicateInput => {
                        RedirectKind::Read
                    }
                    IoFileRedirectKind::Write
                    | IoFileRedirectKind::Append
                    | IoFileRedirectKind::ReadAndWrite
                    | IoFileRedirectKind::Clobber
                    | IoFileRedirectKind::DuplicateOutput => RedirectKind::Write,
                };
                match target {
                    IoFileRedirectTarget::Filename(word) => {
                        let target = self.word(&word.value);
                        out.push(Redirect { kind, target });
                    }
                    IoFileRedirectTarget::Fd(_) => {}
                    IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                        self.compound_list(&subshell.list);
                    }
                    IoFileRedirectTarget::Duplicate(word) => {
                        // `2>&1` and `>&-` name descriptors; `>& file` names a file.
                        let target = self.word(&word.value);
                        if !target.as_literal().is_some_and(is_descriptor) {
                            out.push(Redirect { kind, target });
                        }
                    }
                }
            }
            IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    self.heredoc(&doc.doc.value);
                }
            }
            IoRedirect::HereString(_, word) => {
                self.word(&word.value);
            }
            IoRedirect::OutputAndError(word, _) => {
                let target = self.word(&word.value);
                out.push(Redirect {
                    kind: RedirectKind::Write,
                    target,
                });
            }
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand) {
        use ast::CommandPrefixOrSuffixItem as Item;
        let mut command = SimpleCommand {
            wrapped_by: self.outer.clone(),
            ..SimpleCommand::default()
        };
        for item in simple.prefix.iter().flat_map(|p| p.0.iter()) {
            match item {
                Item::AssignmentWord(assignment, _) => {
                    let assignment = self.assignment(assignment);
                    command.assignments.push(assignment);
                }
                Item::Word(word) => command.words.push(self.word(&word.value)),
                Item::IoRedirect(r) => self.redirect(r, &mut command.redirects),
                Item::ProcessSubstitution(_, s) => self.compound_list(&s.list),
            }
        }
        if let Some(name) = &simple.word_or_name {
            command.words.push(self.word(&name.value));
        }
        for item in simple.suffix.iter().flat_map(|s| s.0.iter()) {
            match item {
                // `export X=1`: an argument of a declaration builtin.
                Item::AssignmentWord(_, word) | Item::Word(word) => {
                    command.words.push(self.word(&word.value));
                }
                Item::IoRedirect(r) => self.redirect(r, &mut command.redirects),
                Item::ProcessSubstitution(_, s) => self.compound_list(&s.list),
            }
        }
        self.emit(command);
    }

    fn assignment(&mut self, assignment: &ast::Assignment) -> Assignment {
        let name = match &assignment.name {
            ast::AssignmentName::VariableName(name) => name.clone(),
            ast::AssignmentName::ArrayElementName(name, index) => {
                self.subscript(name, index);
                name.clone()
            }
        };
        let value = match &assignment.value {
            ast::AssignmentValue::Scalar(word) => self.word(&word.value),
            ast::AssignmentValue::Array(items) => {
                for (index, value) in items {
                    if let Some(index) = index {
                        self.word(&index.value);
                    }
                    self.word(&value.value);
                }
                ShellWord {
                    text: "(…)".to_owned(),
                    dynamic: true,
                    carries_code: false,
                }
            }
        };
        self.check_assignment(&name, &value);
        Assignment { name, value }
    }

    /// Records a simple command, unwrapping wrappers (`sudo`, `sh -c`, `xargs`, ...) so the
    /// program that finally runs is what the rules see.
    fn emit(&mut self, mut command: SimpleCommand) {
        self.check_builtin_arguments(&command.words);
        loop {
            match wrappers::unwrap(&command.words) {
                Unwrap::Program => break,
                Unwrap::Runs {
                    assignments,
                    command: inner,
                    open_ended,
                } => {
                    for a in &assignments {
                        self.check_assignment(&a.name, &a.value);
                    }
                    command.assignments.extend(assignments);
                    command.open_ended |= open_ended;
                    let outer = std::mem::replace(&mut command.words, inner);
                    command.wrapped_by.push(outer);
                    self.check_builtin_arguments(&command.words);
                }
                Unwrap::Script(script) => {
                    let outer = std::mem::take(&mut command.words);
                    command.wrapped_by.push(outer);
                    self.script(&script, &command.wrapped_by);
                    // What is left is the wrapper's own assignments and redirections.
                    if !command.assignments.is_empty() || !command.redirects.is_empty() {
                        self.commands.push(command);
                    }
                    return;
                }
                Unwrap::AlsoRuns(inner) => {
                    let mut wrapped_by = command.wrapped_by.clone();
                    wrapped_by.push(command.words.clone());
                    self.record(command);
                    for (words, open_ended) in inner {
                        self.depth += 1;
                        if self.depth > MAX_NESTING {
                            self.opaque("commands nest too deeply to be checked".to_owned());
                        } else {
                            self.emit(SimpleCommand {
                                words,
                                wrapped_by: wrapped_by.clone(),
                                open_ended,
                                ..SimpleCommand::default()
                            });
                        }
                        self.depth -= 1;
                    }
                    return;
                }
                Unwrap::Opaque(reason) => {
                    self.opaque(reason);
                    break;
                }
            }
        }
        self.record(command);
    }

    /// Adds a command to the result; a program only known at run time makes it opaque.
    fn record(&mut self, command: SimpleCommand) {
        if let Some(program) = command.words.first().filter(|w| w.dynamic) {
            self.opaque(format!(
                "the program `{}` is only known at run time",
                program.text
            ));
        }
        self.commands.push(command);
    }

    /// Walks a command line held in a word (`sh -c STRING`, `eval ARGS`, `trap STRING`).
    fn script(&mut self, script: &ShellWord, wrapped_by: &[Vec<ShellWord>]) {
        let Some(text) = script.as_literal() else {
            self.opaque(format!(
                "the command line `{}` is only known at run time",
                script.text
            ));
            return;
        };
        let saved = std::mem::replace(&mut self.outer, wrapped_by.to_vec());
        self.line(text);
        self.outer = saved;
    }
}

/// `1`, `-`, `2-`: what `>&` duplicates or closes rather than a file name.
fn is_descriptor(text: &str) -> bool {
    let digits = text.strip_suffix('-').unwrap_or(text);
    text == "-" || (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
}

/// The start of a long text, for messages.
pub(super) fn excerpt(text: &str) -> String {
    const MAX: usize = 80;
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
