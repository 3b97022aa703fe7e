//! Tool profiles: what kind of access a tool makes, and where its resources sit in its arguments.
//!
//! A policy's own `[[tool]]` profiles come first, in file load order; the built-in profiles for
//! well-known tools come last. The first profile whose `match` covers the tool's name applies.

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

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

/// A JSON pointer into a call's arguments where `*` walks every element of an array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pointer {
    pub(crate) text: String,
    segments: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Key(String),
    Each,
}

impl Pointer {
    /// Parses `/a/*/b` (RFC 6901 escapes `~0` and `~1`; a segment of exactly `*` walks an array).
    pub(crate) fn new(text: &str) -> Result<Pointer, String> {
        if !text.starts_with('/') {
            return Err(format!("`{text}` is not a JSON pointer: write `/{text}`"));
        }
        let segments = text
            .split('/')
            .skip(1)
            .map(|s| {
                if s == "*" {
                    Segment::Each
                } else {
                    Segment::Key(if s.contains('~') {
                        s.replace("~1", "/").replace("~0", "~")
                    } else {
                        s.to_owned()
                    })
                }
            })
            .collect();
        Ok(Pointer {
            text: text.to_owned(),
            segments,
        })
    }

    /// Whether the arguments have another shape than the pointer walks: a text, number or
    /// boolean where it steps into a list or an object (`{"paths": "a"}` for `/paths/*`). Such
    /// a value reaches nothing, so it must not pass for an absent one.
    pub(crate) fn misshapen(&self, root: &Value) -> bool {
        self.walk(root).1
    }

    /// Every value the pointer reaches.
    pub(crate) fn values<'v>(&self, root: &'v Value) -> Vec<&'v Value> {
        self.walk(root).0
    }

    /// The values the pointer reaches, and whether it met a value it cannot step into.
    fn walk<'v>(&self, root: &'v Value) -> (Vec<&'v Value>, bool) {
        let mut current = vec![root];
        let mut misshapen = false;
        for segment in &self.segments {
            let mut next = Vec::new();
            for value in current {
                match (segment, value) {
                    (Segment::Each, Value::Array(items)) => next.extend(items.iter()),
                    (Segment::Each, Value::Object(map)) => next.extend(map.values()),
                    (Segment::Key(k), Value::Object(map)) => next.extend(map.get(k)),
                    (Segment::Key(k), Value::Array(items)) => {
                        next.extend(k.parse::<usize>().ok().and_then(|i| items.get(i)));
                    }
                    (_, Value::Null) => {}
                    _ => misshapen = true,
                }
            }
            current = next;
        }
        (current, misshapen)
    }
}

/// A compiled tool profile.
#[derive(Clone, Debug)]
pub(crate) struct Profile {
    pub(crate) info: Arc<ProfileInfo>,
    pub(crate) matcher: NameSet,
    pub(crate) access: Option<Access>,
    /// Arguments that are paths.
    pub(crate) paths: Vec<Pointer>,
    /// Arguments that are glob patterns under the first path (`search_files`).
    pub(crate) patterns: Vec<Pointer>,
    /// Arguments that are globs under the first path whose matching files the tool reads
    /// (`Grep`'s `glob`): each file found is a subject.
    pub(crate) searched: Vec<Pointer>,
    /// Arguments holding a patch in Codex's format (`apply_patch`'s `/input`): each file it
    /// adds, updates, deletes or moves is a path it writes.
    pub(crate) patches: Vec<Pointer>,
    /// The argument holding a command: a command line (string) or an argv (array).
    pub(crate) command: Option<Pointer>,
    /// The argument holding the rest of the argv, when the command is only the program.
    pub(crate) command_args: Option<Pointer>,
    /// The argument holding environment variables the command runs with: a list of
    /// `{"name", "value"}` (ACP's `terminal/create`) or an object of names to values.
    pub(crate) command_env: Option<Pointer>,
    /// Arguments naming the folder the call works in; relative paths resolve against it.
    pub(crate) cwd: Vec<Pointer>,
    /// Arguments that are URLs.
    pub(crate) urls: Vec<Pointer>,
    /// Arguments of free text whose `http(s)://` URLs the tool fetches (Gemini CLI's
    /// `web_fetch` fetches the URLs its `prompt` names): each URL in the text is one.
    pub(crate) url_texts: Vec<Pointer>,
    /// Arguments that are git revisions: `REV:PATH` reads `PATH` as it was in `REV`.
    pub(crate) revisions: Vec<Pointer>,
    /// Any string argument starting with `-` is option injection.
    pub(crate) options_guard: bool,
    /// Whether a call may name none of its resources (`Grep` without `path` searches the
    /// folder it runs in). Otherwise a call whose arguments reach none of them, but carry
    /// something, names its resources where toolgate does not look, and asks.
    pub(crate) optional: bool,
}

