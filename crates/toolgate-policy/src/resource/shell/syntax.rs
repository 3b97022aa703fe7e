//! Walking the tree-sitter-bash syntax tree into simple commands, words and findings.

use std::cell::RefCell;
use std::path::PathBuf;

use tree_sitter::{Node, Parser, Tree};

use super::programs::{self, basename};
use super::registry::UseKind;
use super::{
    Analysis, CommandPath, CommandUrl, Finding, FindingKind, MAX_COMMAND_BYTES, MAX_DEPTH,
    MAX_SIMPLE_COMMANDS, Open, PathRole, SimpleCommand, Word,
};
use crate::decision::Access;
use crate::resource::glob::{self, Expansion};

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn parse(line: &str) -> Option<Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(line, None)
    })
}

/// The characters the grammar's external scanner would classify with C's `isdigit` although they
/// lie beyond U+00FF: the first character after `{`, digits, and optionally `..` and digits (its
/// brace-range lookahead). glibc's table covers -128..=255 only, so such a character reads far past
/// it — undefined behaviour that crashes the process for some code points (tree-sitter-bash#337,
/// found by `tests/fuzz.rs`). Returns each one's byte range.
fn brace_hazards(line: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = line.as_bytes();
    let wide = |at: usize| {
        line.get(at..)
            .and_then(|rest| rest.chars().next())
            .filter(|c| u32::from(*c) > 0xFF)
            .map(|c| at..at + c.len_utf8())
    };
    let digits = |mut at: usize| {
        while bytes.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        at
    };
    line.match_indices('{')
        .filter_map(|(open, _)| {
            let after = digits(open + 1);
            wide(after).or_else(|| {
                (bytes.get(after..after + 2) == Some(b"..".as_slice()))
                    .then(|| wide(digits(after + 2)))
                    .flatten()
            })
        })
        .collect()
}

fn finding(kind: FindingKind, detail: impl Into<String>) -> Finding {
    Finding {
        kind,
        detail: detail.into(),
    }
}

/// Targets a redirection may name without being a file the command writes.
const HARMLESS_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/stdin",
    "/dev/tty",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
];

/// Where a line runs, when the analysis may look at the file system: bash expands an unquoted
/// glob (`cat tests/*.py`) to the names it matches there.
#[derive(Clone, Debug)]
pub(crate) struct Here {
    pub(crate) cwd: PathBuf,
    pub(crate) home: Option<PathBuf>,
}

/// The most names one glob of a command line is expanded to; more asks.
const MAX_GLOB_NAMES: usize = 1_000;

pub(crate) fn analyze_line(line: &str, depth: usize, here: Option<&Here>) -> Analysis {
    // A backslash at a line's end joins the lines (`find . -del\⏎ete` runs `-delete`), which
    // the grammar reads as a break between words. Joined here where nothing else can read it
    // otherwise; with quotes, comments or here-documents (where it is kept, or ends nothing),
    // it asks.
    if line.contains("\\\n") {
        if line.contains(['\'', '#']) || line.contains("<<") {
            let mut out = analyze_joined(line, depth, here);
            out.findings.push(finding(
                FindingKind::Unsupported,
                "a line continuation (`\\` at a line's end) next to quotes, a comment or a \
                 here-document",
            ));
            return out;
        }
        return analyze_joined(&join_continuations(line), depth, here);
    }
    analyze_joined(line, depth, here)
}

/// `line` with each backslash-newline removed: a backslash that is itself escaped (`\\⏎`) ends
/// nothing and stays with its newline.
fn join_continuations(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\n') => {}
            Some(next) => {
                out.push(c);
                out.push(next);
            }
            None => out.push(c),
        }
    }
    out
}

fn analyze_joined(line: &str, depth: usize, here: Option<&Here>) -> Analysis {
    let mut walker = Walker {
        src: line,
        out: Analysis::default(),
        cwd: None,
        cd_sure: false,
        cd_unsure: false,
        depth,
        substitutions: 0,
        here: here.cloned(),
        deferring: None,
        splits: false,
    };
    walker.line(line);
    walker.finish()
}

pub(crate) fn analyze_argv(argv: &[String], here: Option<&Here>) -> Analysis {
    let mut walker = Walker {
        src: "",
        out: Analysis::default(),
        cwd: None,
        cd_sure: false,
        cd_unsure: false,
        depth: 0,
        substitutions: 0,
        here: here.cloned(),
        deferring: None,
        splits: false,
    };
    let words: Vec<Word> = argv.iter().map(|a| Word::literal(a)).collect();
    let text = argv.join(" ");
    walker.simple_command(text, words, Vec::new());
    walker.finish()
}

struct Walker<'s> {
    src: &'s str,
    out: Analysis,
    /// The folder commands run in after the `cd`s seen so far, relative to the call's.
    cwd: Option<String>,
    /// Whether the last `cd` seen is known to have worked when anything after it runs: it was
    /// followed by `|| exit` (bash leaves the script when it fails).
    cd_sure: bool,
    /// Whether the folder may have changed or not, whatever follows: a `cd` after `||`, under
    /// `!`, in a condition, loop or function body. Anything after it asks.
    cd_unsure: bool,
    /// How deep in `sh -c` strings this line is.
    depth: usize,
    /// How many command substitutions the walk is inside (each costs several stack frames, so
    /// they are bounded on their own: a few hundred nested `$(` overflowed a 2 MiB stack).
    substitutions: usize,
    /// Where the line runs, when globs may be expanded.
    here: Option<Here>,
    /// Findings about the argument being read, held until the program reading it says whether
    /// its value matters ([`Walker::argument`]).
    deferring: Option<Vec<Finding>>,
    /// Whether the word being read has an expansion outside double quotes.
    splits: bool,
}

impl<'s> Walker<'s> {
    fn line(&mut self, line: &'s str) {
        if line.len() > MAX_COMMAND_BYTES {
            self.out.findings.push(finding(
                FindingKind::TooLong,
                format!(
                    "the command is {} bytes, more than toolgate analyses",
                    line.len()
                ),
            ));
            return;
        }
        if let Some((i, c)) = line
            .char_indices()
            .find(|(_, c)| c.is_control() && *c != '\t' && *c != '\n')
        {
            self.out.findings.push(finding(
                FindingKind::ControlCharacter,
                format!("control character U+{:04X} at byte {i}", u32::from(c)),
            ));
        }
        if self.depth > MAX_DEPTH {
            self.out.findings.push(finding(
                FindingKind::TooDeep,
                "shell strings nested too deeply",
            ));
            return;
        }
        let hazards = brace_hazards(line);
        // The grammar parses a copy with each hazard replaced by as many `x` bytes, so byte ranges
        // still index the original and deny rules still see the commands; the finding keeps the
        // line from ever being allowed on that approximate reading.
        let stand_in = hazards.first().map(|first| {
            self.out.findings.push(finding(
                FindingKind::ParseError,
                format!(
                    "a character beyond U+00FF after `{{` at byte {}: the bash grammar reads out \
                     of bounds there (tree-sitter-bash#337), so toolgate reads a stand-in",
                    first.start
                ),
            ));
            let mut copy = line.to_owned();
            for range in hazards.iter().rev() {
                copy.replace_range(range.clone(), &"x".repeat(range.len()));
            }
            copy
        });
        let Some(tree) = parse(stand_in.as_deref().unwrap_or(line)) else {
            self.out.findings.push(finding(
                FindingKind::ParseError,
                "the command could not be parsed",
            ));
            return;
        };
        let root = tree.root_node();
        if root.has_error() {
            let detail = first_error(root)
                .map(|n| {
                    format!(
                        "the bash grammar does not parse `{}`",
                        excerpt(self.text(n))
                    )
                })
                .unwrap_or_else(|| "the bash grammar does not parse the command".into());
            self.out
                .findings
                .push(finding(FindingKind::ParseError, detail));
        }
        self.statement(root, 0);
    }

