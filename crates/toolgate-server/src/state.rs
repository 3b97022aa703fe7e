//! What every request handler shares.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::StatusCode;
use tokio::sync::{oneshot, watch};
use toolgate_policy::Policy;
use toolgate_runtime::{ApprovalBroker, EventBus};
use toolgate_store::{Batch, Committed, DecisionRow, Store, StoreError};

use crate::config::{ServerConfig, secret};
use crate::decisions::Facts;
use crate::error::ApiError;

/// The most one-time sign-in codes alive at once (`POST /api/login/codes` makes them).
pub const MAX_LOGIN_CODES: usize = 64;

/// How long a login code (printed by `toolgate serve` or `toolgate page`) stays valid.
pub const LOGIN_CODE_LIFETIME: Duration = Duration::from_secs(600);

/// The most page sessions kept (the oldest are forgotten first).
const MAX_PAGE_SESSIONS: usize = 256;

/// How long a page session lasts (login tells the page, as `expires_in`).
pub(crate) const PAGE_SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// A signed-in page: the key it keeps in its origin's storage and sends with every request (as
/// `X-Toolgate-Key`), and when it signed in (wall time: a machine asleep ages it too). Not a
/// cookie: a browser sends a cookie to every port of the host, and lets any of them replace or
/// delete it; the origin's storage belongs to the page's origin alone (scheme, host and port).
struct PageSession {
    key: String,
    made: std::time::SystemTime,
}

impl PageSession {
    fn live(&self) -> bool {
        self.made
            .elapsed()
            .is_ok_and(|age| age < PAGE_SESSION_LIFETIME)
    }
}

/// A decision's change: its final form, or `None` when it must be read again.
pub(crate) type Change = Option<Released>;

/// A decision's final form as JSON text, handed to a waiting poll. Dropping it tells whoever
/// decided that the poll has its response (see [`Served`]). Only `GET /api/decisions/{id}`
/// takes one, and it drops it in the poll that receives it, once its response is made; a
/// poll that is gone drops it with its channel.
#[derive(Debug)]
pub(crate) struct Released {
    pub(crate) result: Bytes,
    _served: oneshot::Sender<()>,
}

/// The polls an announcement released, until each has its response (or is gone).
#[must_use]
pub(crate) struct Served(Vec<oneshot::Receiver<()>>);

impl Served {
    /// Waits until every released poll has its response: an answer's own response then goes
    /// out after the calls it released, whichever thread runs what. No timer bounds it (its
    /// registration costs more than the wait): what it waits for is a woken task's next poll,
    /// which drops its [`Released`] whatever the client does.
    pub(crate) async fn wait(self) {
        futures_util::future::join_all(self.0).await;
    }
}

/// A long poll's interest in one decision; dropping it forgets the interest.
pub(crate) struct DecisionWatch {
    state: AppState,
    id: String,
    receiver: Option<oneshot::Receiver<Change>>,
}

impl DecisionWatch {
    /// The change, when it comes (`None` if the daemon forgot the poll: read again).
    /// Once it has answered, it answers `None` at once.
    pub(crate) async fn changed(&mut self) -> Change {
        let receiver = self.receiver.as_mut()?;
        let change = receiver.await.ok().flatten();
        self.receiver = None;
        change
    }
}

impl Drop for DecisionWatch {
    fn drop(&mut self) {
        // Closed first, so this poll's sender is recognisably abandoned.
        drop(self.receiver.take());
        let mut decided = lock(&self.state.inner.decided);
        if let Some(watchers) = decided.get_mut(&self.id) {
            watchers.retain(|w| !w.is_closed());
            if watchers.is_empty() {
                decided.remove(&self.id);
            }
        }
    }
}

/// An external request this process opened and has not closed.
#[derive(Clone, Debug)]
pub(crate) struct OpenRequest {
    pub(crate) facts: Facts,
    /// The external requester's decision as it stands (its `call` is the call).
    pub(crate) row: DecisionRow,
    /// What it counts for against the budgets.
    counted: Counted,
}

/// What one waiting request counts for: its bytes, against [`MAX_PENDING_BYTES`] and its
/// session's [`MAX_PENDING_BYTES_PER_SESSION`].
#[derive(Clone, Debug, Default)]
struct Counted {
    /// Its `context.session` (`""` for a call that names none).
    session: String,
    bytes: usize,
}

