//! Resource semantics the corpora do not pin down one by one: how guards combine with rules and
//! run overrides, what mentions are for, string examples, and lint on resource rules.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::PathBuf;

use serde_json::json;
use toolgate_policy::{
    Call, Decision, Layer, LoadOptions, Policy, PolicySource, RunOptions, Subject,
};

struct Ws {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn ws() -> Ws {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join(".env"), "X=1").unwrap();
    std::fs::write(root.join("src/main.rs"), "").unwrap();
    std::os::unix::fs::symlink(root.join(".env"), root.join("notes.txt")).unwrap();
    Ws { _dir: dir, root }
}

fn call(w: &Ws, tool: &str, args: serde_json::Value) -> Call {
    Call::from_value(json!({"tool": tool, "args": args, "context": {"workspace": w.root}})).unwrap()
}

fn policy(toml: &str) -> Policy {
    Policy::from_toml("p.toml", toml).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn full_access_never_skips_a_guards_ask_even_beside_a_default_ask() {
    let w = ws();
    let p = policy("mode = \"approve-reads\"\n");
    // Two asks: `cargo test` by default, `sh` reading stdin by a guard.
    let c = call(&w, "bash", json!({"command": "cargo test | sh"}));
    let full = RunOptions::default().with_full_access(true);
    let e = p.evaluate_with(&c, &full);
    assert_eq!((e.decision, e.layer), (Decision::Ask, Layer::Guard));
    assert_eq!(e.rule_name(), Some("unanalysable-command"));
    // Without a guard in the way, full access skips the ask.
    let c = call(&w, "bash", json!({"command": "cargo test"}));
    assert_eq!(p.evaluate_with(&c, &full).decision, Decision::Allow);
    // disable-permission does not loosen a guard either.
    let mut run = RunOptions::default();
    run.disable_permission_for("bash");
    let c = call(&w, "bash", json!({"command": "sudo ls"}));
    assert_eq!(p.evaluate_with(&c, &run).layer, Layer::Guard);
}

#[test]
fn a_guards_deny_beats_any_allow() {
    let w = ws();
    let p = policy(
        "mode = \"approve-all\"\n[[rule]]\nname = \"all-files\"\ndecision = \"allow\"\npath = \"**\"\n",
    );
    let e = p.evaluate(&call(&w, "read_file", json!({"path": "/etc/passwd"})));
    assert_eq!(
        (e.decision, e.layer, e.rule_name()),
        (Decision::Deny, Layer::Guard, Some("path-outside-workspace"))
    );
    let e = p.evaluate(&call(&w, "read_file", json!({"path": "src/main.rs"})));
    assert_eq!(
        (e.decision, e.rule_name()),
        (Decision::Allow, Some("all-files"))
    );
}

#[test]
fn mentions_are_seen_by_deny_rules_only() {
    let w = ws();
    let p = policy(
        r#"
[[rule]]
name = "no-env"
decision = "deny"
path = "**/.env"

[[rule]]
name = "cat"
decision = "allow"
command = "cat"

[[rule]]
name = "src-files"
decision = "allow"
path = "src/**"
"#,
    );
    let e = p.evaluate(&call(&w, "bash", json!({"command": "cat .env"})));
    assert_eq!(
        (e.decision, e.rule_name()),
        (Decision::Deny, Some("no-env"))
    );
    // Through a symlink with an innocent name.
    let e = p.evaluate(&call(&w, "bash", json!({"command": "cat notes.txt"})));
    assert_eq!(
        (e.decision, e.rule_name()),
        (Decision::Deny, Some("no-env"))
    );
    // What a command reads is a subject of its own, as a file tool's path is.
    let e = p.evaluate(&call(&w, "bash", json!({"command": "cat src/main.rs"})));
    assert_eq!((e.decision, e.rule_name()), (Decision::Allow, Some("cat")));
    assert!(e.subjects.iter().any(|s| matches!(
        &s.subject,
        Subject::Path(p) if p.given == "src/main.rs" && p.role == toolgate_policy::PathRole::Read
    )));
    // A path argument of a file tool is not a mention: allow rules see it.
    let e = p.evaluate(&call(
        &w,
        "write_file",
        json!({"path": "src/main.rs", "content": ""}),
    ));
    assert_eq!(e.rule_name(), Some("src-files"));
}

#[test]
fn allow_path_rules_match_the_resolved_path_only() {
    let w = ws();
    let p = policy(
        "[[rule]]\nname = \"notes\"\ndecision = \"allow\"\npath = \"*.txt\"\naccess = \"write\"\n",
    );
    // notes.txt is a symlink to .env: the allow rule sees `.env`, not `notes.txt`.
    let e = p.evaluate(&call(
        &w,
        "write_file",
        json!({"path": "notes.txt", "content": ""}),
    ));
    assert_eq!((e.decision, e.layer), (Decision::Ask, Layer::Default));
}

#[test]
fn string_examples_are_checked_by_the_resource_condition() {
    let bad = "[[rule]]\nname = \"git\"\ndecision = \"allow\"\ncommand = \"git status\"\nexamples = { match = [\"git log\"], not_match = [\"git status -s\"] }\n";
    let err = Policy::from_toml("p.toml", bad).unwrap_err();
    let messages: Vec<&str> = err.diagnostics.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "example does not match rule `git`: `git log` is not matched by command `git status`",
            "example `git status -s` matches rule `git`, but is listed under `not_match`",
        ]
    );
    // An allow rule must match every command of a compound example; a deny rule any one.
    let allow = "[[rule]]\nname = \"a\"\ndecision = \"allow\"\ncommand = \"ls\"\nexamples = { not_match = [\"ls && rm x\"] }\n";
    assert!(Policy::from_toml("p.toml", allow).is_ok());
    let deny = "[[rule]]\nname = \"d\"\ndecision = \"deny\"\ncommand = \"rm\"\nexamples = { match = [\"ls && rm x\"] }\n";
    assert!(Policy::from_toml("p.toml", deny).is_ok());
    let path = "[[rule]]\nname = \"p\"\ndecision = \"deny\"\npath = \"**/.env\"\nexamples = { match = [\"a/.env\", \"/workspace/.env\"], not_match = [\"../x/.envrc\"] }\n";
    assert!(Policy::from_toml("p.toml", path).is_ok());
    let url = "[[rule]]\nname = \"u\"\ndecision = \"allow\"\ndomain = \"*.rs\"\nexamples = { match = [\"https://docs.rs/\"], not_match = [\"https://docs.rs.evil/\"] }\n";
    assert!(Policy::from_toml("p.toml", url).is_ok());
}

