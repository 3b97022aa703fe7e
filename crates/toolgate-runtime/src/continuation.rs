//! Asking whether a run may go on past its iteration limit (HPD-Agent's
//! `ContinuationPermissionMiddleware`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::approver::Approver;
use crate::broker::{ContinuationRequest, Resolution, Response, new_id};
use crate::message::Message;
use crate::messages;
use crate::middleware::{HookError, IterationContext, Middleware, TurnContext};
use crate::state::{MiddlewareState, StateScope};

/// HPD's default iteration limit.
pub const DEFAULT_CONTINUATION_LIMIT: u32 = 20;
/// HPD's default extension on approval.
pub const DEFAULT_EXTENSION: u32 = 3;
/// HPD's wait for an answer.
pub const CONTINUATION_TIMEOUT: Duration = Duration::from_secs(120);

/// The turn's current limit (transient; every turn starts at the configured limit).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Limit(Option<u32>);

impl MiddlewareState for Limit {
    const KEY: &'static str = "toolgate.continuation.limit";
    const SCOPE: StateScope = StateScope::Branch;
}

/// Asks a person before an iteration past the limit: approved, the limit grows by the answer's
/// extension (or the default, 3); refused, timed out (2 minutes), cancelled or failed, the
/// model call is skipped, the response becomes
/// "Execution terminated: Maximum iteration limit reached and continuation was not approved."
/// and the run ends. Not registered by default.
pub struct ContinuationPermissionMiddleware {
    name: String,
    limit: u32,
    extension: u32,
    timeout: Duration,
    approver: Option<Arc<dyn Approver>>,
}

impl fmt::Debug for ContinuationPermissionMiddleware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContinuationPermissionMiddleware")
            .field("limit", &self.limit)
            .field("extension", &self.extension)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Default for ContinuationPermissionMiddleware {
    fn default() -> Self {
        ContinuationPermissionMiddleware::new(DEFAULT_CONTINUATION_LIMIT)
    }
}

impl ContinuationPermissionMiddleware {
    /// Asks after `limit` iterations.
    pub fn new(limit: u32) -> ContinuationPermissionMiddleware {
        ContinuationPermissionMiddleware {
            name: "ContinuationPermissionMiddleware".to_owned(),
            limit,
            extension: DEFAULT_EXTENSION,
            timeout: CONTINUATION_TIMEOUT,
            approver: None,
        }
    }

    /// The extension when an approval names none.
    #[must_use]
    pub fn extension(mut self, extension: u32) -> ContinuationPermissionMiddleware {
        self.extension = extension;
        self
    }

    /// How long to wait for an answer.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> ContinuationPermissionMiddleware {
        self.timeout = timeout;
        self
    }

    /// Asks this approver instead of the agent's.
    #[must_use]
    pub fn with_approver(mut self, approver: impl Approver) -> ContinuationPermissionMiddleware {
        self.approver = Some(Arc::new(approver));
        self
    }
}

#[async_trait]
impl Middleware for ContinuationPermissionMiddleware {
    fn name(&self) -> &str {
        &self.name
    }

    async fn before_message_turn(&self, cx: &mut TurnContext<'_>) -> Result<(), HookError> {
        cx.update_state::<Limit, _>(|l| l.0 = None);
        Ok(())
    }

    async fn before_iteration(&self, cx: &mut IterationContext<'_>) -> Result<(), HookError> {
        let limit = cx.state::<Limit>().0.unwrap_or(self.limit);
        if cx.iteration < limit {
            return Ok(());
        }
        let approver = match &self.approver {
            Some(approver) => Some(Some(Arc::clone(approver))),
            None => cx.approver(),
        };
        let resolution = match approver {
            Some(approver) => {
                let request = ContinuationRequest {
                    id: new_id(),
                    source: self.name.clone(),
                    current_iteration: cx.iteration + 1,
                    max_iterations: limit,
                };
                cx.broker()
                    .request_continuation(
                        cx.scope(),
                        request,
                        approver,
                        self.timeout,
                        cx.cancellation(),
                    )
                    .await
            }
            None => Resolution::Failed {
                message: messages::NO_HANDLER_REASON.to_owned(),
            },
        };
        match resolution {
            Resolution::Answered {
                response: Response::Continuation(answer),
                ..
            } if answer.approved => {
                let extension = if answer.extension > 0 {
                    answer.extension
                } else {
                    self.extension
                };
                cx.update_state::<Limit, _>(|l| l.0 = Some(limit.saturating_add(extension)));
            }
            _ => {
                cx.skip_model_call = true;
                cx.override_response = Some(Message::assistant(messages::CONTINUATION_TERMINATED));
                cx.terminate = Some(messages::CONTINUATION_DENIED_REASON.to_owned());
            }
        }
        Ok(())
    }
}
