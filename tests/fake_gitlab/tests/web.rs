//! The sandbox's web pages (`fake_gitlab::web`): what a reviewer reads and presses instead
//! of typing API calls.

use std::time::Duration;

use fake_gitlab::{FakeGitLab, sandbox};

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into()
}

fn get(fake: &FakeGitLab, path: &str) -> (u16, String) {
    let mut r = agent()
        .get(format!("{}{path}", fake.root_url()))
        .call()
        .expect("an answer");
    (
        r.status().as_u16(),
        r.body_mut().read_to_string().expect("text"),
    )
}

fn post(fake: &FakeGitLab, path: &str, form: &[(&str, &str)]) -> (u16, String) {
    let mut r = agent()
        .post(format!("{}{path}", fake.root_url()))
        .send_form(form.iter().copied())
        .expect("an answer");
    let location = r
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let _ = r.body_mut().read_to_string();
    (r.status().as_u16(), location)
}

fn example() -> FakeGitLab {
    let fake = FakeGitLab::start(sandbox::example_state("topic-registry").expect("a sandbox"));
    fake.use_own_web_url();
    fake
}

const PAGE: &str = "/platform/topic-registry/-/merge_requests/1";

#[test]
fn a_hostile_note_is_shown_as_text_never_as_markup() {
    let fake = example();
    fake.post_thread(
        sandbox::PROJECT_ID,
        sandbox::MR_IID,
        sandbox::AUTHOR_ID,
        "</pre><script>alert(1)</script><form action=\"http://evil\"><button name=\"as\" value=\"alice\">",
    );
    let (status, page) = get(&fake, PAGE);
    assert_eq!(status, 200);
    assert!(!page.contains("<script"), "{page}");
    assert!(!page.contains("http://evil\">"), "{page}");
    assert!(
        page.contains("&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{page}"
    );
    // Every form on the page is the fake's own.
    assert_eq!(
        page.matches("<form ").count(),
        page.matches("<form method=\"post\" action=\"/platform/topic-registry/")
            .count()
    );
}

#[test]
fn the_form_resolves_as_the_named_person_with_gitlabs_note_and_hook() {
    let fake = example();
    // Deliveries are recorded even when nobody listens.
    fake.add_webhook("http://127.0.0.1:9/webhook", "secret");
    let (discussion, _) = fake.post_thread(
        sandbox::PROJECT_ID,
        sandbox::MR_IID,
        sandbox::BOT_ID,
        "a challenge",
    );
    let action = format!("{PAGE}/discussions/{discussion}/resolve");
    let token = fake.web_form_token();
    let resolved = |fake: &FakeGitLab| {
        fake.discussion(sandbox::PROJECT_ID, sandbox::MR_IID, &discussion)
            .expect("the thread")
            .notes[0]
            .resolved_by
    };

    // Without the page's token (another site posting the form), nothing happens.
    let (status, _) = post(&fake, &action, &[("as", "alice"), ("resolved", "true")]);
    assert_eq!(status, 403);
    let (status, _) = post(
        &fake,
        &action,
        &[
            ("as", "alice"),
            ("resolved", "true"),
            ("form_token", "guess"),
        ],
    );
    assert_eq!(status, 403);
    // Nobody resolves as the bot, or as someone unknown.
    for who in ["assent-bot", "mallory"] {
        let (status, _) = post(
            &fake,
            &action,
            &[("as", who), ("resolved", "true"), ("form_token", &token)],
        );
        assert_eq!(status, 400, "{who}");
    }
    assert_eq!(resolved(&fake), None);

    let (status, location) = post(
        &fake,
        &action,
        &[
            ("as", "carol"),
            ("resolved", "true"),
            ("form_token", &token),
        ],
    );
    assert_eq!((status, location.as_str()), (303, PAGE));
    assert_eq!(resolved(&fake), Some(sandbox::MAINTAINER_ID));
    // The MR's last open thread: GitLab's system note and Merge Request Hook.
    let notes = fake.discussions(sandbox::PROJECT_ID, sandbox::MR_IID);
    assert!(
        notes
            .iter()
            .any(|d| d.notes[0].system && d.notes[0].body == "resolved all threads"),
        "{notes:?}"
    );
    assert!(
        fake.webhook_deliveries()
            .iter()
            .any(|d| d.event == "Merge Request Hook" && d.iid == sandbox::MR_IID),
        "{:?}",
        fake.webhook_deliveries()
    );
    let (_, page) = get(&fake, PAGE);
    assert!(page.contains("(resolved by @carol)"), "{page}");
    assert!(page.contains("Unresolve as alice"), "{page}");
}

#[test]
fn run_pipeline_creates_an_mr_pipeline_and_its_job_page_says_no_runner_ran_it() {
    let fake = example();
    let token = fake.web_form_token();
    let (status, _) = post(
        &fake,
        &format!("{PAGE}/pipelines"),
        &[("form_token", token.as_str())],
    );
    assert_eq!(status, 303);
    let pipelines = fake.pipelines(sandbox::PROJECT_ID);
    assert_eq!(pipelines.len(), 1);
    assert_eq!(pipelines[0].source, "merge_request_event");
    let (_, page) = get(&fake, PAGE);
    assert!(page.contains("<b>created</b>"), "{page}");
    let (status, trace) = get(
        &fake,
        &format!("/platform/topic-registry/-/jobs/{}", pipelines[0].id),
    );
    assert_eq!(status, 200);
    assert!(trace.contains("no job has run"), "{trace}");
}

#[test]
fn web_urls_lead_to_the_fake_and_pages_of_unknown_things_are_404() {
    let fake = example();
    let mr = fake.mr(sandbox::PROJECT_ID, sandbox::MR_IID);
    let (status, file) = get(
        &fake,
        &format!(
            "/platform/topic-registry/-/blob/{}/topics/orders.yaml",
            mr.sha
        ),
    );
    assert_eq!(status, 200);
    assert!(file.contains("    4      retention_days: 7"), "{file}");
    let (status, project) = get(&fake, "/platform/topic-registry");
    assert_eq!(status, 200);
    assert!(project.contains("merge_requests/2"), "{project}");
    assert_eq!(
        get(&fake, "/platform/topic-registry/-/merge_requests/9").0,
        404
    );
    assert_eq!(get(&fake, "/no/such/-/merge_requests/1").0, 404);
}

/// A DNS name rebound to 127.0.0.1 reaches the fake with its own `Host`: the page (and the
/// form token in it) is not served to it.
#[test]
fn pages_answer_only_under_loopback_host_names() {
    use std::io::{Read, Write};
    let fake = example();
    let status = |host: &str| {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", fake.port())).expect("connect");
        write!(
            stream,
            "GET {PAGE} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .expect("send");
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        (
            answer
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse::<u16>().ok())
                .unwrap_or(0),
            answer.contains(&fake.web_form_token()),
        )
    };
    assert_eq!(status("evil.example:80"), (421, false));
    assert_eq!(status("evil.example"), (421, false));
    assert_eq!(status(&format!("127.0.0.1:{}", fake.port())), (200, true));
    assert_eq!(status(&format!("localhost:{}", fake.port())), (200, true));
}