impl Profile {
    pub(crate) fn is_match(&self, tool: &str) -> bool {
        self.matcher.is_match(tool)
    }

    /// The pointers to resources a call names (not its folder, nor a command's rest).
    pub(crate) fn resource_pointers(&self) -> impl Iterator<Item = &Pointer> {
        self.paths
            .iter()
            .chain(&self.patterns)
            .chain(&self.searched)
            .chain(&self.patches)
            .chain(&self.urls)
            .chain(&self.url_texts)
            .chain(&self.revisions)
            .chain(&self.command)
    }

    /// Whether the profile says where any resource is.
    pub(crate) fn has_resources(&self) -> bool {
        self.names_paths()
            || self.command.is_some()
            || !self.urls.is_empty()
            || !self.url_texts.is_empty()
    }

    /// Whether the profile says where paths are (the files it reads or writes, or the folder it
    /// works in).
    pub(crate) fn names_paths(&self) -> bool {
        !(self.paths.is_empty()
            && self.patterns.is_empty()
            && self.searched.is_empty()
            && self.patches.is_empty()
            && self.cwd.is_empty())
    }
}

struct Builtin {
    family: &'static str,
    names: &'static [&'static str],
    access: Access,
    paths: &'static [&'static str],
    patterns: &'static [&'static str],
    searched: &'static [&'static str],
    patches: &'static [&'static str],
    command: Option<&'static str>,
    command_args: Option<&'static str>,
    command_env: Option<&'static str>,
    cwd: &'static [&'static str],
    urls: &'static [&'static str],
    url_texts: &'static [&'static str],
    revisions: &'static [&'static str],
    options_guard: bool,
    optional: bool,
}

const NONE: Builtin = Builtin {
    family: "",
    names: &[],
    access: Access::Read,
    paths: &[],
    patterns: &[],
    searched: &[],
    patches: &[],
    command: None,
    command_args: None,
    command_env: None,
    cwd: &[],
    urls: &[],
    url_texts: &[],
    revisions: &[],
    options_guard: false,
    optional: false,
};

const FS: &str = "MCP filesystem server";
const GEMINI: &str = "Gemini CLI";
const CLAUDE: &str = "Claude Code";
const ACP_KINDS: &str = "ACP tool kinds";
/// Where the filesystem server, Gemini CLI (`absolute_path`, `file_path`, `dir_path`) and others
/// put the file a tool of the same name reads or writes.
/// The same names are used by other agents with other keys (Copilot's `filePath`, Cursor's
/// `target_file`, Cline's `absolutePath`, Windsurf's `TargetFile`): a profile reads every one.
const FILE_PATHS: &[&str] = &[
    "/path",
    "/absolute_path",
    "/file_path",
    "/dir_path",
    "/filePath",
    "/absolutePath",
    "/target_file",
    "/target_directory",
    "/relative_workspace_path",
    "/TargetFile",
    "/AbsolutePath",
    "/DirectoryPath",
    "/dirPath",
];
const CODEX: &str = "Codex";
/// Where a shell tool puts the folder it runs in: `cwd` (ACP, Roo Code), `workdir` (Codex),
/// `dir_path` (Gemini CLI 0.14 on), `directory` (Gemini CLI before), `working_directory`
/// (Codex's `local_shell`), `Cwd` (Windsurf).
const SHELL_CWD: &[&str] = &[
    "/cwd",
    "/directory",
    "/dir",
    "/workdir",
    "/dir_path",
    "/working_directory",
    "/Cwd",
];
pub(crate) const GIT: &str = "MCP git server";
const GIT_PATHS: &[&str] = &["/repo_path", "/files/*"];