    fn finish(mut self) -> Analysis {
        if self.out.commands.len() > MAX_SIMPLE_COMMANDS {
            self.out.findings.push(finding(
                FindingKind::TooMany,
                format!(
                    "{} simple commands, more than the {MAX_SIMPLE_COMMANDS} toolgate lets through without a human",
                    self.out.commands.len()
                ),
            ));
        }
        // A symbolic link made on the line changes where the paths after it lead, which were
        // resolved before it existed (`ln -s / r && cat r/home/me/.ssh/id_rsa`).
        let links = self
            .out
            .commands
            .iter()
            .position(|c| c.reading.as_ref().is_some_and(|r| r.makes_links));
        if links.is_some_and(|at| at + 1 < self.out.commands.len()) {
            self.out.findings.push(finding(
                FindingKind::DynamicArguments,
                "a symbolic link made on this line changes where the paths after it lead",
            ));
        }
        // A program that runs code (a test runner, a build, an interpreter, a hook runner), after
        // a command on the same line wrote a file: what it runs may be what was just written
        // (`cat >> tests/conftest.py <<EOF … EOF; pytest`), which no one has seen.
        let mut findings = Vec::new();
        for (i, command) in self.out.commands.iter().enumerate() {
            let runs = command
                .reading
                .as_ref()
                .is_none_or(|r| r.kind.is_none_or(|k| k == "runs"));
            if !runs {
                continue;
            }
            // Files: not what git checks out (the repository's own), nor what a delete takes
            // away, nor scratch files (logs, a binary built to run).
            let planted = |p: &&CommandPath| {
                p.command < i
                    && p.access == Access::Write
                    && !["/tmp/", "/var/tmp/", "/dev/", "/private/tmp/"]
                        .iter()
                        .any(|s| p.text.starts_with(s))
                    && !self.out.commands.get(p.command).is_some_and(|c| {
                        matches!(
                            c.program().map(basename),
                            Some("git" | "rm" | "rmdir" | "unlink")
                        )
                    })
            };
            if let Some(written) = self.out.paths.iter().find(planted) {
                findings.push(finding(
                    FindingKind::Unsupported,
                    format!(
                        "`{}` runs code after `{}` was written on the same line: what it runs may be what was written",
                        excerpt(command.program().unwrap_or_default()),
                        excerpt(&written.text)
                    ),
                ));
            }
        }
        if let Some(f) = findings.into_iter().next() {
            self.out.findings.push(f);
        }
        self.out
    }

    fn text(&self, node: Node<'_>) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    fn line_finding(&mut self, kind: FindingKind, detail: impl Into<String>) {
        self.out.findings.push(finding(kind, detail));
    }

    fn statement(&mut self, node: Node<'_>, level: usize) {
        if level > MAX_DEPTH * 4 {
            self.line_finding(FindingKind::TooDeep, "the command is nested too deeply");
            return;
        }
        match node.kind() {
            // A `cd` in a subshell stays there; each command of a pipeline is a subshell.
            "subshell" => {
                let outside = self.folder();
                self.children(node, level);
                self.restore(outside);
            }
            "pipeline" => {
                let outside = self.folder();
                for child in named_children(node) {
                    if is_statement(child.kind()) {
                        self.statement(child, level + 1);
                    } else {
                        self.expression(child, level, "the command");
                    }
                    self.restore(outside.clone());
                }
            }
            "program" | "list" | "do_group" | "else_clause" | "elif_clause" | "ERROR" => {
                self.children(node, level);
            }
            // `! cd x && …` goes on when the `cd` failed.
            "negated_command" => self.negated(node, level),
            "compound_statement" => {
                if node.child(0).is_some_and(|c| c.kind() == "((") {
                    self.line_finding(FindingKind::Substitution, "arithmetic evaluation `(( … ))`");
                    self.scan(node, level, None);
                } else {
                    self.children(node, level);
                }
            }
            "redirected_statement" => self.redirected(node, level),
            "command" => self.command(node, level),
            "declaration_command" | "unset_command" => self.declaration(node, level),
            "variable_assignment" => self.assignment(node, level, None),
            "variable_assignments" => {
                for child in named_children(node) {
                    self.assignment(child, level, None);
                }
            }
            "if_statement"
            | "while_statement"
            | "for_statement"
            | "case_statement"
            | "case_item"
            | "function_definition" => self.body(node, level),
            "c_style_for_statement" => {
                self.line_finding(FindingKind::Substitution, "arithmetic `for (( … ))` loop");
                self.scan(node, level, None);
                let before = self.cwd.clone();
                for child in named_children(node) {
                    if is_statement(child.kind()) {
                        let entered = self.cwd.clone();
                        self.statement(child, level + 1);
                        if self.cwd != entered {
                            self.unsure_cd_finding();
                        }
                    }
                }
                self.unsure_after(&before);
            }
            "test_command" => self.test(node, level),
            "comment" | "heredoc_body" | "heredoc_start" | "heredoc_end" => {}
            kind => {
                self.line_finding(
                    FindingKind::Unsupported,
                    format!("the shell construct `{kind}`"),
                );
                self.scan(node, level, None);
            }
        }
    }

    fn children(&mut self, node: Node<'_>, level: usize) {
        for child in named_children(node) {
            let before = self.folder();
            if is_statement(child.kind()) {
                self.statement(child, level + 1);
            } else {
                self.expression(child, level, "the command");
            }
            if self.cwd != before.0 {
                self.after_cd(node, child, before);
            }
        }
    }

    /// After `child` of `parent` (a list) changed the folder (`before` is where it was). Only
    /// then are its siblings looked at (collected: indexing a child is linear). Kept out of
    /// [`Walker::children`] and [`Walker::statement`], which recurse: their frames bound how
    /// deep a line nests on a worker's stack.
    #[inline(never)]
    fn after_cd(
        &mut self,
        parent: Node<'_>,
        child: Node<'_>,
        before: (Option<String>, bool, bool),
    ) {
        let mut cursor = parent.walk();
        let all: Vec<Node<'_>> = parent.children(&mut cursor).collect();
        let Some(i) = all.iter().position(|n| *n == child) else {
            return;
        };
        // A `cd` ran in this command. Sent to the background (`&`) it changes nothing
        // here; after `||` it runs only when what came before failed; followed by `;`, a
        // line's end or `||`, what comes next runs whether it worked or not, in a folder
        // toolgate cannot tell.
        let src = self.src;
        let operator = |at: Option<usize>| {
            at.and_then(|at| all.get(at))
                .filter(|n| !n.is_named())
                .and_then(|n| src.get(n.byte_range()))
        };
        if operator(i.checked_sub(1)) == Some("||") {
            self.cd_unsure = true;
        }
        let next = operator(Some(i + 1));
        let more = all
            .iter()
            .skip(i + 1)
            .any(|n| n.is_named() && n.kind() != "comment");
        match next {
            Some("&") => self.restore(before),
            _ if self.cd_unsure && more => self.unsure_cd_finding(),
            Some("&&") => {}
            Some("||") if all.get(i + 2).is_some_and(|n| self.leaves(*n)) => {
                self.cd_sure = true;
            }
            // The child was `cd DIR || exit` (or ended with one): nothing after it runs
            // unless the `cd` worked.
            _ if self.cd_sure => {}
            _ if more => self.unsure_cd_finding(),
            _ => {}
        }
    }

    /// What a construct's head says before its body runs: a function's name, and the variable
    /// a `for` loop assigns (`for HOME in ~/.aws; do …` assigns `HOME`, as `HOME=…` does). Kept
    /// out of [`Walker::body`], whose frame is on the stack once per level of nesting.
    #[inline(never)]
    fn header(&mut self, node: Node<'_>) {
        if node.kind() == "function_definition" {
            self.function_name(node);
            return;
        }
        if node.kind() != "for_statement" {
            return;
        }
        if let Some(variable) = node.child_by_field_name("variable") {
            let mut findings = Vec::new();
            programs::check_assignment(self.text(variable), None, &mut findings);
            for f in findings {
                self.line_finding(f.kind, f.detail);
            }
        }
    }

