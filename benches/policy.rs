//! `PolicySet::evaluate` over 10,000 field-level changes and the ten benchmark rules (with
//! CEL predicates, templates and identity-keyed entries).

// A benchmark reports on the terminal.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use std::hint::black_box;
use std::time::Duration;

use assent::core::model::{Change, ChangeKind};
use assent::core::policy::MrContext;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

/// `n` changes over topics, cycling through the fields the rules look at (and some no rule
/// matches), so roughly half the changes reach a predicate.
fn changes(n: usize) -> Vec<Change> {
    (0..n)
        .map(|i| {
            let topic = format!("/topics/domain{:02}.t{i:07}.events.v1", i % 64);
            let file = format!("topics/domain{:02}.yaml", i % 16);
            let (pointer, kind, old, new) = match i % 8 {
                0 => ("/retention_days", ChangeKind::Modify, json!(30), json!(i % 40)),
                1 => ("/partitions", ChangeKind::Modify, json!(12), json!(i % 24)),
                2 => ("/owner", ChangeKind::Modify, json!("team-a"), json!("team-b")),
                3 => ("/replication", ChangeKind::Modify, json!(3), json!(i % 4)),
                4 => (
                    "/acls/svc-search",
                    ChangeKind::Add,
                    json!(null),
                    json!({"principal": "svc-search", "operation": if i % 3 == 0 { "write" } else { "read" }}),
                ),
                5 => (
                    "/description",
                    ChangeKind::Modify,
                    json!("Events of the aggregate, consumed by analytics."),
                    json!("Events."),
                ),
                6 => ("/labels/tier", ChangeKind::Modify, json!("gold"), json!("silver")),
                _ => ("/cleanup_policy", ChangeKind::Modify, json!("delete"), json!("compact")),
            };
            Change {
                file,
                pointer: format!("{topic}{pointer}"),
                kind,
                old: (kind != ChangeKind::Add).then_some(old),
                new: Some(new),
                old_line: None,
                new_line: None,
            }
        })
        .collect()
}

fn benches(c: &mut Criterion) {
    let policies = common::policy_set();
    assert_eq!(policies.rule_ids().len(), 10);
    let changes = changes(10_000);
    let mr = MrContext::default();
    let findings = policies.evaluate(&changes, &mr).findings;
    assert!(findings.len() > 1_000, "{}", findings.len());
    assert!(
        findings
            .iter()
            .all(|f| !f.message.contains("could not be evaluated"))
    );
    eprintln!("10,000 changes x 10 rules: {} findings", findings.len());
    let mut group = c.benchmark_group("policy");
    group.sample_size(10);
    group.bench_function("evaluate/10000_changes_10_rules", |b| {
        b.iter(|| policies.evaluate(black_box(&changes), &mr).findings)
    });
    group.finish();
}

criterion_group! {
    name = policy;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = benches
}
criterion_main!(policy);
