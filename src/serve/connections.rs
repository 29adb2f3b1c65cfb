//! serve's accept loop (docs/serve.md#slow-heads): at most `--max-connections` connections
//! at once, and at the bound the **oldest connection not inside a request** (still reading
//! its request head, or idle between keep-alive requests) is cut to make room.
//!
//! Why: a caller without the secret can open connections and send their heads byte by byte.
//! With a plain bound, such connections would hold every slot until their head read timeout,
//! and GitLab's delivery would wait in the kernel's backlog past GitLab's own 10 s timeout
//! (a failed delivery, which backs the hook off). GitLab sends a delivery's head and body at
//! once, so a delivery is inside its request within microseconds of being accepted; a
//! connection that is still reading its head when a newer one needs the slot is the
//! attacker's. Connections inside a request (their head read) are never cut: at the bound
//! with every connection inside a request, the loop waits for one to end.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper::service::Service as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};
use tokio::task::AbortHandle;

use super::Shared;

/// The bounds of the accept loop.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// `--max-connections`.
    pub max_connections: usize,
    /// `--read-timeout`: a request head not read within it is cut; a connection lives at most
    /// ten of them.
    pub read_timeout: Duration,
}

/// One live connection: whether it is inside a request, and how to cut it.
struct Live {
    in_request: Arc<AtomicBool>,
    abort: AbortHandle,
}

/// The live connections, by age (ids increase).
#[derive(Default)]
struct Registry {
    next_id: u64,
    live: BTreeMap<u64, Live>,
}

impl Registry {
    /// Cuts the oldest connection not inside a request; false when every one is inside one.
    fn evict_oldest_outside_a_request(&mut self) -> bool {
        let Some(id) = self
            .live
            .iter()
            .find(|(_, c)| !c.in_request.load(Ordering::SeqCst))
            .map(|(id, _)| *id)
        else {
            return false;
        };
        if let Some(c) = self.live.remove(&id) {
            c.abort.abort();
        }
        true
    }
}

/// Removes its connection from the registry when the connection's task ends or is cut.
struct Registered {
    id: u64,
    registry: Arc<Mutex<Registry>>,
    ended: Arc<Notify>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.registry).live.remove(&self.id);
        self.ended.notify_one();
    }
}

/// Marks its connection outside a request again when the request's future ends.
struct InRequest(Arc<AtomicBool>);

impl Drop for InRequest {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

fn lock(registry: &Mutex<Registry>) -> std::sync::MutexGuard<'_, Registry> {
    registry.lock().unwrap_or_else(|e| e.into_inner())
}

/// The address a request came from, in its extensions: what a refused delivery's log line
/// names, so an operator can tell a misconfigured hook from a stranger.
#[derive(Debug, Clone, Copy)]
pub(super) struct Peer(pub std::net::SocketAddr);

/// Accepts connections and serves `app` on each until aborted.
pub(super) async fn accept_loop(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let registry = Arc::new(Mutex::new(Registry::default()));
    let ended = Arc::new(Notify::new());
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => {
                // Keep answering during the drain: the loop goes on until aborted.
                listener.accept().await
            }
        };
        let Ok((stream, peer)) = accepted else {
            continue;
        };
        // Make room at the bound: cut the oldest connection outside a request, or wait for
        // one to end when every connection is inside a request.
        loop {
            let notified = ended.notified();
            {
                let mut reg = lock(&registry);
                if reg.live.len() < limits.max_connections.max(1) {
                    break;
                }
                if reg.evict_oldest_outside_a_request() {
                    shared.metrics.connections_evicted.inc();
                    break;
                }
            }
            notified.await;
        }
        let in_request = Arc::new(AtomicBool::new(false));
        let inner = TowerToHyperService::new(app.clone());
        let flag = in_request.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<_>| {
            req.extensions_mut().insert(Peer(peer));
            flag.store(true, Ordering::SeqCst);
            let guard = InRequest(flag.clone());
            let response = inner.call(req);
            async move {
                let _guard = guard;
                response.await
            }
        });
        // The registry's lock is held while the task is spawned and registered, so that its
        // removal (on end or cut) always comes after its insertion.
        let mut reg = lock(&registry);
        let id = reg.next_id;
        reg.next_id += 1;
        let registered = Registered {
            id,
            registry: registry.clone(),
            ended: ended.clone(),
        };
        let task = tokio::spawn(async move {
            let _registered = registered;
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.read_timeout)
                .serve_connection(TokioIo::new(stream), service);
            // A connection kept idle or alive past a few read timeouts is cut.
            let _ = tokio::time::timeout(limits.read_timeout * 10, conn).await;
        });
        reg.live.insert(
            id,
            Live {
                in_request,
                abort: task.abort_handle(),
            },
        );
    }
}
