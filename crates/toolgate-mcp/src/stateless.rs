//! Asking on the stateless protocol (`2026-07-28`), where a server sends the client no
//! requests: a call toolgate asks about is answered with an `InputRequiredResult` carrying the
//! question (`inputRequests.toolgate`, an `elicitation/create`), and the client, once its person
//! answered, retries the call with the answer (`inputResponses.toolgate`) and the
//! `requestState` toolgate gave it.
//!
//! The state is sealed: an HMAC-SHA256, under a key drawn when the gateway starts, over what the
//! question was about — the tool, a hash of its arguments, the answers offered, when the
//! question lapses and a number used once. A client cannot forge an approval, carry one over
//! to other arguments, or use one twice.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use toolgate_policy::Choice;

type HmacSha256 = hmac::Hmac<Sha256>;

/// What a sealed state starts with (and a server's own state does not).
const PREFIX: &str = "toolgate1.";

/// The key of toolgate's question in `inputRequests` and `inputResponses`.
pub(crate) const KEY: &str = "toolgate";

/// The protocol version from which there are no server-to-client requests.
pub(crate) const STATELESS: &str = "2026-07-28";

/// The most states given out and not yet used that are remembered.
const MAX_OUT: usize = 10_000;

/// What a question was about.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct State {
    /// The tool.
    pub(crate) tool: String,
    /// The SHA-256 of the call's arguments (their JSON text, keys sorted).
    pub(crate) args: String,
    /// The answers offered.
    pub(crate) offered: Vec<Choice>,
    /// When the question lapses (seconds since 1970).
    pub(crate) until: u64,
    /// A number used once.
    pub(crate) nonce: u64,
}

/// Seals states and opens them, each once.
pub(crate) struct Sealer {
    key: [u8; 32],
    next: u64,
    /// The nonces given out and not yet used, with when they lapse.
    out: HashMap<u64, u64>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The hash a state names a call's arguments by.
pub(crate) fn arguments_hash(args: &Value) -> String {
    hex::encode(Sha256::digest(
        crate::pins::sorted(args).to_string().as_bytes(),
    ))
}

impl Sealer {
    /// A sealer with a fresh random key. Without the system's randomness, asking on the
    /// stateless protocol is off (every such ask is refused): a guessable key would let a
    /// client forge approvals.
    pub(crate) fn new() -> Option<Sealer> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).ok()?;
        Some(Sealer {
            key,
            next: 0,
            out: HashMap::new(),
        })
    }

    fn mac(&self, text: &str) -> Option<HmacSha256> {
        let mut mac = HmacSha256::new_from_slice(&self.key).ok()?;
        mac.update(text.as_bytes());
        Some(mac)
    }

    /// A sealed state for a question about `tool` with `args`, lapsing after `timeout`; `None`
    /// when too many are out.
    pub(crate) fn seal(
        &mut self,
        tool: &str,
        args: &Value,
        offered: &[Choice],
        timeout: Duration,
    ) -> Option<String> {
        let now = now();
        self.out.retain(|_, until| *until > now);
        if self.out.len() >= MAX_OUT {
            return None;
        }
        let nonce = self.next;
        self.next += 1;
        let state = State {
            tool: tool.to_owned(),
            args: arguments_hash(args),
            offered: offered.to_vec(),
            until: now.saturating_add(timeout.as_secs().max(1)),
            nonce,
        };
        let text = hex::encode(serde_json::to_vec(&state).ok()?);
        let tag = hex::encode(self.mac(&text)?.finalize().into_bytes());
        self.out.insert(nonce, state.until);
        Some(format!("{PREFIX}{text}.{tag}"))
    }

    /// Whether a request state is toolgate's (else it is the server's own, to relay).
    pub(crate) fn is_ours(state: &str) -> bool {
        state.starts_with(PREFIX)
    }

    /// The state a sealed text holds, if this gateway sealed it, it has not lapsed and it was
    /// not used before; using it spends it. Otherwise why not.
    pub(crate) fn open(&mut self, sealed: &str) -> Result<State, &'static str> {
        let invalid = "the answer's state is not one toolgate gave";
        let (text, tag) = sealed
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split_once('.'))
            .ok_or(invalid)?;
        let tag = hex::decode(tag).map_err(|_| invalid)?;
        self.mac(text)
            .ok_or(invalid)?
            .verify_slice(&tag)
            .map_err(|_| invalid)?;
        let state: State = hex::decode(text)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or(invalid)?;
        if state.until <= now() {
            return Err("the question lapsed before the answer came");
        }
        if self.out.remove(&state.nonce).is_none() {
            return Err("the answer was used already");
        }
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_state_opens_once_and_only_as_sealed() {
        let mut sealer = Sealer::new().unwrap();
        let offered = [Choice::AllowOnce, Choice::RejectOnce];
        let args = json!({"b": 1, "a": [1, {"y": 2, "x": 1}]});
        let sealed = sealer
            .seal("write", &args, &offered, Duration::from_secs(60))
            .unwrap();
        assert!(Sealer::is_ours(&sealed));
        // Tampered with: refused, and the real one still opens.
        let (body, tag) = sealed.rsplit_once('.').unwrap();
        let mut forged = tag.to_owned();
        forged.replace_range(0..2, if &tag[..2] == "00" { "01" } else { "00" });
        assert!(sealer.open(&format!("{body}.{forged}")).is_err());
        let other = Sealer::new()
            .unwrap()
            .seal("write", &args, &offered, Duration::from_secs(60))
            .unwrap();
        assert!(
            sealer.open(&other).is_err(),
            "another gateway's state opened"
        );
        let state = sealer.open(&sealed).unwrap();
        assert_eq!(state.tool, "write");
        assert_eq!(state.offered, offered);
        // The same arguments in another key order are the same arguments.
        assert_eq!(
            state.args,
            arguments_hash(&json!({"a": [1, {"x": 1, "y": 2}], "b": 1}))
        );
        assert_eq!(sealer.open(&sealed), Err("the answer was used already"));
        assert!(sealer.open("toolgate1.zz.zz").is_err());
        assert!(sealer.open("").is_err());
    }
}