/// At most this many external requests wait for a person at once (the daemon is measured
/// holding 10,000).
pub const MAX_PENDING: usize = 50_000;

/// At most this many bytes of pending records (the call, its arguments, the request shown)
/// wait for a person at once: the list people read stays readable, and a flood of large asks
/// cannot take the daemon's memory.
pub const MAX_PENDING_BYTES: usize = 64 << 20;

/// At most this many of the requests waiting at once come from one session (the call's
/// `context.session`; the calls that name none count as one): a runaway or prompt-injected
/// agent fills its session's share, and every other session can still ask. A gateway sets the
/// session, not the model it serves.
pub const MAX_PENDING_PER_SESSION: usize = 1_000;

/// At most this many bytes of the pending records come from one session (an eighth of
/// [`MAX_PENDING_BYTES`]).
pub const MAX_PENDING_BYTES_PER_SESSION: usize = 8 << 20;

/// The requests this process opened and that wait for a person, and what they count for:
/// those being committed are counted already (see [`Room`]), so asks at once cannot all pass
/// a budget only one of them fits.
#[derive(Default)]
struct Open {
    requests: HashMap<String, Arc<OpenRequest>>,
    /// Requests counted: open, or with room taken while they are committed.
    count: usize,
    bytes: usize,
    /// The same, by session.
    shares: HashMap<String, Share>,
}

#[derive(Clone, Copy, Default)]
struct Share {
    count: usize,
    bytes: usize,
}

impl Open {
    fn uncount(&mut self, counted: &Counted) {
        self.count = self.count.saturating_sub(1);
        self.bytes = self.bytes.saturating_sub(counted.bytes);
        if let Some(share) = self.shares.get_mut(&counted.session) {
            share.count = share.count.saturating_sub(1);
            share.bytes = share.bytes.saturating_sub(counted.bytes);
            if share.count == 0 {
                self.shares.remove(&counted.session);
            }
        }
    }
}

/// Room taken for one pending request while it is committed: given back when dropped, unless
/// the request is remembered as open (it then counts until it is forgotten).
pub(crate) struct Room {
    state: AppState,
    counted: Option<Counted>,
}

impl Drop for Room {
    fn drop(&mut self) {
        if let Some(counted) = self.counted.take() {
            lock(&self.state.inner.open).uncount(&counted);
        }
    }
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) broker: ApprovalBroker,
    /// The policy in force: replaced whole when it is loaded again (see `reload`).
    policy: toolgate_policy::SharedPolicy,
    /// How the policy was last loaded, and how to load it again.
    pub(crate) policy_status: Mutex<crate::reload::Status>,
    /// The named tokens, by their hash (see `roles`).
    pub(crate) tokens: Mutex<crate::roles::Known>,
    pub(crate) token: String,
    pub(crate) hosts: Vec<String>,
    pub(crate) origins: Vec<String>,
    page_sessions: Mutex<Vec<PageSession>>,
    login_codes: Mutex<HashMap<String, Instant>>,
    pub(crate) last_seq: watch::Sender<i64>,
    /// Long polls waiting for a decision to change, by decision id.
    decided: Mutex<HashMap<String, Vec<oneshot::Sender<Change>>>>,
    open: Mutex<Open>,
    /// External requests' tickets and their timeouts.
    pub(crate) timer: Arc<crate::timer::Timer>,
    /// Hosted requests answered over HTTP with the grants their answer made (see `hosted`).
    pub(crate) answered_with_grants: Arc<Mutex<crate::hosted::AnsweredWithGrants>>,
    /// Cancelled when the daemon stops serving: event streams end and long polls answer.
    pub(crate) closing: toolgate_runtime::CancellationToken,
    pub(crate) config: ServerConfig,
}

/// The daemon's shared state. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppState")
            .field("listen", &self.inner.config.listen)
            .field("hosts", &self.inner.hosts)
            .finish_non_exhaustive()
    }
}

