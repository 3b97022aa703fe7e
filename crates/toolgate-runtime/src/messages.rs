//! The exact texts the model reads when a call does not run. They keep the seeds' wording
//! (HPD-Agent, pydantic-ai-middleware, toolregistry), so prompts and tests written for those
//! systems read the same here.

pub use toolgate_policy::{HANDLER_DENIED_REASON, NO_HANDLER_REASON};

/// A stored "always deny" refused the call (HPD; `{name}` is the tool).
pub const STORED_DENIAL: &str = "Execution of '{name}' was denied by a stored user preference.";

/// A person refused without giving a reason (HPD).
pub const USER_DENIED: &str = "Permission denied by user.";

/// Nobody answered in time (HPD; the request resolves as reject-once).
pub const TIMED_OUT: &str =
    "Permission request timed out. Please respond to permission requests promptly.";

/// The turn was cancelled while the request waited (HPD).
pub const CANCELLED: &str = "Permission request was cancelled.";

/// A middleware refused without a reason (pydantic-ai-middleware).
pub const DENIED: &str = "Permission denied";

/// The run stops when continuation is refused (HPD's assistant message).
pub const CONTINUATION_TERMINATED: &str =
    "Execution terminated: Maximum iteration limit reached and continuation was not approved.";

/// Why the run stopped when continuation is refused (HPD's `TerminationReason`).
pub const CONTINUATION_DENIED_REASON: &str = "Continuation permission denied at iteration limit";

/// The description shown for a tool without one (HPD).
pub const NO_DESCRIPTION: &str = "No description available";

/// `Tool '{name}' blocked: {reason}` (pydantic-ai-middleware's `ToolBlocked` as a result).
pub fn blocked(tool: &str, reason: &str) -> String {
    format!("Tool '{tool}' blocked: {reason}")
}

/// `Execution of '{name}' was denied by a stored user preference.`
pub fn stored_denial(tool: &str) -> String {
    STORED_DENIAL.replace("{name}", tool)
}

/// `Tool '{name}' is not registered` (toolregistry).
pub fn not_registered(tool: &str) -> String {
    format!("Tool '{tool}' is not registered")
}
