//! `assent serve` (docs/serve.md): a long-lived process that receives GitLab webhooks and,
//! for the MR an event names, runs the sweep's own examination ([`crate::engine::sweep::examine`])
//! within seconds, plus the embedded sweep ([`crate::engine::sweep::pass`]) per project as the safety
//! net. It never publishes: where a pipeline is needed it creates one, and the CI job stays
//! the one publisher.
//!
//! Shape: an accept loop ([`connections`]: bounded connections, the oldest one still reading
//! its request head evicted at the bound) serving an `axum` router; a dispatcher that hands
//! keys due in the [`Coalescer`] to a small pool of blocking workers (the GitLab client is the
//! blocking `ureq` one); a recheck task re-examining the MRs left at `REVIEW`
//! ([`recheck::Watchlist`]); one sweep task per project. The clock is read here (through
//! [`crate::clock::now`]) and handed to the pure parts.

pub mod connections;
pub mod log;
pub mod metrics;
pub mod recheck;
pub mod webhook;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore, watch};

use self::log::{Field, Log};
use self::metrics::{ClassificationLabels, Metrics, PassLabels};
use self::recheck::Watchlist;
use self::webhook::{EventKind, Nudge, Reading};
use crate::core::coalesce::{Accepted, Coalescer, Full};
use crate::core::sweep_classification::SweepVerdict;
use crate::core::time::SweepDuration;
use crate::core::time::Timestamp;
use crate::engine::observe::Silent;
use crate::engine::sweep::examine::{
    Examination, ExamineSettings, MrAction, MrReport, examine_iid,
};
use crate::engine::sweep::pass::{MrLock, SweepReport, SweepSettings, sweep_with};
use crate::forge::sweep_port::SweepForge;
use crate::forge::{ForgeError, RequestCounts};

/// The largest webhook body read: GitLab's own limit on what it sends
/// (`REQUEST_BODY_SIZE_LIMIT`, 25 MB, in `app/services/web_hook_service.rb`). A larger body
/// is read to its end and discarded, and answered 202 all the same.
pub const MAX_BODY_BYTES: usize = 25 * 1024 * 1024;

/// The bytes of webhook bodies held in memory at once, over every connection: a body that
/// would pass it is read to its end and discarded (answered 202, counted `over_budget`), so
/// concurrent 25 MB deliveries cannot grow serve's memory past this.
pub const BODY_BUDGET_BYTES: usize = 64 * 1024 * 1024;

/// Blocking workers classifying at once (each holds one GitLab connection at a time).
const WORKERS: usize = 4;

/// One project serve acts on.
pub struct ServedProject {
    /// The numeric id payloads name it by.
    pub id: u64,
    /// As configured (`--project`).
    pub name: String,
    /// Its sweep port.
    pub forge: Arc<dyn SweepForge + Send + Sync>,
}

/// Everything serve runs with, checked at start.
pub struct ServeConfig {
    /// The projects (at least one).
    pub projects: Vec<ServedProject>,
    /// The token's user id (`GET /user` at start).
    pub bot: u64,
    /// `ASSENT_WEBHOOK_SECRET`.
    pub secret: String,
    /// The bound listener.
    pub listener: std::net::TcpListener,
    /// `--settle`.
    pub settle: Duration,
    /// `--max-queued`.
    pub max_queued: usize,
    /// `--max-connections`.
    pub max_connections: usize,
    /// `--read-timeout`.
    pub read_timeout: Duration,
    /// `--sweep-delay`.
    pub sweep_delay: Duration,
    /// `--sweep-interval`, `None` for `off`.
    pub sweep_interval: Option<SweepDuration>,
    /// The sweep's settings (interval = the sweep interval, or the lookback's check skipped).
    pub sweep: SweepSettings,
    /// `--shutdown-grace`.
    pub shutdown_grace: Duration,
    /// `--log-format`.
    pub log: Log,
    /// `--recheck-interval`, `None` for `off`.
    pub recheck_interval: Option<Duration>,
    /// `--recheck-for`.
    pub recheck_for: Duration,
    /// `--max-watched`.
    pub max_watched: usize,
}

