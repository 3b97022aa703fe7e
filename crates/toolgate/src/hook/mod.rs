//! `toolgate hook AGENT`: toolgate as an agent's permission hook. The agent runs it before each
//! tool call with the call on stdin, in its own shape, and reads the decision from stdout (and
//! the exit code) in its own shape: Claude Code's and Codex's `PreToolUse` and
//! `PermissionRequest`, Gemini CLI's `BeforeTool`, Cursor's `preToolUse`,
//! `beforeShellExecution`, `beforeMCPExecution` and `beforeReadFile`, Copilot's `preToolUse`.
//! Each agent's module cites the documentation and version it follows; docs/agents.md says
//! what each decision becomes in each agent.
//!
//! One path decides for all of them: the agent's input becomes a toolgate call (its tool names
//! mapped to the built-in profiles, an MCP tool to its server's tool, the workspace from the
//! agent's own field), the policy (or, with `--daemon`, the daemon) decides, the agent's
//! permission mode adjusts the decision where it says so, and the answer goes back in the
//! agent's shape. Where an agent cannot ask its person at an event, an ask is refused with the
//! reason (or, with `--defer-ask`, left to the agent's own approval flow).
//!
//! Whatever goes wrong — unreadable input, a policy that does not load, an event toolgate does
//! not know — is answered as the agent's refusal: a hook that fails any other way lets the call
//! through in most agents.

mod claude;
mod codex;
mod copilot;
mod cursor;
mod gemini;

use std::io::{Read, Write};
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};
use toolgate_policy::{Call, Decision, LoadOptions, Policy, PolicyRole, PolicySource};

use crate::args::PolicyArgs;
use toolgate_mcp::{Daemon, Submitted};

use crate::client::ClientArgs;
use crate::daemon::{DaemonClient, failure_text, waiting, with_rule};
use crate::{EXIT_OK, Failure};

/// Decides tool calls as an agent's permission hook: the call on stdin, the decision on stdout.
#[derive(Debug, Args)]
pub(crate) struct HookArgs {
    /// Whose hook protocol to speak.
    #[arg(value_enum)]
    agent: Agent,
    #[command(flatten)]
    policy: PolicyArgs,
    /// Let the daemon decide (`toolgate serve`): its asks wait on the approval page.
    #[arg(long)]
    daemon: bool,
    /// With --daemon, how long a call waits for a person on the page before it is withdrawn
    /// from it and left to the agent's own prompt (keep it under the agent's hook timeout:
    /// docs/agents.md lists them).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 50.0,
        requires = "daemon"
    )]
    wait: f64,
    /// Print no decision when no rule decided (the policy's mode or fallback did), so the
    /// agent's own permission rules decide those calls. Not for Cursor, whose hooks always
    /// answer.
    #[arg(long)]
    defer_default: bool,
    /// With Claude Code: an allowed `Bash` command runs inside `toolgate sandbox` (its
    /// `PreToolUse` answer's `updatedInput`), held by the kernel to what the policy allows
    /// without asking (docs/sandbox.md).
    #[arg(long)]
    sandbox: bool,
    /// Where the agent's hook cannot ask its person (Codex's `PreToolUse`, Cursor's
    /// `preToolUse` and `beforeReadFile`), leave a call toolgate asks about to the agent's own
    /// approval flow instead of refusing it.
    #[arg(long)]
    defer_ask: bool,
    #[command(flatten)]
    client: ClientArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Agent {
    /// Claude Code: `PreToolUse` and `PermissionRequest` hooks.
    Claude,
    /// Codex: `PreToolUse` and `PermissionRequest` hooks.
    Codex,
    /// Gemini CLI: the `BeforeTool` hook.
    Gemini,
    /// Cursor: `preToolUse`, `beforeShellExecution`, `beforeMCPExecution`, `beforeReadFile`.
    Cursor,
    /// GitHub Copilot CLI: the `preToolUse` hook.
    Copilot,
}