/// Runs `work` now and every `period` while the daemon runs: a task that holds the state
/// weakly, and ends with it or when the daemon stops.
pub(crate) fn every<F, Turn>(state: &AppState, period: Duration, work: F)
where
    F: Fn(AppState) -> Turn + Send + 'static,
    Turn: std::future::Future<Output = ()> + Send,
{
    let weak = Arc::downgrade(&state.inner);
    let closing = state.inner.closing.clone();
    tokio::spawn(async move {
        loop {
            {
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                work(AppState { inner }).await;
            }
            tokio::select! {
                () = tokio::time::sleep(period) => {}
                () = closing.cancelled() => return,
            }
        }
    });
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AppState {
    /// The state for a daemon with these parts.
    pub async fn new(
        config: ServerConfig,
        store: Arc<dyn Store>,
        policy: Arc<Policy>,
        token: String,
    ) -> Result<AppState, StoreError> {
        let port = config.listen.port();
        let mut hosts = vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ];
        // The address it listens on is its name too (`127.0.0.2:PORT`, a LAN address with
        // --allow-remote): the page's printed address uses it.
        let own = config.listen.to_string();
        if !config.listen.ip().is_unspecified() && !hosts.contains(&own) {
            hosts.push(own);
        }
        let mut origins: Vec<String> = hosts.iter().map(|h| format!("http://{h}")).collect();
        for extra in &config.extra_hosts {
            let extra = extra.to_ascii_lowercase();
            // A reverse proxy's name: its page may be served over TLS.
            origins.push(format!("http://{extra}"));
            origins.push(format!("https://{extra}"));
            hosts.push(extra);
        }
        let last = store.last_seq().await?;
        let (last_seq, _) = watch::channel(last);
        let state = AppState {
            inner: Arc::new(Inner {
                store,
                broker: ApprovalBroker::new(EventBus::new()),
                policy: toolgate_policy::SharedPolicy::new(policy),
                policy_status: Mutex::new(crate::reload::Status::new()),
                tokens: Mutex::default(),
                token,
                hosts,
                origins,
                page_sessions: Mutex::new(Vec::new()),
                login_codes: Mutex::new(HashMap::new()),
                last_seq,
                decided: Mutex::new(HashMap::new()),
                open: Mutex::default(),
                timer: Arc::default(),
                answered_with_grants: Arc::default(),
                closing: toolgate_runtime::CancellationToken::new(),
                config,
            }),
        };
        crate::hosted::start_bridge(&state);
        crate::timer::start(&state);
        Ok(state)
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The broker every pending request is registered with.
    pub fn broker(&self) -> &ApprovalBroker {
        &self.inner.broker
    }

    /// The time, as the daemon's clock says it (see [`crate::Clock`]).
    pub(crate) fn now(&self) -> std::time::SystemTime {
        self.inner.config.clock.now()
    }

    /// The policy in force.
    pub fn policy(&self) -> Arc<Policy> {
        self.inner.policy.get()
    }

    /// Loads the policy again (see [`crate::Server::reload`]).
    pub async fn reload_policy(&self) -> Result<crate::Reloaded, String> {
        crate::reload::reload(self).await
    }

    /// Puts `policy` in force.
    pub(crate) fn set_policy(&self, policy: Arc<Policy>) {
        self.inner.policy.set(policy);
    }

    /// The requests this daemon holds open, with what they need to be decided again.
    pub(crate) fn open_requests(&self) -> Vec<(String, Arc<OpenRequest>)> {
        lock(&self.inner.open)
            .requests
            .iter()
            .map(|(id, open)| (id.clone(), open.clone()))
            .collect()
    }

    /// The `Host` values accepted.
    pub fn hosts(&self) -> &[String] {
        &self.inner.hosts
    }

    /// Commits a batch, then wakes the event streams.
    pub(crate) async fn commit(&self, batch: Batch) -> Result<Committed, StoreError> {
        let committed = self.inner.store.commit(batch).await?;
        if let Committed::Written(seqs) = &committed
            && let Some(last) = seqs.iter().max()
        {
            self.advance(*last);
        }
        Ok(committed)
    }

    /// Wakes the event streams when the log reaches past where they are (an event this daemon
    /// or another sharing the store wrote).
    pub(crate) fn advance(&self, last: i64) {
        self.inner.last_seq.send_if_modified(|seq| {
            let newer = last > *seq;
            if newer {
                *seq = last;
            }
            newer
        });
    }

    /// The requests polls here wait on.
    pub(crate) fn watched_decisions(&self) -> Vec<String> {
        lock(&self.inner.decided).keys().cloned().collect()
    }

    /// A new one-time login code for the page.
    pub fn login_code(&self) -> String {
        let code = secret();
        let mut codes = lock(&self.inner.login_codes);
        let now = Instant::now();
        codes.retain(|_, made| now.duration_since(*made) < LOGIN_CODE_LIFETIME);
        // A bounded number live at once: a new one takes the oldest's place.
        while codes.len() >= MAX_LOGIN_CODES {
            let Some(oldest) = codes
                .iter()
                .min_by_key(|(_, made)| **made)
                .map(|(code, _)| code.clone())
            else {
                break;
            };
            codes.remove(&oldest);
        }
        codes.insert(code.clone(), now);
        code
    }

    /// Spends a login code: a new page session's key, or `None` when the code is unknown,
    /// spent or expired.
    pub(crate) fn redeem(&self, code: &str) -> Option<String> {
        let made = lock(&self.inner.login_codes).remove(code)?;
        (made.elapsed() < LOGIN_CODE_LIFETIME).then(|| self.new_page_session())
    }

    /// A new page session: its key.
    pub(crate) fn new_page_session(&self) -> String {
        let key = secret();
        let mut sessions = lock(&self.inner.page_sessions);
        sessions.retain(PageSession::live);
        if sessions.len() >= MAX_PAGE_SESSIONS {
            sessions.remove(0);
        }
        sessions.push(PageSession {
            key: key.clone(),
            made: std::time::SystemTime::now(),
        });
        key
    }

    /// Whether `key` is a live page session's.
    pub(crate) fn page_session_is_valid(&self, key: &str) -> bool {
        let sessions = lock(&self.inner.page_sessions);
        let mut found = false;
        for session in sessions.iter() {
            found |= session.live() && crate::security::same_secret(&session.key, key);
        }
        found
    }

    /// Every secret that lets a client in — the token, the page sessions' keys, the unspent
    /// sign-in codes — in lower case: what no error body may quote.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let mut secrets = vec![self.inner.token.to_ascii_lowercase()];
        secrets.extend(
            lock(&self.inner.page_sessions)
                .iter()
                .map(|s| s.key.to_ascii_lowercase()),
        );
        secrets.extend(
            lock(&self.inner.login_codes)
                .keys()
                .map(|code| code.to_ascii_lowercase()),
        );
        secrets
    }

    /// Forgets the page session with this key.
    pub(crate) fn forget_page_session(&self, key: &str) {
        lock(&self.inner.page_sessions).retain(|s| !crate::security::same_secret(&s.key, key));
    }

    /// Hears of the next change to decision `id`. Take it before reading the decision, so a
    /// change between the read and the wait is not missed.
    pub(crate) fn watch_decision(&self, id: &str) -> DecisionWatch {
        let (sender, receiver) = oneshot::channel();
        lock(&self.inner.decided)
            .entry(id.to_owned())
            .or_default()
            .push(sender);
        DecisionWatch {
            state: self.clone(),
            id: id.to_owned(),
            receiver: Some(receiver),
        }
    }

    /// Tells the polls waiting on decision `id` that it changed, with its final form (JSON
    /// text) when known. Only those polls are woken.
    pub(crate) fn announce_decided(&self, id: &str, result: Option<Bytes>) -> Served {
        let Some(watchers) = lock(&self.inner.decided).remove(id) else {
            return Served(Vec::new());
        };
        let mut served = Vec::new();
        for watcher in watchers {
            let change = result.clone().map(|result| {
                let (sender, receiver) = oneshot::channel();
                served.push(receiver);
                Released {
                    result,
                    _served: sender,
                }
            });
            // A poll that is gone drops the change, and with it its part of `served`.
            let _ = watcher.send(change);
        }
        Served(served)
    }

    /// Takes room for one more pending request of `bytes` from `session`: refused with `429
    /// too_many_pending` when [`MAX_PENDING`] requests or [`MAX_PENDING_BYTES`] bytes already
    /// wait, or the session's share of them ([`MAX_PENDING_PER_SESSION`],
    /// [`MAX_PENDING_BYTES_PER_SESSION`]).
    pub(crate) fn room_for(&self, session: Option<&str>, bytes: usize) -> Result<Room, ApiError> {
        let session = session.unwrap_or_default();
        let mut open = lock(&self.inner.open);
        let refused = |message: String| {
            ApiError::new(StatusCode::TOO_MANY_REQUESTS, "too_many_pending", message)
        };
        if open.count >= MAX_PENDING || open.bytes.saturating_add(bytes) > MAX_PENDING_BYTES {
            return Err(refused(format!(
                "{} requests ({} MiB) are waiting for a person, as many as the daemon holds \
                 ({MAX_PENDING} requests, {} MiB); answer some, or let them time out, and ask \
                 again",
                open.count,
                open.bytes >> 20,
                MAX_PENDING_BYTES >> 20
            )));
        }
        let share = open.shares.get(session).copied().unwrap_or_default();
        if share.count >= MAX_PENDING_PER_SESSION
            || share.bytes.saturating_add(bytes) > MAX_PENDING_BYTES_PER_SESSION
        {
            let whose = if session.is_empty() {
                "calls that name no session".to_owned()
            } else {
                format!("session `{session}`")
            };
            return Err(refused(format!(
                "{} requests ({} KiB) of {whose} are waiting for a person, as many as one \
                 session may have ({MAX_PENDING_PER_SESSION} requests, {} MiB); answer some, \
                 or let them time out, and ask again",
                share.count,
                share.bytes >> 10,
                MAX_PENDING_BYTES_PER_SESSION >> 20
            )));
        }
        open.count += 1;
        open.bytes = open.bytes.saturating_add(bytes);
        let share = open.shares.entry(session.to_owned()).or_default();
        share.count += 1;
        share.bytes = share.bytes.saturating_add(bytes);
        Ok(Room {
            state: self.clone(),
            counted: Some(Counted {
                session: session.to_owned(),
                bytes,
            }),
        })
    }

    /// Keeps what resolving an external request needs, so answering it reads nothing back; it
    /// counts with the room taken for it until it is forgotten.
    pub(crate) fn remember_open(&self, id: &str, facts: Facts, row: DecisionRow, mut room: Room) {
        let counted = room.counted.take().unwrap_or_default();
        let request = OpenRequest {
            facts,
            row,
            counted,
        };
        let mut open = lock(&self.inner.open);
        if let Some(old) = open.requests.insert(id.to_owned(), Arc::new(request)) {
            open.uncount(&old.counted);
        }
    }

    /// What is kept of an open external request (shared, not copied).
    pub(crate) fn open_request(&self, id: &str) -> Option<Arc<OpenRequest>> {
        lock(&self.inner.open).requests.get(id).cloned()
    }

    pub(crate) fn forget_open(&self, id: &str) {
        let mut open = lock(&self.inner.open);
        if let Some(old) = open.requests.remove(id) {
            open.uncount(&old.counted);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[tokio::test]
    async fn the_address_it_listens_on_is_one_of_its_names() {
        let dir = tempfile::tempdir().unwrap();
        let policy = Policy::from_toml("p.toml", "version = 1\n").unwrap();
        let mut config = ServerConfig::new(dir.path());
        config.listen = "127.0.0.2:7999".parse().unwrap();
        let server = crate::Server::open(config, policy).await.unwrap();
        let hosts = server.state().hosts();
        assert_eq!(
            hosts,
            [
                "127.0.0.1:7999",
                "localhost:7999",
                "[::1]:7999",
                "127.0.0.2:7999"
            ]
        );
    }

    async fn state() -> (tempfile::TempDir, AppState) {
        let dir = tempfile::tempdir().unwrap();
        let policy = Policy::from_toml("p.toml", "version = 1\n").unwrap();
        let server = crate::Server::open(ServerConfig::new(dir.path()), policy)
            .await
            .unwrap();
        (dir, server.state().clone())
    }

    /// Room is counted when it is taken, before the request is committed: two asks at once
    /// cannot both pass a budget only one of them fits; room given back (a failed commit) or
    /// a request forgotten makes room again.
    #[tokio::test]
    async fn room_taken_counts_before_the_request_is_committed() {
        let (_dir, state) = state().await;
        let half = MAX_PENDING_BYTES_PER_SESSION / 2;
        let first = state.room_for(Some("s"), half).unwrap();
        let second = state.room_for(Some("s"), half).unwrap();
        let third = state.room_for(Some("s"), 1);
        let error = third.err().unwrap();
        assert_eq!(error.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(state.room_for(Some("t"), half).is_ok(), "another session");
        assert!(
            state.room_for(None, half).is_ok(),
            "calls without a session"
        );

        drop(second);
        let row = DecisionRow {
            id: "r1".into(),
            status: toolgate_store::DecisionStatus::Pending,
            call: serde_json::Value::Null,
            result: toolgate_store::JsonText::of_value(&serde_json::Value::Null),
            created: String::new(),
            updated: String::new(),
        };
        state.remember_open("r1", Facts::default(), row, first);
        let again = state.room_for(Some("s"), half).unwrap();
        assert!(state.room_for(Some("s"), 1).is_err(), "r1 still counts");
        drop(again);
        state.forget_open("r1");
        assert_eq!(lock(&state.inner.open).count, 0);
        assert!(lock(&state.inner.open).shares.is_empty());
        assert!(
            state
                .room_for(Some("s"), MAX_PENDING_BYTES_PER_SESSION)
                .is_ok()
        );
    }

    fn watched(state: &AppState) -> usize {
        lock(&state.inner.decided).values().map(Vec::len).sum()
    }

    #[tokio::test]
    async fn an_announcement_wakes_only_the_polls_of_its_decision() {
        let (_dir, state) = state().await;
        let mut first = state.watch_decision("a");
        let mut second = state.watch_decision("a");
        let mut other = state.watch_decision("b");
        assert_eq!(watched(&state), 3);

        let served =
            state.announce_decided("a", Some(Bytes::from_static(br#"{"decision":"allow"}"#)));
        let first = first.changed().await.unwrap();
        assert_eq!(&first.result[..], br#"{"decision":"allow"}"#);
        let second = second.changed().await.unwrap();
        assert_eq!(&second.result[..], br#"{"decision":"allow"}"#);
        let quiet = tokio::time::timeout(Duration::from_millis(20), other.changed()).await;
        assert!(quiet.is_err(), "a poll of another decision stays asleep");
        assert_eq!(watched(&state), 1);

        // Whoever decided hears when both polls have their responses, not before.
        let mut served = std::pin::pin!(served.wait());
        assert!(futures_util::FutureExt::now_or_never(served.as_mut()).is_none());
        drop(first);
        assert!(futures_util::FutureExt::now_or_never(served.as_mut()).is_none());
        drop(second);
        tokio::time::timeout(Duration::from_secs(5), served)
            .await
            .expect("served once both responses are made");

        // Changed without a final form: the poll is told to read again.
        let served = state.announce_decided("b", None);
        assert!(other.changed().await.is_none());
        tokio::time::timeout(Duration::from_secs(5), served.wait())
            .await
            .expect("nothing to wait for");
    }

    #[tokio::test]
    async fn a_released_poll_that_is_gone_does_not_hold_the_answer() {
        let (_dir, state) = state().await;
        let gone = state.watch_decision("a");
        let going = state.watch_decision("a");
        drop(gone);
        let served = state.announce_decided("a", Some(Bytes::from_static(b"{}")));
        let mut served = std::pin::pin!(served.wait());
        assert!(futures_util::FutureExt::now_or_never(served.as_mut()).is_none());
        // Gone after the change reached it, unread: its channel drops the change.
        drop(going);
        tokio::time::timeout(Duration::from_secs(5), served)
            .await
            .expect("served once the last poll is gone");
    }

    #[tokio::test]
    async fn a_poll_that_gives_up_is_forgotten() {
        let (_dir, state) = state().await;
        let kept = state.watch_decision("a");
        let gone = state.watch_decision("a");
        drop(gone);
        assert_eq!(watched(&state), 1);
        drop(kept);
        assert!(lock(&state.inner.decided).is_empty());
        // Nobody is told, and nothing fails.
        tokio::time::timeout(
            Duration::from_secs(5),
            state.announce_decided("a", None).wait(),
        )
        .await
        .expect("nothing to wait for");
    }
}