    /// A condition, loop, `case` or function: its statements, each of which may not run.
    #[inline(never)]
    fn body(&mut self, node: Node<'_>, level: usize) {
        self.header(node);
        let before = self.cwd.clone();
        let mut statements = named_children(node)
            .filter(|c| c.kind() != "comment")
            .peekable();
        while let Some(child) = statements.next() {
            let entered = self.cwd.clone();
            if is_statement(child.kind()) {
                self.statement(child, level + 1);
            } else {
                self.expression(child, level, "a loop or condition");
            }
            // `if cd x; then …; else …; fi`, `until cd x; do …; done`: what follows a `cd`
            // here may run whether it worked or not.
            if self.cwd != entered && statements.peek().is_some() {
                self.unsure_cd_finding();
            }
        }
        self.unsure_after(&before);
    }

    /// `! …`: it goes on when a `cd` in it failed (`! cd x && …`).
    #[inline(never)]
    fn negated(&mut self, node: Node<'_>, level: usize) {
        let before = self.cwd.clone();
        self.children(node, level);
        self.unsure_after(&before);
    }

    /// A condition, loop or function body may not run (or may run its `cd` more than once),
    /// and `!` goes on when a `cd` fails: whether the folder changed is not known after it.
    fn unsure_after(&mut self, before: &Option<String>) {
        if self.cwd != *before {
            self.cd_sure = false;
            self.cd_unsure = true;
        }
    }

    fn unsure_cd_finding(&mut self) {
        self.line_finding(
            FindingKind::DynamicArguments,
            "a `cd` that may not work is followed by more commands (chain them with `&&`): \
             which folder those run in depends on it",
        );
    }

    /// Where commands run, and what is known of the last `cd`.
    fn folder(&self) -> (Option<String>, bool, bool) {
        (self.cwd.clone(), self.cd_sure, self.cd_unsure)
    }

    fn restore(&mut self, (cwd, sure, unsure): (Option<String>, bool, bool)) {
        self.cwd = cwd;
        self.cd_sure = sure;
        self.cd_unsure = unsure;
    }

    /// A function named after a builtin the analysis gives meaning to (`cd() { :; }`) makes
    /// the line mean something else than it reads.
    fn function_name(&mut self, node: Node<'_>) {
        let name = node
            .child_by_field_name("name")
            .map(|n| self.text(n))
            .unwrap_or_default();
        let unquoted = name.trim_matches(['\'', '"']).replace('\\', "");
        if matches!(
            unquoted.as_str(),
            "cd" | "pushd" | "popd" | "exit" | "builtin" | "command" | "source" | "."
        ) {
            self.line_finding(
                FindingKind::Unsupported,
                format!(
                    "a function named `{}` replaces the shell's own",
                    excerpt(name)
                ),
            );
        }
    }

    /// Whether `node` always leaves the script: a bare `exit` (with a literal status, or none),
    /// or a `{ …; }` group whose last command is one. (`return` is not: outside a function
    /// bash reports an error and goes on.)
    fn leaves(&self, node: Node<'_>) -> bool {
        // A loop, not recursion: groups nest as deep as the line is long.
        let mut node = node;
        loop {
            match node.kind() {
                "command" => {
                    let text = self.text(node);
                    let mut words = text.split_ascii_whitespace();
                    return words.next() == Some("exit")
                        && words
                            .next()
                            .is_none_or(|status| status.bytes().all(|b| b.is_ascii_digit()))
                        && words.next().is_none();
                }
                "compound_statement" => {
                    match named_children(node)
                        .filter(|c| c.kind() != "comment")
                        .last()
                    {
                        // `{ exit 1 & }` leaves in the background: the script goes on.
                        Some(last)
                            if last
                                .next_sibling()
                                .is_some_and(|n| !n.is_named() && self.text(n) == "&") =>
                        {
                            return false;
                        }
                        Some(last) => node = last,
                        None => return false,
                    }
                }
                _ => return false,
            }
        }
    }

