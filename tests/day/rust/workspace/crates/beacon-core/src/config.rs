use std::collections::HashSet;
use std::path::Path;

use serde::Deserialize;

use crate::check::Check;
use crate::error::{Error, Result};

/// The whole `beacon.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default = "default_listen")]
    pub listen: String,
    #[serde(default, rename = "check")]
    pub checks: Vec<Check>,
}

fn default_listen() -> String {
    "127.0.0.1:3000".to_string()
}

impl Config {
    pub fn from_path(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| Error::Io { path: path.to_owned(), source })?;
        Self::from_toml(&text)
    }

    pub fn from_toml(text: &str) -> Result<Self> {
        let config: Config = toml::from_str(text)?;
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<()> {
        let mut seen = HashSet::new();
        for check in &self.checks {
            if !seen.insert(&check.id) {
                return Err(Error::DuplicateCheck(check.id.clone()));
            }
        }
        Ok(())
    }
}
