use std::path::PathBuf;

use crate::check::CheckId;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid config: {0}")]
    Parse(#[from] toml::de::Error),
    #[error("check `{0}` is defined twice")]
    DuplicateCheck(CheckId),
    #[error("probe failed: {0}")]
    Probe(String),
}
