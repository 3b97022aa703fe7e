//! The store's contract, one case per function, run on every engine: each test file gives an
//! [`Engine`] (a way to open the same store again) and runs the cases against it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::json;
use toolgate_runtime::{Effect, Grant, GrantScope, GrantTarget};
use toolgate_store::{
    Batch, Committed, DecisionQuery, DecisionRow, DecisionStatus, EventFilter, EventRecord,
    JsonText, PendingRecord, Pruned, Store, StoreError,
};

/// A store to open, and open again (the same database).
#[async_trait::async_trait]
pub trait Engine: Send + Sync {
    /// Opens the store, or says why not.
    async fn try_open(&self) -> Result<Arc<dyn Store>, StoreError>;

    /// Opens the store.
    async fn open(&self) -> Arc<dyn Store> {
        self.try_open().await.unwrap()
    }
}

pub fn event(kind: &str, session: &str) -> EventRecord {
    EventRecord::new(kind, json!({"session": session, "note": kind}))
}

pub fn grant(uses: Option<u32>) -> Grant {
    let mut grant = Grant::new(
        Effect::Allow,
        "bash",
        GrantTarget::Command {
            prefix: vec!["git".into(), "push".into()],
            exact: false,
        },
        GrantScope::Session {
            session: "s".into(),
        },
        "alice",
    );
    grant.uses_left = uses;
    grant
}

fn request(id: &str, session: &str, created: &str) -> PendingRecord {
    PendingRecord {
        id: id.into(),
        kind: "decision".into(),
        session: Some(session.into()),
        created: created.into(),
        request: json!({"tool": "pay"}),
    }
}

