//! Composing middleware: a chain, a conditional, a parallel composite, tool filters and hook
//! timeouts.
//!
//! # The chain's short-circuit rule
//!
//! A [`Chain`] runs its members' `before_function` in order, and arguments flow from one to
//! the next. It stops at the first `Deny` (or block): nothing after it could loosen it. An
//! `Allow` or an `Ask` does **not** stop it, so a later member can still refuse; the chain's
//! verdict is the strictest it saw (ask > allow > continue) with the first ask's reason and the
//! final arguments. (pydantic-ai-middleware's chain returned on the first decision of any kind,
//! so an allow early in a chain skipped a later deny; that is the inconsistency this fixes.)
//! Every other hook runs like a flat list: `before_*` in order, `after_*` in reverse, wrappers
//! nested with the first member outermost.
//!
//! # The parallel composite
//!
//! [`Parallel`] runs its members' `before_function` concurrently, each on the same original
//! arguments, and keeps one verdict: deny > ask > allow, the first in list order within a class
//! (a block, or a member's failure, counts as a deny). Its other hooks run in sequence, like a
//! chain's.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::join_all;
use serde_json::{Map, Value};

use crate::context::RunContext;
use crate::message::ToolCall;
use crate::middleware::{
    AfterFunctionContext, BatchContext, ErrorContext, ForkContext, FunctionContext, FunctionNext,
    FunctionRequest, HookError, HookResult, IterationContext, IterationEndContext,
    LifecycleContext, Middleware, ModelNext, ModelStream, ToolExecutionContext, TurnContext,
    TurnEndContext, Verdict, changed_after_seal,
};
use crate::model::ModelRequest;
use crate::tool::ToolError;

macro_rules! in_order {
    ($members:expr, $hook:ident, $cx:expr) => {{
        for member in $members.iter() {
            member
                .$hook($cx)
                .await
                .map_err(|e| e.of_member(member.name()))?;
        }
        Ok(())
    }};
}

macro_rules! in_reverse {
    ($members:expr, $hook:ident, $cx:expr) => {{
        for member in $members.iter().rev() {
            member
                .$hook($cx)
                .await
                .map_err(|e| e.of_member(member.name()))?;
        }
        Ok(())
    }};
}

macro_rules! in_reverse_for_call {
    ($members:expr, $hook:ident, $cx:expr) => {{
        for member in $members.iter().rev() {
            if member.applies_to(&$cx.call.name) {
                member
                    .$hook($cx)
                    .await
                    .map_err(|e| e.of_member(member.name()))?;
            }
        }
        Ok(())
    }};
}

/// Runs `members`' `before_function` as a chain (see the module's short-circuit rule).
async fn chain_before_function(
    members: &[Arc<dyn Middleware>],
    cx: &mut FunctionContext<'_>,
) -> Result<Verdict, HookError> {
    let mut args: Option<Map<String, Value>> = None;
    let mut sealed: Option<Map<String, Value>> = None;
    let mut strictest = Verdict::Continue;
    for member in members {
        if !member.applies_to(&cx.call.name) {
            continue;
        }
        let current = args.as_ref().unwrap_or(cx.args);
        let mut inner = FunctionContext {
            run: cx.run,
            call: cx.call,
            args: current,
            tool: cx.tool,
            in_batch: cx.in_batch,
            blocked: None,
            interrupt: None,
            seal: false,
        };
        let verdict = member
            .before_function(&mut inner)
            .await
            .map_err(|e| e.of_member(member.name()))?;
        let (blocked, interrupt, seal) = (inner.blocked.take(), inner.interrupt.take(), inner.seal);
        if let Some(reason) = interrupt {
            cx.interrupt = Some(reason);
        }
        if let Some(block) = blocked {
            cx.blocked = Some(block);
            return Ok(Verdict::Continue);
        }
        let replacement = match verdict {
            Verdict::Continue => None,
            Verdict::Deny { .. } => return Ok(verdict),
            Verdict::Allow { args: replacement } => {
                if strictest.rank() < 1 {
                    strictest = Verdict::allow();
                }
                replacement
            }
            Verdict::Ask {
                reason,
                args: replacement,
            } => {
                if strictest.rank() < 2 {
                    strictest = Verdict::Ask { reason, args: None };
                }
                replacement
            }
        };
        if let Some(replacement) = replacement {
            if sealed.as_ref().is_some_and(|s| *s != replacement) {
                cx.block(changed_after_seal(member.name()));
                return Ok(Verdict::Continue);
            }
            args = Some(replacement);
        }
        if seal && sealed.is_none() {
            sealed = Some(args.clone().unwrap_or_else(|| cx.args.clone()));
            cx.seal = true;
        }
    }
    Ok(match strictest {
        Verdict::Continue if args.is_some() => Verdict::Allow { args },
        Verdict::Allow { .. } => Verdict::Allow { args },
        Verdict::Ask { reason, .. } => Verdict::Ask { reason, args },
        other => other,
    })
}

