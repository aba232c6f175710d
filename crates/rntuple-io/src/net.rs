//! What the sources over reqwest (HTTP(S), S3) share: a tokio runtime of their own,
//! waiting for its futures from any thread, and the timeouts of
//! [`NetworkOptions`](crate::NetworkOptions) as reqwest cannot express them.
//!
//! reqwest offers a connect timeout (TCP and TLS: [`reqwest::ClientBuilder::connect_timeout`]),
//! a total deadline per request (which would cut a long transfer that keeps moving), and
//! a read timeout (per read, but also running while a request waits for its connection
//! and its headers, so that it cannot be longer or shorter than the wait for the first
//! byte). So the first-byte and idle timeouts are kept here:
//!
//! - [`first_byte`]: the wait for a response's headers, from the moment the request is
//!   sent. A request that needs a new connection first waits for it (bounded by the
//!   connect timeout): [`TrackConnects`], a layer around reqwest's connector, tells the
//!   request's task when its connections start and finish (through a task-local
//!   [`ConnectWatch`]), and the first-byte clock starts when the last one is ready.
//! - the idle timeout: every wait for the next chunk of a body, each with its own
//!   deadline (HTTP: `Answer` in `http.rs`; S3: its `GET`'s body stream), so a transfer
//!   is never cut while bytes keep coming fast enough;
//! - the low-speed limit ([`within_limits`] with a body's [`SpeedMeter`]): a body that
//!   keeps coming, but slower than the limit, is given up.

use super::speed::SpeedMeter;
use super::TimeoutKind;
use crate::error::{Error, RemoteKind, Result};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
#[cfg(any(feature = "http", test))]
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};

/// A tokio runtime that belongs to one source: worker threads that drive its sockets
/// and timers. Shut down without waiting when dropped (dropping a runtime normally
/// blocks for its tasks, and panics inside another async context).
pub(crate) struct NetRuntime {
    handle: tokio::runtime::Handle,
    runtime: Option<tokio::runtime::Runtime>,
}

impl NetRuntime {
    /// A runtime of `workers` threads named `name`; `what` (a URL) names it in errors.
    pub(crate) fn new(workers: usize, name: &str, what: &str) -> Result<NetRuntime> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers.max(1))
            .thread_name(name)
            .enable_all()
            .build()
            .map_err(|source| Error::Io {
                what: format!("{what} (starting the network client's threads)"),
                source,
            })?;
        Ok(NetRuntime {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
        })
    }

    /// The runtime's handle (to spawn tasks or enter its context).
    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    /// Runs `future` to its end on this thread, inside the runtime's context (its
    /// sockets and timers are driven by the runtime's workers). Unlike tokio's own
    /// `block_on`, it may be called from any thread, a thread of another runtime
    /// included: it never panics. (The HTTP source blocks on it; S3's requests go
    /// through `run_on`'s channels.)
    #[cfg(any(feature = "http", test))]
    pub(crate) fn block_on<F: Future>(&self, future: F) -> F::Output {
        let _context = self.handle.enter();
        block_on(future)
    }
}

impl Drop for NetRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Wakes a thread parked in [`block_on`].
#[cfg(any(feature = "http", test))]
struct ThreadWaker(std::thread::Thread);

#[cfg(any(feature = "http", test))]
impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `future` on this thread until it is ready, parking in between.
#[cfg(any(feature = "http", test))]
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        // A wake-up that came before the park makes it return at once.
        std::thread::park();
    }
}

tokio::task_local! {
    /// The connections the current request is waiting for (see [`first_byte`]).
    static CONNECTS: Arc<ConnectWatch>;
}

/// The connections one request started: how many are being set up, and when the last
/// one was ready.
#[derive(Debug, Default)]
pub(crate) struct ConnectWatch {
    state: Mutex<WatchState>,
}

#[derive(Debug, Default)]
struct WatchState {
    connecting: usize,
    ready_at: Option<Instant>,
}

impl ConnectWatch {
    fn lock(&self) -> std::sync::MutexGuard<'_, WatchState> {
        // A count and an instant: consistent whatever panicked.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// When a request sent at `sent` with this first-byte `limit` times out; `None`
    /// while one of its connections is being set up (the connect timeout bounds that).
    fn deadline(&self, sent: Instant, limit: Duration) -> Option<Instant> {
        let state = self.lock();
        if state.connecting > 0 {
            return None;
        }
        let start = state.ready_at.map_or(sent, |ready| ready.max(sent));
        Some(start + limit)
    }
}

/// A connection being set up for the request whose [`ConnectWatch`] this holds.
struct Connecting {
    watch: Arc<ConnectWatch>,
    done: bool,
}

