//! Reading JSON Lines input: bounded line length, any bytes, one result per line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use serde_json::Value;
use toolgate_policy::{Call, CallError, CallErrorKind};

use crate::Failure;

/// The longest input line accepted; longer lines are reported and skipped.
pub(crate) const MAX_LINE: usize = 16 << 20;

/// One non-blank input line, parsed.
pub(crate) struct Line {
    /// 1-based line number.
    pub(crate) number: u64,
    /// The `id` the line carried, echoed in the output.
    pub(crate) id: Option<Value>,
    /// The call, or why the line is not one.
    pub(crate) call: Result<Call, CallError>,
}

/// Opens the input: the file, or stdin for `None` or `-`.
pub(crate) fn open(input: Option<&Path>) -> Result<Box<dyn BufRead>, Failure> {
    match input {
        Some(path) if path != Path::new("-") => {
            let file = File::open(path).map_err(|e| {
                Failure::Message(format!("error: cannot read `{}`: {e}", path.display()))
            })?;
            Ok(Box::new(BufReader::new(file)))
        }
        _ => Ok(Box::new(BufReader::new(io::stdin()))),
    }
}

/// Reads lines of at most [`MAX_LINE`] bytes. `Ok(None)` at the end of input; a longer line is
/// consumed to its end and returned as `Err(len)`.
pub(crate) fn read_line(
    reader: &mut dyn BufRead,
    buf: &mut Vec<u8>,
) -> io::Result<Option<Result<(), usize>>> {
    buf.clear();
    let mut too_long = 0usize;
    let mut saw_any = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        saw_any = true;
        let (part, done) = match memchr(chunk) {
            Some(i) => (chunk.get(..i).unwrap_or_default(), Some(i + 1)),
            None => (chunk, None),
        };
        if too_long > 0 || buf.len() + part.len() > MAX_LINE {
            too_long = too_long.saturating_add(buf.len() + part.len());
            buf.clear();
        } else {
            buf.extend_from_slice(part);
        }
        let used = done.unwrap_or(chunk.len());
        reader.consume(used);
        if done.is_some() {
            break;
        }
    }
    if !saw_any {
        return Ok(None);
    }
    if too_long > 0 {
        return Ok(Some(Err(too_long)));
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Some(Ok(())))
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

/// Iterates over the non-blank lines of the input as calls.
pub(crate) fn for_each_call(
    reader: &mut dyn BufRead,
    mut each: impl FnMut(Line) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut buf = Vec::new();
    let mut number = 0u64;
    while let Some(status) = read_line(reader, &mut buf)? {
        number += 1;
        let call = match status {
            Err(len) => Err(CallError {
                kind: CallErrorKind::InvalidJson,
                message: format!("line is {len} bytes, more than the limit of {MAX_LINE}"),
            }),
            Ok(()) => match std::str::from_utf8(&buf) {
                Err(e) => Err(CallError {
                    kind: CallErrorKind::InvalidJson,
                    message: format!("line is not UTF-8 (byte {})", e.valid_up_to()),
                }),
                Ok(text) if text.trim().is_empty() => continue,
                Ok(text) => parse_line(text),
            },
        };
        let (id, call) = match call {
            Ok((id, call)) => (id, call),
            Err(e) => (None, Err(e)),
        };
        each(Line { number, id, call })?;
    }
    Ok(())
}

type Parsed = (Option<Value>, Result<Call, CallError>);

fn parse_line(text: &str) -> Result<Parsed, CallError> {
    let mut value: Value = serde_json::from_str(text).map_err(|e| CallError {
        kind: CallErrorKind::InvalidJson,
        message: e.to_string(),
    })?;
    let id = value.as_object_mut().and_then(|m| m.remove("id"));
    Ok((id, Call::from_value(value)))
}

/// Reads the whole of a small file (cases).
pub(crate) fn read_to_string(path: &Path) -> Result<String, Failure> {
    let mut text = String::new();
    File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| Failure::Message(format!("error: cannot read `{}`: {e}", path.display())))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_split_bounded_and_crlf_trimmed() {
        let mut input: &[u8] = b"a\r\nbb\n\nlast";
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while let Some(status) = read_line(&mut input, &mut buf).unwrap() {
            assert!(status.is_ok());
            out.push(String::from_utf8(buf.clone()).unwrap());
        }
        assert_eq!(out, ["a", "bb", "", "last"]);
    }

    #[test]
    fn an_overlong_line_is_skipped_and_the_next_is_read() {
        let mut data = vec![b'x'; MAX_LINE + 10];
        data.extend_from_slice(b"\nok\n");
        let mut input: &[u8] = &data;
        let mut buf = Vec::new();
        assert_eq!(
            read_line(&mut input, &mut buf).unwrap(),
            Some(Err(MAX_LINE + 10))
        );
        assert_eq!(read_line(&mut input, &mut buf).unwrap(), Some(Ok(())));
        assert_eq!(buf, b"ok");
        assert_eq!(read_line(&mut input, &mut buf).unwrap(), None);
    }
}