#[test]
fn one_kind_of_resource_condition_per_rule() {
    let err = Policy::from_toml(
        "p.toml",
        "[[rule]]\ndecision = \"deny\"\npath = \"x\"\ndomain = \"y.example\"\n",
    )
    .unwrap_err();
    let d = &err.diagnostics[0];
    assert_eq!(
        d.message,
        "a rule holds one kind of resource condition, this one has `path` and `domain, scheme, port or address`"
    );
    assert_eq!((d.line(), d.column()), (4, 1));
}

#[test]
fn lint_knows_resource_rules() {
    let p = policy(
        r#"
[[rule]]
name = "git"
decision = "allow"
command = "git"
examples = { match = ["git status"] }

[[rule]]
name = "no-push"
decision = "deny"
command = "git push"
examples = { match = ["git push"] }
"#,
    );
    let lint = p.lint();
    // `git push` starts with `git`: the allow decides first, so the deny never stops a push.
    let shadowed: Vec<(&str, toolgate_policy::Severity)> = lint
        .iter()
        .filter(|d| d.code == Some("shadowed"))
        .map(|d| (d.message.as_str(), d.severity))
        .collect();
    assert_eq!(
        shadowed,
        [(
            "rule `no-push` never applies: rule `git` (line 2) matches every call it could and decides `allow` first",
            toolgate_policy::Severity::Error
        )]
    );
    let p = policy(
        "[[rule]]\nname = \"no-git\"\ndecision = \"deny\"\ncommand = \"git\"\n[[rule]]\nname = \"git-log\"\ndecision = \"allow\"\ncommand = \"git log\"\n",
    );
    assert!(
        p.lint()
            .iter()
            .any(|d| d.code == Some("shadowed") && d.message.starts_with("rule `git-log`"))
    );
}

