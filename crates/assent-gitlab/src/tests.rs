//! Loopback tests of the adapter: small `tiny_http` servers play GitLab.

use std::io::Read;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::*;
use assent_core::model::MergeRequestState;
use assent_forge::{Forge, ForgeError, Repository, RepositoryFiles, RequestCounts};

const TOKEN: &str = "glpat-SuperSecretToken123";

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    /// Raw request target: path and query, as sent (not decoded).
    url: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn path(&self) -> &str {
        self.url.split('?').next().unwrap_or_default()
    }

    fn query(&self, key: &str) -> Option<String> {
        let query = self.url.split_once('?').map(|(_, q)| q).unwrap_or_default();
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server does with one request.
enum Reply {
    Respond {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
}

fn json_reply(status: u16, value: Value) -> Reply {
    Reply::Respond {
        status,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: value.to_string().into_bytes(),
    }
}

fn reply_with(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    Reply::Respond {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        body: body.as_bytes().to_vec(),
    }
}

/// The context a handler sees: the request, its index (0-based) and the server's origin.
struct Hit<'a> {
    req: &'a Seen,
    index: usize,
    origin: &'a str,
}

type Handler = dyn Fn(&Hit<'_>) -> Reply + Send + Sync;

struct Server {
    origin: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(handler: impl Fn(&Hit<'_>) -> Reply + Send + Sync + 'static) -> Server {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let port = server.server_addr().to_ip().unwrap().port();
        let origin = format!("http://127.0.0.1:{port}");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Box<Handler> = Box::new(handler);
        let thread = {
            let (server, seen, origin) = (server.clone(), seen.clone(), origin.clone());
            std::thread::spawn(move || {
                for mut request in server.incoming_requests() {
                    let mut body = String::new();
                    let _ = request.as_reader().read_to_string(&mut body);
                    let record = Seen {
                        method: request.method().as_str().to_owned(),
                        url: request.url().to_owned(),
                        headers: request
                            .headers()
                            .iter()
                            .map(|h| {
                                (
                                    h.field.as_str().as_str().to_owned(),
                                    h.value.as_str().to_owned(),
                                )
                            })
                            .collect(),
                        body,
                    };
                    let index = {
                        let mut seen = seen.lock().unwrap();
                        seen.push(record.clone());
                        seen.len() - 1
                    };
                    match handler(&Hit {
                        req: &record,
                        index,
                        origin: &origin,
                    }) {
                        Reply::Respond {
                            status,
                            headers,
                            body,
                        } => {
                            let mut response =
                                tiny_http::Response::from_data(body).with_status_code(status);
                            for (k, v) in headers {
                                response.add_header(
                                    tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes())
                                        .unwrap(),
                                );
                            }
                            let _ = request.respond(response);
                        }
                    }
                }
            })
        };
        Server {
            origin,
            seen,
            server,
            thread: Some(thread),
        }
    }

    fn api_url(&self) -> String {
        format!("{}/api/v4", self.origin)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A bare TCP server for what tiny_http cannot do: per connection, read one request, then
/// either close the socket without a byte of answer (`None`) or answer 200 with the JSON text.
struct RawServer {
    origin: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl RawServer {
    fn start(script: Vec<Option<&'static str>>) -> RawServer {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for answer in script {
                let Ok((stream, _)) = listener.accept() else {
                    return;
                };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                reader.read_line(&mut request_line).unwrap();
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    if line.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':')
                        && k.eq_ignore_ascii_case("content-length")
                    {
                        length = v.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                seen.lock().unwrap().push(request_line.trim().to_owned());
                let mut stream = stream;
                match answer {
                    None => {
                        let _ = stream.shutdown(std::net::Shutdown::Both);
                    }
                    Some(json) => {
                        let _ = write!(
                            stream,
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
                            json.len()
                        );
                    }
                }
            }
        });
        RawServer { origin, requests }
    }

    fn api_url(&self) -> String {
        format!("{}/api/v4", self.origin)
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

#[derive(Default)]
struct RecordingSleeper(Mutex<Vec<Duration>>);

impl Sleeper for RecordingSleeper {
    fn sleep(&self, delay: Duration) {
        self.0.lock().unwrap().push(delay);
    }
}

impl RecordingSleeper {
    fn delays(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

fn config(server: &Server) -> GitLabConfig {
    let mut config = GitLabConfig::new(server.api_url(), Token::new(TOKEN), "group/sub/proj");
    config.proxy = ProxyConfig::Direct;
    config.connect_timeout = Duration::from_secs(2);
    config.request_timeout = Duration::from_secs(3);
    config
}

fn forge_with(config: GitLabConfig) -> (GitLabForge, Arc<RecordingSleeper>) {
    let sleeper = Arc::new(RecordingSleeper::default());
    (
        GitLabForge::with_sleeper(config, 7, sleeper.clone()).unwrap(),
        sleeper,
    )
}

fn forge(server: &Server) -> (GitLabForge, Arc<RecordingSleeper>) {
    forge_with(config(server))
}

fn forge_at(api_url: &str) -> (GitLabForge, Arc<RecordingSleeper>) {
    let mut config = GitLabConfig::new(api_url, Token::new(TOKEN), "group/sub/proj");
    config.proxy = ProxyConfig::Direct;
    config.request_timeout = Duration::from_secs(3);
    forge_with(config)
}

const MR: &str = "/api/v4/projects/group%2Fsub%2Fproj/merge_requests/7";

fn discussion(i: usize) -> Value {
    json!({
        "id": format!("{i:040x}"),
        "individual_note": false,
        "notes": [{"id": 1000 + i, "body": format!("note {i}"), "author": {"id": 5}, "system": false,
                   "resolvable": true, "resolved": false, "updated_at": "2024-01-01T00:00:00Z"}]
    })
}

#[derive(Clone, Copy)]
enum Paging {
    /// `X-Next-Page` (empty on the last page), with totals, and a lying `X-Total-Pages: 1`.
    NextPage,
    /// `X-Next-Page` without any totals (GitLab above 10,000 items).
    NextPageNoTotals,
    /// `Link` only, `rel="next"` on every full page (so a multiple of 100 ends on an empty page).
    LinkOnly,
}

/// A server listing `total` discussions.
fn paged_server(total: usize, paging: Paging) -> Server {
    Server::start(move |hit| {
        let page: usize = hit
            .req
            .query("page")
            .and_then(|p| p.parse().ok())
            .unwrap_or(1);
        let per_page: usize = hit
            .req
            .query("per_page")
            .and_then(|p| p.parse().ok())
            .unwrap_or(20);
        let start = (page - 1) * per_page;
        let items: Vec<Value> = (start..total.min(start + per_page))
            .map(discussion)
            .collect();
        let has_next = start + per_page < total;
        let mut headers: Vec<(String, String)> =
            vec![("Content-Type".into(), "application/json".into())];
        match paging {
            Paging::NextPage | Paging::NextPageNoTotals => {
                let next = if has_next {
                    (page + 1).to_string()
                } else {
                    String::new()
                };
                headers.push(("X-Next-Page".into(), next));
                headers.push(("X-Page".into(), page.to_string()));
                if let Paging::NextPage = paging {
                    headers.push(("X-Total".into(), total.to_string()));
                    headers.push(("X-Total-Pages".into(), "1".into()));
                }
            }
            Paging::LinkOnly => {
                let mut links = vec![format!(
                    "<{}{}/discussions?page=1&per_page={per_page}>; rel=\"first\"",
                    hit.origin, MR
                )];
                if items.len() == per_page {
                    links.push(format!(
                        "<{}{}/discussions?page={}&per_page={per_page}>; rel=\"next\"",
                        hit.origin,
                        MR,
                        page + 1
                    ));
                }
                headers.push(("Link".into(), links.join(", ")));
            }
        }
        Reply::Respond {
            status: 200,
            headers,
            body: Value::Array(items).to_string().into_bytes(),
        }
    })
}

#[test]
fn pagination_returns_every_item_for_edge_counts() {
    for paging in [Paging::NextPage, Paging::NextPageNoTotals, Paging::LinkOnly] {
        for total in [0usize, 1, 100, 101, 200, 250] {
            let server = paged_server(total, paging);
            let (forge, _) = forge(&server);
            let listed = forge.list_discussions().unwrap();
            let ids: Vec<u64> = listed.iter().map(|d| d.notes[0].id).collect();
            let expected: Vec<u64> = (0..total as u64).map(|i| 1000 + i).collect();
            assert_eq!(ids, expected, "total {total}");
            let seen = server.seen();
            let pages = match paging {
                Paging::LinkOnly => total / 100 + 1,
                _ => total.div_ceil(100).max(1),
            };
            assert_eq!(seen.len(), pages, "total {total}: pages fetched");
            assert!(
                seen.iter()
                    .all(|s| s.query("per_page").as_deref() == Some("100"))
            );
            assert_eq!(
                forge.request_counts(),
                RequestCounts {
                    reads: pages as u64,
                    writes: 0
                }
            );
        }
    }
}

#[test]
fn a_page_failing_after_retries_fails_the_whole_listing() {
    let server = Server::start(|hit| {
        if hit.req.query("page").is_none() {
            let items: Vec<Value> = (0..100).map(discussion).collect();
            Reply::Respond {
                status: 200,
                headers: vec![("X-Next-Page".into(), "2".into())],
                body: Value::Array(items).to_string().into_bytes(),
            }
        } else {
            json_reply(500, json!({"message": "500 Internal Server Error"}))
        }
    });
    let (forge, sleeper) = forge(&server);
    let err = forge.list_discussions().unwrap_err();
    // A forge failure (exit 3), not "GitLab says the listing is incomplete".
    assert!(
        matches!(err, ForgeError::Status { status: 500, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("(page 2)"), "{err}");
    assert!(
        err.to_string().contains("500 Internal Server Error"),
        "{err}"
    );
    assert_eq!(server.seen().len(), 1 + 5);
    assert_eq!(sleeper.delays().len(), 4);
}

#[test]
fn a_full_page_without_pagination_headers_is_incomplete_but_a_short_one_is_last() {
    let full = Server::start(|_| json_reply(200, Value::Array((0..100).map(discussion).collect())));
    let err = forge(&full).0.list_discussions().unwrap_err();
    assert!(
        matches!(err, ForgeError::IncompleteListing { .. }),
        "{err:?}"
    );
    let short = Server::start(|_| json_reply(200, Value::Array((0..99).map(discussion).collect())));
    assert_eq!(forge(&short).0.list_discussions().unwrap().len(), 99);
}

#[test]
fn a_next_link_to_another_origin_is_not_followed() {
    let other = Server::start(|_| json_reply(200, json!([])));
    let target = format!("{}/api/v4/steal?page=2", other.origin);
    let server = Server::start(move |_| {
        reply_with(
            200,
            &[("Link", &format!("<{target}>; rel=\"next\""))],
            &Value::Array((0..100).map(discussion).collect()).to_string(),
        )
    });
    let err = forge(&server).0.list_discussions().unwrap_err();
    assert!(
        matches!(err, ForgeError::IncompleteListing { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("another origin"), "{err}");
    assert!(other.seen().is_empty());
}

#[test]
fn pagination_is_capped_and_loops_are_caught() {
    let server = Server::start(|hit| {
        let page: u64 = hit
            .req
            .query("page")
            .and_then(|p| p.parse().ok())
            .unwrap_or(1);
        reply_with(
            200,
            &[("X-Next-Page", &(page + 1).to_string())],
            &Value::Array((0..100).map(discussion).collect()).to_string(),
        )
    });
    let mut config = config(&server);
    config.max_pages = 3;
    let err = forge_with(config).0.list_discussions().unwrap_err();
    assert!(
        matches!(err, ForgeError::IncompleteListing { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("more than 3 pages"), "{err}");
    assert_eq!(server.seen().len(), 3);

    let looping = Server::start(|_| {
        reply_with(
            200,
            &[("X-Next-Page", "1")],
            &Value::Array((0..100).map(discussion).collect()).to_string(),
        )
    });
    let err = forge(&looping).0.list_discussions().unwrap_err();
    assert!(err.to_string().contains("loop"), "{err}");
}

#[test]
fn rate_limits_in_both_gitlab_forms_are_honoured() {
    // Plain-text form with Retry-After, then the RateLimit-Reset form, then the JSON
    // application-limit form without headers, then success.
    let reset = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 30;
    let server = Server::start(move |hit| match hit.index {
        0 => reply_with(
            429,
            &[("Retry-After", "7"), ("Content-Type", "text/plain")],
            "Retry later\n",
        ),
        1 => reply_with(
            429,
            &[("RateLimit-Reset", &reset.to_string())],
            "Retry later\n",
        ),
        2 => json_reply(
            429,
            json!({"message": "This endpoint has been requested too many times. Try again later."}),
        ),
        _ => json_reply(200, json!({"id": 77, "username": "assent-bot"})),
    });
    let (forge, sleeper) = forge(&server);
    assert_eq!(forge.bot_user_id().unwrap(), 77);
    let delays = sleeper.delays();
    assert_eq!(delays.len(), 3);
    assert_eq!(delays[0], Duration::from_secs(7));
    assert!(
        delays[1] >= Duration::from_secs(27) && delays[1] <= Duration::from_secs(30),
        "{delays:?}"
    );
    // No server delay: full-jitter backoff under the third retry's ceiling (4 × 500 ms).
    assert!(delays[2] <= Duration::from_secs(2), "{delays:?}");
    assert_eq!(forge.request_counts().reads, 4);
}

#[test]
fn retry_after_is_capped() {
    let server = Server::start(|hit| match hit.index {
        0 => reply_with(429, &[("Retry-After", "86400")], "Retry later"),
        _ => json_reply(200, json!({"id": 1})),
    });
    let (forge, sleeper) = forge(&server);
    forge.bot_user_id().unwrap();
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(60)]);
}

#[test]
fn server_errors_and_html_502_are_retried_then_succeed() {
    let server = Server::start(|hit| match hit.index {
        0 => reply_with(
            502,
            &[("Content-Type", "text/html")],
            "<html><body><h1>502 Bad Gateway</h1></body></html>",
        ),
        1 => json_reply(503, json!({"message": "503 Service Unavailable"})),
        _ => json_reply(200, json!({"id": 9})),
    });
    let (forge, sleeper) = forge(&server);
    assert_eq!(forge.bot_user_id().unwrap(), 9);
    let delays = sleeper.delays();
    assert_eq!(delays.len(), 2);
    let policy = RetryPolicy::default();
    for (retry, delay) in delays.iter().enumerate() {
        assert!(
            *delay <= policy.base_delay * 2u32.pow(retry as u32),
            "{delays:?}"
        );
    }
    // Cached: a second call makes no request.
    assert_eq!(forge.bot_user_id().unwrap(), 9);
    assert_eq!(server.seen().len(), 3);
    assert_eq!(
        forge.request_counts(),
        RequestCounts {
            reads: 3,
            writes: 0
        }
    );
}

#[test]
fn a_dropped_connection_is_retried_for_reads() {
    let server = RawServer::start(vec![None, Some(r#"{"id": 4}"#)]);
    let (forge, sleeper) = forge_at(&server.api_url());
    assert_eq!(forge.bot_user_id().unwrap(), 4);
    assert_eq!(sleeper.delays().len(), 1);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_write_whose_connection_drops_is_ambiguous_and_not_retried() {
    let server = RawServer::start(vec![None]);
    let (forge, sleeper) = forge_at(&server.api_url());
    let err = forge.create_thread("x", None).unwrap_err();
    assert!(err.is_ambiguous_write(), "{err:?}");
    assert!(
        !err.to_string().contains("timeout"),
        "a real drop, not a timeout: {err}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].starts_with("POST "), "{requests:?}");
    assert_waited_for_the_write_to_settle(&sleeper.delays());
    assert_eq!(
        forge.request_counts(),
        RequestCounts {
            reads: 0,
            writes: 1
        }
    );
}

#[test]
fn exhausted_retries_name_method_route_status_and_message() {
    let server =
        Server::start(|_| reply_with(502, &[], "<html><title>502 Bad Gateway</title></html>"));
    let (forge, sleeper) = forge(&server);
    let err = forge.merge_request().unwrap_err();
    match &err {
        ForgeError::Status {
            method,
            route,
            status,
            message,
        } => {
            assert_eq!(method, "GET");
            assert_eq!(route, MR);
            assert_eq!(*status, 502);
            assert!(message.contains("502 Bad Gateway"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.seen().len(), 5);
    assert_eq!(sleeper.delays().len(), 4);
}

#[test]
fn client_errors_are_not_retried() {
    let server = Server::start(|_| json_reply(403, json!({"message": "403 Forbidden"})));
    let (forge, sleeper) = forge(&server);
    let err = forge.merge_request().unwrap_err();
    assert!(
        matches!(err, ForgeError::Status { status: 403, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("GET {MR}: HTTP 403: 403 Forbidden")
    );
    assert_eq!(server.seen().len(), 1);
    assert!(sleeper.delays().is_empty());
}

/// One wait, and only the rest of [`RetryPolicy::write_settle`]: the write was sent a moment
/// ago, so almost all of it remains.
fn assert_waited_for_the_write_to_settle(delays: &[Duration]) {
    let settle = RetryPolicy::default().write_settle;
    assert_eq!(delays.len(), 1, "{delays:?}");
    assert!(
        delays[0] <= settle && delays[0] > settle - Duration::from_secs(5),
        "{delays:?}"
    );
}

#[test]
fn failed_writes_are_ambiguous_and_never_retried() {
    // 429 is not among them: GitLab refuses it before acting (see the rate-limit tests).
    for (label, reply) in [
        (
            "500",
            json_reply(500, json!({"message": "500 Internal Server Error"})),
        ),
        ("502 html", reply_with(502, &[], "<html>Bad Gateway</html>")),
    ] {
        let reply = Arc::new(Mutex::new(Some(reply)));
        let server = Server::start(move |_| {
            reply
                .lock()
                .unwrap()
                .take()
                .unwrap_or_else(|| json_reply(201, json!({"id": 1})))
        });
        let (forge, sleeper) = forge(&server);
        let err = forge
            .create_note("<!-- assent:marker {} -->\nsummary")
            .unwrap_err();
        assert!(err.is_ambiguous_write(), "{label}: {err:?}");
        let seen = server.seen();
        assert_eq!(seen.len(), 1, "{label}: exactly one POST");
        assert_eq!(seen[0].method, "POST");
        assert_waited_for_the_write_to_settle(&sleeper.delays());
        assert_eq!(
            forge.request_counts(),
            RequestCounts {
                reads: 0,
                writes: 1
            },
            "{label}"
        );
    }
}

/// A server whose answers to POSTs follow `script` in order (then 201), and which answers
/// every GET with the bot user.
fn scripted_writes(script: Vec<Reply>) -> Server {
    let script = Arc::new(Mutex::new(std::collections::VecDeque::from(script)));
    Server::start(move |hit| {
        if hit.req.method == "GET" {
            return json_reply(200, json!({"id": 77, "username": "assent-bot"}));
        }
        script.lock().unwrap().pop_front().unwrap_or_else(|| {
            if hit.req.path().ends_with("/notes") {
                json_reply(201, json!({"id": 3}))
            } else {
                json_reply(
                    201,
                    json!({"id": "d".repeat(40), "notes": [{"id": 1}], "individual_note": false}),
                )
            }
        })
    })
}

fn posts(server: &Server) -> usize {
    server.seen().iter().filter(|r| r.method == "POST").count()
}

#[test]
fn a_write_refused_with_429_is_sent_again_after_the_wait_it_asks_for() {
    // Both of GitLab's forms: Rack::Attack's plain text, and the application limit's JSON
    // (note creation), each with Retry-After.
    for (label, refusal) in [
        (
            "text",
            reply_with(
                429,
                &[("Retry-After", "60"), ("Content-Type", "text/plain")],
                "Retry later\n",
            ),
        ),
        (
            "json",
            Reply::Respond {
                status: 429,
                headers: vec![
                    ("Content-Type".into(), "application/json".into()),
                    ("Retry-After".into(), "60".into()),
                ],
                body: json!({"message": "This endpoint has been requested too many times. Try again later."})
                    .to_string()
                    .into_bytes(),
            },
        ),
    ] {
        let server = scripted_writes(vec![refusal]);
        let (forge, sleeper) = forge(&server);
        let created = forge.create_thread("x", None).unwrap();
        assert_eq!(created.note_id, 1, "{label}");
        assert_eq!(posts(&server), 2, "{label}: the same write, sent again once");
        let seen = server.seen();
        assert_eq!(seen[0].body, seen[1].body, "{label}: the same write");
        // The wait GitLab asked for, and no write-settle wait: nothing was in flight.
        assert_eq!(sleeper.delays(), vec![Duration::from_secs(60)], "{label}");
        let tally = forge.client().rate_limits();
        assert_eq!(tally.refused_writes, 1, "{label}");
        assert_eq!(tally.waited, Duration::from_secs(60), "{label}");
        assert_eq!(forge.request_counts().writes, 2, "{label}");
    }
}

#[test]
fn a_429_without_a_delay_backs_off_boundedly_and_retry_after_zero_still_waits() {
    let json_429 = || {
        json_reply(
            429,
            json!({"message": "This endpoint has been requested too many times. Try again later."}),
        )
    };
    let server = scripted_writes(vec![
        json_429(),
        json_429(),
        reply_with(429, &[("Retry-After", "0")], "Retry later"),
        reply_with(429, &[("Retry-After", "3600")], "Retry later"),
    ]);
    let (forge, sleeper) = forge(&server);
    forge.create_note("summary").unwrap();
    assert_eq!(posts(&server), 5);
    let delays = sleeper.delays();
    assert_eq!(delays.len(), 4, "{delays:?}");
    // Backoff from 1 s doubling, over its upper half: never nothing.
    assert!(
        delays[0] >= Duration::from_millis(500) && delays[0] <= Duration::from_secs(1),
        "{delays:?}"
    );
    assert!(
        delays[1] >= Duration::from_secs(1) && delays[1] <= Duration::from_secs(2),
        "{delays:?}"
    );
    // Retry-After: 0 is taken as the shortest wait, an hour is capped at a minute.
    assert_eq!(delays[2], retry::MIN_WRITE_RATE_LIMIT_WAIT, "{delays:?}");
    assert_eq!(delays[3], Duration::from_secs(60), "{delays:?}");
}

#[test]
fn when_the_rate_limit_budget_is_spent_the_write_fails_as_rate_limited() {
    let server = Server::start(|hit| {
        if hit.req.method == "GET" {
            return json_reply(200, json!({"id": 77}));
        }
        reply_with(429, &[("Retry-After", "60")], "Retry later")
    });
    let mut config = config(&server);
    config.retry.rate_limit_budget = Duration::from_secs(150);
    let (forge, sleeper) = forge_with(config);
    let err = forge.create_thread("x", None).unwrap_err();
    match &err {
        ForgeError::RateLimited(refusal) => {
            assert_eq!(refusal.method, "POST");
            assert_eq!(refusal.next_wait, Duration::from_secs(60));
            assert_eq!(refusal.waited, Duration::from_secs(120));
            assert_eq!(refusal.budget, Duration::from_secs(150));
        }
        other => panic!("{other:?}"),
    }
    assert!(!err.is_ambiguous_write(), "nothing was written: {err}");
    let text = err.to_string();
    assert!(text.contains("rate limited"), "{text}");
    assert!(text.contains("(120 s waited of 150 s)"), "{text}");
    assert!(!text.contains(TOKEN), "{text}");
    // Two waits fitted; the third would not, so it was not started.
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(60); 2]);
    assert_eq!(posts(&server), 3);

    // The budget is the client's: a later write has none left to wait with.
    let err = forge.create_note("y").unwrap_err();
    assert!(err.is_rate_limited(), "{err:?}");
    assert_eq!(sleeper.delays().len(), 2);
}

#[test]
fn a_zero_budget_gives_up_on_the_first_429() {
    let server = scripted_writes(vec![reply_with(
        429,
        &[("Retry-After", "5")],
        "Retry later",
    )]);
    let mut config = config(&server);
    config.retry.rate_limit_budget = Duration::ZERO;
    let (forge, sleeper) = forge_with(config);
    let err = forge.create_note("x").unwrap_err();
    assert!(err.is_rate_limited(), "{err:?}");
    assert!(err.to_string().contains("(0 s waited of 0 s)"), "{err}");
    assert!(sleeper.delays().is_empty());
    assert_eq!(posts(&server), 1);
}

#[test]
fn read_waits_for_429_count_against_the_same_budget() {
    let server = Server::start(|hit| match hit.index {
        0 | 1 => reply_with(429, &[("Retry-After", "7")], "Retry later"),
        _ => json_reply(200, json!({"id": 77})),
    });
    let mut config = config(&server);
    config.retry.rate_limit_budget = Duration::from_secs(10);
    let (forge, sleeper) = forge_with(config);
    let err = forge.bot_user_id().unwrap_err();
    assert!(err.is_rate_limited(), "{err:?}");
    assert!(err.to_string().contains("(7 s waited of 10 s)"), "{err}");
    assert_eq!(sleeper.delays(), vec![Duration::from_secs(7)]);
    assert_eq!(server.seen().len(), 2);
}

#[test]
fn server_errors_on_writes_stay_ambiguous_and_spend_no_rate_limit_budget() {
    let server = scripted_writes(vec![json_reply(503, json!({"message": "busy"}))]);
    let (forge, _sleeper) = forge(&server);
    assert!(
        forge
            .create_thread("x", None)
            .unwrap_err()
            .is_ambiguous_write()
    );
    assert_eq!(posts(&server), 1);
    assert_eq!(forge.client().rate_limits(), RateLimitTally::default());
}

#[test]
fn writes_are_paced_when_ratelimit_remaining_says_the_window_is_spent() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let created = |remaining: u64, reset_in: u64| Reply::Respond {
        status: 201,
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("RateLimit-Limit".into(), "10".into()),
            ("RateLimit-Remaining".into(), remaining.to_string()),
            ("RateLimit-Reset".into(), (now + reset_in).to_string()),
        ],
        body: json!({"id": "d".repeat(40), "notes": [{"id": 1}]})
            .to_string()
            .into_bytes(),
    };
    let server = scripted_writes(vec![created(5, 40), created(0, 30), created(9, 60)]);
    let (forge, sleeper) = forge(&server);
    forge.create_thread("a", None).unwrap();
    forge.create_thread("b", None).unwrap();
    // Plenty left after the first: no wait before the second.
    assert!(sleeper.delays().is_empty(), "{:?}", sleeper.delays());
    // A read in between is not held.
    forge.bot_user_id().unwrap();
    assert!(sleeper.delays().is_empty(), "{:?}", sleeper.delays());
    forge.create_thread("c", None).unwrap();
    let delays = sleeper.delays();
    assert_eq!(delays.len(), 1, "{delays:?}");
    assert!(
        delays[0] >= Duration::from_secs(28) && delays[0] <= Duration::from_secs(30),
        "the third write waits for the window to reset: {delays:?}"
    );
    forge.create_thread("d", None).unwrap();
    assert_eq!(
        sleeper.delays().len(),
        1,
        "the window reset: no more pacing"
    );
    assert_eq!(posts(&server), 4, "pacing sends nothing twice");
    assert_eq!(forge.client().rate_limits().waited, delays[0]);
    assert_eq!(forge.client().rate_limits().refused_writes, 0);
}

#[test]
fn pacing_that_does_not_fit_the_budget_lets_gitlab_decide() {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let server = scripted_writes(vec![Reply::Respond {
        status: 201,
        headers: vec![
            ("RateLimit-Remaining".into(), "0".into()),
            ("RateLimit-Reset".into(), (now + 50).to_string()),
        ],
        body: json!({"id": 3}).to_string().into_bytes(),
    }]);
    let mut config = config(&server);
    config.retry.rate_limit_budget = Duration::from_secs(20);
    let (forge, sleeper) = forge_with(config);
    forge.create_note("a").unwrap();
    forge.create_note("b").unwrap();
    assert!(sleeper.delays().is_empty(), "{:?}", sleeper.delays());
    assert_eq!(posts(&server), 2);
}

#[test]
fn every_write_kind_is_ambiguous_on_a_server_error() {
    let server = Server::start(|_| json_reply(500, json!({"message": "boom"})));
    let (forge, _) = forge(&server);
    assert!(
        forge
            .create_thread("x", None)
            .unwrap_err()
            .is_ambiguous_write()
    );
    assert!(
        forge
            .reply_to_thread("abc", "x")
            .unwrap_err()
            .is_ambiguous_write()
    );
    assert!(
        forge
            .resolve_thread("abc")
            .unwrap_err()
            .is_ambiguous_write()
    );
    assert!(forge.edit_note(5, "x").unwrap_err().is_ambiguous_write());
    assert_eq!(server.seen().len(), 4);
    assert_eq!(
        forge.request_counts(),
        RequestCounts {
            reads: 0,
            writes: 4
        }
    );
}

#[test]
fn refused_writes_are_status_errors() {
    let server = Server::start(|_| {
        json_reply(
            400,
            json!({"message": {"body": ["is too long (maximum is 1000000 characters)"]}}),
        )
    });
    let (forge, _) = forge(&server);
    let err = forge.create_note("x").unwrap_err();
    match &err {
        ForgeError::Status {
            method,
            status: 400,
            message,
            ..
        } => {
            assert_eq!(method, "POST");
            assert!(message.contains("is too long"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_write_that_could_not_connect_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut config = GitLabConfig::new(
        format!("http://127.0.0.1:{port}/api/v4"),
        Token::new(TOKEN),
        "1",
    );
    config.proxy = ProxyConfig::Direct;
    let (forge, _) = forge_with(config);
    let err = forge.create_note("x").unwrap_err();
    assert!(
        matches!(
            err,
            ForgeError::Transport {
                cause: assent_forge::TransportFailure::ConnectFailed,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!err.to_string().contains(TOKEN));
}

#[test]
fn redirects_are_refused_and_never_followed() {
    let server = Server::start(|hit| {
        if hit.req.path() == "/elsewhere" {
            json_reply(200, json!({"id": 1}))
        } else {
            reply_with(
                301,
                &[("Location", &format!("{}/elsewhere?x=1", hit.origin))],
                "",
            )
        }
    });
    let (forge, sleeper) = forge(&server);
    let err = forge.bot_user_id().unwrap_err();
    match &err {
        ForgeError::Status {
            status: 301,
            message,
            ..
        } => {
            assert!(
                message.contains(&format!("{}/elsewhere", server.origin)),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert!(seen.iter().all(|s| s.path() != "/elsewhere"));
    assert!(sleeper.delays().is_empty());
    // Writes too.
    assert!(matches!(
        forge.create_note("x").unwrap_err(),
        ForgeError::Status { status: 301, .. }
    ));
    assert!(server.seen().iter().all(|s| s.path() != "/elsewhere"));
}

#[test]
fn the_token_is_only_ever_a_header() {
    // The server echoes the token back in error bodies, the worst case for error texts.
    let server = Server::start(|hit| match hit.index % 3 {
        0 => json_reply(
            401,
            json!({"message": format!("401 Unauthorized: bad token {TOKEN}")}),
        ),
        1 => reply_with(500, &[], &format!("<html>{TOKEN}</html>")),
        _ => json_reply(200, json!({"id": TOKEN})),
    });
    let mut config = config(&server);
    config.retry.max_attempts = 1;
    let (forge, _) = forge_with(config.clone());
    let mut errors = vec![
        forge.bot_user_id().unwrap_err(),
        forge.merge_request().unwrap_err(),
        forge.create_note("x").unwrap_err(),
        forge.list_discussions().unwrap_err(),
        forge.create_thread("x", None).unwrap_err(),
    ];
    errors.push(forge.reply_to_thread("abc", "x").unwrap_err());
    for err in &errors {
        assert!(!err.to_string().contains(TOKEN), "{err}");
        assert!(!format!("{err:?}").contains(TOKEN), "{err:?}");
    }
    assert!(!format!("{config:?}").contains(TOKEN));
    assert!(!format!("{forge:?}").contains(TOKEN));
    let seen = server.seen();
    assert!(!seen.is_empty());
    for s in &seen {
        assert!(!s.url.contains(TOKEN), "{}", s.url);
        assert_eq!(s.header("PRIVATE-TOKEN"), Some(TOKEN));
        assert_eq!(
            s.header("User-Agent"),
            Some(concat!("assent/", env!("CARGO_PKG_VERSION")))
        );
    }
}

#[test]
fn project_and_file_paths_are_single_encoded_segments() {
    let server = Server::start(|hit| {
        if hit.req.path().ends_with("/raw") {
            reply_with(200, &[], "retention: 7\n")
        } else {
            json_reply(
                200,
                json!({"name": "release/2.0", "commit": {"id": "c0ffee"}}),
            )
        }
    });
    let (forge, _) = forge(&server);
    let bytes = forge
        .read_file("abc123", "topics/a b/orders.yaml")
        .unwrap()
        .unwrap();
    assert_eq!(bytes, b"retention: 7\n");
    assert_eq!(forge.branch_head("release/2.0").unwrap(), "c0ffee");
    let seen = server.seen();
    assert_eq!(
        seen[0].path(),
        "/api/v4/projects/group%2Fsub%2Fproj/repository/files/topics%2Fa%20b%2Forders.yaml/raw"
    );
    assert_eq!(seen[0].query("ref").as_deref(), Some("abc123"));
    assert_eq!(
        seen[1].path(),
        "/api/v4/projects/group%2Fsub%2Fproj/repository/branches/release%2F2.0"
    );
}

#[test]
fn the_body_limit_is_enforced() {
    let server = Server::start(|_| reply_with(200, &[], &"x".repeat(5000)));
    let mut config = config(&server);
    config.body_limit = 4096;
    let (forge, sleeper) = forge_with(config);
    let err = forge.read_file("abc", "big.yaml").unwrap_err();
    assert!(matches!(err, ForgeError::Decode { .. }), "{err:?}");
    assert!(err.to_string().contains("4096-byte limit"), "{err}");
    assert_eq!(server.seen().len(), 1, "an over-limit body is not retried");
    assert!(sleeper.delays().is_empty());
    // At the limit exactly is fine.
    let server = Server::start(|_| reply_with(200, &[], &"x".repeat(4096)));
    let mut config = self::config(&server);
    config.body_limit = 4096;
    assert_eq!(
        forge_with(config)
            .0
            .read_file("abc", "f")
            .unwrap()
            .unwrap()
            .len(),
        4096
    );
}

#[test]
fn discussions_map_to_listed_notes_with_defaults() {
    let server = Server::start(|_| {
        json_reply(
            200,
            json!([
                {"id": "aaa", "individual_note": false, "notes": [
                    {"id": 11, "body": "first", "author": {"id": 5}, "system": false, "resolvable": true, "resolved": true,
                     "updated_at": "2024-05-01T10:00:00.000Z"},
                    {"id": 12, "body": "reply", "author": {"id": 6}, "system": false, "resolvable": true, "resolved": true}
                ]},
                {"id": "bbb", "individual_note": true, "notes": [
                    {"id": 13, "body": "plain", "author": {"id": 5}, "system": false}
                ]},
                {"id": "ccc", "individual_note": true, "notes": [
                    {"id": 14, "body": "resolved all threads", "author": {"id": 5}, "system": true, "resolvable": false, "resolved": null}
                ]}
            ]),
        )
    });
    let (forge, _) = forge(&server);
    let listed = forge.list_discussions().unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0].id, "aaa");
    assert!(!listed[0].individual_note);
    let first = &listed[0].notes[0];
    assert_eq!(
        (
            first.id,
            first.author_id,
            first.system,
            first.resolvable,
            first.resolved
        ),
        (11, 5, false, true, true)
    );
    assert_eq!(first.body, "first");
    assert_eq!(
        first.updated_at.as_deref(),
        Some("2024-05-01T10:00:00.000Z")
    );
    assert_eq!(listed[0].notes[1].updated_at, None);
    let plain = &listed[1].notes[0];
    assert!(listed[1].individual_note && !plain.resolvable && !plain.resolved);
    assert!(listed[2].notes[0].system);
    assert_eq!(server.seen()[0].path(), format!("{MR}/discussions"));
}

#[test]
fn writes_send_the_documented_requests() {
    let server = Server::start(|hit| match (hit.req.method.as_str(), hit.req.path()) {
        ("POST", p) if p == format!("{MR}/discussions") => json_reply(
            201,
            json!({"id": "d1", "individual_note": false, "notes": [{"id": 501, "body": "b"}]}),
        ),
        ("POST", p) if p == format!("{MR}/discussions/d1/notes") => {
            json_reply(201, json!({"id": 502}))
        }
        ("PUT", p) if p == format!("{MR}/discussions/d1") => {
            json_reply(200, json!({"id": "d1", "notes": []}))
        }
        ("POST", p) if p == format!("{MR}/notes") => json_reply(201, json!({"id": 503})),
        ("PUT", p) if p == format!("{MR}/notes/503") => json_reply(200, json!({"id": 503})),
        _ => json_reply(404, json!({"message": "404 Not Found"})),
    });
    let (forge, _) = forge(&server);
    let created = forge
        .create_thread("<!-- m -->\nRetention & days", None)
        .unwrap();
    assert_eq!(
        (created.discussion_id.as_str(), created.note_id),
        ("d1", 501)
    );
    assert_eq!(
        forge.reply_to_thread("d1", "outdated as of abc").unwrap(),
        502
    );
    forge.resolve_thread("d1").unwrap();
    assert_eq!(forge.create_note("summary").unwrap(), 503);
    forge.edit_note(503, "summary v2").unwrap();
    let seen = server.seen();
    assert_eq!(seen.len(), 5);
    let form = |s: &Seen| -> Vec<(String, String)> {
        url::form_urlencoded::parse(s.body.as_bytes())
            .into_owned()
            .collect()
    };
    assert_eq!(
        form(&seen[0]),
        vec![(
            "body".to_string(),
            "<!-- m -->\nRetention & days".to_string()
        )]
    );
    assert_eq!(
        seen[0].header("Content-Type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        form(&seen[1]),
        vec![("body".to_string(), "outdated as of abc".to_string())]
    );
    assert_eq!(seen[2].query("resolved").as_deref(), Some("true"));
    assert_eq!(
        form(&seen[4]),
        vec![("body".to_string(), "summary v2".to_string())]
    );
    assert_eq!(
        forge.request_counts(),
        RequestCounts {
            reads: 0,
            writes: 5
        }
    );
}

#[test]
fn an_undecodable_write_answer_is_ambiguous() {
    let server = Server::start(|_| reply_with(201, &[], "<html>created?</html>"));
    let (forge, _) = forge(&server);
    assert!(
        forge
            .create_thread("x", None)
            .unwrap_err()
            .is_ambiguous_write()
    );
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn merge_request_info_is_mapped() {
    let server = Server::start(|_| {
        json_reply(
            200,
            json!({"iid": 7, "state": "opened", "sha": "head1", "diff_refs": {"base_sha": "base1", "head_sha": "head1"},
                   "target_branch": "main", "head_pipeline": {"id": 3, "status": "running"},
                   "web_url": "https://gl.example/g/p/-/merge_requests/7"}),
        )
    });
    let (forge, _) = forge(&server);
    let mr = forge.merge_request().unwrap();
    assert_eq!(mr.state, MergeRequestState::Opened);
    assert_eq!(mr.head_sha, "head1");
    assert_eq!(mr.base_sha.as_deref(), Some("base1"));
    assert_eq!(mr.target_branch, "main");
    assert_eq!(mr.head_pipeline_status.as_deref(), Some("running"));
    assert_eq!(
        mr.web_url.as_deref(),
        Some("https://gl.example/g/p/-/merge_requests/7")
    );

    let bare = Server::start(|_| {
        json_reply(
            200,
            json!({"state": "merged", "sha": "h", "diff_refs": null, "target_branch": "main", "head_pipeline": null}),
        )
    });
    let mr = forge_with(config(&bare)).0.merge_request().unwrap();
    assert_eq!(mr.state, MergeRequestState::Merged);
    assert_eq!(
        (mr.base_sha, mr.head_pipeline_status, mr.web_url),
        (None, None, None)
    );
}

#[test]
fn changed_files_mark_withheld_diffs() {
    let server = Server::start(|_| {
        json_reply(
            200,
            json!([
                {"old_path": "a.yaml", "new_path": "a.yaml", "new_file": false, "renamed_file": false, "deleted_file": false, "diff": "@@"},
                {"old_path": "b.yaml", "new_path": "b.yaml", "new_file": true, "renamed_file": false, "deleted_file": false, "too_large": true, "diff": ""},
                {"old_path": "c.yaml", "new_path": "d.yaml", "new_file": false, "renamed_file": true, "deleted_file": false, "collapsed": true, "diff": ""}
            ]),
        )
    });
    let (forge, _) = forge(&server);
    let files = forge.changed_files().unwrap();
    assert_eq!(files.len(), 3);
    assert!(!files[0].withheld);
    assert!(files[1].withheld && files[1].new_file);
    assert!(files[2].withheld && files[2].renamed_file && files[2].new_path == "d.yaml");
    assert_eq!(server.seen()[0].path(), format!("{MR}/diffs"));
    assert_eq!(server.seen()[0].query("per_page").as_deref(), Some("100"));
}

#[test]
fn tree_lists_blobs_and_a_missing_dir_is_empty() {
    let server = Server::start(|hit| match hit.req.query("path").as_deref() {
        Some(".assent/policies") => json_reply(
            200,
            json!([
                {"id": "1", "name": "a.yaml", "type": "blob", "path": ".assent/policies/a.yaml", "mode": "100644"},
                {"id": "2", "name": "sub", "type": "tree", "path": ".assent/policies/sub", "mode": "040000"},
                {"id": "3", "name": "b.yml", "type": "blob", "path": ".assent/policies/sub/b.yml", "mode": "100644"},
                {"id": "4", "name": "mod", "type": "commit", "path": ".assent/policies/mod", "mode": "160000"}
            ]),
        ),
        Some("gone") => json_reply(404, json!({"message": "404 Tree Not Found"})),
        _ => json_reply(404, json!({"message": "404 Project Not Found"})),
    });
    let (forge, _) = forge(&server);
    assert_eq!(
        forge.list_tree("t1", "/.assent/policies/").unwrap(),
        vec![
            ".assent/policies/a.yaml".to_string(),
            ".assent/policies/sub/b.yml".to_string()
        ]
    );
    let seen = server.seen();
    assert_eq!(
        seen[0].path(),
        "/api/v4/projects/group%2Fsub%2Fproj/repository/tree"
    );
    assert_eq!(seen[0].query("ref").as_deref(), Some("t1"));
    assert_eq!(seen[0].query("recursive").as_deref(), Some("true"));
    assert_eq!(seen[0].body, "", "a GET carries no body");
    assert!(forge.list_tree("t1", "gone").unwrap().is_empty());
    // A project that is not there is an error, not an empty tree.
    assert!(forge.list_tree("t1", "other").is_err());
}

#[test]
fn missing_files_are_none_but_missing_projects_are_errors() {
    let server = Server::start(|hit| {
        if hit.req.path().contains("absent") {
            json_reply(404, json!({"message": "404 File Not Found"}))
        } else {
            json_reply(404, json!({"message": "404 Project Not Found"}))
        }
    });
    let (forge, _) = forge(&server);
    assert_eq!(forge.read_file("s", "absent.yaml").unwrap(), None);
    let err = forge.read_file("s", "x.yaml").unwrap_err();
    assert!(
        matches!(err, ForgeError::Status { status: 404, .. }),
        "{err:?}"
    );
}

#[test]
fn note_endpoint_reads_one_note() {
    let server = Server::start(|_| {
        json_reply(
            200,
            json!({"id": 42, "body": "b", "author": {"id": 3}, "system": false}),
        )
    });
    let (forge, _) = forge(&server);
    let note = forge.note(42).unwrap();
    assert_eq!((note.id, note.author_id, note.resolvable), (42, 3, false));
    assert_eq!(server.seen()[0].path(), format!("{MR}/notes/42"));
}

#[test]
fn configuration_errors_never_show_the_token() {
    let bad = |f: &dyn Fn(&mut GitLabConfig)| {
        let mut config = GitLabConfig::new("https://gl.example/api/v4", Token::new(TOKEN), "g/p");
        f(&mut config);
        let err = GitLabForge::new(config, 1).unwrap_err();
        assert!(!err.to_string().contains(TOKEN), "{err}");
        err
    };
    assert!(matches!(
        bad(&|c| c.api_url = "not a url".into()),
        GitLabConfigError::ApiUrl(_)
    ));
    assert!(matches!(
        bad(&|c| c.token = Token::new(format!("{TOKEN}\r\nX: y"))),
        GitLabConfigError::Token(_)
    ));
    assert!(matches!(
        bad(&|c| c.project = " ".into()),
        GitLabConfigError::Project(_)
    ));
    assert!(matches!(
        bad(&|c| c.ca_file = Some("/nonexistent/ca.pem".into())),
        GitLabConfigError::CaFile(_)
    ));
}

#[test]
fn a_ca_file_with_several_certificates_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ca.pem");
    // Two real roots from the public set, re-encoded as PEM.
    let pem: String = webpki_root_certs::TLS_SERVER_ROOT_CERTS[..2]
        .iter()
        .map(|der| pem_encode(der.as_ref()))
        .collect();
    std::fs::write(&path, pem).unwrap();
    let mut config = GitLabConfig::new("https://gl.example/api/v4", Token::new(TOKEN), "g/p");
    config.ca_file = Some(path.clone());
    GitLabForge::new(config.clone(), 1).unwrap();
    std::fs::write(&path, "no certificates here").unwrap();
    assert!(matches!(
        GitLabForge::new(config, 1).unwrap_err(),
        GitLabConfigError::CaFile(_)
    ));
}

fn pem_encode(der: &[u8]) -> String {
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in der.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    let lines: Vec<String> = out
        .as_bytes()
        .chunks(64)
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        lines.join("\n")
    )
}

#[test]
fn the_forge_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<GitLabForge>();
}

#[test]
fn a_configured_proxy_carries_the_requests() {
    let proxy = RawServer::start(vec![None]);
    let mut config = GitLabConfig::new("http://gitlab.invalid/api/v4", Token::new(TOKEN), "g/p");
    config.proxy = ProxyConfig::Url(proxy.origin.clone());
    config.retry.max_attempts = 1;
    let (forge, _) = forge_with(config);
    assert!(forge.bot_user_id().is_err());
    let requests = proxy.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].starts_with("CONNECT gitlab.invalid:80")
            || requests[0].starts_with("GET http://gitlab.invalid/api/v4/user"),
        "{requests:?}"
    );
}

#[test]
fn a_dead_configured_proxy_is_named_as_the_cause() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut config = GitLabConfig::new("http://gitlab.invalid/api/v4", Token::new(TOKEN), "g/p");
    config.proxy = ProxyConfig::Url(format!("http://127.0.0.1:{port}"));
    config.retry.max_attempts = 1;
    let (forge, _) = forge_with(config);
    let err = forge.bot_user_id().unwrap_err();
    assert!(
        matches!(
            err,
            ForgeError::Transport {
                cause: assent_forge::TransportFailure::Proxy,
                ..
            }
        ),
        "{err:?}"
    );
}

// ---- TLS: certificate failures told apart by type -------------------------------------------

/// A one-connection-at-a-time HTTPS server presenting `cert` (PEM) with `key`, answering every
/// request with `{"id": 1}`. Handshakes the client refuses just end the connection.
fn tls_server(cert: &str, key: &str) -> String {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::Write;

    let certs = CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap(),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { return };
            let conn = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, tcp);
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match tls.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let body = br#"{"id":1}"#;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = tls.write_all(head.as_bytes());
            let _ = tls.write_all(body);
            let _ = tls.flush();
            tls.conn.send_close_notify();
            let _ = tls.flush();
        }
    });
    format!("https://localhost:{port}/api/v4")
}

const TLS_CA: &str = include_str!("../testdata/tls/ca.pem");
const TLS_LEAF: &str = include_str!("../testdata/tls/leaf.pem");
const TLS_LEAF_KEY: &str = include_str!("../testdata/tls/leaf.key");
const TLS_SELF_CA: &str = include_str!("../testdata/tls/selfca.pem");
const TLS_SELF_CA_KEY: &str = include_str!("../testdata/tls/selfca.key");
const TLS_SELF_LEAF: &str = include_str!("../testdata/tls/selfleaf.pem");
const TLS_SELF_LEAF_KEY: &str = include_str!("../testdata/tls/selfleaf.key");

/// `GET /user` against `api_url`, trusting the public roots plus `ca` when given.
fn user_over_tls(api_url: &str, ca: Option<&str>) -> Result<u64, ForgeError> {
    let dir = tempfile::tempdir().unwrap();
    let mut config = GitLabConfig::new(api_url, Token::new(TOKEN), "g/p");
    config.proxy = ProxyConfig::Direct;
    config.retry.max_attempts = 1;
    config.request_timeout = Duration::from_secs(5);
    if let Some(ca) = ca {
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, ca).unwrap();
        config.ca_file = Some(path);
    }
    GitLabClient::new(&config).unwrap().current_user_id()
}

fn certificate_failure_of(result: Result<u64, ForgeError>) -> assent_forge::CertificateFailure {
    match result {
        Err(ForgeError::Transport {
            cause: assent_forge::TransportFailure::Certificate(failure),
            ref message,
            ..
        }) => {
            assert!(!message.contains(TOKEN));
            failure
        }
        other => panic!("not a certificate failure: {other:?}"),
    }
}

#[test]
fn tls_a_private_ca_given_as_the_ca_file_verifies_its_server() {
    let url = tls_server(TLS_LEAF, TLS_LEAF_KEY);
    assert_eq!(user_over_tls(&url, Some(TLS_CA)).unwrap(), 1);
}

#[test]
fn tls_a_certificate_from_an_unknown_ca_is_unknown_issuer() {
    use assent_forge::CertificateFailure::UnknownIssuer;
    let url = tls_server(TLS_LEAF, TLS_LEAF_KEY);
    assert_eq!(
        certificate_failure_of(user_over_tls(&url, None)),
        UnknownIssuer
    );
    // Another CA in the file does not help.
    assert_eq!(
        certificate_failure_of(user_over_tls(&url, Some(TLS_SELF_LEAF))),
        UnknownIssuer
    );
}

#[test]
fn tls_a_self_signed_ca_certificate_as_the_server_certificate_is_ca_used_as_end_entity() {
    use assent_forge::CertificateFailure::CaUsedAsEndEntity;
    // The server's own certificate given as the CA file: the TLS library still refuses a CA
    // certificate (CA:TRUE) presented as the server's.
    let url = tls_server(TLS_SELF_CA, TLS_SELF_CA_KEY);
    assert_eq!(
        certificate_failure_of(user_over_tls(&url, Some(TLS_SELF_CA))),
        CaUsedAsEndEntity
    );
}

#[test]
fn tls_a_self_signed_end_entity_certificate_is_its_own_trust_anchor() {
    // CA:FALSE, self-signed: given as the CA file, it verifies (the advice for the CA:TRUE
    // case relies on this).
    let url = tls_server(TLS_SELF_LEAF, TLS_SELF_LEAF_KEY);
    assert_eq!(user_over_tls(&url, Some(TLS_SELF_LEAF)).unwrap(), 1);
    assert_eq!(
        certificate_failure_of(user_over_tls(&url, None)),
        assent_forge::CertificateFailure::UnknownIssuer
    );
}
