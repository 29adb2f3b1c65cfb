//! `assent serve` end to end: real processes over real HTTP. The fake GitLab delivers its
//! webhooks to a running `assent serve` and plays the runner (each MR pipeline runs `assent
//! run` with the CI variables of an MR pipeline job), so "resolve as a reviewer, watch the MR
//! turn green" runs with no command typed after the resolution.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fake_gitlab::{FakeGitLab, FaultAction, FaultRule, RouteKind, Runner, sandbox};

use assent_test_support::process::serve_port_and_log;

use crate::ASSENT;

const SECRET: &str = "whsec-serve-test-7f3a91";

struct World {
    fake: FakeGitLab,
    env: Vec<(String, String)>,
    dir: tempfile::TempDir,
}

impl World {
    /// The sandbox's MR after its first pipeline: the challenge is open, the decision REVIEW.
    fn reviewed() -> World {
        let (target, source) = sandbox::example("topic-registry").expect("the example applies");
        let fake = FakeGitLab::start(sandbox::state(&target, &source).expect("a sandbox"));
        let env: Vec<(String, String)> = sandbox::exports(&fake.base_url(), &fake.state())
            .lines()
            .filter_map(|l| l.strip_prefix("export "))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let world = World {
            fake,
            env,
            dir: tempfile::tempdir().expect("temporary directory"),
        };
        let out = Command::new(ASSENT)
            .args(["run"])
            .current_dir(world.dir.path())
            .env_clear()
            .envs(world.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .expect("assent run");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert_eq!(world.decision(), "REVIEW");
        world
    }

    fn decision(&self) -> String {
        let receipt = std::fs::read_to_string(self.dir.path().join("assent-receipt.json"))
            .expect("a receipt");
        let receipt: serde_json::Value = serde_json::from_str(&receipt).expect("json");
        receipt["decision"].as_str().expect("a decision").to_owned()
    }

    /// The runner: every MR pipeline runs the job of the shipped template.
    fn play_runner(&self) {
        self.fake.set_runner(Runner {
            program: ASSENT.into(),
            args: vec!["run".into(), "--fail-on".into(), "review".into()],
            env: self
                .env
                .iter()
                .filter(|(k, _)| k.starts_with("ASSENT_") || k == "CI_API_V4_URL")
                .cloned()
                .collect(),
            dir: self.dir.path().to_owned(),
        });
    }

    fn challenge(&self) -> String {
        let state = self.fake.state();
        state.projects[0].merge_requests[0]
            .discussions
            .iter()
            .find(|d| d.notes[0].body.contains("\"rule\":\"retention-shrink\""))
            .expect("the challenge thread")
            .id
            .clone()
    }

    fn pipelines(&self) -> usize {
        self.fake.pipelines(sandbox::PROJECT_ID).len()
    }

    fn serve(&self, extra: &[&str]) -> Serve {
        self.serve_with_secret(Some(SECRET), extra)
    }

    fn serve_with_secret(&self, secret: Option<&str>, extra: &[&str]) -> Serve {
        let mut cmd = Command::new(ASSENT);
        cmd.args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--project",
            sandbox::PROJECT_PATH,
        ])
        .args(if extra.contains(&"--settle") {
            &[][..]
        } else {
            &["--settle", "300ms"][..]
        })
        .args(extra)
        .env_clear()
        .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        if let Some(secret) = secret {
            cmd.env("ASSENT_WEBHOOK_SECRET", secret);
        }
        Serve::spawn(cmd)
    }
}

struct Serve {
    child: Child,
    port: u16,
    log: Arc<Mutex<String>>,
}

impl Serve {
    fn spawn(mut cmd: Command) -> Serve {
        let mut child = cmd.spawn().expect("assent serve");
        let stderr = child.stderr.take().expect("stderr");
        let (port, log) = serve_port_and_log(stderr);
        Serve { child, port, log }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/webhook", self.port)
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, String) {
        http(self.port, method, path, headers, body)
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn metrics(&self) -> String {
        self.request("GET", "/metrics", &[], b"").1
    }

    fn stop(mut self) -> (Option<i32>, String, String) {
        // Test scaffolding: a libc call with no safe std equivalent; the workspace denies
        // `unsafe_code` everywhere else.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM)
        };
        let status = wait_exit(&mut self.child, Duration::from_secs(20));
        let mut stdout = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            let _ = out.read_to_string(&mut stdout);
        }
        std::thread::sleep(Duration::from_millis(100));
        (status, stdout, self.log())
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("serve did not exit within {limit:?}");
}

/// One HTTP/1.1 request; the status and the body.
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|x| x.1)
        .unwrap_or("")
        .to_owned();
    (status, body)
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    f()
}

/// The reviewer (not the author) assents: GitLab keeps the first resolver, so the thread is
/// resolved once, by the reviewer.
fn reviewer_resolves(w: &World, discussion: &str) {
    w.fake.resolve(
        sandbox::PROJECT_ID,
        sandbox::MR_IID,
        discussion,
        sandbox::REVIEWER_ID,
        true,
    );
}