impl Agent {
    /// Every agent toolgate speaks to.
    pub(crate) const ALL: [Agent; 5] = [
        Agent::Claude,
        Agent::Codex,
        Agent::Gemini,
        Agent::Cursor,
        Agent::Copilot,
    ];

    /// The name `toolgate hook` takes.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Cursor => "cursor",
            Agent::Copilot => "copilot",
        }
    }

    /// The agent's command-line program, as found on `$PATH`.
    pub(crate) fn program(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Cursor => "cursor-agent",
            Agent::Copilot => "copilot",
        }
    }

    /// The name a call's `context.agent` carries.
    fn context_name(self) -> &'static str {
        match self {
            Agent::Claude => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini-cli",
            Agent::Cursor => "cursor",
            Agent::Copilot => "copilot",
        }
    }

    fn read(self, hook: &Value) -> Result<Input, String> {
        match self {
            Agent::Claude => claude::read(hook),
            Agent::Codex => codex::read(hook),
            Agent::Gemini => gemini::read(hook),
            Agent::Cursor => cursor::read(hook),
            Agent::Copilot => copilot::read(hook),
        }
    }

    fn reply(self, event: &str, answer: &Answer) -> Reply {
        match self {
            Agent::Claude => claude::reply(event, answer),
            Agent::Codex => codex::reply(event, answer),
            Agent::Gemini => gemini::reply(event, answer),
            Agent::Cursor => cursor::reply(event, answer),
            Agent::Copilot => copilot::reply(event, answer),
        }
    }

    /// The event an input that could not be read is answered as: the agent's tool-call
    /// event, whose refusal stops the call.
    fn main_event(self) -> &'static str {
        match self {
            Agent::Claude | Agent::Codex => "PreToolUse",
            Agent::Gemini => "BeforeTool",
            Agent::Cursor | Agent::Copilot => "preToolUse",
        }
    }
}

/// What one hook input asks of toolgate.
pub(super) struct Input {
    /// The event, as the agent names it: the reply's shape depends on it.
    event: String,
    work: Work,
}

enum Work {
    /// A tool call to decide.
    Decide(Box<Request>),
    /// Nothing to decide (an event after a tool ran): the reply the event expects from a hook
    /// that has no objection.
    Acknowledge,
    /// A tool call's result came into the session (an after-tool event): with `--daemon`, the
    /// daemon is told (its session may be tainted by it); then acknowledged. The call's id,
    /// when the agent gives one.
    Report(Box<Request>, Option<String>),
    /// An event toolgate does not know: refused, with why.
    Refuse(String),
}

/// A tool call as an agent hands it to its hook, in toolgate's terms.
pub(super) struct Request {
    /// The tool's name, mapped to the name toolgate's built-in profiles know it by.
    tool: String,
    /// Its arguments (an object).
    args: Value,
    /// The MCP server whose tool it is.
    server: Option<String>,
    /// The workspace (the agent's project folder); the project's policy is found from it.
    workspace: String,
    /// The folder the agent's session is in, when it says.
    cwd: Option<String>,
    /// The agent's session.
    session: Option<String>,
    /// Whether the agent asks its person when this event's hook answers ask.
    can_ask: bool,
    /// The agent's permission mode, when it says (Claude Code's and Codex's
    /// `permission_mode`).
    mode: Option<String>,
}

impl Request {
    /// A call to decide, which the agent asks its person about when told to, in no permission
    /// mode.
    fn new(
        tool: String,
        args: Value,
        server: Option<String>,
        workspace: String,
        cwd: Option<String>,
        session: Option<String>,
    ) -> Request {
        Request {
            tool,
            args,
            server,
            workspace,
            cwd,
            session,
            can_ask: true,
            mode: None,
        }
    }
}

impl Input {
    fn decide(event: &str, request: Request) -> Input {
        Input {
            event: event.to_owned(),
            work: Work::Decide(Box::new(request)),
        }
    }

