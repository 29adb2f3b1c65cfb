//! End-to-end benchmark: the compiled `assent` binary against the fake GitLab with injected
//! latency, over a matrix of merge-request sizes, cold run and rerun.
//!
//! ```text
//! cargo bench --bench e2e                      # --quick subset, a minute or two
//! cargo bench --bench e2e -- --full            # the whole matrix (several minutes)
//! cargo bench --bench e2e -- --full --only 10MB --latency-ms 20 --repeat 3
//! cargo bench --bench e2e -- --bin /path/to/another/assent   # compare two builds
//! cargo bench --bench e2e -- --startup         # spawn to first request, 50 runs
//! cargo bench --bench e2e -- --scale           # docs/contract.md#scale: 10,000 findings, a rate-limited GitLab
//! cargo bench --bench e2e -- --scale --rate-limit 300 --window-s 60 --rate-findings 600
//! ```
//!
//! `--scale` runs the scale cases instead of the matrix (docs/contract.md#scale, `docs/performance-e2e.md`):
//! F = 10,000 findings of one rule and of 100 rules, cold run then rerun, reporting what the
//! binary does (exit code and error line included: a run that fails is a result, not a
//! panic); then a first run of `--rate-findings` findings against a fake GitLab that allows
//! `--rate-limit` note creations per `--window-s` window and answers the rest with 429 and
//! `Retry-After` (GitLab's `notes_create` application limit), once without and once with
//! `RateLimit-*` headers (GitLab.com). For those it prints the note creations, the 429s met,
//! the rate-limit floor (note creations ÷ allowed rate) and the wall time against it.
//!
//! `--startup` measures something else: the time from spawning `assent run` to the first
//! bytes of its first HTTP request arriving on a bare loopback listener (no fake, no latency;
//! the child is killed once they arrive). That is the process start, argument and environment
//! parsing, and the HTTP client's setup (TLS roots, proxy rules) that every run pays before
//! its first round trip.
//!
//! Per case and run it prints: requests (reads, writes, discussion pages) as the fake logged
//! them and as the formula of `docs/performance-e2e.md` predicts, wall time, the critical
//! path (the latency of the requests that cannot overlap), their ratio, CPU time (user +
//! system) and peak RSS of the child process (from `wait4`'s `rusage`).
//!
//! `wall@0` is the same run with no injected latency (the client's and the fake's own time);
//! `(wall − wall@0) / critical` shows how much of the injected latency the run paid beyond the
//! critical path (1.00 = every overlappable request overlapped).
//!
//! The critical path: every request but a content read costs one latency (each depends on an
//! earlier answer or is a listing page, which stays sequential); the content reads of one
//! phase (policy files at the target SHA; governed files at the base and source SHAs) run on
//! a pool of `MAX_READERS`, so a phase of `n` reads costs `⌈n / MAX_READERS⌉` latencies.

// A benchmark reports on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use assent::engine::run::inputs::MAX_READERS;
use assent_test_support::perf_world;
use fake_gitlab::{FakeGitLab, FaultAction, FaultRule, LoggedRequest, RouteKind, fixtures};
use perf_world::{Expected, Scenario, discussion_count, expected_first_run, expected_rerun};

struct Options {
    full: bool,
    only: Vec<String>,
    latency_ms: u64,
    repeat: usize,
    /// The binary under test (default: the one Cargo built for this benchmark).
    bin: String,
    /// Measure spawn-to-first-request instead of the matrix.
    startup: bool,
    /// Run the scale cases instead of the matrix.
    scale: bool,
    /// Note creations the rate-limited fake allows per window.
    rate_limit: u64,
    /// The rate-limited fake's window, in seconds.
    window_s: u64,
    /// Findings of the rate-limited case.
    rate_findings: usize,
    /// Started by `cargo bench` (which passes `--bench`) or with `--run`; `cargo test
    /// --all-targets` runs bench targets without it, and then this one does nothing.
    run: bool,
}

