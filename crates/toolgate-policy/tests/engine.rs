//! The engine's semantics: the seeds' behaviour (first match, fallback, the five built-ins, AGH's
//! modes) and DESIGN's fixes (ask without a handler denies, a failing predicate denies naming the
//! rule, non-object arguments are rejected before any rule runs).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use toolgate_policy::{
    AlwaysScope, AskDetails, AskRequest, Builtin, Call, CallErrorKind, Choice, Decision,
    Evaluation, GrantKind, Layer, LoadOptions, Mode, Policy, PolicyRole, PolicySource, Rule,
    RuleInfo, RunOptions, Severity, Subject, SubjectOutcome, Tag, Verdict,
};

fn policy(toml: &str) -> Policy {
    Policy::from_toml("p.toml", toml).unwrap_or_else(|e| panic!("{e}"))
}

fn call(json: serde_json::Value) -> Call {
    Call::from_value(json).unwrap()
}

fn eval(toml: &str, json: serde_json::Value) -> Evaluation {
    policy(toml).evaluate(&call(json))
}

fn summary(e: &Evaluation) -> (Decision, Layer, Option<&str>, &str) {
    (e.decision, e.layer, e.rule_name(), &e.reason)
}

fn info(name: &str, line: u32) -> Arc<RuleInfo> {
    Arc::new(RuleInfo {
        name: name.into(),
        file: Some("p.toml".into()),
        line: Some(line),
        builtin: false,
        unsandboxed: false,
    })
}

const DENY_THEN_ALLOW: &str = r#"
[[rule]]
name = "d"
decision = "deny"
tool = "add"

[[rule]]
name = "a"
decision = "allow"
tool = "add"
"#;

#[test]
fn first_match_wins_as_a_whole_evaluation() {
    let got = eval(DENY_THEN_ALLOW, json!({"tool": "add", "args": {"a": 1}}));
    let expected = Evaluation {
        decision: Decision::Deny,
        reason: "matched rule `d`".into(),
        layer: Layer::Rule,
        rule: Some(info("d", 2)),
        subjects: vec![SubjectOutcome {
            subject: Subject::Call,
            decision: Decision::Deny,
            layer: Layer::Rule,
            rule: Some(info("d", 2)),
            reason: "matched rule `d`".into(),
        }],
        mode: Mode::ApproveReads,
        ask: None,
        args: None,
        error: None,
        access: None,
    };
    assert_eq!(got, expected);
    let swapped = DENY_THEN_ALLOW
        .replace("\"deny\"", "\"tmp\"")
        .replace("\"allow\"", "\"deny\"")
        .replace("\"tmp\"", "\"allow\"");
    let got = eval(&swapped, json!({"tool": "add"}));
    assert_eq!(
        summary(&got),
        (Decision::Allow, Layer::Rule, Some("d"), "matched rule `d`")
    );
}

#[test]
fn fallback_decides_unmatched_calls_and_beats_the_mode() {
    for (fallback, decision) in [
        ("allow", Decision::Allow),
        ("ask", Decision::Ask),
        ("deny", Decision::Deny),
    ] {
        let toml = format!("mode = \"approve-all\"\nfallback = \"{fallback}\"\n{DENY_THEN_ALLOW}");
        let got = eval(&toml, json!({"tool": "other"}));
        let reason = format!("no rule matched; the policy's fallback is `{fallback}`");
        assert_eq!(
            summary(&got),
            (decision, Layer::Default, None, reason.as_str())
        );
    }
}

#[test]
fn the_five_builtins_keep_toolregistrys_names_results_and_reasons() {
    let cases = [
        (
            "allow_readonly",
            "read_only",
            Decision::Allow,
            "Tool is read-only",
        ),
        (
            "ask_destructive",
            "destructive",
            Decision::Ask,
            "Tool is marked as destructive",
        ),
        (
            "deny_privileged",
            "privileged",
            Decision::Deny,
            "Tool requires elevated permissions",
        ),
        (
            "ask_network",
            "network",
            Decision::Ask,
            "Tool requires network access",
        ),
        (
            "ask_file_system",
            "file_system",
            Decision::Ask,
            "Tool accesses the file system",
        ),
    ];
    for (name, tag, decision, reason) in cases {
        let toml = format!("fallback = \"deny\"\n[[rule]]\nbuiltin = \"{name}\"\n");
        let got = eval(
            &toml,
            json!({"tool": "add", "args": {"a": 5, "b": 6}, "tags": [tag]}),
        );
        assert_eq!(summary(&got), (decision, Layer::Rule, Some(name), reason));
        assert!(got.rule.as_ref().unwrap().builtin);
        // No other tag (not even `slow`) triggers it.
        let got = eval(&toml, json!({"tool": "add", "tags": ["slow"]}));
        assert_eq!(got.layer, Layer::Default);
        // The same from code.
        let builtin: Builtin = name.parse().unwrap();
        let coded = Policy::builder()
            .builtin(builtin)
            .fallback(Decision::Deny)
            .build();
        let got = coded.evaluate(&Call::new("add").with_tag(Tag::parse(tag)));
        assert_eq!(summary(&got), (decision, Layer::Rule, Some(name), reason));
    }
}

#[test]
fn a_custom_tag_never_satisfies_a_builtin_one() {
    let toml = "fallback = \"deny\"\n[[rule]]\nbuiltin = \"allow_readonly\"\n";
    for tag in ["read-only", "READ_ONLY", "readonly", "read_only "] {
        let got = eval(toml, json!({"tool": "t", "tags": [tag]}));
        assert_eq!(got.decision, Decision::Deny, "{tag}");
    }
    let coded = Policy::builder()
        .builtin(Builtin::AllowReadonly)
        .fallback(Decision::Deny)
        .build();
    let got = coded.evaluate(&Call::new("t").with_tag(Tag::Custom("read_only".into())));
    assert_eq!(got.decision, Decision::Deny);
}

