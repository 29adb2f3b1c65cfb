//! Semantic diff of a generated topic registry in YAML (10 kB and 10 MB), with the topic
//! list and each topic's ACL list keyed by identity: parsing one side, diffing two parsed
//! sides, and the whole desired-state computation (parse both sides, diff, evaluate the ten
//! benchmark rules).

// A benchmark reports on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use std::hint::black_box;
use std::time::Duration;

use assent::core::desired_state::{
    ChangedFileInput, FileContent, ReviewInputs, compute_desired_state,
};
use assent::core::policy::{MrContext, PolicyFile};
use assent::core::semantic_diff::{Format, Limits, Node, diff_documents, parse_document};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};

const FILE: &str = "topics/registry.yaml";

fn benches(c: &mut Criterion) {
    let policies = common::policy_set();
    let identity = |pointer: &str| policies.identity_for(FILE, pointer);
    let limits = Limits::default();
    let mut group = c.benchmark_group("semantic_diff");
    group.sample_size(10);
    for (label, bytes) in [("10kB", 10_000), ("10MB", 10_000_000)] {
        let (old_text, new_text) = common::topic_registry(bytes);
        let old = parse_document(FILE, Format::Yaml, old_text.as_bytes(), &limits)
            .expect("generated registry parses");
        let new = parse_document(FILE, Format::Yaml, new_text.as_bytes(), &limits)
            .expect("generated registry parses");
        let found = diff_documents(FILE, Some(&old), Some(&new), &identity);
        assert!(
            found.ambiguities.is_empty(),
            "the generated registry is unambiguous"
        );
        let changes = found.changes;
        assert!(!changes.is_empty());
        assert!(
            changes
                .iter()
                .all(|c| c.pointer.starts_with("/topics/domain"))
        );
        eprintln!(
            "{label}: {} bytes, {} topics, {} changes",
            old_text.len(),
            old.get("topics")
                .and_then(Node::as_array)
                .map_or(0, <[_]>::len),
            changes.len()
        );

        group.bench_with_input(
            BenchmarkId::new("parse_document", label),
            &old_text,
            |b, text| {
                b.iter(|| parse_document(FILE, Format::Yaml, black_box(text.as_bytes()), &limits))
            },
        );
        group.bench_with_input(
            BenchmarkId::new("diff_documents", label),
            &(&old, &new),
            |b, (old, new)| {
                b.iter(|| {
                    diff_documents(FILE, Some(black_box(old)), Some(black_box(new)), &identity)
                })
            },
        );
        let inputs = ReviewInputs {
            policy_files: vec![PolicyFile {
                path: ".assent/policies/topics.yaml".to_owned(),
                bytes: common::POLICY.as_bytes().to_vec(),
            }],
            policy_problems: Vec::new(),
            self_edit_sides: Default::default(),
            changed_files: Ok(vec![ChangedFileInput {
                old_path: FILE.to_owned(),
                new_path: FILE.to_owned(),
                base: FileContent::Present(old_text.into_bytes()),
                source: FileContent::Present(new_text.into_bytes()),
            }]),
            mr: MrContext::default(),
            limits,
        };
        let outcome = compute_desired_state(inputs.clone());
        assert!(!outcome.desired.findings.is_empty());
        assert!(
            outcome
                .desired
                .findings
                .iter()
                .all(|f| !f.slot.rule.starts_with("assent/")),
            "no built-in finding expected"
        );
        eprintln!("{label}: {} findings", outcome.desired.findings.len());
        group.bench_with_input(
            BenchmarkId::new("compute_desired_state", label),
            &inputs,
            |b, inputs| {
                b.iter_batched(
                    || inputs.clone(),
                    |inputs| compute_desired_state(black_box(inputs)),
                    BatchSize::LargeInput,
                )
            },
        );
    }
    group.finish();
}

criterion_group! {
    name = semantic;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(semantic);
