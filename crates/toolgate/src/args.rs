//! Arguments shared by the subcommands: which policy files, which call, which run options.

use std::path::PathBuf;

use clap::Args;
use serde_json::{Map, Value};
use toolgate_policy::{
    Call, Context, LoadOptions, Mode, Policy, PolicyRole, PolicySource, RunOptions, Tag,
    discover_policy_files,
};

use crate::Failure;

/// Which policy files to load.
#[derive(Debug, Args)]
pub(crate) struct PolicyArgs {
    /// A policy file (TOML). Repeat to layer several; they load after the user and project files.
    #[arg(long = "policy", short = 'p', value_name = "FILE")]
    pub(crate) policies: Vec<PathBuf>,
    /// Load only the --policy files: skip the user and project files.
    #[arg(long)]
    pub(crate) isolated: bool,
}

/// The folder the command runs in.
pub(crate) fn current_folder() -> Result<PathBuf, Failure> {
    std::env::current_dir()
        .map_err(|e| Failure::Message(format!("error: cannot read the current folder: {e}")))
}

impl PolicyArgs {
    /// The files in load order.
    pub(crate) fn files(&self) -> Result<Vec<(PolicyRole, PathBuf)>, Failure> {
        Ok(self.files_from(&current_folder()?))
    }

    /// The files in load order, the project's found from `folder`.
    pub(crate) fn files_from(&self, folder: &std::path::Path) -> Vec<(PolicyRole, PathBuf)> {
        let mut files = Vec::new();
        if !self.isolated {
            files = discover_policy_files(folder);
        }
        files.extend(self.policies.iter().map(|p| (PolicyRole::Given, p.clone())));
        files
    }

    /// Loads the policy; with no file at all, the built-in one (`toolgate policy show-default`).
    pub(crate) fn load(&self, options: LoadOptions) -> Result<Policy, Failure> {
        let files = self.files()?;
        Self::load_files(&files, options)
    }

    /// Loads these files; with none, the built-in policy.
    pub(crate) fn load_files(
        files: &[(PolicyRole, PathBuf)],
        options: LoadOptions,
    ) -> Result<Policy, Failure> {
        Ok(Policy::load(Self::sources(files)?, options)?)
    }

    /// The texts of these files, read; with none, the built-in policy's.
    pub(crate) fn sources(files: &[(PolicyRole, PathBuf)]) -> Result<Vec<PolicySource>, Failure> {
        if files.is_empty() {
            return Ok(vec![PolicySource::builtin_default()]);
        }
        Ok(PolicySource::read_all(files)?)
    }
}

/// Options of the run, on top of the policy.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Evaluate under this mode (deny-all, approve-reads, approve-all); a call's context.mode
    /// still wins.
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    pub(crate) mode: Option<Mode>,
    /// Require a human for this tool (its allows become asks). Repeatable.
    #[arg(long = "require-permission", value_name = "TOOL")]
    pub(crate) require: Vec<String>,
    /// Do not ask for this tool (its asks become allows; denies and guards stay). Repeatable.
    #[arg(long = "disable-permission", value_name = "TOOL")]
    pub(crate) disable: Vec<String>,
    /// Skip asking for the whole run (every ask but a guard's becomes an allow).
    #[arg(long)]
    pub(crate) full_access: bool,
}

fn parse_mode(text: &str) -> Result<Mode, String> {
    Mode::parse(text).map_err(|e| e.to_string())
}

impl RunArgs {
    pub(crate) fn options(&self) -> RunOptions {
        let mut run = RunOptions::default();
        run.mode = self.mode;
        run.full_access = self.full_access;
        for tool in &self.require {
            run.require_permission_for(tool.as_str());
        }
        for tool in &self.disable {
            run.disable_permission_for(tool.as_str());
        }
        run
    }
}

