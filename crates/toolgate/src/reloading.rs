//! The gateways' policy, kept to its files while they run: `toolgate mcp` and `toolgate acp`
//! load their policy again when one of its files changes (looked at every second) and on
//! SIGHUP, as the daemon does. A policy that fails to load leaves the one in force; each says
//! what happened on stderr (a gateway's stderr is its client's log).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use toolgate_policy::{FileStamps, LoadOptions, PolicyRole, SharedPolicy};

use crate::Failure;
use crate::args::PolicyArgs;

/// How often the files are looked at.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Loads `files` again into `shared` when one of them changes or SIGHUP comes (`runtime`
/// hears the signal; a thread of its own looks at the files), saying so as `who` on stderr.
pub(crate) fn keep_loaded(
    shared: &SharedPolicy,
    files: Vec<(PolicyRole, PathBuf)>,
    runtime: &tokio::runtime::Runtime,
    who: &'static str,
) {
    let hangup = Arc::new(AtomicBool::new(false));
    #[cfg(unix)]
    {
        let hangup = hangup.clone();
        runtime.spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let Ok(mut signals) = signal(SignalKind::hangup()) else {
                return;
            };
            while signals.recv().await.is_some() {
                hangup.store(true, Ordering::SeqCst);
            }
        });
    }
    #[cfg(not(unix))]
    let _ = runtime;
    let shared = shared.clone();
    let mut stamps = FileStamps::new(files.iter().map(|(_, path)| path.clone()).collect());
    let watched = !files.is_empty();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(LOOK_EVERY);
            let asked = hangup.swap(false, Ordering::SeqCst);
            if !(asked || (watched && stamps.changed())) {
                continue;
            }
            match PolicyArgs::load_files(&files, LoadOptions::default()) {
                Ok(policy) => {
                    shared.set(policy);
                    eprintln!("toolgate {who}: the policy was reloaded");
                }
                Err(Failure::Message(error)) => eprintln!(
                    "toolgate {who}: the policy was not reloaded (the one in force stays): {error}"
                ),
                Err(Failure::BrokenPipe) => {}
            }
        }
    });
}
