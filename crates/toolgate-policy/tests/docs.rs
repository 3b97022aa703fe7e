//! The documentation cannot drift: every TOML block in the README and the policy reference loads,
//! and the JSON call in the reference parses.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use toolgate_policy::{Call, Policy};

fn blocks<'a>(markdown: &'a str, lang: &str) -> Vec<(usize, &'a str)> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = markdown;
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("```").expect("unclosed block");
        let line = markdown[..markdown.len() - rest.len() + start]
            .lines()
            .count()
            + 1;
        out.push((line, &body[..end]));
        rest = &body[end + 3..];
    }
    out
}

#[test]
fn every_toml_block_in_the_docs_loads() {
    for (file, text) in [
        ("docs/policy.md", include_str!("../../../docs/policy.md")),
        ("README.md", include_str!("../../../README.md")),
    ] {
        let found = blocks(text, "toml");
        assert!(!found.is_empty(), "{file} has no TOML blocks");
        for (line, block) in found {
            if let Err(e) = Policy::from_toml(&format!("{file}:{line}"), block) {
                panic!("the block at {file}:{line} does not load:\n{e}");
            }
        }
    }
}

#[test]
fn the_json_call_in_the_reference_parses() {
    let doc = include_str!("../../../docs/policy.md");
    let calls: Vec<_> = blocks(doc, "json")
        .into_iter()
        .filter(|(_, b)| b.contains("\"context\""))
        .collect();
    assert_eq!(calls.len(), 1);
    let call = Call::from_json(calls[0].1).unwrap();
    assert_eq!(call.tool, "write_file");
    assert!(!call.context.trusted_server);
}

#[test]
fn the_documented_small_payments_rule_fails_closed_as_described() {
    let doc = include_str!("../../../docs/policy.md");
    let (_, block) = blocks(doc, "toml")
        .into_iter()
        .find(|(_, b)| b.contains("gt = 0, lt = 100"))
        .unwrap();
    let policy = Policy::from_toml("doc.toml", block).unwrap();
    let e =
        policy.evaluate(&Call::from_json(r#"{"tool": "pay", "args": {"amount": "5"}}"#).unwrap());
    assert!(
        doc.contains(&format!(
            "# {{\"tool\": \"pay\", \"args\": {{\"amount\": \"5\"}}}} → deny: {}",
            e.reason.split(": argument").next().unwrap()
        )),
        "{}",
        e.reason
    );
    assert_eq!(
        &*e.reason,
        "rule `small-payments` could not be evaluated: argument `/amount`: `gt` needs a number, got a string"
    );
}
