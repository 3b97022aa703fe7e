//! jq's programs: whether one reads the environment (where API keys are kept) or modules from
//! files, and which operands are files.

use super::super::{Reading, Takes, UseKind};
use crate::resource::shell::FindingKind;

/// `jq`: its program (the first operand, unless `-f` or `--run-tests` take it from a file) and
/// the files it reads. jq reads options anywhere before `--`; an argument that starts with `-`
/// and no letter (`-1|env`) is an operand, which the generic reading took for options.
pub(crate) fn jq(r: &mut Reading<'_>) {
    r.uses.retain(|u| !u.origin.starts_with("operand"));
    let mut program: Option<&str> = None;
    let mut files: Vec<&str> = Vec::new();
    let mut from_file = false;
    let mut options = true;
    let mut rest = r.args.clone().into_iter();
    while let Some(a) = rest.next() {
        let option = options
            && a.strip_prefix('-')
                .and_then(|c| c.chars().next())
                .is_some_and(|c| c == '-' || c.is_ascii_alphabetic());
        if options && a == "--" {
            options = false;
            continue;
        }
        if !option {
            if program.is_none() && !from_file {
                program = Some(a);
            } else {
                files.push(a);
            }
            continue;
        }
        let (opt, attached) = match a.strip_prefix("--") {
            Some(long) => {
                let (name, value) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (long, None),
                };
                (r.option(&format!("--{name}")), value.is_some())
            }
            None => {
                // The first letter of a cluster that takes a value takes the rest of the word.
                let cluster = a.get(1..).unwrap_or_default();
                let found = cluster.char_indices().find_map(|(i, c)| {
                    let opt = r
                        .program
                        .and_then(|p| p.options.iter().find(|o| o.short.contains(c)))?;
                    (opt.takes != Takes::Nothing).then_some((opt, i + c.len_utf8() < cluster.len()))
                });
                match found {
                    Some((opt, attached)) => (Some(opt), attached),
                    None => (None, false),
                }
            }
        };
        let Some(opt) = opt else { continue };
        if opt.short.contains('f') || opt.longs().any(|l| l == "run-tests") {
            from_file = true;
            if let Some(p) = program.take() {
                files.push(p);
            }
        }
        let skip = match opt.takes {
            Takes::Two(_) => 2,
            Takes::Value(_) if !attached => 1,
            Takes::Value(_) | Takes::Attached(_) | Takes::Nothing => 0,
        };
        for _ in 0..skip {
            rest.next();
        }
    }
    for (i, file) in files.into_iter().enumerate() {
        r.push(file, UseKind::Read, format!("file {}", i + 1));
    }
    if let Some(text) = program
        && jq_reads_outside(text)
    {
        let name = r.name;
        r.flag(
            FindingKind::ProgramText,
            format!(
                "the {name} program reads the environment (where API keys are kept) or modules from files"
            ),
        );
    }
}

/// Whether a jq program names `env`, `$ENV`, `import`, `include` or `modulemeta` (in any case,
/// inside strings too, where `\(…)` runs code) other than as a field (`.env`, `.a.env` read the
/// input): an identifier, not a substring, so `.environment` is a field like any.
pub(crate) fn jq_reads_outside(program: &str) -> bool {
    let bytes = program.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // A string is text unless it interpolates (`"\(env)"`): such a one is read as code.
        if bytes.get(i) == Some(&b'"') {
            let start = i;
            i += 1;
            while let Some(&b) = bytes.get(i) {
                i += if b == b'\\' { 2 } else { 1 };
                if b == b'"' {
                    break;
                }
            }
            let text = program.get(start..i.min(program.len())).unwrap_or_default();
            if text.contains("\\(") && jq_names_outside(text) {
                return true;
            }
            continue;
        }
        let starts = bytes
            .get(i)
            .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_');
        if !starts {
            i += 1;
            continue;
        }
        let start = i;
        while bytes
            .get(i)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            i += 1;
        }
        let word = program
            .get(start..i)
            .unwrap_or_default()
            .to_ascii_lowercase();
        // `.env` is a field; `..env` or `$env` is not.
        let field = start >= 1
            && bytes.get(start - 1) == Some(&b'.')
            && (start < 2 || bytes.get(start - 2) != Some(&b'.'));
        if !field && JQ_OUTSIDE.contains(&word.as_str()) {
            return true;
        }
    }
    false
}

/// What a jq program reads beyond its input through: the environment and modules.
const JQ_OUTSIDE: &[&str] = &["env", "import", "include", "modulemeta"];

/// Whether any identifier in `text` (an interpolating string, read whole as code) is one of
/// [`JQ_OUTSIDE`].
fn jq_names_outside(text: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| JQ_OUTSIDE.contains(&w.to_ascii_lowercase().as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jq_programs_that_read_outside_their_input() {
        for program in [
            "env",
            "$ENV.OPENAI_API_KEY",
            "env.HOME",
            ".a | env",
            "..env",
            "\"\\(env)\"",
            "import \"m\" as m; .",
            "include \"x\"; .",
            "modulemeta",
            "[.[] | ENV]",
            "\"\\(1) \\(env.HOME)\"",
        ] {
            assert!(jq_reads_outside(program), "{program}");
        }
        for program in [
            ".environment",
            ".env",
            ".a.env",
            ".config.include_dirs",
            "keys",
            ".",
            ".[] | select(.name == \"env\")",
        ] {
            assert!(!jq_reads_outside(program), "{program}");
        }
    }
}
