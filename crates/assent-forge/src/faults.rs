//! A fault-injecting decorator for any [`Forge`]: crashes and lost acknowledgements.
//!
//! Because it wraps the port rather than an adapter, the same fixture faults apply to the
//! in-memory forge and to GitLab over HTTP. A *crash after k writes* lets k writes through
//! and then fails every later call, as a killed process would. A *lost ack* on write n
//! applies write n and then reports an ambiguous failure, as a reply lost on the wire would.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::{CreatedThread, Forge, ForgeError, RequestCounts};
use assent_core::commit_sha::CommitSha;
use assent_core::model::{DiffPosition, ListedDiscussion, MergeRequestInfo, Role};

/// Faults to inject into one run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FaultPlan {
    /// Let this many writes through, then fail everything (a crash).
    pub crash_after_writes: Option<u64>,
    /// 1-based write numbers that are applied but answered with an ambiguous failure.
    pub lose_ack_on_writes: BTreeSet<u64>,
}

/// A [`Forge`] that injects the faults of a [`FaultPlan`].
pub struct FaultyForge<'a> {
    inner: &'a dyn Forge,
    plan: FaultPlan,
    writes: AtomicU64,
    crashed: AtomicBool,
}

impl<'a> FaultyForge<'a> {
    /// Wraps `inner`.
    pub fn new(inner: &'a dyn Forge, plan: FaultPlan) -> Self {
        FaultyForge {
            inner,
            plan,
            writes: AtomicU64::new(0),
            crashed: AtomicBool::new(false),
        }
    }

    /// Whether the simulated crash happened.
    pub fn crashed(&self) -> bool {
        self.crashed.load(Ordering::SeqCst)
    }

    fn check_alive(&self) -> Result<(), ForgeError> {
        if self.crashed() {
            Err(ForgeError::Injected("the process crashed".into()))
        } else {
            Ok(())
        }
    }

    fn write<T>(
        &self,
        what: &str,
        op: impl FnOnce() -> Result<T, ForgeError>,
    ) -> Result<T, ForgeError> {
        self.check_alive()?;
        let n = self.writes.load(Ordering::SeqCst) + 1;
        if self.plan.crash_after_writes.is_some_and(|k| n > k) {
            self.crashed.store(true, Ordering::SeqCst);
            return Err(ForgeError::Injected(format!(
                "crash before write {n} ({what})"
            )));
        }
        self.writes.store(n, Ordering::SeqCst);
        let result = op()?;
        if self.plan.lose_ack_on_writes.contains(&n) {
            return Err(ForgeError::AmbiguousWrite {
                method: "WRITE".into(),
                route: what.into(),
                message: format!("acknowledgement of write {n} lost"),
            });
        }
        Ok(result)
    }
}

impl Forge for FaultyForge<'_> {
    fn bot_user_id(&self) -> Result<u64, ForgeError> {
        self.check_alive()?;
        self.inner.bot_user_id()
    }

    fn merge_request(&self) -> Result<MergeRequestInfo, ForgeError> {
        self.check_alive()?;
        self.inner.merge_request()
    }

    fn list_discussions(&self) -> Result<Vec<ListedDiscussion>, ForgeError> {
        self.check_alive()?;
        self.inner.list_discussions()
    }

    fn version_heads(&self) -> Result<Vec<CommitSha>, ForgeError> {
        self.check_alive()?;
        self.inner.version_heads()
    }

    fn create_thread(
        &self,
        body: &str,
        position: Option<&DiffPosition>,
    ) -> Result<CreatedThread, ForgeError> {
        self.write("create thread", || self.inner.create_thread(body, position))
    }

    fn reply_to_thread(&self, discussion_id: &str, body: &str) -> Result<u64, ForgeError> {
        self.write("reply", || self.inner.reply_to_thread(discussion_id, body))
    }

    fn resolve_thread(&self, discussion_id: &str) -> Result<(), ForgeError> {
        self.write("resolve", || self.inner.resolve_thread(discussion_id))
    }

    fn create_note(&self, body: &str) -> Result<u64, ForgeError> {
        self.write("create note", || self.inner.create_note(body))
    }

    fn edit_note(&self, note_id: u64, body: &str) -> Result<(), ForgeError> {
        self.write("edit note", || self.inner.edit_note(note_id, body))
    }

    fn project_role(&self, user_id: u64) -> Result<Option<Role>, ForgeError> {
        self.check_alive()?;
        self.inner.project_role(user_id)
    }

    fn user_account(&self, user_id: u64) -> Result<Option<crate::Account>, ForgeError> {
        self.check_alive()?;
        self.inner.user_account(user_id)
    }

    fn resolves_outdated_diff_threads(&self) -> Result<bool, ForgeError> {
        self.check_alive()?;
        self.inner.resolves_outdated_diff_threads()
    }

    fn bot_approves(&self) -> Result<bool, ForgeError> {
        self.check_alive()?;
        self.inner.bot_approves()
    }

    fn approve(&self, sha: &CommitSha) -> Result<(), ForgeError> {
        self.write("approve", || self.inner.approve(sha))
    }

    fn unapprove(&self) -> Result<(), ForgeError> {
        self.write("unapprove", || self.inner.unapprove())
    }

    fn request_counts(&self) -> RequestCounts {
        self.inner.request_counts()
    }
}