fn mr_hook_body(project: u64, iid: u64) -> String {
    serde_json::json!({"object_kind": "merge_request", "event_type": "merge_request",
        "project": {"id": project}, "object_attributes": {"iid": iid, "action": "update"}})
    .to_string()
}

#[test]
fn a_reviewers_resolution_turns_the_mr_green_with_no_command_typed() {
    let w = World::reviewed();
    w.play_runner();
    let serve = w.serve(&["--sweep-interval", "off"]);
    w.fake.add_webhook(&serve.url(), SECRET);
    assert_eq!(w.pipelines(), 0);

    let challenge = w.challenge();
    let resolved_at = Instant::now();
    reviewer_resolves(&w, &challenge);
    assert!(
        wait_until(Duration::from_millis(300 + 2_000), || w.pipelines() == 1),
        "one pipeline within settle + 2 s: {}",
        serve.log()
    );
    let within = resolved_at.elapsed();
    assert!(
        wait_until(Duration::from_secs(30), || !w.fake.runner_runs().is_empty()
            && w.fake.pipelines(sandbox::PROJECT_ID)[0].status == "success"),
        "the job ran: {:?}",
        w.fake.runner_runs()
    );
    let run = &w.fake.runner_runs()[0];
    assert_eq!(run.exit_code, Some(0), "{}{}", run.stdout, run.stderr);
    assert_eq!(w.decision(), "APPROVE", "the job's run says APPROVE");
    // The events the job's own writes and pipeline cause find nothing more to do.
    std::thread::sleep(Duration::from_millis(1_500));
    assert_eq!(w.pipelines(), 1, "exactly one pipeline: {}", serve.log());
    let deliveries = w.fake.webhook_deliveries();
    assert!(
        deliveries
            .iter()
            .any(|d| d.event == "Merge Request Hook" && d.status == Some(202)),
        "{deliveries:?}"
    );
    let metrics = serve.metrics();
    assert!(
        metrics.contains(
            "assent_pipelines_created_total{trigger=\"webhook\",verdict=\"review-resolved\"} 1"
        ),
        "{metrics}"
    );
    let (code, _, log) = serve.stop();
    assert_eq!(code, Some(0), "{log}");
    eprintln!("pipeline created {within:?} after the resolution");
}

/// A request (method, path, headers, body) and the status it must get.
type Case<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>, Vec<u8>, u16);

#[test]
fn bad_secrets_bodies_and_routes_get_their_status_and_no_gitlab_request() {
    let w = World::reviewed();
    let serve = w.serve(&["--sweep-interval", "off"]);
    w.fake.reset_log();
    let body = mr_hook_body(sandbox::PROJECT_ID, sandbox::MR_IID);
    let mr_hook = ("X-Gitlab-Event", "Merge Request Hook");
    let cases: Vec<Case> = vec![
        (
            "POST",
            "/webhook",
            vec![mr_hook],
            body.clone().into_bytes(),
            401,
        ),
        (
            "POST",
            "/webhook",
            vec![mr_hook, ("X-Gitlab-Token", "wrong")],
            body.clone().into_bytes(),
            401,
        ),
        (
            "POST",
            "/webhook",
            vec![mr_hook, ("X-Gitlab-Token", &SECRET[..SECRET.len() - 1])],
            body.clone().into_bytes(),
            401,
        ),
        // With the right secret, every delivery is answered 2xx: GitLab backs off a hook
        // after 4 failed deliveries in a row and disables it after 40
        // (app/models/concerns/web_hooks/auto_disabling.rb).
        (
            "POST",
            "/webhook",
            vec![mr_hook, ("X-Gitlab-Token", SECRET)],
            b"{not json".to_vec(),
            202,
        ),
        (
            "POST",
            "/webhook",
            vec![mr_hook, ("X-Gitlab-Token", SECRET)],
            br#"{"object_attributes":{"iid":1}}"#.to_vec(),
            202,
        ),
        // Over GitLab's own 25 MB limit (`REQUEST_BODY_SIZE_LIMIT`): read, dropped, 202.
        (
            "POST",
            "/webhook",
            vec![mr_hook, ("X-Gitlab-Token", SECRET)],
            vec![b' '; 25 * 1024 * 1024 + 1],
            202,
        ),
        // Without the secret, no body size changes the answer.
        (
            "POST",
            "/webhook",
            vec![mr_hook],
            vec![b' '; 25 * 1024 * 1024 + 1],
            401,
        ),
        (
            "POST",
            "/webhook",
            vec![("X-Gitlab-Event", "Push Hook"), ("X-Gitlab-Token", SECRET)],
            body.clone().into_bytes(),
            204,
        ),
        (
            "POST",
            "/webhook",
            vec![mr_hook, ("X-Gitlab-Token", SECRET)],
            mr_hook_body(999, 1).into_bytes(),
            204,
        ),
        ("GET", "/webhook", vec![], vec![], 405),
        ("GET", "/nope", vec![], vec![], 404),
        ("POST", "/healthz", vec![], vec![], 405),
    ];
    for (method, path, headers, body, want) in &cases {
        let (status, _) = serve.request(method, path, headers, body);
        assert_eq!(status, *want, "{method} {path} {headers:?}");
    }
    assert_eq!(serve.request("GET", "/healthz", &[], b"").0, 200);
    let (status, ready) = serve.request("GET", "/readyz", &[], b"");
    assert_eq!(status, 200);
    assert!(ready.contains("embedded sweep off"), "{ready}");
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(w.fake.requests().len(), 0, "{:?}", w.fake.requests());
    let metrics = serve.metrics();
    assert!(
        metrics.contains(
            "assent_webhook_events_total{event=\"merge_request\",result=\"unauthorized\"} 4"
        ),
        "{metrics}"
    );
    assert!(metrics.contains("result=\"bad_request\"} 2"), "{metrics}");
    assert!(metrics.contains("result=\"too_large\"} 1"), "{metrics}");
    let (code, stdout, log) = serve.stop();
    assert_eq!(code, Some(0));
    // Each refused delivery is a warning naming where it came from (the test's loopback
    // client), so an operator can tell a hook with an old secret from a stranger.
    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("webhook refused"))
        .collect();
    assert_eq!(refused.len(), 4, "{log}");
    for line in &refused {
        assert!(
            line.contains("WARN") || line.contains("warn"),
            "at warn: {line}"
        );
        assert!(line.contains("remote=127.0.0.1:"), "{line}");
    }
    for text in [&stdout, &log, &metrics] {
        assert!(!text.contains(SECRET), "the secret leaked: {text}");
        assert!(
            !text.contains(sandbox::BOT_TOKEN),
            "the token leaked: {text}"
        );
        assert!(
            !text.contains("object_attributes"),
            "a payload leaked: {text}"
        );
    }
}

