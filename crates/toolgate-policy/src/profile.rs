//! Tool profiles: what kind of access a tool makes (and, with resource guards, where its
//! resources sit in its arguments).
//!
//! A policy's own `[[tool]]` profiles come first, in file load order; the built-in profiles for
//! well-known tools come last. The first profile whose `match` covers the tool's name applies.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::decision::Access;
use crate::matcher::{NamePattern, NameSet};

/// Where a profile comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProfileInfo {
    /// The `match` patterns as written.
    pub matches: Vec<String>,
    /// The policy file, or `None` for a built-in profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<Arc<str>>,
    /// The line of the `[[tool]]` header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Which well-known tool family a built-in profile describes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<&'static str>,
}

impl ProfileInfo {
    /// Whether toolgate ships this profile.
    pub fn is_builtin(&self) -> bool {
        self.file.is_none()
    }
}

impl fmt::Display for ProfileInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let patterns: Vec<String> = self.matches.iter().map(|m| format!("`{m}`")).collect();
        match (&self.file, self.line, self.family) {
            (Some(file), Some(line), _) => {
                write!(f, "profile {} ({file}:{line})", patterns.join(", "))
            }
            (Some(file), None, _) => write!(f, "profile {} ({file})", patterns.join(", ")),
            (None, _, Some(family)) => {
                write!(f, "built-in profile {} ({family})", patterns.join(", "))
            }
            (None, _, None) => write!(f, "built-in profile {}", patterns.join(", ")),
        }
    }
}

/// A compiled tool profile.
#[derive(Clone, Debug)]
pub(crate) struct Profile {
    pub(crate) info: Arc<ProfileInfo>,
    pub(crate) matcher: NameSet,
    pub(crate) access: Option<Access>,
}

impl Profile {
    pub(crate) fn is_match(&self, tool: &str) -> bool {
        self.matcher.is_match(tool)
    }
}

/// Well-known tools: (family, tool names, access).
const BUILTIN: &[(&str, &[&str], Access)] = &[
    (
        "MCP filesystem server",
        &[
            "read_file",
            "read_text_file",
            "read_media_file",
            "read_multiple_files",
            "list_directory",
            "list_directory_with_sizes",
            "directory_tree",
            "search_files",
            "get_file_info",
            "list_allowed_directories",
        ],
        Access::Read,
    ),
    (
        "MCP filesystem server",
        &["write_file", "edit_file", "create_directory", "move_file"],
        Access::Write,
    ),
    (
        "MCP git server",
        &[
            "git_status",
            "git_diff_unstaged",
            "git_diff_staged",
            "git_diff",
            "git_log",
            "git_show",
            "git_branch",
        ],
        Access::Read,
    ),
    (
        "MCP git server",
        &[
            "git_commit",
            "git_add",
            "git_reset",
            "git_create_branch",
            "git_checkout",
            "git_init",
        ],
        Access::Write,
    ),
    ("MCP fetch server", &["fetch"], Access::Network),
    ("ACP client", &["fs/read_text_file"], Access::Read),
    ("ACP client", &["fs/write_text_file"], Access::Write),
    ("ACP client", &["terminal/create"], Access::Execute),
    (
        "shell",
        &["bash", "shell", "run_command", "run_shell_command", "exec"],
        Access::Execute,
    ),
];

/// The built-in profiles, one per tool name.
pub(crate) fn builtin_profiles() -> Vec<Profile> {
    let mut out = Vec::new();
    for (family, names, access) in BUILTIN {
        for name in *names {
            out.push(Profile {
                info: Arc::new(ProfileInfo {
                    matches: vec![(*name).to_owned()],
                    file: None,
                    line: None,
                    family: Some(family),
                }),
                matcher: NameSet {
                    patterns: vec![NamePattern::Exact((*name).into())],
                },
                access: Some(*access),
            });
        }
    }
    out
}
