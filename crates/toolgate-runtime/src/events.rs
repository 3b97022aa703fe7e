//! Events: one typed stream of everything a runtime does, with the hierarchy of who did it.
//!
//! Every event names its session, branch, turn and run; an event of a child run (a tool that
//! runs another agent) also names the run and the tool call it belongs to, so a UI can nest it
//! under that call. Requests that wait for an answer (permission, continuation) are events
//! too; their answers go to the [`ApprovalBroker`](crate::ApprovalBroker), matched by id.
//!
//! ```rust,standalone_crate
//! use toolgate_runtime::{EventBus, EventKind};
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let bus = EventBus::new();
//! let mut events = bus.subscribe();
//! bus.publish(Default::default(), EventKind::Custom { name: "hello".into(), data: 1.into() });
//! let event = events.recv().await.unwrap();
//! assert!(matches!(&event.kind, EventKind::Custom { name, .. } if name == "hello"));
//! # });
//! ```

use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::SystemTime;

use futures_core::Stream;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::broker::{ContinuationRequest, PermissionRequest, Resolution};
use crate::message::{Message, ToolCall, ToolResult};
use crate::permission::DecisionRecord;

/// The version of the event format, written in every event as `schema`.
pub const EVENT_SCHEMA: &str = "toolgate.event/1";

/// Where an event comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Scope {
    /// The session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<Arc<str>>,
    /// The branch of the session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<Arc<str>>,
    /// The turn of the branch (1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// The iteration of the turn (1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// The run (one turn's execution) the event belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<Arc<str>>,
    /// For a child run: the run and the tool call that started it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<Parent>,
    /// The tool call the event is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// The run and the tool call a child run was started by.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Parent {
    /// The parent's run.
    pub run: Arc<str>,
    /// The parent's tool call.
    pub tool_call_id: String,
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TurnEnd {
    /// The model answered without calling more tools.
    Completed,
    /// A denial interrupted the turn (the permission middleware's `InterruptTurn`).
    Interrupted,
    /// A middleware terminated the run (e.g. continuation was not approved).
    Terminated,
    /// The turn was cancelled.
    Cancelled,
    /// The model or a middleware failed.
    Failed,
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventKind {
    /// The runtime's input loop started.
    RuntimeStarted,
    /// The runtime's input loop stopped.
    RuntimeStopped,
    /// A user turn began.
    TurnStarted {
        /// The user's message.
        input: String,
    },
    /// A user turn ended.
    TurnFinished {
        /// How.
        end: TurnEnd,
        /// Why, when it did not complete.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// An iteration (one model call and its tools) began.
    IterationStarted,
    /// A piece of the model's text, as it streams.
    TextDelta {
        /// The text.
        text: String,
    },
    /// The model's whole response for an iteration.
    ModelResponse {
        /// The assistant message.
        message: Message,
    },
    /// A tool call is about to pass the middleware.
    ToolCallStarted {
        /// The call.
        call: ToolCall,
    },
    /// A tool call ended (ran, failed or was refused).
    ToolCallFinished {
        /// Its result.
        result: ToolResult,
    },
    /// A permission decision (DESIGN §7).
    Decision(DecisionRecord),
    /// A permission request is waiting for an answer.
    PermissionRequested(Arc<PermissionRequest>),
    /// A continuation request is waiting for an answer.
    ContinuationRequested(Arc<ContinuationRequest>),
    /// A request was answered, timed out or was cancelled.
    RequestResolved {
        /// The request's id.
        request_id: String,
        /// How it ended.
        resolution: Resolution,
    },
    /// A middleware hook failed or timed out.
    MiddlewareFailed {
        /// The middleware's name.
        middleware: String,
        /// The hook.
        hook: &'static str,
        /// What went wrong.
        message: String,
    },
    /// A branch fork was committed to its session.
    BranchCommitted {
        /// The new branch.
        branch: String,
        /// The branch it was forked from.
        from: String,
    },
    /// An event of an application's own.
    Custom {
        /// Its name.
        name: String,
        /// Its data.
        data: Value,
    },
}

/// One event: what happened, where, and when.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Position in the bus's stream, from 1.
    pub seq: u64,
    /// When it was published.
    pub time: SystemTime,
    /// Where it comes from.
    pub scope: Scope,
    /// What happened.
    pub kind: EventKind,
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let kind = serde_json::to_value(&self.kind).map_err(serde::ser::Error::custom)?;
        let scope = serde_json::to_value(&self.scope).map_err(serde::ser::Error::custom)?;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("schema", EVENT_SCHEMA)?;
        map.serialize_entry("seq", &self.seq)?;
        map.serialize_entry(
            "timestamp",
            &humantime::format_rfc3339_micros(self.time).to_string(),
        )?;
        for object in [scope, kind] {
            if let Value::Object(fields) = object {
                for (key, value) in fields {
                    map.serialize_entry(&key, &value)?;
                }
            }
        }
        map.end()
    }
}