#[test]
fn builtin_order_decides_a_tool_tagged_both_ways() {
    let call = json!({"tool": "t", "tags": ["read_only", "destructive"]});
    let a = "[[rule]]\nbuiltin = \"allow_readonly\"\n[[rule]]\nbuiltin = \"ask_destructive\"\n";
    let b = "[[rule]]\nbuiltin = \"ask_destructive\"\n[[rule]]\nbuiltin = \"allow_readonly\"\n";
    assert_eq!(eval(a, call.clone()).decision, Decision::Allow);
    assert_eq!(eval(b, call).decision, Decision::Ask);
}

#[test]
fn modes_decide_what_no_rule_matches() {
    let read = json!({"tool": "read_file", "args": {"path": "a"}});
    let write = json!({"tool": "write_file", "args": {"path": "a"}});
    let cases = [
        (
            "approve-all",
            &read,
            Decision::Allow,
            "no rule matched; approve-all allows it",
        ),
        (
            "approve-all",
            &write,
            Decision::Allow,
            "no rule matched; approve-all allows it",
        ),
        (
            "approve-reads",
            &read,
            Decision::Allow,
            "no rule matched; approve-reads allows reads",
        ),
        (
            "approve-reads",
            &write,
            Decision::Ask,
            "no rule matched; approve-reads asks for anything that is not a read",
        ),
        (
            "",
            &write,
            Decision::Ask,
            "no rule matched; approve-reads asks for anything that is not a read",
        ),
        (
            "deny-all",
            &read,
            Decision::Ask,
            "no rule matched; deny-all asks for everything",
        ),
        (
            "deny-all",
            &write,
            Decision::Ask,
            "no rule matched; deny-all asks for everything",
        ),
    ];
    for (mode, call, decision, reason) in cases {
        let got = eval(&format!("mode = \"{mode}\""), call.clone());
        assert_eq!(
            summary(&got),
            (decision, Layer::Default, None, reason),
            "{mode} {call}"
        );
    }
}

#[test]
fn deny_all_is_a_ceiling_nothing_is_allowed_without_a_human() {
    let toml = r#"
mode = "deny-all"
fallback = "allow"

[[rule]]
name = "ok"
decision = "allow"
tool = "read_file"

[[rule]]
name = "no"
decision = "deny"
tool = "rm"
"#;
    let got = eval(toml, json!({"tool": "read_file"}));
    assert_eq!(
        summary(&got),
        (
            Decision::Ask,
            Layer::Mode,
            Some("ok"),
            "deny-all: nothing is allowed without a human"
        )
    );
    assert_eq!(
        got.subjects[0].decision,
        Decision::Allow,
        "the subject itself was allowed by the rule"
    );
    assert!(got.ask.is_some());
    let got = eval(toml, json!({"tool": "anything"}));
    assert_eq!((got.decision, got.layer), (Decision::Ask, Layer::Mode));
    let got = eval(toml, json!({"tool": "rm"}));
    assert_eq!(
        summary(&got),
        (Decision::Deny, Layer::Rule, Some("no"), "matched rule `no`")
    );
    // Overrides cannot lift the ceiling; only full access skips asking.
    let p = policy(toml);
    let mut run = RunOptions::default();
    run.disable_permission_for("read_file");
    assert_eq!(
        p.evaluate_with(&call(json!({"tool": "read_file"})), &run)
            .decision,
        Decision::Ask
    );
}

#[test]
fn the_calls_mode_overrides_the_files_and_the_runs() {
    let p = policy("mode = \"approve-all\"");
    let locked = call(json!({"tool": "t", "context": {"mode": "deny-all"}}));
    assert_eq!(p.evaluate(&locked).mode, Mode::DenyAll);
    assert_eq!(p.evaluate(&locked).decision, Decision::Ask);
    let run = RunOptions::default().with_mode(Mode::DenyAll);
    assert_eq!(
        p.evaluate_with(&call(json!({"tool": "t"})), &run).decision,
        Decision::Ask
    );
    let open = call(json!({"tool": "t", "context": {"mode": "approve-all"}}));
    assert_eq!(p.evaluate_with(&open, &run).decision, Decision::Allow);
    let empty = call(json!({"tool": "write_file", "context": {"mode": ""}}));
    assert_eq!(p.evaluate(&empty).mode, Mode::ApproveReads);
}

#[test]
fn ask_resolution_fails_closed() {
    let p = policy(
        "[[rule]]\nname = \"pay\"\ndecision = \"ask\"\ntool = \"pay\"\nreason = \"confirm?\"\nchoices = [\"allow-once\", \"reject-once\"]\n",
    );
    let c = call(json!({"tool": "pay"}));
    let run = RunOptions::default();
    let r = p.decide(&c, &run, None);
    assert_eq!(
        (r.decision, r.layer, &*r.reason),
        (
            Decision::Deny,
            Layer::Handler,
            "Permission required but no handler configured"
        )
    );
    let failing = |_: &AskRequest<'_>| Err("ui crashed".to_owned());
    let r = p.decide(&c, &run, Some(&failing));
    assert_eq!(
        (r.decision, &*r.reason),
        (Decision::Deny, "the permission handler failed: ui crashed")
    );
    let not_offered = |_: &AskRequest<'_>| Ok(Choice::AllowAlways);
    let r = p.decide(&c, &run, Some(&not_offered));
    assert_eq!(
        (r.decision, &*r.reason),
        (
            Decision::Deny,
            "the handler answered `allow-always`, which was not offered"
        )
    );
    let seen = std::sync::Mutex::new(None);
    let yes = |req: &AskRequest<'_>| {
        *seen.lock().unwrap() = Some((req.call.tool.clone(), req.evaluation.reason.to_string()));
        Ok(Choice::AllowOnce)
    };
    let r = p.decide(&c, &run, Some(&yes));
    assert_eq!(
        (r.decision, r.choice),
        (Decision::Allow, Some(Choice::AllowOnce))
    );
    assert_eq!(
        seen.lock().unwrap().clone(),
        Some(("pay".into(), "confirm?".into()))
    );
    let no = |_: &AskRequest<'_>| Ok(Choice::RejectOnce);
    let r = p.decide(&c, &run, Some(&no));
    assert_eq!(
        (r.decision, &*r.reason),
        (Decision::Deny, "Permission denied by handler")
    );
    // Allow and deny never reach the handler.
    let panics = |_: &AskRequest<'_>| -> Result<Choice, String> { panic!("asked") };
    let allowed = policy("mode = \"approve-all\"");
    assert_eq!(
        allowed.decide(&c, &run, Some(&panics)).decision,
        Decision::Allow
    );
}