fn options() -> Options {
    let mut o = Options {
        full: false,
        only: vec![],
        latency_ms: 20,
        repeat: 1,
        bin: env!("CARGO_BIN_EXE_assent").to_owned(),
        startup: false,
        scale: false,
        rate_limit: 300,
        window_s: 60,
        rate_findings: 600,
        run: false,
    };
    let number = |args: &mut std::iter::Skip<std::env::Args>, flag: &str| -> u64 {
        args.next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{flag} N"))
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => o.full = false,
            "--full" => o.full = true,
            "--only" => o.only.push(args.next().expect("--only NEEDLE")),
            "--latency-ms" => {
                o.latency_ms = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--latency-ms N")
            }
            "--repeat" => {
                o.repeat = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--repeat N")
            }
            "--bin" => {
                // Absolute: the child runs in a temporary directory.
                let path = args.next().expect("--bin PATH");
                o.bin = std::fs::canonicalize(&path)
                    .unwrap_or_else(|e| panic!("--bin {path}: {e}"))
                    .to_string_lossy()
                    .into_owned();
            }
            "--startup" => o.startup = true,
            "--scale" => o.scale = true,
            "--rate-limit" => o.rate_limit = number(&mut args, "--rate-limit").max(1),
            "--window-s" => o.window_s = number(&mut args, "--window-s").max(1),
            "--rate-findings" => o.rate_findings = number(&mut args, "--rate-findings") as usize,
            // Added by `cargo bench`.
            "--bench" | "--run" => o.run = true,
            other => panic!("unknown argument {other:?}; see the header of benches/e2e.rs"),
        }
    }
    o
}

#[derive(Clone, Copy)]
struct Files {
    count: usize,
    bytes: usize,
    label: &'static str,
}

const FILE_SETS: [Files; 3] = [
    Files {
        count: 1,
        bytes: 10_000,
        label: "1x10kB",
    },
    Files {
        count: 50,
        bytes: 10_000,
        label: "50x10kB",
    },
    Files {
        count: 1,
        bytes: 10_000_000,
        label: "1x10MB",
    },
];

struct Case {
    discussions: usize,
    findings: usize,
    files: Files,
}

impl Case {
    fn name(&self) -> String {
        format!(
            "D={} F={} {}",
            self.discussions, self.findings, self.files.label
        )
    }
    fn scenario(&self) -> Scenario {
        Scenario {
            discussions: self.discussions,
            findings: self.findings,
            files: self.files.count,
            file_bytes: self.files.bytes,
            rules: 1,
        }
    }
}

fn matrix(full: bool) -> Vec<Case> {
    let (ds, fs, files): (&[usize], &[usize], &[Files]) = if full {
        (&[10, 1_000, 5_000], &[1, 100, 1_000], &FILE_SETS)
    } else {
        (&[10, 1_000], &[1, 100], &FILE_SETS[..2])
    };
    let mut cases = vec![];
    for &discussions in ds {
        for &findings in fs {
            for &files in files {
                cases.push(Case {
                    discussions,
                    findings,
                    files,
                });
            }
        }
    }
    cases
}

/// What one child run cost.
struct Measured {
    exit: i32,
    wall: Duration,
    cpu: Duration,
    max_rss_kib: i64,
}

/// Runs `assent run` against `fake` through a measuring helper (this executable started
/// again with `--measure-child`), which spawns the binary and reaps it with `wait4`.
///
/// Why a helper: Linux carries a process's peak-RSS record across `exec`, and a child spawned
/// straight from this process starts with this process's peak (the fake GitLab and its
/// seeded merge request live here), so its `ru_maxrss` would be ours. The helper is a fresh,
/// small process; its child's record starts from the helper's footprint (a few MiB).
fn run_assent(bin: &str, fake: &FakeGitLab, dir: &Path) -> Measured {
    let status = perf_world::pipeline_env(
        Command::new(std::env::current_exe().unwrap())
            .arg("--measure-child")
            .arg(dir)
            .arg(bin)
            .current_dir(dir),
        &fake.base_url(),
    )
    .stdin(Stdio::null())
    .status()
    .expect("spawn the measuring helper");
    assert!(status.success(), "measuring helper failed: {status}");
    let text = std::fs::read_to_string(dir.join("rusage")).unwrap();
    let v: Vec<i64> = text
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    Measured {
        exit: v[0] as i32,
        wall: Duration::from_micros(v[1] as u64),
        cpu: Duration::from_micros(v[2] as u64),
        max_rss_kib: v[3],
    }
}

