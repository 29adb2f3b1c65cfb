//! `assent check` as an author runs it: the release binary on a local git checkout, against
//! the engine's own desired-state time on the same inputs (docs/performance.md, "`assent
//! check`").
//!
//! ```text
//! cargo build --release --bin assent
//! cargo bench --bench check                          # 10 runs of each case
//! cargo bench --bench check -- --runs 20 --bin /path/to/another/assent
//! ```
//!
//! Cases, each in a temporary git repository (no configuration of the user's read):
//!
//! * the example registry (`fixtures/repos/topic-registry`) with one retention cut in the
//!   working tree: `assent check --base main`, the author's loop;
//! * the generated 10 MB registry (`common::topic_registry`, the benchmark policy
//!   `common::POLICY`), the change committed on `feature`: `assent check --base main --head
//!   feature`, and the same change as the working tree (`git add --all` and `write-tree`
//!   through a temporary index on top);
//! * the engine alone: `compute_desired_state` in this process on the same two texts and
//!   policy, the inputs already in memory (what `compute_desired_state/10MB` of
//!   `benches/semantic_diff.rs` measures).
//!
//! Each prints the median and the range of its wall times; the 10 MB cases their ratio to
//! the engine's median. A check's findings are asserted to be the engine's, so a fast wrong
//! answer cannot pass for a fast right one.

// A benchmark reports on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use assent_test_support::git_repo::GitRepo;

use assent::core::desired_state::{
    ChangedFileInput, FileContent, ReviewInputs, compute_desired_state,
};
use assent::core::policy::{MrContext, PolicyFile};
use assent::core::semantic_diff::Limits;

const REGISTRY: &str = "topics/registry.yaml";
const POLICY_PATH: &str = ".assent/policies/topics.yaml";

struct Options {
    bin: PathBuf,
    runs: usize,
}

fn options() -> Options {
    let mut options = Options {
        bin: Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/assent"),
        runs: 10,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bin" => options.bin = PathBuf::from(args.next().expect("--bin PATH")),
            "--runs" => options.runs = args.next().and_then(|n| n.parse().ok()).expect("--runs N"),
            // What `cargo bench` passes to every bench target.
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(
        options.bin.is_file(),
        "{} is not built: cargo build --release --bin assent",
        options.bin.display()
    );
    options
}

/// Runs `assent check ARGS` in `repo`; panics unless it exits 0 or 1 (a verdict).
fn run_check(repo: &GitRepo, bin: &Path, args: &[&str]) -> Output {
    let out = repo
        .command_in(repo.dir(), bin)
        .arg("check")
        .args(args)
        .output()
        .expect("assent runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "assent check {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Wall times of `runs` calls of `f`, sorted.
fn times(runs: usize, mut f: impl FnMut()) -> Vec<Duration> {
    let mut all: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    all.sort();
    all
}

fn median(times: &[Duration]) -> Duration {
    times[times.len() / 2]
}

fn report(name: &str, times: &[Duration]) -> Duration {
    let m = median(times);
    println!(
        "{name:<58} median {:>8.1} ms  ({:.1}–{:.1} ms, {} runs)",
        m.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3,
        times.len()
    );
    m
}

fn findings_of(out: &Output) -> usize {
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a CheckReport");
    doc["findings"].as_array().expect("findings").len()
}

/// Every file of `fixtures/repos/<name>` written into `repo`.
fn copy_fixture(repo: &GitRepo, name: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/repos")
        .join(name);
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(&root).unwrap().to_string_lossy();
                repo.write(&rel, &std::fs::read(&path).unwrap());
            }
        }
    }
}

fn example_registry(options: &Options) {
    let repo = GitRepo::new("Bench");
    copy_fixture(&repo, "topic-registry");
    repo.commit("the example registry");
    let orders = std::fs::read_to_string(repo.dir().join("topics/orders.yaml")).unwrap();
    repo.write(
        "topics/orders.yaml",
        orders
            .replacen("retention_days: 30", "retention_days: 7", 1)
            .as_bytes(),
    );
    let out = run_check(&repo, &options.bin, &["--base", "main", "--format", "json"]);
    assert_eq!(findings_of(&out), 1, "the retention cut is challenged");
    report(
        "example registry, working tree (assent check --base main)",
        &times(options.runs, || {
            run_check(&repo, &options.bin, &["--base", "main"]);
        }),
    );
}

fn ten_megabytes(options: &Options) {
    let (old, new) = common::topic_registry(10_000_000);
    println!(
        "10 MB registry: {} bytes at the base, {} at the head",
        old.len(),
        new.len()
    );
    let repo = GitRepo::new("Bench");
    repo.write(POLICY_PATH, common::POLICY.as_bytes());
    repo.write(REGISTRY, old.as_bytes());
    repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write(REGISTRY, new.as_bytes());
    repo.commit("head");

    let inputs = ReviewInputs {
        policy_files: vec![PolicyFile {
            path: POLICY_PATH.to_owned(),
            bytes: common::POLICY.as_bytes().to_vec(),
        }],
        policy_problems: Vec::new(),
        self_edit_sides: Default::default(),
        changed_files: Ok(vec![ChangedFileInput {
            old_path: REGISTRY.to_owned(),
            new_path: REGISTRY.to_owned(),
            base: FileContent::Present(old.into_bytes()),
            source: FileContent::Present(new.into_bytes()),
        }]),
        mr: MrContext::default(),
        limits: Limits::default(),
    };
    let expected = compute_desired_state(inputs.clone()).desired.findings.len();
    let committed = ["--base", "main", "--head", "feature", "--format", "json"];
    assert_eq!(
        findings_of(&run_check(&repo, &options.bin, &committed)),
        expected,
        "check finds what the engine finds"
    );
    let worktree = ["--base", "main", "--format", "json"];
    assert_eq!(
        findings_of(&run_check(&repo, &options.bin, &worktree)),
        expected,
        "the working tree is the head"
    );
    // Interleaved, so a load that comes and goes on a shared machine weighs on the three
    // alike, and their ratio means something even when their absolute times do not.
    let (mut engine, mut check, mut check_worktree) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..options.runs {
        let copy = inputs.clone();
        let start = Instant::now();
        black_box(compute_desired_state(black_box(copy)));
        engine.push(start.elapsed());
        check.extend(times(1, || {
            run_check(&repo, &options.bin, &committed);
        }));
        check_worktree.extend(times(1, || {
            run_check(&repo, &options.bin, &worktree);
        }));
    }
    for all in [&mut engine, &mut check, &mut check_worktree] {
        all.sort();
    }
    let engine = report("10 MB: engine, compute_desired_state in process", &engine);
    let check = report("10 MB: assent check --base main --head feature", &check);
    let check_worktree = report(
        "10 MB: assent check --base main (the working tree)",
        &check_worktree,
    );
    let ratio = |d: Duration| d.as_secs_f64() / engine.as_secs_f64();
    println!(
        "10 MB: check / engine: {:.2} (committed head), {:.2} (working tree); {expected} findings",
        ratio(check),
        ratio(check_worktree)
    );
}

fn main() {
    let options = options();
    example_registry(&options);
    ten_megabytes(&options);
}
