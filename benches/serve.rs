//! `assent serve` under webhook load: the compiled binary against the fake GitLab, fed Merge
//! Request Hook deliveries at a fixed rate over many MRs, as GitLab sends them (one
//! connection per delivery, the secret in `X-Gitlab-Token`).
//!
//! ```text
//! cargo bench --bench serve                               # 1,000 events/s for 10 s over 1,000 MRs
//! cargo bench --bench serve -- --rate 2000 --seconds 20 --mrs 5000 --settle 1s
//! cargo bench --bench serve -- --bin /path/to/another/assent
//! ```
//!
//! It prints, for the run: deliveries sent and their statuses; the acknowledgement latency
//! (connect, send, status line read) at p50, p99 and max; the rate reached; classifications
//! (from serve's `/metrics`) per delivery after coalescing, against the floor (the MRs that
//! got an event: one classification each when every burst falls within one settle delay);
//! GitLab requests per classification, from the fake's log, against the sweep's per-MR
//! formula (one MR read, one discussion page, at most one pipeline creation); and serve's
//! resident memory idle (after start) and at its peak (`VmHWM`).
//!
//! Each MR starts with no bot summary, so its first classification creates a pipeline (the
//! fake has no runner: it stays `created`) and every later one leaves the active pipeline
//! alone, as the sweep's pipeline-active guard says.

// A benchmark reports on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assent_test_support::process::serve_port_and_log;
use fake_gitlab::{FakeGitLab, MergeRequest, Project, RouteKind, fixtures};

const SECRET: &str = "whsec-bench-serve";
const SENDERS: usize = 64;

struct Options {
    rate: usize,
    seconds: usize,
    mrs: u64,
    settle: String,
    bin: String,
    run: bool,
}

fn options() -> Options {
    let mut o = Options {
        rate: 1000,
        seconds: 10,
        mrs: 1000,
        settle: "5s".into(),
        bin: env!("CARGO_BIN_EXE_assent").into(),
        run: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("a value after the flag");
        match arg.as_str() {
            "--rate" => o.rate = value().parse().expect("--rate N"),
            "--seconds" => o.seconds = value().parse().expect("--seconds N"),
            "--mrs" => o.mrs = value().parse().expect("--mrs N"),
            "--settle" => o.settle = value(),
            "--bin" => o.bin = value(),
            "--bench" | "--run" => o.run = true,
            _ => {}
        }
    }
    o
}

/// The fake GitLab: one project with `mrs` open MRs and no discussions.
fn world(mrs: u64) -> FakeGitLab {
    let mut state = fixtures::basic();
    let project = &mut state.projects[0];
    project.merge_requests.clear();
    let base = std::mem::replace(project, Project::new(0, ""));
    let mut project = base;
    for iid in 1..=mrs {
        project = project.merge_request(
            MergeRequest::new(
                iid,
                fixtures::AUTHOR_ID,
                fixtures::HEAD_SHA,
                fixtures::BASE_SHA,
            )
            .branches(&format!("feature-{iid}"), "main"),
        );
    }
    state.projects[0] = project;
    FakeGitLab::start(state)
}

fn spawn_serve(o: &Options, fake: &FakeGitLab) -> (Child, u16) {
    let mut child = Command::new(&o.bin)
        .args(["serve", "--listen", "127.0.0.1:0", "--project"])
        .arg(fixtures::PROJECT_ID.to_string())
        .args(["--settle", &o.settle, "--sweep-interval", "off"])
        .env_clear()
        .env("CI_API_V4_URL", fake.base_url())
        .env("ASSENT_TOKEN", fixtures::BOT_TOKEN)
        .env("ASSENT_WEBHOOK_SECRET", SECRET)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("assent serve");
    let stderr = child.stderr.take().expect("stderr");
    let (port, _log) = serve_port_and_log(stderr);
    (child, port)
}