#[test]
fn bursts_and_redeliveries_coalesce_and_a_pending_push_pipeline_is_left_alone() {
    let w = World::reviewed();
    let serve = w.serve(&["--sweep-interval", "off", "--settle", "600ms"]);
    w.fake.add_webhook(&serve.url(), SECRET);
    // A burst: the resolution, then comments, then the same MR hook again (GitLab's retry).
    reviewer_resolves(&w, &w.challenge());
    for _ in 0..3 {
        w.fake.post_note(
            sandbox::PROJECT_ID,
            sandbox::MR_IID,
            sandbox::REVIEWER_ID,
            "lgtm",
        );
    }
    assert!(wait_until(Duration::from_secs(2), || w
        .fake
        .webhook_deliveries()
        .len()
        >= 4));
    let first_mr_hook = w
        .fake
        .webhook_deliveries()
        .iter()
        .position(|d| d.event == "Merge Request Hook")
        .expect("the MR hook");
    w.fake.redeliver(first_mr_hook);
    assert!(wait_until(Duration::from_secs(4), || w.pipelines() == 1));
    std::thread::sleep(Duration::from_millis(1_200));
    assert_eq!(w.pipelines(), 1);
    let metrics = serve.metrics();
    let classifications: u64 = metrics
        .lines()
        .filter(|l| l.starts_with("assent_classifications_total{trigger=\"webhook\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    // The burst is one classification; the pipeline's own hook is at most one more.
    assert!(
        (1..=2).contains(&classifications),
        "{classifications}: {metrics}"
    );

    // A push whose pipeline is still pending: the MR hook of the push finds it and leaves it.
    let pushed = "3".repeat(40);
    let next_id = w
        .fake
        .pipelines(sandbox::PROJECT_ID)
        .last()
        .map_or(1, |p| p.id)
        + 1;
    w.fake
        .set_head(sandbox::PROJECT_ID, sandbox::MR_IID, &pushed);
    w.fake.set_head_pipeline(
        sandbox::PROJECT_ID,
        sandbox::MR_IID,
        Some((next_id, "pending")),
    );
    std::thread::sleep(Duration::from_millis(1_500));
    assert_eq!(
        w.pipelines(),
        1,
        "no pipeline beside the pending one: {}",
        serve.log()
    );
    assert!(
        serve.log().contains("verdict=pipeline-active"),
        "{}",
        serve.log()
    );
}

#[test]
fn the_embedded_sweep_heals_a_lost_pipeline_with_no_webhook() {
    let w = World::reviewed();
    // No webhook registered: the resolution's event is lost.
    reviewer_resolves(&w, &w.challenge());
    let serve = w.serve(&[
        "--sweep-delay",
        "200ms",
        "--sweep-interval",
        "1h",
        "--lookback",
        "3h",
    ]);
    assert!(
        wait_until(Duration::from_secs(10), || w.pipelines() == 1),
        "{}",
        serve.log()
    );
    assert!(wait_until(Duration::from_secs(5), || serve
        .metrics()
        .contains("assent_sweep_passes_total{result=\"complete\"} 1")));
    let metrics = serve.metrics();
    assert!(
        metrics.contains(
            "assent_pipelines_created_total{trigger=\"sweep\",verdict=\"review-resolved\"} 1"
        ),
        "{metrics}"
    );
    assert!(serve.log().contains("refreshed=1"), "{}", serve.log());
    let (code, _, _) = serve.stop();
    assert_eq!(code, Some(0));
}

#[test]
fn kill_9_then_restart_heals_by_the_first_pass_and_sigterm_drains() {
    let w = World::reviewed();
    let mut first = w.serve(&["--sweep-interval", "off", "--settle", "5s"]);
    w.fake.add_webhook(&first.url(), SECRET);
    reviewer_resolves(&w, &w.challenge());
    assert!(wait_until(Duration::from_secs(3), || w
        .fake
        .webhook_deliveries()
        .iter()
        .any(|d| d.status == Some(202))));
    // Killed while the nudge waits out its settle delay: only the queued nudge is lost.
    let _ = first.child.kill();
    let _ = first.child.wait();
    assert_eq!(w.pipelines(), 0);
    let second = w.serve(&["--sweep-delay", "100ms", "--sweep-interval", "1h"]);
    assert!(
        wait_until(Duration::from_secs(10), || w.pipelines() == 1),
        "{}",
        second.log()
    );
    let (code, _, log) = second.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("shutting down signal=SIGTERM"), "{log}");
    assert!(log.contains("stopped abandoned=0 dropped_keys=0"), "{log}");
    // The first line says where it listens, for which project, and how it sweeps.
    let start = log
        .lines()
        .find(|l| l.contains("serve listening"))
        .expect(&log);
    assert!(start.contains(" listen=127.0.0.1:"), "{start}");
    assert!(start.contains(" projects="), "{start}");
    assert!(start.contains(" sweep=\"every 1h, lookback "), "{start}");
    assert!(!log.contains("embedded sweep off"), "{log}");
}

#[test]
fn two_replicas_give_at_most_one_extra_pipeline_and_publish_nothing() {
    let w = World::reviewed();
    let a = w.serve(&["--sweep-interval", "off"]);
    let b = w.serve(&["--sweep-interval", "off"]);
    w.fake.add_webhook(&a.url(), SECRET);
    w.fake.add_webhook(&b.url(), SECRET);
    let notes_before: usize = w
        .fake
        .discussions(sandbox::PROJECT_ID, sandbox::MR_IID)
        .iter()
        .map(|d| d.notes.iter().filter(|n| !n.system).count())
        .sum();
    w.fake.reset_log();
    reviewer_resolves(&w, &w.challenge());
    assert!(wait_until(Duration::from_secs(3), || w.pipelines() >= 1));
    std::thread::sleep(Duration::from_millis(1_000));
    assert!((1..=2).contains(&w.pipelines()), "{}", w.pipelines());
    let writes: Vec<String> = w
        .fake
        .requests()
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(
        writes.iter().all(|r| r.ends_with("/pipelines")),
        "serve writes nothing but pipelines: {writes:?}"
    );
    let notes_after: usize = w
        .fake
        .discussions(sandbox::PROJECT_ID, sandbox::MR_IID)
        .iter()
        .map(|d| d.notes.iter().filter(|n| !n.system).count())
        .sum();
    // GitLab's own system note ("resolved all threads") is no publication of serve's.
    assert_eq!(notes_before, notes_after, "no publication");
}

/// `assent doctor --serve-url` against a real serve and the fake's webhook listing.
fn doctor_serve(w: &World, serve_base: &str) -> (i32, String) {
    let out = Command::new(ASSENT)
        .args(["doctor", "--serve-url", serve_base])
        .current_dir(w.dir.path())
        .env_clear()
        .envs(w.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .expect("assent doctor");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.contains(sandbox::BOT_TOKEN) && !stderr.contains(sandbox::BOT_TOKEN));
    (out.status.code().unwrap_or(-1), stdout)
}

fn line<'a>(stdout: &'a str, id: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(id))
        .unwrap_or_else(|| panic!("no {id} line in:\n{stdout}"))
}

