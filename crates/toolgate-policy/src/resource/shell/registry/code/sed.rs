//! sed's scripts: which commands only print, and which run programs or touch other files.

use super::super::{Reading, UseKind};
use crate::resource::shell::FindingKind;

/// `sed`: its scripts (`-e`'s values, or its first operand), and the files it reads — or, with
/// `-i`, writes. A script that runs a command (`e`, `s///e`), writes (`w`) or reads another file
/// (`r`) is not let through; nor an option sed does not have.
pub(crate) fn sed(r: &mut Reading<'_>) {
    for option in r.unknown_options.clone() {
        r.risk(format!("`sed {option}` is not an option toolgate knows"));
    }
    let mut scripts: Vec<String> = r.values("-e").into_iter().map(str::to_owned).collect();
    let from_file = r.has("-f");
    let mut operands = r.operand_texts().into_iter();
    if scripts.is_empty() && !from_file {
        scripts.extend(operands.next().map(str::to_owned));
    }
    let kind = if r.has("-i") {
        UseKind::Write
    } else {
        UseKind::Read
    };
    for (i, file) in operands.enumerate() {
        r.push(file, kind, format!("file {}", i + 1));
    }
    for script in scripts {
        if let Err(why) = sed_script_is_read_only(&script) {
            r.flag(
                FindingKind::RiskyOption,
                format!("the sed script `{script}` {why}"),
            );
        }
    }
}

/// Walks a sed script: addresses, then one command each, separated by `;`, newlines or braces.
pub(crate) fn sed_script_is_read_only(script: &str) -> Result<(), &'static str> {
    // In the C locale sed reads a script byte by byte: a delimiter beyond ASCII may be one
    // byte of a character, and what follows it is not what a reading by characters sees. (An
    // ASCII delimiter is never part of a UTF-8 character, so text beyond ASCII elsewhere reads
    // the same both ways.)
    let beyond = |d: char| {
        if d.is_ascii() {
            Ok(())
        } else {
            Err("has a delimiter beyond ASCII, which sed may read byte by byte")
        }
    };
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied();
    while i < chars.len() {
        // Separators and blanks.
        while matches!(at(i), Some(' ' | '\t' | '\n' | ';' | '{' | '}' | '!')) {
            i += 1;
        }
        // Addresses: numbers, `$`, `/regex/`, `\cregexc`, ranges with `,`, steps with `~`.
        loop {
            match at(i) {
                Some(c) if c.is_ascii_digit() || matches!(c, '$' | ',' | '~' | '+' | ' ') => i += 1,
                Some('/') => {
                    i = skip_delimited(&chars, i + 1, '/').ok_or("has an unterminated address")?
                }
                Some('\\') => {
                    let d = at(i + 1).ok_or("has an unterminated address")?;
                    beyond(d)?;
                    i = skip_delimited(&chars, i + 2, d).ok_or("has an unterminated address")?;
                }
                Some('I' | 'M') if i > 0 && at(i - 1) == Some('/') => i += 1,
                _ => break,
            }
        }
        while matches!(at(i), Some(' ' | '!')) {
            i += 1;
        }
        let Some(command) = at(i) else {
            break;
        };
        i += 1;
        match command {
            'e' => return Err("runs a command (`e`)"),
            'w' | 'W' => return Err("writes a file (`w`)"),
            'r' | 'R' => return Err("reads another file (`r`)"),
            's' => {
                let d = at(i).ok_or("has an unterminated `s` command")?;
                if d == '\n' || d == '\\' {
                    return Err("has an `s` command toolgate does not follow");
                }
                beyond(d)?;
                i = skip_delimited(&chars, i + 1, d).ok_or("has an unterminated `s` command")?;
                i = skip_delimited(&chars, i, d).ok_or("has an unterminated `s` command")?;
                while let Some(f) = at(i) {
                    match f {
                        'e' => return Err("runs the result as a command (`s///e`)"),
                        'w' | 'W' => return Err("writes a file (`s///w`)"),
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' => i += 1,
                        c if c.is_ascii_digit() => i += 1,
                        _ => break,
                    }
                }
            }
            'y' => {
                let d = at(i).ok_or("has an unterminated `y` command")?;
                beyond(d)?;
                i = skip_delimited(&chars, i + 1, d).ok_or("has an unterminated `y` command")?;
                i = skip_delimited(&chars, i, d).ok_or("has an unterminated `y` command")?;
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line.
                while at(i).is_some_and(|c| c != '\n') {
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' => {
                while matches!(at(i), Some(' ' | '\t')) {
                    i += 1;
                }
                // A label ends at a blank for some seds and at `;` or a line's end for others:
                // one with a blank in it (`:a e CMD`) could hide a command either way.
                while let Some(c) = at(i).filter(|c| *c != '\n' && *c != ';') {
                    if c.is_whitespace() {
                        return Err("has a label toolgate cannot delimit");
                    }
                    i += 1;
                }
            }
            'q' | 'Q' | 'l' | 'L' => {
                while at(i).is_some_and(|c| c.is_ascii_digit() || c == ' ') {
                    i += 1;
                }
            }
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | 'z' | '=' | 'F' => {}
            // A block after an address (`/start/,/end/{p}`): its commands are read as any.
            '{' => {}
            '#' => {
                while at(i).is_some_and(|c| c != '\n') {
                    i += 1;
                }
            }
            _ => return Err("has a command toolgate does not know"),
        }
    }
    Ok(())
}