#[test]
fn network_turn_commands_merge_across_files() {
    let w = ws();
    let p = Policy::load(
        vec![
            PolicySource::given("a.toml", "[network_turns]\ncommands = [\"git status\"]\n"),
            PolicySource::given(
                "b.toml",
                "[network_turns]\ncommands = [[\"agh\", \"network\", [\"send\", \"status\"]]]\n",
            ),
        ],
        LoadOptions::default(),
    )
    .unwrap();
    let net = |command: &str| {
        let c = Call::from_value(json!({"tool": "bash", "args": {"command": command},
            "context": {"workspace": w.root, "origin": "network", "mode": "approve-all"}}))
        .unwrap();
        p.evaluate(&c).decision
    };
    assert_eq!(net("git status"), Decision::Allow);
    assert_eq!(net("agh network send hello"), Decision::Allow);
    assert_eq!(net("agh network delete"), Decision::Deny);
    assert_eq!(net("git status && rm -rf x"), Decision::Deny);
    let write = Call::from_value(
        json!({"tool": "write_file", "args": {"path": "src/a.rs", "content": ""},
        "context": {"workspace": w.root, "origin": "network", "mode": "approve-all"}}),
    )
    .unwrap();
    assert_eq!(p.evaluate(&write).rule_name(), Some("network-origin"));
}

#[test]
fn the_json_form_of_resource_subjects() {
    let w = ws();
    let p = policy("mode = \"approve-all\"\n");
    let e = p.evaluate(&call(&w, "bash", json!({"command": "sudo ls > out.txt"})));
    let v = serde_json::to_value(&e).unwrap();
    assert_eq!(v["subjects"][0]["kind"], "command");
    assert_eq!(v["subjects"][0]["command"], "ls");
    assert_eq!(v["subjects"][0]["text"], "sudo ls");
    assert_eq!(
        v["subjects"][0]["findings"][0],
        "`sudo` runs a command with elevated permissions"
    );
    assert_eq!(v["subjects"][1]["kind"], "path");
    assert_eq!(v["subjects"][1]["path"], "out.txt");
    assert_eq!(v["subjects"][1]["access"], "write");
    assert_eq!(v["subjects"][1]["role"], "redirect");
    assert_eq!(v["subjects"][1]["root"], json!(w.root));
    assert_eq!(v["grant"], "command");
    let e = p.evaluate(&call(&w, "fetch", json!({"url": "HTTPS://Docs.RS./x"})));
    let v = serde_json::to_value(&e).unwrap();
    assert_eq!(
        (
            v["subjects"][0]["kind"].clone(),
            v["subjects"][0]["host"].clone()
        ),
        (json!("url"), json!("docs.rs"))
    );
}

/// A profile of one's own can say where a command's environment is: its variables are judged as
/// `NAME=value` before the command would be.
#[test]
fn a_profiles_command_environment_is_judged_like_assignments() {
    let w = ws();
    let p = policy(
        "mode = \"approve-all\"\n[[tool]]\nmatch = \"run_job\"\naccess = \"execute\"\n\
         command = \"/program\"\ncommand_args = \"/argv\"\ncommand_env = \"/vars\"\n\
         [[rule]]\nname = \"git-reads\"\ndecision = \"allow\"\ncommand = \"git status\"\n",
    );
    let run = |vars: serde_json::Value| {
        p.evaluate(&call(
            &w,
            "run_job",
            json!({"program": "git", "argv": ["status"], "vars": vars}),
        ))
    };
    let e = run(json!({"GIT_DIR": "/tmp/other"}));
    assert_eq!(
        (e.decision, e.layer, e.rule_name()),
        (Decision::Ask, Layer::Guard, Some("unanalysable-command"))
    );
    assert!(e.reason.contains("GIT_DIR"), "{}", e.reason);
    let e = run(json!([{"name": "LANG", "value": "C"}]));
    assert_eq!(
        (e.decision, e.rule_name()),
        (Decision::Allow, Some("git-reads"))
    );
    let e = run(json!(null));
    assert_eq!(e.decision, Decision::Allow);
    let e = run(json!(7));
    assert_eq!((e.decision, e.layer), (Decision::Ask, Layer::Guard));
}