    /// A non-statement node in statement position (a loop's word list, a case value, …).
    fn expression(&mut self, node: Node<'_>, level: usize, place: &str) {
        match node.kind() {
            "variable_name" | "word" | "number" | "string" | "raw_string" | "comment" => {
                self.scan(node, level, None);
            }
            "simple_expansion" | "expansion" | "concatenation" => {
                self.scan(node, level, None);
            }
            "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                let command = self.out.commands.len().checked_sub(1);
                self.redirect(node, level, command, false);
            }
            _ => {
                self.scan(node, level, None);
                let _ = place;
            }
        }
    }

    fn redirected(&mut self, node: Node<'_>, level: usize) {
        let start = self.out.commands.len();
        let body = node.child_by_field_name("body");
        if let Some(body) = body {
            self.statement(body, level + 1);
        }
        // `a && b > f` redirects `b`: the redirection belongs to the last command of its body.
        let command = (self.out.commands.len() > start).then(|| self.out.commands.len() - 1);
        let feeds = named_children(node)
            .any(|c| matches!(c.kind(), "heredoc_redirect" | "herestring_redirect"));
        let interpreter = feeds
            && command
                .and_then(|i| self.out.commands.get(i))
                .is_some_and(|c| programs::reads_program_from_stdin(&c.argv));
        for child in named_children(node) {
            if Some(child) == body {
                continue;
            }
            self.redirect(child, level, command, interpreter);
        }
    }

    /// A here-document with a quoted delimiter (nothing in it expands) feeding Python or Node
    /// program text (`python - <<'PY'`) that toolgate reads through: the files it opens by name
    /// are reads of the command. Text that reaches further is reported with what it reaches.
    /// Kept out of [`Walker::redirect`], whose frame is on the stack once per level of nesting.
    #[inline(never)]
    fn program_text_seen(&mut self, node: Node<'_>, command: Option<usize>) -> bool {
        use super::registry::code::program_text::{self, Lang};
        if node.kind() != "heredoc_redirect" {
            return false;
        }
        let Some(index) = command else { return false };
        let lang = match self
            .out
            .commands
            .get(index)
            .and_then(SimpleCommand::program)
            .map(basename)
        {
            Some(n) if n.starts_with("python") => Lang::Python,
            Some("node" | "nodejs" | "tsx" | "bun" | "deno") => Lang::JavaScript,
            _ => return false,
        };
        let children: Vec<Node<'_>> = named_children(node).collect();
        let quoted = children
            .iter()
            .find(|c| c.kind() == "heredoc_start")
            .is_some_and(|c| self.text(*c).contains(['\'', '"', '\\']));
        let Some(body) = children.iter().find(|c| c.kind() == "heredoc_body") else {
            return false;
        };
        if !quoted {
            return false;
        }
        let reading = program_text::read(self.text(*body), lang);
        if let Some(why) = reading.risk {
            self.command_finding(
                command,
                finding(
                    FindingKind::HeredocInterpreter,
                    format!("a here-document feeds a program to an interpreter: {why}"),
                ),
            );
            return true;
        }
        // The program it reads from its input is this text, now read.
        if let Some(c) = self.out.commands.get_mut(index) {
            c.findings.retain(|f| {
                !(f.kind == FindingKind::Eval
                    && f.detail.ends_with("reads a program from its input"))
            });
        }
        for file in reading.reads {
            self.out.paths.push(CommandPath {
                text: file,
                access: Access::Read,
                role: PathRole::Read,
                command: index,
                cwd: self.cwd.clone(),
                origin: "a file its program text opens".into(),
                pattern: false,
            });
        }
        true
    }

    fn redirect(
        &mut self,
        node: Node<'_>,
        level: usize,
        command: Option<usize>,
        interpreter: bool,
    ) {
        match node.kind() {
            "file_redirect" => self.file_redirect(node, level, command),
            "heredoc_redirect" | "herestring_redirect" => {
                if interpreter && !self.program_text_seen(node, command) {
                    self.command_finding(
                        command,
                        finding(
                            FindingKind::HeredocInterpreter,
                            "a here-document or here-string feeds a program to an interpreter",
                        ),
                    );
                }
                // In a here-document whose delimiter is not quoted, backticks run a command,
                // and the grammar does not parse them there: any backtick asks.
                let children: Vec<Node<'_>> = named_children(node).collect();
                // What a here-string or a here-document whose delimiter is not quoted feeds
                // the command is expanded first (`cat <<< $OPENAI_API_KEY`): a `$` asks, as
                // it does in an argument; and words after the here-document's delimiter are
                // the command's arguments, kept inside the redirection.
                let quoted_start = children
                    .iter()
                    .find(|c| c.kind() == "heredoc_start")
                    .is_some_and(|c| self.text(*c).contains(['\'', '"', '\\']));
                let expands = if node.kind() == "herestring_redirect" {
                    self.text(node).contains('$')
                } else {
                    !quoted_start
                        && children
                            .iter()
                            .any(|c| c.kind() == "heredoc_body" && self.text(*c).contains('$'))
                };
                if expands {
                    self.command_finding(
                        command,
                        finding(
                            FindingKind::DynamicArguments,
                            "what a here-string or here-document feeds the command depends on \
                             expansions (`$`)",
                        ),
                    );
                }
                if node.kind() == "heredoc_redirect"
                    && children.iter().any(|c| {
                        !matches!(
                            c.kind(),
                            "heredoc_start"
                                | "heredoc_body"
                                | "heredoc_end"
                                | "heredoc_content"
                                | "pipeline"
                                | "file_redirect"
                                | "heredoc_redirect"
                                | "herestring_redirect"
                                | "command"
                                | "list"
                        )
                    })
                {
                    self.command_finding(
                        command,
                        finding(
                            FindingKind::Unsupported,
                            "words after a here-document's delimiter are the command's \
                             arguments, which toolgate does not see there",
                        ),
                    );
                }
                let quoted = children
                    .iter()
                    .find(|c| c.kind() == "heredoc_start")
                    .is_some_and(|c| self.text(*c).contains(['\'', '"', '\\']));
                if node.kind() == "heredoc_redirect"
                    && !quoted
                    && children
                        .iter()
                        .any(|c| c.kind() == "heredoc_body" && self.text(*c).contains('`'))
                {
                    self.command_finding(
                        command,
                        finding(
                            FindingKind::Substitution,
                            "backticks in a here-document whose delimiter is not quoted",
                        ),
                    );
                }
                for child in children {
                    if is_statement(child.kind()) {
                        // tree-sitter puts `cat <<EOF | sh` as a pipeline inside the redirect.
                        self.statement(child, level + 1);
                    } else {
                        self.scan(child, level, command);
                    }
                }
            }
            _ => self.scan(node, level, command),
        }
    }

    fn file_redirect(&mut self, node: Node<'_>, level: usize, command: Option<usize>) {
        let operator = children(node)
            .find(|c| !c.is_named())
            .map(|c| self.text(c))
            .unwrap_or(">");
        let Some(destination) = node.child_by_field_name("destination") else {
            return;
        };
        // `cat < /dev/null config/.env`: the words after the target are the command's
        // arguments, which the grammar keeps inside the redirection.
        if node
            .children_by_field_name("destination", &mut node.walk())
            .nth(1)
            .is_some()
        {
            self.command_finding(
                command,
                finding(
                    FindingKind::Unsupported,
                    "words after a redirection's target are the command's arguments, which \
                     toolgate does not see there",
                ),
            );
        }
        let word = self.word(destination, level, command);
        if matches!(operator, ">&" | "<&" | ">&-" | "<&-")
            && word
                .value()
                .is_some_and(|v| v == "-" || v.chars().all(|c| c.is_ascii_digit()))
        {
            return;
        }
        let Some(target) = word.value else {
            self.command_finding(
                command,
                finding(
                    FindingKind::DynamicArguments,
                    format!(
                        "the redirection target `{}` depends on variables",
                        word.text
                    ),
                ),
            );
            return;
        };
        if HARMLESS_DEVICES.contains(&target.as_str()) {
            return;
        }
        let access = if operator == "<" {
            Access::Read
        } else {
            Access::Write
        };
        self.out.paths.push(CommandPath {
            text: target,
            access,
            role: PathRole::Redirect,
            command: command.unwrap_or(0),
            cwd: self.cwd.clone(),
            origin: format!("a redirection `{operator}`"),
            pattern: false,
        });
    }

    fn command_finding(&mut self, command: Option<usize>, f: Finding) {
        if let Some(held) = &mut self.deferring {
            return held.push(f);
        }
        match command.and_then(|i| self.out.commands.get_mut(i)) {
            Some(c) => c.findings.push(f),
            None => self.out.findings.push(f),
        }
    }

    fn test(&mut self, node: Node<'_>, level: usize) {
        let arithmetic = descendants(node).any(|n| {
            n.kind() == "test_operator"
                && matches!(self.text(n), "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge")
        });
        if arithmetic {
            self.line_finding(
                FindingKind::Substitution,
                "arithmetic comparison in `[[ … ]]` evaluates its operands",
            );
        }
        self.scan(node, level, None);
    }

    fn assignment(&mut self, node: Node<'_>, level: usize, command: Option<usize>) {
        let name = node
            .child_by_field_name("name")
            .map(|n| self.text(n))
            .unwrap_or("");
        let value = Some(
            node.child_by_field_name("value")
                .map_or("", |v| self.text(v)),
        );
        let mut findings = Vec::new();
        programs::check_assignment(name.split('[').next().unwrap_or(name), value, &mut findings);
        for f in findings {
            self.command_finding(command, f);
        }
        self.assigned_url(node, command);
        if let Some(value) = node.child_by_field_name("value") {
            self.scan(value, level, command);
        }
    }

    /// A URL given to a variable the command runs with (`DATABASE_URL=postgresql://db.internal/x
    /// alembic upgrade`, `export API=https://…`) is where the program connects: a URL of the
    /// command, as one among its arguments is.
    fn assigned_url(&mut self, assignment: Node<'_>, command: Option<usize>) {
        let Some(command) = command else { return };
        let name = assignment
            .child_by_field_name("name")
            .map_or("", |n| self.text(n));
        let Some(value) = assignment.child_by_field_name("value") else {
            return;
        };
        let text = self.text(value).trim_matches(|c| c == '"' || c == '\'');
        let Some((scheme, rest)) = text.split_once("://") else {
            return;
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let plain = !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if plain && !host.is_empty() && !text.contains(['$', '`']) {
            // A database URL's user and password are the program's to use, not a host in
            // disguise: the host is what follows them.
            let rest = rest.get(authority.len()..).unwrap_or("");
            self.out.urls.push(CommandUrl {
                text: format!("{scheme}://{host}{rest}"),
                command,
                fetched: true,
                origin: format!("the value of `{name}`"),
            });
        }
    }

    fn declaration(&mut self, node: Node<'_>, level: usize) {
        let mut words = Vec::new();
        if let Some(keyword) = node.child(0) {
            words.push(Word::literal(self.text(keyword)));
        }
        let index = self.out.commands.len();
        let mut assignments = Vec::new();
        for child in named_children(node) {
            if child.kind() == "variable_assignment" {
                assignments.push(child);
                words.push(Word::literal(self.text(child)));
            } else {
                words.push(self.word(child, level, None));
            }
        }
        let text = self.text(node).to_owned();
        self.simple_command(text, words, Vec::new());
        for a in assignments {
            self.assignment(a, level, Some(index));
        }
    }

    fn command(&mut self, node: Node<'_>, level: usize) {
        let index = self.out.commands.len();
        let mut words = Vec::new();
        let mut prefix = Vec::new();
        let mut redirects = Vec::new();
        let mut cursor = node.walk();
        let mut more = cursor.goto_first_child();
        while more {
            let child = cursor.node();
            let field = cursor.field_name();
            more = cursor.goto_next_sibling();
            if !child.is_named() {
                continue;
            }
            match (field, child.kind()) {
                (Some("name"), _) => words.push(self.word(child, level, Some(index))),
                (Some("redirect"), _)
                | (_, "file_redirect" | "heredoc_redirect" | "herestring_redirect") => {
                    redirects.push(child);
                }
                (_, "variable_assignment") => prefix.push(child),
                (_, "comment") => {}
                _ => self.push_argument(child, level, index, &mut words),
            }
        }
        let text = self.text(node).to_owned();
        let mut findings = Vec::new();
        for assignment in &prefix {
            let name = assignment
                .child_by_field_name("name")
                .map(|n| self.text(n))
                .unwrap_or("");
            let value = assignment
                .child_by_field_name("value")
                .map_or("", |v| self.text(v));
            programs::check_assignment(name, Some(value), &mut findings);
        }
        let created = self.simple_command(text, words, findings);
        for assignment in prefix {
            if let Some(value) = assignment.child_by_field_name("value") {
                self.assigned_url(assignment, created);
                self.scan(value, level, created);
            }
        }
        let feeds = redirects
            .iter()
            .any(|r| matches!(r.kind(), "heredoc_redirect" | "herestring_redirect"));
        let interpreter = feeds
            && created
                .and_then(|i| self.out.commands.get(i))
                .is_some_and(|c| programs::reads_program_from_stdin(&c.argv));
        for r in redirects {
            self.redirect(r, level, created, interpreter);
        }
    }

    /// Records one simple command (after unwrapping). Returns its index, if one was recorded.
    fn simple_command(
        &mut self,
        text: String,
        words: Vec<Word>,
        mut findings: Vec<Finding>,
    ) -> Option<usize> {
        if words.is_empty() {
            // Only assignments or redirections: nothing runs.
            for f in findings {
                self.out.findings.push(f);
            }
            return None;
        }
        if words.first().is_some_and(|w| w.value.is_none()) {
            findings.push(finding(
                FindingKind::DynamicCommand,
                format!(
                    "the program `{}` depends on variables",
                    words.first().map_or("", |w| w.text.as_str())
                ),
            ));
        } else if let Some(program) = words.first().and_then(Word::value) {
            let name = basename(program);
            if program.contains(['*', '?', '[']) {
                findings.push(finding(
                    FindingKind::DynamicCommand,
                    format!("the program `{program}` is a glob"),
                ));
            }
            if matches!(name, "eval" | "trap" | "alias" | "enable") {
                findings.push(finding(
                    FindingKind::Eval,
                    format!("`{name}` runs code toolgate cannot see"),
                ));
            }
        }
        let mut unwrapped = programs::unwrap(words);
        findings.append(&mut unwrapped.findings);
        if let Some(script) = unwrapped.script.take() {
            let before = self.out.commands.len();
            let here = self.here_now();
            let inner = analyze_line(&script, self.depth + 1, here.as_ref());
            let mut wrappers = std::mem::take(&mut unwrapped.wrappers);
            wrappers.push(std::mem::take(&mut unwrapped.argv));
            self.merge(inner, &wrappers, &findings);
            return (self.out.commands.len() > before).then_some(before);
        }
        let argv = std::mem::take(&mut unwrapped.argv);
        // `command eval …`, `builtin source …`: what a wrapper runs may be the shell's own.
        if !unwrapped.wrappers.is_empty()
            && let Some(name) = argv.first().and_then(Word::value).map(basename)
            && matches!(name, "eval" | "source" | "." | "trap" | "alias" | "enable")
        {
            findings.push(finding(
                FindingKind::Eval,
                format!("`{name}` runs code toolgate cannot see"),
            ));
        }
        let index = self.out.commands.len();
        let mut spawner = unwrapped.wrappers.clone();
        spawner.push(argv.clone());
        let spawned = std::mem::take(&mut unwrapped.spawned);
        let wrappers = std::mem::take(&mut unwrapped.wrappers);
        self.push_command(text.clone(), argv, wrappers, findings.clone(), &unwrapped);
        for spawned in spawned {
            let mut spawned_findings = findings.clone();
            let mut inner = programs::unwrap(spawned);
            spawned_findings.append(&mut inner.findings);
            let mut wrappers = spawner.clone();
            wrappers.append(&mut inner.wrappers);
            let argv = std::mem::take(&mut inner.argv);
            self.push_command(text.clone(), argv, wrappers, spawned_findings, &inner);
        }
        Some(index)
    }

    fn push_command(
        &mut self,
        text: String,
        argv: Vec<Word>,
        wrappers: Vec<Vec<Word>>,
        findings: Vec<Finding>,
        unwrapped: &programs::Unwrapped,
    ) {
        let index = self.out.commands.len();
        // Only the shell's own `cd` moves it: not `/usr/bin/cd`, nor one run by `env`,
        // `timeout`, `nice` or `coproc` (a program, or a subshell, of its own); `builtin`,
        // `command` and bash's `time` (`time -p`) run it in the shell.
        let name = argv
            .first()
            .and_then(Word::value)
            .filter(|name| matches!(*name, "cd" | "pushd" | "popd"));
        let in_the_shell = || {
            wrappers.iter().all(|layer| {
                let words: Vec<Option<&str>> = layer.iter().map(Word::value).collect();
                match words.as_slice() {
                    [Some("builtin" | "command"), ..] => true,
                    // Bash's `time` takes `-p` only; another option is GNU time's, a program.
                    [Some("time"), rest @ ..] => {
                        let rest = match rest {
                            [Some("-p"), more @ ..] => more,
                            all => all,
                        };
                        rest.first()
                            .is_some_and(|w| w.is_some_and(|v| !v.starts_with('-')))
                    }
                    _ => false,
                }
            })
        };
        match name {
            Some("cd" | "pushd") if in_the_shell() => self.change_folder(&argv, index),
            // The directory stack: where `popd` leads is not followed.
            Some("popd") if in_the_shell() => self.line_finding(
                FindingKind::DynamicArguments,
                "`popd` returns to a folder toolgate does not follow",
            ),
            _ => {}
        }
        // Devices a program may be told to write to without writing a file (`curl -o
        // /dev/null`, `strace -o /dev/stderr`).
        let uses = unwrapped.wrapper_uses.iter().chain(&unwrapped.uses);
        let known = unwrapped
            .reading
            .as_ref()
            .is_some_and(|r| r.program.is_some());
        for u in uses {
            let (access, role) = match u.kind {
                UseKind::Read => (Access::Read, PathRole::Read),
                UseKind::Write | UseKind::Into => (Access::Write, PathRole::Written),
                UseKind::Folder => (Access::Read, PathRole::Folder),
                UseKind::Linked => (Access::Read, PathRole::Linked),
                UseKind::Unknown => (Access::Read, PathRole::Operand),
                UseKind::Pathspec => (Access::Read, PathRole::Read),
                UseKind::Mentioned => (Access::Read, PathRole::Mentioned),
                UseKind::Url => {
                    self.out.urls.push(CommandUrl {
                        text: u.text.clone(),
                        command: index,
                        fetched: known,
                        origin: u.origin.clone(),
                    });
                    continue;
                }
            };
            if HARMLESS_DEVICES.contains(&u.text.as_str()) {
                continue;
            }
            self.out.paths.push(CommandPath {
                text: u.text.clone(),
                access,
                role,
                command: index,
                cwd: self.cwd.clone(),
                origin: u.origin.clone(),
                pattern: u.kind == UseKind::Pathspec,
            });
        }
        self.out.commands.push(SimpleCommand {
            text,
            argv,
            wrappers,
            findings,
            network: unwrapped.network,
            cwd: self.cwd.clone(),
            reading: unwrapped.reading.clone(),
        });
    }

    fn change_folder(&mut self, argv: &[Word], index: usize) {
        if argv.first().and_then(Word::value) == Some("pushd") {
            let operands: Vec<Option<&str>> = argv.iter().skip(1).map(Word::value).collect();
            let plain = match operands.as_slice() {
                [Some(dir)] => !dir.starts_with(['-', '+']),
                [Some("--"), Some(_)] => true,
                _ => false,
            };
            // `pushd -n DIR` moves nothing; `pushd +1` and `pushd` alone rotate the stack.
            if !plain {
                self.line_finding(
                    FindingKind::DynamicArguments,
                    "this `pushd` moves along the directory stack, which toolgate does not follow",
                );
                return;
            }
        }
        let target = argv
            .iter()
            .skip(1)
            .find(|w| !w.value().is_some_and(|v| v.starts_with('-') && v != "-"));
        let target = match target {
            None => Some("~".to_owned()),
            Some(w) => w.value.clone(),
        };
        match target {
            Some(t) if t == "-" => self.line_finding(
                FindingKind::DynamicArguments,
                "`cd -` returns to a folder toolgate does not know",
            ),
            Some(t) => {
                self.out.paths.push(CommandPath {
                    text: t.clone(),
                    access: Access::Read,
                    role: PathRole::Folder,
                    command: index,
                    cwd: self.cwd.clone(),
                    origin: "the folder `cd` changes to".to_owned(),
                    pattern: false,
                });
                self.cd_sure = false;
                self.cwd = Some(match &self.cwd {
                    Some(current) if !t.starts_with('/') && !t.starts_with('~') => {
                        format!("{current}/{t}")
                    }
                    _ => t,
                });
            }
            None => self.line_finding(
                FindingKind::DynamicArguments,
                "`cd` to a folder that depends on variables",
            ),
        }
    }

    /// Adds the analysis of a `sh -c` string, wrapped by the outer layers.
    fn merge(&mut self, inner: Analysis, outer: &[Vec<Word>], findings: &[Finding]) {
        let offset = self.out.commands.len();
        for mut command in inner.commands {
            let mut wrappers = outer.to_vec();
            wrappers.append(&mut command.wrappers);
            command.wrappers = wrappers;
            command.findings.extend(findings.iter().cloned());
            if let Some(cwd) = &self.cwd {
                command.cwd = Some(match command.cwd {
                    Some(inner_cwd) if !inner_cwd.starts_with('/') => format!("{cwd}/{inner_cwd}"),
                    Some(abs) => abs,
                    None => cwd.clone(),
                });
            }
            self.out.commands.push(command);
        }
        for mut path in inner.paths {
            path.command += offset;
            if let Some(cwd) = &self.cwd {
                path.cwd = Some(match path.cwd {
                    Some(inner_cwd) if !inner_cwd.starts_with('/') => format!("{cwd}/{inner_cwd}"),
                    Some(abs) => abs,
                    None => cwd.clone(),
                });
            }
            self.out.paths.push(path);
        }
        for mut url in inner.urls {
            url.command += offset;
            self.out.urls.push(url);
        }
        for f in inner.findings {
            self.out.findings.push(f);
        }
        if self.out.commands.len() == offset {
            self.out.findings.extend(findings.iter().cloned());
        }
    }

    /// Where the command being read runs, when that is known: the line's place after the
    /// `cd`s seen so far.
    fn here_now(&self) -> Option<Here> {
        let here = self.here.as_ref()?;
        if self.cd_unsure {
            return None;
        }
        let cwd = match &self.cwd {
            Some(folder) if folder.starts_with("~/") || folder == "~" => here
                .home
                .as_ref()?
                .join(folder.trim_start_matches('~').trim_start_matches('/')),
            Some(folder) if folder.contains('$') => return None,
            Some(folder) => here.cwd.join(folder),
            None => here.cwd.clone(),
        };
        Some(Here {
            cwd,
            home: here.home.clone(),
        })
    }

    /// The names an unquoted glob argument stands for, as bash expands it where the line runs
    /// (`cat tests/*.py` reads each test; no match leaves the word as written). `None` when the
    /// word is not a plain glob, the place is unknown, or a command before it on the line
    /// writes files or makes links (the names may differ when it runs).
    fn expand_glob(&self, text: &str) -> Option<Vec<String>> {
        if text.contains(['\'', '"', '$', '`', '{', '\n'])
            || (text.starts_with('~') && !text.starts_with("~/"))
            || !has_glob(text)
        {
            return None;
        }
        let here = self.here_now()?;
        let writes = self.out.paths.iter().any(|p| p.role == PathRole::Written)
            || self.out.commands.iter().any(|c| {
                c.reading
                    .as_ref()
                    .is_none_or(|r| r.makes_links || r.kind != Some("reads"))
            });
        if writes {
            return None;
        }
        match glob::expand_bash(text, &here.cwd, here.home.as_deref()) {
            Expansion::Matches(names) if names.len() <= MAX_GLOB_NAMES => Some(names),
            Expansion::Nothing => {
                let mut literal = String::new();
                unescape_unquoted_into(text, &mut literal);
                Some(vec![literal])
            }
            Expansion::Matches(_) | Expansion::Unknown(_) => None,
        }
    }

    /// Adds an argument's words: the names an unquoted glob matches, or the word. Kept out of
    /// [`Walker::command`], whose frame is on the stack once per level of nesting.
    #[inline(never)]
    fn push_argument(
        &mut self,
        child: Node<'_>,
        level: usize,
        index: usize,
        words: &mut Vec<Word>,
    ) {
        match self.expand_glob(self.text(child)) {
            Some(names) => words.extend(names.iter().map(|n| Word::literal(n))),
            None => words.push(self.argument(child, level, index)),
        }
    }

    /// An argument of a simple command: a word whose findings, when its value is not known,
    /// wait for the program's reading ([`Open`]): a message or a pattern may be anything.
    fn argument(&mut self, node: Node<'_>, level: usize, index: usize) -> Word {
        let held = self.deferring.replace(Vec::new());
        self.splits = false;
        let mut word = self.word(node, level, Some(index));
        let findings = std::mem::replace(&mut self.deferring, held).unwrap_or_default();
        if word.value.is_some() || findings.is_empty() {
            for f in findings {
                self.command_finding(Some(index), f);
            }
            return word;
        }
        let text = word.text.trim_start_matches(['"', '\'']);
        let lead = text.chars().next().filter(|c| !matches!(c, '$' | '`'));
        word.open = Some(Open {
            findings,
            splits: self.splits,
            lead,
            secrets: secret_variables(&word.text),
        });
        word
    }

    /// A word's value, or `None` when it depends on expansions; substitutions inside it are
    /// analysed (their commands become commands of the line) and reported.
    fn word(&mut self, node: Node<'_>, level: usize, command: Option<usize>) -> Word {
        let text = self.text(node).to_owned();
        let mut value = String::with_capacity(text.len());
        let mut dynamic = false;
        let mut unquoted = String::new();
        self.word_parts(
            node,
            level,
            command,
            &mut value,
            &mut dynamic,
            &mut unquoted,
        );
        if text.contains('{') && has_brace_expansion(&unquoted) {
            dynamic = true;
            // Several words, as many as the braces make.
            self.splits = true;
        }
        // bash replaces an unquoted glob by the names it matches (`cat config/.en?` reads
        // `config/.env`): what it names is not the text, so it is not seen through.
        let glob = !dynamic && text.contains(['*', '?', '[']) && has_glob(&unquoted);
        if glob {
            // Names, as many as match.
            self.splits = true;
        }
        // `~root/…`, `~+/…`, `~-`, `~0`: bash replaces those prefixes with folders (a user's home,
        // the current or previous folder, the directory stack); only `~` and `~/…` are read.
        let tilde_prefix = text
            .strip_prefix('~')
            .map(|rest| rest.split('/').next().unwrap_or(""))
            .filter(|prefix| !prefix.is_empty());
        if let Some(prefix) = tilde_prefix.filter(|_| !dynamic && !glob) {
            dynamic = true;
            self.command_finding(
                command,
                finding(
                    FindingKind::DynamicArguments,
                    format!(
                        "`~{}` names a folder toolgate does not resolve",
                        excerpt(prefix)
                    ),
                ),
            );
        } else if glob {
            self.command_finding(
                command,
                finding(
                    FindingKind::DynamicArguments,
                    format!(
                        "`{}` is a glob: bash replaces it with the names it matches, which \
                         toolgate does not see",
                        excerpt(&text)
                    ),
                ),
            );
        } else if dynamic {
            self.command_finding(
                command,
                finding(
                    FindingKind::DynamicArguments,
                    format!(
                        "`{}` depends on expansions toolgate cannot see",
                        excerpt(&text)
                    ),
                ),
            );
        }
        Word {
            text,
            value: (!dynamic && !glob).then_some(value),
            open: None,
        }
    }

    fn word_parts(
        &mut self,
        node: Node<'_>,
        level: usize,
        command: Option<usize>,
        value: &mut String,
        dynamic: &mut bool,
        unquoted: &mut String,
    ) {
        let text = self.text(node);
        match node.kind() {
            "word" | "number" | "file_descriptor" | "variable_name" | "special_variable_name" => {
                if text.contains(['{', '*', '?', '[']) || !unquoted.is_empty() {
                    unquoted.push_str(text);
                }
                unescape_unquoted_into(text, value);
            }
            "command_name" => {
                for child in named_children(node) {
                    self.word_parts(child, level, command, value, dynamic, unquoted);
                }
            }
            "raw_string" => {
                unquoted.push('_');
                value.push_str(text.get(1..text.len().saturating_sub(1)).unwrap_or(""));
            }
            "ansi_c_string" => {
                unquoted.push('_');
                match decode_ansi_c(text.get(2..text.len().saturating_sub(1)).unwrap_or("")) {
                    Some(decoded) => value.push_str(&decoded),
                    // A byte that is not text (`$'\xc3'`): what the program gets is not a
                    // string toolgate can read as it does.
                    None => *dynamic = true,
                }
            }
            "string" | "translated_string" => {
                unquoted.push('_');
                let open = if node.kind() == "translated_string" {
                    2
                } else {
                    1
                };
                let inner_start = node.start_byte() + open;
                let inner_end = node.end_byte().saturating_sub(1);
                let mut at = inner_start;
                for child in named_children(node) {
                    let gap = self.src.get(at..child.start_byte()).unwrap_or("");
                    value.push_str(&unescape_double_quoted(gap));
                    let piece = self.text(child);
                    match child.kind() {
                        "string_content" => value.push_str(&unescape_double_quoted(piece)),
                        "simple_expansion" | "expansion" if self.is_known_variable(piece) => {
                            let name = piece
                                .trim_start_matches('$')
                                .trim_start_matches('{')
                                .trim_end_matches('}');
                            value.push('$');
                            value.push_str(name);
                        }
                        _ => {
                            *dynamic = true;
                            self.scan(child, level, command);
                        }
                    }
                    at = child.end_byte();
                }
                value.push_str(&unescape_double_quoted(
                    self.src.get(at..inner_end.max(at)).unwrap_or(""),
                ));
            }
            "concatenation" => {
                // Unnamed pieces (punctuation tree-sitter does not name) are part of the word,
                // except the `$` of a `$"…"` (bash's translated string: the text in quotes).
                let mut pieces = children(node).peekable();
                while let Some(child) = pieces.next() {
                    if !child.is_named()
                        && self.text(child) == "$"
                        && pieces.peek().is_some_and(|next| next.kind() == "string")
                    {
                        unquoted.push('_');
                        continue;
                    }
                    if child.is_named() {
                        self.word_parts(child, level, command, value, dynamic, unquoted);
                    } else {
                        let piece = self.text(child);
                        value.push_str(piece);
                        unquoted.push_str(piece);
                    }
                }
            }
            "simple_expansion" | "expansion" if self.is_known_variable(text) => {
                let name = text
                    .trim_start_matches('$')
                    .trim_start_matches('{')
                    .trim_end_matches('}');
                value.push('$');
                value.push_str(name);
                unquoted.push('_');
            }
            "simple_expansion" | "expansion" => {
                *dynamic = true;
                self.splits = true;
                self.scan(node, level, command);
            }
            "command_substitution" | "process_substitution" | "arithmetic_expansion" => {
                *dynamic = true;
                self.splits = true;
                self.scan(node, level, command);
            }
            "brace_expression" => {
                *dynamic = true;
                self.splits = true;
                unquoted.push_str("{,}");
            }
            _ => {
                *dynamic = true;
                self.splits = true;
                self.scan(node, level, command);
            }
        }
    }

    /// `$HOME`, `$PWD`, `$USER` and `$LOGNAME`, when nothing in the line could assign them: their
    /// values are known where the call runs (`$HOME` and `$PWD` resolve in paths like `~` and
    /// `.`). Every other variable makes a word dynamic.
    fn is_known_variable(&self, text: &str) -> bool {
        let name = text
            .trim_start_matches('$')
            .trim_start_matches('{')
            .trim_end_matches('}');
        if !matches!(name, "HOME" | "PWD" | "USER" | "LOGNAME")
            || text.starts_with("${") && !text.ends_with('}')
        {
            return false;
        }
        let line = self.src;
        let may_assign = line.contains(&format!("{name}="))
            || line.contains(&format!("for {name}"))
            || [
                "read",
                "mapfile",
                "readarray",
                "getopts",
                "printf -v",
                "declare",
                "typeset",
                "local",
                "export",
                "eval",
                "source",
            ]
            .iter()
            .any(|w| line.contains(w));
        !may_assign
    }

    /// Looks for substitutions and complex expansions anywhere under `node`, reporting them and
    /// analysing the commands inside them.
    fn scan(&mut self, node: Node<'_>, level: usize, command: Option<usize>) {
        let mut stack = vec![node];
        let mut steps = 0usize;
        while let Some(n) = stack.pop() {
            steps += 1;
            if steps > 100_000 {
                self.line_finding(FindingKind::TooDeep, "the command is too large to scan");
                return;
            }
            match n.kind() {
                "command_substitution" | "process_substitution" => {
                    let what = if n.kind() == "process_substitution" {
                        "process substitution"
                    } else if self.text(n).starts_with('`') {
                        "backticks"
                    } else {
                        "command substitution"
                    };
                    self.command_finding(
                        command,
                        finding(
                            FindingKind::Substitution,
                            format!("{what} `{}`", excerpt(self.text(n))),
                        ),
                    );
                    if self.substitutions >= MAX_DEPTH {
                        self.line_finding(
                            FindingKind::TooDeep,
                            format!("command substitutions nested more than {MAX_DEPTH} deep"),
                        );
                        continue;
                    }
                    self.substitutions += 1;
                    // What the substitution runs is judged as commands of its own.
                    let held = self.deferring.take();
                    for child in named_children(n) {
                        if is_statement(child.kind()) {
                            self.statement(child, level + 1);
                        }
                    }
                    self.deferring = held;
                    self.substitutions -= 1;
                    continue;
                }
                "arithmetic_expansion" => self.command_finding(
                    command,
                    finding(
                        FindingKind::Substitution,
                        format!("arithmetic expansion `{}`", excerpt(self.text(n))),
                    ),
                ),
                // `${X:=v}` assigns, whatever reads the word.
                "expansion" if assigns_in_expansion(self.text(n)) => self.line_finding(
                    FindingKind::Substitution,
                    format!("parameter expansion `{}` assigns", excerpt(self.text(n))),
                ),
                "expansion" if !is_plain_expansion(self.text(n)) => self.command_finding(
                    command,
                    finding(
                        FindingKind::Substitution,
                        format!("parameter expansion `{}`", excerpt(self.text(n))),
                    ),
                ),
                _ => {}
            }
            stack.extend(children(n));
        }
    }
}