/// Implements `Middleware` for a list type: every hook but `before_function` (given) as a
/// flat list over `self.members`.
macro_rules! list_middleware {
    ($ty:ty, { $($items:tt)* }) => {
        #[async_trait]
        impl Middleware for $ty {
        $($items)*
        async fn before_start(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
            in_order!(self.members, before_start, cx)
        }
        async fn after_started(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
            in_reverse!(self.members, after_started, cx)
        }
        async fn before_stop(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
            in_order!(self.members, before_stop, cx)
        }
        async fn after_stopped(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
            in_reverse!(self.members, after_stopped, cx)
        }
        async fn before_message_turn(&self, cx: &mut TurnContext<'_>) -> HookResult {
            in_order!(self.members, before_message_turn, cx)
        }
        async fn after_message_turn(&self, cx: &mut TurnEndContext<'_>) -> HookResult {
            in_reverse!(self.members, after_message_turn, cx)
        }
        async fn before_iteration(&self, cx: &mut IterationContext<'_>) -> HookResult {
            in_order!(self.members, before_iteration, cx)
        }
        async fn after_iteration(&self, cx: &mut IterationEndContext<'_>) -> HookResult {
            in_reverse!(self.members, after_iteration, cx)
        }
        async fn before_tool_execution(&self, cx: &mut ToolExecutionContext<'_>) -> HookResult {
            in_order!(self.members, before_tool_execution, cx)
        }
        async fn before_parallel_batch(&self, cx: &mut BatchContext<'_>) -> HookResult {
            in_order!(self.members, before_parallel_batch, cx)
        }
        async fn after_function(&self, cx: &mut AfterFunctionContext<'_>) -> HookResult {
            in_reverse_for_call!(self.members, after_function, cx)
        }
        async fn on_error(&self, cx: &mut ErrorContext<'_>) -> HookResult {
            in_reverse_for_call!(self.members, on_error, cx)
        }
        async fn before_branch_fork_commit(&self, cx: &mut ForkContext<'_>) -> HookResult {
            in_order!(self.members, before_branch_fork_commit, cx)
        }
        fn wrap_model_turn_streaming<'a>(
            &'a self,
            run: &'a RunContext,
            request: ModelRequest,
            next: ModelNext<'a>,
        ) -> ModelStream<'a> {
            let _ = run;
            next.nest(&self.members).run(request)
        }
        async fn wrap_function_call(
            &self,
            request: FunctionRequest,
            next: FunctionNext<'_>,
        ) -> Result<Value, ToolError> {
            next.nest(&self.members).run(request).await
        }
        fn applies_to(&self, tool: &str) -> bool {
            self.members.iter().any(|m| m.applies_to(tool))
        }
        }
    };
}

/// Middleware run as one, in order (see the module's short-circuit rule). Nested chains are
/// flattened.
pub struct Chain {
    name: String,
    members: Vec<Arc<dyn Middleware>>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.members.iter().map(|m| m.name()).collect();
        f.debug_struct("Chain")
            .field("name", &self.name)
            .field("members", &names)
            .finish()
    }
}

impl Chain {
    /// A chain of `members`.
    pub fn new(members: impl IntoIterator<Item = Arc<dyn Middleware>>) -> Chain {
        Chain {
            name: "Chain".to_owned(),
            members: members.into_iter().collect(),
        }
    }

    /// Adds a member at the end.
    #[must_use]
    pub fn then(mut self, member: impl Middleware) -> Chain {
        self.members.push(Arc::new(member));
        self
    }

    /// Names the chain.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Chain {
        self.name = name.into();
        self
    }
}

list_middleware!(Chain, {
    fn name(&self) -> &str {
        &self.name
    }

    async fn before_function(&self, cx: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
        chain_before_function(&self.members, cx).await
    }
});