type Callback = dyn Fn(&Event) + Send + Sync;

#[derive(Clone)]
enum Subscriber {
    Channel(mpsc::UnboundedSender<Arc<Event>>),
    Callback(u64, Arc<Callback>),
}

#[derive(Default)]
struct Bus {
    seq: AtomicU64,
    live: AtomicUsize,
    next_id: AtomicU64,
    subscribers: Mutex<Vec<Subscriber>>,
}

/// The event stream of a runtime. Cheap to clone; clones share subscribers.
///
/// Every subscriber receives every event published after it subscribed, in order, none lost:
/// a [`subscribe`](EventBus::subscribe) channel is unbounded, so a subscriber that stops
/// reading should be dropped. Publishing with no subscriber costs one atomic load.
#[derive(Clone, Default)]
pub struct EventBus {
    bus: Arc<Bus>,
}

impl fmt::Debug for EventBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventBus")
            .field("published", &self.bus.seq.load(Ordering::Relaxed))
            .field("subscribers", &self.bus.live.load(Ordering::Relaxed))
            .finish()
    }
}

impl EventBus {
    /// A bus with no subscribers.
    pub fn new() -> EventBus {
        EventBus::default()
    }

    /// A stream of every event published from now on.
    pub fn subscribe(&self) -> EventStream {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.add(Subscriber::Channel(sender));
        EventStream { receiver }
    }

    /// Calls `callback` with every event published from now on, on the publishing task (keep
    /// it short; it may answer requests). Returns an id for [`unsubscribe`](Self::unsubscribe).
    pub fn subscribe_fn(&self, callback: impl Fn(&Event) + Send + Sync + 'static) -> u64 {
        let id = self.bus.next_id.fetch_add(1, Ordering::Relaxed);
        self.add(Subscriber::Callback(id, Arc::new(callback)));
        id
    }

    /// Removes a callback subscriber.
    pub fn unsubscribe(&self, id: u64) {
        let mut subscribers = self.lock();
        subscribers.retain(|s| !matches!(s, Subscriber::Callback(i, _) if *i == id));
        self.bus.live.store(subscribers.len(), Ordering::Release);
    }

    /// Whether anything listens (publishers may skip building costly events otherwise).
    pub fn is_observed(&self) -> bool {
        self.bus.live.load(Ordering::Acquire) > 0
    }

    /// Publishes an event to every subscriber. Returns its sequence number.
    pub fn publish(&self, scope: Scope, kind: EventKind) -> u64 {
        let seq = self.bus.seq.fetch_add(1, Ordering::Relaxed) + 1;
        if !self.is_observed() {
            return seq;
        }
        let event = Arc::new(Event {
            seq,
            time: SystemTime::now(),
            scope,
            kind,
        });
        let subscribers = self.lock().clone();
        let mut closed = false;
        for subscriber in &subscribers {
            match subscriber {
                Subscriber::Channel(sender) => closed |= sender.send(Arc::clone(&event)).is_err(),
                Subscriber::Callback(_, callback) => callback(&event),
            }
        }
        if closed {
            let mut subscribers = self.lock();
            subscribers.retain(|s| !matches!(s, Subscriber::Channel(c) if c.is_closed()));
            self.bus.live.store(subscribers.len(), Ordering::Release);
        }
        seq
    }

    fn add(&self, subscriber: Subscriber) {
        let mut subscribers = self.lock();
        subscribers.push(subscriber);
        self.bus.live.store(subscribers.len(), Ordering::Release);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Subscriber>> {
        self.bus
            .subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Events as they are published. Drop it to unsubscribe.
#[derive(Debug)]
pub struct EventStream {
    receiver: mpsc::UnboundedReceiver<Arc<Event>>,
}

impl EventStream {
    /// The next event; `None` once the bus is gone.
    pub async fn recv(&mut self) -> Option<Arc<Event>> {
        self.receiver.recv().await
    }

    /// The next event if one is waiting.
    pub fn try_recv(&mut self) -> Option<Arc<Event>> {
        self.receiver.try_recv().ok()
    }
}

impl Stream for EventStream {
    type Item = Arc<Event>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Arc<Event>>> {
        self.receiver.poll_recv(cx)
    }
}