fn is_statement(kind: &str) -> bool {
    matches!(
        kind,
        "command"
            | "list"
            | "pipeline"
            | "subshell"
            | "compound_statement"
            | "redirected_statement"
            | "negated_command"
            | "if_statement"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "case_statement"
            | "function_definition"
            | "test_command"
            | "declaration_command"
            | "unset_command"
            | "variable_assignment"
            | "variable_assignments"
            | "do_group"
            | "else_clause"
            | "elif_clause"
            | "case_item"
            | "program"
            | "ERROR"
    )
}

/// `${NAME}` and `${#NAME}` only: anything with an operator can run code (`${x@P}`).
fn is_plain_expansion(text: &str) -> bool {
    let inner = text
        .strip_prefix("${")
        .and_then(|t| t.strip_suffix('}'))
        .map(|t| t.strip_prefix('#').unwrap_or(t));
    inner.is_some_and(|name| {
        !name.is_empty()
            && (name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                || matches!(name, "@" | "*" | "?" | "$" | "!" | "-"))
    })
}

/// Whether a parameter expansion assigns the variable (`${X:=v}`, `${X=v}`).
fn assigns_in_expansion(text: &str) -> bool {
    let inner = text.trim_start_matches("${");
    let name_end = inner
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(inner.len());
    let rest = inner.get(name_end..).unwrap_or("");
    rest.starts_with(":=") || rest.starts_with('=')
}