/// What a [`Conditional`]'s condition sees.
#[derive(Debug, Clone, Copy)]
pub struct ConditionInput<'a> {
    /// The run (absent for lifecycle and fork hooks).
    pub run: Option<&'a RunContext>,
    /// The tool call's name, for per-call hooks.
    pub tool: Option<&'a str>,
    /// The tool call's arguments, for `before_function` and `wrap_function_call`.
    pub args: Option<&'a Map<String, Value>>,
}

type Condition = dyn Fn(&ConditionInput<'_>) -> bool + Send + Sync;

/// Routes every hook to one of two middleware (or none) by a condition evaluated at each hook.
/// With no middleware for the branch taken, the hook is a no-op and arguments pass through.
pub struct Conditional {
    condition: Box<Condition>,
    when_true: Option<Arc<dyn Middleware>>,
    when_false: Option<Arc<dyn Middleware>>,
}

impl std::fmt::Debug for Conditional {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conditional")
            .field("when_true", &self.when_true.as_ref().map(|m| m.name()))
            .field("when_false", &self.when_false.as_ref().map(|m| m.name()))
            .finish()
    }
}

impl Conditional {
    /// Runs `when_true` where `condition` holds, `when_false` elsewhere.
    pub fn new(
        condition: impl Fn(&ConditionInput<'_>) -> bool + Send + Sync + 'static,
        when_true: Option<Arc<dyn Middleware>>,
        when_false: Option<Arc<dyn Middleware>>,
    ) -> Conditional {
        Conditional {
            condition: Box::new(condition),
            when_true,
            when_false,
        }
    }

    fn pick(&self, input: ConditionInput<'_>) -> Option<&Arc<dyn Middleware>> {
        if (self.condition)(&input) {
            self.when_true.as_ref()
        } else {
            self.when_false.as_ref()
        }
    }
}

fn run_only(run: &RunContext) -> ConditionInput<'_> {
    ConditionInput {
        run: Some(run),
        tool: None,
        args: None,
    }
}

fn for_call<'a>(run: &'a RunContext, call: &'a ToolCall) -> ConditionInput<'a> {
    ConditionInput {
        run: Some(run),
        tool: Some(&call.name),
        args: None,
    }
}

const NOTHING: ConditionInput<'static> = ConditionInput {
    run: None,
    tool: None,
    args: None,
};

macro_rules! routed {
    ($self:ident, $input:expr, $hook:ident, $cx:expr) => {
        match $self.pick($input) {
            Some(m) => m.$hook($cx).await.map_err(|e| e.of_member(m.name())),
            None => Ok(()),
        }
    };
}

#[async_trait]
impl Middleware for Conditional {
    fn name(&self) -> &str {
        "Conditional"
    }

    async fn before_start(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
        routed!(self, NOTHING, before_start, cx)
    }
    async fn after_started(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
        routed!(self, NOTHING, after_started, cx)
    }
    async fn before_stop(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
        routed!(self, NOTHING, before_stop, cx)
    }
    async fn after_stopped(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
        routed!(self, NOTHING, after_stopped, cx)
    }
    async fn before_message_turn(&self, cx: &mut TurnContext<'_>) -> HookResult {
        let run = cx.run;
        routed!(self, run_only(run), before_message_turn, cx)
    }
    async fn after_message_turn(&self, cx: &mut TurnEndContext<'_>) -> HookResult {
        let run = cx.run;
        routed!(self, run_only(run), after_message_turn, cx)
    }
    async fn before_iteration(&self, cx: &mut IterationContext<'_>) -> HookResult {
        let run = cx.run;
        routed!(self, run_only(run), before_iteration, cx)
    }
    async fn after_iteration(&self, cx: &mut IterationEndContext<'_>) -> HookResult {
        let run = cx.run;
        routed!(self, run_only(run), after_iteration, cx)
    }
    async fn before_tool_execution(&self, cx: &mut ToolExecutionContext<'_>) -> HookResult {
        let run = cx.run;
        routed!(self, run_only(run), before_tool_execution, cx)
    }
    async fn before_parallel_batch(&self, cx: &mut BatchContext<'_>) -> HookResult {
        let run = cx.run;
        routed!(self, run_only(run), before_parallel_batch, cx)
    }
    async fn before_function(&self, cx: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
        let input = ConditionInput {
            run: Some(cx.run),
            tool: Some(&cx.call.name),
            args: Some(cx.args),
        };
        match self.pick(input) {
            Some(m) if m.applies_to(&cx.call.name) => m
                .before_function(cx)
                .await
                .map_err(|e| e.of_member(m.name())),
            _ => Ok(Verdict::Continue),
        }
    }
    async fn after_function(&self, cx: &mut AfterFunctionContext<'_>) -> HookResult {
        let (run, call) = (cx.run, cx.call);
        match self.pick(for_call(run, call)) {
            Some(m) if m.applies_to(&call.name) => m
                .after_function(cx)
                .await
                .map_err(|e| e.of_member(m.name())),
            _ => Ok(()),
        }
    }
    async fn on_error(&self, cx: &mut ErrorContext<'_>) -> HookResult {
        let (run, call) = (cx.run, cx.call);
        match self.pick(for_call(run, call)) {
            Some(m) if m.applies_to(&call.name) => {
                m.on_error(cx).await.map_err(|e| e.of_member(m.name()))
            }
            _ => Ok(()),
        }
    }
    async fn before_branch_fork_commit(&self, cx: &mut ForkContext<'_>) -> HookResult {
        routed!(self, NOTHING, before_branch_fork_commit, cx)
    }
    fn wrap_model_turn_streaming<'a>(
        &'a self,
        run: &'a RunContext,
        request: ModelRequest,
        next: ModelNext<'a>,
    ) -> ModelStream<'a> {
        match self.pick(run_only(run)) {
            Some(m) => m.wrap_model_turn_streaming(run, request, next),
            None => next.run(request),
        }
    }
    async fn wrap_function_call(
        &self,
        request: FunctionRequest,
        next: FunctionNext<'_>,
    ) -> Result<Value, ToolError> {
        let picked = self
            .pick(ConditionInput {
                run: Some(&request.run),
                tool: Some(&request.name),
                args: Some(&request.args),
            })
            .filter(|m| m.applies_to(&request.name))
            .cloned();
        match picked {
            Some(m) => m.wrap_function_call(request, next).await,
            None => next.run(request).await,
        }
    }
}