impl Connecting {
    fn start(watch: Arc<ConnectWatch>) -> Connecting {
        watch.lock().connecting += 1;
        Connecting { watch, done: false }
    }

    fn finish(mut self, connected: bool) {
        let mut state = self.watch.lock();
        state.connecting = state.connecting.saturating_sub(1);
        if connected {
            state.ready_at = Some(Instant::now());
        }
        self.done = true;
    }
}

impl Drop for Connecting {
    fn drop(&mut self) {
        // Given up (the connect timeout, or the request went elsewhere).
        if !self.done {
            let mut state = self.watch.lock();
            state.connecting = state.connecting.saturating_sub(1);
        }
    }
}

/// A layer for [`reqwest::ClientBuilder::connector_layer`]: tells the request that asked
/// for a connection when its set-up starts and ends (see [`first_byte`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TrackConnects;

impl<S> tower_layer::Layer<S> for TrackConnects {
    type Service = Tracked<S>;
    fn layer(&self, inner: S) -> Tracked<S> {
        Tracked(inner)
    }
}

/// The connector wrapped by [`TrackConnects`].
#[derive(Debug, Clone)]
pub(crate) struct Tracked<S>(S);

impl<S, R> tower_service::Service<R> for Tracked<S>
where
    S: tower_service::Service<R>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = std::result::Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        // Called while the request's task is polled: its watch is in scope.
        let connecting = CONNECTS.try_with(|w| Connecting::start(w.clone())).ok();
        let connect = self.0.call(request);
        Box::pin(async move {
            let result = connect.await;
            if let Some(connecting) = connecting {
                connecting.finish(result.is_ok());
            }
            result
        })
    }
}

/// The first-byte timeout ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoFirstByte;

/// Runs `request` (a future that ends when a response's headers arrived) with the
/// first-byte timeout `limit`: from when it is sent, or, when it waits for connections
/// of its own (of a client with [`TrackConnects`]), from when the last one is ready.
/// Must be awaited inside a tokio runtime's context.
pub(crate) async fn first_byte<F: Future>(
    request: F,
    limit: Duration,
) -> std::result::Result<F::Output, NoFirstByte> {
    let watch = Arc::new(ConnectWatch::default());
    let sent = Instant::now();
    let timed = FirstByte {
        request: Box::pin(CONNECTS.scope(watch.clone(), request)),
        sleep: Box::pin(tokio::time::sleep_until((sent + limit).into())),
        watch,
        sent,
        limit,
    };
    timed.await
}

/// The future of [`first_byte`].
struct FirstByte<F: Future> {
    request: Pin<Box<tokio::task::futures::TaskLocalFuture<Arc<ConnectWatch>, F>>>,
    sleep: Pin<Box<tokio::time::Sleep>>,
    watch: Arc<ConnectWatch>,
    sent: Instant,
    limit: Duration,
}

impl<F: Future> Future for FirstByte<F> {
    type Output = std::result::Result<F::Output, NoFirstByte>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(output) = self.request.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        loop {
            if self.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            // The timer ran out: the deadline may have moved since it was set.
            let now = Instant::now();
            let next = match self.watch.deadline(self.sent, self.limit) {
                Some(deadline) if deadline <= now => return Poll::Ready(Err(NoFirstByte)),
                Some(deadline) => deadline,
                // A connection is being set up: look again later.
                None => now + self.limit,
            };
            self.sleep.as_mut().reset(next.into());
        }
    }
}

/// Waits for `next` (the next chunk of a body) at most `idle`, and not past the
/// deadline of the body's low-speed `meter`; the timeout that ran out, if one did.
/// Must be awaited inside a tokio runtime's context.
pub(crate) async fn within_limits<F: Future>(
    next: F,
    idle: Duration,
    meter: &SpeedMeter,
) -> std::result::Result<F::Output, TimeoutKind> {
    let (wait, by_speed) = meter.bound(idle);
    tokio::time::timeout(wait, next).await.map_err(|_| {
        if by_speed {
            TimeoutKind::LowSpeed
        } else {
            TimeoutKind::Idle
        }
    })
}

