//! The accept loop: every connection served by hyper with a header read timeout and a body
//! deadline, at most so many connections in all and per peer, the peer's address attached
//! to each request, and a graceful stop.
//!
//! Why not `axum::serve`: it sets no timer, so a client that sends its headers one byte a
//! second (slowloris) holds a connection and a task for as long as it likes, and so do
//! thousands of idle connections. Here a request's headers must arrive within
//! [`HEADER_READ_TIMEOUT`] (an idle keep-alive connection is closed after it too), and its
//! body within [`Limits::body_timeout`] after them: hyper's header timeout alone let a client
//! send `Content-Length: 100` and then one byte every 5 s for as long as it liked.

use std::{
    collections::HashMap,
    future::Future,
    net::{IpAddr, SocketAddr},
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use axum::{Router, extract::ConnectInfo};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use ipnet::IpNet;
use tokio::{net::TcpListener, sync::watch, time::Sleep};
use tower::ServiceExt;

/// How long a client may take to send a request's headers, and how long an idle
/// keep-alive connection is kept.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Default of [`Limits::body_timeout`]: a 64 KiB body at a slow mobile link's 20 kbit/s.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Default of [`Limits::per_peer`]. A browser opens at most 6 connections to a host, plus one
/// per live stream (at most `--streams-per-client`, 32): 64 leaves room for a few tabs.
pub const CONNECTIONS_PER_PEER: usize = 64;

/// What the accept loop allows.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Connections open at once in all (`--max-connections`); one past it is closed at once.
    pub max_connections: usize,
    /// Connections open at once from one peer address (`--connections-per-peer`), so one
    /// client cannot take every slot of `max_connections`; one past it is closed at once.
    pub per_peer: usize,
    /// Peers not held to `per_peer` (only to `max_connections`): the trusted proxy's networks,
    /// from which every user's connections arrive. Empty without a proxy.
    pub unlimited_peers: Vec<IpNet>,
    /// Time a request's body has to arrive in full, from the end of its headers
    /// (`--request-body-seconds`); past it the body fails, the handler answers 408 or 400,
    /// and the connection closes.
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 10_000,
            per_peer: CONNECTIONS_PER_PEER,
            unlimited_peers: Vec::new(),
            body_timeout: BODY_TIMEOUT,
        }
    }
}

/// Connections open per peer address.
#[derive(Default)]
struct PeerSlots(Mutex<HashMap<IpAddr, usize>>);

/// One connection's place in [`PeerSlots`], given back when the connection ends.
struct PeerSlot {
    slots: Arc<PeerSlots>,
    ip: IpAddr,
}

impl PeerSlots {
    /// A slot for `ip`, or `None` when it holds `limit` connections already.
    fn take(self: &Arc<Self>, ip: IpAddr, limit: usize) -> Option<PeerSlot> {
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(ip).or_default();
        if *n >= limit.max(1) {
            return None;
        }
        *n += 1;
        Some(PeerSlot {
            slots: self.clone(),
            ip,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self.slots.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            // Forgotten at zero, so the map holds only peers with open connections.
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// A request body that fails once its deadline passes, however its bytes trickle in: the
/// deadline is fixed when the headers arrive and is not moved by each frame (tower-http's
/// `RequestBodyTimeout` restarts its timer at every frame, so one byte every few seconds
/// would pass it).
struct DeadlineBody {
    inner: Incoming,
    deadline: Pin<Box<Sleep>>,
    /// The time it was given, for the error.
    timeout: Duration,
}

impl http_body::Body for DeadlineBody {
    type Data = bytes::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        // The deadline first: a body whose bytes are always ready must not outrun it.
        if self.deadline.as_mut().poll(cx).is_ready() {
            let e = crate::Error::BodyTimedOut(self.timeout);
            return Poll::Ready(Some(Err(e.into())));
        }
        Pin::new(&mut self.inner)
            .poll_frame(cx)
            .map_err(axum::BoxError::from)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// `body` with a deadline `timeout` from now, unless it is empty.
fn with_deadline(body: Incoming, timeout: Duration) -> axum::body::Body {
    use http_body::Body as _;
    if body.is_end_stream() {
        return axum::body::Body::new(body);
    }
    axum::body::Body::new(DeadlineBody {
        inner: body,
        deadline: Box::pin(tokio::time::sleep(timeout)),
        timeout,
    })
}

/// How long a stop waits for requests in flight. Live streams end at once on the stop
/// signal, so only ordinary requests can still be running.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(3);

/// Serves `router` on `listener` within `limits` (a connection past the global or its peer's
/// limit is closed at once) until `stop` turns true, then waits up to [`DRAIN_TIMEOUT`] for
/// requests in flight.
///
/// Errors: none today (a failed accept is logged and retried); the `Result` keeps the
/// signature of a server that can fail.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let peers = Arc::new(PeerSlots::default());
    // HTTP/1.1 only: browsers speak HTTP/2 only over TLS, which a proxy in front ends.
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let graceful = GracefulShutdown::new();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors and the like: pause rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            // The guard `wait_for` returns is not Send; drop it inside.
            _ = async { drop(stop.wait_for(|s| *s).await) } => break,
        };
        // Closing at once (rather than leaving it in the backlog) gives the descriptor back
        // and tells the client; the connections already open are served as before.
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::debug!(%peer, limits.max_connections, "connection refused: at the connection limit");
            drop(stream);
            continue;
        };
        let ip = peer.ip().to_canonical();
        let peer_slot = if limits.unlimited_peers.iter().any(|n| n.contains(&ip)) {
            None
        } else {
            match peers.take(ip, limits.per_peer) {
                Some(s) => Some(s),
                None => {
                    tracing::debug!(%peer, limits.per_peer, "connection refused: at the per-peer limit");
                    drop(stream);
                    continue;
                }
            }
        };
        let body_timeout = limits.body_timeout;
        let service = router
            .clone()
            .map_request(move |mut req: http::Request<Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                req.map(|b| with_deadline(b, body_timeout))
            });
        let conn =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::trace!(%peer, error = %e, "connection ended with an error");
            }
            drop(peer_slot);
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!("stopped with requests still in flight");
    }
    Ok(())
}

/// The peer address of a request served by [`serve`].
pub fn peer(req: &axum::extract::Request) -> Option<SocketAddr> {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0)
}