pub async fn events_come_back_in_order_filtered_and_survive_reopening(engine: &dyn Engine) {
    let store = engine.open().await;
    let seqs = store
        .append(&[event("a", "s1"), event("b", "s2"), event("c", "s1")])
        .await
        .unwrap();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(store.append(&[event("d", "s2")]).await.unwrap(), [4]);
    store.close().await;
    drop(store);

    let store = engine.open().await;
    assert_eq!(store.last_seq().await.unwrap(), 4);
    let all = store
        .events_after(0, &EventFilter::default(), 100)
        .await
        .unwrap();
    let kinds: Vec<&str> = all.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["a", "b", "c", "d"]);
    assert_eq!(
        all[0].body.to_value().unwrap()["schema"],
        toolgate_runtime::EVENT_SCHEMA
    );
    // Served with its number first, and the body as it was written.
    let served: serde_json::Value = serde_json::from_str(&all[2].served()).unwrap();
    let mut expected = all[2].body.to_value().unwrap();
    expected["seq"] = json!(3);
    assert_eq!(served, expected);
    assert!(all[2].served().starts_with(r#"{"seq":3,""#));
    let s1 = EventFilter {
        session: Some("s1".into()),
        ..EventFilter::default()
    };
    let after_first = store.events_after(1, &s1, 100).await.unwrap();
    assert_eq!(after_first.len(), 1);
    assert_eq!(after_first[0].kind, "c");
    let kinds = EventFilter {
        kinds: vec!["b".into(), "d".into()],
        ..EventFilter::default()
    };
    assert_eq!(store.events_after(0, &kinds, 1).await.unwrap()[0].kind, "b");
}

pub async fn a_request_is_closed_once(engine: &dyn Engine) {
    let store = engine.open().await;
    let request = PendingRecord {
        id: "r1".into(),
        kind: "permission".into(),
        session: Some("s".into()),
        created: "2026-11-22T00:00:00.000000Z".into(),
        request: json!({"tool": "delete"}),
    };
    let opened = store
        .open_request(
            &request,
            &EventRecord::new("permission_requested", json!({"id": "r1"})),
        )
        .await
        .unwrap();
    assert_eq!(
        store.pending().await.unwrap(),
        std::slice::from_ref(&request)
    );
    assert!(
        store
            .open_request(&request, &event("again", "s"))
            .await
            .is_err(),
        "an id is pending once"
    );
    let resolved = EventRecord::new("request_resolved", json!({"request_id": "r1"}));
    let closed = store.close_request("r1", &resolved).await.unwrap();
    assert_eq!(closed, Some(opened + 1), "the failed open wrote no event");
    assert_eq!(store.close_request("r1", &resolved).await.unwrap(), None);
    assert!(store.pending().await.unwrap().is_empty());
    let by_request = EventFilter {
        request_id: Some("r1".into()),
        ..EventFilter::default()
    };
    assert_eq!(
        store.events_after(0, &by_request, 10).await.unwrap().len(),
        2
    );
}

pub async fn decisions_and_sessions_are_upserted(engine: &dyn Engine) {
    let store = engine.open().await;
    let mut row = DecisionRow {
        id: "d1".into(),
        status: DecisionStatus::Pending,
        call: json!({"tool": "t"}),
        result: JsonText::of(&json!({"decision": "ask"})).unwrap(),
        created: "2026-11-22T00:00:00.000000Z".into(),
        updated: "2026-11-22T00:00:00.000000Z".into(),
    };
    store.put_decision(&row).await.unwrap();
    row.status = DecisionStatus::Decided;
    row.result = JsonText::of(&json!({"decision": "allow"})).unwrap();
    row.updated = "2026-11-22T00:00:05.000000Z".into();
    // An update keeps the call and creation time the decision was created with.
    let update = DecisionRow {
        call: serde_json::Value::Null,
        created: "ignored".into(),
        ..row.clone()
    };
    store.put_decision(&update).await.unwrap();
    assert_eq!(store.decision("d1").await.unwrap(), Some(row));
    assert_eq!(store.decision("nope").await.unwrap(), None);

    store
        .put_session("s1", &json!({"id": "s1", "v": 1}))
        .await
        .unwrap();
    store
        .put_session("s1", &json!({"id": "s1", "v": 2}))
        .await
        .unwrap();
    store.put_session("s2", &json!({"id": "s2"})).await.unwrap();
    assert_eq!(store.session("s1").await.unwrap().unwrap().snapshot["v"], 2);
    assert_eq!(store.sessions().await.unwrap().len(), 2);
}

pub async fn the_decisions_are_read_in_order_a_page_at_a_time(engine: &dyn Engine) {
    let store = engine.open().await;
    // Five calls, two of them made in the same microsecond (told apart by id), in two sessions
    // and none.
    let made = [
        ("b", "2026-11-22T00:00:01.000000Z", Some("s1")),
        ("a", "2026-11-22T00:00:01.000000Z", Some("s2")),
        ("c", "2026-11-22T00:00:02.000000Z", Some("s1")),
        ("d", "2026-11-22T00:00:03.000000Z", None),
        ("e", "2026-11-22T00:00:04.000000Z", Some("s1")),
    ];
    for (id, created, session) in made {
        let call = match session {
            Some(session) => json!({"tool": "t", "context": {"session": session}}),
            None => json!({"tool": "t"}),
        };
        store
            .put_decision(&DecisionRow {
                id: id.into(),
                status: DecisionStatus::Decided,
                call,
                result: JsonText::of(&json!({"decision": "allow"})).unwrap(),
                created: created.into(),
                updated: created.into(),
            })
            .await
            .unwrap();
    }
    let ids = |rows: &[DecisionRow]| rows.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
    let mut query = DecisionQuery::default();
    // Page by page, each from the last one's cursor: every row once, in order.
    let mut seen = Vec::new();
    loop {
        let page = store.decisions_page(&query, 2).await.unwrap();
        let Some(last) = page.last() else { break };
        query.after = DecisionQuery::parse_cursor(&last.cursor());
        seen.extend(ids(&page));
    }
    assert_eq!(seen, ["a", "b", "c", "d", "e"]);
    // Since a time (inclusive), of a session, both.
    let since = DecisionQuery {
        since: Some("2026-11-22T00:00:02.000000Z".into()),
        ..DecisionQuery::default()
    };
    assert_eq!(
        ids(&store.decisions_page(&since, 10).await.unwrap()),
        ["c", "d", "e"]
    );
    let session = DecisionQuery {
        session: Some("s1".into()),
        ..DecisionQuery::default()
    };
    assert_eq!(
        ids(&store.decisions_page(&session, 10).await.unwrap()),
        ["b", "c", "e"]
    );
    let both = DecisionQuery {
        after: DecisionQuery::parse_cursor("2026-11-22T00:00:02.000000Z c"),
        ..since
    };
    assert_eq!(
        ids(&store.decisions_page(&both, 10).await.unwrap()),
        ["d", "e"]
    );
    // An `after` earlier than `since` reads from `since`.
    let earlier = DecisionQuery {
        since: Some("2026-11-22T00:00:03.000000Z".into()),
        after: DecisionQuery::parse_cursor("2026-11-22T00:00:01.000000Z a"),
        session: None,
    };
    assert_eq!(
        ids(&store.decisions_page(&earlier, 10).await.unwrap()),
        ["d", "e"]
    );
    assert_eq!(DecisionQuery::parse_cursor("nospace"), None);
}

pub async fn grants_are_stored_spent_exactly_and_revoked(engine: &dyn Engine) {
    let store = engine.open().await;
    let counted = grant(Some(10));
    let unlimited = grant(None);
    store.insert(counted.clone()).await.unwrap();
    store.insert(unlimited.clone()).await.unwrap();
    assert_eq!(store.for_tool("bash").await.unwrap().len(), 2);
    assert!(store.for_tool("other").await.unwrap().is_empty());

    let spenders: Vec<_> = (0..40)
        .map(|_| {
            let store = Arc::clone(&store);
            let id = counted.id.clone();
            tokio::spawn(async move { store.use_once(&id).await.unwrap() })
        })
        .collect();
    let mut spent = 0;
    for spender in spenders {
        spent += usize::from(spender.await.unwrap());
    }
    assert_eq!(spent, 10, "ten uses, spent exactly once each");
    assert!(store.use_once(&unlimited.id).await.unwrap());
    let listed = store.list().await.unwrap();
    let back = listed.iter().find(|g| g.id == counted.id).unwrap();
    assert_eq!(back.uses_left, Some(0));
    assert_eq!(back.target, counted.target);
    assert_eq!(back.created_by, "alice");
    assert!(store.revoke(&counted.id).await.unwrap());
    assert!(!store.revoke(&counted.id).await.unwrap());
    assert_eq!(store.list().await.unwrap().len(), 1);
}

/// A lasting grant like one stored (the same effect, tool, target and scope, neither counted nor
/// expiring) is not stored again: the batch that brings it writes nothing and names the stored
/// one, also when several bring one at once — one is stored, the others name it. Grants that
/// differ, or count their uses, are stored.
pub async fn a_grant_like_a_lasting_one_stored_is_not_stored_again(engine: &dyn Engine) {
    let store = engine.open().await;
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let like = grant(None);
                let id = like.id.clone();
                let committed = store
                    .commit(Batch {
                        grants: vec![like],
                        events: vec![event(&format!("granted-{i}"), "s")],
                        ..Batch::default()
                    })
                    .await
                    .unwrap();
                (id, committed)
            })
        })
        .collect();
    let mut written = Vec::new();
    let mut named = Vec::new();
    for racer in racers {
        match racer.await.unwrap() {
            (id, Committed::Written(_)) => written.push(id),
            (_, Committed::SameGrant(other)) => named.push(other),
            (_, other) => panic!("{other:?}"),
        }
    }
    assert_eq!(written.len(), 1, "one stored: {written:?}");
    assert_eq!(named.len(), 7);
    assert!(named.iter().all(|id| *id == written[0]), "{named:?}");
    let stored = store.list().await.unwrap();
    assert_eq!(stored.len(), 1);
    let events = store
        .events_after(0, &EventFilter::default(), 100)
        .await
        .unwrap();
    assert_eq!(events.len(), 1, "the refused batches wrote no event");

    // Counted, or with another scope: stored.
    store.insert(grant(Some(3))).await.unwrap();
    let mut elsewhere = grant(None);
    elsewhere.scope = GrantScope::Session {
        session: "other".into(),
    };
    store.insert(elsewhere).await.unwrap();
    assert_eq!(store.list().await.unwrap().len(), 3);
    // A NUL in what it covers (a model may write one) is stored, and found like itself.
    let mut odd = grant(None);
    odd.target = GrantTarget::Command {
        prefix: vec!["git\0x".into()],
        exact: false,
    };
    let again = Grant {
        id: "odd-again".into(),
        ..odd.clone()
    };
    store.insert(odd).await.unwrap();
    let committed = store
        .commit(Batch {
            grants: vec![again],
            ..Batch::default()
        })
        .await
        .unwrap();
    assert!(
        matches!(committed, Committed::SameGrant(_)),
        "{committed:?}"
    );
    assert_eq!(store.list().await.unwrap().len(), 4);
    // Through the runtime's grant store: the like one is already there, which is no failure
    // (whoever made it, and why).
    let mut like = grant(None);
    like.created_by = "bob".into();
    like.reason = Some("again".into());
    like.request_id = Some("r9".into());
    store.insert(like).await.unwrap();
    assert_eq!(store.list().await.unwrap().len(), 4);
}

