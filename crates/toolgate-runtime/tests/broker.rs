//! The approval broker under concurrency, and its conflicts.

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
use toolgate_policy::Choice;
use toolgate_runtime::{
    Answer, ApprovalBroker, CancellationToken, Conflict, ContinuationAnswer, ContinuationRequest,
    EventBus, EventKind, PermissionRequest, Resolution, RespondError, Response,
};

const PENDING: usize = 1000;

fn request(i: usize) -> PermissionRequest {
    PermissionRequest {
        id: format!("req-{i}"),
        call_id: format!("call-{i}"),
        ..PermissionRequest::example("delete")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_pending_requests_answered_concurrently_each_get_their_own_answer_once() {
    let events = EventBus::new();
    let broker = ApprovalBroker::new(events.clone());
    let mut stream = events.subscribe();

    let waiters: Vec<_> = (0..PENDING)
        .map(|i| {
            let broker = broker.clone();
            tokio::spawn(async move {
                let cancel = CancellationToken::new();
                let resolution = broker
                    .request_permission(
                        Default::default(),
                        request(i),
                        None,
                        Duration::from_secs(60),
                        &cancel,
                    )
                    .await;
                (i, resolution)
            })
        })
        .collect();

    // Every request is registered before it is published: wait for the 1000 events.
    let mut published = 0;
    for _ in 0..PENDING * 10 {
        if published == PENDING {
            break;
        }
        let event = tokio::time::timeout(Duration::from_secs(10), stream.recv())
            .await
            .expect("requests are published")
            .unwrap();
        if let EventKind::PermissionRequested(r) = &event.kind {
            assert!(broker.pending().iter().any(|p| p.request.id() == r.id));
            published += 1;
        }
    }
    assert_eq!(published, PENDING);
    assert_eq!(broker.len(), PENDING);

    // Two answerers per request race; exactly one wins each.
    let wins = Arc::new(AtomicUsize::new(0));
    let conflicts = Arc::new(AtomicUsize::new(0));
    let answerers: Vec<_> = (0..PENDING)
        .flat_map(|i| ["alice", "bob"].map(move |who| (i, who)))
        .map(|(i, who)| {
            let broker = broker.clone();
            let (wins, conflicts) = (Arc::clone(&wins), Arc::clone(&conflicts));
            tokio::spawn(async move {
                let choice = if i % 2 == 0 {
                    Choice::AllowOnce
                } else {
                    Choice::RejectOnce
                };
                let answer = Answer::with_reason(choice, format!("req-{i} by {who}"));
                match broker.respond(&format!("req-{i}"), answer.into(), who) {
                    Ok(()) => wins.fetch_add(1, Ordering::SeqCst),
                    Err(Conflict::AlreadyResolved { status, .. }) => {
                        assert_eq!(status, "answered");
                        conflicts.fetch_add(1, Ordering::SeqCst)
                    }
                    Err(other) => panic!("unexpected conflict {other}"),
                };
            })
        })
        .collect();
    for answerer in answerers {
        answerer.await.unwrap();
    }
    for waiter in waiters {
        let (i, resolution) = waiter.await.unwrap();
        let Resolution::Answered {
            response: Response::Permission(answer),
            by,
        } = resolution
        else {
            panic!("request {i} ended as {resolution:?}");
        };
        assert_eq!(
            answer.reason,
            Some(format!("req-{i} by {by}")),
            "its own answer"
        );
        assert_eq!(answer.decision.allows(), i % 2 == 0);
    }
    assert_eq!(wins.load(Ordering::SeqCst), PENDING);
    assert_eq!(conflicts.load(Ordering::SeqCst), PENDING);
    assert!(broker.is_empty(), "the registry ends empty");
    assert_eq!(broker.pending(), []);
}

#[tokio::test]
async fn answers_are_checked_against_the_request() {
    let broker = ApprovalBroker::new(EventBus::new());
    let cancel = CancellationToken::new();
    let waiting = {
        let broker = broker.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let request = PermissionRequest {
                choices: vec![Choice::AllowOnce, Choice::RejectOnce],
                ..request(1)
            };
            broker
                .request_permission(
                    Default::default(),
                    request,
                    None,
                    Duration::from_secs(60),
                    &cancel,
                )
                .await
        })
    };
    while broker.is_empty() {
        tokio::task::yield_now().await;
    }
    let not_offered = broker.respond("req-1", Answer::from(Choice::AllowAlways).into(), "x");
    assert!(matches!(not_offered, Err(Conflict::NotOffered { .. })));
    let wrong_kind = broker.respond(
        "req-1",
        ContinuationAnswer {
            approved: true,
            extension: 0,
        }
        .into(),
        "x",
    );
    assert_eq!(
        wrong_kind,
        Err(Conflict::WrongKind {
            id: "req-1".into(),
            expected: "permission"
        })
    );
    let unreadable = broker
        .respond_json("req-1", &json!({"decision": "sometimes"}), "x")
        .unwrap_err();
    assert!(
        matches!(&unreadable, RespondError::Invalid(m) if m.contains("`sometimes`")),
        "{unreadable}"
    );
    assert_eq!(broker.len(), 1, "still pending after three refused answers");
    broker
        .respond_json(
            "req-1",
            &json!({"approved": true, "choice": "ask"}),
            "hpd-ui",
        )
        .unwrap();
    let resolution = waiting.await.unwrap();
    assert_eq!(
        resolution,
        Resolution::Answered {
            response: Response::Permission(Answer::from(Choice::AllowOnce)),
            by: "hpd-ui".into()
        }
    );
}

