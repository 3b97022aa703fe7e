//! What the pipeline costs per tool call: a call through 0, 1 and 10 no-op middleware, and
//! the permission middleware on an allowed call next to the policy evaluation alone. Run with
//! `cargo bench -p toolgate-runtime`.
//!
//! Each sample runs `Agent::call_tool` (the same enforcement point as the model loop) on a
//! current-thread runtime. Read the figures as differences within one run: the cost a
//! middleware adds is `(ten - none) / 10`; the permission middleware's own cost is
//! `permission - none - evaluate`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use divan::{Bencher, black_box};
use serde_json::{Value, json};
use toolgate_policy::{Call, Context, Policy, RunOptions};
use toolgate_runtime::{
    Agent, FnTool, Middleware, PermissionMiddleware, RunConfig, ScriptedModel, ToolCall, ToolInfo,
};

fn main() {
    divan::main();
}

/// A middleware that overrides nothing: every hook is the default no-op.
struct Noop;

impl Middleware for Noop {}

fn echo() -> FnTool {
    FnTool::new(
        ToolInfo::new("lookup", "Looks a word up.").with_tag("read_only"),
        |_, _| async { Ok(Value::Null) },
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

fn bench_agent(bencher: Bencher, agent: Agent) {
    let rt = runtime();
    let session = agent.session("bench");
    let call = ToolCall::new("call_1", "lookup", json!({"word": "toolgate"}));
    bencher.bench_local(|| {
        rt.block_on(agent.call_tool(
            &session,
            "main",
            black_box(call.clone()),
            RunConfig::default(),
        ))
    });
}

fn with_noops(count: usize) -> Agent {
    let mut builder = Agent::builder(ScriptedModel::new([])).tool(echo());
    for _ in 0..count {
        builder = builder.middleware(Noop);
    }
    builder.build().unwrap()
}

#[divan::bench(args = [0, 1, 10], sample_count = 200, sample_size = 200)]
fn call_through_noop_middleware(bencher: Bencher, count: usize) {
    bench_agent(bencher, with_noops(count));
}

fn policy() -> Policy {
    Policy::from_toml(
        "bench.toml",
        r#"
version = 1
mode = "approve-reads"
[[rule]]
name = "reads"
decision = "allow"
tool = "lookup"
"#,
    )
    .unwrap()
}

#[divan::bench(sample_count = 200, sample_size = 200)]
fn call_through_permission_middleware(bencher: Bencher) {
    let agent = Agent::builder(ScriptedModel::new([]))
        .tool(echo())
        .middleware(PermissionMiddleware::new(policy()))
        .build()
        .unwrap();
    bench_agent(bencher, agent);
}

/// The policy evaluation the permission middleware makes, alone.
#[divan::bench(sample_count = 200, sample_size = 200)]
fn evaluate_alone(bencher: Bencher) {
    let policy = policy();
    let call = Call {
        tool: "lookup".into(),
        args: json!({"word": "toolgate"}),
        tags: vec![toolgate_policy::Tag::ReadOnly],
        annotations: Default::default(),
        context: Context {
            session: Some("bench".into()),
            branch: Some("main".into()),
            agent: Some("agent".into()),
            ..Context::default()
        },
    };
    let options = RunOptions::default();
    bencher.bench_local(|| policy.evaluate_with(black_box(&call), &options));
}