    fn report(event: &str, request: Request, call_id: Option<String>) -> Input {
        Input {
            event: event.to_owned(),
            work: Work::Report(Box::new(request), call_id),
        }
    }

    fn acknowledge(event: &str) -> Input {
        Input {
            event: event.to_owned(),
            work: Work::Acknowledge,
        }
    }

    fn unknown(agent: &str, event: &str) -> Input {
        Input {
            event: event.to_owned(),
            work: Work::Refuse(format!(
                "`{event}` is not a {agent} hook event toolgate knows; only tool calls are \
                 decided"
            )),
        }
    }
}

/// What the hook answers, before the agent's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Answer {
    Allow(String),
    /// Allowed, to run with this input instead (`--sandbox`: the command inside the sandbox).
    AllowRewritten(String, Value),
    Deny(String),
    Ask(String),
    /// No decision: the agent's own rules decide.
    Defer,
    /// Nothing to decide: the event's empty reply.
    Acknowledge,
}

/// What the hook prints and how it exits.
pub(super) struct Reply {
    stdout: String,
    stderr: String,
    exit: u8,
}

impl Reply {
    fn json(value: &Value) -> Reply {
        Reply {
            stdout: value.to_string(),
            stderr: String::new(),
            exit: EXIT_OK,
        }
    }

    fn empty() -> Reply {
        Reply {
            stdout: String::new(),
            stderr: String::new(),
            exit: EXIT_OK,
        }
    }

    /// Exit 2 with the reason on stderr: a block in Claude Code's, Codex's and Cursor's
    /// conventions.
    fn blocked(reason: &str) -> Reply {
        Reply {
            stdout: String::new(),
            stderr: reason.to_owned(),
            exit: 2,
        }
    }
}

/// The most of stdin read: a tool call's arguments, not a stream.
const MAX_INPUT: u64 = 16 << 20;

pub(crate) fn run(args: &HookArgs) -> Result<u8, Failure> {
    if args.defer_default && args.agent == Agent::Cursor {
        return Err(Failure::Message(
            "error: --defer-default is not for Cursor: its hooks always answer (see docs/agents.md)"
                .to_owned(),
        ));
    }
    let mut input = Vec::new();
    let read = std::io::stdin().take(MAX_INPUT + 1).read_to_end(&mut input);
    let (event, answer) = match read {
        Err(e) => (None, refused(&format!("cannot read the hook's input: {e}"))),
        Ok(_) if input.len() as u64 > MAX_INPUT => {
            (None, refused("the hook's input is larger than 16 MiB"))
        }
        Ok(_) => answer(args, &input),
    };
    let event = event.unwrap_or_else(|| args.agent.main_event().to_owned());
    let reply = args.agent.reply(&event, &answer);
    let mut out = std::io::stdout().lock();
    if !reply.stdout.is_empty() {
        writeln!(out, "{}", reply.stdout)?;
    }
    out.flush()?;
    if !reply.stderr.is_empty() {
        let mut err = std::io::stderr().lock();
        writeln!(err, "{}", reply.stderr)?;
    }
    Ok(reply.exit)
}

fn refused(why: &str) -> Answer {
    Answer::Deny(format!("toolgate refused the call: {why}"))
}

/// The event and the answer for one hook input.
fn answer(args: &HookArgs, input: &[u8]) -> (Option<String>, Answer) {
    // Some agents on Windows start their input with byte-order marks.
    let mut input = input;
    while let Some(rest) = input.strip_prefix("\u{feff}".as_bytes()) {
        input = rest;
    }
    let hook: Value = match serde_json::from_slice(input) {
        Ok(hook @ Value::Object(_)) => hook,
        Ok(_) => return (None, refused("the hook's input is not a JSON object")),
        Err(e) => return (None, refused(&format!("the hook's input is not JSON: {e}"))),
    };
    let input = match args.agent.read(&hook) {
        Ok(input) => input,
        Err(why) => return (None, refused(&why)),
    };
    let answer = match input.work {
        Work::Acknowledge => Answer::Acknowledge,
        Work::Report(request, call_id) => {
            if args.daemon {
                report(args, &request, call_id.as_deref());
            }
            Answer::Acknowledge
        }
        Work::Refuse(why) => refused(&why),
        Work::Decide(request) => decide(args, &request).unwrap_or_else(|why| refused(&why)),
    };
    (Some(input.event), answer)
}