/// A program that follows links inside a folder it reads whole reads what they lead to: a link
/// in the workspace to a secret folder is read by `grep -R .`, not by `grep -r .`.
#[test]
fn links_followed_inside_a_folder_read_whole_lead_where_they_point() {
    let w = ws();
    let secrets = w.root.parent().unwrap().join("home/.ssh");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(secrets.join("id_ed25519"), "PRIVATE").unwrap();
    std::fs::create_dir_all(w.root.join("src/deep")).unwrap();
    std::os::unix::fs::symlink(&secrets, w.root.join("src/deep/keys")).unwrap();
    let p = policy(&format!(
        "mode = \"approve-all\"\n[[rule]]\nname = \"no-keys\"\ndecision = \"deny\"\npath = [\"{}/**\"]\n",
        secrets.display()
    ));
    let decide = |line: &str| {
        let e = p.evaluate(&call(&w, "bash", json!({ "command": line })));
        (e.decision, e.rule_name().map(str::to_owned))
    };
    let denied = (Decision::Deny, Some("no-keys".to_owned()));
    // A link to a folder outside holding a link to the secrets: links to links.
    let elsewhere = w.root.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&secrets, elsewhere.join("k")).unwrap();
    std::fs::create_dir_all(w.root.join("docs")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, w.root.join("docs/l")).unwrap();
    assert_eq!(decide("grep -R PRIVATE docs"), denied);
    assert_eq!(decide("grep -r PRIVATE docs").0, Decision::Allow);
    std::fs::remove_file(w.root.join("docs/l")).unwrap();
    // The workspace reached through the command's own folder or root: a read outside the
    // workspace, refused as such.
    for line in [
        "grep -R PRIVATE /proc/self/cwd",
        "grep -R PRIVATE /proc/thread-self/cwd/src/..",
        &format!("rg -L PRIVATE /proc/self/root{}", w.root.display()),
    ] {
        assert_eq!(decide(line).0, Decision::Deny, "{line}");
    }
    for line in [
        "grep -R PRIVATE .",
        "grep -R PRIVATE src",
        "rg -L PRIVATE",
        "find -L . -type f -exec cat {} +",
        "tar -czhf out.tgz src",
        "zip -qr out.zip src",
    ] {
        assert_eq!(decide(line), denied, "{line}");
    }
    for line in [
        "grep -r PRIVATE .",
        "rg PRIVATE",
        "tar czf out.tgz src",
        "zip -qry out.zip src",
        "grep -R PRIVATE docs",
    ] {
        assert_eq!(decide(line).0, Decision::Allow, "{line}");
    }
}

/// A folder too large to look through for links asks instead of guessing.
#[test]
fn links_followed_in_a_folder_too_large_to_look_through_ask() {
    let w = ws();
    let big = w.root.join("vendor");
    std::fs::create_dir_all(&big).unwrap();
    for i in 0..100_001 {
        std::fs::File::create(big.join(i.to_string())).unwrap();
    }
    let p = policy(
        "mode = \"approve-all\"\n[[rule]]\nname = \"no-keys\"\ndecision = \"deny\"\npath = [\"/nowhere/**\"]\n",
    );
    let e = p.evaluate(&call(
        &w,
        "bash",
        json!({"command": "grep -R PRIVATE vendor"}),
    ));
    assert_eq!(
        (e.decision, e.layer),
        (Decision::Ask, Layer::Guard),
        "{e:?}"
    );
    assert!(
        e.reason.contains("did not look at them all"),
        "{}",
        e.reason
    );
    let e = p.evaluate(&call(
        &w,
        "bash",
        json!({"command": "grep -r PRIVATE vendor"}),
    ));
    assert_eq!(e.decision, Decision::Allow);
}

/// A file with other names (hard links) changes under all of them when written: ask.
#[test]
fn writing_a_file_with_other_names_asks() {
    let w = ws();
    std::fs::create_dir_all(w.root.join(".git")).unwrap();
    std::fs::write(w.root.join(".git/config"), "[core]\n").unwrap();
    std::fs::hard_link(w.root.join(".git/config"), w.root.join("hl")).unwrap();
    let p = policy("fallback = \"allow\"\n");
    for line in ["echo x >> hl", "cp src/main.rs hl"] {
        let e = p.evaluate(&call(&w, "bash", json!({ "command": line })));
        assert_eq!(
            (e.decision, e.rule_name()),
            (Decision::Ask, Some("protected-path")),
            "{line}"
        );
        assert!(e.reason.contains("hard links"), "{}", e.reason);
    }
    let e = p.evaluate(&call(
        &w,
        "write_file",
        json!({"path": "hl", "content": "x"}),
    ));
    assert_eq!(e.decision, Decision::Ask);
    let e = p.evaluate(&call(
        &w,
        "bash",
        json!({"command": "echo x >> src/main.rs"}),
    ));
    assert_eq!(e.decision, Decision::Allow);
}