/// A lookup reads the grants filed under its keys, oldest first, and no others: those of its
/// tool, in its scopes (the session's, the workspace's, the user's), of the whole tool or of its
/// targets — whatever else is stored (other sessions, workspaces, targets, tools); also keys
/// with a NUL or a path written two ways.
pub async fn a_lookup_reads_the_grants_filed_under_its_keys(engine: &dyn Engine) {
    use toolgate_runtime::Lookup;
    let store = engine.open().await;
    let made = |effect, tool: &str, target: GrantTarget, scope: GrantScope| {
        Grant::new(effect, tool, target, scope, "alice")
    };
    let command = |words: &[&str]| GrantTarget::Command {
        prefix: words.iter().map(|w| (*w).to_owned()).collect(),
        exact: false,
    };
    let session = |s: &str| GrantScope::Session { session: s.into() };
    let workspace = |root: &str| GrantScope::Workspace { root: root.into() };
    let all = vec![
        made(
            Effect::Allow,
            "bash",
            command(&["git", "push"]),
            session("s1"),
        ),
        made(
            Effect::Allow,
            "bash",
            command(&["git", "push"]),
            session("s2"),
        ),
        made(
            Effect::Allow,
            "bash",
            command(&["cargo", "test"]),
            session("s1"),
        ),
        made(Effect::Deny, "bash", command(&["rm", "-rf"]), session("s1")),
        made(Effect::Allow, "bash", GrantTarget::Tool, workspace("/ws/")),
        made(
            Effect::Allow,
            "bash",
            command(&["npm\0", "i"]),
            GrantScope::User,
        ),
        made(Effect::Allow, "bash", command(&["ls"]), workspace("/other")),
        made(
            Effect::Allow,
            "read",
            GrantTarget::Path {
                path: "/ws/a".into(),
            },
            GrantScope::User,
        ),
        made(
            Effect::Allow,
            "read",
            GrantTarget::Path {
                path: "/ws/b".into(),
            },
            GrantScope::User,
        ),
        made(
            Effect::Allow,
            "fetch",
            GrantTarget::Domain {
                host: "docs.rs".into(),
            },
            session("s1"),
        ),
        made(
            Effect::Allow,
            "git",
            command(&["git", "push"]),
            session("s1"),
        ),
    ];
    for grant in &all {
        store.insert(grant.clone()).await.unwrap();
    }
    let lookup = |tool: &str, scopes: &[&str], targets: &[&str]| Lookup {
        tool: tool.into(),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        targets: targets.iter().map(|t| (*t).to_owned()).collect(),
    };
    for asked in [
        lookup("bash", &["s:s1", "w:/ws", "u"], &["", "git"]),
        lookup("bash", &["s:s2", "u"], &["", "git", "npm\0", "cargo"]),
        lookup("bash", &["s:s3", "w:/other"], &["", "ls"]),
        lookup("read", &["s:s1", "u"], &["", "/ws/a"]),
        lookup("fetch", &["s:s1"], &["docs.rs"]),
        lookup("fetch", &["s:s2"], &["", "docs.rs"]),
        lookup("none", &["u"], &[""]),
    ] {
        let read: Vec<Grant> = store.applying(&asked).await.unwrap();
        // Oldest first.
        assert!(
            read.windows(2)
                .all(|w| (w[0].created_at, &w[0].id) <= (w[1].created_at, &w[1].id))
        );
        let mut read: Vec<String> = read.into_iter().map(|g| g.id).collect();
        read.sort();
        let mut expected: Vec<String> = all
            .iter()
            .filter(|g| asked.admits(g))
            .map(|g| g.id.clone())
            .collect();
        expected.sort();
        assert_eq!(read, expected, "{asked:?}");
    }
    // Not everything: the first lookup reads the session's two and the workspace's one.
    let first = lookup("bash", &["s:s1", "w:/ws", "u"], &["", "git"]);
    assert_eq!(store.applying(&first).await.unwrap().len(), 3);
    // After a reopening, the same.
    drop(store);
    let store = engine.open().await;
    assert_eq!(store.applying(&first).await.unwrap().len(), 3);
}