/// One HTTP/1.1 exchange on a fresh connection: the status, and the time to it.
fn exchange(port: u16, request: &[u8]) -> (u16, Duration) {
    let start = Instant::now();
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return (0, start.elapsed());
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    if stream.write_all(request).is_err() {
        return (0, start.elapsed());
    }
    let mut head = [0u8; 16];
    let mut got = 0;
    while got < 12 {
        match stream.read(&mut head[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    let elapsed = start.elapsed();
    let status = std::str::from_utf8(&head[..got])
        .ok()
        .and_then(|s| s.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    // Drain the rest so serve closes cleanly.
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
    (status, elapsed)
}

fn delivery(iid: u64, n: usize) -> Vec<u8> {
    let body = serde_json::json!({
        "object_kind": "merge_request", "event_type": "merge_request",
        "project": {"id": fixtures::PROJECT_ID, "path_with_namespace": fixtures::PROJECT_PATH},
        "object_attributes": {"iid": iid, "action": "update", "state": "opened"}
    })
    .to_string();
    format!(
        "POST /webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nX-Gitlab-Event: Merge Request Hook\r\nX-Gitlab-Token: {SECRET}\r\nIdempotency-Key: bench-{n}\r\nUser-Agent: GitLab/18.6.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn metrics(port: u16) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("metrics");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    text
}

/// The sum of a metric's samples whose line contains every one of `parts`.
fn metric_sum(text: &str, name: &str, parts: &[&str]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && parts.iter().all(|p| l.contains(p)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn main() {
    let o = options();
    if !o.run {
        return;
    }
    let fake = world(o.mrs);
    let (mut child, port) = spawn_serve(&o, &fake);
    std::thread::sleep(Duration::from_millis(500));
    let idle_kib = rss_kib(child.id(), "VmRSS:");
    let before = fake.requests().len();

    let total = o.rate * o.seconds;
    let next = Arc::new(AtomicUsize::new(0));
    let samples = Arc::new(Mutex::new(Vec::with_capacity(total)));
    let statuses = Arc::new(Mutex::new(std::collections::BTreeMap::<u16, usize>::new()));
    let touched = Arc::new(Mutex::new(std::collections::BTreeSet::new()));
    let start = Instant::now();
    let senders: Vec<_> = (0..SENDERS)
        .map(|_| {
            let (next, samples, statuses, touched) = (
                next.clone(),
                samples.clone(),
                statuses.clone(),
                touched.clone(),
            );
            let (rate, mrs) = (o.rate, o.mrs);
            std::thread::spawn(move || {
                loop {
                    let n = next.fetch_add(1, Ordering::Relaxed);
                    if n >= total {
                        break;
                    }
                    let due = Duration::from_secs_f64(n as f64 / rate as f64);
                    if let Some(wait) = due.checked_sub(start.elapsed()) {
                        std::thread::sleep(wait);
                    }
                    // A fixed spread over the MRs: every MR is hit about equally often.
                    let iid = (n as u64).wrapping_mul(7919) % mrs + 1;
                    let (status, latency) = exchange(port, &delivery(iid, n));
                    samples.lock().unwrap().push(latency);
                    *statuses.lock().unwrap().entry(status).or_default() += 1;
                    touched.lock().unwrap().insert(iid);
                }
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    let sending = start.elapsed();

    // Drain: every pending key classified (the queue empty, the count steady).
    let mut last = -1.0;
    let drain_start = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let text = metrics(port);
        let classified = metric_sum(&text, "assent_classifications_total", &["webhook"]);
        let queued = metric_sum(&text, "assent_queue_keys", &[]);
        if queued == 0.0 && classified == last {
            break;
        }
        last = classified;
        if drain_start.elapsed() > Duration::from_secs(300) {
            eprintln!("serve did not drain within 300 s");
            break;
        }
    }
    let peak_kib = rss_kib(child.id(), "VmHWM:");
    let text = metrics(port);
    let _ = child.kill();
    let _ = child.wait();

    let classified = metric_sum(&text, "assent_classifications_total", &["webhook"]);
    let requests: Vec<_> = fake.requests()[before..].to_vec();
    let reads = requests.iter().filter(|r| !r.write).count();
    let writes = requests.iter().filter(|r| r.write).count();
    let created = requests
        .iter()
        .filter(|r| r.write && r.route == RouteKind::Pipelines)
        .count();
    let user_reads = requests
        .iter()
        .filter(|r| r.route == RouteKind::User)
        .count();
    let mut samples = samples.lock().unwrap().clone();
    samples.sort();
    let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
    let touched = touched.lock().unwrap().len();
    let per = |x: usize| {
        if classified > 0.0 {
            format!("{:.2}", x as f64 / classified)
        } else {
            "-".into()
        }
    };

    println!(
        "assent serve: {total} Merge Request Hook deliveries at {} /s over {} MRs, settle {}",
        o.rate, o.mrs, o.settle
    );
    println!();
    println!("| measure | value |");
    println!("| --- | --- |");
    println!(
        "| deliveries sent | {total} in {:.2} s ({:.0} /s reached) |",
        sending.as_secs_f64(),
        total as f64 / sending.as_secs_f64()
    );
    println!(
        "| statuses | {} |",
        statuses
            .lock()
            .unwrap()
            .iter()
            .map(|(s, n)| format!("{s}: {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "| ack latency p50 / p99 / max (ms) | {} / {} / {} |",
        ms(percentile(&samples, 50.0)),
        ms(percentile(&samples, 99.0)),
        ms(*samples.last().unwrap_or(&Duration::ZERO))
    );
    println!("| MRs that got an event | {touched} |");
    println!(
        "| classifications (webhook) | {classified} ({:.3} per delivery; floor {touched}, {:.3}) |",
        classified / total as f64,
        touched as f64 / total as f64
    );
    println!(
        "| GitLab requests | {} reads, {} writes ({} pipelines created), {} `GET /user` |",
        reads, writes, created, user_reads
    );
    println!(
        "| requests per classification | {} reads, {} writes (formula: 1 MR read + 1 discussion page; ≤ 1 write) |",
        per(reads.saturating_sub(user_reads)),
        per(writes)
    );
    println!(
        "| serve RSS idle / peak (MiB) | {:.1} / {:.1} |",
        idle_kib as f64 / 1024.0,
        peak_kib as f64 / 1024.0
    );
}
