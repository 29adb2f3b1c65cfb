//! The marker codec: encode and strict decode of finding and summary markers, with a short
//! subject and a 10 kB one (full of characters the encoder escapes).

use std::hint::black_box;
use std::time::Duration;

use assent::core::marker::{self, Marker, SummaryState};
use assent::core::model::{Occurrence, Slot};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

fn finding(subject: String) -> Marker {
    Marker::Finding {
        slot: Slot {
            rule: "retention-shrink".to_owned(),
            subject,
        },
        occurrence: Occurrence::digest(b"judged content"),
    }
}

fn benches(c: &mut Criterion) {
    let short = "topics/orders.yaml#/topics/orders.events.v1/retention_days".to_owned();
    let mut long = String::from("topics/registry.yaml#/topics/");
    while long.len() < 10_000 {
        long.push_str("a<b>&c/d~e\"f\\g é ");
    }
    let cases = [
        ("finding_short", finding(short)),
        ("finding_10kB", finding(long)),
        (
            "summary",
            Marker::Summary {
                occurrence: Occurrence::digest(b"summary"),
                state: SummaryState::Verified,
                source_sha: assent::core::commit_sha::CommitSha::parse(
                    "0123456789abcdef0123456789abcdef01234567",
                )
                .unwrap(),
                target: Some("main".to_owned()),
            },
        ),
    ];
    let mut group = c.benchmark_group("marker");
    for (name, m) in &cases {
        let line = marker::encode(m);
        let body = marker::compose_body(m, "**⏳ challenge** · body text\n\nmore text");
        assert_eq!(marker::decode_body(&body), Ok(Some(m.clone())));
        group.bench_with_input(BenchmarkId::new("encode", name), m, |b, m| {
            b.iter(|| marker::encode(black_box(m)))
        });
        group.bench_with_input(BenchmarkId::new("decode_line", name), &line, |b, line| {
            b.iter(|| marker::decode_line(black_box(line)))
        });
        group.bench_with_input(BenchmarkId::new("decode_body", name), &body, |b, body| {
            b.iter(|| marker::decode_body(black_box(body)))
        });
    }
    let human = "Why does this topic need 48 partitions?\n\nPlease explain.".to_owned();
    group.bench_function("decode_body/not_a_marker", |b| {
        b.iter(|| marker::decode_body(black_box(&human)))
    });
    group.finish();
}

criterion_group! {
    name = marker_codec;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(marker_codec);