/// The index just after the next unescaped `delimiter` from `start`.
fn skip_delimited(chars: &[char], start: usize, delimiter: char) -> Option<usize> {
    let mut i = start;
    while let Some(&c) = chars.get(i) {
        if c == '\\' {
            i += 2;
            continue;
        }
        if c == delimiter {
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts() {
        for ok in [
            "s/a/b/g",
            "1,5p",
            "/x/d",
            "s|a|b|2",
            "y/abc/xyz/",
            "$!N;P;D",
            "s/a\\/b/c/",
            "/^#/!s/x/y/",
            "/start/,/end/{p}",
            "/fn main/{p;q}",
            "1,/x/{/y/{s/a/b/p}}",
            // Text beyond ASCII between ASCII delimiters reads the same byte by byte.
            "/caf\u{e9}/p",
            "s/\u{2192}/->/g",
        ] {
            assert_eq!(sed_script_is_read_only(ok), Ok(()), "{ok}");
        }
        let risky = |line: &str| {
            let args: Vec<&str> = line.split(' ').collect();
            crate::resource::shell::registry::read("sed", &args)
                .findings
                .into_iter()
                .map(|f| f.detail)
                .collect::<Vec<_>>()
        };
        for line in [
            "-n --expr=1r.env -e p a.rs",
            "-n --e=1r.env -e p a.rs",
            "-n --fi=x.sed a",
            "-n -sf rr a.rs",
            "-n -Ef rr a.rs",
            "-ne 1r.env a.rs",
            "-n -e p -e 1r.env a.rs",
            "-n --frobnicate p a",
            "-n p a -e w.out",
        ] {
            assert!(!risky(line).is_empty(), "{line}");
        }
        // `-i` writes the files it reads: seen as writes, not refused outright.
        for line in ["-n --in-pl -e p a", "-ni p a"] {
            let args: Vec<&str> = line.split(' ').collect();
            let r = crate::resource::shell::registry::read("sed", &args);
            assert!(
                r.uses
                    .iter()
                    .any(|u| u.text == "a"
                        && u.kind == crate::resource::shell::registry::UseKind::Write),
                "{line}"
            );
        }
        for line in [
            "-n 1,5p a.rs",
            "-ne 1,5p a.rs",
            "--quiet -e p a",
            "-E -n s/a/b/p a",
            "p -- -x",
        ] {
            assert_eq!(risky(line), Vec::<String>::new(), "{line}");
        }
        for bad in [
            "s/test/touch \\/tmp\\/pwned/e",
            "w /tmp/x",
            "1,1w/Users/xpn/.zshenv",
            "r/etc/passwd",
            "s/a/b/w out",
            "e touch x",
            "1e id",
            "s/x/y/;w f",
            "/x/W f",
            "q; s/a/b/e",
            "k",
            "/x/{w f}",
            "/x/{p;s/a/b/w f}",
            "1{e id",
            "/x/!{r .env",
            // Read byte by byte in the C locale, `\xc3` is the delimiter and `é` holds one.
            "s\u{e9}*\u{c3}touch x;:\u{c3}e\n#\u{e9}\u{e9}",
            "s\u{c3}a\u{c3}b\u{c3}w out",
            "y\u{e9}a\u{e9}b\u{e9}",
            "\\\u{e9}x\u{e9}w out",
        ] {
            assert!(sed_script_is_read_only(bad).is_err(), "{bad}");
        }
    }
}