/// Well-known tools.
const BUILTIN: &[Builtin] = &[
    Builtin {
        family: FS,
        names: &[
            "read_file",
            "read_text_file",
            "read_media_file",
            "list_directory",
            "list_directory_with_sizes",
            "directory_tree",
            "get_file_info",
        ],
        paths: FILE_PATHS,
        ..NONE
    },
    Builtin {
        family: FS,
        names: &["read_multiple_files"],
        paths: &["/paths/*"],
        ..NONE
    },
    Builtin {
        family: FS,
        names: &["search_files"],
        paths: &["/path"],
        patterns: &["/pattern"],
        // Cline's and Roo Code's tool of the same name searches the contents of the files its
        // `file_pattern` glob matches.
        searched: &["/file_pattern"],
        optional: true,
        ..NONE
    },
    Builtin {
        family: FS,
        names: &["list_allowed_directories"],
        ..NONE
    },
    Builtin {
        family: FS,
        names: &["write_file", "edit_file", "create_directory"],
        access: Access::Write,
        paths: FILE_PATHS,
        ..NONE
    },
    Builtin {
        family: GEMINI,
        names: &["replace"],
        access: Access::Write,
        paths: FILE_PATHS,
        ..NONE
    },
    Builtin {
        family: GEMINI,
        names: &["read_many_files"],
        // Paths or globs (Gemini expands them), as `include`'s are: the files are read.
        searched: &["/paths/*", "/include/*"],
        ..NONE
    },
    Builtin {
        family: GEMINI,
        names: &["glob"],
        paths: FILE_PATHS,
        patterns: &["/pattern"],
        optional: true,
        ..NONE
    },
    Builtin {
        family: GEMINI,
        names: &["search_file_content"],
        paths: FILE_PATHS,
        // The files searched: a glob under the folder.
        searched: &["/include"],
        optional: true,
        ..NONE
    },
    Builtin {
        family: CLAUDE,
        names: &["Read", "LS"],
        paths: FILE_PATHS,
        ..NONE
    },
    Builtin {
        family: CLAUDE,
        names: &["NotebookRead"],
        paths: &["/notebook_path"],
        ..NONE
    },
    Builtin {
        family: CLAUDE,
        names: &["Write", "Edit", "MultiEdit"],
        access: Access::Write,
        paths: FILE_PATHS,
        ..NONE
    },
    Builtin {
        family: CLAUDE,
        names: &["NotebookEdit"],
        access: Access::Write,
        paths: &["/notebook_path"],
        ..NONE
    },
    Builtin {
        family: CLAUDE,
        names: &["Glob"],
        paths: FILE_PATHS,
        patterns: &["/pattern"],
        optional: true,
        ..NONE
    },
    Builtin {
        family: CLAUDE,
        names: &["Grep"],
        paths: FILE_PATHS,
        // The files searched: a glob under the folder.
        searched: &["/glob"],
        optional: true,
        ..NONE
    },
    Builtin {
        family: CLAUDE,
        // The agent's own bookkeeping: a to-do list, a background shell's output. They touch
        // no file or host.
        names: &["TodoWrite", "TodoRead", "BashOutput"],
        ..NONE
    },
    Builtin {
        family: "agents",
        // Acts of the agent that are not reads though they touch nothing themselves: leaving
        // plan mode (after it, the agent writes and runs), starting a sub-agent (whose own calls
        // are judged one by one). Claude Code `ExitPlanMode`, `Task` (and its newer name
        // `Agent`); Codex `spawn_agent`; Gemini CLI `exit_plan_mode`.
        names: &[
            "ExitPlanMode",
            "Task",
            "Agent",
            "spawn_agent",
            "exit_plan_mode",
        ],
        access: Access::Execute,
        ..NONE
    },
    Builtin {
        family: CLAUDE,
        names: &["WebFetch"],
        access: Access::Network,
        urls: &["/url"],
        ..NONE
    },
    Builtin {
        family: FS,
        names: &["move_file"],
        access: Access::Write,
        paths: &["/source", "/destination"],
        ..NONE
    },
    Builtin {
        family: GIT,
        names: &[
            "git_status",
            "git_diff_unstaged",
            "git_diff_staged",
            "git_diff",
            "git_log",
            "git_show",
            "git_branch",
        ],
        paths: GIT_PATHS,
        cwd: &["/repo_path"],
        revisions: &["/revision"],
        options_guard: true,
        ..NONE
    },
    Builtin {
        family: GIT,
        names: &[
            "git_commit",
            "git_add",
            "git_reset",
            "git_create_branch",
            "git_checkout",
            "git_init",
        ],
        access: Access::Write,
        paths: GIT_PATHS,
        cwd: &["/repo_path"],
        options_guard: true,
        ..NONE
    },
    Builtin {
        family: "MCP fetch server",
        names: &["fetch"],
        access: Access::Network,
        urls: &["/url"],
        ..NONE
    },
    Builtin {
        family: "ACP client",
        names: &["fs/read_text_file"],
        paths: &["/path"],
        ..NONE
    },
    // An MCP client reading a server's `file://` resource (MCP `resources/read`): the gateway
    // judges it as a read of the file the URI names (`toolgate-mcp`).
    Builtin {
        family: "MCP resources",
        names: &["resources/read"],
        paths: &["/path"],
        ..NONE
    },
    Builtin {
        family: "ACP client",
        names: &["fs/write_text_file"],
        access: Access::Write,
        paths: &["/path"],
        ..NONE
    },
    // An ACP agent's permission request names its tool call's kind, not its tool: the ACP
    // proxy (`toolgate-acp`) judges it as `acp/KIND` with the locations' paths, and the command
    // or URL its raw input carries.
    Builtin {
        family: ACP_KINDS,
        names: &["acp/read", "acp/search"],
        paths: &["/paths/*"],
        ..NONE
    },
    Builtin {
        family: ACP_KINDS,
        names: &["acp/edit", "acp/delete", "acp/move"],
        access: Access::Write,
        paths: &["/paths/*"],
        ..NONE
    },
    Builtin {
        family: ACP_KINDS,
        names: &["acp/execute"],
        access: Access::Execute,
        command: Some("/command"),
        cwd: &["/cwd"],
        paths: &["/paths/*"],
        ..NONE
    },
    Builtin {
        family: ACP_KINDS,
        names: &["acp/fetch"],
        access: Access::Network,
        urls: &["/url"],
        ..NONE
    },
    Builtin {
        family: "ACP client",
        names: &["terminal/create"],
        access: Access::Execute,
        command: Some("/command"),
        command_args: Some("/args"),
        command_env: Some("/env"),
        cwd: &["/cwd"],
        ..NONE
    },
    Builtin {
        family: "shell",
        // Claude Code's `Bash`; Codex's `shell` (an argv), `shell_command`, `container.exec`
        // and `local_shell` (codex-rs `core/src/tools/spec.rs`); Gemini CLI's
        // `run_shell_command`; Cursor's `run_terminal_cmd` (`Shell` in its `preToolUse` hook,
        // with `working_directory`); Copilot's `run_in_terminal`; Cline's
        // and Roo Code's `execute_command`; OpenHands' `execute_bash` and `terminal`; Goose's
        // `developer__shell`; Monitor (Claude Code 2.1.98) runs one too.
        names: &[
            "bash",
            "Bash",
            "shell",
            "shell_command",
            "container.exec",
            "local_shell",
            "run_command",
            "run_shell_command",
            "run_terminal_cmd",
            "Shell",
            "run_in_terminal",
            "execute_command",
            "execute_bash",
            "terminal",
            "developer__shell",
            "exec",
            "Monitor",
        ],
        access: Access::Execute,
        command: Some("/command"),
        cwd: SHELL_CWD,
        ..NONE
    },
    Builtin {
        family: CODEX,
        // `exec_command` (unified exec) names its command `cmd` (codex-rs
        // `core/src/tools/spec.rs`).
        names: &["exec_command"],
        access: Access::Execute,
        command: Some("/cmd"),
        cwd: SHELL_CWD,
        ..NONE
    },
    Builtin {
        family: CODEX,
        // A patch in Codex's format (codex-rs `apply-patch/src/parser.rs`): `input` for Codex,
        // Cline and Copilot, `patch` for Roo Code and OpenHands, `command` in Codex's hook input
        // (codex-rs `hooks/src/events/pre_tool_use.rs`); Cursor's hooks name it `ApplyPatch`.
        // The files it adds, updates, deletes and moves are written.
        names: &["apply_patch", "ApplyPatch"],
        access: Access::Write,
        patches: &["/input", "/patch", "/command"],
        cwd: SHELL_CWD,
        ..NONE
    },
    Builtin {
        family: CODEX,
        names: &["view_image"],
        paths: FILE_PATHS,
        ..NONE
    },
    Builtin {
        family: CODEX,
        // Experimental file tools (codex-rs `core/src/tools/spec.rs`).
        names: &["list_dir", "grep_files"],
        paths: FILE_PATHS,
        searched: &["/include"],
        optional: true,
        ..NONE
    },
    Builtin {
        family: "agents",
        // Plans, to-do lists, questions to the person, sub-agents (whose own calls are judged one
        // by one), background output, skills: they touch no file or host. Codex `update_plan`,
        // `request_user_input`, `spawn_agent`…; Claude Code `Agent`, `TaskStop` (and the old
        // `KillShell`, `KillBash`), `TaskOutput`, `TaskCreate`…; Gemini CLI `write_todos`,
        // `ask_user`, plan mode; Cursor `todo_write`; Copilot `manage_todo_list`; Cline and Roo
        // Code `ask_followup_question`, `attempt_completion`, `update_todo_list`; OpenHands
        // `think`, `finish`, `task_tracker`.
        names: &[
            "update_plan",
            "request_user_input",
            "send_input",
            "wait",
            "close_agent",
            "TaskStop",
            "KillShell",
            "KillBash",
            "TaskOutput",
            "TaskCreate",
            "TaskGet",
            "TaskUpdate",
            "TaskList",
            "AskUserQuestion",
            "EnterPlanMode",
            "Skill",
            "SlashCommand",
            "write_todos",
            "ask_user",
            "enter_plan_mode",
            "todo_write",
            "manage_todo_list",
            "update_todo",
            "think",
            "ask_followup_question",
            "plan_mode_respond",
            "act_mode_respond",
            "update_todo_list",
            "switch_mode",
            "finish",
            "task_tracker",
        ],
        ..NONE
    },
    Builtin {
        family: "agents",
        // Web searches: the query goes to the search provider; no URL is fetched.
        names: &["WebSearch", "web_search", "google_web_search", "search_web"],
        access: Access::Network,
        ..NONE
    },
    Builtin {
        family: "agents",
        // Fetch tools with a URL argument: Cline's `web_fetch`, Copilot CLI's, Cursor's,
        // Windsurf's `read_url_content`, Cline's `browser_action`, OpenHands' `browser_navigate`,
        // Copilot's `fetch_webpage` (`urls`). Gemini CLI's `web_fetch` takes only a `prompt`
        // that names the URLs (up to 20) it fetches (gemini-cli
        // `packages/core/src/tools/web-fetch.ts`, `WebFetchToolParams`): each is one.
        names: &[
            "web_fetch",
            "read_url_content",
            "browser_action",
            "browser_navigate",
            "fetch_webpage",
            "open_simple_browser",
        ],
        access: Access::Network,
        urls: &["/url", "/Url", "/urls/*"],
        url_texts: &["/prompt"],
        ..NONE
    },
    Builtin {
        family: "agents",
        // Reading files: Cursor `read_file` and `list_dir` (`ReadFile`, `TabRead` in its hooks);
        // Copilot `list_dir`, Copilot CLI
        // `view`; Cline and Roo Code `list_files`, `list_code_definition_names`; Windsurf
        // `view_file`, `view_file_outline`, `view_code_item`; Goose `developer__tree`.
        names: &[
            "view",
            "ReadFile",
            "TabRead",
            "list_files",
            "list_code_definition_names",
            "view_file",
            "view_file_outline",
            "view_code_item",
            "developer__tree",
            "codebase_search",
        ],
        paths: &[
            "/path",
            "/file_path",
            "/filePath",
            "/AbsolutePath",
            "/File",
            "/target_directories/*",
            "/TargetDirectories/*",
        ],
        optional: true,
        ..NONE
    },
    Builtin {
        family: "agents",
        // Searching files: Cline and Roo Code `search_files` share the filesystem server's name
        // (see above); Cursor `grep` and `glob_file_search`; Copilot `grep_search`, `file_search`;
        // OpenHands `grep`.
        names: &[
            "grep",
            "grep_search",
            "glob_file_search",
            "file_search",
            "find_by_name",
        ],
        paths: &[
            "/path",
            "/dir_path",
            "/target_directory",
            "/SearchPath",
            "/SearchDirectory",
        ],
        patterns: &["/glob_pattern", "/Pattern"],
        searched: &[
            "/glob",
            "/include",
            "/include_pattern",
            "/includePattern",
            "/Includes/*",
        ],
        optional: true,
        ..NONE
    },
    Builtin {
        family: "agents",
        // Writing files: Cursor `edit_file`, `search_replace`, `write`, `delete_file` (`Delete`,
        // `StrReplace`, `TabWrite` in its hooks); Copilot
        // `create_file`, `replace_string_in_file`, `insert_edit_into_file`,
        // `multi_replace_string_in_file`, `create_directory`, Copilot CLI `create`,
        // `str_replace`, `insert`, `edit`; Cline and Roo Code `write_to_file`,
        // `replace_in_file`, `apply_diff`, `insert_content`, `search_and_replace`; Windsurf
        // `replace_file_content`; OpenHands `str_replace_editor` and `file_editor` (a `view`
        // command only reads, but a write is what the profile assumes); Goose
        // `developer__write`, `developer__edit`, `text_editor`.
        names: &[
            "search_replace",
            "write",
            "delete_file",
            "Delete",
            "StrReplace",
            "TabWrite",
            "create_file",
            "replace_string_in_file",
            "insert_edit_into_file",
            "multi_replace_string_in_file",
            "create",
            "str_replace",
            "insert",
            "edit",
            "write_to_file",
            "replace_in_file",
            "apply_diff",
            "insert_content",
            "search_and_replace",
            "replace_file_content",
            "str_replace_editor",
            "file_editor",
            "developer__write",
            "developer__edit",
            "text_editor",
            // Anthropic's text editor tool, as the API names it (`view`, `create`,
            // `str_replace`, `insert` on `path`).
            "str_replace_based_edit_tool",
            "str_replace_editor_tool",
        ],
        access: Access::Write,
        paths: &[
            "/path",
            "/file_path",
            "/filePath",
            "/absolutePath",
            "/target_file",
            "/TargetFile",
            "/dirPath",
            "/replacements/*/filePath",
        ],
        ..NONE
    },
];