/// Fragments of variable names that hold credentials by convention.
const SECRET_NAME_PARTS: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "PWD_",
    "APIKEY",
    "API_KEY",
    "ACCESS_KEY",
    "PRIVATE",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "SESSION",
    "SIGNING",
    "_KEY",
];

/// Whether a variable's name looks like it holds a credential (`GITHUB_TOKEN`, `DB_PASSWORD`,
/// `AWS_SECRET_ACCESS_KEY`).
pub(crate) fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if upper == "PWD" || upper == "OLDPWD" {
        return false;
    }
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part)) || upper.ends_with("KEY")
}

/// The variables a word expands (`$NAME`, `${NAME…}`, `${!NAME…}`) whose names look like
/// secrets.
fn secret_variables(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        rest = rest.get(at + 1..).unwrap_or("");
        let name: String = rest
            .trim_start_matches(['{', '!'])
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && looks_secret(&name) && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Whether the unquoted text has a glob bash would expand: an unescaped `*` or `?`, or a `[`
/// closed by a later `]`.
fn has_glob(unquoted: &str) -> bool {
    let bytes = unquoted.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 1,
            b'*' | b'?' => return true,
            b'[' if bytes.get(i + 1..).is_some_and(|rest| rest.contains(&b']')) => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// Whether bash would brace-expand the unquoted text: an unquoted `{`, then a `,` or `..`, then
/// a `}`. bash keeps looking past a `}` with no comma (`{a},b}` expands), so this does too.
fn has_brace_expansion(unquoted: &str) -> bool {
    let bytes = unquoted.as_bytes();
    let mut open = false;
    let mut separator = false;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 1,
            b'{' => open = true,
            b',' if open => separator = true,
            b'.' if open && bytes.get(i + 1) == Some(&b'.') => separator = true,
            b'}' if open && separator => return true,
            _ => {}
        }
        i += 1;
    }
    false
}