/// Readiness: `Ok` once the token was checked and the last GitLab request did not fail with
/// a transport error or 401.
struct Health {
    problem: Option<String>,
}

struct Shared {
    projects: Vec<ServedProject>,
    seen: Vec<Mutex<RequestCounts>>,
    bot: u64,
    secret_digest: [u8; 32],
    coalescer: Mutex<Coalescer<(usize, u64)>>,
    wake: Notify,
    metrics: Metrics,
    log: Log,
    health: Mutex<Health>,
    shutting_down: AtomicBool,
    examine: ExamineSettings,
    sweep_off: bool,
    started: Instant,
    workers: Semaphore,
    read_timeout: Duration,
    watch: Mutex<Watchlist<(usize, u64)>>,
    /// `--recheck-interval` is not `off`: only then are MRs watched.
    rechecking: bool,
    body_budget: Arc<Semaphore>,
}

impl Shared {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Coalescer<(usize, u64)>> {
        self.coalescer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts the requests project `index`'s client made since the last call.
    fn count_requests(&self, index: usize) {
        let now = self.projects[index].forge.request_counts();
        let mut seen = self.seen[index].lock().unwrap_or_else(|e| e.into_inner());
        self.metrics.requests(RequestCounts {
            reads: now.reads.saturating_sub(seen.reads),
            writes: now.writes.saturating_sub(seen.writes),
        });
        *seen = now;
    }

    /// Readiness after an operation that ended with `error` (or none).
    fn observe(&self, error: Option<&ForgeError>) {
        let mut health = self.health.lock().unwrap_or_else(|e| e.into_inner());
        health.problem = match error {
            Some(ForgeError::Transport { .. }) => {
                Some("the last GitLab request failed: GitLab unreachable".into())
            }
            Some(ForgeError::Status { status: 401, .. }) => {
                Some("the last GitLab request failed: the token was rejected (401)".into())
            }
            _ => None,
        };
    }

    fn queue_gauge(&self, keys: usize) {
        self.metrics
            .queue_keys
            .set(i64::try_from(keys).unwrap_or(i64::MAX));
    }

    fn watch_lock(&self) -> std::sync::MutexGuard<'_, Watchlist<(usize, u64)>> {
        self.watch.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The watched set after a classification of `key` whose last event was at
    /// `last_event`: watched while its summary is at `REVIEW` on an open MR, no longer once
    /// it is not; unchanged when the examination failed before a verdict. The gauge and the
    /// drop counter follow.
    fn follow(&self, key: (usize, u64), examined: &Examination, last_event: u64) {
        if !self.rechecking {
            return;
        }
        let mut watch = self.watch_lock();
        let dropped_before = watch.dropped();
        match examined.report.verdict {
            None => {}
            Some(verdict) if examined.summary_at_review && verdict != SweepVerdict::NotOpen => {
                watch.watch(key, last_event);
            }
            Some(_) => watch.unwatch(&key),
        }
        self.watch_metrics(&watch, dropped_before);
    }

    fn watch_metrics(&self, watch: &Watchlist<(usize, u64)>, dropped_before: u64) {
        self.metrics
            .watched_mrs
            .set(i64::try_from(watch.len()).unwrap_or(i64::MAX));
        self.metrics
            .watch_dropped
            .inc_by(watch.dropped().saturating_sub(dropped_before));
    }

    fn record(&self, trigger: &'static str, mr: &MrReport) {
        let verdict = mr.verdict.map_or("error", |v| v.as_str());
        self.metrics
            .classifications
            .get_or_create(&ClassificationLabels { trigger, verdict })
            .inc();
        if mr.action == MrAction::PipelineCreated {
            self.metrics
                .pipelines_created
                .get_or_create(&ClassificationLabels { trigger, verdict })
                .inc();
        }
        if mr.action == MrAction::PipelineRefused {
            self.metrics
                .pipeline_refusals
                .get_or_create(&ClassificationLabels { trigger, verdict })
                .inc();
        }
    }
}

/// The sweep's view of the coalescer: an MR is examined by the pass only while its key is
/// idle, so the live path and the sweep never classify one MR at once.
struct SweepLock<'a> {
    shared: &'a Shared,
    project: usize,
}