/// What sort of failure a reqwest error (of HTTP(S) or of S3's client) is: the kind of
/// the I/O error below it (refused, reset, timed out), TLS (the handshake's error is an
/// `InvalidData` I/O error holding rustls's), a connection the server closed before its
/// answer ended (reset, as Python's `RemoteDisconnected`), else a connection failure (no
/// connection, or the exchange broke) or another one.
pub(crate) fn reqwest_kind(e: &reqwest::Error) -> RemoteKind {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = current {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            if let Some(kind) = io_error_kind(io) {
                return kind;
            }
        }
        if error
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_incomplete_message)
        {
            return RemoteKind::ConnectionReset;
        }
        current = error.source();
    }
    if e.is_timeout() {
        RemoteKind::TimedOut
    } else if e.is_connect() || e.is_request() || e.is_body() {
        RemoteKind::Connection
    } else {
        RemoteKind::Other
    }
}

/// The kind of a network I/O error: `None` when it tells nothing (its kind is `Other`
/// and the errors it wraps tell nothing either).
fn io_error_kind(io: &std::io::Error) -> Option<RemoteKind> {
    match io.kind() {
        // rustls's handshake errors, as tokio-rustls reports them.
        std::io::ErrorKind::InvalidData => Some(RemoteKind::Tls),
        std::io::ErrorKind::Other | std::io::ErrorKind::Interrupted => {
            // A wrapped error's own source chain is not the io::Error's: look inside.
            let mut inner: Option<&(dyn std::error::Error + 'static)> = io
                .get_ref()
                .map(|e| e as &(dyn std::error::Error + 'static));
            while let Some(error) = inner {
                if let Some(io) = error.downcast_ref::<std::io::Error>() {
                    return io_error_kind(io);
                }
                inner = error.source();
            }
            None
        }
        kind => Some(RemoteKind::of_connection_error(kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_on_waits_for_the_runtime_from_any_thread() {
        let runtime = NetRuntime::new(1, "rntuple-test-net", "test").unwrap();
        let slept = runtime.block_on(async {
            let start = Instant::now();
            tokio::time::sleep(Duration::from_millis(20)).await;
            start.elapsed()
        });
        assert!(slept >= Duration::from_millis(20));
        // From a thread of another runtime's workers: no panic.
        let other = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let runtime = Arc::new(runtime);
        let inner = runtime.clone();
        let value = other
            .block_on(async move { other_task(inner).await })
            .unwrap();
        assert_eq!(value, 7);
        other.shutdown_background();
    }

    async fn other_task(runtime: Arc<NetRuntime>) -> Option<u32> {
        tokio::spawn(async move { runtime.block_on(async { 7 }) })
            .await
            .ok()
    }

    #[test]
    fn the_first_byte_clock_starts_when_the_connection_is_ready() {
        // Only lower bounds are exact (a timer never fires early); each upper bound is
        // many times what it separates, and nothing is in time only by a margin of the
        // clock: a request that "answers in time" answers as soon as it is polled again.
        let runtime = NetRuntime::new(1, "rntuple-test-net", "test").unwrap();
        let limit = Duration::from_millis(500);
        // A request that is pending once, then answers: in time.
        let quick = runtime.block_on(async {
            first_byte(
                async {
                    tokio::task::yield_now().await;
                    7
                },
                limit,
            )
            .await
        });
        assert_eq!(quick, Ok(7));
        // One that never answers: given up after the limit, not before (and long
        // before a wait that never ends).
        let start = Instant::now();
        let silent =
            runtime.block_on(async { first_byte(std::future::pending::<()>(), limit).await });
        assert_eq!(silent, Err(NoFirstByte));
        let took = start.elapsed();
        assert!(took >= limit && took < limit * 40, "{took:?}");
        // One that connects for longer than the limit, then answers: in time, since
        // the clock does not run while the connection is being set up.
        let connecting_for = limit + Duration::from_millis(250);
        let connects_then_answers = async {
            let connecting = CONNECTS.with(|w| Connecting::start(w.clone()));
            tokio::time::sleep(connecting_for).await;
            connecting.finish(true);
            tokio::task::yield_now().await;
        };
        let start = Instant::now();
        assert!(runtime
            .block_on(async { first_byte(connects_then_answers, limit).await })
            .is_ok());
        assert!(start.elapsed() >= connecting_for);
        // Connected, then silent: given up a whole limit after connecting (the clock
        // started then, not when the request was sent).
        let connects_then_silent = async {
            let connecting = CONNECTS.with(|w| Connecting::start(w.clone()));
            tokio::time::sleep(connecting_for).await;
            connecting.finish(true);
            std::future::pending::<()>().await;
        };
        let start = Instant::now();
        let silent = runtime.block_on(async { first_byte(connects_then_silent, limit).await });
        assert_eq!(silent, Err(NoFirstByte));
        let took = start.elapsed();
        assert!(
            took >= connecting_for + limit && took < (connecting_for + limit) * 20,
            "{took:?}"
        );
    }
}
