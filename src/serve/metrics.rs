//! serve's metrics (docs/serve.md), in the Prometheus/OpenMetrics text format through the
//! `prometheus-client` crate. Labels are closed sets computed by serve (event kinds,
//! results, triggers, verdicts), never text from a payload.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::forge::RequestCounts;

/// `event`, `result` of a webhook delivery.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EventLabels {
    /// `merge_request`, `note`, `emoji`, `pipeline`, `other`.
    pub event: &'static str,
    /// `accepted`, `ignored`, `unauthorized`, `bad_request`, `too_large`, `queue_full`,
    /// `shutting_down`, `timeout`.
    pub result: &'static str,
}

/// `trigger`, `verdict` of a classification or a pipeline created.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClassificationLabels {
    /// `webhook` or `sweep`.
    pub trigger: &'static str,
    /// A sweep verdict, or `error` when the examination failed before one.
    pub verdict: &'static str,
}

/// `result` of a sweep pass.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PassLabels {
    /// `complete` or `failed`.
    pub result: &'static str,
}

/// `kind` of a GitLab request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `read` or `write`.
    pub kind: &'static str,
}

/// Every metric serve exports.
pub struct Metrics {
    registry: Registry,
    /// `assent_webhook_events_total{event,result}`.
    pub webhook_events: Family<EventLabels, Counter>,
    /// `assent_classifications_total{trigger,verdict}`.
    pub classifications: Family<ClassificationLabels, Counter>,
    /// `assent_pipelines_created_total{trigger,verdict}`.
    pub pipelines_created: Family<ClassificationLabels, Counter>,
    /// `assent_sweep_passes_total{result}`.
    pub sweep_passes: Family<PassLabels, Counter>,
    /// `assent_sweep_last_success_timestamp_seconds`.
    pub sweep_last_success: Gauge<f64, AtomicU64>,
    /// `assent_sweep_interval_seconds`: the embedded sweep's interval, 0 when it is off, so an
    /// alert on the last success's age can scale with it and stay quiet without a sweep.
    pub sweep_interval_seconds: Gauge,
    /// `assent_ready`: 1 while `/readyz` answers 200, else 0 (a Prometheus rule cannot probe).
    pub ready: Gauge,
    /// `assent_queue_keys`.
    pub queue_keys: Gauge,
    /// `assent_gitlab_requests_total{kind}`.
    pub gitlab_requests: Family<RequestLabels, Counter>,
    /// `assent_gitlab_rate_limited_total`: operations that met GitLab's rate limits past the
    /// wait budget.
    pub gitlab_rate_limited: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric, registered, at zero.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let m = Metrics {
            registry: Registry::default(),
            webhook_events: Family::default(),
            classifications: Family::default(),
            pipelines_created: Family::default(),
            sweep_passes: Family::default(),
            sweep_last_success: Gauge::default(),
            sweep_interval_seconds: Gauge::default(),
            ready: Gauge::default(),
            queue_keys: Gauge::default(),
            gitlab_requests: Family::default(),
            gitlab_rate_limited: Counter::default(),
        };
        registry.register(
            "assent_webhook_events",
            "Webhook deliveries by event kind and result",
            m.webhook_events.clone(),
        );
        registry.register(
            "assent_classifications",
            "MR classifications by trigger (webhook, sweep) and verdict",
            m.classifications.clone(),
        );
        registry.register(
            "assent_pipelines_created",
            "MR pipelines created by trigger and verdict; trigger=sweep stays 0 when the live path works",
            m.pipelines_created.clone(),
        );
        registry.register(
            "assent_sweep_passes",
            "Embedded sweep passes by result",
            m.sweep_passes.clone(),
        );
        registry.register(
            "assent_sweep_last_success_timestamp_seconds",
            "Start of the last sweep pass that completed (Unix seconds)",
            m.sweep_last_success.clone(),
        );
        registry.register(
            "assent_sweep_interval_seconds",
            "The embedded sweep's interval in seconds; 0 when the sweep is off",
            m.sweep_interval_seconds.clone(),
        );
        registry.register(
            "assent_ready",
            "1 while /readyz answers 200 (token checked, GitLab answering, not draining), else 0",
            m.ready.clone(),
        );
        registry.register(
            "assent_queue_keys",
            "MR keys pending or being classified",
            m.queue_keys.clone(),
        );
        registry.register(
            "assent_gitlab_requests",
            "GitLab API requests by kind (read, write)",
            m.gitlab_requests.clone(),
        );
        registry.register(
            "assent_gitlab_rate_limited",
            "Operations stopped by GitLab's rate limits past the wait budget",
            m.gitlab_rate_limited.clone(),
        );
        for (event, result) in [
            ("merge_request", "accepted"),
            ("note", "accepted"),
            ("emoji", "accepted"),
            ("pipeline", "accepted"),
        ] {
            let _ = m
                .webhook_events
                .get_or_create(&EventLabels { event, result });
        }
        // A family with no series is not exposed at all: every family shows at zero from the
        // start, so dashboards and alerts see it before its first event.
        for trigger in ["webhook", "sweep"] {
            let labels = ClassificationLabels {
                trigger,
                verdict: "missing",
            };
            let _ = m.pipelines_created.get_or_create(&labels);
            let _ = m.classifications.get_or_create(&labels);
        }
        for result in ["complete", "failed"] {
            let _ = m.sweep_passes.get_or_create(&PassLabels { result });
        }
        for kind in ["read", "write"] {
            let _ = m.gitlab_requests.get_or_create(&RequestLabels { kind });
        }
        Metrics { registry, ..m }
    }

    /// Counts a webhook delivery.
    pub fn event(&self, event: &'static str, result: &'static str) {
        self.webhook_events
            .get_or_create(&EventLabels { event, result })
            .inc();
    }

    /// Adds the requests made since `before` (a tally the caller keeps per client).
    pub fn requests(&self, delta: RequestCounts) {
        self.gitlab_requests
            .get_or_create(&RequestLabels { kind: "read" })
            .inc_by(delta.reads);
        self.gitlab_requests
            .get_or_create(&RequestLabels { kind: "write" })
            .inc_by(delta.writes);
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_every_metric_with_its_type_and_ends_with_eof() {
        let m = Metrics::new();
        m.event("merge_request", "accepted");
        m.classifications
            .get_or_create(&ClassificationLabels {
                trigger: "webhook",
                verdict: "review-resolved",
            })
            .inc();
        m.queue_keys.set(3);
        let text = m.render();
        for line in [
            "# TYPE assent_webhook_events counter",
            "assent_webhook_events_total{event=\"merge_request\",result=\"accepted\"} 1",
            "assent_classifications_total{trigger=\"webhook\",verdict=\"review-resolved\"} 1",
            "assent_pipelines_created_total{trigger=\"sweep\",verdict=\"missing\"} 0",
            "# TYPE assent_sweep_last_success_timestamp_seconds gauge",
            "assent_queue_keys 3",
            "assent_gitlab_requests_total{kind=\"read\"} 0",
            "assent_gitlab_rate_limited_total 0",
            "# TYPE assent_sweep_passes counter",
            "assent_sweep_passes_total{result=\"failed\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