#[test]
fn a_failing_predicate_denies_naming_the_rule() {
    let toml = r#"
[[rule]]
name = "small-payments"
decision = "allow"
tool = "pay"
args = { "/amount" = { lt = 100 } }
"#;
    let got = eval(toml, json!({"tool": "pay", "args": {"amount": "5"}}));
    assert_eq!(
        summary(&got),
        (
            Decision::Deny,
            Layer::Rule,
            Some("small-payments"),
            "rule `small-payments` could not be evaluated: argument `/amount`: `lt` needs a number, got a string"
        )
    );
    // Missing is not an error: the rule just does not match.
    assert_eq!(eval(toml, json!({"tool": "pay"})).layer, Layer::Default);
    // A condition that is plainly false wins over one that cannot be judged.
    let toml2 = r#"
[[rule]]
name = "r"
decision = "allow"
args = { "/a" = { lt = 1 }, "/b" = { equals = "x" } }
"#;
    assert_eq!(
        eval(toml2, json!({"tool": "t", "args": {"a": "s", "b": "y"}})).layer,
        Layer::Default
    );
    // A predicate in code.
    let p = Policy::builder()
        .rule(
            Rule::builder("coded", Decision::Allow)
                .when(|_| Err("backend down".into()))
                .build()
                .unwrap(),
        )
        .rule(Rule::builder("later", Decision::Allow).build().unwrap())
        .build();
    let got = p.evaluate(&Call::new("t"));
    assert_eq!(
        summary(&got),
        (
            Decision::Deny,
            Layer::Rule,
            Some("coded"),
            "rule `coded` could not be evaluated: predicate: backend down"
        )
    );
}

#[test]
fn arguments_that_are_not_an_object_are_rejected_before_any_rule_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let p = Policy::builder()
        .mode(Mode::ApproveAll)
        .rule(
            Rule::builder("count", Decision::Allow)
                .when(move |_| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    Ok(true)
                })
                .build()
                .unwrap(),
        )
        .build();
    for args in [json!([1]), json!("x"), json!(null), json!(7), json!(true)] {
        let got = p.evaluate(&call(json!({"tool": "t", "args": args})));
        assert_eq!((got.decision, got.layer), (Decision::Deny, Layer::Validate));
        assert_eq!(
            got.error.as_ref().unwrap().kind,
            CallErrorKind::InvalidArguments
        );
        assert!(got.subjects.is_empty());
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let ok = p.evaluate(&Call::new("t"));
    assert_eq!(ok.decision, Decision::Allow);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let empty = p.evaluate(&Call::new(""));
    assert_eq!(
        (empty.decision, empty.layer),
        (Decision::Deny, Layer::Validate)
    );
}

#[test]
fn run_overrides_require_disable_and_full_access() {
    let toml = r#"
mode = "approve-reads"
[[rule]]
name = "ok"
decision = "allow"
tool = "ls"
[[rule]]
name = "never"
decision = "deny"
tool = "rm"
"#;
    let p = policy(toml);
    let mut run = RunOptions::default();
    run.require_permission_for("ls")
        .disable_permission_for("write_file")
        .disable_permission_for("rm");
    let got = p.evaluate_with(&Call::new("ls"), &run);
    assert_eq!(
        summary(&got),
        (
            Decision::Ask,
            Layer::Override,
            Some("ok"),
            "a run override requires permission for `ls`"
        )
    );
    let got = p.evaluate_with(&Call::new("write_file"), &run);
    assert_eq!(
        summary(&got),
        (
            Decision::Allow,
            Layer::Override,
            None,
            "a run override disables permission for `write_file`"
        )
    );
    assert_eq!(
        p.evaluate_with(&Call::new("rm"), &run).decision,
        Decision::Deny
    );
    run.clear_permission_override("ls");
    assert_eq!(
        p.evaluate_with(&Call::new("ls"), &run).decision,
        Decision::Allow
    );
    let full = RunOptions::default().with_full_access(true);
    let got = p.evaluate_with(&Call::new("write_file"), &full);
    assert_eq!(
        summary(&got),
        (
            Decision::Allow,
            Layer::Override,
            None,
            "full access: this run skips asking"
        )
    );
    assert_eq!(
        p.evaluate_with(&Call::new("rm"), &full).decision,
        Decision::Deny
    );
    let locked = call(json!({"tool": "ls", "context": {"mode": "deny-all"}}));
    assert_eq!(p.evaluate_with(&locked, &full).decision, Decision::Allow);
}

#[test]
fn untrusted_annotations_can_tighten_but_never_loosen() {
    let toml = r#"
[[rule]]
name = "hinted-reads"
decision = "allow"
annotations = { readOnlyHint = true }

[[rule]]
name = "hinted-destructive"
decision = "deny"
annotations = { destructiveHint = true }
"#;
    let untrusted = json!({"server": "x", "trusted_server": false});
    let trusted = json!({"server": "x", "trusted_server": true});
    let read = |ctx: &serde_json::Value| json!({"tool": "t", "annotations": {"readOnlyHint": true}, "context": ctx});
    assert_eq!(eval(toml, read(&untrusted)).decision, Decision::Ask);
    assert_eq!(eval(toml, read(&trusted)).rule_name(), Some("hinted-reads"));
    let destroy =
        json!({"tool": "t", "annotations": {"destructiveHint": true}, "context": untrusted});
    assert_eq!(eval(toml, destroy).rule_name(), Some("hinted-destructive"));
    // A readOnlyHint makes a call a read only from a trusted server.
    assert_eq!(eval("", read(&untrusted)).decision, Decision::Ask);
    assert_eq!(eval("", read(&trusted)).decision, Decision::Allow);
    assert_eq!(
        eval(
            "",
            json!({"tool": "t", "annotations": {"readOnlyHint": true}})
        )
        .decision,
        Decision::Ask
    );
}

