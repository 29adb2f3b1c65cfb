//! `reconcile` end to end on the in-memory forge: a first run (no bot artifact yet, N
//! creates among D human discussions), a rerun on the unchanged MR (zero writes), and a run
//! over the mixed generated state (every state-table row), at D = 10 / 1,000 / 5,000 and
//! N = 1 / 100 / 1,000.

mod common;

use std::time::Duration;

use assent::engine::run::reconcile::reconcile;
use assent::forge::Forge;
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};

use common::{DISCUSSIONS, FINDINGS};

fn benches(c: &mut Criterion) {
    let ctx = common::run_context();
    let mut group = c.benchmark_group("reconcile");
    group.sample_size(10);
    for discussions in DISCUSSIONS {
        for findings in FINDINGS {
            let size = format!("{discussions}d/{findings}f");
            let desired = common::desired(findings);
            group.bench_function(BenchmarkId::new("first_run", &size), |b| {
                b.iter_batched(
                    || common::forge_with_human_threads(discussions),
                    |forge| {
                        let out = reconcile(&forge, &desired, &ctx).expect("first run");
                        assert!(out.receipt.rescan.verified);
                        forge
                    },
                    BatchSize::PerIteration,
                )
            });

            let forge = common::forge_with_human_threads(discussions);
            reconcile(&forge, &desired, &ctx).expect("first run");
            let before = forge.request_counts();
            reconcile(&forge, &desired, &ctx).expect("rerun");
            assert_eq!(
                forge.request_counts().writes,
                before.writes,
                "a rerun writes"
            );
            group.bench_function(BenchmarkId::new("rerun", &size), |b| {
                b.iter(|| reconcile(&forge, &desired, &ctx).expect("rerun"))
            });

            let listing = common::listing(discussions, findings);
            group.bench_function(BenchmarkId::new("mixed_state", &size), |b| {
                b.iter_batched(
                    || common::forge_from_listing(&listing),
                    |forge| {
                        reconcile(&forge, &desired, &ctx).expect("mixed run");
                        forge
                    },
                    BatchSize::PerIteration,
                )
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = executor;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(executor);
