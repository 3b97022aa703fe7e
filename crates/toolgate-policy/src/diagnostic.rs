//! Errors and warnings about policy files, with the file, line and column and a caret under the
//! input.
//!
//! ```text
//! error: unknown key `decison` in a rule
//!   --> policy.toml:12:1
//!    |
//! 12 | decison = "allow"
//!    | ^^^^^^^
//!    = hint: did you mean `decision`?
//! ```

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;

/// The text of one policy file and the name it is reported under.
#[derive(Clone, Debug)]
pub(crate) struct SourceFile {
    pub(crate) name: Arc<str>,
    pub(crate) text: Arc<str>,
    line_starts: Vec<usize>,
}

impl SourceFile {
    pub(crate) fn new(name: impl Into<Arc<str>>, text: impl Into<Arc<str>>) -> SourceFile {
        let text: Arc<str> = text.into();
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        SourceFile {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// The 1-based line of a byte offset.
    pub(crate) fn line_of(&self, offset: usize) -> u32 {
        let index = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        u32::try_from(index + 1).unwrap_or(u32::MAX)
    }

    /// Where a span sits: line, column (in characters, 1-based), and the text of its first line.
    pub(crate) fn location(&self, span: Range<usize>) -> Location {
        let len = self.text.len();
        let start = floor_char_boundary(&self.text, span.start.min(len));
        let end = floor_char_boundary(&self.text, span.end.clamp(start, len));
        let line = self.line_of(start);
        let line_start = self
            .line_starts
            .get(line as usize - 1)
            .copied()
            .unwrap_or(0);
        let line_end = self.text[line_start..]
            .find('\n')
            .map_or(len, |i| line_start + i);
        let line_text = self.text[line_start..line_end].trim_end_matches('\r');
        let column = self.text[line_start..start].chars().count() + 1;
        let underline_end = end.min(line_start + line_text.len()).max(start);
        let width = self.text[start..underline_end].chars().count().max(1);
        Location {
            line,
            column: u32::try_from(column).unwrap_or(u32::MAX),
            span: start..end,
            source_line: line_text.to_owned(),
            width,
        }
    }
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// A place in a policy file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Location {
    /// 1-based line.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub column: u32,
    /// Byte range in the file.
    pub span: Range<usize>,
    /// The text of the line.
    #[serde(skip)]
    pub source_line: String,
    /// How many characters the caret underlines.
    #[serde(skip)]
    pub width: usize,
}

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth a look; nothing is wrong yet.
    Warning,
    /// The policy cannot be used as written.
    Error,
}

/// One problem in a policy file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// A short stable code for lint findings (`shadowed`, `duplicate-name`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    /// What is wrong: lowercase, no trailing period, user input in backticks.
    pub message: String,
    /// The file, as the user named it.
    pub file: Arc<str>,
    /// Where in the file, when the problem has a place.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// How to fix it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Diagnostic {
    pub(crate) fn error(source: &SourceFile, span: Range<usize>, message: String) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code: None,
            message,
            file: source.name.clone(),
            location: Some(source.location(span)),
            hint: None,
        }
    }

    pub(crate) fn file_error(file: Arc<str>, message: String) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code: None,
            message,
            file,
            location: None,
            hint: None,
        }
    }

    pub(crate) fn with_hint(mut self, hint: Option<String>) -> Diagnostic {
        self.hint = hint;
        self
    }

    /// The 1-based line, or 0 when the problem has no place.
    pub fn line(&self) -> u32 {
        self.location.as_ref().map_or(0, |l| l.line)
    }

    /// The 1-based column, or 0 when the problem has no place.
    pub fn column(&self) -> u32 {
        self.location.as_ref().map_or(0, |l| l.column)
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        match self.code {
            Some(code) => writeln!(f, "{label}[{code}]: {}", self.message)?,
            None => writeln!(f, "{label}: {}", self.message)?,
        }
        match &self.location {
            Some(loc) => {
                let number = loc.line.to_string();
                let pad = " ".repeat(number.len());
                writeln!(f, "{pad}--> {}:{}:{}", self.file, loc.line, loc.column)?;
                writeln!(f, "{pad} |")?;
                writeln!(f, "{number} | {}", loc.source_line)?;
                let lead: String = loc
                    .source_line
                    .chars()
                    .take(loc.column.saturating_sub(1) as usize)
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                writeln!(f, "{pad} | {lead}{}", "^".repeat(loc.width))?;
                if let Some(hint) = &self.hint {
                    writeln!(f, "{pad} = hint: {hint}")?;
                }
            }
            None => {
                writeln!(f, "  --> {}", self.file)?;
                if let Some(hint) = &self.hint {
                    writeln!(f, "   = hint: {hint}")?;
                }
            }
        }
        Ok(())
    }
}

/// A policy that could not be loaded: every problem found, in file order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoadError {
    /// The problems, errors first within each file's order.
    pub diagnostics: Vec<Diagnostic>,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        let errors = self
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        if errors > 1 {
            write!(f, "\n{errors} errors")?;
        }
        Ok(())
    }
}

impl std::error::Error for LoadError {}

impl From<Diagnostic> for LoadError {
    fn from(d: Diagnostic) -> LoadError {
        LoadError {
            diagnostics: vec![d],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_caret_under_the_input() {
        let src = SourceFile::new("p.toml", "version = 1\n\ndecison = \"allow\"\n");
        let d = Diagnostic::error(&src, 13..20, "unknown key `decison`".into())
            .with_hint(Some("did you mean `decision`?".into()));
        assert_eq!(
            d.to_string(),
            "error: unknown key `decison`\n --> p.toml:3:1\n  |\n3 | decison = \"allow\"\n  | ^^^^^^^\n  = hint: did you mean `decision`?\n"
        );
        assert_eq!((d.line(), d.column()), (3, 1));
    }

    #[test]
    fn columns_count_characters_and_spans_clamp() {
        let src = SourceFile::new("p.toml", "é = 1\nx = \"ü\"");
        let loc = src.location(12..14);
        assert_eq!((loc.line, loc.column, loc.width), (2, 6, 1));
        let loc = src.location(500..900);
        assert_eq!(loc.line, 2);
        let loc = src.location(1..2); // inside a multi-byte character
        assert_eq!((loc.line, loc.column), (1, 1));
    }
}
