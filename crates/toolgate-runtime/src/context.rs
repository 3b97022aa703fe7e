//! The context of one run (one user turn on one branch), shared by every hook of the turn.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio_util::sync::CancellationToken;
use toolgate_policy::{Mode, Origin, PermissionOverride};

use crate::agent::{AgentCore, Approvals};
use crate::approver::Approver;
use crate::broker::ApprovalBroker;
use crate::events::{EventBus, EventKind, Parent, Scope};
use crate::grants::{GrantContext, GrantStore};
use crate::session::Session;
use crate::state::MiddlewareState;
use crate::tool::ToolInfo;

/// Options of one run: the policy mode, overrides, full access, where the agent works, who
/// started the turn, and how to cancel it.
///
/// Permission overrides apply in this order, first hit wins: this run's, then the agent's
/// ([`Agent::require_permission_for`](crate::Agent::require_permission_for) …), then the tool's
/// own `requires_permission`.
#[derive(Clone, Debug, Default)]
pub struct RunConfig {
    /// The policy mode for this run (a session switched to deny-all, say).
    pub mode: Option<Mode>,
    /// Skip asking: every ask becomes an allow (never a guard's, never a deny), and stored
    /// denials are not consulted (HPD's `FullAccess`).
    pub full_access: bool,
    /// Who started the turn.
    pub origin: Option<Origin>,
    /// The workspace root the agent works in.
    pub workspace: Option<PathBuf>,
    /// The folder relative paths and commands resolve against (default: the workspace).
    pub cwd: Option<PathBuf>,
    /// The agent's name, as policies see it (default: the agent's own name).
    pub agent: Option<String>,
    /// Cancels the turn (and every request it waits on).
    pub cancellation: Option<CancellationToken>,
    /// For a child run: the run and tool call that started it.
    pub parent: Option<Parent>,
    overrides: HashMap<String, PermissionOverride>,
}

impl RunConfig {
    /// Requires a human for `tool` in this run.
    #[must_use]
    pub fn require_permission_for(mut self, tool: impl Into<String>) -> RunConfig {
        self.overrides
            .insert(tool.into(), PermissionOverride::Require);
        self
    }

    /// Does not ask for `tool` in this run (a deny stays a deny).
    #[must_use]
    pub fn disable_permission_for(mut self, tool: impl Into<String>) -> RunConfig {
        self.overrides
            .insert(tool.into(), PermissionOverride::Disable);
        self
    }

    /// Removes this run's override for `tool`.
    #[must_use]
    pub fn clear_permission_override(mut self, tool: &str) -> RunConfig {
        self.overrides.remove(tool);
        self
    }

    /// Skips asking for the whole run.
    #[must_use]
    pub fn with_full_access(mut self) -> RunConfig {
        self.full_access = true;
        self
    }

    /// Sets the mode.
    #[must_use]
    pub fn with_mode(mut self, mode: Mode) -> RunConfig {
        self.mode = Some(mode);
        self
    }

    /// Sets the workspace.
    #[must_use]
    pub fn with_workspace(mut self, root: impl Into<PathBuf>) -> RunConfig {
        self.workspace = Some(root.into());
        self
    }

    /// Sets who started the turn.
    #[must_use]
    pub fn with_origin(mut self, origin: Origin) -> RunConfig {
        self.origin = Some(origin);
        self
    }

    /// Sets the cancellation token.
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> RunConfig {
        self.cancellation = Some(token);
        self
    }

    /// This run's override for `tool`.
    pub fn permission_override(&self, tool: &str) -> Option<PermissionOverride> {
        self.overrides.get(tool).copied()
    }
}

pub(crate) struct RunInner {
    pub(crate) core: Arc<AgentCore>,
    pub(crate) session: Session,
    pub(crate) branch: Arc<str>,
    pub(crate) turn: u64,
    pub(crate) run: Arc<str>,
    pub(crate) config: Arc<RunConfig>,
    pub(crate) cancel: CancellationToken,
    pub(crate) iteration: AtomicU32,
}

/// Everything a hook may need about the run it belongs to. Cheap to clone.
#[derive(Clone)]
pub struct RunContext {
    pub(crate) inner: Arc<RunInner>,
}

impl fmt::Debug for RunContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunContext")
            .field("session", &self.session_id())
            .field("branch", &self.branch())
            .field("turn", &self.turn())
            .field("run", &self.run_id())
            .finish_non_exhaustive()
    }
}

impl RunContext {
    /// The session.
    pub fn session(&self) -> &Session {
        &self.inner.session
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        self.inner.session.id()
    }

    /// The branch.
    pub fn branch(&self) -> &str {
        &self.inner.branch
    }

