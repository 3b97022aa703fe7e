//! How deeply JSON text nests, read from its bytes (before it is parsed): what a body or a
//! record may hold is bounded by it (serde_json reads at most 128 levels, and everything that
//! wraps what it holds adds a few).

/// How deeply JSON `text` nests when that is deeper than `limit` (see [`nesting`]); `None` when
/// it is not. Text with at most `limit` brackets that open (`[`, `{`, in strings or not) cannot
/// nest deeper, and is counted instead of read (a count of wide compares), where reading
/// follows strings a byte at a time (a commit's record on the approval path).
pub fn nests_deeper(text: &[u8], limit: usize) -> Option<usize> {
    if opening_brackets(text) <= limit {
        return None;
    }
    Some(nesting(text)).filter(|&depth| depth > limit)
}

/// How many `[` and `{` bytes `text` holds. Counted in runs of 255 into a byte, one compare a
/// byte (`[` is `{` but for the bit `0x20`, and no other byte is): the compiler turns that into
/// wide compares, where a plain count into a `usize` stayed about a byte at a time (~8× slower
/// on a 3 KB record).
fn opening_brackets(text: &[u8]) -> usize {
    text.chunks(255)
        .map(|run| {
            let in_run = run
                .iter()
                .fold(0u8, |n, &b| n.wrapping_add(u8::from((b | 0x20) == b'{')));
            usize::from(in_run)
        })
        .sum()
}

/// How deeply JSON `text` nests: the most arrays and objects open at once (strings skipped).
pub fn nesting(text: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &byte in text {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_that_is_a_bracket_that_opens_is_counted_and_no_other() {
        let every_byte: Vec<u8> = (0..=255u8).cycle().take(3 * 256 + 7).collect();
        assert_eq!(opening_brackets(&every_byte), 6);
        assert_eq!(opening_brackets(&[b'{'; 600]), 600);
        assert_eq!(opening_brackets(b""), 0);
    }
}