/// Middleware whose `before_function` run concurrently (see the module's rule); every other
/// hook runs in sequence, like a chain's.
pub struct Parallel {
    members: Vec<Arc<dyn Middleware>>,
}

impl std::fmt::Debug for Parallel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.members.iter().map(|m| m.name()).collect();
        f.debug_struct("Parallel").field("members", &names).finish()
    }
}

impl Parallel {
    /// A parallel composite of `members`.
    pub fn new(members: impl IntoIterator<Item = Arc<dyn Middleware>>) -> Parallel {
        Parallel {
            members: members.into_iter().collect(),
        }
    }
}

list_middleware!(Parallel, {
    fn name(&self) -> &str {
        "Parallel"
    }

    async fn before_function(&self, cx: &mut FunctionContext<'_>) -> Result<Verdict, HookError> {
        let (run, call, args, tool, in_batch) = (cx.run, cx.call, cx.args, cx.tool, cx.in_batch);
        let outcomes = join_all(
            self.members
                .iter()
                .filter(|m| m.applies_to(&call.name))
                .map(|member| async move {
                    let mut inner = FunctionContext {
                        run,
                        call,
                        args,
                        tool,
                        in_batch,
                        blocked: None,
                        interrupt: None,
                        seal: false,
                    };
                    let verdict = member.before_function(&mut inner).await;
                    (member, verdict, inner.blocked, inner.interrupt, inner.seal)
                }),
        )
        .await;
        let mut chosen: Option<(u8, Verdict)> = None;
        let mut any_sealed = false;
        for (member, verdict, blocked, interrupt, seal) in outcomes {
            any_sealed |= seal;
            if let Some(reason) = interrupt {
                cx.interrupt.get_or_insert(reason);
            }
            let verdict = match (blocked, verdict) {
                (Some(block), _) => {
                    // A block is a deny with its own text: the first one wins.
                    if chosen.as_ref().is_none_or(|(rank, _)| *rank < 3) {
                        cx.blocked = Some(block);
                        chosen = Some((3, Verdict::Continue));
                    }
                    continue;
                }
                (None, Err(e)) => {
                    if chosen.as_ref().is_none_or(|(rank, _)| *rank < 3) {
                        cx.block(e.describe(member.name(), "before_function"));
                        chosen = Some((3, Verdict::Continue));
                    }
                    continue;
                }
                (None, Ok(verdict)) => verdict,
            };
            let rank = verdict.rank();
            if chosen.as_ref().is_none_or(|(best, _)| rank > *best) {
                chosen = Some((rank, verdict));
            }
        }
        let verdict = match chosen {
            Some((_, verdict)) => verdict,
            None => Verdict::Continue,
        };
        if any_sealed {
            // A member approved the arguments as they are: the chosen verdict may not change
            // them.
            let replaced = match &verdict {
                Verdict::Allow { args: Some(a) } | Verdict::Ask { args: Some(a), .. } => a != args,
                _ => false,
            };
            if replaced && cx.blocked.is_none() {
                cx.block(changed_after_seal("Parallel"));
                return Ok(Verdict::Continue);
            }
            cx.seal = true;
        }
        Ok(verdict)
    }
});