#[test]
fn profiles_decide_reads_whatever_the_server() {
    let local = json!({"tool": "read_file", "args": {"path": "a"}});
    let mcp = json!({"tool": "read_file", "args": {"path": "a"}, "context": {"server": "fs"}});
    assert_eq!(eval("", local).decision, Decision::Allow);
    assert_eq!(eval("", mcp.clone()).decision, Decision::Allow);
    // A policy profile replaces the built-in one.
    let replaced = "[[tool]]\nmatch = \"read_file\"\naccess = \"write\"\n";
    assert_eq!(
        eval(replaced, json!({"tool": "read_file"})).decision,
        Decision::Ask
    );
    // Access conditions read the profile.
    let reads = "[[rule]]\nname = \"reads\"\ndecision = \"allow\"\naccess = \"read\"\n";
    assert_eq!(
        eval(&format!("fallback = \"deny\"\n{reads}"), mcp).rule_name(),
        Some("reads")
    );
    // A profile's access beats the read_only tag.
    let tagged_write = json!({"tool": "write_file", "tags": ["read_only"]});
    assert_eq!(eval("", tagged_write).decision, Decision::Ask);
    assert_eq!(
        eval("", json!({"tool": "mine", "tags": ["read_only"]})).decision,
        Decision::Allow
    );
}

#[test]
fn context_conditions() {
    let toml = r#"
[[rule]]
name = "net"
decision = "deny"
origin = "network"
[[rule]]
name = "reviewer"
decision = "allow"
agent = "review*"
[[rule]]
name = "fs"
decision = "allow"
server = ["fs", "files"]
"#;
    assert_eq!(
        eval(
            toml,
            json!({"tool": "t", "context": {"origin": "network", "agent": "reviewer"}})
        )
        .rule_name(),
        Some("net")
    );
    assert_eq!(
        eval(
            toml,
            json!({"tool": "t", "context": {"origin": "user", "agent": "reviewer-2"}})
        )
        .rule_name(),
        Some("reviewer")
    );
    assert_eq!(
        eval(toml, json!({"tool": "t", "context": {"server": "files"}})).rule_name(),
        Some("fs")
    );
    assert_eq!(
        eval(toml, json!({"tool": "t"})).layer,
        Layer::Default,
        "a missing origin, agent or server matches none"
    );
}

#[test]
fn argument_predicates() {
    let toml = r#"
[[rule]]
name = "pay"
decision = "allow"
tool = "pay"
args = { "/amount" = { lt = 100 }, "/currency" = { one_of = ["EUR", "USD"] } }
[[rule]]
name = "branch"
decision = "allow"
args = { "/branch" = { regex = "main|dev" }, "/file" = { glob = "src/*.rs" } }
[[rule]]
name = "flag"
decision = "deny"
args = { "/force" = { equals = true }, "/opts/depth" = { ge = 2.5 } }
[[rule]]
name = "absent"
decision = "allow"
tool = "x"
args = { "/dry_run" = { exists = false } }
"#;
    let name = |args| {
        eval(toml, json!({"tool": "pay", "args": args}))
            .rule_name()
            .map(str::to_owned)
    };
    assert_eq!(
        name(json!({"amount": 99.5, "currency": "EUR"})).as_deref(),
        Some("pay")
    );
    assert_eq!(name(json!({"amount": 100, "currency": "EUR"})), None);
    assert_eq!(name(json!({"amount": 1, "currency": "eur"})), None);
    assert_eq!(
        name(json!({"branch": "main", "file": "src/a/b.rs"})).as_deref(),
        Some("branch")
    );
    assert_eq!(
        name(json!({"branch": "main-x", "file": "src/a.rs"})),
        None,
        "regexes match whole strings"
    );
    assert_eq!(
        name(json!({"force": true, "opts": {"depth": 3}})).as_deref(),
        Some("flag")
    );
    assert_eq!(name(json!({"force": 1, "opts": {"depth": 3}})), None);
    assert_eq!(eval(toml, json!({"tool": "x"})).rule_name(), Some("absent"));
    assert_eq!(
        eval(toml, json!({"tool": "x", "args": {"dry_run": false}})).rule_name(),
        None
    );
    let eq = "[[rule]]\nname = \"one\"\ndecision = \"deny\"\nargs = { \"/n\" = { equals = 1 } }\n";
    assert_eq!(
        eval(eq, json!({"tool": "t", "args": {"n": 1.0}})).rule_name(),
        Some("one")
    );
    assert_eq!(
        eval(eq, json!({"tool": "t", "args": {"n": "1"}})).rule_name(),
        None
    );
}

#[test]
fn tool_names_match_exactly() {
    let toml =
        "fallback = \"ask\"\n[[rule]]\nname = \"sh\"\ndecision = \"allow\"\ntool = \"bash\"\n";
    for tool in ["Bash", "bash ", "b\u{0430}sh", "bash\u{0000}", "/bin/bash"] {
        assert_eq!(
            eval(toml, json!({"tool": tool})).decision,
            Decision::Ask,
            "{tool:?}"
        );
    }
}