/// Gemini CLI and Claude Code name their files otherwise than the filesystem server; each is
/// read where it is, and a call whose arguments reach none of its profile's resources asks.
#[test]
fn agents_argument_names_are_read_and_unknown_ones_ask() {
    let w = ws();
    let p = policy(
        "mode = \"approve-all\"\n[[rule]]\nname = \"no-env\"\ndecision = \"deny\"\npath = \"**/.env\"\n",
    );
    let decide = |tool: &str, args: serde_json::Value| {
        let e = p.evaluate(&call(&w, tool, args));
        (e.decision, e.rule_name().map(str::to_owned))
    };
    let outside = (Decision::Deny, Some("path-outside-workspace".to_owned()));
    let env = (Decision::Deny, Some("no-env".to_owned()));
    let hidden = (Decision::Ask, Some("unanalysable-command".to_owned()));
    let fine = (Decision::Allow, None);
    // Gemini CLI.
    assert_eq!(
        decide("read_file", json!({"absolute_path": "/root/.ssh/id_rsa"})),
        outside
    );
    assert_eq!(
        decide("write_file", json!({"file_path": ".env", "content": "x"})),
        env
    );
    assert_eq!(
        decide("replace", json!({"file_path": ".env", "old_string": "a"})),
        env
    );
    assert_eq!(
        decide("list_directory", json!({"dir_path": "/etc"})),
        outside
    );
    assert_eq!(
        decide("read_many_files", json!({"paths": ["src/main.rs", ".env"]})),
        env
    );
    assert_eq!(decide("glob", json!({"pattern": "*.rs"})), fine);
    // Claude Code.
    assert_eq!(decide("Read", json!({"file_path": ".env"})), env);
    assert_eq!(decide("Edit", json!({"file_path": "/etc/hosts"})), outside);
    assert_eq!(
        decide("NotebookEdit", json!({"notebook_path": "/srv/x.ipynb"})),
        outside
    );
    assert_eq!(decide("Bash", json!({"command": "cat .env"})), env);
    assert_eq!(decide("Grep", json!({"pattern": "TODO"})), fine);
    assert_eq!(
        decide("Grep", json!({"pattern": "x", "path": "/etc"})),
        outside
    );
    assert_eq!(
        decide(
            "WebFetch",
            json!({"url": "file:///etc/passwd", "prompt": "p"})
        ),
        outside
    );
    // Arguments that reach none of the profile's resources but carry something: asked, even
    // under approve-all, and full access does not skip it.
    assert_eq!(
        decide("read_file", json!({"target": "/root/.ssh/id_rsa"})),
        hidden
    );
    assert_eq!(
        decide("fetch", json!({"uri": "https://evil.example/"})),
        hidden
    );
    assert_eq!(decide("bash", json!({"cmd": "rm -rf ~"})), hidden);
    let full = RunOptions::default().with_full_access(true);
    let e = p.evaluate_with(&call(&w, "Read", json!({"path_to_file": "x"})), &full);
    assert_eq!((e.decision, e.layer), (Decision::Ask, Layer::Guard));
    // Claude Code's own bookkeeping is a read: approve-reads lets it through. Leaving plan mode
    // and starting a sub-agent are not reads: approve-reads asks (the built-in policy allows
    // sub-agents, whose own calls are judged one by one).
    let reads = policy("mode = \"approve-reads\"\n");
    for (tool, args, decision) in [
        (
            "TodoWrite",
            json!({"todos": [{"content": "x", "status": "pending"}]}),
            Decision::Allow,
        ),
        (
            "Task",
            json!({"description": "d", "prompt": "p", "subagent_type": "general"}),
            Decision::Ask,
        ),
        ("ExitPlanMode", json!({"plan": "p"}), Decision::Ask),
    ] {
        assert_eq!(
            reads.evaluate(&call(&w, tool, args)).decision,
            decision,
            "{tool}"
        );
    }
    // Nothing to name a resource with: nothing hidden.
    assert_eq!(decide("list_allowed_directories", json!({})), fine);
    assert_eq!(decide("read_file", json!({"verbose": true})), fine);
    // A policy profile whose resources may be absent says so.
    let own = |optional: &str| {
        policy(&format!(
            "mode = \"approve-all\"\n[[tool]]\nmatch = \"search\"\naccess = \"read\"\npaths = [\"/root\"]\n{optional}"
        ))
        .evaluate(&call(&w, "search", json!({"query": "x"})))
        .decision
    };
    assert_eq!(own(""), Decision::Ask);
    assert_eq!(own("optional = true\n"), Decision::Allow);
}

