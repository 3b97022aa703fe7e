//! The leaf matchers of rule conditions: name patterns and argument predicates.

use std::cmp::Ordering;
use std::fmt;

use globset::{Glob, GlobBuilder, GlobMatcher};
use regex::Regex;
use serde_json::{Number, Value};

use crate::call::json_type;

/// Characters that make a name pattern a glob.
const GLOB_META: &[char] = &['*', '?', '[', ']', '{', '}', '\\'];

/// One name pattern: an exact name, a glob, or `*` (anything).
#[derive(Clone, Debug)]
pub(crate) enum NamePattern {
    Any,
    Exact(Box<str>),
    Glob {
        text: Box<str>,
        matcher: GlobMatcher,
    },
}

impl NamePattern {
    /// Compiles a pattern; `*` matches any sequence of characters (including `/`).
    pub(crate) fn new(text: &str) -> Result<NamePattern, String> {
        if text.is_empty() {
            return Err("a name pattern cannot be empty".into());
        }
        if text == "*" || text == "**" {
            return Ok(NamePattern::Any);
        }
        if !text.contains(GLOB_META) {
            return Ok(NamePattern::Exact(text.into()));
        }
        let glob = compile_glob(text)?;
        Ok(NamePattern::Glob {
            text: text.into(),
            matcher: glob.compile_matcher(),
        })
    }

    pub(crate) fn is_match(&self, name: &str) -> bool {
        match self {
            NamePattern::Any => true,
            NamePattern::Exact(exact) => **exact == *name,
            NamePattern::Glob { matcher, .. } => matcher.is_match(name),
        }
    }

    pub(crate) fn text(&self) -> &str {
        match self {
            NamePattern::Any => "*",
            NamePattern::Exact(text) | NamePattern::Glob { text, .. } => text,
        }
    }

    /// The literal text before the first wildcard, and whether the pattern is exactly that
    /// prefix followed by a single trailing `*`.
    fn prefix_star(&self) -> Option<&str> {
        match self {
            NamePattern::Glob { text, .. } => {
                let prefix = text.strip_suffix('*')?;
                (!prefix.contains(GLOB_META)).then_some(prefix)
            }
            NamePattern::Any | NamePattern::Exact(_) => None,
        }
    }

    fn literal_prefix(&self) -> &str {
        match self {
            NamePattern::Any => "",
            NamePattern::Exact(text) => text,
            NamePattern::Glob { text, .. } => text.split(GLOB_META).next().unwrap_or(""),
        }
    }

    /// Whether every name `other` matches is also matched by `self` (sound, not complete).
    pub(crate) fn covers(&self, other: &NamePattern) -> bool {
        match (self, other) {
            (NamePattern::Any, _) => true,
            (_, NamePattern::Any) => false,
            (_, NamePattern::Exact(name)) => self.is_match(name),
            (NamePattern::Exact(_), NamePattern::Glob { .. }) => false,
            (NamePattern::Glob { text: a, .. }, NamePattern::Glob { text: b, .. }) => {
                a == b
                    || self
                        .prefix_star()
                        .is_some_and(|prefix| other.literal_prefix().starts_with(prefix))
            }
        }
    }
}

/// Compiles a glob as toolgate writes them: `*` crosses `/`, `\` escapes.
pub(crate) fn compile_glob(text: &str) -> Result<Glob, String> {
    GlobBuilder::new(text)
        .literal_separator(false)
        .backslash_escape(true)
        .empty_alternates(true)
        .build()
        .map_err(|e| glob_error_message(&e))
}

fn glob_error_message(error: &globset::Error) -> String {
    let kind = error.kind().to_string();
    let mut chars = kind.chars();
    match chars.next() {
        Some(first) => format!("invalid glob: {}{}", first.to_lowercase(), chars.as_str()),
        None => "invalid glob".into(),
    }
}

/// Any-of a list of name patterns.
#[derive(Clone, Debug)]
pub(crate) struct NameSet {
    pub(crate) patterns: Vec<NamePattern>,
}

impl NameSet {
    pub(crate) fn is_match(&self, name: &str) -> bool {
        self.patterns.iter().any(|p| p.is_match(name))
    }

    pub(crate) fn is_any(&self) -> bool {
        self.patterns.iter().any(|p| matches!(p, NamePattern::Any))
    }

    /// Whether every name `other` matches is also matched by `self`.
    pub(crate) fn covers(&self, other: &NameSet) -> bool {
        other
            .patterns
            .iter()
            .all(|o| self.patterns.iter().any(|s| s.covers(o)))
    }

    pub(crate) fn describe(&self) -> String {
        describe_list(self.patterns.iter().map(NamePattern::text))
    }
}

