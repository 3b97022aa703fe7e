//! The agent loop: sub-agents and event hierarchy, sessions, branches, the runtime loop.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use serde::{Deserialize, Serialize};
use serde_json::json;
use toolgate_policy::Choice;
use toolgate_runtime::{
    Agent, Answer, EventKind, MiddlewareState, PermissionMiddleware, PermissionRequest, Reply,
    Role, RunConfig, ScriptedModel, Session, StateScope, TurnEnd,
};

use common::{Log, path, recording_tool};

#[tokio::test]
async fn a_child_runs_events_are_nested_under_the_call_that_started_it() {
    let log = Log::default();
    let child = Agent::builder(ScriptedModel::new([
        Reply::call("read", path("notes.md")),
        Reply::text("The notes are short."),
    ]))
    .name("researcher")
    .tool(recording_tool("read", &log))
    .build()
    .unwrap();
    let events = child.events().clone();
    let parent = Agent::builder(ScriptedModel::new([
        Reply::call("research", json!({"task": "read the notes"})),
        Reply::text("The researcher says the notes are short."),
    ]))
    .events(events.clone())
    .tool(child.as_tool("research", "Asks the researcher."))
    .middleware(PermissionMiddleware::function_level())
    .blocking_approver(|_: &PermissionRequest| Ok(Answer::from(Choice::AllowOnce)))
    .build()
    .unwrap();
    let mut stream = events.subscribe();
    let turn = parent
        .run(&parent.session("s"), "what do the notes say?")
        .await
        .unwrap();
    assert_eq!(turn.results[0].content, "The notes are short.");
    assert_eq!(log.take(), ["ran read {\"path\":\"notes.md\"}"]);

    let mut parent_run = None;
    let mut seen = Vec::new();
    while let Some(event) = stream.try_recv() {
        if matches!(event.kind, EventKind::TurnStarted { .. }) && event.scope.parent.is_none() {
            parent_run = event.scope.run.clone();
        }
        let label = match &event.kind {
            EventKind::PermissionRequested(_) => "permission",
            EventKind::TurnStarted { .. } => "turn",
            EventKind::ToolCallStarted { call } => {
                if call.name == "read" {
                    "child call"
                } else {
                    "parent call"
                }
            }
            _ => continue,
        };
        seen.push((label, event.scope.parent.clone()));
    }
    let parent_run = parent_run.unwrap();
    let nested = Some(toolgate_runtime::Parent {
        run: parent_run,
        tool_call_id: "call_1".into(),
    });
    assert_eq!(
        seen,
        [
            ("turn", None),
            ("parent call", None),
            ("permission", None),
            ("turn", nested.clone()),
            ("child call", nested),
        ],
        "the parent's prompt comes before the child's events, which name their parent"
    );
}

#[tokio::test]
async fn a_revoked_grant_asks_again() {
    let log = Log::default();
    let model = ScriptedModel::from_fn(|request| match request.messages.last().map(|m| m.role) {
        Some(Role::User) => Reply::call("delete", path("x")),
        _ => Reply::text("done"),
    });
    let asked = Log::default();
    let record = asked.clone();
    let agent = Agent::builder(model)
        .tool(recording_tool("delete", &log))
        .middleware(PermissionMiddleware::function_level())
        .require_permission_for("delete")
        .blocking_approver(move |r: &PermissionRequest| {
            record.push(r.id.clone());
            Ok(Answer::from(Choice::AllowAlways))
        })
        .build()
        .unwrap();
    let session = agent.session("s");
    agent.run(&session, "go").await.unwrap();
    agent.run(&session, "go").await.unwrap();
    assert_eq!(asked.entries().len(), 1);
    let grants = agent.grants().list().await.unwrap();
    assert_eq!(grants.len(), 1);
    assert!(agent.grants().revoke(&grants[0].id).await.unwrap());
    assert!(!agent.grants().revoke(&grants[0].id).await.unwrap());
    agent.run(&session, "go").await.unwrap();
    assert_eq!(asked.entries().len(), 2);
    assert_eq!(log.take().len(), 3);
}

#[derive(Clone, Default, Serialize, Deserialize, PartialEq, Debug)]
struct Notes(Vec<String>);