#[test]
fn ask_details_come_from_the_rule_then_the_policy() {
    let toml = r#"
[approval]
timeout = "90s"
choices = ["allow-once", "reject-once", "reject-always"]
scopes = ["user", "session"]

[[rule]]
name = "history"
decision = "ask"
tool = "git_commit"
choices = ["allow-once", "reject-once"]
timeout = "30s"
grant = "command"
scopes = ["session"]
"#;
    let got = eval(toml, json!({"tool": "git_commit"}));
    assert_eq!(
        got.ask,
        Some(AskDetails {
            choices: vec![Choice::AllowOnce, Choice::RejectOnce].into(),
            timeout: Duration::from_secs(30),
            grant: GrantKind::Command,
            scopes: vec![AlwaysScope::Session].into(),
        })
    );
    let got = eval(toml, json!({"tool": "other"}));
    assert_eq!(
        got.ask,
        Some(AskDetails {
            choices: vec![Choice::AllowOnce, Choice::RejectOnce, Choice::RejectAlways].into(),
            timeout: Duration::from_secs(90),
            grant: GrantKind::Tool,
            scopes: vec![AlwaysScope::User, AlwaysScope::Session].into(),
        })
    );
    assert_eq!(
        eval("", json!({"tool": "other"})).ask.unwrap().timeout,
        Duration::from_secs(300)
    );
}

#[test]
fn the_json_form_of_an_evaluation() {
    let got = eval(
        "[[rule]]\nname = \"w\"\ndecision = \"ask\"\ntool = \"write_file\"\nreason = \"writes need a person\"\n",
        json!({"tool": "write_file"}),
    );
    assert_eq!(
        serde_json::to_value(&got).unwrap(),
        json!({
            "decision": "ask", "reason": "writes need a person", "rule": "w", "layer": "rule",
            "source": {"file": "p.toml", "line": 1}, "mode": "approve-reads", "access": "write",
            "subjects": [{"kind": "call", "decision": "ask", "layer": "rule", "rule": "w", "reason": "writes need a person"}],
            "choices": ["allow-once", "allow-always", "reject-once", "reject-always"],
            "timeout_ms": 300000, "grant": "tool"
        })
    );
}

fn sources(files: &[(PolicyRole, &str, &str)]) -> Policy {
    let sources = files
        .iter()
        .map(|(role, name, text)| PolicySource {
            name: (*name).into(),
            text: (*text).into(),
            role: *role,
            base_dir: None,
        })
        .collect();
    Policy::load(sources, LoadOptions::default()).unwrap()
}

#[test]
fn several_files_layer_strictest_wins_and_load_in_role_order() {
    let user = "[[rule]]\nname = \"user-allows-git\"\ndecision = \"allow\"\ntool = \"git_*\"\n";
    let project = "[[rule]]\nname = \"project-denies-push\"\ndecision = \"deny\"\ntool = \"git_push\"\n[[rule]]\nname = \"project-allows-all-rm\"\ndecision = \"allow\"\ntool = \"rm\"\n";
    let given = "[[rule]]\nname = \"given-asks-rm\"\ndecision = \"ask\"\ntool = \"rm\"\n[[rule]]\nname = \"given-allows-push\"\ndecision = \"allow\"\ntool = \"git_push\"\n";
    // Listed out of order on purpose: the role decides the order.
    let p = sources(&[
        (PolicyRole::Given, "given.toml", given),
        (PolicyRole::Project, "project.toml", project),
        (PolicyRole::User, "user.toml", user),
    ]);
    let files: Vec<&str> = p.files().map(|(n, _)| n).collect();
    assert_eq!(files, ["user.toml", "project.toml", "given.toml"]);
    assert_eq!(
        p.evaluate(&Call::new("git_push")).rule_name(),
        Some("project-denies-push")
    );
    assert_eq!(
        p.evaluate(&Call::new("git_status")).rule_name(),
        Some("user-allows-git")
    );
    assert_eq!(
        p.evaluate(&Call::new("rm")).rule_name(),
        Some("given-asks-rm")
    );
    // On a tie the earlier file is named.
    let p = sources(&[
        (
            PolicyRole::User,
            "a.toml",
            "[[rule]]\nname = \"a\"\ndecision = \"ask\"\n",
        ),
        (
            PolicyRole::Given,
            "b.toml",
            "[[rule]]\nname = \"b\"\ndecision = \"ask\"\n",
        ),
    ]);
    assert_eq!(p.evaluate(&Call::new("x")).rule_name(), Some("a"));
}

#[test]
fn several_files_merge_settings_strictly() {
    let p = sources(&[
        (
            PolicyRole::User,
            "u.toml",
            "mode = \"deny-all\"\nfallback = \"allow\"\n[approval]\ntimeout = \"2m\"\nchoices = [\"allow-once\", \"allow-always\", \"reject-once\"]\n[workspace]\nroots = [\"/a\"]\nprotected = [\"x/**\"]\n",
        ),
        (
            PolicyRole::Given,
            "g.toml",
            "mode = \"approve-all\"\nfallback = \"ask\"\n[approval]\ntimeout = \"10m\"\nchoices = [\"allow-once\", \"reject-once\", \"reject-always\"]\n[workspace]\nroots = [\"/a\", \"/b\"]\nprotected = [\"y/**\"]\n",
        ),
    ]);
    let s = p.settings();
    assert_eq!(s.mode, Mode::DenyAll);
    assert_eq!(s.fallback, Some(Decision::Ask));
    assert_eq!(s.approval_timeout, Duration::from_secs(120));
    assert_eq!(
        &*s.approval_choices,
        &[Choice::AllowOnce, Choice::RejectOnce]
    );
    let roots: Vec<&str> = s.roots.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(roots, ["/a", "/b"]);
    assert_eq!(s.protected, ["x/**", "y/**"]);
    let err = Policy::load(
        vec![
            PolicySource::given(
                "a.toml",
                "[approval]\nchoices = [\"allow-once\", \"reject-once\"]\n",
            ),
            PolicySource::given(
                "b.toml",
                "[approval]\nchoices = [\"allow-always\", \"reject-always\"]\n",
            ),
        ],
        LoadOptions::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("no allow and refuse answer in common"),
        "{err}"
    );
}

