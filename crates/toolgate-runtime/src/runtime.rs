//! The runtime's input loop: turns submitted from anywhere, run as tasks, with the lifecycle
//! hooks around the loop's start and stop.

use std::collections::HashMap;
use std::fmt;

use tokio::sync::{mpsc, oneshot};
use tokio::task::{JoinHandle, JoinSet};

use crate::agent::{Agent, RunError, TurnResult};
use crate::context::RunConfig;
use crate::events::EventKind;
use crate::session::Session;

struct Job {
    session: Session,
    branch: String,
    input: String,
    config: RunConfig,
    reply: oneshot::Sender<Result<TurnResult, RunError>>,
}

/// A started agent: submit turns, then stop it. Turns on different branches run concurrently;
/// turns on one branch run one at a time, in submission order.
///
/// `before_start` runs before the loop starts and `after_started` after (reverse order);
/// `before_stop` runs before it stops taking turns, `after_stopped` once every submitted turn
/// has finished (reverse order).
pub struct Runtime {
    agent: Agent,
    jobs: mpsc::UnboundedSender<Job>,
    task: JoinHandle<()>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("agent", &self.agent.name())
            .finish_non_exhaustive()
    }
}

impl Runtime {
    pub(crate) async fn start(agent: Agent) -> Result<Runtime, RunError> {
        agent.lifecycle("before_start", false).await?;
        let (jobs, mut inbox) = mpsc::unbounded_channel::<Job>();
        let worker = agent.clone();
        let task = tokio::spawn(async move {
            // One queue per branch keeps its turns in submission order; branches run side by
            // side.
            let mut branches: HashMap<(String, String), mpsc::UnboundedSender<Job>> =
                HashMap::new();
            let mut running = JoinSet::new();
            while let Some(job) = inbox.recv().await {
                let key = (job.session.id().to_owned(), job.branch.clone());
                let queue = branches.entry(key).or_insert_with(|| {
                    let (queue, mut jobs) = mpsc::unbounded_channel::<Job>();
                    let agent = worker.clone();
                    running.spawn(async move {
                        while let Some(job) = jobs.recv().await {
                            let result = agent
                                .run_on(&job.session, &job.branch, &job.input, job.config)
                                .await;
                            let _ = job.reply.send(result);
                        }
                    });
                    queue
                });
                if let Err(mpsc::error::SendError(job)) = queue.send(job) {
                    let _ = job.reply.send(Err(RunError::Stopped));
                }
            }
            drop(branches);
            while running.join_next().await.is_some() {}
        });
        agent
            .events()
            .publish(Default::default(), EventKind::RuntimeStarted);
        let runtime = Runtime { agent, jobs, task };
        if let Err(e) = runtime.agent.lifecycle("after_started", true).await {
            drop(runtime.jobs);
            let _ = runtime.task.await;
            return Err(e);
        }
        Ok(runtime)
    }

    /// Submits a user turn. The returned future resolves when the turn ends.
    pub fn submit(
        &self,
        session: &Session,
        branch: &str,
        input: &str,
        config: RunConfig,
    ) -> impl Future<Output = Result<TurnResult, RunError>> + use<> {
        let (reply, answer) = oneshot::channel();
        let sent = self.jobs.send(Job {
            session: session.clone(),
            branch: branch.to_owned(),
            input: input.to_owned(),
            config,
            reply,
        });
        async move {
            sent.map_err(|_| RunError::Stopped)?;
            answer.await.map_err(|_| RunError::Stopped)?
        }
    }

    /// Stops taking turns, waits for the submitted ones, and runs the stop hooks.
    pub async fn stop(self) -> Result<(), RunError> {
        let Runtime { agent, jobs, task } = self;
        agent.lifecycle("before_stop", false).await?;
        drop(jobs);
        let _ = task.await;
        agent
            .events()
            .publish(Default::default(), EventKind::RuntimeStopped);
        agent.lifecycle("after_stopped", true).await
    }
}
