//! The middleware pipeline: hook order, control fields, argument rewriting, state, failures.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use toolgate_runtime::{
    AfterFunctionContext, Agent, BatchContext, ErrorContext, EventKind, ForkContext,
    FunctionContext, FunctionNext, FunctionRequest, HookError, HookResult, IterationContext,
    IterationEndContext, LifecycleContext, Message, Middleware, MiddlewareExt, MiddlewareState,
    ModelNext, ModelRequest, ModelStream, ModelUpdate, Outcome, Reply, RunContext, RunError,
    ScriptedModel, StateScope, ToolError, ToolExecutionContext, TurnContext, TurnEnd,
    TurnEndContext, Verdict,
};

use common::{Log, failing_tool, path, recording_tool};

/// Records every hook it sees as `{name}.{hook}`.
struct Recorder {
    name: &'static str,
    log: Log,
}

impl Recorder {
    fn new(name: &'static str, log: &Log) -> Recorder {
        Recorder {
            name,
            log: log.clone(),
        }
    }

    fn note(&self, hook: &str) {
        self.log.push(format!("{}.{hook}", self.name));
    }
}

#[async_trait]
impl Middleware for Recorder {
    fn name(&self) -> &str {
        self.name
    }
    async fn before_start(&self, _: &mut LifecycleContext<'_>) -> HookResult {
        self.note("before_start");
        Ok(())
    }
    async fn after_started(&self, _: &mut LifecycleContext<'_>) -> HookResult {
        self.note("after_started");
        Ok(())
    }
    async fn before_stop(&self, _: &mut LifecycleContext<'_>) -> HookResult {
        self.note("before_stop");
        Ok(())
    }
    async fn after_stopped(&self, _: &mut LifecycleContext<'_>) -> HookResult {
        self.note("after_stopped");
        Ok(())
    }
    async fn before_message_turn(&self, _: &mut TurnContext<'_>) -> HookResult {
        self.note("before_message_turn");
        Ok(())
    }
    async fn after_message_turn(&self, _: &mut TurnEndContext<'_>) -> HookResult {
        self.note("after_message_turn");
        Ok(())
    }
    async fn before_iteration(&self, cx: &mut IterationContext<'_>) -> HookResult {
        self.note(&format!("before_iteration({})", cx.iteration));
        Ok(())
    }
    async fn after_iteration(&self, cx: &mut IterationEndContext<'_>) -> HookResult {
        self.note(&format!("after_iteration({})", cx.iteration));
        Ok(())
    }
    fn wrap_model_turn_streaming<'a>(
        &'a self,
        _run: &'a RunContext,
        request: ModelRequest,
        next: ModelNext<'a>,
    ) -> ModelStream<'a> {
        self.note("wrap_model");
        next.run(request)
    }
    async fn before_tool_execution(&self, _: &mut ToolExecutionContext<'_>) -> HookResult {
        self.note("before_tool_execution");
        Ok(())
    }
    async fn before_parallel_batch(&self, _: &mut BatchContext<'_>) -> HookResult {
        self.note("before_parallel_batch");
        Ok(())
    }
    async fn before_function(&self, cx: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
        self.note(&format!("before_function({})", cx.call.id));
        Ok(Verdict::Continue)
    }
    async fn wrap_function_call(
        &self,
        request: FunctionRequest,
        next: FunctionNext<'_>,
    ) -> Result<Value, ToolError> {
        self.note(&format!("wrap_function({})", request.call_id));
        next.run(request).await
    }
    async fn after_function(&self, cx: &mut AfterFunctionContext<'_>) -> HookResult {
        self.note(&format!("after_function({})", cx.call.id));
        Ok(())
    }
    async fn on_error(&self, cx: &mut ErrorContext<'_>) -> HookResult {
        self.note(&format!("on_error({})", cx.call.id));
        Ok(())
    }
    async fn before_branch_fork_commit(&self, _: &mut ForkContext<'_>) -> HookResult {
        self.note("before_branch_fork_commit");
        Ok(())
    }
}

