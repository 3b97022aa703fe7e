//! A connection's future polled again at once when it wakes itself while being polled.
//!
//! hyper reads a request's body only once the handler asks for it, and the asking wakes the
//! connection's task from inside that task's own poll. Tokio then reschedules the task as if
//! it had yielded: to the back of the queue, waking another worker thread to come and take it.
//! On the approval path that wake (a system call, and an idle processor woken) came between the
//! answer being committed and the waiting call being released: the approval round trip was
//! 1.55× a trivial request with two worker threads and 1.42× with one, where there is no one to
//! wake (`cargo bench -p toolgate-server --bench daemon`, interleaved runs). Here a wake that
//! arrives while the future is being polled makes the poll go round again instead, a few times
//! at most; any other wake reaches the task as before.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// Not being polled: a wake goes to the task (and leaves [`WOKEN`], which the next poll's
/// first round replaces).
const IDLE: u8 = 0;
/// Being polled, not woken yet.
const POLLING: u8 = 1;
/// Woken while being polled: poll again.
const WOKEN: u8 = 2;

/// How many times in a row a poll goes round before the task yields to the others.
const ROUNDS: usize = 4;

struct Shared {
    state: AtomicU8,
    task: AtomicWaker,
}

impl Wake for Shared {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // Every change of the state is a read-modify-write, so a wake and the end of a poll
        // are ordered one way or the other: the poll sees the wake and goes round again, or
        // the wake sees the poll ended and wakes the task. (With a plain store at a round's
        // start, a wake could read the state from before it and be lost.)
        if self.state.swap(WOKEN, Ordering::AcqRel) == IDLE {
            self.task.wake();
        }
    }
}

/// `future`, polled again at once when it wakes itself while being polled.
pub(crate) struct Repoll<F> {
    future: Pin<Box<F>>,
    shared: Arc<Shared>,
    waker: Waker,
}

impl<F: Future> Repoll<F> {
    pub(crate) fn new(future: F) -> Repoll<F> {
        let shared = Arc::new(Shared {
            state: AtomicU8::new(IDLE),
            task: AtomicWaker::new(),
        });
        Repoll {
            future: Box::pin(future),
            waker: Waker::from(shared.clone()),
            shared,
        }
    }
}

impl<F: Future> Future for Repoll<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        this.shared.task.register(cx.waker());
        let mut inner = Context::from_waker(&this.waker);
        for _ in 0..ROUNDS {
            this.shared.state.swap(POLLING, Ordering::AcqRel);
            if let Poll::Ready(output) = this.future.as_mut().poll(&mut inner) {
                this.shared.state.swap(IDLE, Ordering::AcqRel);
                return Poll::Ready(output);
            }
            let quiet = this.shared.state.compare_exchange(
                POLLING,
                IDLE,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            if quiet.is_ok() {
                return Poll::Pending;
            }
        }
        // Woken in every round: the others run first.
        this.shared.state.swap(IDLE, Ordering::AcqRel);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Counts the wakes the task gets.
    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Wakes itself during its first `selfish` polls, then waits for an outside wake (kept in
    /// `waker`), then is ready.
    struct Selfish {
        selfish: usize,
        polls: usize,
        waker: Arc<std::sync::Mutex<Option<Waker>>>,
        outside: Arc<std::sync::atomic::AtomicBool>,
    }

    impl Future for Selfish {
        type Output = usize;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<usize> {
            self.polls += 1;
            if self.polls <= self.selfish {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            if self.outside.load(Ordering::SeqCst) {
                return Poll::Ready(self.polls);
            }
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        }
    }

    fn selfish(
        selfish: usize,
    ) -> (
        Selfish,
        Arc<std::sync::Mutex<Option<Waker>>>,
        Arc<std::sync::atomic::AtomicBool>,
    ) {
        let waker = Arc::new(std::sync::Mutex::new(None));
        let outside = Arc::new(std::sync::atomic::AtomicBool::new(false));
        (
            Selfish {
                selfish,
                polls: 0,
                waker: waker.clone(),
                outside: outside.clone(),
            },
            waker,
            outside,
        )
    }

    #[test]
    fn a_wake_during_the_poll_polls_again_and_does_not_reach_the_task() {
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let task = Waker::from(counter.clone());
        let mut cx = Context::from_waker(&task);
        let (future, waker, outside) = selfish(2);
        let mut future = Repoll::new(future);
        assert!(Pin::new(&mut future).poll(&mut cx).is_pending());
        assert_eq!(
            counter.0.load(Ordering::SeqCst),
            0,
            "no wake reached the task"
        );

        // A wake from outside, after the poll, reaches the task; the next poll ends it.
        outside.store(true, Ordering::SeqCst);
        waker.lock().unwrap().take().unwrap().wake();
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert_eq!(Pin::new(&mut future).poll(&mut cx), Poll::Ready(4));
    }

    #[test]
    fn a_future_that_always_wakes_itself_yields_to_the_others() {
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let task = Waker::from(counter.clone());
        let mut cx = Context::from_waker(&task);
        let (future, _waker, outside) = selfish(usize::MAX);
        outside.store(true, Ordering::SeqCst);
        let mut future = Repoll::new(future);
        assert!(Pin::new(&mut future).poll(&mut cx).is_pending());
        assert_eq!(future.future.polls, ROUNDS, "bounded");
        assert_eq!(
            counter.0.load(Ordering::SeqCst),
            1,
            "the task polls it again later"
        );
    }
}