impl MiddlewareState for Notes {
    const KEY: &'static str = "test.notes";
    const SCOPE: StateScope = StateScope::Session;
    const PERSISTENT: bool = true;
}

#[derive(Clone, Default, Serialize, Deserialize, PartialEq, Debug)]
struct Scratch(u32);

impl MiddlewareState for Scratch {
    const KEY: &'static str = "test.scratch";
}

#[tokio::test]
async fn a_saved_session_carries_history_and_persistent_state_into_another_agent() {
    let agent = Agent::builder(ScriptedModel::new([Reply::text("first answer")]))
        .build()
        .unwrap();
    let session = agent.session("s");
    agent.run(&session, "first question").await.unwrap();
    session.update_state::<Notes, _>("main", |n| n.0.push("kept".into()));
    session.update_state::<Scratch, _>("main", |s| s.0 = 9);
    let saved = serde_json::to_string(&session.snapshot()).unwrap();

    let restored = Session::restore(&serde_json::from_str(&saved).unwrap()).unwrap();
    assert_eq!(restored.state::<Notes>("main"), Notes(vec!["kept".into()]));
    assert_eq!(
        restored.state::<Scratch>("main"),
        Scratch(0),
        "transient state is not saved"
    );
    let model = ScriptedModel::new([Reply::text("second answer")]);
    let next = Agent::builder(model).build().unwrap();
    next.insert_session(restored.clone());
    let turn = next
        .run(&next.session("s"), "second question")
        .await
        .unwrap();
    assert_eq!(turn.text(), "second answer");
    let contents: Vec<String> = restored
        .history("main")
        .iter()
        .map(|m| m.content.clone())
        .collect();
    assert_eq!(
        contents,
        [
            "first question",
            "first answer",
            "second question",
            "second answer"
        ]
    );
    assert_eq!(restored.turns("main"), 2);
    assert!(Session::restore(&json!({"branches": {}})).is_err());
}

#[tokio::test]
async fn a_fork_keeps_a_prefix_of_the_history_and_its_own_branch_state() {
    let agent = Agent::builder(ScriptedModel::from_fn(|r| {
        Reply::text(format!("answer {}", r.messages.len()))
    }))
    .build()
    .unwrap();
    let session = agent.session("s");
    agent.run(&session, "one").await.unwrap();
    agent.run(&session, "two").await.unwrap();
    session.update_state::<Scratch, _>("main", |s| s.0 = 1);
    let fork = agent.fork(&session, "main", "alt", Some(2)).unwrap();
    assert_eq!(fork.history().len(), 2);
    agent.commit_fork(fork).await.unwrap();
    session.update_state::<Scratch, _>("alt", |s| s.0 = 2);
    assert_eq!(session.state::<Scratch>("main").0, 1);
    assert_eq!(session.state::<Scratch>("alt").0, 2);
    assert_eq!(session.forked_from("alt").as_deref(), Some("main"));
    agent
        .run_on(&session, "alt", "three", RunConfig::default())
        .await
        .unwrap();
    assert_eq!(session.history("alt").len(), 4);
    assert_eq!(session.history("main").len(), 4);
    assert!(
        agent.fork(&session, "main", "alt", None).is_err(),
        "the name is taken"
    );
    assert!(agent.fork(&session, "nope", "x", None).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_runs_turns_of_one_branch_in_order() {
    let agent = Agent::builder(ScriptedModel::from_fn(|r| {
        let last = r
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Reply::text(format!("re: {last}"))
    }))
    .build()
    .unwrap();
    let runtime = agent.start().await.unwrap();
    let session = agent.session("s");
    let turns: Vec<_> = (0..20)
        .map(|i| runtime.submit(&session, "main", &format!("m{i}"), RunConfig::default()))
        .collect();
    for (i, turn) in turns.into_iter().enumerate() {
        let turn = turn.await.unwrap();
        assert_eq!(turn.end, TurnEnd::Completed);
        assert_eq!(turn.text(), format!("re: m{i}"));
    }
    runtime.stop().await.unwrap();
    let history = session.history("main");
    assert_eq!(history.len(), 40);
    for (i, pair) in history.chunks(2).enumerate() {
        assert_eq!(pair[0].content, format!("m{i}"));
    }
}