/// Named tokens are stored once per name and per hash, listed by name, removed by name, and
/// outlive a reopening.
pub async fn named_tokens_are_kept_by_name(engine: &dyn Engine) {
    let store = engine.open().await;
    let token = |name: &str, hash: &str| toolgate_store::TokenRow {
        name: name.into(),
        role: "agent".into(),
        hash: hash.into(),
        created: "2026-11-29T10:00:00Z".into(),
    };
    assert!(store.add_token(token("claude", "aa")).await.unwrap());
    assert!(store.add_token(token("approver-1", "bb")).await.unwrap());
    assert!(
        !store.add_token(token("claude", "cc")).await.unwrap(),
        "a name once"
    );
    assert!(
        !store.add_token(token("other", "aa")).await.unwrap(),
        "a hash once"
    );
    drop(store);
    let store = engine.open().await;
    let names: Vec<String> = store
        .tokens()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["approver-1", "claude"]);
    assert!(store.remove_token("claude").await.unwrap());
    assert!(!store.remove_token("claude").await.unwrap());
    assert_eq!(store.tokens().await.unwrap(), [token("approver-1", "bb")]);
}

/// A session saved "only if still as read" is not saved over a newer one: a creation when one
/// exists, or a change from an older read, writes nothing; changes that read again when told
/// so all count, however many run at once.
pub async fn a_session_is_saved_only_over_what_was_read(engine: &dyn Engine) {
    let store = engine.open().await;
    assert!(
        store
            .put_session_if("s", &json!({"items": []}), None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .put_session_if("s", &json!({"items": ["x"]}), None)
            .await
            .unwrap()
    );
    let read = store.session("s").await.unwrap().unwrap();
    assert!(
        !store
            .put_session_if(
                "s",
                &json!({"items": ["stale"]}),
                Some("2000-01-01T00:00:00Z")
            )
            .await
            .unwrap()
    );
    assert_eq!(
        store.session("s").await.unwrap().unwrap().snapshot,
        read.snapshot
    );

    let changers: Vec<_> = (0..8)
        .map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                for _ in 0..100 {
                    let row = store.session("s").await.unwrap().unwrap();
                    let mut snapshot = row.snapshot;
                    snapshot["items"].as_array_mut().unwrap().push(json!(i));
                    if store
                        .put_session_if("s", &snapshot, Some(&row.updated))
                        .await
                        .unwrap()
                    {
                        return;
                    }
                }
                panic!("changer {i} never saved");
            })
        })
        .collect();
    for changer in changers {
        changer.await.unwrap();
    }
    let saved = store.session("s").await.unwrap().unwrap().snapshot;
    let mut items: Vec<i64> = saved["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    items.sort_unstable();
    assert_eq!(items, (0..8).collect::<Vec<_>>(), "no change lost: {saved}");
}