#[test]
fn a_top_level_key_under_a_table_gets_a_hint() {
    let err = Policy::from_toml(
        "p.toml",
        "[workspace]\nroots = [\".\"]\nmode = \"deny-all\"\n",
    )
    .unwrap_err();
    let d = &err.diagnostics[0];
    assert_eq!(d.message, "unknown key `mode` in `[workspace]`");
    assert_eq!(
        d.hint.as_deref(),
        Some(
            "`mode` is a top-level key, but TOML puts every key after a `[header]` into that table: move it above the first header"
        )
    );
}

#[test]
fn explain_traces_every_rule() {
    let toml = r#"
[[rule]]
name = "other-tool"
decision = "deny"
tool = "rm"
[[rule]]
name = "typed"
decision = "allow"
tool = "pay"
args = { "/amount" = { lt = 10 } }
[[rule]]
name = "any-pay"
decision = "ask"
tool = "pay"
[[rule]]
name = "after"
decision = "deny"
"#;
    let p = policy(toml);
    let x = p.explain(
        &call(json!({"tool": "pay", "args": {"amount": 50}})),
        &RunOptions::default(),
    );
    let rules: Vec<(&str, Verdict, &str)> = x.subjects[0].files[0]
        .rules
        .iter()
        .map(|r| (r.rule.name.as_str(), r.verdict, r.detail.as_str()))
        .collect();
    assert_eq!(
        rules,
        [
            (
                "other-tool",
                Verdict::NotMatched,
                "tool `pay` does not match `rm`"
            ),
            (
                "typed",
                Verdict::NotMatched,
                "argument `/amount` = 50 fails `lt = 10`"
            ),
            ("any-pay", Verdict::Matched, "every condition holds"),
            (
                "after",
                Verdict::NotReached,
                "an earlier rule of this file decided"
            ),
        ]
    );
    assert_eq!(
        x.evaluation,
        p.evaluate(&call(json!({"tool": "pay", "args": {"amount": 50}})))
    );
    let x = p.explain(
        &call(json!({"tool": "pay", "args": {"amount": "50"}})),
        &RunOptions::default(),
    );
    assert_eq!(x.subjects[0].files[0].rules[1].verdict, Verdict::Failed);
    let text = x.to_string();
    assert!(
        text.contains("FAIL  allow `typed` (line 6): cannot be evaluated"),
        "{text}"
    );
    assert!(
        text.contains("result: deny (rule) by rule `typed` (p.toml:6)"),
        "{text}"
    );
}

#[test]
fn lint_findings() {
    let toml = r#"
custom_tags = ["billing"]

[[rule]]
name = "all-git"
decision = "allow"
tool = "git_*"
examples = { match = [{ tool = "git_status" }] }

[[rule]]
name = "no-push"
decision = "deny"
tool = "git_push"
examples = { match = [{ tool = "git_push" }] }

[[rule]]
name = "git-twice"
decision = "allow"
tool = "git_log"

[[rule]]
name = "no-push"
decision = "deny"
tags = ["bil", "billing"]

[[rule]]
name = "everything"
decision = "allow"
tool = "*"
"#;
    let p = policy(toml);
    let findings: Vec<(&str, Severity, u32)> = p
        .lint()
        .iter()
        .map(|d| (d.code.unwrap(), d.severity, d.line()))
        .collect();
    assert_eq!(
        findings,
        [
            ("shadowed", Severity::Error, 10),
            ("no-example", Severity::Warning, 10),
            ("shadowed", Severity::Warning, 16),
            ("no-example", Severity::Warning, 16),
            ("duplicate-name", Severity::Error, 21),
            ("unknown-tag", Severity::Warning, 21),
            ("no-example", Severity::Warning, 21),
            ("allow-all", Severity::Error, 26),
            ("no-example", Severity::Warning, 26),
        ]
    );
    let lint = p.lint();
    assert_eq!(
        lint[0].message,
        "rule `no-push` never applies: rule `all-git` (line 4) matches every call it could and decides `allow` first"
    );
    assert_eq!(
        lint[5].hint.as_deref(),
        Some("did you mean `billing`? custom tags are declared in `custom_tags`")
    );
    assert_eq!(
        lint[1].message,
        "no example of the policy is decided by rule `no-push`"
    );
}

/// A rule whose `access` leaves out every access its resource condition's subjects have can never
/// match (a command is executed or fetches, a path is read or written, a URL is fetched).
#[test]
fn lint_finds_rules_that_never_match() {
    for (conditions, never) in [
        ("command = \"curl\"\naccess = \"read\"", true),
        (
            "command = \"curl\"\naccess = [\"read\", \"network\"]",
            false,
        ),
        ("path = \"**/.env\"\naccess = \"execute\"", true),
        ("path = \"**/.env\"\naccess = \"write\"", false),
        ("domain = \"x.example\"\naccess = \"write\"", true),
        ("domain = \"x.example\"", false),
    ] {
        let toml = format!("[[rule]]\nname = \"r\"\ndecision = \"deny\"\n{conditions}\n");
        let found = policy(&toml)
            .lint()
            .iter()
            .any(|d| d.code == Some("never-matches"));
        assert_eq!(found, never, "{conditions}");
    }
}

#[test]
fn shadowing_is_only_reported_when_certain() {
    let cases = [
        ("tool = \"fs__*\"", "tool = \"fs__read\"", true),
        ("tool = \"fs__*\"", "tool = \"fs__read*\"", true),
        ("tool = \"f?o\"", "tool = \"f*o\"", false),
        (
            "tool = \"x\"",
            "tool = \"x\"\nargs = { \"/a\" = { equals = 1 } }",
            true,
        ),
        (
            "tool = \"x\"\nargs = { \"/a\" = { equals = 1 } }",
            "tool = \"x\"",
            false,
        ),
        ("tags = [\"network\", \"slow\"]", "tags = [\"slow\"]", true),
        ("tags = [\"slow\"]", "tags = [\"network\", \"slow\"]", false),
        ("origin = \"user\"", "tool = \"x\"", false),
    ];
    for (a, b, shadowed) in cases {
        let toml = format!(
            "[[rule]]\nname = \"a\"\ndecision = \"allow\"\n{a}\n[[rule]]\nname = \"b\"\ndecision = \"deny\"\n{b}\n"
        );
        let found = policy(&toml)
            .lint()
            .iter()
            .any(|d| d.code == Some("shadowed"));
        assert_eq!(found, shadowed, "{a} / {b}");
    }
}