#[tokio::test]
async fn continuation_answers_go_to_continuation_requests() {
    let broker = ApprovalBroker::new(EventBus::new());
    let waiting = {
        let broker = broker.clone();
        tokio::spawn(async move {
            let request = ContinuationRequest {
                id: "c-1".into(),
                source: "test".into(),
                current_iteration: 21,
                max_iterations: 20,
            };
            broker
                .request_continuation(
                    Default::default(),
                    request,
                    None,
                    Duration::from_secs(60),
                    &CancellationToken::new(),
                )
                .await
        })
    };
    while broker.is_empty() {
        tokio::task::yield_now().await;
    }
    assert!(matches!(
        broker.respond("c-1", Answer::from(Choice::AllowOnce).into(), "x"),
        Err(Conflict::WrongKind { .. })
    ));
    broker
        .respond_json(
            "c-1",
            &json!({"approved": true, "extensionAmount": 5}),
            "ui",
        )
        .unwrap();
    assert_eq!(
        waiting.await.unwrap(),
        Resolution::Answered {
            response: Response::Continuation(ContinuationAnswer {
                approved: true,
                extension: 5
            }),
            by: "ui".into()
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_claimed_answer_outlives_the_timeout_and_a_failed_claim_denies() {
    for complete in [true, false] {
        let broker = ApprovalBroker::new(EventBus::new());
        let waiting = {
            let broker = broker.clone();
            tokio::spawn(async move {
                broker
                    .request_permission(
                        Default::default(),
                        request(7),
                        None,
                        Duration::from_secs(1),
                        &CancellationToken::new(),
                    )
                    .await
            })
        };
        while broker.is_empty() {
            tokio::task::yield_now().await;
        }
        let claim = broker
            .claim("req-7", Answer::from(Choice::RejectOnce).into())
            .unwrap();
        assert!(broker.is_empty(), "claimed: no longer pending");
        assert!(matches!(
            broker.respond("req-7", Answer::from(Choice::AllowOnce).into(), "late"),
            Err(Conflict::AlreadyResolved { .. })
        ));
        // The store is slow: the request's timeout passes while the answer is being recorded.
        tokio::time::sleep(Duration::from_secs(5)).await;
        if complete {
            claim.complete("alice");
        } else {
            claim.fail("the store failed");
        }
        let resolution = waiting.await.unwrap();
        if complete {
            assert_eq!(
                resolution,
                Resolution::Answered {
                    response: Response::Permission(Answer::from(Choice::RejectOnce)),
                    by: "alice".into()
                }
            );
        } else {
            assert_eq!(
                resolution,
                Resolution::Failed {
                    message: "the store failed".into()
                }
            );
        }
    }
}

/// A request nobody could answer (its daemon could not record it) is ended as failed, whatever
/// choices it offers; one no longer waiting is left as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_request_fails_without_an_answer_once() {
    let broker = ApprovalBroker::new(EventBus::new());
    let resolved = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&resolved);
    broker.events().subscribe_fn(move |event| {
        if matches!(event.kind, EventKind::RequestResolved { .. }) {
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    let waiting = {
        let broker = broker.clone();
        tokio::spawn(async move {
            broker
                .request_permission(
                    Default::default(),
                    PermissionRequest {
                        // No refusal on offer: a claim could not end it.
                        choices: vec![Choice::AllowOnce, Choice::AllowAlways],
                        ..request(9)
                    },
                    None,
                    Duration::from_secs(30),
                    &CancellationToken::new(),
                )
                .await
        })
    };
    while broker.is_empty() {
        tokio::task::yield_now().await;
    }
    assert!(broker.fail("req-9", "not recorded"));
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap(),
        Resolution::Failed {
            message: "not recorded".into()
        }
    );
    assert!(broker.is_empty());
    assert!(!broker.fail("req-9", "again"), "ended once");
    assert!(!broker.fail("req-unknown", "never asked"));
    assert!(matches!(
        broker.respond("req-9", Answer::from(Choice::AllowOnce).into(), "late"),
        Err(Conflict::AlreadyResolved { .. })
    ));
    assert_eq!(resolved.load(Ordering::SeqCst), 1, "one resolution event");
}

#[test]
fn a_held_ticket_expires_or_is_cancelled_unless_answered_and_never_while_an_answer_is_recorded() {
    use toolgate_runtime::Request;
    let broker = ApprovalBroker::new(EventBus::new());
    let open = |i| {
        broker
            .open(
                Default::default(),
                Request::Permission(Arc::new(request(i))),
            )
            .unwrap()
    };
    // Nobody answered: it times out, and an answer afterwards is a conflict.
    let mut ticket = open(1);
    assert_eq!(ticket.expire(), Some(Resolution::TimedOut));
    assert!(broker.is_empty());
    assert!(matches!(
        broker.respond("req-1", Answer::from(Choice::AllowOnce).into(), "late"),
        Err(Conflict::AlreadyResolved { .. })
    ));
    // Answered first: expiring reports the answer.
    let mut ticket = open(2);
    broker
        .respond("req-2", Answer::from(Choice::AllowOnce).into(), "bob")
        .unwrap();
    assert_eq!(
        ticket.expire(),
        Some(Resolution::Answered {
            response: Response::Permission(Answer::from(Choice::AllowOnce)),
            by: "bob".into()
        })
    );
    // Claimed, not yet recorded: nothing ends; the claim delivers.
    let mut ticket = open(3);
    let claim = broker
        .claim("req-3", Answer::from(Choice::RejectOnce).into())
        .unwrap();
    assert_eq!(ticket.expire(), None);
    claim.complete("carol");
    assert!(matches!(
        ticket.expire(),
        Some(Resolution::Answered { by, .. }) if by == "carol"
    ));
    // Cancelled by its holder (the requester stopped waiting): it ends as cancelled, and an
    // answer afterwards is a conflict.
    let mut ticket = open(4);
    assert_eq!(ticket.cancel(), Some(Resolution::Cancelled));
    assert!(broker.is_empty());
    assert!(matches!(
        broker.respond("req-4", Answer::from(Choice::AllowOnce).into(), "late"),
        Err(Conflict::AlreadyResolved { .. })
    ));
    // Claimed: a cancellation changes nothing either.
    let mut ticket = open(5);
    let claim = broker
        .claim("req-5", Answer::from(Choice::AllowOnce).into())
        .unwrap();
    assert_eq!(ticket.cancel(), None);
    claim.complete("dave");
    assert!(matches!(
        ticket.cancel(),
        Some(Resolution::Answered { by, .. }) if by == "dave"
    ));
}
