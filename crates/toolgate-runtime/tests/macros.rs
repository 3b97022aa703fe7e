//! `#[tool]`: what it generates, and the errors it gives for misuse.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use serde_json::{Map, Value, json};
use toolgate_policy::Tag;
use toolgate_runtime::{Tool, ToolContext, ToolError, tool};

/// Reads a file of the workspace.
///
/// Returns its text.
#[tool(tags = ["read_only", "file_system"])]
async fn read_file(
    /// The file's path, relative to the workspace.
    path: String,
    /// How many lines to return at most.
    limit: Option<u32>,
) -> Result<String, std::io::Error> {
    if path == "missing" {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file",
        ));
    }
    Ok(format!("{path}:{}", limit.unwrap_or(0)))
}

#[tool(
    name = "rm",
    description = "Removes a file.",
    tags = ["destructive"],
    requires_permission
)]
fn remove(#[arg(description = "What to remove.")] target: String, cx: ToolContext) -> Value {
    json!({"removed": target, "call": cx.call_id})
}

/// Says nothing.
#[tool]
fn noop() {}

fn context() -> ToolContext {
    ToolContext {
        call_id: "call-7".into(),
        session: "s".into(),
        branch: "main".into(),
        run: "run-1".into(),
        cancellation: Default::default(),
        workspace: None,
        cwd: None,
        run_config: Default::default(),
    }
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn the_description_schema_and_tags_come_from_the_function() {
    let info = ReadFile.info();
    assert_eq!(info.name, "read_file");
    assert_eq!(
        info.description,
        "Reads a file of the workspace.\n\nReturns its text."
    );
    assert_eq!(info.tags, [Tag::ReadOnly, Tag::FileSystem]);
    assert!(!info.requires_permission);
    assert_eq!(info.parameters["type"], "object");
    assert_eq!(info.parameters["required"], json!(["path"]));
    assert_eq!(
        info.parameters["properties"]["path"],
        json!({"type": "string", "description": "The file's path, relative to the workspace."})
    );
    assert_eq!(
        info.parameters["properties"]["limit"]["description"],
        "How many lines to return at most."
    );
    assert!(info.parameters.get("$schema").is_none());

    let info = Remove.info();
    assert_eq!(
        (info.name.as_str(), info.description.as_str()),
        ("rm", "Removes a file.")
    );
    assert!(info.requires_permission);
    assert_eq!(info.tags, [Tag::Destructive]);
    assert_eq!(
        info.parameters["properties"],
        json!({"target": {"type": "string", "description": "What to remove."}}),
        "the context parameter is not an argument"
    );
    assert_eq!(Noop.info().parameters["properties"], json!({}));
}

#[tokio::test]
async fn calls_decode_arguments_and_encode_results() {
    let out = ReadFile
        .call(args(json!({"path": "a.md", "limit": 3})), context())
        .await;
    assert_eq!(out, Ok(json!("a.md:3")));
    let out = ReadFile
        .call(args(json!({"path": "a.md"})), context())
        .await;
    assert_eq!(
        out,
        Ok(json!("a.md:0")),
        "an Option argument may be left out"
    );
    let out = ReadFile
        .call(args(json!({"path": "missing"})), context())
        .await;
    assert_eq!(out, Err(ToolError::new("no such file")));
    let out = ReadFile.call(args(json!({"limit": 3})), context()).await;
    assert_eq!(
        out,
        Err(ToolError::new(
            "invalid arguments for `read_file`: missing field `path`"
        ))
    );
    let out = ReadFile.call(args(json!({"path": 7})), context()).await;
    assert!(
        out.unwrap_err()
            .message()
            .starts_with("invalid arguments for `read_file`: invalid type")
    );
    let out = Remove.call(args(json!({"target": "x"})), context()).await;
    assert_eq!(out, Ok(json!({"removed": "x", "call": "call-7"})));
    assert_eq!(Noop.call(Map::new(), context()).await, Ok(Value::Null));
    // The function itself is still there.
    assert_eq!(read_file("b".into(), None).await.unwrap(), "b:0");
}

#[test]
fn misuse_gives_readable_errors() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