impl MrLock for SweepLock<'_> {
    fn try_lock(&self, iid: u64) -> bool {
        let mut c = self.shared.lock();
        let taken = c.try_begin((self.project, iid));
        self.shared.queue_gauge(c.len());
        taken
    }

    fn unlock(&self, iid: u64) {
        let mut c = self.shared.lock();
        c.finished(&(self.project, iid));
        self.shared.queue_gauge(c.len());
        drop(c);
        self.shared.wake.notify_one();
    }
}

/// Runs serve until SIGTERM or SIGINT, then drains. Returns once drained (exit 0).
pub fn run(config: ServeConfig) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(WORKERS + 4)
        .enable_all()
        .build()?;
    let result = runtime.block_on(serve(config));
    // Classifications still running past the grace are abandoned: their pipeline creation,
    // if any, was sent once and the next pass sees it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    result
}

async fn serve(mut config: ServeConfig) -> anyhow::Result<()> {
    let log = config.log;
    let shared = Arc::new(shared_state(&mut config));
    log_start(&shared, config.listener.local_addr()?, &config);
    config.listener.set_nonblocking(true)?;
    let listener = TcpListener::from_std(config.listener)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let dispatcher = tokio::spawn(dispatch(shared.clone(), stop_rx.clone()));
    let mut sweeps = Vec::new();
    if let Some(interval) = config.sweep_interval {
        for index in 0..shared.projects.len() {
            sweeps.push(tokio::spawn(sweep_loop(
                shared.clone(),
                index,
                config.sweep,
                interval,
                config.sweep_delay,
                stop_rx.clone(),
            )));
        }
    }
    let recheck = config
        .recheck_interval
        .map(|interval| tokio::spawn(recheck_loop(shared.clone(), interval, stop_rx.clone())));
    let accept = tokio::spawn(connections::accept_loop(
        listener,
        router(shared.clone()),
        connections::ConnectionLimits {
            max_connections: config.max_connections,
            read_timeout: config.read_timeout,
        },
        shared.clone(),
        stop_rx.clone(),
    ));
    let signal = shutdown_signal().await;
    shared.shutting_down.store(true, Ordering::SeqCst);
    log.info(
        "shutting down",
        &[
            ("signal", signal.into()),
            (
                "grace",
                format!("{}ms", config.shutdown_grace.as_millis()).into(),
            ),
        ],
    );
    let _ = stop_tx.send(true);
    let _ = dispatcher.await;
    for s in sweeps {
        s.abort();
    }
    if let Some(r) = recheck {
        // A recheck in flight holds its key as running: the drain waits for it.
        r.abort();
    }
    let in_flight = drain(&shared, config.shutdown_grace).await;
    accept.abort();
    log.info(
        "stopped",
        &[
            ("abandoned", in_flight.into()),
            (
                "dropped_keys",
                shared.lock().len().saturating_sub(in_flight).into(),
            ),
        ],
    );
    Ok(())
}

/// What every task of the process shares, built from the configuration (its projects move
/// into it).
fn shared_state(config: &mut ServeConfig) -> Shared {
    let metrics = Metrics::new();
    let interval = config.sweep_interval.map_or(0, SweepDuration::as_secs);
    metrics
        .sweep_interval_seconds
        .set(i64::try_from(interval).unwrap_or(i64::MAX));
    Shared {
        seen: config
            .projects
            .iter()
            .map(|_| Mutex::new(RequestCounts::default()))
            .collect(),
        bot: config.bot,
        secret_digest: Sha256::digest(config.secret.as_bytes()).into(),
        coalescer: Mutex::new(Coalescer::new(
            u64::try_from(config.settle.as_millis()).unwrap_or(u64::MAX),
            config.max_queued,
        )),
        wake: Notify::new(),
        metrics,
        log: config.log,
        health: Mutex::new(Health { problem: None }),
        shutting_down: AtomicBool::new(false),
        examine: ExamineSettings {
            stuck_after: config.sweep.stuck_after,
            dry_run: false,
        },
        sweep_off: config.sweep_interval.is_none(),
        started: Instant::now(),
        workers: Semaphore::new(WORKERS),
        read_timeout: config.read_timeout,
        watch: Mutex::new(Watchlist::new(
            config.max_watched,
            u64::try_from(config.recheck_for.as_millis()).unwrap_or(u64::MAX),
        )),
        rechecking: config.recheck_interval.is_some(),
        body_budget: Arc::new(Semaphore::new(BODY_BUDGET_BYTES)),
        projects: std::mem::take(&mut config.projects),
    }
}

