//! "Did you mean" suggestions for misspelt keys and values.

/// The closest of `candidates` to `input`, if it is close enough to be a likely typo.
///
/// Close means: equal ignoring case, `-` and `_`; a prefix of at least three characters; or
/// within an edit distance (transpositions count one) of a third of the longer word.
pub(crate) fn closest<'a>(input: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let folded = fold(input);
    if let Some(hit) = candidates.iter().find(|c| fold(c) == folded) {
        return Some(hit);
    }
    if folded.chars().count() >= 3
        && let Some(hit) = candidates.iter().find(|c| fold(c).starts_with(&folded))
    {
        return Some(hit);
    }
    candidates
        .iter()
        .map(|c| (distance(input, c), *c))
        .filter(|(d, c)| *d <= (input.chars().count().max(c.chars().count()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn fold(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Edit distance in characters, where swapping two neighbours counts as one edit (optimal
/// string alignment).
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d: Vec<usize> = vec![0; (a.len() + 1) * width];
    let at = |i: usize, j: usize| i * width + j;
    for i in 0..=a.len() {
        if let Some(cell) = d.get_mut(at(i, 0)) {
            *cell = i;
        }
    }
    for j in 0..=b.len() {
        if let Some(cell) = d.get_mut(at(0, j)) {
            *cell = j;
        }
    }
    for (i, ca) in a.iter().enumerate() {
        for (j, cb) in b.iter().enumerate() {
            let get = |i: usize, j: usize| d.get(at(i, j)).copied().unwrap_or(usize::MAX - 1);
            let cost = usize::from(ca != cb);
            let mut best = (get(i, j + 1) + 1)
                .min(get(i + 1, j) + 1)
                .min(get(i, j) + cost);
            if i > 0 && j > 0 && a.get(i - 1) == Some(cb) && b.get(j - 1) == Some(ca) {
                best = best.min(get(i - 1, j - 1) + 1);
            }
            if let Some(cell) = d.get_mut(at(i + 1, j + 1)) {
                *cell = best;
            }
        }
    }
    d.get(at(a.len(), b.len())).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("decison", "decision"), 1);
        assert_eq!(distance("mdoe", "mode"), 1);
    }

    #[test]
    fn suggestions() {
        let keys = ["decision", "reason", "tool", "tags"];
        assert_eq!(closest("decison", &keys), Some("decision"));
        assert_eq!(closest("Decision", &keys), Some("decision"));
        assert_eq!(closest("tol", &keys), Some("tool"));
        assert_eq!(closest("xyzzy", &keys), None);
        assert_eq!(closest("exec", &["read", "execute"]), Some("execute"));
        assert_eq!(
            closest("approve_reads", &["approve-reads"]),
            Some("approve-reads")
        );
    }
}