/// `` `a` `` or `` `a`, `b` or `c` `` (any-of).
pub(crate) fn describe_list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.collect();
    let mut out = String::new();
    let _ = crate::decision::write_alternatives(&mut out, &items);
    out
}

/// A comparison operator of an argument predicate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub(crate) const fn key(self) -> &'static str {
        match self {
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        }
    }

    fn holds(self, ordering: Ordering) -> bool {
        match self {
            CmpOp::Lt => ordering == Ordering::Less,
            CmpOp::Le => ordering != Ordering::Greater,
            CmpOp::Gt => ordering == Ordering::Greater,
            CmpOp::Ge => ordering != Ordering::Less,
        }
    }
}

/// One test on the value at an argument pointer.
#[derive(Clone, Debug)]
pub(crate) enum ArgTest {
    /// The pointer resolves (`true`) or does not (`false`).
    Exists(bool),
    /// The value equals this one (numbers compare by value).
    Equals(Value),
    /// The value equals one of these.
    OneOf(Vec<Value>),
    /// The value is a string matching the glob.
    Glob { text: String, matcher: GlobMatcher },
    /// The value is a string the regex matches as a whole.
    Regex { text: String, regex: Regex },
    /// The value is a number in this relation to the bound.
    Compare(CmpOp, Number),
}

impl ArgTest {
    /// Compiles a whole-string regex.
    pub(crate) fn regex(text: &str) -> Result<ArgTest, String> {
        let regex = regex::RegexBuilder::new(&format!("^(?:{text})$"))
            .size_limit(1 << 20)
            .build()
            .map_err(|e| match e {
                regex::Error::Syntax(message) => {
                    let last = message.lines().last().unwrap_or("").trim();
                    format!("invalid regex: {}", last.trim_start_matches("error: "))
                }
                regex::Error::CompiledTooBig(_) => "the regex is too large".into(),
                other => format!("invalid regex: {other}"),
            })?;
        Ok(ArgTest::Regex {
            text: text.to_owned(),
            regex,
        })
    }

    /// Compiles a glob test.
    pub(crate) fn glob(text: &str) -> Result<ArgTest, String> {
        Ok(ArgTest::Glob {
            text: text.to_owned(),
            matcher: compile_glob(text)?.compile_matcher(),
        })
    }

    /// Applies the test. `None` is a missing value. An error means the value has a type the test
    /// cannot judge; the caller fails closed.
    pub(crate) fn check(&self, value: Option<&Value>) -> Result<bool, String> {
        let Some(value) = value else {
            return Ok(matches!(self, ArgTest::Exists(false)));
        };
        match self {
            ArgTest::Exists(expected) => Ok(*expected),
            ArgTest::Equals(expected) => Ok(json_eq(value, expected)),
            ArgTest::OneOf(options) => Ok(options.iter().any(|o| json_eq(value, o))),
            ArgTest::Glob { matcher, .. } => match value {
                Value::String(s) => Ok(matcher.is_match(s)),
                other => Err(format!("`glob` needs a string, got {}", json_type(other))),
            },
            ArgTest::Regex { regex, .. } => match value {
                Value::String(s) => Ok(regex.is_match(s)),
                other => Err(format!("`regex` needs a string, got {}", json_type(other))),
            },
            ArgTest::Compare(op, bound) => match value {
                Value::Number(n) => Ok(compare_numbers(n, bound).is_some_and(|o| op.holds(o))),
                other => Err(format!(
                    "`{}` needs a number, got {}",
                    op.key(),
                    json_type(other)
                )),
            },
        }
    }

    /// Whether the two tests accept exactly the same values (compared as written; used by lint).
    pub(crate) fn same_as(&self, other: &ArgTest) -> bool {
        match (self, other) {
            (ArgTest::Exists(a), ArgTest::Exists(b)) => a == b,
            (ArgTest::Equals(a), ArgTest::Equals(b)) => json_eq(a, b),
            (ArgTest::OneOf(a), ArgTest::OneOf(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_eq(x, y))
            }
            (ArgTest::Glob { text: a, .. }, ArgTest::Glob { text: b, .. })
            | (ArgTest::Regex { text: a, .. }, ArgTest::Regex { text: b, .. }) => a == b,
            (ArgTest::Compare(o1, a), ArgTest::Compare(o2, b)) => {
                o1 == o2 && compare_numbers(a, b) == Some(Ordering::Equal)
            }
            _ => false,
        }
    }
}

