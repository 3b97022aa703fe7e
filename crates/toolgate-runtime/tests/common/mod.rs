//! Helpers shared by the runtime's integration tests.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate_runtime::{FnTool, ToolError, ToolInfo};

/// A shared log of what happened, in order.
#[derive(Clone, Default)]
pub struct Log(pub Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }

    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A tool that records each run in `log` as `ran {name} {args}` and returns "ok {name}".
pub fn recording_tool(name: &str, log: &Log) -> FnTool {
    let log = log.clone();
    let tool = name.to_owned();
    FnTool::new(
        ToolInfo::new(name, format!("The {name} tool.")),
        move |args, _cx| {
            let log = log.clone();
            let tool = tool.clone();
            async move {
                log.push(format!("ran {tool} {}", Value::Object(args)));
                Ok(Value::String(format!("ok {tool}")))
            }
        },
    )
}

/// A tool that always fails with `message`.
pub fn failing_tool(name: &str, message: &str) -> FnTool {
    let message = message.to_owned();
    FnTool::new(ToolInfo::new(name, "Fails."), move |_, _| {
        let message = message.clone();
        async move { Err(ToolError::new(message)) }
    })
}

/// `{"path": p}`.
pub fn path(p: &str) -> Value {
    json!({ "path": p })
}

/// A current-thread runtime with time enabled, for tests that need a fresh one.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(future)
}