    /// The turn of the branch (from 1).
    pub fn turn(&self) -> u64 {
        self.inner.turn
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.inner.run
    }

    /// The current iteration (from 1; 0 before the first).
    pub fn iteration(&self) -> u32 {
        self.inner.iteration.load(Ordering::Relaxed)
    }

    pub(crate) fn set_iteration(&self, iteration: u32) {
        self.inner.iteration.store(iteration, Ordering::Relaxed);
    }

    /// The run's options.
    pub fn config(&self) -> &RunConfig {
        &self.inner.config
    }

    pub(crate) fn config_arc(&self) -> Arc<RunConfig> {
        Arc::clone(&self.inner.config)
    }

    /// The agent's name.
    pub fn agent_name(&self) -> &str {
        self.inner
            .config
            .agent
            .as_deref()
            .unwrap_or(&self.inner.core.name)
    }

    /// Cancelled when the turn is cancelled.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// A copy of a state value.
    pub fn state<T: MiddlewareState>(&self) -> T {
        self.inner.session.state::<T>(&self.inner.branch)
    }

    /// Updates a state value, under the session's lock; later middleware see it at once.
    pub fn update_state<T: MiddlewareState, R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        self.inner
            .session
            .update_state::<T, R>(&self.inner.branch, f)
    }

    /// The agent's events.
    pub fn events(&self) -> &EventBus {
        &self.inner.core.events
    }

    /// Where this run's events come from.
    pub fn scope(&self) -> Scope {
        Scope {
            session: Some(self.inner.session.id_arc()),
            branch: Some(Arc::clone(&self.inner.branch)),
            turn: Some(self.inner.turn),
            iteration: match self.iteration() {
                0 => None,
                n => Some(n),
            },
            run: Some(Arc::clone(&self.inner.run)),
            parent: self.inner.config.parent.clone(),
            tool_call_id: None,
        }
    }

    /// The scope of an event about one tool call.
    pub fn call_scope(&self, call_id: &str) -> Scope {
        Scope {
            tool_call_id: Some(call_id.to_owned()),
            ..self.scope()
        }
    }

    /// Publishes an event of this run.
    pub fn emit(&self, kind: EventKind) {
        let events = self.events();
        if events.is_observed() {
            events.publish(self.scope(), kind);
        }
    }

    /// Publishes an event about one tool call.
    pub fn emit_for_call(&self, call_id: &str, kind: EventKind) {
        let events = self.events();
        if events.is_observed() {
            events.publish(self.call_scope(call_id), kind);
        }
    }

    /// The agent's approval broker.
    pub fn broker(&self) -> &ApprovalBroker {
        &self.inner.core.broker
    }

    /// Who answers requests: `Some(approver)` to ask it (answers given through the broker
    /// race it), `Some(None)` when only answers through the broker (a UI) are expected,
    /// `None` when nobody can answer (asks are denied).
    pub fn approver(&self) -> Option<Option<Arc<dyn Approver>>> {
        match &self.inner.core.approvals {
            Approvals::None => None,
            Approvals::Events => Some(None),
            Approvals::Handler(h) => Some(Some(Arc::clone(h))),
        }
    }

    /// The agent's grant store.
    pub fn grants(&self) -> &Arc<dyn GrantStore> {
        &self.inner.core.grants
    }

    /// Where the agent keeps its sessions' taint.
    pub fn taints(&self) -> &Arc<dyn crate::taints::SessionTaints> {
        &self.inner.core.taints
    }

    /// The run's workspace as text, when it has one that is valid UTF-8 (what a permission
    /// request shows; a path that is not text cannot be named exactly).
    pub fn workspace_name(&self) -> Option<String> {
        self.inner
            .config
            .workspace
            .as_deref()
            .and_then(std::path::Path::to_str)
            .map(str::to_owned)
    }

    /// Where grants are compared with.
    pub fn grant_context(&self) -> GrantContext {
        GrantContext {
            session: self.session_id().to_owned(),
            branch: self.branch().to_owned(),
            turn: self.turn(),
            workspace: self.inner.config.workspace.clone(),
        }
    }

    /// A registered tool's description.
    pub fn tool(&self, name: &str) -> Option<&ToolInfo> {
        self.inner.core.tools.get(name).map(|t| t.info())
    }

    /// The permission override that applies to `tool`: this run's, else the agent's, else the
    /// tool's `requires_permission`.
    pub fn permission_override(&self, tool: &str) -> Option<PermissionOverride> {
        self.inner
            .config
            .permission_override(tool)
            .or_else(|| self.inner.core.agent_override(tool))
            .or_else(|| {
                self.tool(tool)
                    .filter(|t| t.requires_permission)
                    .map(|_| PermissionOverride::Require)
            })
    }
}