/// Removes the backslashes of an unquoted word (`\x` is `x`, a backslash-newline nothing).
fn unescape_unquoted_into(text: &str, out: &mut String) {
    if !text.contains('\\') {
        out.push_str(text);
        return;
    }
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            }
        } else {
            out.push(c);
        }
    }
}

fn unescape_double_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('"' | '\\' | '$' | '`') => {
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The text `$'…'` makes, or `None` when an escape makes something beyond ASCII: `\xNN` and
/// `\NNN` make single bytes (not characters), and `\u`/`\U` depend on the locale.
fn decode_ansi_c(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let digits = |from: usize, max: usize, radix: u32| -> (u32, usize) {
        let mut value = 0u32;
        let mut n = 0;
        while n < max {
            match chars.get(from + n).and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    value = value.saturating_mul(radix).saturating_add(d);
                    n += 1;
                }
                None => break,
            }
        }
        (value, n)
    };
    while let Some(&c) = chars.get(i) {
        i += 1;
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = chars.get(i) else {
            out.push('\\');
            break;
        };
        i += 1;
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let (v, n) = digits(i, max, 16);
                if n == 0 {
                    out.push('\\');
                    out.push(e);
                } else if v > 0x7f {
                    return None;
                } else {
                    i += n;
                    out.push(char::from_u32(v)?);
                }
            }
            '0'..='7' => {
                let (v, n) = digits(i - 1, 3, 8);
                i += n - 1;
                // `\400` and above wrap to a byte in bash; any byte past 0x7f is not text.
                if v > 0x7f {
                    return None;
                }
                out.push(char::from_u32(v)?);
            }
            'c' => {
                if let Some(&ctl) = chars.get(i) {
                    i += 1;
                    out.push(char::from_u32(u32::from(ctl) & 0x1f).unwrap_or('\u{fffd}'));
                }
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    // bash ends the string at a NUL, however it is written (`\0`, `\x00`, `\u0000`, `\c@`):
    // `$'.env\0x'` is `.env`.
    if let Some(end) = out.find('\0') {
        out.truncate(end);
    }
    Some(out)
}

