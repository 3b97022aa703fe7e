//! The oracle: a small reference evaluator, written from DESIGN §4 without the engine's index,
//! compiled matchers or shortcuts, checked against the engine on random policies and calls.
//!
//! Random policies are generated as a model, rendered to TOML and loaded through the real
//! loader; the model is evaluated here by a plain scan. Both must agree on the decision, the
//! layer and the deciding rule, and `explain`'s trace must agree with both.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate_policy::{
    Call, Decision, Layer, LoadOptions, Policy, PolicySource, RunOptions, Verdict,
};

// ---------------------------------------------------------------------------------------------
// The model

const TOOLS: &[&str] = &[
    "read_file",
    "write_file",
    "bash",
    "fetch",
    "git_status",
    "git_push",
    "pay",
    "fs__read",
    "fs__write",
    "x",
];
const TOOL_PATTERNS: &[&str] = &[
    "read_file",
    "write_file",
    "bash",
    "pay",
    "x",
    "git_*",
    "fs__*",
    "*_file",
    "*",
    "?ash",
    "f*",
];
const TAGS: &[&str] = &[
    "read_only",
    "destructive",
    "network",
    "privileged",
    "billing",
];
const ACCESS: &[&str] = &["read", "write", "execute", "network"];
const ORIGINS: &[&str] = &["user", "network", "automation"];
const AGENTS: &[&str] = &["coder", "rev*", "reviewer"];
const MODES: &[&str] = &["deny-all", "approve-reads", "approve-all"];
const DECISIONS: &[&str] = &["allow", "ask", "deny"];
const BUILTINS: &[(&str, &str, &str)] = &[
    ("allow_readonly", "read_only", "allow"),
    ("ask_destructive", "destructive", "ask"),
    ("deny_privileged", "privileged", "deny"),
    ("ask_network", "network", "ask"),
];
const KEYS: &[&str] = &["a", "b", "n"];
const STRINGS: &[&str] = &["main", "dev", "src/a.rs", "x"];

#[derive(Clone, Debug)]
enum Test {
    Exists(bool),
    Equals(Value),
    OneOf(Vec<Value>),
    Lt(i64),
    Ge(i64),
    Glob(&'static str),
    Regex(&'static str, &'static str),
}

#[derive(Clone, Debug)]
struct MRule {
    name: String,
    builtin: Option<usize>,
    decision: &'static str,
    tools: Option<Vec<&'static str>>,
    tags: Option<Vec<&'static str>>,
    access: Option<Vec<&'static str>>,
    origin: Option<Vec<&'static str>>,
    agent: Option<Vec<&'static str>>,
    annotations: Option<(&'static str, bool)>,
    args: Vec<(&'static str, Test)>,
}

#[derive(Clone, Debug)]
struct MFile {
    mode: Option<&'static str>,
    fallback: Option<&'static str>,
    profiles: Vec<(&'static str, &'static str)>,
    rules: Vec<MRule>,
}

#[derive(Clone, Debug)]
struct MRun {
    mode: Option<&'static str>,
    full_access: bool,
    require: Option<&'static str>,
    disable: Option<&'static str>,
}

fn pick<T: Clone + std::fmt::Debug + 'static>(items: &'static [T]) -> impl Strategy<Value = T> {
    proptest::sample::select(items)
}

fn some_of(items: &'static [&'static str]) -> impl Strategy<Value = Option<Vec<&'static str>>> {
    proptest::option::weighted(0.3, proptest::sample::subsequence(items, 1..=2))
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i64..200).prop_map(Value::from),
        pick(STRINGS).prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(json!([1, "main"])),
        Just(Value::from(1.5)),
    ]
}

fn test() -> impl Strategy<Value = Test> {
    prop_oneof![
        any::<bool>().prop_map(Test::Exists),
        scalar().prop_map(Test::Equals),
        proptest::collection::vec(scalar(), 1..3).prop_map(Test::OneOf),
        (0i64..200).prop_map(Test::Lt),
        (0i64..200).prop_map(Test::Ge),
        pick(&["src/*", "m*", "*"]).prop_map(Test::Glob),
        pick(&[("main", "dev"), ("x", "src/a.rs")]).prop_map(|(a, b)| Test::Regex(a, b)),
    ]
}