/// The first log lines: where serve listens, for which projects, and its sweep (a warning
/// when it is off, since then only a scheduled `assent sweep` heals a lost webhook).
fn log_start(shared: &Shared, addr: SocketAddr, config: &ServeConfig) {
    let (sweep_interval, sweep) = (config.sweep_interval, config.sweep);
    let projects = shared
        .projects
        .iter()
        .map(|p| p.name.clone())
        .collect::<Vec<_>>()
        .join(",");
    let sweep_text = match sweep_interval {
        None => "off".to_owned(),
        Some(i) => format!("every {i}, lookback {}", sweep.lookback),
    };
    shared.log.info(
        "serve listening",
        &[
            ("listen", addr.to_string().into()),
            ("projects", projects.into()),
            ("sweep", sweep_text.into()),
            (
                "recheck",
                match config.recheck_interval {
                    None => "off".to_owned(),
                    Some(i) => format!(
                        "every {}ms for {}s after an MR's last event, at most {} MRs",
                        i.as_millis(),
                        config.recheck_for.as_secs(),
                        config.max_watched
                    ),
                }
                .into(),
            ),
        ],
    );
    if sweep_interval.is_none() {
        shared.log.warn(
            "embedded sweep off (--sweep-interval off): lost webhooks are healed only by a scheduled assent sweep",
            &[],
        );
    }
}

/// Waits, within the grace, for the classifications in flight to finish; queued nudges are
/// dropped (the next process's first sweep pass heals them). The number still running.
async fn drain(shared: &Shared, grace: Duration) -> usize {
    let deadline = Instant::now() + grace;
    let mut in_flight = shared.lock().running();
    while in_flight > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        in_flight = shared.lock().running();
    }
    in_flight
}

async fn shutdown_signal() -> &'static str {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return "SIGINT";
        }
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = tokio::signal::ctrl_c() => "SIGINT",
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/webhook", post(webhook_handler))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_handler))
        .fallback(|| async { (StatusCode::NOT_FOUND, "not found\n") })
        .with_state(shared)
}

fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}