fn excerpt(text: &str) -> String {
    let mut short: String = text.chars().take(60).collect();
    if text.chars().count() > 60 {
        short.push('…');
    }
    short.replace('\n', "\\n")
}

fn first_error(node: Node<'_>) -> Option<Node<'_>> {
    descendants(node).find(|n| n.is_error() || n.is_missing())
}

/// The children of a node. Indexing a child is linear in tree-sitter and a cursor allocates, so
/// few children are indexed and many walked with a cursor.
fn children<'t>(node: Node<'t>) -> Children<'t> {
    let count = node.child_count();
    if count <= 12 {
        Children::Indexed {
            node,
            next: 0,
            count,
        }
    } else {
        Children::Cursor {
            cursor: node.walk(),
            started: false,
            done: false,
        }
    }
}

enum Children<'t> {
    Indexed {
        node: Node<'t>,
        next: u32,
        count: u32,
    },
    Cursor {
        cursor: tree_sitter::TreeCursor<'t>,
        started: bool,
        done: bool,
    },
}

impl<'t> Iterator for Children<'t> {
    type Item = Node<'t>;

    fn next(&mut self) -> Option<Node<'t>> {
        match self {
            Children::Indexed { node, next, count } => {
                while *next < *count {
                    let i = *next;
                    *next += 1;
                    if let Some(child) = node.child(i) {
                        return Some(child);
                    }
                }
                None
            }
            Children::Cursor {
                cursor,
                started,
                done,
            } => {
                if *done {
                    return None;
                }
                let moved = if *started {
                    cursor.goto_next_sibling()
                } else {
                    cursor.goto_first_child()
                };
                *started = true;
                *done = !moved;
                moved.then(|| cursor.node())
            }
        }
    }
}

fn named_children<'t>(node: Node<'t>) -> impl Iterator<Item = Node<'t>> {
    children(node).filter(|c| c.is_named())
}

/// Every node under `node`, depth first, without recursion.
fn descendants<'t>(node: Node<'t>) -> impl Iterator<Item = Node<'t>> {
    let mut stack = vec![node];
    std::iter::from_fn(move || {
        let n = stack.pop()?;
        let at = stack.len();
        stack.extend(children(n));
        if let Some(added) = stack.get_mut(at..) {
            added.reverse();
        }
        Some(n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_unescape() {
        let mut unescaped = String::new();
        unescape_unquoted_into("g\\it", &mut unescaped);
        assert_eq!(unescaped, "git");
        assert_eq!(unescape_double_quoted("a\\\"b\\n"), "a\"b\\n");
        assert_eq!(decode_ansi_c("\\x67it\\n\\101").as_deref(), Some("git\nA"));
        for nul in ["\\0", "\\x00", "\\u0000", "\\c@", "\\000"] {
            assert_eq!(
                decode_ansi_c(&format!(".env{nul}zz")).as_deref(),
                Some(".env"),
                "{nul}"
            );
        }
        // Bytes that are not text, and characters the locale decides.
        for byte in ["\\xc3", "\\303", "\\u00e9", "\\U0001F600", "\\777"] {
            assert_eq!(decode_ansi_c(&format!("s{byte}a")), None, "{byte}");
        }
        assert_eq!(decode_ansi_c("\u{e9}").as_deref(), Some("\u{e9}"));
        assert!(is_plain_expansion("${HOME}"));
        assert!(!is_plain_expansion("${two@P}"));
        assert!(!is_plain_expansion("${x:-$(id)}"));
        assert!(has_brace_expansion("a{b,c}d"));
        assert!(has_brace_expansion("{1..3}"));
        assert!(!has_brace_expansion("{}"));
        assert!(!has_brace_expansion("\\{a,b}"));
        assert!(has_brace_expansion("{@_0},--output=/tmp/pwned}"));
        assert!(!has_brace_expansion("a,b}"));
    }
}