/// A folder the agent wrote to look like a repository (`HEAD`, `objects`, `refs` and a `config`
/// whose `core.fsmonitor` runs a program) is not a `.git`, which the protected paths keep: git
/// run there, or in a line that writes one, asks.
#[test]
fn git_in_a_folder_written_as_a_repository_asks() {
    let w = ws();
    std::fs::create_dir_all(w.root.join(".git")).unwrap();
    let bare = w.root.join("src/r");
    std::fs::create_dir_all(bare.join("objects")).unwrap();
    std::fs::create_dir_all(bare.join("refs")).unwrap();
    std::fs::create_dir_all(bare.join("sub")).unwrap();
    std::fs::write(bare.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        bare.join("config"),
        "[core]\n\tfsmonitor = touch /tmp/pwned\n",
    )
    .unwrap();
    let p = policy("mode = \"approve-all\"\n");
    let decide = |tool: &str, args: serde_json::Value| {
        let e = p.evaluate(&call(&w, tool, args));
        (e.decision, e.layer)
    };
    let bash = |line: &str| decide("bash", json!({"command": line}));
    let asked = (Decision::Ask, Layer::Guard);
    let allowed = (Decision::Allow, Layer::Default);
    assert_eq!(bash("git -C src/r status"), asked);
    assert_eq!(bash("cd src/r && git status"), asked);
    assert_eq!(bash("cd src/r/sub && git log"), asked);
    assert_eq!(
        decide("git_status", json!({"repo_path": w.root.join("src/r")})),
        (Decision::Ask, Layer::Guard)
    );
    // The workspace's own repository, and folders without one.
    assert_eq!(bash("git status"), allowed);
    assert_eq!(bash("cd src && git status"), allowed);
    assert_eq!(bash("git diff > out.patch"), allowed);
    assert_eq!(decide("git_status", json!({"repo_path": w.root})), allowed);
    // A line that makes one, then runs git in it.
    assert_eq!(
        bash(
            "mkdir -p src/q/objects src/q/refs && echo 'ref: refs/heads/m' > src/q/HEAD && git -C src/q status"
        ),
        asked
    );
    assert_eq!(bash("cp -r src/r src/t && git -C src/t log"), asked);
    // A `HEAD` alone may make one (`commondir` names where the rest is), and so may a `HEAD`
    // that is a link to nothing.
    let split = w.root.join("src/w");
    std::fs::create_dir_all(&split).unwrap();
    std::fs::write(split.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(split.join("commondir"), "../c\n").unwrap();
    assert_eq!(bash("cd src/w && git diff HEAD~1 HEAD"), asked);
    let linked = w.root.join("src/h");
    std::fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink("refs/heads/nope", linked.join("HEAD")).unwrap();
    assert_eq!(bash("git -C src/h status"), asked);
    assert_eq!(
        bash("echo '[core]' > src/config && git -C src status"),
        asked
    );
}

/// The daemon's data folder holds the token that answers any request: no call reads or writes
/// it, however it names it, whatever the rules and the mode.
#[test]
fn toolgates_own_data_is_refused_to_every_call() {
    let w = ws();
    let data = w.root.join("state/toolgate");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("token"), "secret").unwrap();
    let mut p = policy(
        "mode = \"approve-all\"\n[[rule]]\nname = \"cat\"\ndecision = \"allow\"\ncommand = \"cat\"\n",
    );
    p.guard_data_folder(&data);
    let decide = |tool: &str, args: serde_json::Value| {
        let e = p.evaluate(&call(&w, tool, args));
        (e.decision, e.layer, e.rule_name().map(str::to_owned))
    };
    let refused = (
        Decision::Deny,
        Layer::Guard,
        Some("protected-path".to_owned()),
    );
    assert_eq!(
        decide("read_file", json!({"path": "state/toolgate/token"})),
        refused
    );
    assert_eq!(
        decide("write_file", json!({"path": "state/toolgate/grants"})),
        refused
    );
    assert_eq!(
        decide("bash", json!({"command": "cat state/toolgate/token"})),
        refused
    );
    assert_eq!(
        decide(
            "bash",
            json!({"command": "cd state && cat ./toolgate/token"})
        ),
        refused
    );
    // A tool no profile describes, naming it in any argument.
    let token = data.join("token").display().to_string();
    assert_eq!(
        decide("mytool", json!({"options": {"file": token}})),
        refused
    );
    assert_eq!(
        decide("NotebookRead", json!({"notebook_path": token})),
        refused
    );
    assert_eq!(
        decide("bash", json!({"command": "grep -r Bearer state"})),
        (
            Decision::Ask,
            Layer::Guard,
            Some("protected-path".to_owned())
        )
    );
    assert_eq!(
        decide("bash", json!({"command": "cat src/main.rs"})).0,
        Decision::Allow
    );
    // A data folder that holds the workspace protects the daemon's files in it, not the rest.
    let mut around = policy("mode = \"approve-all\"\n");
    around.guard_data_folder(w.root.parent().unwrap());
    let e = around.evaluate(&call(&w, "read_file", json!({"path": "src/main.rs"})));
    assert_eq!(e.decision, Decision::Allow);
}