impl fmt::Display for ArgTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgTest::Exists(b) => write!(f, "exists = {b}"),
            ArgTest::Equals(v) => write!(f, "equals = {v}"),
            ArgTest::OneOf(vs) => write!(f, "one_of = {}", Value::Array(vs.clone())),
            ArgTest::Glob { text, .. } => write!(f, "glob = {}", Value::String(text.clone())),
            ArgTest::Regex { text, .. } => write!(f, "regex = {}", Value::String(text.clone())),
            ArgTest::Compare(op, n) => write!(f, "{} = {n}", op.key()),
        }
    }
}

/// The conditions on one argument pointer; all tests must hold.
#[derive(Clone, Debug)]
pub(crate) struct ArgCondition {
    pub(crate) pointer: String,
    pub(crate) tests: Vec<ArgTest>,
}

impl ArgCondition {
    /// `Ok(None)` when every test holds, `Ok(Some(i))` naming the first test that does not.
    pub(crate) fn check(&self, args: &Value) -> Result<Option<usize>, String> {
        let value = args.pointer(&self.pointer);
        let mut error = None;
        for (i, test) in self.tests.iter().enumerate() {
            match test.check(value) {
                Ok(true) => {}
                Ok(false) => return Ok(Some(i)),
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        match error {
            Some(e) => Err(format!("argument `{}`: {e}", self.pointer)),
            None => Ok(None),
        }
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Compares two JSON numbers by value: exactly for integers, as `f64` otherwise.
pub(crate) fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    match (as_i128(a), as_i128(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn as_i128(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn name_patterns() {
        assert!(matches!(NamePattern::new("*").unwrap(), NamePattern::Any));
        assert!(matches!(
            NamePattern::new("read_file").unwrap(),
            NamePattern::Exact(_)
        ));
        let g = NamePattern::new("fs__*").unwrap();
        assert!(g.is_match("fs__read"));
        assert!(!g.is_match("xfs__read"));
        let g = NamePattern::new("fs/*").unwrap();
        assert!(g.is_match("fs/read_text_file"));
        let g = NamePattern::new("{read,write}_file").unwrap();
        assert!(g.is_match("write_file") && !g.is_match("edit_file"));
        assert!(NamePattern::new("[a-").is_err());
        assert!(NamePattern::new("").is_err());
    }

    #[test]
    fn covers_is_sound() {
        let p = |s| NamePattern::new(s).unwrap();
        assert!(p("*").covers(&p("x*")));
        assert!(p("fs__*").covers(&p("fs__read*")));
        assert!(p("fs__*").covers(&p("fs__read")));
        assert!(!p("fs__*").covers(&p("f*")));
        assert!(!p("f?o").covers(&p("f*o")));
        assert!(!p("x").covers(&p("x*")));
        assert!(!p("x*").covers(&p("*")));
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(json_eq(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        assert!(!json_eq(&json!("1"), &json!(1)));
        let n = |v: Value| v.as_number().unwrap().clone();
        assert_eq!(
            compare_numbers(&n(json!(u64::MAX)), &n(json!(-1))),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare_numbers(&n(json!(2.5)), &n(json!(3))),
            Some(Ordering::Less)
        );
    }

    #[test]
    fn arg_tests_fail_closed_on_wrong_types() {
        let lt = ArgTest::Compare(CmpOp::Lt, Number::from(100));
        assert_eq!(lt.check(Some(&json!(5))), Ok(true));
        assert_eq!(lt.check(Some(&json!(500))), Ok(false));
        assert_eq!(lt.check(None), Ok(false));
        assert_eq!(
            lt.check(Some(&json!("5"))),
            Err("`lt` needs a number, got a string".into())
        );
        let re = ArgTest::regex("main|dev").unwrap();
        assert_eq!(re.check(Some(&json!("main"))), Ok(true));
        assert_eq!(re.check(Some(&json!("main; rm -rf /"))), Ok(false));
        assert!(re.check(Some(&json!(["main"]))).is_err());
        assert_eq!(ArgTest::Exists(false).check(None), Ok(true));
        assert!(
            ArgTest::regex("(")
                .unwrap_err()
                .starts_with("invalid regex")
        );
    }

    #[test]
    fn a_false_test_beats_an_error() {
        let cond = ArgCondition {
            pointer: "/a".into(),
            tests: vec![
                ArgTest::Compare(CmpOp::Lt, Number::from(1)),
                ArgTest::Equals(json!(7)),
            ],
        };
        assert_eq!(cond.check(&json!({"a": "x"})), Ok(Some(1)));
        assert!(cond.check(&json!({"a": [7]})).is_ok());
        let cond = ArgCondition {
            pointer: "/a".into(),
            tests: vec![ArgTest::Compare(CmpOp::Lt, Number::from(1))],
        };
        assert_eq!(
            cond.check(&json!({"a": "x"})),
            Err("argument `/a`: `lt` needs a number, got a string".into())
        );
    }
}
