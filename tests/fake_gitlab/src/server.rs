//! Listener, connection threads, request pipeline (log, faults, auth) and the control routes.

use std::collections::HashMap;
use std::io::BufReader;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::api;
use crate::faults::{FaultAction, FaultRule, HoldApply};
use crate::http::{self, Outcome, RawRequest, Response};
use crate::model::State;
use crate::route::{self, RouteKind};

/// One API request as the fake saw it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LoggedRequest {
    /// 0-based arrival order.
    pub seq: u64,
    /// The HTTP method.
    pub method: String,
    /// Raw path, still percent-encoded, without the query.
    pub path: String,
    /// Raw query string (without `?`), empty when none.
    pub query: String,
    /// The route the path was recognised as.
    pub route: RouteKind,
    /// True for any method other than GET/HEAD.
    pub write: bool,
    /// Status answered; `None` while in flight or when the connection was closed/reset.
    pub status: Option<u16>,
    /// Name of the fault that fired, if any (`rate_limit_text`, `lost_ack`, ...).
    pub fault: Option<String>,
    /// Authenticated user, if any.
    pub user_id: Option<u64>,
    /// The request's headers, in order.
    pub headers: Vec<(String, String)>,
    /// The request's body, as text.
    pub body: String,
}

impl LoggedRequest {
    /// The value of header `name` (any case) as the client sent it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The percent-decoded value of query parameter `key`.
    pub fn query_param(&self, key: &str) -> Option<String> {
        form_urlencoded::parse(self.query.as_bytes())
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    }

    /// The form-encoded body's pairs, percent-decoded, in order.
    pub fn form(&self) -> Vec<(String, String)> {
        form_urlencoded::parse(self.body.as_bytes())
            .into_owned()
            .collect()
    }
}

pub(crate) struct Inner {
    pub state: State,
    pub log: Vec<LoggedRequest>,
    pub violations: Vec<String>,
    pub faults: Vec<(FaultRule, u64)>,
    /// Open windows of `WindowLimit` rules, by rule index: when the window opened and how
    /// many requests it let through.
    pub windows: HashMap<usize, (Instant, u64)>,
    pub writes_arrived: u64,
    pub held: usize,
    pub release_epoch: u64,
}

pub(crate) struct Shared {
    pub inner: Mutex<Inner>,
    pub cv: Condvar,
    pub stop: AtomicBool,
    pub conns: Mutex<HashMap<u64, TcpStream>>,
    pub conn_seq: AtomicU64,
    pub hooks: crate::hooks::HooksCell,
    /// The token the web pages' forms carry (drawn at start, see `web`).
    pub web_token: String,
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) fn new_shared(mut state: State) -> Arc<Shared> {
    state.normalize();
    Arc::new(Shared {
        inner: Mutex::new(Inner {
            state,
            log: vec![],
            violations: vec![],
            faults: vec![],
            windows: HashMap::new(),
            writes_arrived: 0,
            held: 0,
            release_epoch: 0,
        }),
        cv: Condvar::new(),
        stop: AtomicBool::new(false),
        conns: Mutex::new(HashMap::new()),
        conn_seq: AtomicU64::new(0),
        hooks: Default::default(),
        web_token: crate::hooks::new_uuid(),
    })
}

pub(crate) fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        let _ = stream.set_nodelay(true);
        let id = shared.conn_seq.fetch_add(1, Ordering::SeqCst);
        if let Ok(clone) = stream.try_clone() {
            shared.conns.lock().unwrap().insert(id, clone);
        }
        let sh = shared.clone();
        std::thread::spawn(move || {
            connection(&sh, stream, id);
            sh.conns.lock().unwrap().remove(&id);
        });
    }
}

fn connection(shared: &Arc<Shared>, stream: TcpStream, id: u64) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    loop {
        let req = match http::read_request(&mut reader, &mut writer) {
            Ok(Some(r)) => r,
            _ => return,
        };
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let keep_alive = req.keep_alive;
        let head = req.method == "HEAD";
        let write = !matches!(req.method.as_str(), "GET" | "HEAD");
        let outcome = handle(shared, req);
        if write {
            crate::hooks::after_change(shared);
        }
        match outcome {
            Outcome::Respond(resp) => {
                if http::write_response(&mut writer, &resp, keep_alive, head).is_err()
                    || !keep_alive
                {
                    return;
                }
            }
            Outcome::Close => {
                let _ = writer.shutdown(std::net::Shutdown::Both);
                return;
            }
            Outcome::Reset => {
                http::reset(&writer);
                shared.conns.lock().unwrap().remove(&id);
                drop(reader);
                drop(writer);
                return;
            }
        }
    }
}

