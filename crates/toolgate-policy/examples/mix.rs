//! The benchmark rule mix, shared by `benches/evaluate.rs` and the side-by-side run against
//! toolregistry, which runs this example to write the files both sides load:
//!
//! ```sh
//! cargo run --release -p toolgate-policy --example mix -- 1000 OUT_DIR
//! ```
//!
//! Rule `i` of `n`, by `i % 4`: an exact tool name (allow); a tool glob with the `network` tag
//! (ask); an exact tool name with two argument predicates (allow); a custom tag (deny).
#![allow(dead_code, clippy::expect_used)]

/// The policy of `rules` rules, as TOML.
pub(crate) fn policy_toml(rules: usize) -> String {
    let mut out = String::from("version = 1\nmode = \"approve-reads\"\n");
    for i in 0..rules {
        out.push_str(&format!("\n[[rule]]\nname = \"r{i}\"\n"));
        match i % 4 {
            0 => out.push_str(&format!("decision = \"allow\"\ntool = \"tool_{i}\"\n")),
            1 => out.push_str(&format!(
                "decision = \"ask\"\ntool = \"svc{i}__*\"\ntags = [\"network\"]\n"
            )),
            2 => out.push_str(&format!(
                "decision = \"allow\"\ntool = \"pay_{i}\"\nargs = {{ \"/amount\" = {{ lt = 100 }}, \"/currency\" = {{ one_of = [\"EUR\", \"USD\"] }} }}\n"
            )),
            _ => out.push_str(&format!("decision = \"deny\"\ntags = [\"tag_{i}\"]\n")),
        }
    }
    out
}

/// The call rule `i` matches (and no earlier rule does).
pub(crate) fn call_for(i: usize) -> String {
    match i % 4 {
        0 => format!(r#"{{"tool": "tool_{i}"}}"#),
        1 => format!(r#"{{"tool": "svc{i}__query", "tags": ["network"]}}"#),
        2 => format!(r#"{{"tool": "pay_{i}", "args": {{"amount": 20, "currency": "EUR"}}}}"#),
        _ => format!(r#"{{"tool": "anything", "tags": ["tag_{i}"]}}"#),
    }
}

/// First match, last match, no match, as call JSON.
pub(crate) fn calls(rules: usize) -> [String; 3] {
    [
        call_for(0),
        call_for(rules.saturating_sub(1)),
        r#"{"tool": "unknown_tool", "args": {"amount": 20, "currency": "EUR"}, "tags": ["nothing"]}"#
            .to_owned(),
    ]
}

/// Writes `policy.toml` and `calls.jsonl` (first, last and no match, with the decision each must
/// get) for `RULES` rules into `OUT_DIR`.
fn main() {
    let mut args = std::env::args().skip(1);
    let rules: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .expect("usage: mix RULES OUT_DIR");
    let dir = std::path::PathBuf::from(args.next().expect("usage: mix RULES OUT_DIR"));
    std::fs::write(dir.join("policy.toml"), policy_toml(rules)).expect("write policy.toml");
    let expect = |i: usize| match i % 4 {
        0 | 2 => "allow",
        1 => "ask",
        _ => "deny",
    };
    let [first, last, miss] = calls(rules);
    let lines = [
        format!(
            r#"{{"label": "first", "expect": "{}", "call": {first}}}"#,
            expect(0)
        ),
        format!(
            r#"{{"label": "last", "expect": "{}", "call": {last}}}"#,
            expect(rules - 1)
        ),
        format!(r#"{{"label": "miss", "expect": "ask", "call": {miss}}}"#),
    ];
    std::fs::write(dir.join("calls.jsonl"), lines.join("\n") + "\n").expect("write calls.jsonl");
}