fn rule() -> impl Strategy<Value = MRule> {
    (
        proptest::option::weighted(0.15, 0..BUILTINS.len()),
        pick(DECISIONS),
        some_of(TOOL_PATTERNS),
        some_of(TAGS),
        proptest::option::weighted(0.2, proptest::sample::subsequence(ACCESS, 1..=2)),
        proptest::option::weighted(0.2, proptest::sample::subsequence(ORIGINS, 1..=2)),
        proptest::option::weighted(0.15, proptest::sample::subsequence(AGENTS, 1..=2)),
        proptest::option::weighted(
            0.15,
            (pick(&["readOnlyHint", "destructiveHint"]), any::<bool>()),
        ),
        proptest::collection::vec((pick(KEYS), test()), 0..3),
    )
        .prop_map(
            |(builtin, decision, tools, tags, access, origin, agent, annotations, mut args)| {
                // One condition per pointer, as TOML table keys are unique.
                let mut seen = Vec::new();
                args.retain(|(k, _)| {
                    let fresh = !seen.contains(k);
                    seen.push(*k);
                    fresh
                });
                MRule {
                    name: String::new(),
                    builtin,
                    decision,
                    tools,
                    tags,
                    access,
                    origin,
                    agent,
                    annotations,
                    args,
                }
            },
        )
}

fn file() -> impl Strategy<Value = MFile> {
    (
        proptest::option::weighted(0.5, pick(MODES)),
        proptest::option::weighted(0.3, pick(DECISIONS)),
        proptest::collection::vec((pick(TOOL_PATTERNS), pick(ACCESS)), 0..2),
        proptest::collection::vec(rule(), 0..8),
    )
        .prop_map(|(mode, fallback, profiles, rules)| MFile {
            mode,
            fallback,
            profiles,
            rules,
        })
}

fn files() -> impl Strategy<Value = Vec<MFile>> {
    proptest::collection::vec(file(), 1..3).prop_map(|mut files| {
        for (f, file) in files.iter_mut().enumerate() {
            for (r, rule) in file.rules.iter_mut().enumerate() {
                rule.name = match rule.builtin {
                    Some(b) => BUILTINS[b].0.to_owned(),
                    None => format!("f{f}r{r}"),
                };
            }
        }
        files
    })
}

fn call() -> impl Strategy<Value = Value> {
    (
        pick(TOOLS),
        proptest::collection::btree_map(pick(KEYS), scalar(), 0..3),
        proptest::sample::subsequence(TAGS, 0..=2),
        proptest::option::of((pick(&["readOnlyHint", "destructiveHint"]), any::<bool>())),
        proptest::option::of(pick(ORIGINS)),
        proptest::option::of(pick(&["coder", "reviewer", "x"])),
        proptest::option::of(pick(&["fs", "web"])),
        any::<bool>(),
        proptest::option::weighted(0.2, pick(MODES)),
        proptest::bool::weighted(0.05),
    )
        .prop_map(|(tool, args, tags, hint, origin, agent, server, trusted, mode, bad_args)| {
            let mut context = Map::new();
            if let Some(o) = origin {
                context.insert("origin".into(), o.into());
            }
            if let Some(a) = agent {
                context.insert("agent".into(), a.into());
            }
            if let Some(s) = server {
                context.insert("server".into(), s.into());
            }
            if trusted {
                context.insert("trusted_server".into(), true.into());
            }
            if let Some(m) = mode {
                context.insert("mode".into(), m.into());
            }
            let args: Value = if bad_args {
                json!(["not", "an", "object"])
            } else {
                Value::Object(args.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            };
            let mut annotations = Map::new();
            if let Some((k, v)) = hint {
                annotations.insert(k.into(), v.into());
            }
            json!({"tool": tool, "args": args, "tags": tags, "annotations": annotations, "context": context})
        })
}

fn run() -> impl Strategy<Value = MRun> {
    (
        proptest::option::weighted(0.2, pick(MODES)),
        proptest::bool::weighted(0.15),
        proptest::option::weighted(0.15, pick(TOOLS)),
        proptest::option::weighted(0.15, pick(TOOLS)),
    )
        .prop_map(|(mode, full_access, require, disable)| MRun {
            mode,
            full_access,
            require,
            disable,
        })
}

// ---------------------------------------------------------------------------------------------
// Rendering the model as TOML

fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| q(s)).collect();
    format!("[{}]", quoted.join(", "))
}