#[test]
fn doctor_checks_that_serve_is_ready_and_the_webhook_reaches_it() {
    let w = World::reviewed();
    let serve = w.serve(&[]);
    let base = format!("http://127.0.0.1:{}", serve.port);

    // The sandbox's bot is a Developer: GitLab shows webhooks to Maintainers only.
    w.fake.add_webhook(&serve.url(), SECRET);
    let (_, stdout) = doctor_serve(&w, &base);
    assert!(line(&stdout, "serve-ready").starts_with("✓"), "{stdout}");
    let webhook = line(&stdout, "serve-webhook");
    assert!(
        webhook.starts_with("?") && webhook.contains("Maintainers"),
        "{stdout}"
    );
    w.fake.with_state(|s| {
        for t in &mut s.tokens {
            t.access_level = 40;
        }
    });

    // A webhook elsewhere: not seen (a group one could exist).
    w.fake.with_state(|s| {
        s.projects[0].hooks[0].url = "https://elsewhere.example.com/webhook".into()
    });
    let (_, stdout) = doctor_serve(&w, &base);
    assert!(line(&stdout, "serve-ready").starts_with("✓"), "{stdout}");
    let webhook = line(&stdout, "serve-webhook");
    assert!(
        webhook.starts_with("?") && webhook.contains("group webhook"),
        "{stdout}"
    );

    w.fake
        .with_state(|s| s.projects[0].hooks[0].url = serve.url());
    let (code, stdout) = doctor_serve(&w, &format!("{base}/"));
    assert!(line(&stdout, "serve-ready").starts_with("✓"), "{stdout}");
    assert!(line(&stdout, "serve-webhook").starts_with("✓"), "{stdout}");
    assert_eq!(code, 0, "{stdout}");

    // Comments off: a resolution by reply would never reach serve.
    w.fake
        .with_state(|s| s.projects[0].hooks[0].note_events = false);
    let (code, stdout) = doctor_serve(&w, &base);
    let webhook = line(&stdout, "serve-webhook");
    assert!(
        webhook.starts_with("✗") && webhook.contains("comments off"),
        "{stdout}"
    );
    assert_eq!(code, 1, "{stdout}");

    // Serve gone: not ready, with the cause.
    let (status, _, _) = serve.stop();
    assert_eq!(status, Some(0));
    let (code, stdout) = doctor_serve(&w, &base);
    let ready = line(&stdout, "serve-ready");
    assert!(
        ready.starts_with("✗") && ready.contains("does not answer"),
        "{stdout}"
    );
    assert_eq!(code, 1);
}