/// Tells the daemon a call's result came into its session. The call ran already: a report that
/// fails is said on stderr (the agent shows it) and leaves the session as the daemon had it.
fn report(args: &HookArgs, request: &Request, call_id: Option<&str>) {
    if request.session.is_none() {
        return;
    }
    // (What the daemon answers is the daemon client's to say.)
    let sent = call_of(args.agent, request).and_then(|call| {
        let daemon = DaemonClient::new(&args.client).map_err(|e| failure_text(&e))?;
        toolgate_mcp::Daemon::report(&daemon, &call, call_id);
        Ok(())
    });
    if let Err(why) = sent {
        eprintln!(
            "toolgate: the daemon was not told of this result (its session's taint may miss it): {why}"
        );
    }
}

/// A decision with its reason and the whole result (the JSON `toolgate check` prints).
struct Decided {
    decision: Decision,
    reason: String,
    result: Value,
}

impl Decided {
    /// Whether an allowed command runs inside the sandbox (`--sandbox`): unless the rules that
    /// allowed it say `sandbox = false` (the evaluation's `"sandbox": false`).
    fn sandboxed(&self) -> bool {
        self.result.get("sandbox") != Some(&Value::Bool(false))
    }
}

fn decide(args: &HookArgs, request: &Request) -> Result<Answer, String> {
    let call = call_of(args.agent, request)?;
    let decided = if args.daemon {
        ask_the_daemon(args, &call)
    } else {
        let folder = PathBuf::from(&request.workspace);
        let files = args.policy.files_from(&folder);
        let policy = load_for_one_call(&files)?;
        let evaluation = policy.evaluate(&call);
        // The process ends with this call: freeing the policy's many small allocations one by
        // one would only delay the answer.
        std::mem::forget(policy);
        let result = serde_json::to_value(&evaluation).unwrap_or(Value::Null);
        Decided {
            decision: evaluation.decision,
            reason: with_rule(evaluation.rule_name(), &evaluation.reason),
            result,
        }
    };
    // `--sandbox` (Claude Code's Bash): whether the rules keep the command inside, and the
    // hosts it names, read before the answer is settled (only then).
    let sandboxing = (args.sandbox && args.agent == Agent::Claude)
        .then(|| (decided.sandboxed(), reached_hosts(&decided.result)));
    let answer = settle(args, request, decided);
    Ok(match (answer, sandboxing) {
        (Answer::Allow(reason), Some((false, _))) => Answer::Allow(format!(
            "{reason} — outside the sandbox: the rule says `sandbox = false`"
        )),
        (Answer::Allow(reason), Some((true, reaches))) => {
            match sandboxed(args, request, &reaches) {
                Some(input) => Answer::AllowRewritten(
                    format!("{reason} — run inside toolgate's sandbox"),
                    input,
                ),
                None => Answer::Allow(reason),
            }
        }
        (answer, _) => answer,
    })
}

/// The hosts an allowed call's URLs name: each with whether it was asked about (a person, or
/// the agent's mode, allowed what the policy would have asked). `None` when it names no URL.
fn reached_hosts(result: &Value) -> Option<Vec<(String, bool)>> {
    let hosts: Vec<(String, bool)> = subjects(result)
        .iter()
        .filter(|s| text(s, "kind") == Some("url"))
        .filter_map(|s| {
            Some((
                text(s, "host")?.to_owned(),
                text(s, "decision") == Some("ask"),
            ))
        })
        .collect();
    (!hosts.is_empty()).then_some(hosts)
}

