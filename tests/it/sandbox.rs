//! The local sandbox walkthrough (docs/setup.md, "Try it without a GitLab"): the environment
//! `fake-gitlab --example topic-registry` prints is all `assent` needs, and the documented
//! steps give the documented results.

use std::path::Path;
use std::process::{Command, Output};

use fake_gitlab::{FakeGitLab, sandbox};

use crate::ASSENT;

struct Sandbox {
    fake: FakeGitLab,
    env: Vec<(String, String)>,
    dir: tempfile::TempDir,
}

impl Sandbox {
    /// The example sandbox, and the environment parsed from the `export` lines it prints.
    fn start() -> Sandbox {
        let (target, source) = sandbox::example("topic-registry").expect("the example applies");
        Sandbox::of(FakeGitLab::start(
            sandbox::state(&target, &source).expect("a sandbox"),
        ))
    }

    /// The sandbox as `fake-gitlab --example topic-registry` serves it: the policy change MR
    /// beside, and web URLs that lead to the fake's own pages.
    fn start_example() -> Sandbox {
        let fake = FakeGitLab::start(sandbox::example_state("topic-registry").expect("a sandbox"));
        fake.use_own_web_url();
        Sandbox::of(fake)
    }

    fn of(fake: FakeGitLab) -> Sandbox {
        let exports = sandbox::exports(&fake.base_url(), &fake.state());
        let env = exports
            .lines()
            .map(|line| {
                let (name, value) = line
                    .strip_prefix("export ")
                    .and_then(|l| l.split_once('='))
                    .unwrap_or_else(|| panic!("not an export line: {line:?}"));
                (name.to_owned(), value.to_owned())
            })
            .collect();
        Sandbox {
            fake,
            env,
            dir: tempfile::tempdir().expect("temporary directory"),
        }
    }

    fn assent(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let Output {
            status,
            stdout,
            stderr,
        } = Command::new(ASSENT)
            .args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .expect("run assent");
        (
            status.code(),
            String::from_utf8(stdout).expect("utf-8"),
            String::from_utf8(stderr).expect("utf-8"),
        )
    }

    fn decision(&self) -> String {
        let receipt = std::fs::read_to_string(self.dir.path().join("assent-receipt.json"))
            .expect("a receipt");
        let receipt: serde_json::Value = serde_json::from_str(&receipt).expect("json");
        receipt["decision"].as_str().expect("a decision").to_owned()
    }

    fn challenge_thread(&self) -> String {
        let state = self.fake.state();
        let mr = &state.projects[0].merge_requests[0];
        mr.discussions
            .iter()
            .find(|d| d.notes[0].body.contains("\"rule\":\"retention-shrink\""))
            .expect("the retention challenge's thread")
            .id
            .clone()
    }

    fn resolve_as(&self, user: u64, discussion: &str, resolved: bool) {
        self.fake.resolve(
            sandbox::PROJECT_ID,
            sandbox::MR_IID,
            discussion,
            user,
            resolved,
        );
    }

    fn transcript(&self) -> String {
        sandbox::transcript(&self.fake.state())
    }
}