fn draining(shared: &Shared) -> Option<Response> {
    shared
        .shutting_down
        .load(Ordering::SeqCst)
        .then(|| text(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n"))
}

async fn healthz(State(shared): State<Arc<Shared>>) -> Response {
    draining(&shared).unwrap_or_else(|| text(StatusCode::OK, "ok\n"))
}

async fn readyz(State(shared): State<Arc<Shared>>) -> Response {
    if let Some(r) = draining(&shared) {
        return r;
    }
    let problem = shared
        .health
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .problem
        .clone();
    let sweep = if shared.sweep_off {
        "; embedded sweep off"
    } else {
        ""
    };
    match problem {
        Some(p) => text(StatusCode::SERVICE_UNAVAILABLE, format!("{p}{sweep}\n")),
        None => text(StatusCode::OK, format!("ready{sweep}\n")),
    }
}

async fn metrics_handler(State(shared): State<Arc<Shared>>) -> Response {
    let keys = shared.lock().len();
    shared.queue_gauge(keys);
    let ready = readyz(State(shared.clone())).await.status() == StatusCode::OK;
    shared.metrics.ready.set(i64::from(ready));
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        shared.metrics.render(),
    )
        .into_response()
}

/// Constant-time comparison of the `X-Gitlab-Token` header with the secret (both hashed
/// first, so neither the content nor the length leaks through timing).
fn secret_matches(shared: &Shared, headers: &HeaderMap) -> bool {
    let Some(given) = headers.get("x-gitlab-token") else {
        return false;
    };
    let digest: [u8; 32] = Sha256::digest(given.as_bytes()).into();
    digest.ct_eq(&shared.secret_digest).into()
}

async fn webhook_handler(State(shared): State<Arc<Shared>>, request: Request<Body>) -> Response {
    let kind = EventKind::from_header(
        request
            .headers()
            .get("x-gitlab-event")
            .and_then(|v| v.to_str().ok()),
    );
    let event = kind.as_str();
    let peer = request
        .extensions()
        .get::<connections::Peer>()
        .map(|p| p.0.to_string());
    let refused = match receive(&shared, kind, request).await {
        Ok((nudge, how)) => {
            shared.wake.notify_one();
            shared.metrics.event(event, "accepted");
            shared.log.info(
                "webhook",
                &[
                    ("event", event.into()),
                    ("result", "accepted".into()),
                    ("status", 202u64.into()),
                    ("project", nudge.project_id.into()),
                    ("iid", nudge.iid.into()),
                    (
                        "queued",
                        match how {
                            Accepted::Scheduled => "scheduled",
                            Accepted::Postponed => "coalesced",
                            Accepted::QueuedBehindRun => "after-running",
                        }
                        .into(),
                    ),
                ],
            );
            return text(StatusCode::ACCEPTED, "accepted\n");
        }
        Err(refused) => refused,
    };
    shared.metrics.event(event, refused.result);
    let fields = [
        ("event", event.into()),
        ("result", refused.result.into()),
        ("status", u64::from(refused.status.as_u16()).into()),
    ];
    // An authenticated delivery serve could not act on is a warning: its MR is left to the
    // recheck and the sweep. A refused one (no or a wrong secret) is a warning naming where
    // it came from: a hook with an old secret, or a stranger probing the endpoint.
    if refused.status == StatusCode::ACCEPTED {
        shared.log.warn("webhook not queued", &fields);
    } else if refused.status == StatusCode::UNAUTHORIZED {
        let remote = [("remote", peer.unwrap_or_default().into())];
        let with_remote: Vec<(&str, Field)> = fields.into_iter().chain(remote).collect();
        shared.log.warn("webhook refused", &with_remote);
    } else {
        shared.log.info("webhook", &fields);
    }
    text(refused.status, refused.body)
}

/// A delivery not queued: its result (the metric's and the log's label), status and body.
struct NotQueued {
    result: &'static str,
    status: StatusCode,
    body: String,
}

impl NotQueued {
    fn new(result: &'static str, status: StatusCode, body: impl Into<String>) -> NotQueued {
        NotQueued {
            result,
            status,
            body: body.into(),
        }
    }

    /// A delivery with the right secret that serve cannot act on: GitLab counts any answer
    /// outside 2xx/3xx as a failed delivery, backs the hook off after 4 in a row and disables
    /// it for good after 40 (`app/models/concerns/web_hooks/auto_disabling.rb`), so it is
    /// answered 202 all the same, and counted under `result`.
    fn unusable(result: &'static str, why: &str) -> NotQueued {
        NotQueued::new(
            result,
            StatusCode::ACCEPTED,
            format!("not queued: {why}; the recheck and the sweep heal its MR\n"),
        )
    }
}

/// A body as read: its bytes (holding their share of the body budget), or why it was
/// discarded.
enum BodyRead {
    Complete(Vec<u8>, Option<tokio::sync::OwnedSemaphorePermit>),
    Discarded(&'static str, &'static str),
}

/// Reads a webhook body within the read timeout, holding at most [`MAX_BODY_BYTES`] of it
/// and never more than the shared [`BODY_BUDGET_BYTES`] across connections: past either, the
/// rest is read and dropped, so the sender still gets its answer (a sender cut off while
/// writing counts the delivery as failed) and serve's memory stays bounded.
async fn read_body(shared: &Shared, body: Body) -> BodyRead {
    use axum::body::HttpBody;
    let mut body = body;
    let mut kept: Vec<u8> = Vec::new();
    let mut permit: Option<tokio::sync::OwnedSemaphorePermit> = None;
    let mut discarding: Option<(&'static str, &'static str)> = None;
    let deadline = tokio::time::Instant::now() + shared.read_timeout;
    loop {
        let frame = tokio::time::timeout_at(
            deadline,
            std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)),
        )
        .await;
        let data = match frame {
            Err(_) => {
                return BodyRead::Discarded(
                    "timeout",
                    "the body was not sent within the read timeout",
                );
            }
            Ok(None) => break,
            Ok(Some(Err(_))) => return BodyRead::Discarded("timeout", "the body ended early"),
            Ok(Some(Ok(frame))) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
        };
        if discarding.is_some() {
            continue;
        }
        if kept.len() + data.len() > MAX_BODY_BYTES {
            discarding = Some(("too_large", "the body is over 25 MiB"));
            kept = Vec::new();
            permit = None;
            continue;
        }
        let more = u32::try_from(data.len()).unwrap_or(u32::MAX);
        match shared.body_budget.clone().try_acquire_many_owned(more) {
            Ok(p) => match permit.as_mut() {
                Some(held) => held.merge(p),
                None => permit = Some(p),
            },
            Err(_) => {
                discarding = Some((
                    "over_budget",
                    "too many webhook bodies are being read at once",
                ));
                kept = Vec::new();
                permit = None;
                continue;
            }
        }
        kept.extend_from_slice(&data);
    }
    match discarding {
        Some((result, why)) => BodyRead::Discarded(result, why),
        None => BodyRead::Complete(kept, permit),
    }
}