#[test]
fn start_errors_are_configuration_2_and_gitlab_3() {
    let w = World::reviewed();
    let out = Command::new(ASSENT)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--project",
            sandbox::PROJECT_PATH,
        ])
        .env_clear()
        .envs(w.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "no secret: {out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("ASSENT_WEBHOOK_SECRET"));
    let out = Command::new(ASSENT)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--project",
            sandbox::PROJECT_PATH,
            "--lookback",
            "1h",
            "--sweep-interval",
            "1h",
        ])
        .env_clear()
        .envs(w.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("ASSENT_WEBHOOK_SECRET", SECRET)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "window refusal: {out:?}");
    let out = Command::new(ASSENT)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--project",
            sandbox::PROJECT_PATH,
        ])
        .env_clear()
        .envs(w.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("ASSENT_WEBHOOK_SECRET", SECRET)
        .env("ASSENT_TOKEN", "glpat-rejected-token-0000")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "token rejected: {out:?}");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !all.contains("glpat-rejected-token-0000") && !all.contains(SECRET),
        "{all}"
    );
}

/// The value of one series (`name{labels}`) in a metrics exposition.
fn metric(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn watched(serve: &Serve) -> Option<f64> {
    metric(&serve.metrics(), "assent_watched_mrs")
}

/// Waits up to `within` for serve to watch `count` merge requests at REVIEW; fails with its
/// metrics when it does not.
fn assert_watching(serve: &Serve, count: f64, within: Duration) {
    assert!(
        wait_until(within, || watched(serve) == Some(count)),
        "not watching {count} MRs: {}",
        serve.metrics()
    );
}

fn delivery_with_secret(serve: &Serve, iid: u64) -> (u16, String) {
    serve.request(
        "POST",
        "/webhook",
        &[
            ("X-Gitlab-Event", "Merge Request Hook"),
            ("X-Gitlab-Token", SECRET),
        ],
        mr_hook_body(sandbox::PROJECT_ID, iid).as_bytes(),
    )
}

/// GitLab sends no event when a thread is resolved while another stays open
/// (app/models/concerns/resolvable_note.rb: resolving is an update_all; only the last
/// resolution runs MergeRequests::ResolvedDiscussionNotificationService): serve finds the
/// counted resolution by rechecking the MR it left at REVIEW.
#[test]
fn one_of_several_threads_resolved_with_no_event_turns_green_by_the_recheck() {
    let w = World::reviewed();
    w.play_runner();
    let serve = w.serve(&["--sweep-interval", "off", "--recheck-interval", "300ms"]);
    w.fake.add_webhook(&serve.url(), SECRET);
    // A reviewer's own thread: its Note Hook has serve classify the MR, left at REVIEW.
    w.fake.post_thread(
        sandbox::PROJECT_ID,
        sandbox::MR_IID,
        sandbox::REVIEWER_ID,
        "Why does the retention shrink? Keeping this open.",
    );
    assert_watching(&serve, 1.0, Duration::from_secs(5));
    let hooks_before = w.fake.webhook_deliveries().len();
    reviewer_resolves(&w, &w.challenge());
    assert!(
        wait_until(Duration::from_secs(5), || w.pipelines() == 1),
        "the recheck creates the pipeline: {}",
        serve.log()
    );
    assert!(
        !w.fake.webhook_deliveries()[hooks_before..]
            .iter()
            .any(|d| d.event == "Merge Request Hook"),
        "no event came from the resolution"
    );
    let metrics = serve.metrics();
    assert_eq!(
        metric(
            &metrics,
            "assent_pipelines_created_total{trigger=\"recheck\",verdict=\"review-resolved\"}"
        ),
        Some(1.0),
        "{metrics}"
    );
    // The job approves; the MR leaves REVIEW and is no longer watched.
    assert!(
        wait_until(Duration::from_secs(30), || w
            .fake
            .pipelines(sandbox::PROJECT_ID)[0]
            .status
            == "success"),
        "{:?}",
        w.fake.runner_runs()
    );
    assert_eq!(w.decision(), "APPROVE");
    assert_watching(&serve, 0.0, Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(900));
    assert_eq!(w.pipelines(), 1, "one pipeline per change of resolutions");
}

#[test]
fn an_mr_that_leaves_review_is_no_longer_rechecked() {
    let w = World::reviewed();
    w.play_runner();
    let serve = w.serve(&["--sweep-interval", "off", "--recheck-interval", "200ms"]);
    w.fake.add_webhook(&serve.url(), SECRET);
    w.fake.post_note(
        sandbox::PROJECT_ID,
        sandbox::MR_IID,
        sandbox::REVIEWER_ID,
        "looking",
    );
    assert_watching(&serve, 1.0, Duration::from_secs(5));
    assert!(
        wait_until(Duration::from_secs(3), || metric(
            &serve.metrics(),
            "assent_classifications_total{trigger=\"recheck\",verdict=\"verified\"}"
        )
        .is_some_and(|n| n >= 1.0)),
        "a watched MR is rechecked: {}",
        serve.metrics()
    );
    // The last thread resolved: GitLab's Merge Request Hook, the pipeline, APPROVE.
    reviewer_resolves(&w, &w.challenge());
    assert!(wait_until(Duration::from_secs(30), || {
        let pipelines = w.fake.pipelines(sandbox::PROJECT_ID);
        pipelines.len() == 1 && pipelines[0].status == "success"
    }));
    assert_watching(&serve, 0.0, Duration::from_secs(5));
    w.fake.reset_log();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        w.fake.requests().len(),
        0,
        "no recheck once the MR left REVIEW: {:?}",
        w.fake.requests()
    );
}