fn fault_name(a: &FaultAction) -> &'static str {
    match a {
        FaultAction::RateLimitText { .. } => "rate_limit_text",
        FaultAction::RateLimitJson { .. } => "rate_limit_json",
        FaultAction::ServerError => "server_error",
        FaultAction::Forbidden => "forbidden",
        FaultAction::BadGateway => "bad_gateway",
        FaultAction::Unavailable => "unavailable",
        FaultAction::Refuse { .. } => "refuse",
        FaultAction::Latency { .. } => "latency",
        FaultAction::LostAck { .. } => "lost_ack",
        FaultAction::Reset => "reset",
        FaultAction::Hold { .. } => "hold",
        FaultAction::Redirect { .. } => "redirect",
        FaultAction::WindowLimit { .. } => "window_limit",
        FaultAction::Reply { .. } => "reply",
        FaultAction::Headers { .. } => "headers",
    }
}

/// One firing [`FaultAction::Headers`] rule: the headers it sets and those it removes.
type HeaderEdit = (Vec<(String, String)>, Vec<String>);

/// The header edits of the firing [`FaultAction::Headers`] rules, in rule order.
#[derive(Default)]
struct HeaderEdits(Vec<HeaderEdit>);

impl HeaderEdits {
    fn apply(&self, resp: &mut Response) {
        for (set, remove) in &self.0 {
            resp.headers
                .retain(|(k, _)| !remove.iter().any(|r| r.eq_ignore_ascii_case(k)));
            for (name, value) in set {
                resp.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
                resp.headers.push((name.clone(), value.clone()));
            }
        }
    }
}

/// A `WindowLimit` rule's window as one request found it.
struct Window {
    /// Requests let through in the window, this one included when it was.
    used: u64,
    /// Time left until the window closes.
    left: Duration,
}

impl Window {
    /// `RateLimit-*` headers as GitLab.com sends them.
    fn headers(&self, limit: u64) -> Vec<(String, String)> {
        let reset_ms = crate::time::system_ms() + self.left.as_millis() as i64;
        vec![
            ("RateLimit-Limit".into(), limit.to_string()),
            (
                "RateLimit-Remaining".into(),
                limit.saturating_sub(self.used).to_string(),
            ),
            (
                "RateLimit-Reset".into(),
                (reset_ms.div_euclid(1000) + 1).to_string(),
            ),
        ]
    }

    /// Whole seconds until the window closes, rounded up (at least 1).
    fn retry_after(&self) -> String {
        self.left.as_millis().div_ceil(1000).max(1).to_string()
    }
}

/// Counts one request against rule `index`'s fixed window; true when the window admits it.
fn window_admits(
    windows: &mut HashMap<usize, (Instant, u64)>,
    index: usize,
    limit: u64,
    window_ms: u64,
) -> (bool, Window) {
    let now = Instant::now();
    let length = Duration::from_millis(window_ms);
    let (opened, used) = windows.entry(index).or_insert((now, 0));
    if now.duration_since(*opened) >= length {
        *opened = now;
        *used = 0;
    }
    let allowed = *used < limit;
    if allowed {
        *used += 1;
    }
    let left = length.saturating_sub(now.duration_since(*opened));
    (allowed, Window { used: *used, left })
}

fn html(status: u16, title: &str) -> Response {
    Response::bytes(
        status,
        "text/html",
        format!(
            "<!DOCTYPE html>\n<html>\n<head><title>{title}</title></head>\n<body>\n<center><h1>{title}</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n"
        )
        .into_bytes(),
    )
}

fn set_status(shared: &Shared, seq: u64, status: Option<u16>) {
    let mut g = shared.lock();
    if let Some(e) = g.log.get_mut(seq as usize) {
        e.status = status;
    }
    drop(g);
    shared.cv.notify_all();
}

/// Blocks until the tests release holds, the server stops or `timeout_ms` pass.
fn hold(shared: &Shared, timeout_ms: Option<u64>) {
    let deadline = timeout_ms.map(|t| Instant::now() + Duration::from_millis(t));
    let mut g = shared.lock();
    let epoch = g.release_epoch;
    g.held += 1;
    shared.cv.notify_all();
    loop {
        if g.release_epoch != epoch || shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let wait = match deadline {
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    break;
                }
                (d - now).min(Duration::from_millis(100))
            }
            None => Duration::from_millis(100),
        };
        g = shared
            .cv
            .wait_timeout(g, wait)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    g.held -= 1;
    drop(g);
    shared.cv.notify_all();
}

