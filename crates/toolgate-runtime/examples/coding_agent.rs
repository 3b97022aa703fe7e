//! A coding agent on the scripted model: it reads, edits and runs commands in a temporary
//! workspace under the shipped example policy, and asks you in the terminal when the policy
//! asks.
//!
//!     cargo run -p toolgate-runtime --example coding_agent
//!
//! Options: `--policy FILE` (default: the repository's `examples/policy.toml`),
//! `--workspace DIR` (default: a fresh temporary folder, removed at the end).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;
use toolgate_policy::{ConfinedDir, OpenMode, Policy, PolicyRole};
use toolgate_runtime::{
    Agent, EventKind, PermissionMiddleware, Reply, RunConfig, ScriptedModel, TerminalApprover,
    ToolContext, ToolError, tool,
};

fn workspace(cx: &ToolContext) -> Result<ConfinedDir, ToolError> {
    let root = cx.workspace.as_ref().ok_or("this run has no workspace")?;
    Ok(ConfinedDir::open(root)?)
}

/// Reads a text file of the workspace.
#[tool(tags = ["read_only", "file_system"])]
fn read_file(
    /// The file, relative to the workspace.
    path: String,
    cx: ToolContext,
) -> Result<String, ToolError> {
    let bytes = workspace(&cx)?.read(&path)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Writes a text file of the workspace, replacing it.
#[tool(tags = ["file_system"])]
fn write_file(
    /// The file, relative to the workspace.
    path: String,
    /// Its new contents.
    content: String,
    cx: ToolContext,
) -> Result<String, ToolError> {
    use std::io::Write;
    let mut file = workspace(&cx)?.open_file(&path, OpenMode::WRITE)?;
    file.write_all(content.as_bytes())?;
    Ok(format!("wrote {} bytes to {path}", content.len()))
}

/// Runs a shell command in the workspace.
#[tool]
fn run_command(
    /// The command line.
    command: String,
    cx: ToolContext,
) -> Result<String, ToolError> {
    let root = cx.workspace.as_ref().ok_or("this run has no workspace")?;
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(root)
        .output()?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    if output.status.success() {
        Ok(text)
    } else {
        Err(ToolError::new(format!("{}: {text}", output.status)))
    }
}

fn script() -> ScriptedModel {
    ScriptedModel::new([
        Reply::call("read_file", json!({"path": "README.md"})),
        Reply::call(
            "write_file",
            json!({"path": "src/notes.md", "content": "- check the build script\n"}),
        ),
        Reply::call(
            "write_file",
            json!({"path": "build.sh", "content": "#!/bin/sh\ncargo build\n"}),
        ),
        Reply::call("run_command", json!({"command": "wc -l README.md"})),
        Reply::call("run_command", json!({"command": "./build.sh"})),
        Reply::call("read_file", json!({"path": ".env"})),
        Reply::text(
            "I read the README, wrote notes and a build script (not run), and left the secrets alone.",
        ),
    ])
}

struct Options {
    policy: PathBuf,
    workspace: Option<PathBuf>,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        policy: PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/policy.toml"
        )),
        workspace: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or(format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--policy" => options.policy = value.into(),
            "--workspace" => options.workspace = Some(value.into()),
            other => {
                return Err(format!(
                    "unknown option {other}; use --policy or --workspace"
                ));
            }
        }
    }
    Ok(options)
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let options = options()?;
    let policy = Policy::load_paths(
        &[(PolicyRole::Given, options.policy.clone())],
        Default::default(),
    )?;
    let temporary = tempfile::tempdir()?;
    let root = options
        .workspace
        .clone()
        .unwrap_or_else(|| temporary.path().to_owned());
    std::fs::create_dir_all(root.join("src"))?;
    std::fs::write(
        root.join("README.md"),
        "# demo\nA project the agent works on.\n",
    )?;
    std::fs::write(root.join(".env"), "API_KEY=do-not-read\n")?;
    println!("workspace: {}", root.display());

    let agent = Agent::builder(script())
        .name("coding-agent")
        .tool(ReadFile)
        .tool(WriteFile)
        .tool(RunCommand)
        .middleware(PermissionMiddleware::new(policy))
        .blocking_approver(TerminalApprover::stdio())
        .build()?;
    agent.events().subscribe_fn(|event| {
        if let EventKind::ToolCallFinished { result } = &event.kind {
            let text = result.text();
            let first = text.lines().next().unwrap_or("");
            println!(
                "→ {} [{}] {first}",
                result.name,
                serde_json::to_value(result.outcome)
                    .unwrap_or_default()
                    .as_str()
                    .unwrap_or("")
            );
        }
    });
    let config = RunConfig::default().with_workspace(&root);
    let turn = agent
        .run_on(
            &agent.session("demo"),
            "main",
            "tidy up the project",
            config,
        )
        .await?;
    println!("agent: {}", turn.text());
    let grants = agent.grants().list().await?;
    for grant in grants {
        println!(
            "remembered: {:?} {} on {}",
            grant.effect, grant.tool, grant.target
        );
    }
    println!("done");
    Ok(())
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