pub async fn concurrent_appends_get_distinct_gapless_sequence_numbers(engine: &dyn Engine) {
    let store = engine.open().await;
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let mut seqs = Vec::new();
                for i in 0..25 {
                    seqs.extend(
                        store
                            .append(&[event(&format!("w{w}-{i}"), "s")])
                            .await
                            .unwrap(),
                    );
                }
                seqs
            })
        })
        .collect();
    let mut all = Vec::new();
    for writer in writers {
        all.extend(writer.await.unwrap());
    }
    all.sort_unstable();
    assert_eq!(all, (1..=200).collect::<Vec<i64>>());
}

pub async fn a_batch_stands_or_falls_together(engine: &dyn Engine) {
    let store = engine.open().await;
    let row = DecisionRow {
        id: "d1".into(),
        status: DecisionStatus::Decided,
        call: json!({"tool": "t"}),
        result: JsonText::of(&json!({"decision": "allow"})).unwrap(),
        created: "2026-11-22T00:00:00.000000Z".into(),
        updated: "2026-11-22T00:00:00.000000Z".into(),
    };
    // Closing a request that is not pending: nothing of the batch is written.
    let refused = store
        .commit(toolgate_store::Batch {
            close: Some("nope".into()),
            events: vec![event("answered", "s")],
            decision: Some(row.clone()),
            grants: vec![grant(None)],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(refused, toolgate_store::Committed::NotPending);
    assert_eq!(store.last_seq().await.unwrap(), 0);
    assert_eq!(store.decision("d1").await.unwrap(), None);
    assert!(store.list().await.unwrap().is_empty());

    let written = store
        .commit(toolgate_store::Batch {
            events: vec![event("decided", "s"), event("granted", "s")],
            decision: Some(row.clone()),
            grants: vec![grant(None)],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(written, toolgate_store::Committed::Written(vec![1, 2]));
    assert_eq!(store.decision("d1").await.unwrap(), Some(row));
    assert_eq!(store.list().await.unwrap().len(), 1);
}

/// A page of the pending list is read without the rest, with how many are pending in all.
pub async fn the_pending_list_is_read_a_page_at_a_time(engine: &dyn Engine) {
    let store = engine.open().await;
    for (id, session) in [("r1", "s"), ("r2", "t"), ("r3", "s")] {
        let request = PendingRecord {
            id: id.into(),
            kind: "decision".into(),
            session: Some(session.into()),
            created: format!("2026-11-26T00:00:0{}.000000Z", &id[1..]),
            request: json!({}),
        };
        store
            .open_request(&request, &event("permission_requested", id))
            .await
            .unwrap();
    }
    let ids = |page: &[PendingRecord]| page.iter().map(|p| p.id.clone()).collect::<Vec<_>>();
    let (page, total) = store.pending_page(None, 2).await.unwrap();
    assert_eq!((ids(&page), total), (vec!["r1".into(), "r2".into()], 3));
    let (page, total) = store.pending_page(Some("s"), 1).await.unwrap();
    assert_eq!((ids(&page), total), (vec!["r1".to_owned()], 2));
    let (page, total) = store.pending_page(Some("none"), 5).await.unwrap();
    assert_eq!((page.len(), total), (0, 0));
}

/// Answers raced on one request: exactly one closes it, and only its event is written.
pub async fn racing_closes_resolve_a_request_once(engine: &dyn Engine) {
    let store = engine.open().await;
    for round in 0..5 {
        let id = format!("r{round}");
        store
            .open_request(
                &request(&id, "s", "2026-11-29T00:00:00.000000Z"),
                &event("permission_requested", "s"),
            )
            .await
            .unwrap();
        let before = store.last_seq().await.unwrap();
        let closers: Vec<_> = (0..16)
            .map(|i| {
                let store = Arc::clone(&store);
                let id = id.clone();
                tokio::spawn(async move {
                    store
                        .close_request(&id, &event(&format!("answer-{i}"), "s"))
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut won = Vec::new();
        for closer in closers {
            won.extend(closer.await.unwrap());
        }
        assert_eq!(won, [before + 1], "round {round}: one answer wins");
        assert_eq!(store.last_seq().await.unwrap(), before + 1);
        assert!(store.pending_request(&id).await.unwrap().is_none());
    }
}

/// A prune removes the events and the decided decisions older than its time, in batches,
/// and leaves the rest: newer ones, pending decisions of any age, grants.
pub async fn a_prune_removes_what_was_recorded_before_its_time(engine: &dyn Engine) {
    let store = engine.open().await;
    let old = "2020-01-01T00:00:00.000000Z";
    let new = "2026-11-22T00:00:00.000000Z";
    let mut events: Vec<EventRecord> = (0..12)
        .map(|n| {
            let mut event = event("old", &format!("r{n}"));
            event.time = old.into();
            event
        })
        .collect();
    events.push(event("new", "r"));
    store
        .commit(Batch {
            events,
            grants: vec![grant(None)],
            ..Batch::default()
        })
        .await
        .unwrap();
    for (id, status, at) in [
        ("decided-old", DecisionStatus::Decided, old),
        ("pending-old", DecisionStatus::Pending, old),
        ("decided-new", DecisionStatus::Decided, new),
    ] {
        store
            .commit(Batch {
                decision: Some(DecisionRow {
                    id: id.into(),
                    status,
                    call: json!({"tool": "t"}),
                    result: JsonText::of(&json!({"decision": "allow"})).unwrap(),
                    created: at.into(),
                    updated: at.into(),
                }),
                ..Batch::default()
            })
            .await
            .unwrap();
    }
    let before = "2026-01-01T00:00:00.000000Z";
    assert_eq!(
        store.prunable(before).await.unwrap(),
        Pruned {
            events: 12,
            decisions: 1
        }
    );
    // A batch at a time: at most `limit` of each.
    let mut batches = Vec::new();
    for _ in 0..3 {
        batches.push(store.prune(before, 5).await.unwrap());
    }
    assert_eq!(
        batches,
        [
            Pruned {
                events: 5,
                decisions: 1
            },
            Pruned {
                events: 5,
                decisions: 0
            },
            Pruned {
                events: 2,
                decisions: 0
            },
        ]
    );
    assert_eq!(store.prunable(before).await.unwrap(), Pruned::default());

    let left = store
        .events_after(0, &EventFilter::default(), 100)
        .await
        .unwrap();
    assert_eq!(
        left.iter().map(|e| e.kind.as_str()).collect::<Vec<_>>(),
        ["new"]
    );
    assert!(store.decision("decided-old").await.unwrap().is_none());
    assert!(store.decision("pending-old").await.unwrap().is_some());
    assert!(store.decision("decided-new").await.unwrap().is_some());
    assert_eq!(
        store.for_tool("bash").await.unwrap().len(),
        1,
        "grants stay"
    );
    // The log goes on after what was removed.
    let seq = store.append(&[event("after", "r")]).await.unwrap();
    assert_eq!(seq, [14]);
}

/// An event number is never given twice: not after the whole log is pruned, nor after the
/// store is opened again.
pub async fn numbers_are_never_given_twice(engine: &dyn Engine) {
    let store = engine.open().await;
    let old: Vec<EventRecord> = (0..3)
        .map(|i| {
            let mut event = event(&format!("old-{i}"), "s");
            event.time = "2020-01-01T00:00:00.000000Z".into();
            event
        })
        .collect();
    assert_eq!(store.append(&old).await.unwrap(), [1, 2, 3]);
    let pruned = store
        .prune("2026-01-01T00:00:00.000000Z", 100)
        .await
        .unwrap();
    assert_eq!(pruned.events, 3);
    assert_eq!(store.last_seq().await.unwrap(), 3);
    store.close().await;
    drop(store);
    let store = engine.open().await;
    assert_eq!(store.last_seq().await.unwrap(), 3);
    assert_eq!(store.append(&[event("next", "s")]).await.unwrap(), [4]);
}

/// The newest events first, filtered, and a page no larger than asked.
pub async fn the_latest_events_come_newest_first(engine: &dyn Engine) {
    let store = engine.open().await;
    store
        .append(&[event("a", "s1"), event("b", "s2"), event("c", "s1")])
        .await
        .unwrap();
    let s1 = EventFilter {
        session: Some("s1".into()),
        ..EventFilter::default()
    };
    let latest = store.latest(&s1, 10).await.unwrap();
    assert_eq!(
        latest.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [3, 1],
        "newest first"
    );
    assert_eq!(
        store.latest(&EventFilter::default(), 1).await.unwrap()[0].seq,
        3
    );
}

type Case = for<'a> fn(&'a dyn Engine) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        /// Every case, by name.
        pub const CASES: &[(&str, Case)] = &[$((stringify!($name), |engine| Box::pin($name(engine)))),*];
    };
}

/// Calls macro `$then` with the name of every case: the one list of them.
macro_rules! each_case {
    ($then:ident) => {
        $then!(
            events_come_back_in_order_filtered_and_survive_reopening,
            a_request_is_closed_once,
            decisions_and_sessions_are_upserted,
            the_decisions_are_read_in_order_a_page_at_a_time,
            grants_are_stored_spent_exactly_and_revoked,
            a_grant_like_a_lasting_one_stored_is_not_stored_again,
            a_lookup_reads_the_grants_filed_under_its_keys,
            named_tokens_are_kept_by_name,
            a_session_is_saved_only_over_what_was_read,
            concurrent_appends_get_distinct_gapless_sequence_numbers,
            a_batch_stands_or_falls_together,
            the_pending_list_is_read_a_page_at_a_time,
            racing_closes_resolve_a_request_once,
            a_prune_removes_what_was_recorded_before_its_time,
            the_latest_events_come_newest_first,
            numbers_are_never_given_twice,
        );
    };
}
// (Used by the SQLite tests, not the PostgreSQL ones.)
#[allow(unused_imports)]
pub(crate) use each_case;

each_case!(cases);