/// One delivery, in order: refused without the secret (before its body is read), answered
/// 202 without being queued while draining, its body read (bounded; see [`read_body`]),
/// read for a project id and an iid, then queued for one of the served projects. Every
/// delivery with the right secret gets a 2xx ([`NotQueued::unusable`]).
async fn receive(
    shared: &Arc<Shared>,
    kind: EventKind,
    request: Request<Body>,
) -> Result<(Nudge, Accepted), NotQueued> {
    if !secret_matches(shared, request.headers()) {
        return Err(NotQueued::new(
            "unauthorized",
            StatusCode::UNAUTHORIZED,
            "unauthorized\n",
        ));
    }
    if shared.shutting_down.load(Ordering::SeqCst) {
        return Err(NotQueued::unusable("shutting_down", "serve is stopping"));
    }
    let body = match read_body(shared, request.into_body()).await {
        BodyRead::Discarded(result, why) => return Err(NotQueued::unusable(result, why)),
        BodyRead::Complete(bytes, permit) => (bytes, permit),
    };
    let ignored = || NotQueued::new("ignored", StatusCode::NO_CONTENT, "");
    let reading = webhook::read(kind, &body.0);
    drop(body);
    let nudge = match reading {
        Reading::Malformed(why) => return Err(NotQueued::unusable("bad_request", why)),
        Reading::Ignored => return Err(ignored()),
        Reading::Nudge(n) => n,
    };
    let Some(index) = shared
        .projects
        .iter()
        .position(|p| p.id == nudge.project_id)
    else {
        return Err(ignored());
    };
    let key = (index, nudge.iid);
    let now = shared.now_ms();
    shared.watch_lock().event(&key, now);
    let accepted = {
        let mut c = shared.lock();
        let r = c.event(key, now);
        shared.queue_gauge(c.len());
        r
    };
    match accepted {
        Ok(how) => Ok((nudge, how)),
        Err(Full) => Err(NotQueued::unusable(
            "queue_full",
            "the queue is full (--max-queued)",
        )),
    }
}

/// Hands due keys to the workers until told to stop.
async fn dispatch(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    loop {
        if *stop.borrow() {
            return;
        }
        let (due, next) = {
            let now = shared.now_ms();
            let mut c = shared.lock();
            (c.due(now), c.next_due())
        };
        for key in due {
            tokio::spawn(classify(shared.clone(), key, Trigger::Webhook));
        }
        let wait = next.map_or(Duration::from_secs(3600), |n| {
            Duration::from_millis(n.saturating_sub(shared.now_ms()))
        });
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = shared.wake.notified() => {}
            _ = stop.changed() => {}
        }
    }
}

/// What started a classification by serve's live path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// A webhook's nudge, due after `--settle`.
    Webhook,
    /// The recheck of a watched MR.
    Recheck,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::Webhook => "webhook",
            Trigger::Recheck => "recheck",
        }
    }
}

