//! The accept loop: every connection served by hyper with a header read timeout, the peer's
//! address attached to each request, and a graceful stop.
//!
//! Why not `axum::serve`: it sets no timer, so a client that sends its headers one byte a
//! second (slowloris) holds a connection and a task for as long as it likes, and so do
//! thousands of idle connections. Here a request's headers must arrive within
//! [`HEADER_READ_TIMEOUT`] (an idle keep-alive connection is closed after it too).

use std::{net::SocketAddr, time::Duration};

use axum::{Router, extract::ConnectInfo};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use tokio::{net::TcpListener, sync::watch};
use tower::ServiceExt;

/// How long a client may take to send a request's headers, and how long an idle
/// keep-alive connection is kept.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a stop waits for requests in flight. Live streams end at once on the stop
/// signal, so only ordinary requests can still be running.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(3);

/// Serves `router` on `listener`, at most `max_connections` at once (one past it is closed
/// at once), until `stop` turns true, then waits up to [`DRAIN_TIMEOUT`] for requests in
/// flight.
///
/// Errors: none today (a failed accept is logged and retried); the `Result` keeps the
/// signature of a server that can fail.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    max_connections: usize,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(max_connections.max(1)));
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
            tracing::debug!(%peer, max_connections, "connection refused: at the connection limit");
            drop(stream);
            continue;
        };
        let service = router
            .clone()
            .map_request(move |mut req: http::Request<Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                req.map(axum::body::Body::new)
            });
        let conn =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::trace!(%peer, error = %e, "connection ended with an error");
            }
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
