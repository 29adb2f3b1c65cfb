//! Peak resident memory of the largest library-level cases, each run once.
//!
//! `cargo bench --bench peak_rss` prints one line per case: the peak RSS (`VmHWM` from
//! `/proc/self/status`) of a fresh process that ran only that case, its RSS before the case
//! started, the peak of the bytes the heap held (counted by a wrapper around the system
//! allocator: what the case needs, without the allocator's fragmentation), and the case's
//! wall time. Each case runs in its own process (the benchmark
//! re-executes itself) because the allocator keeps freed memory, so a second case in the
//! same process would start from the first one's heap.

// A benchmark reports on the terminal; counting the heap needs a global allocator.
#![allow(clippy::print_stdout, clippy::print_stderr, unsafe_code)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use assent::core::desired_state::{
    ChangedFileInput, FileContent, ReviewInputs, compute_desired_state,
};
use assent::core::inventory::Inventory;
use assent::core::model::{Change, ChangeKind};
use assent::core::planner::plan_reconciliation;
use assent::core::policy::{MrContext, PolicyFile};
use assent::core::review_state::finding_statuses;
use assent::core::semantic_diff::{Format, Limits, Node, parse_document};
use assent::core::who_assents::AssentFacts;
use assent::engine::run::reconcile::reconcile;

/// The system allocator, counting the bytes it holds: the heap a case needs, apart from what
/// the allocator's fragmentation adds to the RSS.
struct CountingAllocator;

static HELD: AtomicUsize = AtomicUsize::new(0);
static HELD_PEAK: AtomicUsize = AtomicUsize::new(0);

fn hold(bytes: usize) {
    let now = HELD.fetch_add(bytes, Relaxed) + bytes;
    HELD_PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call is passed to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        hold(layout.size());
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            hold(new_size - layout.size());
        } else {
            HELD.fetch_sub(layout.size() - new_size, Relaxed);
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux /proc");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("field present")
}

fn measure(name: &str, case: impl FnOnce() -> String) {
    let before = status_kib("VmRSS:");
    let start = Instant::now();
    let detail = case();
    let elapsed = start.elapsed();
    let peak = status_kib("VmHWM:");
    let mib = |bytes: usize| bytes as f64 / (1024.0 * 1024.0);
    println!(
        "{name:<48} peak RSS {:>7.1} MiB (from {:>6.1} MiB)  heap peak {:>7.1} MiB  {:>8.1} ms  {detail}",
        peak as f64 / 1024.0,
        before as f64 / 1024.0,
        mib(HELD_PEAK.load(Relaxed)),
        elapsed.as_secs_f64() * 1000.0
    );
}

const CASES: [&str; 7] = [
    "parse_document/10MB",
    "compute_desired_state/10MB",
    "compute_desired_state/150k_topics_nulled",
    "compute_desired_state/150k_topics_nulled/no_rule_on_topics",
    "planner/5000d/1000f",
    "reconcile/first_run/5000d/1000f",
    "policy/evaluate",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--case") {
        run_case(&args[i + 1]);
        return;
    }
    // `cargo bench` passes `--bench`; any other argument is a filter on case names.
    let filter = args.iter().find(|a| !a.starts_with("--"));
    let exe = std::env::current_exe().expect("own path");
    println!(
        "{:<48} peak RSS {:>7.1} MiB",
        "process start",
        status_kib("VmHWM:") as f64 / 1024.0
    );
    for case in CASES {
        if filter.is_some_and(|f| !case.contains(f.as_str())) {
            continue;
        }
        let status = std::process::Command::new(&exe)
            .args(["--case", case])
            .status()
            .expect("re-executing the benchmark");
        assert!(status.success(), "case {case} failed");
    }
}