pub(crate) fn handle(shared: &Shared, req: RawRequest) -> Outcome {
    let (raw_path, query) = match req.target.split_once('?') {
        Some((p, q)) => (p.to_string(), q.to_string()),
        None => (req.target.clone(), String::new()),
    };
    if raw_path.starts_with("/__fake/") {
        return Outcome::Respond(control(shared, &req, &raw_path, &query));
    }
    if let Some(page) = crate::web::handle(shared, &req, &raw_path) {
        return Outcome::Respond(page);
    }
    let route = route::parse(&raw_path);
    let write = !matches!(req.method.as_str(), "GET" | "HEAD");

    // Log arrival and pick the faults that fire.
    let (seq, latency, action, limit_headers, edits) = {
        let mut g = shared.lock();
        let g = &mut *g;
        let seq = g.log.len() as u64;
        g.log.push(LoggedRequest {
            seq,
            method: req.method.clone(),
            path: raw_path.clone(),
            query: query.clone(),
            route: route.kind,
            write,
            status: None,
            fault: None,
            user_id: None,
            headers: req.headers.clone(),
            body: String::from_utf8_lossy(&req.body).into_owned(),
        });
        if write {
            g.writes_arrived += 1;
        }
        let mut latency = 0;
        let mut action: Option<FaultAction> = None;
        let mut names = vec![];
        let mut limit_headers: Vec<(String, String)> = vec![];
        let mut edits = HeaderEdits::default();
        for (index, (rule, count)) in g.faults.iter_mut().enumerate() {
            if !rule.matches(&req.method, &raw_path, &query, route.kind) {
                continue;
            }
            *count += 1;
            if !rule.when.accepts(*count) {
                continue;
            }
            match &rule.action {
                FaultAction::Latency { ms } => {
                    latency += ms;
                    names.push("latency");
                }
                FaultAction::Headers { set, remove } => {
                    edits.0.push((set.clone(), remove.clone()));
                    names.push("headers");
                }
                FaultAction::WindowLimit {
                    limit,
                    window_ms,
                    headers,
                } => {
                    let (allowed, window) =
                        window_admits(&mut g.windows, index, *limit, *window_ms);
                    if *headers {
                        limit_headers = window.headers(*limit);
                    }
                    if !allowed && action.is_none() {
                        names.push(fault_name(&rule.action));
                        action = Some(rule.action.clone());
                        limit_headers.push(("Retry-After".into(), window.retry_after()));
                    }
                }
                a if action.is_none() => {
                    names.push(fault_name(a));
                    action = Some(a.clone());
                }
                _ => {}
            }
        }
        if !names.is_empty() {
            g.log[seq as usize].fault = Some(names.join("+"));
        }
        shared.cv.notify_all();
        (seq, latency, action, limit_headers, edits)
    };
    if latency > 0 {
        std::thread::sleep(Duration::from_millis(latency));
    }

    let host = req.header("host").unwrap_or("127.0.0.1").to_string();
    let now_secs = crate::time::system_ms() / 1000;
    let early = match &action {
        Some(FaultAction::RateLimitText { retry_after }) => Some(
            Response::bytes(429, "text/plain", b"Retry later\n".to_vec())
                .header("Retry-After", retry_after.to_string())
                .header("RateLimit-Name", "throttle_authenticated_api")
                .header("RateLimit-Limit", "60")
                .header("RateLimit-Observed", "61")
                .header("RateLimit-Remaining", "0")
                .header(
                    "RateLimit-Reset",
                    (now_secs + *retry_after as i64).to_string(),
                ),
        ),
        Some(FaultAction::RateLimitJson { retry_after }) => Some(
            Response::message(
                429,
                "This endpoint has been requested too many times. Try again later.",
            )
            .header("Retry-After", retry_after.to_string()),
        ),
        Some(FaultAction::ServerError) => Some(Response::message(500, "500 Internal Server Error")),
        Some(FaultAction::Forbidden) => Some(Response::message(403, "403 Forbidden")),
        Some(FaultAction::BadGateway) => Some(html(502, "502 Bad Gateway")),
        Some(FaultAction::Unavailable) => Some(html(503, "503 Service Temporarily Unavailable")),
        Some(FaultAction::Refuse { status, body }) => Some(Response::json(*status, body)),
        Some(FaultAction::WindowLimit { .. }) => Some(Response::message(
            429,
            "This endpoint has been requested too many times. Try again later.",
        )),
        Some(FaultAction::Redirect { location }) => {
            let loc = location
                .clone()
                .unwrap_or_else(|| format!("http://{host}/moved{}", req.target));
            Some(Response::message(301, "301 Moved Permanently").header("Location", loc))
        }
        Some(FaultAction::Reply {
            status,
            headers,
            body,
        }) => Some(Response {
            status: *status,
            headers: headers.clone(),
            body: body.clone().into_bytes(),
        }),
        _ => None,
    };
    if let Some(mut resp) = early {
        resp.headers.extend(limit_headers);
        edits.apply(&mut resp);
        set_status(shared, seq, Some(resp.status));
        return Outcome::Respond(resp);
    }
    match &action {
        Some(FaultAction::Reset) => {
            set_status(shared, seq, None);
            return Outcome::Reset;
        }
        Some(FaultAction::Hold {
            apply: HoldApply::Never,
            timeout_ms,
        }) => {
            hold(shared, *timeout_ms);
            set_status(shared, seq, None);
            return Outcome::Close;
        }
        Some(FaultAction::Hold {
            apply: HoldApply::Before,
            timeout_ms,
        }) => hold(shared, *timeout_ms),
        _ => {}
    }

    let mut resp = {
        let mut g = shared.lock();
        let inner = &mut *g;
        let (resp, user) = match raw_path.strip_prefix(crate::lfs_storage::STORAGE_LFS_PREFIX) {
            // Object storage, not GitLab: no token is asked for, and one presented is noted.
            Some(oid) => (
                crate::lfs_storage::serve(&inner.state, &mut inner.violations, &req, oid),
                None,
            ),
            None => api::dispatch(inner, &req, &route, &raw_path, &query, &host),
        };
        inner.log[seq as usize].user_id = user;
        resp
    };
    resp.headers.extend(limit_headers);
    shared.cv.notify_all();

    match &action {
        Some(FaultAction::LostAck { close }) => {
            if *close {
                set_status(shared, seq, None);
                return Outcome::Close;
            }
            let mut r = Response::message(500, "500 Internal Server Error");
            edits.apply(&mut r);
            set_status(shared, seq, Some(500));
            return Outcome::Respond(r);
        }
        Some(FaultAction::Hold {
            apply: HoldApply::After,
            timeout_ms,
        }) => hold(shared, *timeout_ms),
        _ => {}
    }
    edits.apply(&mut resp);
    set_status(shared, seq, Some(resp.status));
    Outcome::Respond(resp)
}