/// Classifies `key`, which the caller holds as running in the coalescer (the keyed lock),
/// and releases it.
async fn classify(shared: Arc<Shared>, key: (usize, u64), trigger: Trigger) {
    let (index, iid) = key;
    // A webhook classification watches its MR from its event on; a recheck keeps the
    // watched MR's last event.
    let last_event = match trigger {
        Trigger::Webhook => shared.now_ms(),
        Trigger::Recheck => shared.watch_lock().last_event(&key).unwrap_or(0),
    };
    let label = trigger.as_str();
    let permit = shared.workers.acquire().await;
    let worker = shared.clone();
    let examined = tokio::task::spawn_blocking(move || {
        let project = &worker.projects[index];
        examine_iid(
            project.forge.as_ref(),
            worker.bot,
            iid,
            crate::clock::now(),
            &worker.examine,
        )
    })
    .await;
    drop(permit);
    shared.count_requests(index);
    match examined {
        Ok(examined) => {
            shared.observe(examined.error.as_ref());
            if examined.rate_limited {
                shared.metrics.gitlab_rate_limited.inc();
            }
            shared.record(label, &examined.report);
            shared.follow(key, &examined, last_event);
            if trigger == Trigger::Webhook || examined.report.action != MrAction::None {
                log_examination(&shared, label, index, &examined.report);
            }
            for w in &examined.warnings {
                shared.log.warn(
                    "warning",
                    &[
                        ("project", shared.projects[index].id.into()),
                        ("warning", w.as_str().into()),
                    ],
                );
            }
        }
        Err(_) => shared.log.warn(
            "classification panicked",
            &[
                ("project", shared.projects[index].id.into()),
                ("iid", iid.into()),
            ],
        ),
    }
    {
        let mut c = shared.lock();
        c.finished(&key);
        shared.queue_gauge(c.len());
    }
    shared.wake.notify_one();
}

fn log_examination(shared: &Shared, trigger: &str, index: usize, mr: &MrReport) {
    let mut fields: Vec<(&str, Field)> = vec![
        ("trigger", trigger.into()),
        ("project", shared.projects[index].id.into()),
        ("iid", mr.iid.into()),
        ("verdict", mr.verdict.map_or("error", |v| v.as_str()).into()),
        ("action", mr.action.as_str().into()),
    ];
    if let Some(id) = mr.pipeline_id {
        fields.push(("pipeline", id.into()));
    }
    // The detail is serve's own text around GitLab's redacted error (never a payload).
    fields.push(("detail", mr.detail.clone().into()));
    if mr.action == MrAction::Failed {
        shared.log.warn("classified", &fields);
    } else {
        shared.log.info("classified", &fields);
    }
}

/// Every `interval`, re-examines each watched MR (those a classification left at `REVIEW`,
/// within `--recheck-for` of their last event), one at a time so that rechecks never take
/// more than one of the workers from webhooks. Each takes the same keyed lock as a webhook
/// classification: an MR whose key is pending or running is skipped (that classification
/// covers it).
async fn recheck_loop(shared: Arc<Shared>, interval: Duration, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.changed() => return,
        }
        let due = {
            let mut watch = shared.watch_lock();
            let dropped_before = watch.dropped();
            let due = watch.due(shared.now_ms());
            shared.watch_metrics(&watch, dropped_before);
            due
        };
        for key in due {
            if *stop.borrow() {
                return;
            }
            let began = {
                let mut c = shared.lock();
                let began = c.try_begin(key);
                shared.queue_gauge(c.len());
                began
            };
            if !began {
                continue;
            }
            // Its own task: stopping the loop never abandons a key held as running.
            let _ = tokio::spawn(classify(shared.clone(), key, Trigger::Recheck)).await;
        }
    }
}

/// The look-back of a pass: the configured one, widened to reach back to the start of the
/// last pass that completed when the pass before this one did not.
pub fn widened_lookback(
    lookback: SweepDuration,
    now: Timestamp,
    last_complete_start: Option<Timestamp>,
    last_failed: bool,
) -> SweepDuration {
    let Some(since) = last_complete_start.filter(|_| last_failed) else {
        return lookback;
    };
    let gap_secs = u64::try_from(now.unix_millis().saturating_sub(since.unix_millis()))
        .unwrap_or(0)
        .div_ceil(1000);
    if gap_secs <= lookback.as_secs() {
        return lookback;
    }
    format!("{gap_secs}s").parse().unwrap_or(lookback)
}