/// The helper: `--measure-child DIR BIN` runs `BIN run` (environment inherited, output to
/// `DIR/stdout` and `DIR/stderr`) and writes `exit wall_us cpu_us max_rss_kib` to
/// `DIR/rusage`.
fn measure_child(dir: &Path, bin: &str) {
    let stdout = File::create(dir.join("stdout")).unwrap();
    let stderr = File::create(dir.join("stderr")).unwrap();
    let start = Instant::now();
    // Reaped below with `wait4`, which `Child::wait` cannot replace: it drops the `rusage`.
    #[allow(clippy::zombie_processes)]
    // What a run costs, not whether its job passes: the measured MRs end at REVIEW, which
    // fails the job under the default `--fail-on review`.
    let child = Command::new(bin)
        .args(["run", "--fail-on", "never"])
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("spawn assent");
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value; `wait4` fills it for the child `pid`,
    // which this process spawned and nothing else waits for.
    // Test scaffolding: a libc call with no safe std equivalent; the workspace denies
    // `unsafe_code` everywhere else.
    #[allow(unsafe_code)]
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    #[allow(unsafe_code)]
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    assert_eq!(reaped, pid, "wait4 failed");
    // `time_t` and `suseconds_t` are not `i64` on every target.
    #[allow(clippy::unnecessary_cast)]
    let us = |t: libc::timeval| t.tv_sec as i64 * 1_000_000 + t.tv_usec as i64;
    let exit = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    std::fs::write(
        dir.join("rusage"),
        format!(
            "{exit} {} {} {}",
            wall.as_micros(),
            us(usage.ru_utime) + us(usage.ru_stime),
            usage.ru_maxrss
        ),
    )
    .unwrap();
}

#[derive(Default, Clone, Copy)]
struct Counted {
    reads: u64,
    writes: u64,
    discussion_pages: u64,
    /// Latencies on the critical path (see the module docs).
    critical: u64,
}

fn count(log: &[LoggedRequest]) -> Counted {
    let mut c = Counted::default();
    let (mut policy_reads, mut content_reads) = (0u64, 0u64);
    for r in log {
        if r.write {
            c.writes += 1;
        } else {
            c.reads += 1;
        }
        if r.method == "GET" && r.route == RouteKind::Discussions {
            c.discussion_pages += 1;
        }
        if r.route == RouteKind::FileRaw {
            if r.query.contains(fixtures::TARGET_SHA) {
                policy_reads += 1;
            } else {
                content_reads += 1;
            }
        } else {
            c.critical += 1;
        }
    }
    let pool = MAX_READERS as u64;
    c.critical += policy_reads.div_ceil(pool) + content_reads.div_ceil(pool);
    c
}

struct Row {
    case: String,
    run: &'static str,
    seen: Counted,
    expected: (u64, u64),
    measured: Measured,
    /// Wall time of the same run with no injected latency: the client's and the fake's own
    /// time, which the latency comes on top of.
    floor: Duration,
    latency_ms: u64,
}

fn print_header() {
    println!(
        "| case | run | reads | writes | disc. pages | formula r/w | wall ms | critical ms | wall/critical | wall@0 ms | (wall−wall@0)/critical | CPU ms | peak RSS MiB |"
    );
    println!("|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|");
}

fn print_row(row: &Row) {
    let critical_ms = row.seen.critical * row.latency_ms;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let ratio = |wall: f64| {
        if critical_ms == 0 {
            "-".to_owned()
        } else {
            format!("{:.2}", wall / critical_ms as f64)
        }
    };
    let formula = if (row.seen.reads, row.seen.writes) == row.expected {
        "= formula".to_owned()
    } else {
        format!("**{}/{} expected**", row.expected.0, row.expected.1)
    };
    println!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} |",
        row.case,
        row.run,
        row.seen.reads,
        row.seen.writes,
        row.seen.discussion_pages,
        formula,
        row.measured.wall.as_millis(),
        critical_ms,
        ratio(ms(row.measured.wall)),
        row.floor.as_millis(),
        ratio(ms(row.measured.wall) - ms(row.floor)),
        row.measured.cpu.as_millis(),
        row.measured.max_rss_kib as f64 / 1024.0,
    );
}