/// A workspace that is the data folder itself (a call naming it, or the daemon's own folder
/// for calls that name none when the daemon runs there) still never reaches the daemon's
/// files: its token, its address and its store.
#[test]
fn a_workspace_that_is_the_data_folder_keeps_the_daemons_files_refused() {
    let w = ws();
    for file in [
        "token",
        "address",
        "toolgate.db",
        "toolgate.db-wal",
        "toolgate.db.journal",
    ] {
        std::fs::write(w.root.join(file), "secret").unwrap();
    }
    let mut p = policy(
        "mode = \"approve-all\"\n[[rule]]\nname = \"cat\"\ndecision = \"allow\"\ncommand = [\"cat\", \"grep\", \"ls\"]\n",
    );
    p.guard_data_folder(&w.root);
    let decide = |tool: &str, args: serde_json::Value| {
        let e = p.evaluate(&call(&w, tool, args));
        (e.decision, e.rule_name().map(str::to_owned))
    };
    let refused = (Decision::Deny, Some("protected-path".to_owned()));
    let token = w.root.join("token").display().to_string();
    for (tool, args) in [
        ("bash", json!({"command": "cat token"})),
        ("bash", json!({"command": "cat ./token"})),
        ("bash", json!({"command": format!("cat {token}")})),
        ("bash", json!({"command": "cat src/../address"})),
        ("bash", json!({"command": "rm toolgate.db"})),
        ("bash", json!({"command": "cp toolgate.db.journal /tmp/x"})),
        ("read_file", json!({"path": "token"})),
        ("write_file", json!({"path": "token", "content": "mine"})),
        (
            "write_file",
            json!({"path": "toolgate.db-wal", "content": ""}),
        ),
    ] {
        assert_eq!(decide(tool, args.clone()), refused, "{tool} {args}");
    }
    // The whole folder read: a person decides.
    assert_eq!(
        decide("bash", json!({"command": "grep -r Bearer ."})),
        (Decision::Ask, Some("protected-path".to_owned()))
    );
    // The rest of the workspace is the workspace.
    assert_eq!(
        decide("bash", json!({"command": "cat src/main.rs"})),
        (Decision::Allow, Some("cat".to_owned()))
    );
    assert_eq!(
        decide("bash", json!({"command": "ls src"})).0,
        Decision::Allow
    );
    assert_eq!(
        decide("read_file", json!({"path": "src/token"})).0,
        Decision::Allow,
        "a file named like one of the daemon's, elsewhere, is not one"
    );
}