/// A `Bash` call's input with its command run inside `toolgate sandbox` in the workspace
/// (`bash -c COMMAND` there), under the policy files the hook was given, or `None` for other
/// calls. A command that names URLs gets the network through the sandbox's proxy (what the
/// policy allows), widened by exactly the hosts its answer allowed that the policy asks about.
fn sandboxed(
    args: &HookArgs,
    request: &Request,
    reaches: &Option<Vec<(String, bool)>>,
) -> Option<Value> {
    if request.tool != "Bash" {
        return None;
    }
    let command = request.args.get("command")?.as_str()?;
    let exe = std::env::current_exe().ok()?.canonicalize().ok()?;
    let mut words = vec![exe.to_string_lossy().into_owned(), "sandbox".to_owned()];
    if args.policy.isolated {
        words.push("--isolated".to_owned());
    }
    for policy in &args.policy.policies {
        let policy = std::path::absolute(policy).unwrap_or_else(|_| policy.clone());
        words.push("--policy".to_owned());
        words.push(policy.to_string_lossy().into_owned());
    }
    if let Some(hosts) = reaches {
        words.push("--proxy".to_owned());
        for (host, asked) in hosts {
            if *asked {
                words.push("--allow-domain".to_owned());
                words.push(host.clone());
            }
        }
    }
    words.extend([
        "--workspace".to_owned(),
        request.workspace.clone(),
        "--".to_owned(),
        "bash".to_owned(),
        "-c".to_owned(),
        command.to_owned(),
    ]);
    let mut input = request.args.clone();
    let line = words
        .iter()
        .map(|w| crate::install::shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    input
        .as_object_mut()?
        .insert("command".into(), Value::String(line));
    Some(input)
}

/// Loads the policy for one call.
///
/// Checking a policy's examples and compiling all its globs is what `lint`, `test` and the
/// daemon do when they load it; a hook process decides one call and exits, on every call of
/// every agent. So it does that work only for policy text it has not yet seen pass: once the
/// files load with their examples holding, a marker named by the hash of their text (and of the
/// environment the examples are evaluated in) is left in the user's cache folder, and later
/// calls load that same text without the checks, compiling only the globs the call needs. A
/// policy whose examples fail is refused as before, and leaves no marker.
pub(crate) fn load_for_one_call(files: &[(PolicyRole, PathBuf)]) -> Result<Policy, String> {
    let refused = |e: Failure| format!("the policy does not load: {}", failure_text(&e));
    let sources = PolicyArgs::sources(files).map_err(refused)?;
    let marker = checked_marker(&sources);
    let seen = marker.as_ref().is_some_and(|m| m.is_file());
    let options = if seen {
        LoadOptions {
            check_examples: false,
            compile_at_load: false,
        }
    } else {
        LoadOptions::default()
    };
    let policy = Policy::load(sources, options).map_err(|e| refused(e.into()))?;
    if !seen && let Some(marker) = marker {
        // Best effort: without the marker the next call checks again.
        if let Some(dir) = marker.parent()
            && std::fs::create_dir_all(dir).is_ok()
        {
            let _ = std::fs::write(&marker, b"");
        }
    }
    Ok(policy)
}

/// Where the marker of policy texts that loaded with their examples holding is kept: the
/// user's cache folder, named by the hash of everything the check depended on. `None` when
/// there is no cache folder.
pub(crate) fn checked_marker(sources: &[PolicySource]) -> Option<PathBuf> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let cache = var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let mut hasher = DefaultHasher::new();
    env!("CARGO_PKG_VERSION").hash(&mut hasher);
    toolgate_policy::DEFAULT_POLICY.hash(&mut hasher);
    for source in sources {
        format!("{:?}", source.role).hash(&mut hasher);
        source.name.hash(&mut hasher);
        source.base_dir.hash(&mut hasher);
        source.text.hash(&mut hasher);
    }
    // What examples are evaluated against besides the text: the home folder, the temporary
    // folder, toolgate's own folders and the folder relative paths resolve in.
    for name in [
        "HOME",
        "TMPDIR",
        "TOOLGATE_DATA_DIR",
        "TOOLGATE_CONFIG_DIR",
        "XDG_DATA_HOME",
        "XDG_CONFIG_HOME",
    ] {
        var(name).hash(&mut hasher);
    }
    std::env::current_dir().ok().hash(&mut hasher);
    Some(
        cache
            .join("toolgate/checked")
            .join(format!("{:016x}", hasher.finish())),
    )
}

