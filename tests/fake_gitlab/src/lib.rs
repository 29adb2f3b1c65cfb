//! A stateful fake of the GitLab REST API v4 subset assent uses, for tests.
//!
//! ```no_run
//! use fake_gitlab::{FakeGitLab, State, fixtures};
//! let fake = FakeGitLab::start(fixtures::basic());
//! let api = fake.base_url(); // http://127.0.0.1:PORT/api/v4
//! // ... run assent against `api` with token fixtures::BOT_TOKEN ...
//! let threads = fake.discussions(fixtures::PROJECT_ID, fixtures::MR_IID);
//! assert_eq!(fake.violations(), Vec::<String>::new());
//! ```
//!
//! The server listens on `127.0.0.1:0`, runs one thread per connection, keeps all state
//! behind one mutex and stops when the handle is dropped. Control routes under `/__fake/`
//! need no token: `GET /__fake/state`, `GET /__fake/transcript` (every MR's notes as text),
//! `GET /__fake/log`, `POST /__fake/log/reset`,
//! `POST /__fake/faults` (a JSON [`FaultRule`]), `DELETE /__fake/faults`,
//! `POST /__fake/release`, `POST /__fake/push` (a new source tree, see [`web`]). The web
//! pages of [`web`] answer under each project's path.
//!
//! With the cargo feature `tls`, `tls::TlsFront` serves the fake over HTTPS with a given
//! certificate, for the tests of certificate handling.

mod api;
mod approvals;
mod ci;
pub mod diff_limits;
pub mod faults;
pub mod fixtures;
pub mod hooks;
mod http;
pub mod lfs_storage;
pub mod model;
pub mod ops;
pub mod positions;
pub mod route;
pub mod sandbox;
mod server;
pub mod socks;
pub mod time;
#[cfg(feature = "tls")]
pub mod tls;
pub mod unified_diff;
pub mod web;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use faults::{FaultAction, FaultRule, HoldApply, Matcher, When};
pub use hooks::{Delivery, Runner, RunnerRun, WebhookTarget};
pub use model::{
    ApprovalRule, ApprovalSettings, CiVariable, DiffFile, DiffRefs, Discussion, DiscussionOrder,
    FileContent, Job, MergeRequest, MrState, Note, NotePosition, Pipeline, Project, ProjectHook,
    ResourceGroup, State, Token, User, lfs_oid, lfs_pointer,
};
pub use ops::OpError;
pub use route::RouteKind;
pub use server::LoggedRequest;
pub use socks::{SocksConnect, SocksRelay};

use server::Shared;

/// A running fake GitLab. Stops on drop.
pub struct FakeGitLab {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: Option<JoinHandle<()>>,
}

impl FakeGitLab {
    /// Starts the fake on `127.0.0.1:0`. Panics when no port can be bound.
    pub fn start(state: State) -> FakeGitLab {
        FakeGitLab::start_on(state, 0).expect("bind 127.0.0.1")
    }

