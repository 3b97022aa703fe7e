use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The name a check is known by in the config, the logs and the API.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CheckId(String);

impl CheckId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for CheckId {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

impl fmt::Display for CheckId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum CheckKind {
    Http {
        url: String,
        #[serde(default = "default_status")]
        expect_status: u16,
    },
    Tcp {
        host: String,
        port: u16,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    pub id: CheckId,
    #[serde(flatten)]
    pub kind: CheckKind,
    #[serde(with = "humantime_serde")]
    pub interval: Duration,
    #[serde(with = "humantime_serde", default = "default_timeout")]
    pub timeout: Duration,
}

impl Check {
    pub fn new(id: &str, kind: CheckKind, interval: Duration) -> Self {
        Self { id: id.into(), kind, interval, timeout: default_timeout() }
    }
}

fn default_status() -> u16 {
    200
}

fn default_timeout() -> Duration {
    Duration::from_secs(5)
}
