//! Webhooks as GitLab sends them, and a runner that plays GitLab Runner for MR pipelines.
//!
//! A test registers a URL and its secret token ([`crate::FakeGitLab::add_webhook`]). After
//! every change to the state (an API write or a test's own edit), the fake compares each MR
//! with what it saw before and delivers, like GitLab (16.x to 18.x payload shapes, read
//! from GitLab's webhook documentation):
//!
//! * a **Merge Request Hook** (`action: update`) when the MR's last unresolved thread is
//!   resolved, or its head moves (a push); none when one thread of several is resolved or a
//!   thread is unresolved, as GitLab;
//! * a **Note Hook** for each new note on the MR (not for system notes);
//! * a **Pipeline Hook** for each MR pipeline created or changing status.
//!
//! Each delivery is a `POST` with `Content-Type: application/json`, `X-Gitlab-Event`,
//! `X-Gitlab-Token` (the secret), `X-Gitlab-Event-UUID` (one per change, shared by every
//! delivery the change causes), `X-Gitlab-Webhook-UUID` (a new one each time a delivery is
//! sent), `Idempotency-Key` (the same when a delivery is sent again) and GitLab's
//! `User-Agent`, as `build_headers` in GitLab's `app/services/web_hook_service.rb`; sent from
//! a thread of its own, with the answer's status recorded ([`Delivery`]).
//!
//! Auto-disabling as GitLab's `app/models/concerns/web_hooks/auto_disabling.rb` (with
//! `app/services/web_hook_service.rb`'s `response_category`): an answer outside 2xx/3xx, or
//! none, is a failure; after the 4th failure in a row the hook is backed off
//! (`disabled_until`, 1 minute doubling per further failure up to 1 day) and not executed
//! meanwhile; the 40th disables it for good; a 2xx/3xx answer resets it. The hooks API shows
//! it as `alert_status` (`executable`, `temporarily_disabled`, `disabled`) and
//! `disabled_until`.
//!
//! With a runner set ([`crate::FakeGitLab::set_runner`]), each MR pipeline created runs the
//! runner's command with the CI variables GitLab gives an MR pipeline job
//! (`CI_API_V4_URL`, `CI_PROJECT_ID`, `CI_MERGE_REQUEST_PROJECT_ID`,
//! `CI_MERGE_REQUEST_IID`, `CI_MERGE_REQUEST_SOURCE_BRANCH_SHA`,
//! `CI_MERGE_REQUEST_TARGET_BRANCH_NAME`, `CI_MERGE_REQUEST_DIFF_BASE_SHA`,
//! `CI_PIPELINE_ID`, `CI_PIPELINE_SOURCE`, `CI_COMMIT_SHA`, `CI_SERVER_URL`, `CI`) plus its
//! own; the pipeline is `running` meanwhile and `success` or `failed` after, from the exit
//! code ([`RunnerRun`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::model::{MergeRequest, Project, State};
use crate::server::Shared;

/// A registered webhook.
#[derive(Debug, Clone)]
pub struct WebhookTarget {
    /// Where deliveries go (`http://127.0.0.1:PORT/webhook`).
    pub url: String,
    /// The secret token, sent as `X-Gitlab-Token`.
    pub token: String,
}

/// One delivery, as sent.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// `Merge Request Hook`, `Note Hook`, `Pipeline Hook`.
    pub event: String,
    /// The project whose hook sends it.
    pub project_id: u64,
    /// The MR it concerns.
    pub iid: u64,
    /// The JSON body.
    pub body: String,
    /// `Idempotency-Key`.
    pub idempotency_key: String,
    /// `X-Gitlab-Event-UUID`: the change that caused it (shared by its sibling deliveries).
    pub event_uuid: String,
    /// `X-Gitlab-Webhook-UUID` of the latest send (new for each send, a retry included).
    pub webhook_uuid: String,
    /// The receiver's status, once answered (`None`: not yet, or no answer).
    pub status: Option<u16>,
    /// Not sent: the hook was backed off or disabled (`alert_status` not `executable`).
    pub hook_disabled: bool,
}