async fn sweep_loop(
    shared: Arc<Shared>,
    index: usize,
    settings: SweepSettings,
    interval: SweepDuration,
    delay: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut last_complete_start: Option<Timestamp> = None;
    let mut last_failed = false;
    let mut wait = delay;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.changed() => return,
        }
        wait = Duration::from_secs(interval.as_secs());
        let now = crate::clock::now();
        let lookback = widened_lookback(settings.lookback, now, last_complete_start, last_failed);
        let pass_settings = SweepSettings {
            lookback,
            ..settings
        };
        let worker = shared.clone();
        let report = tokio::task::spawn_blocking(move || {
            let project = &worker.projects[index];
            let lock = SweepLock {
                shared: &worker,
                project: index,
            };
            sweep_with(
                project.forge.as_ref(),
                &project.name,
                now,
                &pass_settings,
                &Silent,
                &lock,
            )
        })
        .await;
        shared.count_requests(index);
        let complete = match report {
            Ok(report) => record_pass(&shared, index, &report, now, lookback, settings.lookback),
            Err(_) => {
                shared
                    .metrics
                    .sweep_passes
                    .get_or_create(&PassLabels { result: "failed" })
                    .inc();
                false
            }
        };
        if complete {
            last_complete_start = Some(now);
        }
        last_failed = !complete;
    }
}

/// What one finished pass (started at `started`) leaves: the health, the metrics, a line per
/// MR acted on and one for the pass (a warning when incomplete, with the widened window as `gap`). True when
/// the pass was complete.
fn record_pass(
    shared: &Shared,
    index: usize,
    report: &SweepReport,
    started: Timestamp,
    lookback: SweepDuration,
    configured: SweepDuration,
) -> bool {
    shared.observe(report.last_error.as_ref());
    if report.rate_limited {
        shared.metrics.gitlab_rate_limited.inc();
    }
    for mr in &report.mrs {
        shared.record("sweep", mr);
        if mr.action != MrAction::None {
            log_examination(shared, "sweep", index, mr);
        }
    }
    let complete = report.succeeded();
    let result = if complete { "complete" } else { "failed" };
    shared
        .metrics
        .sweep_passes
        .get_or_create(&PassLabels { result })
        .inc();
    let mut fields: Vec<(&str, Field)> = vec![
        ("project", shared.projects[index].name.clone().into()),
        ("result", result.into()),
        ("lookback", lookback.to_string().into()),
        ("examined", report.mrs.len().into()),
        ("busy", report.busy.into()),
        ("refreshed", report.refreshed.into()),
        ("healed", report.healed.into()),
    ];
    if lookback != configured {
        fields.push(("gap", lookback.to_string().into()));
    }
    if let Some(line) = report.failure_line() {
        fields.push(("error", line.into()));
    }
    if complete {
        shared
            .metrics
            .sweep_last_success
            .set(started.unix_millis() as f64 / 1000.0);
        shared.log.info("sweep pass", &fields);
    } else {
        shared.log.warn("sweep pass", &fields);
    }
    complete
}

/// The listen address's parse, for the command layer.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not an address and port (e.g. 127.0.0.1:8080)"))
}

#[cfg(test)]
mod router_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_after_a_failed_one_reaches_back_to_the_last_complete_start() {
        let lookback: SweepDuration = "3h".parse().unwrap();
        let start = Timestamp::from_unix_millis(1_000_000_000);
        let later = |secs: i64| Timestamp::from_unix_millis(1_000_000_000 + secs * 1000);
        assert_eq!(
            widened_lookback(lookback, later(7_200), Some(start), false),
            lookback
        );
        assert_eq!(
            widened_lookback(lookback, later(7_200), Some(start), true),
            lookback
        );
        assert_eq!(
            widened_lookback(lookback, later(5 * 3600), Some(start), true).as_secs(),
            5 * 3600
        );
        assert_eq!(
            widened_lookback(lookback, later(5 * 3600), None, true),
            lookback
        );
    }
}