/// One call given by flags; without them, calls are read as JSON Lines.
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool's name (evaluate one call instead of reading JSON Lines).
    #[arg(long, value_name = "NAME", conflicts_with = "call")]
    pub(crate) tool: Option<String>,
    /// The call's arguments, a JSON object.
    #[arg(
        long,
        visible_alias = "arguments",
        value_name = "JSON",
        requires = "tool"
    )]
    pub(crate) args: Option<String>,
    /// A tag of the tool. Repeatable, or comma-separated.
    #[arg(
        long = "tag",
        visible_alias = "tags",
        value_name = "TAG",
        value_delimiter = ',',
        requires = "tool"
    )]
    pub(crate) tags: Vec<String>,
    /// The tool's MCP annotations, a JSON object.
    #[arg(long, value_name = "JSON", requires = "tool")]
    pub(crate) annotations: Option<String>,
    /// The call's context, a JSON object (session, agent, origin, workspace, cwd, mode, server,
    /// trusted_server, …).
    #[arg(long, value_name = "JSON", requires = "tool")]
    pub(crate) context: Option<String>,
    /// Context shortcut: who started the turn (user, network, automation).
    #[arg(long, value_name = "ORIGIN", requires = "tool")]
    pub(crate) origin: Option<String>,
    /// Context shortcut: the agent making the call.
    #[arg(long, value_name = "NAME", requires = "tool")]
    pub(crate) agent: Option<String>,
    /// Context shortcut: the MCP server the tool belongs to.
    #[arg(long, value_name = "NAME", requires = "tool")]
    pub(crate) server: Option<String>,
    /// Context shortcut: trust the server's annotations.
    #[arg(long, requires = "tool")]
    pub(crate) trusted_server: bool,
    /// Context shortcut: the session's workspace root.
    #[arg(long, value_name = "DIR", requires = "tool")]
    pub(crate) workspace: Option<String>,
    /// Context shortcut: where relative paths and commands resolve.
    #[arg(long, value_name = "DIR", requires = "tool")]
    pub(crate) cwd: Option<String>,
    /// A whole call as JSON (the same form as one input line).
    #[arg(long, value_name = "JSON")]
    pub(crate) call: Option<String>,
    /// Read JSON Lines from this file instead of stdin (`-` is stdin).
    #[arg(value_name = "INPUT")]
    pub(crate) input: Option<PathBuf>,
}

impl CallArgs {
    /// The call given by flags, if any.
    pub(crate) fn flag_call(&self) -> Result<Option<Call>, Failure> {
        if let Some(json) = &self.call {
            return Call::from_json(json)
                .map(Some)
                .map_err(|e| Failure::Message(format!("error: --call: {e}")));
        }
        let Some(tool) = &self.tool else {
            return Ok(None);
        };
        let object = |flag: &str, text: &Option<String>| -> Result<Value, Failure> {
            match text {
                None => Ok(Value::Object(Map::new())),
                Some(text) => serde_json::from_str(text).map_err(|e| {
                    Failure::Message(format!("error: --{flag} is not valid JSON: {e}"))
                }),
            }
        };
        let mut call = Call::new(tool.as_str()).with_args(object("args", &self.args)?);
        call.tags = self.tags.iter().map(|t| Tag::parse(t)).collect();
        if let Value::Object(map) = object("annotations", &self.annotations)? {
            call.annotations = map;
        } else {
            return Err(Failure::Message(
                "error: --annotations must be a JSON object".into(),
            ));
        }
        let mut context = match &self.context {
            Some(text) => serde_json::from_str::<Value>(text).map_err(|e| {
                Failure::Message(format!("error: --context is not valid JSON: {e}"))
            })?,
            None => Value::Object(Map::new()),
        };
        let Value::Object(fields) = &mut context else {
            return Err(Failure::Message(
                "error: --context must be a JSON object".into(),
            ));
        };
        let shortcuts = [
            ("origin", &self.origin),
            ("agent", &self.agent),
            ("server", &self.server),
            ("workspace", &self.workspace),
            ("cwd", &self.cwd),
        ];
        for (key, value) in shortcuts {
            if let Some(value) = value {
                fields.insert(key.into(), Value::String(value.clone()));
            }
        }
        if self.trusted_server {
            fields.insert("trusted_server".into(), Value::Bool(true));
        }
        call.context = serde_json::from_value::<Context>(context)
            .map_err(|e| Failure::Message(format!("error: --context: {e}")))?;
        Ok(Some(call))
    }
}
