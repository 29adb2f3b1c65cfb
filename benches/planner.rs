//! The pure steps of a run over generated listings: reading the inventory, planning,
//! verifying a rescan and computing finding statuses, at 10 / 1,000 / 5,000 discussions and
//! 1 / 100 / 1,000 desired findings.

mod common;

use std::hint::black_box;
use std::time::Duration;

use assent::core::inventory::Inventory;
use assent::core::planner::{Write, plan_reconciliation};
use assent::core::rescan::{WriteRecord, verify_rescan};
use assent::core::review_state::finding_statuses;
use assent::core::who_assents::AssentFacts;
use assent::engine::run::reconcile::reconcile;
use assent::forge::Forge;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

use common::{BOT, DISCUSSIONS, FINDINGS, HEAD};

/// The listing after a run reconciled the generated state, and the record of that run's
/// writes, so `verify_rescan` sees a matching rescan (the common, full-cost case).
fn rescan_case(discussions: usize, findings: usize) -> (Inventory, WriteRecord) {
    let listing = common::listing(discussions, findings);
    let desired = common::desired(findings);
    let inventory = Inventory::from_listing(&listing, BOT);
    let plan = plan_reconciliation(&desired, &inventory, &common::sha(HEAD));
    let forge = common::forge_from_listing(&listing);
    let highest = listing
        .iter()
        .flat_map(|d| d.notes.iter().map(|n| n.id))
        .max()
        .unwrap_or(0);
    reconcile(&forge, &desired, &common::run_context()).expect("the generated run reconciles");
    let after = Inventory::from_listing(&forge.list_discussions().expect("listing"), BOT);
    let mut record = WriteRecord {
        summary_note_id: after.summaries.first().map(|s| s.note_id),
        ..WriteRecord::default()
    };
    for thread in after.threads.iter().filter(|t| t.forge_id > highest) {
        record.created.insert(thread.forge_id);
        if thread.resolved {
            record.resolved.insert(thread.forge_id);
        }
    }
    for write in &plan.writes {
        if let Write::ReplyAndResolve { forge_id, .. } | Write::Resolve { forge_id, .. } = write {
            record.resolved.insert(*forge_id);
        }
    }
    let mismatches = verify_rescan(&desired, &after, &record);
    assert!(mismatches.is_empty(), "{mismatches:?}");
    (after, record)
}

fn benches(c: &mut Criterion) {
    let head = common::sha(HEAD);
    let mut group = c.benchmark_group("core");
    for discussions in DISCUSSIONS {
        for findings in FINDINGS {
            let size = format!("{discussions}d/{findings}f");
            let listing = common::listing(discussions, findings);
            let desired = common::desired(findings);
            let inventory = Inventory::from_listing(&listing, BOT);
            group.bench_with_input(
                BenchmarkId::new("inventory_from_listing", &size),
                &listing,
                |b, listing| b.iter(|| Inventory::from_listing(black_box(listing), BOT)),
            );
            group.bench_with_input(
                BenchmarkId::new("plan_reconciliation", &size),
                &(&desired, &inventory),
                |b, (desired, inventory)| {
                    b.iter(|| plan_reconciliation(black_box(desired), black_box(inventory), &head))
                },
            );
            group.bench_with_input(
                BenchmarkId::new("finding_statuses", &size),
                &(&desired, &inventory),
                |b, (desired, inventory)| {
                    b.iter(|| {
                        finding_statuses(
                            black_box(desired),
                            black_box(inventory),
                            &AssentFacts::default(),
                        )
                        .len()
                    })
                },
            );
            let (rescan, record) = rescan_case(discussions, findings);
            group.bench_with_input(
                BenchmarkId::new("verify_rescan", &size),
                &(&desired, &rescan, &record),
                |b, (desired, rescan, record)| {
                    b.iter(|| verify_rescan(black_box(desired), black_box(rescan), record))
                },
            );
        }
    }
    for threads in [1_000, 5_000] {
        let desired = common::desired(1);
        let inventory = Inventory::from_listing(&common::one_slot_history(threads), BOT);
        group.bench_with_input(
            BenchmarkId::new("plan_reconciliation/one_slot_history", threads),
            &(&desired, &inventory),
            |b, (desired, inventory)| {
                b.iter(|| plan_reconciliation(black_box(desired), black_box(inventory), &head))
            },
        );
    }
    group.finish();
}

criterion_group! {
    name = core;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(core);