#[test]
fn failing_examples_can_be_collected_instead_of_failing_the_load() {
    let toml = "[[rule]]\nname = \"r\"\ndecision = \"allow\"\ntool = \"a\"\nexamples = { match = [{ tool = \"b\" }], not_match = [{ tool = \"c\" }] }\n";
    assert!(Policy::from_toml("p.toml", toml).is_err());
    let p = Policy::load(
        vec![PolicySource::given("p.toml", toml)],
        LoadOptions {
            check_examples: false,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let failures = p.example_failures();
    assert_eq!(failures.len(), 1);
    assert_eq!(
        failures[0].message,
        "example does not match rule `r`: tool `b` does not match `a`"
    );
    assert_eq!((failures[0].line(), failures[0].column()), (5, 23));
}

/// A policy loaded without checking and compiling its globs (what `toolgate hook` does for
/// text that loaded before with them checked) decides as the checked load does; a glob that
/// does not parse is an error of the checked load, at its place, and in the unchecked one it
/// fails closed: its deny rule matches every path, its allow rule none.
#[test]
fn globs_compiled_on_first_use_decide_alike_and_fail_closed() {
    let good = "version = 1\nmode = \"approve-reads\"\n\n[[rule]]\nname = \"no-env\"\ndecision = \"deny\"\n\
                path = \"**/.env\"\n\n[[rule]]\nname = \"src\"\ndecision = \"allow\"\npath = \"src/**\"\n";
    let lazy = LoadOptions {
        check_examples: false,
        compile_at_load: false,
    };
    let checked = Policy::from_toml("p.toml", good).unwrap();
    let unchecked = Policy::load(vec![PolicySource::given("p.toml", good)], lazy).unwrap();
    for (tool, path) in [
        ("write_file", "/ws/src/a.rs"),
        ("write_file", "/ws/.env"),
        ("read_file", "/ws/deep/er/.env"),
        ("write_file", "/ws/README.md"),
    ] {
        let call = Call::from_json(&format!(
            r#"{{"tool": "{tool}", "args": {{"path": "{path}"}}, "context": {{"workspace": "/ws"}}}}"#
        ))
        .unwrap();
        let (a, b) = (checked.evaluate(&call), unchecked.evaluate(&call));
        assert_eq!(
            (a.decision, a.rule_name()),
            (b.decision, b.rule_name()),
            "{tool} {path}"
        );
    }
    let bad = good
        .replace("**/.env", "**/.env[")
        .replace("src/**", "src/{a");
    let error = Policy::from_toml("p.toml", &bad).unwrap_err().to_string();
    assert!(error.contains("p.toml:7:"), "{error}");
    let unchecked = Policy::load(vec![PolicySource::given("p.toml", &bad)], lazy).unwrap();
    let write = |path: &str| {
        Call::from_json(&format!(
            r#"{{"tool": "write_file", "args": {{"path": "{path}"}}, "context": {{"workspace": "/ws"}}}}"#
        ))
        .unwrap()
    };
    let anything = unchecked.evaluate(&write("/ws/README.md"));
    assert_eq!(
        (anything.decision, anything.rule_name()),
        (Decision::Deny, Some("no-env"))
    );
    // With the deny rule's glob fixed, the broken allow rule allows nothing: writes ask.
    let bad_allow = good.replace("src/**", "src/{a");
    let unchecked = Policy::load(vec![PolicySource::given("p.toml", &bad_allow)], lazy).unwrap();
    assert_eq!(
        unchecked.evaluate(&write("/ws/src/a")).decision,
        Decision::Ask
    );
}

/// `explain` names, for a rule that matched, which of its patterns the subject met: the command
/// pattern (however the command was spelled), the path glob, the domain.
#[test]
fn explain_names_the_pattern_that_matched() {
    let policy = Policy::from_toml(
        "p.toml",
        "version = 1\n\n[[rule]]\nname = \"history\"\ndecision = \"ask\"\n\
         command = [\"git commit\", \"git push\"]\n\n[[rule]]\nname = \"secrets\"\n\
         decision = \"deny\"\npath = [\"**/*.pem\", \"**/.env\"]\n\n[[rule]]\nname = \"docs\"\n\
         decision = \"allow\"\ndomain = [\"docs.rs\", \"docs.python.org\"]\n",
    )
    .unwrap();
    let call = Call::from_json(
        r#"{"tool": "bash", "args": {"command": "git -C . push origin main; cat .env; curl https://docs.python.org/3/"}, "context": {"workspace": "/ws"}}"#,
    )
    .unwrap();
    let explanation = policy.explain(&call, &RunOptions::default());
    let details: Vec<String> = explanation
        .subjects
        .iter()
        .flat_map(|s| s.files.iter().flat_map(|f| f.rules.iter()))
        .filter(|r| r.verdict == Verdict::Matched)
        .map(|r| format!("{}: {}", r.rule.name, r.detail))
        .collect();
    for expected in [
        "history: every condition holds (command `git push`)",
        "secrets: every condition holds (path `**/.env`)",
        "docs: every condition holds (domain `docs.python.org`)",
    ] {
        assert!(
            details.iter().any(|d| d == expected),
            "{expected}: {details:?}"
        );
    }
}

/// The folder git runs hooks from is protected wherever the project points `core.hooksPath`:
/// the conventional folders always, and the one the repository's configuration names.
#[test]
fn the_folder_of_core_hooks_path_is_protected() {
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::create_dir_all(ws.join("scripts/hooks")).unwrap();
    let policy = Policy::from_toml(
        "p.toml",
        "version = 1\n\n[[rule]]\nname = \"edit\"\ndecision = \"allow\"\npath = \"**\"\n\n\
         [[rule]]\nname = \"rm\"\ndecision = \"allow\"\ncommand = \"rm\"\n",
    )
    .unwrap();
    let decide = |tool: &str, args: serde_json::Value| {
        let call = Call::from_value(json!({"tool": tool, "args": args,
            "context": {"workspace": ws.display().to_string()}}))
        .unwrap();
        let evaluation = policy.evaluate(&call);
        (
            evaluation.decision,
            evaluation.rule_name().map(str::to_owned),
        )
    };
    let write = |path: &str| decide("write_file", json!({"path": path, "content": "x"}));
    let protected = (Decision::Ask, Some("protected-path".to_owned()));
    assert_eq!(write(".githooks/pre-commit"), protected);
    assert_eq!(write("scripts/hooks/pre-commit").0, Decision::Allow);
    std::fs::write(
        ws.join(".git/config"),
        "[Core]\n\tbare = false\n\tHooksPath = \"scripts/hooks\" # the team's hooks\n",
    )
    .unwrap();
    assert_eq!(write("scripts/hooks/pre-commit"), protected);
    assert_eq!(write("scripts/build.sh").0, Decision::Allow);
    // The folder that holds it, removed whole.
    assert_eq!(
        decide("bash", json!({"command": "rm -r scripts"})),
        protected
    );
}

/// `lint` warns about a rule whose tools can never meet its conditions, by what their profiles
/// say they touch; a shell tool among them, or a tool without a profile, may touch anything.
#[test]
fn lint_warns_about_rules_their_tools_cannot_meet() {
    let policy = Policy::from_toml(
        "p.toml",
        "version = 1\n\n[[rule]]\nname = \"a\"\ndecision = \"deny\"\ntool = \"Read\"\n\
         command = \"git push\"\n\n[[rule]]\nname = \"b\"\ndecision = \"ask\"\n\
         tool = [\"WebSearch\", \"WebFetch\"]\npath = \"**\"\n\n[[rule]]\nname = \"c\"\n\
         decision = \"ask\"\ntool = \"Task\"\naccess = \"read\"\n\n[[rule]]\nname = \"d\"\n\
         decision = \"deny\"\ntool = [\"Read\", \"Bash\"]\ncommand = \"curl\"\n\n[[rule]]\n\
         name = \"e\"\ndecision = \"ask\"\ntool = \"WebFetch\"\ndomain = \"x.com\"\n\n\
         [[rule]]\nname = \"f\"\ndecision = \"ask\"\ntool = \"my_tool\"\ncommand = \"ls\"\n",
    )
    .unwrap();
    let never: Vec<(String, String)> = policy
        .lint()
        .into_iter()
        .filter(|d| d.code == Some("never-matches"))
        .map(|d| {
            let name = d.message.split('`').nth(1).unwrap_or_default().to_owned();
            (name, d.message)
        })
        .collect();
    let names: Vec<&str> = never.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"], "{never:?}");
    assert!(
        never[0]
            .1
            .contains("`command` condition is about what `Read` never touches")
    );
    assert!(never[2].1.contains("`Task` touches nothing but the call"));
}

#[test]
fn a_caller_is_not_offered_an_always_answer_it_cannot_carry_out() {
    let policy = Policy::from_toml("p.toml", "version = 1\nmode = \"approve-reads\"\n").unwrap();
    let ask = |choices: Option<serde_json::Value>| {
        let mut context = json!({"workspace": "/ws"});
        if let Some(choices) = choices {
            context["choices"] = choices;
        }
        let call = Call::from_value(json!({"tool": "unknown_tool", "context": context})).unwrap();
        let evaluation = policy.evaluate(&call);
        assert_eq!(evaluation.decision, Decision::Ask);
        evaluation.ask.unwrap().choices.to_vec()
    };
    assert_eq!(ask(None).len(), 4);
    assert_eq!(
        ask(Some(json!(["allow-once", "reject-once"]))),
        vec![Choice::AllowOnce, Choice::RejectOnce]
    );
    // The "once" answers stay whatever the caller says; only "always" ones go.
    assert_eq!(
        ask(Some(json!(["allow-always"]))),
        vec![Choice::AllowOnce, Choice::AllowAlways, Choice::RejectOnce]
    );
    assert_eq!(
        ask(Some(json!([]))),
        vec![Choice::AllowOnce, Choice::RejectOnce]
    );
    // Not an answer: the call is malformed.
    assert!(Call::from_value(json!({"tool": "t", "context": {"choices": ["maybe"]}})).is_err());
}

#[test]
fn a_rule_may_let_the_commands_it_allows_run_outside_the_sandbox() {
    let policy = policy(
        r#"
version = 1

[[rule]]
name = "compose-up"
decision = "allow"
command = "docker compose up"
sandbox = false

[[rule]]
name = "listing"
decision = "allow"
command = "ls"
"#,
    );
    let bash = |command: &str| {
        call(json!({"tool": "Bash", "args": {"command": command},
                    "context": {"workspace": "/work"}}))
    };
    let outside = policy.evaluate(&bash("docker compose up"));
    assert_eq!(outside.decision, Decision::Allow);
    assert!(!outside.sandboxed());
    assert_eq!(serde_json::to_value(&outside).unwrap()["sandbox"], false);
    // Another rule's allow keeps the command inside, alone or as a part of it.
    for command in ["ls", "docker compose up && ls"] {
        let inside = policy.evaluate(&bash(command));
        assert_eq!(inside.decision, Decision::Allow, "{command}");
        assert!(inside.sandboxed(), "{command}");
        assert!(
            serde_json::to_value(&inside)
                .unwrap()
                .get("sandbox")
                .is_none()
        );
    }
    // Only a rule that allows may say it.
    let error = Policy::from_toml(
        "p.toml",
        "version = 1\n\n[[rule]]\nname = \"x\"\ndecision = \"deny\"\ncommand = \"rm\"\nsandbox = false\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("`sandbox = false` is for a rule that allows"),
        "{error}"
    );
    assert!(error.contains("p.toml:7:"), "{error}");
}
