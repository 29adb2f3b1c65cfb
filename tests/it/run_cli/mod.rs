//! `assent run` as the MR pipeline runs it: the compiled binary against the fake GitLab.
//!
//! Every test checks the exit code, the key lines of stdout/stderr, the receipt, the fake's
//! final state (threads, resolution, note bodies) and its request log (writes, violations),
//! and that the token shows up nowhere but in the `PRIVATE-TOKEN` header.

use std::time::Duration;

use assent_test_support::run::{Invocation, ORDERS_BASE, RunResult, World, orders};
use fake_gitlab::{DiffFile, FaultAction, FaultRule, HoldApply, MrState, RouteKind, fixtures};
use serde_json::{Value, json};

use crate::ASSENT;

const RETENTION: &str = "retention-shrink";
const RETENTION_SUBJECT: &str = "topics/orders.yaml#/topics/orders.events.v1/retention_days";
/// A later push to the source branch.
const NEW_SHA: &str = "4444444444444444444444444444444444444444";
/// A push after that.
const NEWER_SHA: &str = "5555555555555555555555555555555555555555";

fn project() -> u64 {
    fixtures::PROJECT_ID
}

fn mr() -> u64 {
    fixtures::MR_IID
}

/// The receipt's top-level keys, in file order (docs/contract.md#receipt).
const RECEIPT_KEYS: [&str; 14] = [
    "apiVersion",
    "kind",
    "project",
    "mr",
    "pins",
    "outcome",
    "decision",
    "findings",
    "actions",
    "repairs",
    "warnings",
    "rescan",
    "approval",
    "requests",
];

#[track_caller]
fn assert_key_order(text: &str) {
    let positions: Vec<usize> = RECEIPT_KEYS
        .iter()
        .map(|k| {
            text.find(&format!("\"{k}\":"))
                .unwrap_or_else(|| panic!("no key {k} in {text}"))
        })
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "receipt keys out of order: {text}"
    );
    assert!(text.starts_with("{\"apiVersion\":\"assent/v1\",\"kind\":\"PublicationReceipt\","));
}

/// The receipt of a designed no-write refusal.
#[track_caller]
fn assert_refusal(receipt: &Value, outcome: &str) {
    assert_eq!(receipt["outcome"], outcome);
    assert_eq!(receipt["decision"], Value::Null);
    for key in ["findings", "actions", "repairs", "warnings"] {
        assert_eq!(receipt[key], json!([]), "{key}");
    }
    assert_eq!(receipt["requests"]["writes"], 0);
}

/// The writes the fake saw, as (method, route).
fn write_shape(w: &World) -> Vec<(String, RouteKind)> {
    w.writes()
        .into_iter()
        .map(|r| (r.method, r.route))
        .collect()
}

fn marker_occurrence(body: &str) -> Value {
    let marker = body.lines().next().unwrap();
    let json = marker
        .strip_prefix("<!-- assent:marker ")
        .and_then(|m| m.strip_suffix(" -->"))
        .unwrap();
    serde_json::from_str::<Value>(json).unwrap()["occurrence"].clone()
}

mod approval;
mod builtins;
mod configuration;
mod failures;
mod output;
mod policy_owners;
mod publishing;
mod pushes;
mod refusals;
mod transport;
mod who_assents;