#[test]
fn past_max_watched_the_oldest_watched_mr_drops_out_and_is_counted() {
    let w = World::reviewed();
    // A second MR at REVIEW: a copy of the first under iid 2.
    w.fake.with_state(|s| {
        let mut copy = s.projects[0].merge_requests[0].clone();
        copy.iid = 2;
        copy.id = 0;
        s.projects[0].merge_requests.push(copy);
    });
    let serve = w.serve(&[
        "--sweep-interval",
        "off",
        "--recheck-interval",
        "200ms",
        "--max-watched",
        "1",
    ]);
    w.fake.add_webhook(&serve.url(), SECRET);
    w.fake
        .post_note(sandbox::PROJECT_ID, 1, sandbox::REVIEWER_ID, "first");
    assert_watching(&serve, 1.0, Duration::from_secs(5));
    w.fake
        .post_note(sandbox::PROJECT_ID, 2, sandbox::REVIEWER_ID, "second");
    assert!(
        wait_until(Duration::from_secs(5), || metric(
            &serve.metrics(),
            "assent_watch_dropped_total"
        ) == Some(1.0)),
        "{}",
        serve.metrics()
    );
    assert_eq!(watched(&serve), Some(1.0));
    w.fake.reset_log();
    std::thread::sleep(Duration::from_millis(700));
    let paths: Vec<String> = w.fake.requests().iter().map(|r| r.path.clone()).collect();
    assert!(
        paths.iter().any(|p| p.contains("/merge_requests/2")),
        "the newer MR is rechecked: {paths:?}"
    );
    assert!(
        !paths
            .iter()
            .any(|p| p.contains("/merge_requests/1/") || p.ends_with("/merge_requests/1")),
        "the older one dropped out: {paths:?}"
    );
}

#[test]
fn recheck_for_ends_the_watch_and_off_never_starts_it() {
    let w = World::reviewed();
    let serve = w.serve(&[
        "--sweep-interval",
        "off",
        "--recheck-interval",
        "200ms",
        "--recheck-for",
        "1s",
    ]);
    w.fake.add_webhook(&serve.url(), SECRET);
    w.fake.post_note(
        sandbox::PROJECT_ID,
        sandbox::MR_IID,
        sandbox::REVIEWER_ID,
        "looking",
    );
    assert_watching(&serve, 1.0, Duration::from_secs(5));
    assert!(
        wait_until(Duration::from_secs(4), || watched(&serve) == Some(0.0)),
        "expired 1 s after its last event: {}",
        serve.metrics()
    );
    assert_eq!(
        metric(&serve.metrics(), "assent_watch_dropped_total"),
        Some(0.0),
        "an expiry is not a drop"
    );
    w.fake.reset_log();
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(w.fake.requests().len(), 0, "{:?}", w.fake.requests());
    let (code, _, log) = serve.stop();
    assert_eq!(code, Some(0), "{log}");

    let off = w.serve(&["--sweep-interval", "off", "--recheck-interval", "off"]);
    w.fake.add_webhook(&off.url(), SECRET);
    w.fake.post_note(
        sandbox::PROJECT_ID,
        sandbox::MR_IID,
        sandbox::REVIEWER_ID,
        "again",
    );
    assert!(wait_until(Duration::from_secs(5), || metric(
        &off.metrics(),
        "assent_classifications_total{trigger=\"webhook\",verdict=\"verified\"}"
    )
    .is_some_and(|n| n >= 1.0)));
    assert_eq!(watched(&off), Some(0.0));
    w.fake.reset_log();
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(w.fake.requests().len(), 0, "{:?}", w.fake.requests());
    assert!(off.log().contains(" recheck=off"), "{}", off.log());
}