fn run_case(case: &str) {
    let wanted = |name: &str| name == case;
    if wanted("parse_document/10MB") {
        measure("parse_document/10MB YAML, one side (input incl.)", || {
            let (old, _) = common::topic_registry(10_000_000);
            let tree = parse_document(
                "topics/registry.yaml",
                Format::Yaml,
                old.as_bytes(),
                &Limits::default(),
            )
            .expect("the generated registry parses");
            let topics = tree.get("topics").and_then(Node::as_array);
            format!("{} topics", topics.map_or(0, <[_]>::len))
        });
    }
    if wanted("compute_desired_state/10MB") {
        measure("compute_desired_state/10MB YAML (inputs incl.)", || {
            let (old, new) = common::topic_registry(10_000_000);
            let inputs = ReviewInputs {
                policy_files: vec![PolicyFile {
                    path: ".assent/policies/topics.yaml".to_owned(),
                    bytes: common::POLICY.as_bytes().to_vec(),
                }],
                policy_problems: Vec::new(),
                self_edit_sides: Default::default(),
                changed_files: Ok(vec![ChangedFileInput {
                    old_path: "topics/registry.yaml".to_owned(),
                    new_path: "topics/registry.yaml".to_owned(),
                    base: FileContent::Present(old.into_bytes()),
                    source: FileContent::Present(new.into_bytes()),
                }]),
                mr: MrContext::default(),
                limits: Default::default(),
            };
            let outcome = compute_desired_state(inputs);
            format!("{} findings", outcome.desired.findings.len())
        });
    }
    // The same merge request judged by the example's rules, and (the baseline: parsing, the
    // diff and the one change at `/topics`, as before descendants reached rules) by a policy
    // with no rule on anything under `/topics`.
    for (case, label, keep_rules) in [
        (
            "compute_desired_state/150k_topics_nulled",
            "compute_desired_state/150k topics set to null",
            true,
        ),
        (
            "compute_desired_state/150k_topics_nulled/no_rule_on_topics",
            "  the same, no rule under /topics (baseline)",
            false,
        ),
    ] {
        if !wanted(case) {
            continue;
        }
        measure(label, || {
            // The example's policies: `topics: null` is a delete of every topic and field
            // for them (docs/policies.md, "How changes reach rules").
            let dir = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/fixtures/repos/topic-registry/.assent/policies"
            );
            let mut policy_files: Vec<PolicyFile> = std::fs::read_dir(dir)
                .expect("the example policies")
                .map(|entry| {
                    let path = entry.expect("an entry").path();
                    PolicyFile {
                        path: format!(
                            ".assent/policies/{}",
                            path.file_name().unwrap().to_string_lossy()
                        ),
                        bytes: std::fs::read(&path).expect("a policy file"),
                    }
                })
                .collect();
            policy_files.sort_by(|a, b| a.path.cmp(&b.path));
            if !keep_rules {
                policy_files = vec![PolicyFile {
                    path: ".assent/policies/file.yaml".to_owned(),
                    bytes: b"apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: registry-file-deleted\n    match: { files: [\"topics/*.yaml\"], pointer: \"\", kinds: [delete] }\n    effect: block\n".to_vec(),
                }];
            }
            let mut base = String::from("topics:\n");
            for i in 0..150_000 {
                base.push_str(&format!(
                    "  - name: t{i:06}\n    retention_days: 30\n    owner: team-{}\n    cleanup_policy: delete\n",
                    i % 50
                ));
            }
            let base_bytes = base.len();
            let inputs = ReviewInputs {
                policy_files,
                policy_problems: Vec::new(),
                self_edit_sides: Default::default(),
                changed_files: Ok(vec![ChangedFileInput {
                    old_path: "topics/registry.yaml".to_owned(),
                    new_path: "topics/registry.yaml".to_owned(),
                    base: FileContent::Present(base.into_bytes()),
                    source: FileContent::Present(b"topics: null\n".to_vec()),
                }]),
                mr: MrContext::default(),
                limits: Default::default(),
            };
            let outcome = compute_desired_state(inputs);
            let rules: Vec<&str> = outcome
                .desired
                .findings
                .iter()
                .map(|f| f.slot.rule.as_str())
                .collect();
            assert!(
                !rules.iter().any(|r| r.starts_with("assent/")),
                "judged in full: {rules:?}"
            );
            format!(
                "{base_bytes} bytes, {} changes judged, findings {rules:?}",
                outcome.changes.len()
            )
        });
    }
    if wanted("planner/5000d/1000f") {
        measure("planner/5000d/1000f (listing incl.)", || {
            let listing = common::listing(5_000, 1_000);
            let desired = common::desired(1_000);
            let inventory = Inventory::from_listing(&listing, common::BOT);
            let plan = plan_reconciliation(&desired, &inventory, &common::sha(common::HEAD));
            let statuses = finding_statuses(&desired, &inventory, &AssentFacts::default());
            format!("{} writes, {} statuses", plan.writes.len(), statuses.len())
        });
    }
    if wanted("reconcile/first_run/5000d/1000f") {
        measure("reconcile/first_run/5000d/1000f (forge incl.)", || {
            let forge = common::forge_with_human_threads(5_000);
            let desired = common::desired(1_000);
            let out = reconcile(&forge, &desired, &common::run_context()).expect("first run");
            format!(
                "{} reads, {} writes",
                out.receipt.requests.reads, out.receipt.requests.writes
            )
        });
    }
    if wanted("policy/evaluate") {
        measure("policy/evaluate/10000 changes x 10 rules", || {
            let policies = common::policy_set();
            let changes: Vec<_> = (0..10_000)
                .map(|i| Change {
                    file: "topics/a.yaml".to_owned(),
                    pointer: format!("/topics/t{i}/retention_days"),
                    kind: ChangeKind::Modify,
                    old: Some(serde_json::json!(30)),
                    new: Some(serde_json::json!(i % 40)),
                    old_line: None,
                    new_line: None,
                })
                .collect();
            let findings = policies.evaluate(&changes, &MrContext::default()).findings;
            format!("{} findings", findings.len())
        });
    }
}