fn control(shared: &Shared, req: &RawRequest, raw_path: &str, _query: &str) -> Response {
    let body = String::from_utf8_lossy(&req.body);
    match (req.method.as_str(), raw_path) {
        ("GET", "/__fake/state") => {
            let g = shared.lock();
            Response::json(200, &serde_json::to_value(&g.state).expect("state"))
        }
        ("GET", "/__fake/transcript") => {
            let g = shared.lock();
            Response::bytes(
                200,
                "text/plain; charset=utf-8",
                crate::sandbox::transcript(&g.state).into_bytes(),
            )
        }
        ("GET", "/__fake/log") => {
            let g = shared.lock();
            Response::json(
                200,
                &serde_json::json!({ "requests": g.log, "violations": g.violations }),
            )
        }
        ("POST", "/__fake/log/reset") => {
            let mut g = shared.lock();
            g.log.clear();
            g.violations.clear();
            g.writes_arrived = 0;
            Response::json(200, &serde_json::json!({}))
        }
        ("POST", "/__fake/faults") => match serde_json::from_str::<FaultRule>(&body) {
            Ok(rule) => {
                let mut g = shared.lock();
                g.faults.push((rule, 0));
                Response::json(201, &serde_json::json!({ "index": g.faults.len() - 1 }))
            }
            Err(e) => Response::error(400, &e.to_string()),
        },
        ("DELETE", "/__fake/faults") => {
            let mut g = shared.lock();
            g.faults.clear();
            g.windows.clear();
            Response::json(200, &serde_json::json!({}))
        }
        ("POST", "/__fake/push") => crate::web::push(shared, &req.body),
        ("POST", "/__fake/release") => {
            shared.lock().release_epoch += 1;
            shared.cv.notify_all();
            Response::json(200, &serde_json::json!({}))
        }
        _ => Response::message(404, "404 Not Found"),
    }
}