/// Cold run then rerun of `case` on a fresh fake with `latency_ms` per request.
fn run_pair(bin: &str, case: &Case, latency_ms: u64) -> Vec<(Counted, Expected, Measured)> {
    let scenario = case.scenario();
    let fake = FakeGitLab::start(fixtures::basic());
    fake.set_time("2026-01-01T00:00:00.000Z");
    perf_world::seed(&fake, &scenario);
    if latency_ms > 0 {
        fake.inject(FaultRule::new(FaultAction::Latency { ms: latency_ms }));
    }
    let dir = tempfile::tempdir().unwrap();
    let mut out = vec![];
    for run in ["cold", "rerun"] {
        let expected = if run == "cold" {
            expected_first_run(&scenario)
        } else {
            expected_rerun(&scenario, discussion_count(&fake))
        };
        fake.reset_log();
        let measured = run_assent(bin, &fake, dir.path());
        if measured.exit != 0 {
            let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
            panic!("{} {run}: exit {}: {stderr}", case.name(), measured.exit);
        }
        out.push((count(&fake.requests()), expected, measured));
    }
    out
}

fn run_case(bin: &str, case: &Case, latency_ms: u64) -> Vec<Row> {
    let floors: Vec<Duration> = if latency_ms > 0 {
        run_pair(bin, case, 0)
            .into_iter()
            .map(|(_, _, m)| m.wall)
            .collect()
    } else {
        vec![Duration::ZERO; 2]
    };
    run_pair(bin, case, latency_ms)
        .into_iter()
        .zip(["cold", "rerun"])
        .zip(floors)
        .map(|(((seen, expected, measured), run), floor)| Row {
            case: case.name(),
            run,
            seen,
            expected: (expected.reads, expected.writes),
            measured,
            floor,
            latency_ms,
        })
        .collect()
}

// ---- scale (docs/contract.md#scale) ------------------------------------------------------------------------

/// The last `error:` line of a run's stderr, shortened for a table cell.
fn error_line(dir: &Path) -> String {
    let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("error: "))
        .unwrap_or("-")
        .replace('|', "\\|");
    match line.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Note creations in `log` (POSTs of threads, replies and plain notes), and how many of them
/// were answered 429.
fn note_creations(log: &[LoggedRequest]) -> (u64, u64) {
    let creations: Vec<&LoggedRequest> = log
        .iter()
        .filter(|r| {
            r.method == "POST"
                && matches!(
                    r.route,
                    RouteKind::Discussions | RouteKind::DiscussionNotes | RouteKind::Notes
                )
        })
        .collect();
    let refused = creations.iter().filter(|r| r.status == Some(429)).count();
    (creations.len() as u64, refused as u64)
}

/// F = 10,000 findings of one rule and of 100 rules, cold run and rerun, on a fake with
/// `latency_ms` per request.
fn run_big_mrs(bin: &str, latency_ms: u64) {
    println!(
        "\n### F = 10,000 findings ({latency_ms} ms per request)\n\n| case | run | exit | reads | writes | wall ms | CPU ms | peak RSS MiB | error |\n|---|---|---:|---:|---:|---:|---:|---:|---|"
    );
    for (label, scenario) in [
        (
            "F=10000, 1 rule, 10 files",
            Scenario {
                discussions: 10,
                findings: 10_000,
                files: 10,
                file_bytes: 10_000,
                rules: 1,
            },
        ),
        (
            "F=10000, 100 rules, 100 files",
            Scenario {
                discussions: 10,
                findings: 10_000,
                files: 100,
                file_bytes: 10_000,
                rules: 100,
            },
        ),
    ] {
        let fake = FakeGitLab::start(fixtures::basic());
        fake.set_time("2026-01-01T00:00:00.000Z");
        perf_world::seed(&fake, &scenario);
        if latency_ms > 0 {
            fake.inject(FaultRule::new(FaultAction::Latency { ms: latency_ms }));
        }
        let dir = tempfile::tempdir().unwrap();
        for run in ["cold", "rerun"] {
            fake.reset_log();
            let m = run_assent(bin, &fake, dir.path());
            let seen = count(&fake.requests());
            println!(
                "| {label} | {run} | {} | {} | {} | {} | {} | {:.1} | {} |",
                m.exit,
                seen.reads,
                seen.writes,
                m.wall.as_millis(),
                m.cpu.as_millis(),
                m.max_rss_kib as f64 / 1024.0,
                error_line(dir.path())
            );
        }
    }
}