/// The answer for a decision: adjusted by the agent's permission mode, left to the agent when
/// only the default decided and `--defer-default` says so, and refused where the agent
/// cannot ask.
fn settle(args: &HookArgs, request: &Request, decided: Decided) -> Answer {
    let Decided {
        decision,
        reason,
        result,
    } = decided;
    let mut answer = match decision {
        Decision::Allow => Answer::Allow(reason),
        Decision::Deny => Answer::Deny(reason),
        Decision::Ask => Answer::Ask(reason),
    };
    answer = match (request.mode.as_deref(), answer) {
        // Plan mode: nothing that writes or runs goes ahead without the person.
        (Some("plan"), Answer::Allow(reason)) if !reads_only(&result) => Answer::Ask(format!(
            "{reason} — but the agent is in plan mode, where only reads run without asking"
        )),
        // Accept-edits mode: an edit of the workspace's own files goes ahead.
        (Some("acceptEdits"), Answer::Ask(reason)) if edits_the_workspace(&result) => {
            Answer::Allow(format!(
                "{reason} — allowed: the agent is in acceptEdits mode and this edits the \
                 workspace"
            ))
        }
        // Bypass mode: only deny rules and guards act.
        (Some("bypassPermissions"), Answer::Ask(reason)) if !asked_by_a_guard(&result) => {
            Answer::Allow(format!(
                "{reason} — allowed: the agent is in bypassPermissions mode, where only deny \
                 rules and guards act"
            ))
        }
        // Don't-ask mode: what is not allowed is refused.
        (Some("dontAsk"), Answer::Ask(reason)) => Answer::Deny(format!(
            "{reason} — refused: the agent is in dontAsk mode, where nothing asks"
        )),
        (_, answer) => answer,
    };
    if args.defer_default && only_the_default_decided(&result) {
        return Answer::Defer;
    }
    match answer {
        Answer::Ask(reason) if !request.can_ask => {
            if args.defer_ask {
                Answer::Defer
            } else {
                Answer::Deny(format!(
                    "{reason} — toolgate asks a person about this call, and this hook of the \
                     agent cannot ask: allow it in the policy, or answer it on the approval \
                     page (`--daemon`)"
                ))
            }
        }
        answer => answer,
    }
}

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The result's subjects.
fn subjects(result: &Value) -> &[Value] {
    result
        .get("subjects")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Whether the call only reads: its tool's profile says so, or every subject is a read (a
/// path read, a URL fetched, a command known only to read).
fn reads_only(result: &Value) -> bool {
    if text(result, "access") == Some("read") {
        return true;
    }
    let subjects = subjects(result);
    !subjects.is_empty()
        && subjects.iter().all(|s| match text(s, "kind") {
            Some("path") => text(s, "access") == Some("read"),
            Some("url") => true,
            Some("command") => text(s, "effect") == Some("reads"),
            _ => false,
        })
}

/// Whether every subject asked about is a file the call writes inside the workspace, decided
/// by a rule or the default (not a guard), and no command runs.
fn edits_the_workspace(result: &Value) -> bool {
    let subjects = subjects(result);
    let asked: Vec<&Value> = subjects
        .iter()
        .filter(|s| text(s, "decision") == Some("ask"))
        .collect();
    !asked.is_empty()
        && subjects.iter().all(|s| text(s, "kind") == Some("path"))
        && asked.iter().all(|s| {
            text(s, "access") == Some("write")
                && text(s, "layer") != Some("guard")
                && match (text(s, "resolved"), text(s, "root")) {
                    (Some(resolved), Some(root)) => {
                        std::path::Path::new(resolved).starts_with(root)
                    }
                    _ => false,
                }
        })
}

/// Whether a guard (confinement, protected paths, an unanalysable command) asks.
fn asked_by_a_guard(result: &Value) -> bool {
    text(result, "layer") == Some("guard")
        || subjects(result)
            .iter()
            .any(|s| text(s, "decision") == Some("ask") && text(s, "layer") == Some("guard"))
}

/// Whether no rule, guard or grant decided anything: the mode or fallback did.
fn only_the_default_decided(result: &Value) -> bool {
    text(result, "layer") == Some("default")
        && subjects(result)
            .iter()
            .all(|s| text(s, "layer") == Some("default"))
}

/// The toolgate call for a request.
fn call_of(agent: Agent, request: &Request) -> Result<Call, String> {
    let mut context = Map::new();
    context.insert("workspace".into(), request.workspace.clone().into());
    if let Some(cwd) = &request.cwd {
        context.insert("cwd".into(), cwd.clone().into());
    }
    if let Some(session) = &request.session {
        context.insert("session".into(), session.clone().into());
    }
    context.insert("agent".into(), agent.context_name().into());
    if let Some(server) = &request.server {
        context.insert("server".into(), server.clone().into());
    }
    Call::from_value(json!({"tool": request.tool, "args": request.args, "context": context}))
        .map_err(|e| format!("the call is not one toolgate reads: {}", e.message))
}

/// A tool's arguments: an object, or JSON text holding one (Cursor's and Copilot's MCP and
/// tool arguments may come as text); none is an empty object.
fn arguments(value: Option<&Value>, key: &str) -> Result<Value, String> {
    match value {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(object @ Value::Object(_)) => Ok(object.clone()),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(Value::Object(Map::new())),
        Some(Value::String(text)) => match serde_json::from_str(text) {
            Ok(object @ Value::Object(_)) => Ok(object),
            _ => Err(format!(
                "the hook's `{key}` is not an object (nor JSON text holding one)"
            )),
        },
        Some(_) => Err(format!("the hook's `{key}` is not an object")),
    }
}

/// A non-empty string field.
fn string(hook: &Value, key: &str) -> Option<String> {
    text(hook, key).filter(|t| !t.is_empty()).map(str::to_owned)
}

/// A non-empty environment variable.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `mcp__SERVER__TOOL` (Claude Code's and Codex's spelling) as the server and its tool.
fn mcp_double_underscore(name: &str) -> Option<(String, String)> {
    let (server, tool) = name.strip_prefix("mcp__")?.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then(|| (server.to_owned(), tool.to_owned()))
}

/// The daemon's decision on `call`, waiting up to `--wait` seconds for a person; an ask (the
/// agent's own prompt) when none comes in time or the daemon cannot be reached.
fn ask_the_daemon(args: &HookArgs, call: &Call) -> Decided {
    let daemon = match DaemonClient::new(&args.client) {
        Ok(daemon) => daemon,
        Err(e) => {
            return Decided {
                decision: Decision::Ask,
                reason: format!("toolgate: cannot ask the daemon ({})", failure_text(&e)),
                result: Value::Null,
            };
        }
    };
    let verdict = match daemon.submit(call) {
        Submitted::Decided(verdict) => verdict,
        Submitted::Pending { id, reason } => {
            let deadline = std::time::Instant::now() + waiting(args.wait);
            let mut verdict = daemon.wait(&id, deadline);
            if verdict.decision.is_none() {
                // `toolgate (RULE): REASON — nobody answered …`
                verdict.reason = format!("{reason} — {}", verdict.reason);
            }
            verdict
        }
    };
    Decided {
        // No decision: the agent's own prompt asks.
        decision: verdict.decision.unwrap_or(Decision::Ask),
        reason: verdict.reason,
        result: verdict.body,
    }
}
