//! The router in-process: axum's `Router` driven by `tower::ServiceExt::oneshot`, no socket
//! served, no worker, dispatcher or sweep running. Each route's status and body as GitLab
//! (for `/webhook`) or a prober (for the others) meets them; the whole process, its
//! connections and its classifications are tested in `tests/it/serve.rs`.

use axum::body::to_bytes;
use tower::ServiceExt;

use super::log::LogFormat;
use super::*;
use crate::core::model::{ListedDiscussion, MergeRequestInfo};
use crate::forge::sweep_port::{ListedMergeRequest, PipelineCreation};

const SECRET: &str = "the-webhook-secret";
const PROJECT_ID: u64 = 42;

/// A sweep port the router never reaches: only the workers read GitLab, and none runs here.
struct NoGitLab;

fn not_here() -> ForgeError {
    ForgeError::Status {
        method: "GET".into(),
        route: "none".into(),
        status: 500,
        message: "the router reads no GitLab".into(),
    }
}

impl SweepForge for NoGitLab {
    fn bot_user_id(&self) -> Result<u64, ForgeError> {
        Err(not_here())
    }
    fn list_open_merge_requests(&self) -> Result<Vec<ListedMergeRequest>, ForgeError> {
        Err(not_here())
    }
    fn list_discussions(&self, _iid: u64) -> Result<Vec<ListedDiscussion>, ForgeError> {
        Err(not_here())
    }
    fn merge_request(&self, _iid: u64) -> Result<MergeRequestInfo, ForgeError> {
        Err(not_here())
    }
    fn merge_request_entry(&self, _iid: u64) -> Result<ListedMergeRequest, ForgeError> {
        Err(not_here())
    }
    fn create_pipeline(&self, _iid: u64) -> Result<PipelineCreation, ForgeError> {
        Err(not_here())
    }
    fn request_counts(&self) -> RequestCounts {
        RequestCounts::default()
    }
}

/// The state serve would run with for project 42, queueing at most `max_queued` MRs, its
/// embedded sweep on unless `sweep_off`. The listener is bound (a `ServeConfig` holds one)
/// but never served.
fn shared(max_queued: usize, sweep_off: bool) -> Arc<Shared> {
    let hour: SweepDuration = "1h".parse().unwrap();
    let mut config = ServeConfig {
        projects: vec![ServedProject {
            id: PROJECT_ID,
            name: "group/proj".into(),
            forge: Arc::new(NoGitLab),
        }],
        bot: 1,
        secret: SECRET.into(),
        listener: std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        settle: Duration::from_secs(60),
        max_queued,
        max_connections: 8,
        read_timeout: Duration::from_secs(5),
        sweep_delay: Duration::ZERO,
        sweep_interval: (!sweep_off).then_some(hour),
        sweep: SweepSettings {
            lookback: "3h".parse().unwrap(),
            interval: hour,
            stuck_after: hour,
            dry_run: false,
            max_mrs: 100,
        },
        shutdown_grace: Duration::from_secs(1),
        log: Log::new(LogFormat::Json),
        recheck_interval: None,
        recheck_for: Duration::from_secs(60),
        max_watched: 10,
    };
    Arc::new(shared_state(&mut config))
}

/// The router's answer to `request`: status, `Content-Type` and body.
async fn answer(shared: &Arc<Shared>, request: Request<Body>) -> (StatusCode, String, String) {
    let response = router(shared.clone()).oneshot(request).await.unwrap();
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (
        status,
        content_type,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).unwrap()
}

/// A delivery to `/webhook` with `token` as `X-Gitlab-Token` (none when `None`).
fn delivery(event: &str, token: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut request = Request::post("/webhook").header("X-Gitlab-Event", event);
    if let Some(token) = token {
        request = request.header("X-Gitlab-Token", token);
    }
    request.body(body.into()).unwrap()
}

/// A Merge Request Hook's body for MR `iid` of project 42 (`lib/gitlab/data_builder/merge_request.rb`
/// nests the MR under `object_attributes`).
fn merge_request_event(iid: u64) -> String {
    format!(
        r#"{{"object_kind":"merge_request","project":{{"id":{PROJECT_ID}}},"object_attributes":{{"iid":{iid}}}}}"#
    )
}

#[tokio::test]
async fn a_delivery_with_the_secret_is_accepted() {
    let shared = shared(10, false);
    let answered = answer(
        &shared,
        delivery("Merge Request Hook", Some(SECRET), merge_request_event(7)),
    )
    .await;
    assert_eq!(
        answered,
        (
            StatusCode::ACCEPTED,
            "text/plain; charset=utf-8".into(),
            "accepted\n".into()
        )
    );
    assert_eq!(shared.lock().len(), 1, "the MR is queued");
}

#[tokio::test]
async fn a_wrong_or_missing_secret_is_401_and_queues_nothing() {
    let shared = shared(10, false);
    for token in [Some("not-the-secret"), Some(""), None] {
        let (status, _, body) = answer(
            &shared,
            delivery("Merge Request Hook", token, merge_request_event(7)),
        )
        .await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::UNAUTHORIZED, "unauthorized\n"),
            "{token:?}"
        );
    }
    assert_eq!(shared.lock().len(), 0);
}