fn toml_value(v: &Value) -> String {
    match v {
        Value::String(s) => q(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

fn render(file: &MFile) -> String {
    let mut out = String::from("version = 1\n");
    if let Some(m) = file.mode {
        out += &format!("mode = {}\n", q(m));
    }
    if let Some(f) = file.fallback {
        out += &format!("fallback = {}\n", q(f));
    }
    for (pattern, access) in &file.profiles {
        out += &format!(
            "\n[[tool]]\nmatch = {}\naccess = {}\n",
            q(pattern),
            q(access)
        );
    }
    for rule in &file.rules {
        out += "\n[[rule]]\n";
        if let Some(b) = rule.builtin {
            out += &format!("builtin = {}\n", q(BUILTINS[b].0));
            continue;
        }
        out += &format!(
            "name = {}\ndecision = {}\n",
            q(&rule.name),
            q(rule.decision)
        );
        if let Some(t) = &rule.tools {
            out += &format!("tool = {}\n", list(t));
        }
        if let Some(t) = &rule.tags {
            out += &format!("tags = {}\n", list(t));
        }
        if let Some(a) = &rule.access {
            out += &format!("access = {}\n", list(a));
        }
        if let Some(o) = &rule.origin {
            out += &format!("origin = {}\n", list(o));
        }
        if let Some(a) = &rule.agent {
            out += &format!("agent = {}\n", list(a));
        }
        if let Some((k, v)) = rule.annotations {
            out += &format!("annotations = {{ {k} = {v} }}\n");
        }
        if !rule.args.is_empty() {
            let parts: Vec<String> = rule
                .args
                .iter()
                .map(|(k, t)| {
                    let test = match t {
                        Test::Exists(b) => format!("exists = {b}"),
                        Test::Equals(v) => format!("equals = {}", toml_value(v)),
                        Test::OneOf(vs) => {
                            format!("one_of = {}", toml_value(&Value::Array(vs.clone())))
                        }
                        Test::Lt(n) => format!("lt = {n}"),
                        Test::Ge(n) => format!("ge = {n}"),
                        Test::Glob(g) => format!("glob = {}", q(g)),
                        Test::Regex(a, b) => format!("regex = {}", q(&format!("{a}|{b}"))),
                    };
                    format!("{} = {{ {test} }}", q(&format!("/{k}")))
                })
                .collect();
            out += &format!("args = {{ {} }}\n", parts.join(", "));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The reference evaluator

/// `*` any run of characters (including `/`), `?` one character.
fn wildcard(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    fn go(p: &[char], t: &[char]) -> bool {
        match p.first() {
            None => t.is_empty(),
            Some('*') => (0..=t.len()).any(|i| go(&p[1..], &t[i..])),
            Some('?') => !t.is_empty() && go(&p[1..], &t[1..]),
            Some(c) => t.first() == Some(c) && go(&p[1..], &t[1..]),
        }
    }
    go(&p, &t)
}

fn num_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| num_eq(p, q))
        }
        _ => a == b,
    }
}

/// `Some(true)` holds, `Some(false)` does not, `None` cannot be judged.
fn judge(test: &Test, value: Option<&Value>) -> Option<bool> {
    let Some(v) = value else {
        return Some(matches!(test, Test::Exists(false)));
    };
    match test {
        Test::Exists(b) => Some(*b),
        Test::Equals(e) => Some(num_eq(v, e)),
        Test::OneOf(es) => Some(es.iter().any(|e| num_eq(v, e))),
        Test::Lt(n) => v.as_f64().map(|x| x < *n as f64),
        Test::Ge(n) => v.as_f64().map(|x| x >= *n as f64),
        Test::Glob(g) => v.as_str().map(|s| wildcard(g, s)),
        Test::Regex(a, b) => v.as_str().map(|s| s == *a || s == *b),
    }
}

const BUILTIN_PROFILES: &[(&str, &str)] = &[
    ("read_file", "read"),
    ("write_file", "write"),
    ("bash", "execute"),
    ("fetch", "network"),
    ("git_status", "read"),
];

fn tags_of(call: &Value) -> Vec<&str> {
    call["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect()
}

struct Facts {
    access: Option<&'static str>,
    read: bool,
    hidden: bool,
}

/// A call's access: the first policy profile, else the built-in one, else (outside a turn that
/// came over the network) a `read_only` tag or a trusted server's `readOnlyHint`.
fn facts(files: &[MFile], call: &Value) -> Facts {
    let tool = call["tool"].as_str().unwrap();
    let trusted = call["context"]["trusted_server"].as_bool().unwrap_or(false);
    let own = files
        .iter()
        .flat_map(|f| f.profiles.iter())
        .find(|(p, _)| wildcard(p, tool))
        .map(|(_, a)| *a);
    let builtin = BUILTIN_PROFILES
        .iter()
        .find(|(name, _)| *name == tool)
        .map(|(_, a)| *a);
    // In a turn that came over the network, a tool without a profile is not a read.
    let network_turn = call["context"]["origin"] == json!("network");
    let hinted = !network_turn
        && (tags_of(call).contains(&"read_only")
            || (trusted && call["annotations"]["readOnlyHint"] == json!(true)));
    let access = own.or(builtin).or(hinted.then_some("read"));
    // A built-in profile names where its resources are (`/path`, `/command`, `/url`, …), and
    // none of these calls' keys is one: arguments that carry a text or a number name their
    // resource where toolgate does not look.
    let hidden = own.is_none() && builtin.is_some() && carries_something(&call["args"]);
    Facts {
        access,
        read: access == Some("read"),
        hidden,
    }
}

fn carries_something(value: &Value) -> bool {
    match value {
        Value::String(_) | Value::Number(_) => true,
        Value::Array(items) => items.iter().any(carries_something),
        Value::Object(map) => map.values().any(carries_something),
        Value::Null | Value::Bool(_) => false,
    }
}

enum Outcome {
    Match,
    Miss,
    Error,
}

fn rule_outcome(rule: &MRule, call: &Value, facts: &Facts) -> Outcome {
    let tool = call["tool"].as_str().unwrap();
    let ctx = &call["context"];
    let tags = tags_of(call);
    if let Some(b) = rule.builtin {
        // A built-in tag rule also holds by what the call's profile says it does:
        // `ask_network` for network access, `allow_readonly` for a read.
        let by_access = match BUILTINS[b].1 {
            "network" => facts.access == Some("network"),
            "read_only" => facts.read,
            _ => false,
        };
        return if tags.contains(&BUILTINS[b].1) || by_access {
            Outcome::Match
        } else {
            Outcome::Miss
        };
    }
    let allow = rule.decision == "allow";
    let mut holds = vec![];
    if let Some(t) = &rule.tools {
        holds.push(Some(t.iter().any(|p| wildcard(p, tool))));
    }
    if let Some(t) = &rule.tags {
        holds.push(Some(t.iter().any(|x| tags.contains(x))));
    }
    if let Some(a) = &rule.access {
        holds.push(Some(facts.access.is_some_and(|x| a.contains(&x))));
    }
    if let Some(o) = &rule.origin {
        holds.push(Some(ctx["origin"].as_str().is_some_and(|x| o.contains(&x))));
    }
    if let Some(a) = &rule.agent {
        holds.push(Some(
            ctx["agent"]
                .as_str()
                .is_some_and(|x| a.iter().any(|p| wildcard(p, x))),
        ));
    }
    if let Some((k, v)) = rule.annotations {
        let trusted = ctx["trusted_server"].as_bool().unwrap_or(false);
        holds.push(Some(
            call["annotations"][k] == json!(v) && (!allow || trusted),
        ));
    }
    for (k, test) in &rule.args {
        holds.push(judge(test, call["args"].get(*k)));
    }
    if holds.contains(&Some(false)) {
        Outcome::Miss
    } else if holds.contains(&None) {
        Outcome::Error
    } else {
        Outcome::Match
    }
}

fn decision(s: &str) -> Decision {
    s.parse().unwrap()
}

fn strictness(mode: &str) -> u8 {
    MODES
        .iter()
        .position(|m| *m == mode)
        .map(|i| 2 - i as u8)
        .unwrap()
}

/// The reference answer: (decision, layer, rule name).
fn oracle(files: &[MFile], call: &Value, run: &MRun) -> (Decision, Layer, Option<String>) {
    let tool = call["tool"].as_str().unwrap();
    let file_mode = files
        .iter()
        .filter_map(|f| f.mode)
        .max_by_key(|m| strictness(m))
        .unwrap_or("approve-reads");
    let mode = call["context"]["mode"]
        .as_str()
        .or(run.mode)
        .unwrap_or(file_mode);
    if !call["args"].is_object() {
        return (Decision::Deny, Layer::Validate, None);
    }
    let facts = facts(files, call);
    // The one guard these calls can meet: a network-originated turn never writes.
    if call["context"]["origin"] == json!("network") && facts.access == Some("write") {
        return (Decision::Deny, Layer::Guard, Some("network-origin".into()));
    }
    // Each file: its first matching (or failing) rule.
    let mut best: Option<(Decision, String)> = None;
    for file in files {
        for rule in &file.rules {
            let d = match rule_outcome(rule, call, &facts) {
                Outcome::Miss => continue,
                Outcome::Match => decision(rule.builtin.map_or(rule.decision, |b| BUILTINS[b].2)),
                Outcome::Error => Decision::Deny,
            };
            if best.as_ref().is_none_or(|(b, _)| d > *b) {
                best = Some((d, rule.name.clone()));
            }
            break;
        }
    }
    let (d, layer, rule) = match best {
        Some((d, name)) => (d, Layer::Rule, Some(name)),
        None => {
            let fallback = files.iter().filter_map(|f| f.fallback).map(decision).max();
            let d = match (fallback, mode) {
                (Some(f), _) => f,
                (None, "approve-all") => Decision::Allow,
                (None, "approve-reads") if facts.read => Decision::Allow,
                (None, _) => Decision::Ask,
            };
            (d, Layer::Default, None)
        }
    };
    // Such a call asks at the guard unless a rule or the fallback denies it; no override or
    // mode loosens a guard.
    let (mut d, mut layer, rule) = if facts.hidden && d <= Decision::Ask {
        (
            Decision::Ask,
            Layer::Guard,
            Some("unanalysable-command".to_owned()),
        )
    } else {
        (d, layer, rule)
    };
    if run.require == Some(tool) && d == Decision::Allow {
        (d, layer) = (Decision::Ask, Layer::Override);
    } else if run.disable == Some(tool)
        && run.require != Some(tool)
        && d == Decision::Ask
        && layer != Layer::Guard
    {
        (d, layer) = (Decision::Allow, Layer::Override);
    }
    if mode == "deny-all" && d == Decision::Allow {
        (d, layer) = (Decision::Ask, Layer::Mode);
    }
    if run.full_access && d == Decision::Ask && layer != Layer::Guard {
        (d, layer) = (Decision::Allow, Layer::Override);
    }
    (d, layer, rule)
}

fn run_options(run: &MRun) -> RunOptions {
    let mut options = RunOptions::default().with_full_access(run.full_access);
    if let Some(m) = run.mode {
        options = options.with_mode(m.parse().unwrap());
    }
    // The model applies `require` when both name the same tool; so does a later insert.
    if let Some(t) = run.disable {
        options.disable_permission_for(t);
    }
    if let Some(t) = run.require {
        options.require_permission_for(t);
    }
    options
}

fn load(files: &[MFile]) -> Policy {
    let sources = files
        .iter()
        .enumerate()
        .map(|(i, f)| PolicySource::given(format!("f{i}.toml"), render(f)))
        .collect();
    match Policy::load(sources, LoadOptions::default()) {
        Ok(p) => p,
        Err(e) => panic!(
            "generated policy failed to load:\n{e}\n{}",
            files.iter().map(render).collect::<Vec<_>>().join("\n---\n")
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn the_engine_agrees_with_the_oracle(files in files(), calls in proptest::collection::vec(call(), 1..6), run in run()) {
        let policy = load(&files);
        let options = run_options(&run);
        for json in &calls {
            let call = Call::from_value(json.clone()).unwrap();
            let got = policy.evaluate_with(&call, &options);
            let want = oracle(&files, json, &run);
            prop_assert_eq!(
                (got.decision, got.layer, got.rule_name().map(str::to_owned)),
                want,
                "call {}\npolicy:\n{}", json, files.iter().map(render).collect::<Vec<_>>().join("\n---\n")
            );
            // explain: the same evaluation, and per file the first matching or failing rule is
            // the one the oracle's scan stops at.
            let explanation = policy.explain(&call, &options);
            prop_assert_eq!(&explanation.evaluation, &got);
            for subject in &explanation.subjects {
                for (file, trace) in files.iter().zip(&subject.files) {
                    let facts = facts(&files, json);
                    let stop = file.rules.iter().position(|r| !matches!(rule_outcome(r, json, &facts), Outcome::Miss));
                    let traced = trace.rules.iter().position(|r| matches!(r.verdict, Verdict::Matched | Verdict::Failed));
                    prop_assert_eq!(stop, traced);
                }
            }
        }
    }
}

#[test]
fn the_wildcard_reference_matches_globset_on_the_patterns_used() {
    for pattern in TOOL_PATTERNS {
        for tool in TOOLS {
            let policy = Policy::from_toml(
                "p.toml",
                &format!(
                    "[[rule]]\nname = \"r\"\ndecision = \"deny\"\ntool = {}\n",
                    q(pattern)
                ),
            )
            .unwrap();
            let engine = policy.evaluate(&Call::new(*tool)).rule_name().is_some();
            assert_eq!(engine, wildcard(pattern, tool), "{pattern} {tool}");
        }
    }
}