#[test]
fn the_walkthrough_gates_on_the_challenge_until_a_reviewer_assents() {
    let s = Sandbox::start();

    let (code, stdout, stderr) = s.assent(&["run", "--dry-run"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("would publish"), "{stdout}");
    assert!(
        s.transcript().contains("(no notes yet)"),
        "a dry run writes nothing"
    );

    let (code, stdout, stderr) = s.assent(&["run"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_eq!(s.decision(), "REVIEW");
    let transcript = s.transcript();
    assert!(
        transcript.contains("Retention of `orders.events.v1` shrinks from `30` to `7` days"),
        "{transcript}"
    );
    assert!(
        transcript.contains("Ownership of `orders.audit.v1` moves"),
        "{transcript}"
    );
    assert!(transcript.contains("(unresolved)"), "{transcript}");
    // Both findings sit on their changed line of the diff (DiffNotes).
    assert!(
        transcript.contains("on topics/orders.yaml line 4 (unresolved)")
            && transcript.contains("on topics/orders.yaml line 11 (resolved by @assent-bot)"),
        "{transcript}"
    );

    // The author's own resolution does not count.
    let challenge = s.challenge_thread();
    s.resolve_as(sandbox::AUTHOR_ID, &challenge, true);
    let (code, stdout, stderr) = s.assent(&["run"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_eq!(s.decision(), "REVIEW");

    assert!(s.transcript().contains("resolved by @bob"));

    // A reviewer's does: GitLab keeps the first resolver of a resolved thread, so the
    // reviewer unresolves it and resolves it again.
    s.resolve_as(sandbox::REVIEWER_ID, &challenge, false);
    s.resolve_as(sandbox::REVIEWER_ID, &challenge, true);
    let (code, stdout, stderr) = s.assent(&["run"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(s.decision(), "APPROVE");
    assert!(s.transcript().contains("resolved by @alice"));

    // The summary is verified for the head, so the safety net has nothing to heal.
    let (code, stdout, stderr) = s.assent(&["sweep", "--interval", "1h", "--lookback", "2h"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.trim_end().ends_with("healed: 0"), "{stdout}");
}

/// docs/setup.md, "A policy change": MR !2 rewords a policy; the reviewer's resolution is
/// not a policy owner's, the Maintainer's is (docs/policies.md, "Changing policies").
#[test]
fn the_policy_change_needs_the_maintainer_and_the_page_resolves_as_her() {
    let mut s = Sandbox::start_example();
    let policy_mr = s.fake.mr(sandbox::PROJECT_ID, sandbox::POLICY_MR_IID);
    for (name, value) in &mut s.env {
        match name.as_str() {
            "CI_MERGE_REQUEST_IID" => *value = sandbox::POLICY_MR_IID.to_string(),
            "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA" => value.clone_from(&policy_mr.sha),
            _ => {}
        }
    }
    let (code, stdout, stderr) = s.assent(&["run"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_eq!(s.decision(), "REVIEW");
    let self_edit = s
        .fake
        .discussions(sandbox::PROJECT_ID, sandbox::POLICY_MR_IID)
        .into_iter()
        .find(|d| d.notes[0].body.contains("\"rule\":\"assent/self-edit\""))
        .expect("the self-edit challenge")
        .id;
    let page = format!(
        "/{}/-/merge_requests/{}",
        sandbox::PROJECT_PATH,
        sandbox::POLICY_MR_IID
    );
    let resolve = |who: &str, resolved: bool| {
        let (status, head, _) = http(
            s.fake.port(),
            "POST",
            &format!("{page}/discussions/{self_edit}/resolve"),
            &format!(
                "form_token={}&resolved={resolved}&as={who}",
                s.fake.web_form_token()
            ),
        );
        assert_eq!(status, 303, "{head}");
    };

    // alice is a Developer: she may assent to data changes, not to a policy change.
    resolve("alice", true);
    let (code, stdout, stderr) = s.assent(&["run"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_eq!(s.decision(), "REVIEW");
    let (_, _, html) = http(s.fake.port(), "GET", &page, "");
    assert!(
        html.contains("resolved by `alice`, which does not count as assent")
            && html.contains("the resolver is a developer"),
        "the summary says why: {html}"
    );
    // Its link to the thread leads to the note on the page.
    assert!(html.contains("#note_"), "{html}");
    assert!(html.contains("<p id=\"note_"), "{html}");

    // carol is a Maintainer, a policy owner by default.
    resolve("alice", false);
    resolve("carol", true);
    let (code, stdout, stderr) = s.assent(&["run"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_eq!(s.decision(), "APPROVE");
    let (_, _, html) = http(s.fake.port(), "GET", &page, "");
    assert!(html.contains("(resolved by @carol)"), "{html}");
    assert!(html.contains("## assent · APPROVE"), "{html}");
}

/// docs/setup.md, "Central policies in the sandbox": the example's central project loads
/// beside the registry's own policies, and the receipt pins it.
#[test]
fn the_central_policy_project_is_read_beside_the_projects_own() {
    let s = Sandbox::start_example();
    let (code, stdout, stderr) =
        s.assent(&["run", "--policy-project", sandbox::POLICY_PROJECT_PATH]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let receipt: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(s.dir.path().join("assent-receipt.json")).expect("a receipt"),
    )
    .expect("json");
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(
        receipt["pins"]["policyProject"],
        sandbox::POLICY_PROJECT_PATH
    );
    assert_eq!(
        receipt["pins"]["policySha"],
        s.fake.state().projects[1].branches["main"].as_str()
    );
}

#[test]
fn doctor_verifies_everything_but_serialization_and_the_token_variable_outside_a_ci_job() {
    let s = Sandbox::start();
    let (_, stdout, stderr) = s.assent(&["doctor", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("doctor's report is JSON ({e}):\n{stdout}{stderr}");
    });
    let not_passed: Vec<&str> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["status"] != "pass")
        .map(|c| c["id"].as_str().expect("an id"))
        .collect();
    // The sandbox's bot is a Developer, as docs/setup.md recommends: GitLab shows CI/CD
    // variables only to Maintainers, so where the token's variable reaches is not verified.
    assert_eq!(not_passed, ["token-variable", "serialization"], "{stdout}");
}

#[test]
fn the_example_repository_is_the_one_in_fixtures() {
    let (target, _) = sandbox::example("topic-registry").expect("the example applies");
    let on_disk = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/repos/topic-registry/.assent/policies/topics.yaml");
    assert_eq!(
        target[".assent/policies/topics.yaml"],
        std::fs::read(on_disk).expect("the example's policy")
    );
}

/// The sandbox binary beside `assent` in Cargo's target folder (`cargo test --workspace`, or
/// `cargo build -p fake-gitlab`, builds it).
pub(crate) fn fake_gitlab_binary() -> std::path::PathBuf {
    let path = Path::new(ASSENT).with_file_name("fake-gitlab");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build -p fake-gitlab` (cargo test --workspace does)",
        path.display()
    );
    // `cargo test --test it` alone does not rebuild it: a binary older than its flags says so.
    let help = Command::new(&path)
        .arg("--help")
        .output()
        .expect("fake-gitlab --help");
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("--run-pipelines"),
        "{} is stale: rebuild it with `cargo build -p fake-gitlab`",
        path.display()
    );
    path
}

/// One HTTP/1.1 request to `127.0.0.1:port` (an API request with the bot's token); the
/// status, the headers and the body.
fn http(port: u16, method: &str, path: &str, body: &str) -> (u16, String, String) {
    use std::io::{Read, Write};
    let token = if path.starts_with("/api/") {
        format!("PRIVATE-TOKEN: {}\r\n", sandbox::BOT_TOKEN)
    } else {
        String::new()
    };
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{token}\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status, head.to_owned(), body.to_owned())
}

fn wait_for(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    done()
}

/// A child process killed when the test ends, whatever its outcome.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `value` of the first `name="…" value="…"` input after `from` in an HTML page.
fn input_value<'a>(html: &'a str, name: &str) -> &'a str {
    let at = html
        .find(&format!("name=\"{name}\" value=\""))
        .unwrap_or_else(|| panic!("no input {name} in:\n{html}"));
    let rest = &html[at + name.len() + 15..];
    &rest[..rest.find('"').expect("a closing quote")]
}

/// docs/setup.md, "The whole loop": the sandbox binary delivers its webhooks to `assent
/// serve` and runs each MR pipeline with the `assent` binary; the reviewer only reads the
/// merge request's page and presses a button there, and the author's next commit is a push.
#[test]
fn the_sandbox_and_serve_carry_the_loop_from_review_to_approve_through_the_mr_page() {
    use std::io::BufRead;
    use std::process::Stdio;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    const SECRET: &str = "whsec-sandbox-loop-5c1e";
    let jobs = tempfile::tempdir().expect("temporary directory");
    // serve's port is fixed before the sandbox starts, so the sandbox can name it.
    let serve_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = Command::new(fake_gitlab_binary())
        .args([
            "--example",
            "topic-registry",
            "--port",
            "0",
            "--webhook-secret",
            SECRET,
        ])
        .args([
            "--webhook-url",
            &format!("http://127.0.0.1:{serve_port}/webhook"),
        ])
        .args(["--assent", ASSENT, "--jobs-dir"])
        .arg(jobs.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fake-gitlab");
    let stdout = child.stdout.take().expect("stdout");
    let _sandbox = Killed(child);
    let printed = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = printed.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            sink.lock().unwrap().push(line);
        }
    });
    let lines = || printed.lock().unwrap().clone();
    assert!(
        wait_for(Duration::from_secs(10), || lines()
            .iter()
            .any(|l| l.contains("Stop the sandbox"))),
        "{:?}",
        lines()
    );
    let env: Vec<(String, String)> = lines()
        .iter()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let api = lines()[0].clone();
    let port: u16 = api
        .trim_end_matches("/api/v4")
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("the sandbox's port");
    // The MR's page is printed, and it is the MR's web_url: no URL is typed.
    let page_url = format!(
        "{}/platform/topic-registry/-/merge_requests/1",
        api.trim_end_matches("/api/v4")
    );
    assert!(
        lines().iter().any(|l| l.ends_with(&page_url)),
        "{:?}",
        lines()
    );
    let (_, _, mr) = http(port, "GET", "/api/v4/projects/1/merge_requests/1", "");
    let mr: serde_json::Value = serde_json::from_str(&mr).expect("the MR as JSON");
    assert_eq!(mr["web_url"], page_url.as_str());
    let page_path = "/platform/topic-registry/-/merge_requests/1";

    let mut serve = Command::new(ASSENT);
    serve
        .args(["serve", "--listen", &format!("127.0.0.1:{serve_port}")])
        .args(["--project", sandbox::PROJECT_PATH, "--settle", "300ms"])
        .args([
            "--sweep-delay",
            "100ms",
            "--sweep-interval",
            "1h",
            "--lookback",
            "3h",
        ])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("ASSENT_WEBHOOK_SECRET", SECRET)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut serve = serve.spawn().expect("assent serve");
    let (_, serve_log) =
        assent_test_support::process::serve_port_and_log(serve.stderr.take().expect("stderr"));
    let serve = Killed(serve);
    let log = || serve_log.lock().unwrap().clone();

    // 1. serve's first pass finds !1 never judged and creates its pipeline; the sandbox runs
    //    it: REVIEW, the job fails (exit 1), and the page shows the open challenge.
    let finished = |iid: u64, outcome: &str| {
        lines()
            .iter()
            .any(|l| l.contains(&format!(" of !{iid}: {outcome} ")))
    };
    assert!(
        wait_for(Duration::from_secs(20), || finished(1, "failed")),
        "the first pipeline: {:?}\n{}",
        lines(),
        log()
    );
    let first = lines()
        .into_iter()
        .find(|l| l.contains(" of !1: failed (exit code 1)"))
        .expect("the first pipeline failed with exit 1");
    let trace_url = first
        .rsplit("job log: ")
        .next()
        .expect("a job log URL")
        .to_owned();
    let trace_path = trace_url.trim_start_matches(api.trim_end_matches("/api/v4"));
    let (status, _, trace) = http(port, "GET", trace_path, "");
    assert_eq!(status, 200, "{trace}");
    assert!(trace.contains("assent: REVIEW for !1"), "{trace}");
    let (status, _, page) = http(port, "GET", page_path, "");
    assert_eq!(status, 200);
    assert!(page.contains("<b>failed</b>, exit 1"), "{page}");
    assert!(page.contains("## assent · REVIEW"), "the summary: {page}");
    assert!(
        page.contains("Retention of `orders.events.v1` shrinks from `30` to `7` days"),
        "{page}"
    );
    assert!(!page.contains("<script"), "note bodies are escaped: {page}");

    // 2. The reviewer presses "Resolve as alice" on the challenge's thread.
    let challenge = page
        .split("<section id=\"")
        .find(|s| s.contains("&quot;rule&quot;:&quot;retention-shrink&quot;"))
        .expect("the challenge's thread on the page");
    assert!(challenge.contains("(unresolved)"), "{challenge}");
    let action = {
        let at = challenge.find("action=\"").expect("a form") + 8;
        &challenge[at..at + challenge[at..].find('"').expect("a quote")]
    };
    let form = format!(
        "form_token={}&resolved={}&as=alice",
        input_value(challenge, "form_token"),
        input_value(challenge, "resolved")
    );
    let (status, head, _) = http(port, "POST", action, &form);
    assert_eq!(status, 303, "{head}");
    assert!(head.contains(&format!("Location: {page_path}")), "{head}");
    let (_, _, page) = http(port, "GET", page_path, "");
    assert!(page.contains("(resolved by @alice)"), "{page}");

    // 3. GitLab's MR hook reaches serve, serve creates the pipeline, the sandbox runs it:
    //    APPROVE, the job passes, and the summary on the page says so.
    let job_logs = || {
        lines()
            .iter()
            .filter_map(|l| l.rsplit_once("job log: ").map(|x| x.1.to_owned()))
            .map(|url| http(port, "GET", &url[url.find("/platform").unwrap_or(0)..], "").2)
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        wait_for(Duration::from_secs(20), || finished(1, "success")),
        "the pipeline after the resolution: {:?}\n{}\n{}",
        lines(),
        log(),
        job_logs()
    );
    let (_, _, metrics) = http(serve_port, "GET", "/metrics", "");
    assert!(
        metrics.contains(
            "assent_pipelines_created_total{trigger=\"webhook\",verdict=\"review-resolved\"} 1"
        ),
        "{metrics}"
    );
    let second = lines()
        .into_iter()
        .find(|l| l.contains(" of !1: success (exit code 0)"))
        .expect("the second pipeline passed");
    let trace_url = second
        .rsplit("job log: ")
        .next()
        .expect("a job log URL")
        .to_owned();
    let (_, _, trace) = http(
        port,
        "GET",
        trace_url.trim_start_matches(api.trim_end_matches("/api/v4")),
        "",
    );
    assert!(trace.contains("assent: APPROVE for !1"), "{trace}");
    let (_, _, page) = http(port, "GET", page_path, "");
    assert!(page.contains("<b>success</b>, exit 0"), "{page}");
    assert!(page.contains("## assent · APPROVE"), "the summary: {page}");
    assert!(
        !page.contains("## assent · REVIEW"),
        "one summary, edited: {page}"
    );
    // The job ran in a folder of its own, where its receipt is.
    let pipeline = second
        .strip_prefix("pipeline #")
        .and_then(|l| l.split_whitespace().next())
        .expect("the pipeline's id");
    let receipt = std::fs::read_to_string(
        jobs.path()
            .join(format!("pipeline-{pipeline}"))
            .join("assent-receipt.json"),
    )
    .expect("the job's receipt");
    let receipt: serde_json::Value = serde_json::from_str(&receipt).expect("json");
    assert_eq!(receipt["decision"], "APPROVE");

    // 4. The author's next commit (`fake-gitlab push`): retention 14 instead of 7, a value no
    //    one assented to. The push's own pipeline runs (serve leaves a pending pipeline alone):
    //    REVIEW again, on a fresh thread.
    let checkout = tempfile::tempdir().expect("temporary directory");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/repos/topic-registry"),
        checkout.path(),
    );
    let orders = checkout.path().join("topics/orders.yaml");
    let registry = std::fs::read_to_string(&orders).expect("the registry");
    std::fs::write(
        &orders,
        registry.replacen("retention_days: 30\n", "retention_days: 14\n", 1),
    )
    .expect("write");
    let pushed = Command::new(fake_gitlab_binary())
        .args(["push", "--url", &api, "--source-tree"])
        .arg(checkout.path())
        .output()
        .expect("fake-gitlab push");
    assert_eq!(pushed.status.code(), Some(0), "{pushed:?}");
    let runs_of_1 = || lines().iter().filter(|l| l.contains(" of !1: ")).count();
    assert!(
        wait_for(Duration::from_secs(20), || runs_of_1() == 3),
        "the push's pipeline: {:?}\n{}",
        lines(),
        log()
    );
    assert!(
        lines()
            .last()
            .is_some_and(|l| l.contains(" of !1: failed (exit code 1)")),
        "{:?}",
        lines()
    );
    let (_, _, page) = http(port, "GET", page_path, "");
    assert!(page.contains("## assent · REVIEW"), "{page}");
    assert!(
        page.contains("shrinks from `30` to `14` days"),
        "a fresh thread for the new value: {page}"
    );
    // Past serve's settle, nobody created another pipeline for the push.
    std::thread::sleep(Duration::from_millis(1_000));
    assert_eq!(runs_of_1(), 3, "{:?}\n{}", lines(), log());
    assert_eq!(
        page.matches("(<a href=\"/platform/topic-registry/-/jobs/")
            .count(),
        3
    );
    drop(serve);
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read a folder") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