#[tokio::test]
async fn a_body_serve_cannot_read_is_answered_202_not_queued() {
    let shared = shared(10, false);
    for (body, why) in [
        ("not json", "body is not JSON"),
        ("[1, 2]", "body is not a JSON object"),
        (r#"{"object_attributes":{"iid":7}}"#, "no project id"),
        (r#"{"project":{"id":42}}"#, "no merge request iid"),
    ] {
        let (status, _, answered) =
            answer(&shared, delivery("Merge Request Hook", Some(SECRET), body)).await;
        // 202 all the same: GitLab disables a hook whose deliveries keep failing.
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        assert_eq!(
            answered,
            format!("not queued: {why}; the recheck and the sweep heal its MR\n")
        );
    }
    assert_eq!(shared.lock().len(), 0);
}

#[tokio::test]
async fn an_unknown_event_or_another_project_is_204() {
    let shared = shared(10, false);
    let unknown = answer(
        &shared,
        delivery("Push Hook", Some(SECRET), merge_request_event(7)),
    )
    .await;
    assert_eq!(
        (unknown.0, unknown.2.as_str()),
        (StatusCode::NO_CONTENT, "")
    );
    let other_project = r#"{"project":{"id":99},"object_attributes":{"iid":7}}"#;
    let (status, _, body) = answer(
        &shared,
        delivery("Merge Request Hook", Some(SECRET), other_project),
    )
    .await;
    assert_eq!((status, body.as_str()), (StatusCode::NO_CONTENT, ""));
    assert_eq!(shared.lock().len(), 0);
}

#[tokio::test]
async fn past_max_queued_a_new_mr_is_answered_202_not_queued() {
    let shared = shared(1, false);
    let first = answer(
        &shared,
        delivery("Merge Request Hook", Some(SECRET), merge_request_event(7)),
    )
    .await;
    assert_eq!(first.2, "accepted\n");
    let (status, _, body) = answer(
        &shared,
        delivery("Merge Request Hook", Some(SECRET), merge_request_event(8)),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(
        body,
        "not queued: the queue is full (--max-queued); the recheck and the sweep heal its MR\n"
    );
    // The MR already queued is coalesced, not refused.
    let again = answer(
        &shared,
        delivery("Merge Request Hook", Some(SECRET), merge_request_event(7)),
    )
    .await;
    assert_eq!(again.2, "accepted\n");
}

#[tokio::test]
async fn a_body_over_the_limit_is_read_and_answered_202_not_queued() {
    let shared = shared(10, false);
    let mut body = merge_request_event(7).into_bytes();
    body.resize(MAX_BODY_BYTES + 1, b' ');
    let (status, _, answered) =
        answer(&shared, delivery("Merge Request Hook", Some(SECRET), body)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(
        answered,
        "not queued: the body is over 25 MiB; the recheck and the sweep heal its MR\n"
    );
    assert_eq!(shared.lock().len(), 0);
    // What it held of the shared body budget is given back.
    assert_eq!(shared.body_budget.available_permits(), BODY_BUDGET_BYTES);
}

#[tokio::test]
async fn healthz_is_ok_until_shutdown() {
    let shared = shared(10, false);
    assert_eq!(
        answer(&shared, get("/healthz")).await,
        (
            StatusCode::OK,
            "text/plain; charset=utf-8".into(),
            "ok\n".into()
        )
    );
    shared.shutting_down.store(true, Ordering::SeqCst);
    let (status, _, body) = answer(&shared, get("/healthz")).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
    );
    // A delivery while stopping is answered, not queued.
    let (status, _, body) = answer(
        &shared,
        delivery("Merge Request Hook", Some(SECRET), merge_request_event(7)),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(
        body,
        "not queued: serve is stopping; the recheck and the sweep heal its MR\n"
    );
}

#[tokio::test]
async fn readyz_names_the_problem_and_an_embedded_sweep_that_is_off() {
    let with_sweep = shared(10, false);
    let (status, _, body) = answer(&with_sweep, get("/readyz")).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ready\n"));

    let sweep_off = shared(10, true);
    let (status, _, body) = answer(&sweep_off, get("/readyz")).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::OK, "ready; embedded sweep off\n")
    );

    sweep_off.health.lock().unwrap().problem = Some("GitLab answered 401".into());
    let (status, _, body) = answer(&sweep_off, get("/readyz")).await;
    assert_eq!(
        (status, body.as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "GitLab answered 401; embedded sweep off\n"
        )
    );

    sweep_off.shutting_down.store(true, Ordering::SeqCst);
    let (status, _, body) = answer(&sweep_off, get("/readyz")).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
    );
}

#[tokio::test]
async fn metrics_are_openmetrics_and_count_the_deliveries() {
    let shared = shared(10, false);
    answer(
        &shared,
        delivery("Merge Request Hook", Some(SECRET), merge_request_event(7)),
    )
    .await;
    answer(&shared, delivery("Note Hook", Some("wrong"), "{}")).await;
    let (status, content_type, body) = answer(&shared, get("/metrics")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        content_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    for line in [
        "assent_webhook_events_total{event=\"merge_request\",result=\"accepted\"} 1",
        "assent_webhook_events_total{event=\"note\",result=\"unauthorized\"} 1",
        "assent_queue_keys 1",
        "assent_ready 1",
    ] {
        assert!(
            body.lines().any(|l| l == line),
            "{line} missing from:\n{body}"
        );
    }
    assert!(body.ends_with("# EOF\n"), "{body}");

    shared.health.lock().unwrap().problem = Some("GitLab unreachable".into());
    let (_, _, body) = answer(&shared, get("/metrics")).await;
    assert!(body.lines().any(|l| l == "assent_ready 0"), "{body}");
}

#[tokio::test]
async fn an_unknown_path_or_method_is_refused() {
    let shared = shared(10, false);
    let (status, _, body) = answer(&shared, get("/nope")).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::NOT_FOUND, "not found\n")
    );
    let (status, _, _) = answer(&shared, get("/webhook")).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
}