/// A version 4 UUID from the fake's own entropy (a counter, the clock and the process id
/// hashed): unique per call, which is all a receiver may rely on.
pub fn new_uuid() -> String {
    use sha2::{Digest, Sha256};
    use std::sync::atomic::AtomicU64;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let millis = crate::time::system_ms();
    let digest = Sha256::digest(format!("{n}:{millis}:{}", std::process::id()));
    let mut b = [0u8; 16];
    b.copy_from_slice(&digest[..16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// GitLab's grace: failures in a row before a hook is backed off.
const TEMPORARILY_DISABLED_FAILURE_THRESHOLD: u32 = 3;
/// GitLab's last failure count before a hook is disabled for good (the 40th disables it).
const PERMANENTLY_DISABLED_FAILURE_THRESHOLD: u32 = 39;
const INITIAL_BACKOFF_MS: i64 = 60_000;
const MAX_BACKOFF_MS: i64 = 86_400_000;

/// `alert_status` of `hook` at `now_ms`: `executable`, `temporarily_disabled` or `disabled`.
pub fn alert_status(hook: &crate::model::ProjectHook, now_ms: i64) -> &'static str {
    let until = hook.disabled_until.as_deref().and_then(crate::time::parse);
    let temporarily = until.is_some_and(|u| u >= now_ms)
        && (TEMPORARILY_DISABLED_FAILURE_THRESHOLD + 1..=PERMANENTLY_DISABLED_FAILURE_THRESHOLD)
            .contains(&hook.recent_failures);
    if temporarily {
        "temporarily_disabled"
    } else if hook.recent_failures > PERMANENTLY_DISABLED_FAILURE_THRESHOLD {
        "disabled"
    } else {
        "executable"
    }
}

/// `backoff!`: one more failure of an executable hook, and its backoff once past the grace.
fn backoff(hook: &mut crate::model::ProjectHook, now_ms: i64) {
    if alert_status(hook, now_ms) != "executable" {
        return;
    }
    let before = hook.recent_failures;
    hook.recent_failures = (before + 1).clamp(1, PERMANENTLY_DISABLED_FAILURE_THRESHOLD + 1);
    if hook.recent_failures > TEMPORARILY_DISABLED_FAILURE_THRESHOLD {
        let doublings = before
            .saturating_sub(TEMPORARILY_DISABLED_FAILURE_THRESHOLD)
            .min(20);
        let wait = (INITIAL_BACKOFF_MS << doublings).clamp(INITIAL_BACKOFF_MS, MAX_BACKOFF_MS);
        hook.disabled_until = Some(crate::time::format_ms(now_ms + wait));
    }
}

/// `enable!`: a successful delivery resets the hook.
fn enable(hook: &mut crate::model::ProjectHook) {
    hook.recent_failures = 0;
    hook.disabled_until = None;
}

/// The command a runner runs for each MR pipeline.
#[derive(Debug, Clone)]
pub struct Runner {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables beside GitLab's (the token, for instance).
    pub env: Vec<(String, String)>,
    /// Its working directory.
    pub dir: std::path::PathBuf,
}

/// One job the runner ran.
#[derive(Debug, Clone)]
pub struct RunnerRun {
    /// The pipeline.
    pub pipeline_id: u64,
    /// The MR.
    pub iid: u64,
    /// The command line it ran.
    pub command: String,
    /// The folder it ran in.
    pub dir: std::path::PathBuf,
    /// The exit code (`None` when killed by a signal or not started).
    pub exit_code: Option<i32>,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct MrSeen {
    unresolved: usize,
    resolvable: usize,
    sha: String,
    notes: BTreeSet<u64>,
}

/// The webhook and runner state of one fake.
#[derive(Debug, Default)]
pub struct Hooks {
    targets: Vec<WebhookTarget>,
    seen: BTreeMap<(u64, u64), MrSeen>,
    pipelines: BTreeMap<(u64, u64), String>,
    deliveries: Vec<Delivery>,
    runner: Option<Runner>,
    /// Each job runs in a folder of its own under the runner's (`pipeline-<id>`).
    job_dirs: bool,
    runs: Vec<RunnerRun>,
    seq: u64,
}

impl Hooks {
    fn active(&self) -> bool {
        !self.targets.is_empty() || self.runner.is_some()
    }
}

fn mr_seen(mr: &MergeRequest) -> MrSeen {
    MrSeen {
        unresolved: mr
            .discussions
            .iter()
            .filter(|d| d.resolvable() && !d.resolved())
            .count(),
        resolvable: mr.discussions.iter().filter(|d| d.resolvable()).count(),
        sha: mr.sha.clone(),
        notes: mr
            .discussions
            .iter()
            .flat_map(|d| d.notes.iter())
            .filter(|n| !n.system)
            .map(|n| n.id)
            .collect(),
    }
}

fn project_json(st: &State, p: &Project) -> Value {
    json!({"id": p.id, "name": p.path_with_namespace.rsplit('/').next().unwrap_or(""),
        "path_with_namespace": p.path_with_namespace, "web_url": p.web_url(&st.web_url),
        "default_branch": p.default_branch, "visibility_level": 0})
}

fn user_json(st: &State, id: u64) -> Value {
    let name = st
        .users
        .iter()
        .find(|u| u.id == id)
        .map(|u| u.username.clone())
        .unwrap_or_default();
    json!({"id": id, "name": name, "username": name, "avatar_url": null})
}

fn mr_json(mr: &MergeRequest, p: &Project) -> Value {
    json!({"id": mr.id, "iid": mr.iid, "title": mr.title, "state": mr.state,
        "source_branch": mr.source_branch, "target_branch": mr.target_branch,
        "source_project_id": mr.source_project_id, "target_project_id": p.id,
        "author_id": mr.author_id, "last_commit": {"id": mr.sha},
        "blocking_discussions_resolved": mr.discussions.iter().all(|d| !d.resolvable() || d.resolved()),
        "updated_at": mr.updated_at, "created_at": mr.created_at, "draft": mr.draft,
        "detailed_merge_status": "mergeable"})
}

/// What changed since the last look: deliveries to send and pipelines to run.
fn changes(st: &mut State, hooks: &mut Hooks) -> (Vec<Delivery>, Vec<(u64, u64, u64)>) {
    let mut out = Vec::new();
    let mut jobs = Vec::new();
    let event_uuid = new_uuid();
    let next = |hooks: &mut Hooks| {
        hooks.seq += 1;
        format!("00000000-0000-4000-8000-{:012x}", hooks.seq)
    };
    for p in &st.projects {
        for mr in &p.merge_requests {
            let now = mr_seen(mr);
            let key = (p.id, mr.iid);
            if let Some(before) = hooks.seen.get(&key).cloned() {
                let last_resolved = before.unresolved > 0 && now.unresolved == 0;
                let pushed = before.sha != now.sha;
                if last_resolved || pushed {
                    let mut attrs = mr_json(mr, p);
                    attrs["action"] = json!("update");
                    let body = json!({"object_kind": "merge_request", "event_type": "merge_request",
                        "user": user_json(st, mr.author_id), "project": project_json(st, p),
                        "object_attributes": attrs, "labels": [], "changes": {},
                        "repository": {"name": p.path_with_namespace, "homepage": p.web_url(&st.web_url)}});
                    out.push(Delivery {
                        event: "Merge Request Hook".into(),
                        project_id: p.id,
                        iid: mr.iid,
                        body: body.to_string(),
                        idempotency_key: next(hooks),
                        event_uuid: event_uuid.clone(),
                        webhook_uuid: String::new(),
                        status: None,
                        hook_disabled: false,
                    });
                }
                for d in &mr.discussions {
                    for n in d.notes.iter().filter(|n| !n.system) {
                        if before.notes.contains(&n.id) {
                            continue;
                        }
                        let body = json!({"object_kind": "note", "event_type": "note",
                            "user": user_json(st, n.author_id), "project_id": p.id,
                            "project": project_json(st, p),
                            "object_attributes": {"id": n.id, "note": n.body, "noteable_type": "MergeRequest",
                                "author_id": n.author_id, "created_at": n.created_at, "updated_at": n.updated_at,
                                "project_id": p.id, "system": false, "discussion_id": d.id,
                                "type": n.note_type, "noteable_id": mr.id},
                            "merge_request": mr_json(mr, p)});
                        out.push(Delivery {
                            event: "Note Hook".into(),
                            project_id: p.id,
                            iid: mr.iid,
                            body: body.to_string(),
                            idempotency_key: next(hooks),
                            event_uuid: event_uuid.clone(),
                            webhook_uuid: String::new(),
                            status: None,
                            hook_disabled: false,
                        });
                    }
                }
            }
            hooks.seen.insert(key, now);
        }
        for pl in &p.pipelines {
            let Some(iid) = pl.mr_iid else { continue };
            let key = (p.id, pl.id);
            let before = hooks.pipelines.get(&key).cloned();
            if before.as_deref() == Some(pl.status.as_str()) {
                continue;
            }
            if before.is_none() && pl.status == "created" {
                jobs.push((p.id, iid, pl.id));
            }
            hooks.pipelines.insert(key, pl.status.clone());
            let Some(mr) = p.mr(iid) else { continue };
            let body = json!({"object_kind": "pipeline",
                "object_attributes": {"id": pl.id, "iid": pl.id, "ref": pl.git_ref, "tag": false,
                    "sha": pl.sha, "status": pl.status, "detailed_status": pl.status,
                    "source": pl.source, "created_at": pl.created_at, "finished_at": null},
                "merge_request": {"id": mr.id, "iid": mr.iid, "title": mr.title,
                    "source_branch": mr.source_branch, "source_project_id": mr.source_project_id,
                    "target_branch": mr.target_branch, "target_project_id": p.id,
                    "state": mr.state, "url": format!("{}/-/merge_requests/{}", p.web_url(&st.web_url), mr.iid)},
                "user": user_json(st, mr.author_id), "project": project_json(st, p),
                "builds": []});
            out.push(Delivery {
                event: "Pipeline Hook".into(),
                project_id: p.id,
                iid,
                body: body.to_string(),
                idempotency_key: next(hooks),
                event_uuid: event_uuid.clone(),
                webhook_uuid: String::new(),
                status: None,
                hook_disabled: false,
            });
        }
    }
    if hooks.targets.is_empty() {
        out.clear();
    }
    if hooks.runner.is_none() {
        jobs.clear();
    }
    (out, jobs)
}

/// Looks for changes and sends what GitLab would (call after any change to the state).
pub(crate) fn after_change(shared: &Arc<Shared>) {
    let (deliveries, jobs, targets, runner) = {
        let mut hooks = shared.hooks.lock().unwrap_or_else(|e| e.into_inner());
        if !hooks.active() {
            return;
        }
        let mut g = shared.lock();
        let (deliveries, jobs) = changes(&mut g.state, &mut hooks);
        drop(g);
        let base = hooks.deliveries.len();
        hooks.deliveries.extend(deliveries.iter().cloned());
        let indexed: Vec<(usize, Delivery)> = deliveries
            .into_iter()
            .enumerate()
            .map(|(i, d)| (base + i, d))
            .collect();
        (indexed, jobs, hooks.targets.clone(), hooks.runner.clone())
    };
    for (index, delivery) in deliveries {
        for target in &targets {
            send(shared.clone(), target.clone(), index, delivery.clone());
        }
    }
    if let Some(runner) = runner {
        for (project, iid, pipeline) in jobs {
            let sh = shared.clone();
            let runner = runner.clone();
            std::thread::spawn(move || run_job(&sh, &runner, project, iid, pipeline));
        }
    }
}

/// Sends delivery `index` again, with its `Idempotency-Key`, to every target.
pub(crate) fn redeliver(shared: &Arc<Shared>, index: usize) {
    let (delivery, targets) = {
        let hooks = shared.hooks.lock().unwrap_or_else(|e| e.into_inner());
        (hooks.deliveries[index].clone(), hooks.targets.clone())
    };
    for target in targets {
        send(shared.clone(), target, index, delivery.clone());
    }
}

/// The hook of `project` that posts to `url`, through `f` (with the fake's time).
fn with_hook<T>(
    shared: &Arc<Shared>,
    project: u64,
    url: &str,
    f: impl FnOnce(&mut crate::model::ProjectHook, i64) -> T,
) -> Option<T> {
    let mut g = shared.lock();
    let now = crate::time::parse(&g.state.now()).unwrap_or(0);
    let hook = g
        .state
        .projects
        .iter_mut()
        .find(|p| p.id == project)?
        .hooks
        .iter_mut()
        .find(|h| h.url == url)?;
    Some(f(hook, now))
}

fn send(shared: Arc<Shared>, target: WebhookTarget, index: usize, mut delivery: Delivery) {
    std::thread::spawn(move || {
        // GitLab executes only executable hooks: a backed-off or disabled one sends nothing.
        let executable = with_hook(&shared, delivery.project_id, &target.url, |h, now| {
            alert_status(h, now) == "executable"
        })
        .unwrap_or(true);
        if !executable {
            let mut hooks = shared.hooks.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(d) = hooks.deliveries.get_mut(index) {
                d.hook_disabled = true;
            }
            return;
        }
        delivery.webhook_uuid = new_uuid();
        let status = post(&target, &delivery);
        let _ = with_hook(
            &shared,
            delivery.project_id,
            &target.url,
            |h, now| match status {
                Some(s) if (200..400).contains(&s) => enable(h),
                _ => backoff(h, now),
            },
        );
        let mut hooks = shared.hooks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = hooks.deliveries.get_mut(index) {
            d.status = status;
            d.webhook_uuid = delivery.webhook_uuid.clone();
            d.hook_disabled = false;
        }
    });
}

/// A plain HTTP/1.1 POST, as GitLab's webhook sender makes it; the answer's status.
fn post(target: &WebhookTarget, d: &Delivery) -> Option<u16> {
    let rest = target.url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let mut stream = TcpStream::connect(authority).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nUser-Agent: GitLab/17.11.0\r\nX-Gitlab-Event: {}\r\nX-Gitlab-Token: {}\r\nX-Gitlab-Instance: http://gitlab.example\r\nX-Gitlab-Webhook-UUID: {}\r\nX-Gitlab-Event-UUID: {}\r\nIdempotency-Key: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        d.event,
        target.token,
        d.webhook_uuid,
        d.event_uuid,
        d.idempotency_key,
        d.body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    stream.write_all(d.body.as_bytes()).ok()?;
    let mut answer = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace().nth(1)?.parse().ok()
}

fn set_status(shared: &Arc<Shared>, project: u64, pipeline: u64, status: &str) {
    {
        let mut g = shared.lock();
        let now = g.state.now();
        if let Some(p) = g.state.projects.iter_mut().find(|p| p.id == project) {
            if let Some(pl) = p.pipelines.iter_mut().find(|pl| pl.id == pipeline) {
                pl.status = status.into();
                pl.updated_at = now.clone();
            }
            for mr in &mut p.merge_requests {
                if let Some(hp) = mr.head_pipeline.as_mut().filter(|hp| hp.id == pipeline) {
                    hp.status = status.into();
                    hp.updated_at = now.clone();
                }
            }
        }
    }
    after_change(shared);
}

fn run_job(shared: &Arc<Shared>, runner: &Runner, project: u64, iid: u64, pipeline: u64) {
    if shared.stop.load(Ordering::SeqCst) {
        return;
    }
    let vars = {
        let g = shared.lock();
        let st = &g.state;
        let Some(p) = st.projects.iter().find(|p| p.id == project) else {
            return;
        };
        let Some(mr) = p.mr(iid) else { return };
        let sha = p
            .pipelines
            .iter()
            .find(|pl| pl.id == pipeline)
            .map_or(mr.sha.clone(), |pl| pl.sha.clone());
        let root = runner
            .env
            .iter()
            .find(|(k, _)| k == "CI_API_V4_URL")
            .map(|(_, v)| v.trim_end_matches("/api/v4").to_owned())
            .unwrap_or_default();
        vec![
            ("CI", "true".to_owned()),
            ("GITLAB_CI", "true".to_owned()),
            ("CI_SERVER_URL", root.clone()),
            ("CI_API_V4_URL", format!("{root}/api/v4")),
            ("CI_PROJECT_ID", p.id.to_string()),
            ("CI_PROJECT_PATH", p.path_with_namespace.clone()),
            ("CI_MERGE_REQUEST_PROJECT_ID", p.id.to_string()),
            ("CI_MERGE_REQUEST_IID", iid.to_string()),
            ("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", sha.clone()),
            (
                "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
                mr.source_branch.clone(),
            ),
            (
                "CI_MERGE_REQUEST_TARGET_BRANCH_NAME",
                mr.target_branch.clone(),
            ),
            (
                "CI_MERGE_REQUEST_DIFF_BASE_SHA",
                mr.diff_refs.base_sha.clone(),
            ),
            ("CI_MERGE_REQUEST_EVENT_TYPE", "detached".to_owned()),
            ("CI_PIPELINE_ID", pipeline.to_string()),
            ("CI_PIPELINE_SOURCE", "merge_request_event".to_owned()),
            ("CI_COMMIT_SHA", sha),
            ("CI_JOB_ID", pipeline.to_string()),
        ]
    };
    set_status(shared, project, pipeline, "running");
    let job_dirs = shared
        .hooks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .job_dirs;
    // As GitLab Runner gives each job a build folder of its own, jobs that overlap never
    // write the same files.
    let dir = if job_dirs {
        runner.dir.join(format!("pipeline-{pipeline}"))
    } else {
        runner.dir.clone()
    };
    let _ = std::fs::create_dir_all(&dir);
    let output = std::process::Command::new(&runner.program)
        .args(&runner.args)
        .current_dir(&dir)
        .env_clear()
        .envs(runner.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .envs(vars.iter().map(|(k, v)| (*k, v.as_str())))
        .output();
    let (exit_code, stdout, stderr) = match output {
        Ok(o) => (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        ),
        Err(e) => (None, String::new(), format!("cannot start the job: {e}")),
    };
    shared
        .hooks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .runs
        .push(RunnerRun {
            command: std::iter::once(runner.program.as_str())
                .chain(runner.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            dir,
            pipeline_id: pipeline,
            iid,
            exit_code,
            stdout,
            stderr,
        });
    let status = if exit_code == Some(0) {
        "success"
    } else {
        "failed"
    };
    set_status(shared, project, pipeline, status);
}

impl crate::FakeGitLab {
    /// Registers a webhook: from now on, changes are delivered to `url` with `token`.
    pub fn add_webhook(&self, url: &str, token: &str) {
        {
            let mut hooks = self.shared.hooks.lock().unwrap_or_else(|e| e.into_inner());
            hooks.targets.push(WebhookTarget {
                url: url.into(),
                token: token.into(),
            });
        }
        // Listed by `GET /projects/:id/hooks` as a project hook of every project (a change
        // no webhook reports).
        {
            let mut g = self.shared.lock();
            for project in &mut g.state.projects {
                let id = project.hooks.iter().map(|h| h.id).max().unwrap_or(0) + 1;
                project.hooks.push(crate::model::ProjectHook::new(id, url));
            }
        }
        // The current state is the baseline: nothing before the hook is delivered.
        self.hooks_baseline();
    }

    /// Plays GitLab Runner: each MR pipeline created from now on runs `runner`'s command.
    pub fn set_runner(&self, runner: Runner) {
        self.shared
            .hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .runner = Some(runner);
        self.hooks_baseline();
    }

    /// Runs each job in a folder of its own, `pipeline-<id>` under the runner's, as GitLab
    /// Runner gives each job its own build folder (off by default: the job runs in the
    /// runner's folder).
    pub fn set_runner_job_dirs(&self, on: bool) {
        self.shared
            .hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .job_dirs = on;
    }

    fn hooks_baseline(&self) {
        let mut hooks = self.shared.hooks.lock().unwrap_or_else(|e| e.into_inner());
        let targets = std::mem::take(&mut hooks.targets);
        let runner = hooks.runner.take();
        let mut g = self.shared.lock();
        let _ = changes(&mut g.state, &mut hooks);
        hooks.targets = targets;
        hooks.runner = runner;
    }

    /// Every delivery so far, in order.
    pub fn webhook_deliveries(&self) -> Vec<Delivery> {
        self.shared
            .hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .deliveries
            .clone()
    }

    /// Sends delivery `index` again (same body, same `Idempotency-Key`), as GitLab's retry
    /// or a "Resend request" does.
    pub fn redeliver(&self, index: usize) {
        redeliver(&self.shared, index);
    }

    /// The jobs the runner ran so far.
    pub fn runner_runs(&self) -> Vec<RunnerRun> {
        self.shared
            .hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .runs
            .clone()
    }
}

/// The jobs the runner ran so far (takes the hooks' lock: never call it holding the state's).
pub(crate) fn runs(shared: &Shared) -> Vec<RunnerRun> {
    shared
        .hooks
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .runs
        .clone()
}

/// Shared handle type re-exported for the server.
pub(crate) type HooksCell = Mutex<Hooks>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProjectHook;

    const MINUTE: i64 = 60_000;

    /// `app/models/concerns/web_hooks/auto_disabling.rb`: 3 failures are free, the 4th backs
    /// the hook off for 1 minute, each further one doubles it (at most a day), the 40th
    /// disables it for good; a success resets it.
    #[test]
    fn failures_back_the_hook_off_then_disable_it_and_a_success_resets_it() {
        let mut hook = ProjectHook::new(1, "http://serve/webhook");
        let mut now = 1_000_000_000_000;
        for _ in 0..3 {
            backoff(&mut hook, now);
            assert_eq!(alert_status(&hook, now), "executable");
        }
        backoff(&mut hook, now);
        assert_eq!(hook.recent_failures, 4);
        assert_eq!(alert_status(&hook, now), "temporarily_disabled");
        assert_eq!(
            hook.disabled_until.as_deref().and_then(crate::time::parse),
            Some(now + MINUTE)
        );
        backoff(&mut hook, now);
        assert_eq!(hook.recent_failures, 4, "a backed-off hook is not executed");
        now += MINUTE + 1;
        assert_eq!(alert_status(&hook, now), "executable");
        backoff(&mut hook, now);
        assert_eq!(
            hook.disabled_until.as_deref().and_then(crate::time::parse),
            Some(now + 2 * MINUTE)
        );
        while hook.recent_failures < 40 {
            now = hook
                .disabled_until
                .as_deref()
                .and_then(crate::time::parse)
                .unwrap()
                + 1;
            backoff(&mut hook, now);
        }
        assert_eq!(alert_status(&hook, now), "disabled");
        let until = hook.disabled_until.as_deref().and_then(crate::time::parse);
        assert_eq!(until, Some(now + 86_400_000), "the backoff stops at a day");
        assert_eq!(
            alert_status(&hook, now + 2 * 86_400_000),
            "disabled",
            "for good"
        );
        enable(&mut hook);
        assert_eq!(alert_status(&hook, now), "executable");
        assert_eq!((hook.recent_failures, hook.disabled_until), (0, None));
    }

    #[test]
    fn uuids_are_version_4_and_new_each_time() {
        let (a, b) = (new_uuid(), new_uuid());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
    }
}