#[test]
fn a_full_queue_and_a_draining_serve_still_answer_202_to_the_right_secret() {
    let w = World::reviewed();
    let serve = w.serve(&[
        "--sweep-interval",
        "off",
        "--settle",
        "100ms",
        "--max-queued",
        "1",
    ]);
    // The classification of !1 is held in GitLab for 3 s: its key fills the queue.
    w.fake
        .inject(FaultRule::new(FaultAction::Latency { ms: 3_000 }).route(RouteKind::Discussions));
    w.fake.reset_log();
    assert_eq!(delivery_with_secret(&serve, 1).0, 202);
    assert!(wait_until(Duration::from_secs(3), || w
        .fake
        .requests()
        .iter()
        .any(|r| r.path.ends_with("/discussions"))));
    let (status, body) = delivery_with_secret(&serve, 2);
    assert_eq!(status, 202, "queue full: {body}");
    assert!(body.contains("not queued"), "{body}");

    // SIGTERM while !1 is being classified: serve drains, and still answers GitLab 2xx.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(serve.child.id() as i32, libc::SIGTERM)
    };
    assert!(
        wait_until(Duration::from_secs(2), || serve
            .log()
            .contains("shutting down")),
        "{}",
        serve.log()
    );
    assert_eq!(
        serve.request("GET", "/readyz", &[], b"").0,
        503,
        "{}",
        serve.log()
    );
    let (status, body) = delivery_with_secret(&serve, 1);
    assert_eq!(status, 202, "draining: {body}");
    let (status, _) = serve.request(
        "POST",
        "/webhook",
        &[
            ("X-Gitlab-Event", "Merge Request Hook"),
            ("X-Gitlab-Token", "wrong"),
        ],
        mr_hook_body(sandbox::PROJECT_ID, 1).as_bytes(),
    );
    assert_eq!(status, 401, "a wrong secret stays 401 while draining");
    let metrics = serve.metrics();
    for series in [
        "assent_webhook_events_total{event=\"merge_request\",result=\"queue_full\"}",
        "assent_webhook_events_total{event=\"merge_request\",result=\"shutting_down\"}",
    ] {
        assert_eq!(metric(&metrics, series), Some(1.0), "{series}: {metrics}");
    }
    let (code, _, log) = serve.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("webhook not queued"), "{log}");
}

/// Slow heads: callers without the secret hold more connections than the bound open, each
/// having sent part of a request head. With serve's default limits (256 connections, 10 s
/// read timeout), a delivery with the secret is still answered at once: at the bound, the
/// oldest connection still reading its head is cut.
#[test]
fn slow_heads_past_the_connection_bound_do_not_delay_a_delivery() {
    let w = World::reviewed();
    let serve = w.serve(&["--sweep-interval", "off"]);
    let mut slow = Vec::new();
    for _ in 0..300 {
        let mut s = TcpStream::connect(("127.0.0.1", serve.port)).expect("connect");
        let _ = s.write_all(b"POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Gitlab-Ev");
        slow.push(s);
    }
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let (status, body) = delivery_with_secret(&serve, 1);
    let took = started.elapsed();
    assert_eq!(status, 202, "{body}");
    assert!(
        took < Duration::from_secs(2),
        "answered in {took:?}, GitLab gives up at 10 s"
    );
    let evicted = metric(&serve.metrics(), "assent_connections_evicted_total");
    assert!(evicted.is_some_and(|n| n >= 44.0), "{evicted:?}");
    eprintln!("delivery answered {took:?} behind 300 slow heads");
    drop(slow);
}