fn three(log: &Log) -> [Recorder; 3] {
    [
        Recorder::new("A", log),
        Recorder::new("B", log),
        Recorder::new("C", log),
    ]
}

fn expand(pattern: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for entry in pattern {
        match entry.strip_prefix("ABC ") {
            Some(hook) => out.extend(["A", "B", "C"].map(|m| format!("{m}.{hook}"))),
            None => match entry.strip_prefix("CBA ") {
                Some(hook) => out.extend(["C", "B", "A"].map(|m| format!("{m}.{hook}"))),
                None => out.push((*entry).to_owned()),
            },
        }
    }
    out
}

#[tokio::test]
async fn three_middlewares_see_every_hook_in_the_documented_order() {
    let log = Log::default();
    let model = ScriptedModel::new([
        Reply::call("read", path("a"))
            .and_call("fail", json!({}))
            .and_call("read", path("b")),
        Reply::text("done"),
    ]);
    let [a, b, c] = three(&log);
    let agent = Agent::builder(model)
        .tool(recording_tool("read", &log))
        .tool(failing_tool("fail", "boom"))
        .middleware(a)
        .middleware(b)
        .middleware(c)
        .build()
        .unwrap();

    let runtime = agent.start().await.unwrap();
    let session = agent.session("s");
    let turn = runtime
        .submit(&session, "main", "go", Default::default())
        .await
        .unwrap();
    assert_eq!(turn.end, TurnEnd::Completed);
    runtime.stop().await.unwrap();
    let fork = agent.fork(&session, "main", "alt", None).unwrap();
    agent.commit_fork(fork).await.unwrap();

    let expected = expand(&[
        "ABC before_start",
        "CBA after_started",
        "ABC before_message_turn",
        "ABC before_iteration(0)",
        "ABC wrap_model",
        "ABC before_tool_execution",
        "ABC before_parallel_batch",
        "ABC before_function(call_1)",
        "ABC before_function(call_2)",
        "ABC before_function(call_3)",
        "ABC wrap_function(call_1)",
        "ran read {\"path\":\"a\"}",
        "CBA after_function(call_1)",
        "ABC wrap_function(call_2)",
        "CBA on_error(call_2)",
        "CBA after_function(call_2)",
        "ABC wrap_function(call_3)",
        "ran read {\"path\":\"b\"}",
        "CBA after_function(call_3)",
        "CBA after_iteration(0)",
        "ABC before_iteration(1)",
        "ABC wrap_model",
        "CBA after_iteration(1)",
        "CBA after_message_turn",
        "ABC before_stop",
        "CBA after_stopped",
        "ABC before_branch_fork_commit",
    ]);
    assert_eq!(log.take(), expected);
    assert_eq!(
        turn.results
            .iter()
            .map(|r| (r.outcome, r.text()))
            .collect::<Vec<_>>(),
        [
            (Outcome::Completed, "ok read".to_owned()),
            (Outcome::Failed, "boom".to_owned()),
            (Outcome::Completed, "ok read".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_single_call_has_no_batch_hook() {
    let log = Log::default();
    let model = ScriptedModel::new([Reply::call("read", path("a")), Reply::text("done")]);
    let agent = Agent::builder(model)
        .tool(recording_tool("read", &log))
        .middleware(Recorder::new("A", &log))
        .build()
        .unwrap();
    agent.run(&agent.session("s"), "go").await.unwrap();
    assert!(!log.entries().iter().any(|e| e.contains("parallel_batch")));
}

/// Wraps the model stream, counting calls and updates.
struct StreamCounter {
    calls: Arc<AtomicUsize>,
    updates: Arc<AtomicUsize>,
}

impl Middleware for StreamCounter {
    fn wrap_model_turn_streaming<'a>(
        &'a self,
        _run: &'a RunContext,
        request: ModelRequest,
        next: ModelNext<'a>,
    ) -> ModelStream<'a> {
        // Side effect before the stream is returned: with a probe it would run twice.
        self.calls.fetch_add(1, Ordering::SeqCst);
        let updates = Arc::clone(&self.updates);
        Box::pin(next.run(request).map(move |update| {
            updates.fetch_add(1, Ordering::SeqCst);
            match update {
                Ok(ModelUpdate::Text(t)) => Ok(ModelUpdate::Text(t.to_uppercase())),
                other => other,
            }
        }))
    }
}

#[tokio::test]
async fn the_streaming_wrapper_runs_once_per_model_call_and_can_transform_the_stream() {
    let calls = Arc::new(AtomicUsize::new(0));
    let updates = Arc::new(AtomicUsize::new(0));
    let log = Log::default();
    let model = ScriptedModel::new([
        Reply::call("read", path("a")),
        Reply::text("all three words"),
    ]);
    let agent = Agent::builder(model)
        .tool(recording_tool("read", &log))
        .middleware(StreamCounter {
            calls: Arc::clone(&calls),
            updates: Arc::clone(&updates),
        })
        .build()
        .unwrap();
    let turn = agent.run(&agent.session("s"), "go").await.unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "one per model call, no probe"
    );
    assert_eq!(updates.load(Ordering::SeqCst), 1 + 3);
    assert_eq!(turn.text(), "ALL THREE WORDS");
}

/// Rewrites arguments and records what it saw.
struct Rewrite {
    seen: Log,
    to: Option<Map<String, Value>>,
}

#[async_trait]
impl Middleware for Rewrite {
    async fn before_function(&self, cx: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
        self.seen.push(Value::Object(cx.args.clone()).to_string());
        Ok(Verdict::Allow {
            args: self.to.clone(),
        })
    }
}

#[tokio::test]
async fn rewritten_arguments_reach_later_middleware_and_the_tool_and_an_empty_map_counts() {
    for (replacement, expected) in [
        (
            Some(json!({"path": "b", "x": 1})),
            "{\"path\":\"b\",\"x\":1}",
        ),
        (Some(json!({})), "{}"),
        (None, "{\"path\":\"a\"}"),
    ] {
        let log = Log::default();
        let seen = Log::default();
        let model = ScriptedModel::new([Reply::call("read", path("a")), Reply::text("done")]);
        let to = replacement.map(|v| v.as_object().unwrap().clone());
        let agent = Agent::builder(model)
            .tool(recording_tool("read", &log))
            .middleware(Rewrite {
                seen: seen.clone(),
                to,
            })
            .middleware(Rewrite {
                seen: seen.clone(),
                to: None,
            })
            .build()
            .unwrap();
        agent.run(&agent.session("s"), "go").await.unwrap();
        assert_eq!(seen.take(), ["{\"path\":\"a\"}", expected]);
        assert_eq!(log.take(), [format!("ran read {expected}")]);
    }
}

/// Returns a fixed verdict.
struct Fixed(&'static str, Verdict);

#[async_trait]
impl Middleware for Fixed {
    fn name(&self) -> &str {
        self.0
    }
    async fn before_function(&self, _: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
        Ok(self.1.clone())
    }
}

async fn run_one(middleware: Vec<Arc<dyn Middleware>>) -> (Vec<String>, String, Outcome) {
    let log = Log::default();
    let model = ScriptedModel::new([Reply::call("t", json!({"a": 1})), Reply::text("done")]);
    let mut builder = Agent::builder(model).tool(recording_tool("t", &log));
    for m in middleware {
        builder = builder.middleware_arc(m);
    }
    let agent = builder.build().unwrap();
    let turn = agent.run(&agent.session("s"), "go").await.unwrap();
    let result = &turn.results[0];
    (log.take(), result.text(), result.outcome)
}

#[tokio::test]
async fn verdicts_are_processed_at_once_and_an_allow_never_skips_a_later_deny() {
    // pydantic-ai-middleware's flat list: ALLOW(mod) then DENY is blocked.
    let (ran, text, outcome) = run_one(vec![
        Fixed("allow", Verdict::allow()).shared(),
        Fixed("deny", Verdict::deny("nope")).shared(),
    ])
    .await;
    assert!(ran.is_empty());
    assert_eq!(
        (text.as_str(), outcome),
        ("Tool 't' blocked: nope", Outcome::Denied)
    );

    let (_, text, _) = run_one(vec![Fixed("deny", Verdict::deny("")).shared()]).await;
    assert_eq!(text, "Tool 't' blocked: Permission denied");

    // Ask with nobody to answer: the middleware's reason, or the default.
    let (_, text, _) = run_one(vec![Fixed("ask", Verdict::ask("confirm?")).shared()]).await;
    assert_eq!(text, "Tool 't' blocked: confirm?");
    let (_, text, _) = run_one(vec![Fixed("ask", Verdict::ask("")).shared()]).await;
    assert_eq!(
        text,
        "Tool 't' blocked: Permission required but no handler configured"
    );
}

/// Blocks calls HPD-style and updates state.
struct Blocker;

#[derive(Clone, Default, Serialize, Deserialize)]
struct Seen(u32);

impl MiddlewareState for Seen {
    const KEY: &'static str = "test.seen";
    const SCOPE: StateScope = StateScope::Branch;
}

#[async_trait]
impl Middleware for Blocker {
    async fn before_function(&self, cx: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
        cx.update_state::<Seen, _>(|s| s.0 += 1);
        if cx.call.name == "delete_project" {
            cx.block("Blocked by middleware policy.");
        }
        Ok(Verdict::Continue)
    }
}

/// Reads the state the blocker wrote in the same phase.
struct StateReader(Log);

#[async_trait]
impl Middleware for StateReader {
    async fn before_function(&self, cx: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
        self.0.push(format!("seen {}", cx.state::<Seen>().0));
        Ok(Verdict::Continue)
    }
}

#[tokio::test]
async fn a_block_refuses_one_call_and_state_updates_are_visible_at_once() {
    let log = Log::default();
    let model = ScriptedModel::new([
        Reply::call("read", path("a")).and_call("delete_project", json!({})),
        Reply::text("done"),
    ]);
    let agent = Agent::builder(model)
        .tool(recording_tool("read", &log))
        .tool(recording_tool("delete_project", &log))
        .middleware(Blocker)
        .middleware(StateReader(log.clone()))
        .build()
        .unwrap();
    let session = agent.session("s");
    let turn = agent.run(&session, "go").await.unwrap();
    assert_eq!(
        log.take(),
        ["seen 1", "ran read {\"path\":\"a\"}"],
        "the reader saw the update of the same phase; the blocked call never reached it"
    );
    assert_eq!(turn.results[1].text(), "Blocked by middleware policy.");
    assert_eq!(turn.results[1].outcome, Outcome::Denied);
    assert_eq!(session.state::<Seen>("main").0, 2);
}

/// Skips every tool of the iteration.
struct SkipDestructive;

#[async_trait]
impl Middleware for SkipDestructive {
    async fn before_tool_execution(&self, cx: &mut ToolExecutionContext<'_>) -> HookResult {
        if cx.tool_calls.iter().any(|c| c.name == "delete_project") {
            cx.skip_tool_execution = true;
            cx.override_response = Some(Message::assistant(
                "I cannot run destructive tools in this mode.",
            ));
        }
        Ok(())
    }
}

#[tokio::test]
async fn skipping_tool_execution_runs_nothing_and_keeps_the_override() {
    let log = Log::default();
    let model =
        ScriptedModel::new([Reply::call("read", path("a")).and_call("delete_project", json!({}))]);
    let agent = Agent::builder(model)
        .tool(recording_tool("read", &log))
        .tool(recording_tool("delete_project", &log))
        .middleware(SkipDestructive)
        .build()
        .unwrap();
    let session = agent.session("s");
    let turn = agent.run(&session, "go").await.unwrap();
    assert!(log.take().is_empty());
    assert!(turn.results.is_empty());
    assert_eq!(turn.text(), "I cannot run destructive tools in this mode.");
    let history = session.history("main");
    assert_eq!(history.last().unwrap().content, turn.text());
    assert!(history.last().unwrap().tool_calls.is_empty());
}

/// Sleeps in `before_function`.
struct Slow(Duration);

#[async_trait]
impl Middleware for Slow {
    fn name(&self) -> &str {
        "Ret"
    }
    async fn before_function(&self, _: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
        tokio::time::sleep(self.0).await;
        Ok(Verdict::allow())
    }
    async fn before_iteration(&self, _: &mut IterationContext<'_>) -> HookResult {
        tokio::time::sleep(self.0).await;
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_hook_timeout_fails_closed_naming_the_middleware_and_the_hook() {
    let log = Log::default();
    let model = ScriptedModel::new([Reply::call("t", json!({})), Reply::text("done")]);
    let agent = Agent::builder(model)
        .tool(recording_tool("t", &log))
        .middleware(
            Slow(Duration::from_millis(300))
                .for_tools(["t"])
                .with_timeout(Duration::from_millis(50)),
        )
        .build()
        .unwrap();
    let error = agent.run(&agent.session("s"), "go").await.unwrap_err();
    assert_eq!(
        error,
        RunError::Middleware {
            middleware: "Ret".into(),
            hook: "before_iteration",
            message: "Middleware 'Ret' timed out in before_iteration after 0.05s".into(),
        }
    );

    /// Slow only per call.
    struct SlowCall;
    #[async_trait]
    impl Middleware for SlowCall {
        fn name(&self) -> &str {
            "Ret"
        }
        async fn before_function(&self, _: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok(Verdict::allow())
        }
    }
    let model = ScriptedModel::new([Reply::call("t", json!({})), Reply::text("done")]);
    let agent = Agent::builder(model)
        .tool(recording_tool("t", &log))
        .middleware(SlowCall.with_timeout(Duration::from_millis(50)))
        .build()
        .unwrap();
    let mut events = agent.events().subscribe();
    let turn = agent.run(&agent.session("s"), "go").await.unwrap();
    assert!(log.take().is_empty(), "the call never ran");
    assert_eq!(
        turn.results[0].text(),
        "Middleware 'Ret' timed out in before_function after 0.05s"
    );
    assert_eq!(turn.results[0].outcome, Outcome::Denied);
    let mut failed = Vec::new();
    while let Some(event) = events.try_recv() {
        if let EventKind::MiddlewareFailed { hook, .. } = &event.kind {
            failed.push(*hook);
        }
    }
    assert_eq!(failed, ["before_function"]);
}

/// Fails in `before_function` and `after_function`.
struct Broken;

#[async_trait]
impl Middleware for Broken {
    async fn before_function(&self, cx: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
        if cx.call.name == "a" {
            return Err("cannot decide".into());
        }
        Ok(Verdict::Continue)
    }
    async fn after_function(&self, _: &mut AfterFunctionContext<'_>) -> HookResult {
        Err(HookError::Failed("cannot format".into()))
    }
}

#[tokio::test]
async fn a_failing_hook_refuses_the_call_never_allows_it() {
    let log = Log::default();
    let model = ScriptedModel::new([
        Reply::call("a", json!({})).and_call("b", json!({})),
        Reply::text("done"),
    ]);
    let agent = Agent::builder(model)
        .tool(recording_tool("a", &log))
        .tool(recording_tool("b", &log))
        .middleware(Broken)
        .build()
        .unwrap();
    let turn = agent.run(&agent.session("s"), "go").await.unwrap();
    assert_eq!(log.take(), ["ran b {}"]);
    assert_eq!(
        turn.results[0].text(),
        "Middleware 'Broken' failed in before_function: cannot decide"
    );
    assert_eq!(turn.results[0].outcome, Outcome::Denied);
    assert_eq!(turn.results[1].outcome, Outcome::Failed);
    assert_eq!(
        turn.results[1].text(),
        "Middleware 'Broken' failed in after_function: cannot format"
    );
}

#[tokio::test]
async fn invalid_calls_are_refused_before_any_middleware() {
    let log = Log::default();
    let model = ScriptedModel::new([
        Reply::call("nope", json!({}))
            .and_call("t", json!("{not json"))
            .and_call("t", json!([1]))
            .and_call_id("x", "t", json!({}))
            .and_call_id("x", "t", json!({})),
        Reply::text("done"),
    ]);
    let agent = Agent::builder(model)
        .tool(recording_tool("t", &log))
        .middleware(Recorder::new("A", &log))
        .build()
        .unwrap();
    let turn = agent.run(&agent.session("s"), "go").await.unwrap();
    let results: Vec<(Outcome, String)> =
        turn.results.iter().map(|r| (r.outcome, r.text())).collect();
    assert_eq!(
        results,
        [
            (Outcome::Invalid, "Tool 'nope' is not registered".to_owned()),
            (
                Outcome::Invalid,
                "invalid arguments for tool 't': they are not valid JSON: `{not json`".to_owned()
            ),
            (
                Outcome::Invalid,
                "invalid arguments for tool 't': expected a JSON object, got an array".to_owned()
            ),
            (Outcome::Completed, "ok t".to_owned()),
            (
                Outcome::Invalid,
                "invalid call of 't': its id `x` is empty or repeats an earlier call's".to_owned()
            ),
        ]
    );
    let calls: Vec<String> = log
        .take()
        .into_iter()
        .filter(|e| e.contains("function("))
        .collect();
    assert_eq!(
        calls,
        [
            "A.before_function(x)",
            "A.wrap_function(x)",
            "A.after_function(x)"
        ],
        "only the valid call met the middleware"
    );
}

#[tokio::test]
async fn for_tools_limits_the_per_call_hooks() {
    let log = Log::default();
    let model = ScriptedModel::new([
        Reply::call("x", json!({})).and_call("t", json!({})),
        Reply::text("done"),
    ]);
    let agent = Agent::builder(model)
        .tool(recording_tool("x", &log))
        .tool(recording_tool("t", &log))
        .middleware(Fixed("deny-x", Verdict::deny("no x")).for_tools(["x"]))
        .build()
        .unwrap();
    let turn = agent.run(&agent.session("s"), "go").await.unwrap();
    assert_eq!(turn.results[0].text(), "Tool 'x' blocked: no x");
    assert_eq!(turn.results[1].text(), "ok t");
}

/// Ends the turn at the second iteration.
struct Terminator;

#[async_trait]
impl Middleware for Terminator {
    async fn before_iteration(&self, cx: &mut IterationContext<'_>) -> HookResult {
        if cx.iteration == 1 {
            cx.skip_model_call = true;
            cx.override_response = Some(Message::assistant("stopping here"));
            cx.terminate = Some("enough".into());
        }
        Ok(())
    }
}

#[tokio::test]
async fn before_iteration_can_skip_the_model_and_terminate() {
    let log = Log::default();
    let model = ScriptedModel::new([Reply::call("t", json!({})), Reply::text("never")]);
    let agent = Agent::builder(model)
        .tool(recording_tool("t", &log))
        .middleware(Terminator)
        .build()
        .unwrap();
    let turn = agent.run(&agent.session("s"), "go").await.unwrap();
    assert_eq!(turn.end, TurnEnd::Terminated);
    assert_eq!(turn.reason.as_deref(), Some("enough"));
    assert_eq!(turn.text(), "stopping here");
}

#[tokio::test]
async fn the_agent_stops_at_its_hard_iteration_limit() {
    let model = ScriptedModel::from_fn(|_| Reply::call("t", json!({})));
    let log = Log::default();
    let agent = Agent::builder(model)
        .tool(recording_tool("t", &log))
        .max_iterations(3)
        .build()
        .unwrap();
    let turn = agent.run(&agent.session("s"), "go").await.unwrap();
    assert_eq!(turn.end, TurnEnd::Terminated);
    assert_eq!(turn.iterations, 3);
    assert_eq!(log.take().len(), 3);
}