    /// Starts the fake on `127.0.0.1:port` (0 = ephemeral).
    pub fn start_on(state: State, port: u16) -> std::io::Result<FakeGitLab> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let addr = listener.local_addr()?;
        let shared = server::new_shared(state);
        let sh = shared.clone();
        let accept = std::thread::spawn(move || server::accept_loop(sh, listener));
        Ok(FakeGitLab {
            shared,
            addr,
            accept: Some(accept),
        })
    }

    /// `http://127.0.0.1:PORT/api/v4`
    pub fn base_url(&self) -> String {
        format!("http://{}/api/v4", self.addr)
    }

    /// `http://127.0.0.1:PORT`
    pub fn root_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Makes every `web_url` the fake serves point at the fake itself, whose pages
    /// ([`web`]) answer them: a sandbox whose links a reviewer follows.
    pub fn use_own_web_url(&self) {
        let root = self.root_url();
        self.with_state(|s| s.web_url = root);
    }

    /// The token the web pages' forms must carry.
    pub fn web_form_token(&self) -> String {
        self.shared.web_token.clone()
    }

    /// The port the fake listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    // ---- state ----------------------------------------------------------------------

    /// A snapshot of the whole state.
    pub fn state(&self) -> State {
        self.shared.lock().state.clone()
    }

    /// Mutates the state under the lock (seeding, switches), then fills generated ids.
    pub fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut g = self.shared.lock();
        let r = f(&mut g.state);
        g.state.normalize();
        drop(g);
        hooks::after_change(&self.shared);
        r
    }

    fn op<R>(&self, f: impl FnOnce(&mut State) -> Result<R, OpError>) -> Result<R, OpError> {
        let mut g = self.shared.lock();
        let r = f(&mut g.state);
        drop(g);
        hooks::after_change(&self.shared);
        r
    }

    /// Omit `X-Total`/`X-Total-Pages`/`rel="last"` (GitLab above 10,000 items).
    pub fn set_omit_totals(&self, omit: bool) {
        self.with_state(|s| s.omit_totals = omit);
    }

    /// Serves at most `cap` items per listing page whatever `per_page` asks (`None`: 100,
    /// GitLab's own clamp).
    pub fn set_max_per_page(&self, cap: Option<u64>) {
        self.with_state(|s| s.max_per_page = cap);
    }

    /// Lists note `note_id` as its stored body followed by `text` repeated `times` times
    /// (rendered per request, never stored), e.g. a comment of GitLab's maximum size.
    pub fn inflate_note(&self, note_id: u64, text: &str, times: usize) {
        self.with_state(|s| {
            s.inflated_notes.insert(note_id, (text.to_owned(), times));
        });
    }

    /// Listings paginate by `Link` only (`true`), and every `Link` URL carries
    /// `userinfo@` when given.
    pub fn set_link_pagination(&self, link_only: bool, userinfo: Option<&str>) {
        self.with_state(|s| {
            s.link_only = link_only;
            s.link_userinfo = userinfo.map(str::to_owned);
        });
    }

    /// Listings announce a next page after every full page (see
    /// [`State::next_on_full_page`]).
    pub fn set_next_on_full_page(&self, on: bool) {
        self.with_state(|s| s.next_on_full_page = on);
    }

    /// Sets the listing order of an MR's discussions.
    pub fn set_discussion_order(&self, project: u64, iid: u64, order: DiscussionOrder) {
        self.with_state(|s| {
            if let Ok(m) = s.mr_mut_ref(project, iid) {
                m.discussion_order = order;
            }
        });
    }

    /// Freezes time at `rfc3339`.
    pub fn set_time(&self, rfc3339: &str) {
        self.with_state(|s| s.fixed_time = Some(rfc3339.into()));
    }

    /// Moves frozen time forward (freezing it at the current time first if needed).
    pub fn advance_time(&self, d: Duration) {
        self.with_state(|s| {
            let now = time::parse(&s.now()).unwrap_or(0);
            s.fixed_time = Some(time::format_ms(now + d.as_millis() as i64));
        });
    }

    // ---- human actions (no HTTP, no log entry) ----------------------------------------

    /// Posts a resolvable thread as `user`; returns `(discussion id, note id)`.
    pub fn post_thread(&self, project: u64, iid: u64, user: u64, body: &str) -> (String, u64) {
        self.op(|s| s.create_thread(project, iid, user, body))
            .expect("post_thread")
    }

    /// Posts a plain note as `user`; returns `(discussion id, note id)`.
    pub fn post_note(&self, project: u64, iid: u64, user: u64, body: &str) -> (String, u64) {
        self.op(|s| s.create_note(project, iid, user, body, false))
            .expect("post_note")
    }

    /// Posts a system note (e.g. "added 1 commit") authored by `user`.
    pub fn post_system_note(&self, project: u64, iid: u64, user: u64, body: &str) -> u64 {
        self.op(|s| s.create_note(project, iid, user, body, true))
            .expect("post_system_note")
            .1
    }

    /// Seeds a resolvable thread (`resolvable`) or a plain note as `user` whose note id is
    /// exactly `id`; returns `(discussion id, note id)`. Refused when `id` is taken.
    pub fn post_with_id(
        &self,
        project: u64,
        iid: u64,
        user: u64,
        body: &str,
        resolvable: bool,
        id: u64,
    ) -> Result<(String, u64), OpError> {
        self.op(|s| s.create_with_id(project, iid, user, body, resolvable, id))
    }

    /// Turns an existing note into a system note (e.g. one GitLab attributes to the bot).
    pub fn mark_system(&self, project: u64, iid: u64, note_id: u64) -> Result<(), OpError> {
        self.op(|s| s.mark_system(project, iid, note_id))
    }

    /// Adds user `id` (no token) unless it exists, so notes can be authored by it.
    pub fn ensure_user(&self, id: u64, username: &str) {
        self.with_state(|s| {
            if s.user(id).is_none() {
                s.users.push(User::new(id, username));
            }
        });
    }

    /// Replies in a discussion as `user`; the new note's id.
    pub fn reply(&self, project: u64, iid: u64, discussion: &str, user: u64, body: &str) -> u64 {
        self.op(|s| s.reply(project, iid, discussion, user, body))
            .expect("reply")
    }

    /// Resolves (or re-opens) a discussion as `user`.
    pub fn resolve(&self, project: u64, iid: u64, discussion: &str, user: u64, resolved: bool) {
        self.op(|s| s.set_resolved(project, iid, discussion, user, resolved))
            .expect("resolve")
    }

    /// Edits any note's body (as an administrator).
    pub fn edit_note(&self, project: u64, iid: u64, note_id: u64, body: &str) {
        self.op(|s| s.edit_note(project, iid, note_id, None, body))
            .expect("edit_note")
    }

    /// Deletes a note (no author check: as an administrator would).
    pub fn delete_note(&self, project: u64, iid: u64, note_id: u64) {
        self.op(|s| s.delete_note(project, iid, note_id, None))
            .expect("delete_note")
    }

    /// Duplicates a discussion under new ids; returns the new discussion id.
    pub fn clone_discussion(&self, project: u64, iid: u64, discussion: &str) -> String {
        self.op(|s| s.clone_discussion(project, iid, discussion))
            .expect("clone_discussion")
    }

    /// Moves the MR head (`sha` and `diff_refs.head_sha`), as a push would, keeping the
    /// replaced head as an earlier diff version (`GET …/versions`). A push that moves
    /// the head removes the MR's approvals when the project's `reset_approvals_on_push` is on
    /// (GitLab's default).
    pub fn set_head(&self, project: u64, iid: u64, sha: &str) {
        self.with_state(|s| {
            let now = s.now();
            crate::approvals::reset_on_push(s, project, iid, sha);
            let m = s.mr_mut_ref(project, iid).expect("mr");
            // GitLab keeps the replaced head's diff version (`merge_request_diffs`).
            if m.sha != sha && !m.sha.is_empty() {
                let replaced = std::mem::take(&mut m.sha);
                m.earlier_heads.push(replaced);
            }
            m.sha = sha.into();
            m.diff_refs.head_sha = sha.into();
            m.updated_at = now;
        });
    }

    /// Retargets the MR to `branch`, as editing its target branch in GitLab does: the listing
    /// and the single MR report the new `target_branch`, and `updated_at` moves.
    pub fn set_target_branch(&self, project: u64, iid: u64, branch: &str) {
        self.with_state(|s| {
            let now = s.now();
            let m = s.mr_mut_ref(project, iid).expect("mr");
            m.target_branch = branch.into();
            m.updated_at = now;
        });
    }

    /// Sets a merge request's state (opened, closed, merged).
    pub fn set_mr_state(&self, project: u64, iid: u64, state: MrState) {
        self.with_state(|s| {
            let now = s.now();
            let m = s.mr_mut_ref(project, iid).expect("mr");
            m.state = state;
            m.updated_at = now;
        });
    }

    /// Sets (or clears) the MR's head pipeline.
    pub fn set_head_pipeline(&self, project: u64, iid: u64, pipeline: Option<(u64, &str)>) {
        self.with_state(|s| {
            let m = s.mr_mut_ref(project, iid).expect("mr");
            m.head_pipeline = pipeline.map(|(id, status)| Pipeline {
                id,
                sha: m.sha.clone(),
                status: status.into(),
                git_ref: format!("refs/merge-requests/{iid}/head"),
                mr_iid: Some(iid),
                ..Default::default()
            });
        });
    }

    /// Gives (or withdraws) `user`'s approval of the MR, as a person clicking the button.
    pub fn set_approved(&self, project: u64, iid: u64, user: u64, approved: bool) {
        self.with_state(|s| {
            let m = s.mr_mut_ref(project, iid).expect("mr");
            m.approved_by.retain(|u| *u != user);
            if approved {
                m.approved_by.push(user);
            }
        });
    }

    /// The users who approve the MR right now, in approval order.
    pub fn approvals(&self, project: u64, iid: u64) -> Vec<u64> {
        self.mr(project, iid).approved_by
    }

    // ---- inspection --------------------------------------------------------------------

    /// A copy of a merge request as it stands.
    pub fn mr(&self, project: u64, iid: u64) -> MergeRequest {
        self.shared
            .lock()
            .state
            .mr_ref(project, iid)
            .cloned()
            .expect("mr")
    }

    /// All discussions of an MR in creation order (not listing order).
    pub fn discussions(&self, project: u64, iid: u64) -> Vec<Discussion> {
        self.mr(project, iid).discussions
    }

    /// A copy of one discussion, if it exists.
    pub fn discussion(&self, project: u64, iid: u64, id: &str) -> Option<Discussion> {
        self.mr(project, iid).discussion(id).cloned()
    }

    /// A copy of one note, if it exists.
    pub fn note(&self, project: u64, iid: u64, note_id: u64) -> Option<Note> {
        self.mr(project, iid).note(note_id).cloned()
    }

    /// Pipelines created through the API.
    pub fn pipelines(&self, project: u64) -> Vec<Pipeline> {
        self.shared
            .lock()
            .state
            .project(project)
            .map(|p| p.pipelines.clone())
            .unwrap_or_default()
    }

    // ---- request log -------------------------------------------------------------------

    /// Every API request received since the last reset (control routes excluded).
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared.lock().log.clone()
    }

    /// How many API reads the fake has logged.
    pub fn reads(&self) -> usize {
        self.shared.lock().log.iter().filter(|r| !r.write).count()
    }

    /// How many API writes the fake has logged.
    pub fn writes(&self) -> usize {
        self.shared.lock().log.iter().filter(|r| r.write).count()
    }

    /// Protocol violations seen (token in a URL, quick-action lines in a body).
    pub fn violations(&self) -> Vec<String> {
        self.shared.lock().violations.clone()
    }

    /// Clears the request log, the violations and the write-arrival counter.
    pub fn reset_log(&self) {
        let mut g = self.shared.lock();
        g.log.clear();
        g.violations.clear();
        g.writes_arrived = 0;
    }

    // ---- faults ------------------------------------------------------------------------

    /// Appends a fault rule; returns its index.
    pub fn inject(&self, rule: FaultRule) -> usize {
        let mut g = self.shared.lock();
        g.faults.push((rule, 0));
        g.faults.len() - 1
    }

    /// Removes every fault rule.
    pub fn clear_faults(&self) {
        let mut g = self.shared.lock();
        g.faults.clear();
        g.windows.clear();
    }

    /// Releases every request currently held by a `Hold` rule.
    pub fn release_holds(&self) {
        self.shared.lock().release_epoch += 1;
        self.shared.cv.notify_all();
    }

    fn wait_until(&self, timeout: Duration, pred: impl Fn(&server::Inner) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut g = self.shared.lock();
        loop {
            if pred(&g) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            g = self
                .shared
                .cv
                .wait_timeout(g, (deadline - now).min(Duration::from_millis(50)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Waits until `k` writes have arrived (counted before handling) since the last reset.
    pub fn wait_for_writes(&self, k: u64, timeout: Duration) -> bool {
        self.wait_until(timeout, |g| g.writes_arrived >= k)
    }

    /// Waits until `k` requests are being held at the same time.
    pub fn wait_for_held(&self, k: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |g| g.held >= k)
    }

    /// Waits until `k` requests have been logged with a final outcome.
    pub fn wait_for_requests(&self, k: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |g| g.log.len() >= k)
    }
}

impl Drop for FakeGitLab {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.cv.notify_all();
        // Unblock accept().
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        for (_, c) in self.shared.conns.lock().unwrap().drain() {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}
