//! `assent serve` (docs/serve.md): a long-lived process that receives GitLab webhooks and,
//! for the MR an event names, runs the sweep's own examination ([`crate::examination`])
//! within seconds, plus the embedded sweep ([`crate::sweep_pass`]) per project as the safety
//! net. It never publishes: where a pipeline is needed it creates one, and the CI job stays
//! the one publisher.
//!
//! Shape: an accept loop (bounded connections, a header read timeout) serving an `axum`
//! router; a dispatcher that hands keys due in the [`Coalescer`] to a small pool of blocking
//! workers (the GitLab client is the blocking `ureq` one); one sweep task per project. The
//! clock is read here and handed to the pure parts.

pub mod log;
pub mod metrics;
pub mod webhook;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, to_bytes};
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
use self::webhook::{EventKind, Nudge, Reading};
use crate::core::coalesce::{Accepted, Coalescer, Full};
use crate::core::sweep::{SweepDuration, Timestamp};
use crate::examination::{ExamineSettings, MrAction, MrReport, examine_iid};
use crate::forge::sweep::SweepForge;
use crate::forge::{ForgeError, RequestCounts};
use crate::progress::Silent;
use crate::sweep_pass::{MrLock, SweepReport, SweepSettings, sweep_shared};

/// The largest webhook body accepted (GitLab's own payloads stay far below it).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

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
}

fn now_ts() -> Timestamp {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    Timestamp::from_unix_millis(millis)
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
    config.listener.set_nonblocking(true)?;
    let listener = TcpListener::from_std(config.listener)?;
    log_start(
        &shared,
        listener.local_addr()?,
        config.sweep_interval,
        config.sweep,
    );
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
    let accept = tokio::spawn(accept_loop(
        listener,
        router(shared.clone()),
        config.max_connections,
        config.read_timeout,
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
        projects: std::mem::take(&mut config.projects),
    }
}

/// The first log lines: where serve listens, for which projects, and its sweep (a warning
/// when it is off, since then only a scheduled `assent sweep` heals a lost webhook).
fn log_start(
    shared: &Shared,
    addr: SocketAddr,
    sweep_interval: Option<SweepDuration>,
    sweep: SweepSettings,
) {
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

async fn accept_loop(
    listener: TcpListener,
    app: Router,
    max_connections: usize,
    read_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    let slots = Arc::new(Semaphore::new(max_connections));
    loop {
        // Past the bound, connections wait in the kernel's backlog rather than in memory.
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => {
                // Keep answering (503) during the drain: the loop goes on until aborted.
                listener.accept().await
            }
        };
        let Ok((stream, _)) = accepted else {
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout)
                .serve_connection(TokioIo::new(stream), service);
            // A connection kept idle or alive past a few read timeouts is cut.
            let _ = tokio::time::timeout(read_timeout * 10, conn).await;
        });
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
    shared.log.info(
        "webhook",
        &[
            ("event", event.into()),
            ("result", refused.result.into()),
            ("status", u64::from(refused.status.as_u16()).into()),
        ],
    );
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

    fn too_large() -> NotQueued {
        NotQueued::new(
            "too_large",
            StatusCode::PAYLOAD_TOO_LARGE,
            "body over 4 MiB\n",
        )
    }
}

/// One delivery, in order: refused while draining, without the secret or over the size
/// (before its body is read), its body read within the timeout, read for a project id and
/// an iid, then queued for one of the served projects.
async fn receive(
    shared: &Shared,
    kind: EventKind,
    request: Request<Body>,
) -> Result<(Nudge, Accepted), NotQueued> {
    if shared.shutting_down.load(Ordering::SeqCst) {
        return Err(NotQueued::new(
            "shutting_down",
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting down\n",
        ));
    }
    if !secret_matches(shared, request.headers()) {
        return Err(NotQueued::new(
            "unauthorized",
            StatusCode::UNAUTHORIZED,
            "unauthorized\n",
        ));
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(NotQueued::too_large());
    }
    let body = match tokio::time::timeout(
        shared.read_timeout,
        to_bytes(request.into_body(), MAX_BODY_BYTES),
    )
    .await
    {
        Err(_) => {
            return Err(NotQueued::new(
                "timeout",
                StatusCode::REQUEST_TIMEOUT,
                "read timeout\n",
            ));
        }
        Ok(Err(_)) => return Err(NotQueued::too_large()),
        Ok(Ok(b)) => b,
    };
    let ignored = || NotQueued::new("ignored", StatusCode::NO_CONTENT, "");
    let nudge = match webhook::read(kind, &body) {
        Reading::Malformed(why) => {
            return Err(NotQueued::new(
                "bad_request",
                StatusCode::BAD_REQUEST,
                format!("{why}\n"),
            ));
        }
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
    let accepted = {
        let now = shared.now_ms();
        let mut c = shared.lock();
        let r = c.event((index, nudge.iid), now);
        shared.queue_gauge(c.len());
        r
    };
    match accepted {
        Ok(how) => Ok((nudge, how)),
        Err(Full) => Err(NotQueued::new(
            "queue_full",
            StatusCode::SERVICE_UNAVAILABLE,
            "queue full; the sweep will heal this MR\n",
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
            tokio::spawn(classify(shared.clone(), key));
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

async fn classify(shared: Arc<Shared>, key: (usize, u64)) {
    let (index, iid) = key;
    let permit = shared.workers.acquire().await;
    let worker = shared.clone();
    let examined = tokio::task::spawn_blocking(move || {
        let project = &worker.projects[index];
        examine_iid(
            project.forge.as_ref(),
            worker.bot,
            iid,
            now_ts(),
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
            shared.record("webhook", &examined.report);
            log_examination(&shared, "webhook", index, &examined.report);
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
        let now = now_ts();
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
            sweep_shared(
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