/// Implements `Middleware` for a wrapper: every hook delegated to `self.inner`, through
/// `$wrap` for the async ones.
macro_rules! delegate_middleware {
    ($ty:ident, $wrap:ident, { $($items:tt)* }) => {
        #[async_trait]
        impl<M: Middleware> Middleware for $ty<M> {
        $($items)*
        async fn before_start(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
            self.$wrap("before_start", self.inner.before_start(cx)).await
        }
        async fn after_started(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
            self.$wrap("after_started", self.inner.after_started(cx)).await
        }
        async fn before_stop(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
            self.$wrap("before_stop", self.inner.before_stop(cx)).await
        }
        async fn after_stopped(&self, cx: &mut LifecycleContext<'_>) -> HookResult {
            self.$wrap("after_stopped", self.inner.after_stopped(cx)).await
        }
        async fn before_message_turn(&self, cx: &mut TurnContext<'_>) -> HookResult {
            self.$wrap("before_message_turn", self.inner.before_message_turn(cx))
                .await
        }
        async fn after_message_turn(&self, cx: &mut TurnEndContext<'_>) -> HookResult {
            self.$wrap("after_message_turn", self.inner.after_message_turn(cx))
                .await
        }
        async fn before_iteration(&self, cx: &mut IterationContext<'_>) -> HookResult {
            self.$wrap("before_iteration", self.inner.before_iteration(cx))
                .await
        }
        async fn after_iteration(&self, cx: &mut IterationEndContext<'_>) -> HookResult {
            self.$wrap("after_iteration", self.inner.after_iteration(cx))
                .await
        }
        async fn before_tool_execution(&self, cx: &mut ToolExecutionContext<'_>) -> HookResult {
            self.$wrap("before_tool_execution", self.inner.before_tool_execution(cx))
                .await
        }
        async fn before_function(
            &self,
            cx: &mut FunctionContext<'_>,
        ) -> Result<Verdict, HookError> {
            self.$wrap("before_function", self.inner.before_function(cx))
                .await
        }
        async fn after_function(&self, cx: &mut AfterFunctionContext<'_>) -> HookResult {
            self.$wrap("after_function", self.inner.after_function(cx))
                .await
        }
        async fn on_error(&self, cx: &mut ErrorContext<'_>) -> HookResult {
            self.$wrap("on_error", self.inner.on_error(cx)).await
        }
        async fn before_branch_fork_commit(&self, cx: &mut ForkContext<'_>) -> HookResult {
            self.$wrap(
                "before_branch_fork_commit",
                self.inner.before_branch_fork_commit(cx),
            )
            .await
        }
        fn wrap_model_turn_streaming<'a>(
            &'a self,
            run: &'a RunContext,
            request: ModelRequest,
            next: ModelNext<'a>,
        ) -> ModelStream<'a> {
            self.inner.wrap_model_turn_streaming(run, request, next)
        }
        }
    };
}

/// A middleware whose per-call hooks only run for some tools (see
/// [`MiddlewareExt::for_tools`]).
pub struct ForTools<M> {
    inner: M,
    patterns: Vec<String>,
}

impl<M: Middleware> std::fmt::Debug for ForTools<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForTools")
            .field("inner", &self.inner.name())
            .field("patterns", &self.patterns)
            .finish()
    }
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters.
fn wildcard(pattern: &str, name: &str) -> bool {
    let Some((first, rest)) = pattern.split_once('*') else {
        return pattern == name;
    };
    let Some(mut tail) = name.strip_prefix(first) else {
        return false;
    };
    let mut pieces: Vec<&str> = rest.split('*').collect();
    let last = pieces.pop().unwrap_or("");
    for piece in pieces {
        match tail.find(piece) {
            Some(at) => tail = tail.get(at + piece.len()..).unwrap_or(""),
            None => return false,
        }
    }
    tail.len() >= last.len() && tail.ends_with(last)
}