#[test]
fn the_fakes_deliveries_carry_gitlabs_ids_and_its_hook_backs_off_after_4_failures() {
    let w = World::reviewed();
    let serve = w.serve(&["--sweep-interval", "off"]);
    w.fake.add_webhook(&serve.url(), SECRET);
    for text in ["one", "two"] {
        w.fake.post_note(
            sandbox::PROJECT_ID,
            sandbox::MR_IID,
            sandbox::REVIEWER_ID,
            text,
        );
    }
    assert!(wait_until(Duration::from_secs(3), || w
        .fake
        .webhook_deliveries()
        .iter()
        .filter(|d| d.status == Some(202))
        .count()
        == 2));
    let first = w.fake.webhook_deliveries()[0].clone();
    let second = w.fake.webhook_deliveries()[1].clone();
    assert_ne!(first.webhook_uuid, second.webhook_uuid);
    assert_eq!(first.webhook_uuid.len(), 36);
    w.fake.redeliver(0);
    assert!(wait_until(Duration::from_secs(3), || w
        .fake
        .webhook_deliveries()[0]
        .webhook_uuid
        != first.webhook_uuid));
    let again = w.fake.webhook_deliveries()[0].clone();
    assert_eq!(
        again.idempotency_key, first.idempotency_key,
        "a retry keeps it"
    );
    assert_eq!(again.status, Some(202));

    drop(serve);

    // The secret rotated in GitLab but not in serve: 401s. After the 4th, GitLab backs the
    // hook off and sends nothing; doctor says so.
    let w = World::reviewed();
    w.fake.with_state(|s| {
        for t in &mut s.tokens {
            t.access_level = 40;
        }
    });
    let rotated = w.serve(&["--sweep-interval", "off"]);
    w.fake.add_webhook(&rotated.url(), "a-rotated-secret");
    for n in 0..5 {
        w.fake.post_note(
            sandbox::PROJECT_ID,
            sandbox::MR_IID,
            sandbox::REVIEWER_ID,
            &format!("note {n}"),
        );
        assert!(
            wait_until(Duration::from_secs(3), || {
                let last = w.fake.webhook_deliveries().last().cloned().unwrap();
                last.status.is_some() || last.hook_disabled
            }),
            "{:?}",
            w.fake.webhook_deliveries().last()
        );
    }
    let deliveries = w.fake.webhook_deliveries();
    let tail = &deliveries[deliveries.len() - 5..];
    assert!(tail[..4].iter().all(|d| d.status == Some(401)), "{tail:?}");
    assert!(
        tail[4].hook_disabled && tail[4].status.is_none(),
        "{tail:?}"
    );
    let hook = w.fake.state().projects[0].hooks[0].clone();
    assert_eq!(hook.recent_failures, 4);
    assert!(hook.disabled_until.is_some());
    let base = format!("http://127.0.0.1:{}", rotated.port);
    let (code, stdout) = doctor_serve(&w, &base);
    let webhook = line(&stdout, "serve-webhook");
    assert!(
        webhook.starts_with("✗") && webhook.contains("backed off"),
        "{stdout}"
    );
    assert_eq!(code, 1, "{stdout}");
}

/// Time to green against the fake GitLab, with serve's defaults (`--settle 5s`,
/// `--recheck-interval 1m`): from a reviewer's resolution to the job's APPROVE, when it is the
/// MR's last open thread (GitLab's Merge Request Hook) and when another thread stays open (no
/// event: the recheck). The numbers are in docs/performance.md.
#[test]
#[ignore = "a measurement (about 2 minutes): cargo test --test it serve::time_to_green -- --ignored --nocapture"]
fn time_to_green() {
    fn green(w: &World) -> bool {
        let pipelines = w.fake.pipelines(sandbox::PROJECT_ID);
        pipelines.len() == 1 && pipelines[0].status == "success"
    }
    let w = World::reviewed();
    w.play_runner();
    let serve = w.serve(&["--settle", "5s", "--sweep-interval", "off"]);
    w.fake.add_webhook(&serve.url(), SECRET);
    let resolved = Instant::now();
    reviewer_resolves(&w, &w.challenge());
    assert!(wait_until(Duration::from_secs(30), || w.pipelines() == 1));
    let webhook_pipeline = resolved.elapsed();
    assert!(wait_until(Duration::from_secs(60), || green(&w)));
    let webhook_green = resolved.elapsed();
    assert_eq!(w.decision(), "APPROVE");
    drop(serve);

    let w = World::reviewed();
    w.play_runner();
    let serve = w.serve(&["--settle", "5s", "--sweep-interval", "off"]);
    w.fake.add_webhook(&serve.url(), SECRET);
    w.fake.post_thread(
        sandbox::PROJECT_ID,
        sandbox::MR_IID,
        sandbox::REVIEWER_ID,
        "Keeping this one open.",
    );
    assert_watching(&serve, 1.0, Duration::from_secs(10));
    let resolved = Instant::now();
    reviewer_resolves(&w, &w.challenge());
    assert!(wait_until(Duration::from_secs(90), || w.pipelines() == 1));
    let recheck_pipeline = resolved.elapsed();
    assert!(wait_until(Duration::from_secs(60), || green(&w)));
    let recheck_green = resolved.elapsed();
    assert_eq!(w.decision(), "APPROVE");
    eprintln!(
        "last thread resolved (webhook): pipeline after {webhook_pipeline:?}, green after {webhook_green:?}"
    );
    eprintln!(
        "one of several resolved (recheck): pipeline after {recheck_pipeline:?}, green after {recheck_green:?}"
    );
}

#[test]
fn readiness_and_the_sweep_interval_are_metrics_an_alert_can_use() {
    // deploy/prometheus alerts on `assent_ready == 0` and on the last success's age against
    // the interval; with the sweep off (replicas that leave it to one other) neither may fire.
    let w = World::reviewed();
    let off = w.serve(&["--sweep-interval", "off"]);
    let metrics = off.metrics();
    assert!(metrics.contains("assent_ready 1"), "{metrics}");
    assert!(
        metrics.contains("assent_sweep_interval_seconds 0\n"),
        "{metrics}"
    );
    drop(off);
    let hourly = w.serve(&["--sweep-delay", "1h"]);
    let metrics = hourly.metrics();
    assert!(
        metrics.contains("assent_sweep_interval_seconds 3600\n"),
        "{metrics}"
    );
    let (code, _, _) = hourly.stop();
    assert_eq!(code, Some(0));
}