fn pointers(texts: &[&str]) -> Vec<Pointer> {
    texts.iter().filter_map(|t| Pointer::new(t).ok()).collect()
}

/// The built-in profiles, one per tool name.
pub(crate) fn builtin_profiles() -> Vec<Profile> {
    let mut out = Vec::new();
    for b in BUILTIN {
        for name in b.names {
            out.push(Profile {
                info: Arc::new(ProfileInfo {
                    matches: vec![(*name).to_owned()],
                    file: None,
                    line: None,
                    family: Some(b.family),
                }),
                matcher: NameSet {
                    patterns: vec![NamePattern::Exact((*name).into())],
                },
                access: Some(b.access),
                paths: pointers(b.paths),
                patterns: pointers(b.patterns),
                searched: pointers(b.searched),
                patches: pointers(b.patches),
                command: b.command.and_then(|p| Pointer::new(p).ok()),
                command_args: b.command_args.and_then(|p| Pointer::new(p).ok()),
                command_env: b.command_env.and_then(|p| Pointer::new(p).ok()),
                cwd: pointers(b.cwd),
                urls: pointers(b.urls),
                url_texts: pointers(b.url_texts),
                revisions: pointers(b.revisions),
                options_guard: b.options_guard,
                optional: b.optional,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_walk_arrays() {
        let args = json!({"paths": ["a", "b"], "x": {"y/z": 1}, "n": [[1, 2], [3]]});
        let p = Pointer::new("/paths/*").unwrap();
        assert_eq!(p.values(&args), [&json!("a"), &json!("b")]);
        assert_eq!(Pointer::new("/x/y~1z").unwrap().values(&args), [&json!(1)]);
        assert_eq!(Pointer::new("/n/*/*").unwrap().values(&args).len(), 3);
        assert_eq!(
            Pointer::new("/paths/1").unwrap().values(&args),
            [&json!("b")]
        );
        assert!(Pointer::new("/missing/*").unwrap().values(&args).is_empty());
        assert!(Pointer::new("paths").is_err());
    }

    #[test]
    fn every_tool_of_the_reference_filesystem_server_has_a_profile() {
        let names: Vec<String> = builtin_profiles()
            .iter()
            .flat_map(|p| p.info.matches.clone())
            .collect();
        for tool in [
            "read_file",
            "read_text_file",
            "read_media_file",
            "read_multiple_files",
            "write_file",
            "edit_file",
            "create_directory",
            "list_directory",
            "list_directory_with_sizes",
            "directory_tree",
            "move_file",
            "search_files",
            "get_file_info",
            "list_allowed_directories",
        ] {
            assert!(names.iter().any(|n| n == tool), "{tool}");
        }
    }
}