/// A first run of `findings` findings against a fake allowing `limit` note creations per
/// `window_s` seconds, without and with `RateLimit-*` headers.
fn run_rate_limited(bin: &str, latency_ms: u64, limit: u64, window_s: u64, findings: usize) {
    println!(
        "\n### A note-creation limit of {limit} per {window_s} s, F = {findings} ({latency_ms} ms per request)\n\n| headers | exit | writes | note creations | 429s met | floor s | window floor s | wall s | wall/floor | error |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    // One thread per finding needs rules that fire at most `GROUP_ABOVE` times each: one
    // rule's 600 findings would be one grouped thread (docs/contract.md#grouping) and meet no limit.
    let rules = findings.div_ceil(perf_world::GROUP_ABOVE).max(1);
    let scenario = Scenario {
        discussions: 10,
        findings,
        files: rules,
        file_bytes: 10_000,
        rules,
    };
    for headers in [false, true] {
        let fake = FakeGitLab::start(fixtures::basic());
        fake.set_time("2026-01-01T00:00:00.000Z");
        perf_world::seed(&fake, &scenario);
        if latency_ms > 0 {
            fake.inject(FaultRule::new(FaultAction::Latency { ms: latency_ms }));
        }
        fake.inject(
            FaultRule::new(FaultAction::WindowLimit {
                limit,
                window_ms: window_s * 1_000,
                headers,
            })
            .note_creation(),
        );
        let dir = tempfile::tempdir().unwrap();
        let m = run_assent(bin, &fake, dir.path());
        let log = fake.requests();
        let seen = count(&log);
        let (creations, refused) = note_creations(&log);
        // Applied note creations over the allowed rate: the least time GitLab lets them take.
        let applied = creations - refused;
        let floor = applied as f64 * window_s as f64 / limit as f64;
        // A fixed window lets `limit` through at once, so the last window's share costs no
        // wait: the true least time is the start of the window the last creation falls in.
        let window_floor = (applied.saturating_sub(1) / limit * window_s) as f64;
        let wall = m.wall.as_secs_f64();
        println!(
            "| {} | {} | {} | {applied} | {refused} | {floor:.1} | {window_floor:.1} | {wall:.1} | {:.2} | {} |",
            if headers { "RateLimit-*" } else { "none" },
            m.exit,
            seen.writes,
            wall / floor,
            error_line(dir.path())
        );
    }
}

fn run_scale(o: &Options) {
    println!(
        "assent e2e scale benchmark, {} ms latency per request, binary {}",
        o.latency_ms, o.bin
    );
    run_big_mrs(&o.bin, o.latency_ms);
    run_rate_limited(
        &o.bin,
        o.latency_ms,
        o.rate_limit,
        o.window_s,
        o.rate_findings,
    );
}

/// Spawn to the first request byte, `runs` times; prints the median, the 90th percentile and
/// the extremes.
fn measure_startup(bin: &str, runs: usize) {
    use std::io::Read;
    use std::net::TcpListener;

    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
            let port = listener.local_addr().expect("local address").port();
            let start = Instant::now();
            let api_url = format!("http://127.0.0.1:{port}/api/v4");
            let mut child = perf_world::pipeline_env(Command::new(bin).arg("run"), &api_url)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn assent");
            let (mut stream, _) = listener.accept().expect("assent connects");
            let mut first = [0u8; 1];
            stream.read_exact(&mut first).expect("a request byte");
            let elapsed = start.elapsed();
            let _ = child.kill();
            let _ = child.wait();
            elapsed
        })
        .collect();
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "startup to first request, {runs} runs of {bin}: median {:.2} ms, p90 {:.2} ms, min {:.2} ms, max {:.2} ms",
        ms(at(0.5)),
        ms(at(0.9)),
        ms(samples[0]),
        ms(samples[samples.len() - 1]),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--measure-child") {
        measure_child(Path::new(&args[2]), &args[3]);
        return;
    }
    let o = options();
    if !o.run {
        println!("e2e: not started by `cargo bench` (pass --run to run it directly); skipped");
        return;
    }
    if o.startup {
        measure_startup(&o.bin, 50);
        return;
    }
    if o.scale {
        run_scale(&o);
        return;
    }
    let cases: Vec<Case> = matrix(o.full)
        .into_iter()
        .filter(|c| {
            o.only
                .iter()
                .all(|needle| c.name().contains(needle.as_str()))
        })
        .collect();
    println!(
        "assent e2e benchmark: {} cases, {} ms latency per request, pool of {MAX_READERS} readers, binary {}",
        cases.len(),
        o.latency_ms,
        o.bin
    );
    print_header();
    for case in &cases {
        for _ in 0..o.repeat {
            for row in run_case(&o.bin, case, o.latency_ms) {
                print_row(&row);
            }
        }
    }
}