impl<M: Middleware> ForTools<M> {
    async fn pass<T>(&self, _hook: &'static str, hook: impl Future<Output = T>) -> T {
        hook.await
    }
}

delegate_middleware!(ForTools, pass, {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn applies_to(&self, tool: &str) -> bool {
        self.patterns.iter().any(|p| wildcard(p, tool)) && self.inner.applies_to(tool)
    }

    /// The batch hook sees only the calls this middleware applies to (none: not called).
    async fn before_parallel_batch(&self, cx: &mut BatchContext<'_>) -> HookResult {
        let calls: Vec<ToolCall> = cx
            .calls
            .iter()
            .filter(|c| self.applies_to(&c.name))
            .cloned()
            .collect();
        if calls.is_empty() {
            return Ok(());
        }
        let mut inner = BatchContext {
            run: cx.run,
            batch_id: cx.batch_id,
            calls: &calls,
        };
        self.inner.before_parallel_batch(&mut inner).await
    }

    async fn wrap_function_call(
        &self,
        request: FunctionRequest,
        next: FunctionNext<'_>,
    ) -> Result<Value, ToolError> {
        self.inner.wrap_function_call(request, next).await
    }
});

/// A middleware whose hooks fail closed after a timeout (see
/// [`MiddlewareExt::with_timeout`]).
pub struct WithTimeout<M> {
    inner: M,
    timeout: Duration,
}

impl<M: Middleware> std::fmt::Debug for WithTimeout<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WithTimeout")
            .field("inner", &self.inner.name())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl<M: Middleware> WithTimeout<M> {
    async fn timed<T>(
        &self,
        _hook: &'static str,
        hook: impl Future<Output = Result<T, HookError>>,
    ) -> Result<T, HookError> {
        tokio::time::timeout(self.timeout, hook)
            .await
            .unwrap_or(Err(HookError::TimedOut(self.timeout)))
    }
}

delegate_middleware!(WithTimeout, timed, {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn applies_to(&self, tool: &str) -> bool {
        self.inner.applies_to(tool)
    }

    async fn before_parallel_batch(&self, cx: &mut BatchContext<'_>) -> HookResult {
        self.timed(
            "before_parallel_batch",
            self.inner.before_parallel_batch(cx),
        )
        .await
    }

    async fn wrap_function_call(
        &self,
        request: FunctionRequest,
        next: FunctionNext<'_>,
    ) -> Result<Value, ToolError> {
        match tokio::time::timeout(self.timeout, self.inner.wrap_function_call(request, next)).await
        {
            Ok(result) => result,
            Err(_) => Err(ToolError::new(
                HookError::TimedOut(self.timeout).describe(self.inner.name(), "wrap_function_call"),
            )),
        }
    }
});

/// Combinators for every middleware.
pub trait MiddlewareExt: Middleware + Sized {
    /// Runs the per-call hooks only for tools matching one of `patterns` (exact names, `*`
    /// matches any run of characters).
    fn for_tools<I, S>(self, patterns: I) -> ForTools<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ForTools {
            inner: self,
            patterns: patterns.into_iter().map(Into::into).collect(),
        }
    }

    /// Fails every hook that takes longer than `timeout`, closed: a per-call hook refuses the
    /// call with `Middleware 'X' timed out in before_function after 0.05s`, any other hook
    /// fails the turn. (The streaming wrapper is not timed. Do not time the permission
    /// middleware: it waits for people under its own approval timeout.)
    fn with_timeout(self, timeout: Duration) -> WithTimeout<Self> {
        WithTimeout {
            inner: self,
            timeout,
        }
    }

    /// Shares the middleware (for chains and composites).
    fn shared(self) -> Arc<dyn Middleware> {
        Arc::new(self)
    }
}

impl<M: Middleware> MiddlewareExt for M {}

#[cfg(test)]
mod tests {
    use super::wildcard;

    #[test]
    fn wildcards_match_whole_names() {
        for (pattern, name, expected) in [
            ("read_file", "read_file", true),
            ("read_file", "read_files", false),
            ("read_*", "read_file", true),
            ("read_*", "write_file", false),
            ("*_file", "read_file", true),
            ("*", "anything", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "a_b_c", true),
            ("a*b*c", "a_c_b", false),
            ("*file*", "my_file_tool", true),
            ("a*a", "a", false),
        ] {
            assert_eq!(wildcard(pattern, name), expected, "{pattern} vs {name}");
        }
    }
}
