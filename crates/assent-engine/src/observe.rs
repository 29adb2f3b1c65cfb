//! What a run and a sweep report of their phases (docs/contract.md#progress): [`Event`]s to a
//! [`Progress`] observer passed in. The engine never prints: the application passes a printer
//! (`assent::progress::Lines`, stderr), or [`Silent`] under `--format json` and `--quiet`,
//! where stderr carries only errors and warnings. The pure core knows nothing of this.

use std::time::Duration;

use crate::core::commit_sha::CommitSha;

/// Which listing of the merge request's discussions an [`Event::Listed`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// Step 2: the artifacts the plan is made from.
    Inventory,
    /// After a write whose outcome is unknown: the listing decides, and the plan is made again.
    AfterAmbiguousWrite,
    /// Step 9: the rescan after the writes.
    Rescan,
    /// The listing that confirms the "verified" edit (docs/contract.md#verified-means-verified).
    Confirm,
}

/// One thing worth telling the operator. Counts only: no bodies, no token, nothing a
/// contributor wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<'a> {
    /// The run's inputs are read: policy files at the target SHA, the change set, the
    /// governed contents.
    InputsRead {
        /// Policy files read.
        policy_files: usize,
        /// Files the MR changes (`None`: the change set could not be listed completely).
        changed_files: Option<usize>,
        /// Requests the reading took.
        requests: u64,
    },
    /// The desired state is computed.
    DesiredState {
        /// Desired findings.
        findings: usize,
        /// Distinct rules among them.
        rules: usize,
    },
    /// A listing of the MR's discussions is complete.
    Listed {
        /// Which one.
        listing: Listing,
        /// Discussions listed.
        discussions: usize,
        /// Requests (pages, and retries) it took.
        requests: u64,
    },
    /// A round's writes are planned (the summary's included).
    Planned {
        /// Requests the round will send.
        writes: usize,
    },
    /// A write of the round was sent and answered.
    Wrote {
        /// Writes done in this round.
        done: usize,
        /// Writes planned for this round.
        total: usize,
    },
    /// The rescan matched and the summary says "verified".
    Verified {
        /// The judged source SHA the review state is verified for.
        source_sha: &'a CommitSha,
    },
    /// The run met GitLab's rate limits (reported once, at the end, when it did).
    RateLimits {
        /// Writes GitLab refused with 429 (each sent again, or the last one given up on).
        refused_writes: u64,
        /// Total wait for rate limits: 429s on reads and writes, and pacing.
        waited: Duration,
    },
    /// The sweep listed the open merge requests of its window.
    MergeRequestsListed {
        /// Open MRs in the window.
        count: usize,
        /// Requests the listing took.
        requests: u64,
    },
    /// The sweep examined one more merge request.
    Examined {
        /// MRs examined so far.
        done: usize,
        /// MRs the sweep will examine.
        total: usize,
        /// Pipelines created (or, in a dry run, that would be) so far.
        healed: usize,
    },
}

/// Receives the [`Event`]s of a run or a sweep. Implementations must be cheap: events come
/// from the executor between requests.
pub trait Progress: Send + Sync {
    /// One event, in the order things happen.
    fn event(&self, event: &Event<'_>);
}

/// Reports nothing (`--quiet`, `--format json`, the library's default).
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn event(&self, _: &Event<'_>) {}
}
