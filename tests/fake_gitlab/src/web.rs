//! The web pages of the sandbox, so that a reviewer needs no API call: the `web_url`s the
//! fake serves point at it (when [`crate::model::State::web_url`] is its own root), and it
//! answers them.
//!
//! * `GET /<project>/-/merge_requests/<iid>`: the MR as a reviewer reads it (its pipelines,
//!   each thread with its notes and state), every note's text escaped (notes are hostile
//!   input), and per thread a form "Resolve as alice / bob / carol" (or "Unresolve"), and a
//!   "Run pipeline" button, as GitLab's MR page has.
//! * `POST /<project>/-/merge_requests/<iid>/discussions/<id>/resolve` (`as`, `resolved`,
//!   `form_token`): resolves or re-opens the thread as that user through the same state
//!   change the API makes, so the system note for the last thread and the MR hook follow as
//!   in GitLab; then `303` back to the page.
//! * `POST /<project>/-/merge_requests/<iid>/pipelines` (`form_token`): a new MR pipeline.
//! * `GET /<project>/-/jobs/<id>`: the job's trace (what the runner's command printed).
//! * `GET /<project>/-/blob/<sha>/<path>`: a file at a commit, its lines numbered.
//! * `GET /<project>`: the project's merge requests.
//! * `POST /__fake/push` (JSON `{"project", "mr", "files": {path: base64}}`): a push of a new
//!   source tree ([`crate::sandbox::push`]); `fake-gitlab push` sends it.
//!
//! The forms carry a token drawn when the fake starts, so another site open in the same
//! browser cannot post them, and the pages answer only under the host names of loopback (a
//! DNS rebinding gets `421`); the fake listens on 127.0.0.1 only.

use std::fmt::Write as _;

use serde_json::json;

use crate::http::{RawRequest, Response};
use crate::model::{BOT_USER_TYPES, MergeRequest, Project, State};
use crate::server::Shared;

/// `text` with every character HTML gives a meaning escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn html(status: u16, body: String) -> Response {
    Response::bytes(status, "text/html; charset=utf-8", body.into_bytes())
        // A hostile note can hold no script that runs: none is allowed at all.
        .header(
            "Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
        )
}

fn text(status: u16, body: String) -> Response {
    Response::bytes(status, "text/plain; charset=utf-8", body.into_bytes())
}

/// A web route's answer, or `None` when `raw_path` is no page of a project of the fake (the
/// API then answers it).
pub(crate) fn handle(shared: &Shared, req: &RawRequest, raw_path: &str) -> Option<Response> {
    if raw_path.starts_with("/api/") {
        return None;
    }
    let path = percent_encoding::percent_decode_str(raw_path)
        .decode_utf8_lossy()
        .into_owned();
    let path = path.trim_start_matches('/');
    let (project_path, rest) = match path.split_once("/-/") {
        Some((p, rest)) => (p, rest),
        None => (path.trim_end_matches('/'), ""),
    };
    // Before the state's lock: the hooks' lock is always taken first.
    let runs = crate::hooks::runs(shared);
    let mut g = shared.lock();
    let project_id = g
        .state
        .projects
        .iter()
        .find(|p| p.path_with_namespace == project_path)?
        .id;
    // A page reached under another host name is a DNS rebinding of 127.0.0.1: another site
    // would read the form token from it.
    let host = req.header("host").unwrap_or("");
    let hostname = host.rsplit_once(':').map_or(host, |(name, _)| name);
    if !matches!(hostname, "127.0.0.1" | "localhost" | "[::1]") {
        return Some(text(
            421,
            "421 Misdirected Request: open the sandbox's pages at 127.0.0.1\n".into(),
        ));
    }
    let parts: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let method = req.method.as_str();
    let form: Vec<(String, String)> = form_urlencoded::parse(&req.body).into_owned().collect();
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    if method == "POST" && field("form_token") != Some(shared.web_token.as_str()) {
        return Some(text(
            403,
            "403 Forbidden: the form's token is missing or stale; reload the page\n".into(),
        ));
    }
    let state = &mut g.state;
    let answer = match (method, parts.as_slice()) {
        ("GET", []) => html(200, project_page(state, project_id)),
        ("GET", ["merge_requests", iid]) => match iid.parse::<u64>() {
            Ok(iid) if state.mr_ref(project_id, iid).is_ok() => html(
                200,
                mr_page(state, project_id, iid, &runs, &shared.web_token),
            ),
            _ => text(404, "404 Merge request not found\n".into()),
        },
        ("POST", ["merge_requests", iid, "discussions", id, "resolve"]) => {
            let Ok(iid) = iid.parse::<u64>() else {
                return Some(text(404, "404 Merge request not found\n".into()));
            };
            let who = field("as").unwrap_or("");
            let Some(user) = state
                .users
                .iter()
                .find(|u| u.username == who && !BOT_USER_TYPES.contains(&u.user_type.as_str()))
                .map(|u| u.id)
            else {
                return Some(text(400, format!("400 No person named {who:?}\n")));
            };
            let resolved = field("resolved") != Some("false");
            match state.set_resolved(project_id, iid, id, user, resolved) {
                Ok(()) => back_to(state, project_id, iid),
                Err(e) => text(400, format!("400 Cannot resolve the thread: {e:?}\n")),
            }
        }
        ("POST", ["merge_requests", iid, "pipelines"]) => {
            let Ok(iid) = iid.parse::<u64>() else {
                return Some(text(404, "404 Merge request not found\n".into()));
            };
            match state.create_pipeline(project_id, iid) {
                Ok(_) => back_to(state, project_id, iid),
                Err(e) => text(400, format!("400 Cannot create the pipeline: {e:?}\n")),
            }
        }
        ("GET", ["blob", sha, file @ ..]) => blob(state, project_id, sha, &file.join("/")),
        ("GET", ["jobs", id]) => match id.parse::<u64>() {
            Ok(id) => job_trace(state, project_id, id, &runs),
            Err(_) => text(404, "404 Job not found\n".into()),
        },
        _ => text(404, "404 Not Found\n".into()),
    };
    Some(answer)
}

/// A file at a commit, as text: where a finding's `line N` link leads (the anchor is the
/// browser's).
fn blob(state: &State, project_id: u64, sha: &str, file: &str) -> Response {
    match state
        .project(project_id)
        .and_then(|p| p.files.get(sha))
        .and_then(|files| files.get(file))
    {
        Some(content) => {
            let numbered: String = String::from_utf8_lossy(&content.0)
                .lines()
                .enumerate()
                .map(|(n, line)| format!("{:>5}  {line}\n", n + 1))
                .collect();
            text(200, format!("{file} at {sha}\n\n{numbered}"))
        }
        None => text(404, "404 File not found\n".into()),
    }
}

fn back_to(state: &State, project_id: u64, iid: u64) -> Response {
    let location = match state.project(project_id) {
        Some(p) => format!("/{}/-/merge_requests/{iid}", p.path_with_namespace),
        None => "/".into(),
    };
    text(303, format!("See {location}\n")).header("Location", location)
}

fn username(state: &State, id: u64) -> String {
    state
        .users
        .iter()
        .find(|u| u.id == id)
        .map_or_else(|| format!("user {id}"), |u| format!("@{}", u.username))
}

const STYLE: &str = "body{font-family:sans-serif;max-width:60em;margin:1em auto;padding:0 1em}\
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em;border:1px solid #ddd}\
section{border-top:1px solid #ccc;margin-top:1em}form{display:inline}";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head>\n<body>\n{body}</body>\n</html>\n",
        escape(title)
    )
}

fn project_page(state: &State, project_id: u64) -> String {
    let Some(p) = state.project(project_id) else {
        return page("not found", "");
    };
    let mut body = format!("<h1>{}</h1>\n<ul>\n", escape(&p.path_with_namespace));
    for mr in &p.merge_requests {
        let _ = writeln!(
            body,
            "<li><a href=\"/{}/-/merge_requests/{}\">!{}</a> {} ({})</li>",
            escape(&p.path_with_namespace),
            mr.iid,
            mr.iid,
            escape(&mr.title),
            mr.state.as_str()
        );
    }
    body.push_str("</ul>\n");
    if p.merge_requests.is_empty() {
        body.push_str("<p>No merge requests.</p>\n");
    }
    page(&p.path_with_namespace, &body)
}

fn hidden_token(token: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"form_token\" value=\"{}\">",
        escape(token)
    )
}

fn mr_page(
    state: &State,
    project_id: u64,
    iid: u64,
    runs: &[crate::hooks::RunnerRun],
    token: &str,
) -> String {
    let (Some(p), Ok(mr)) = (state.project(project_id), state.mr_ref(project_id, iid)) else {
        return page("not found", "");
    };
    let base = format!("/{}/-/merge_requests/{iid}", escape(&p.path_with_namespace));
    let mut body = format!(
        "<h1>{} !{iid}: {}</h1>\n<p>{} by {}: <code>{}</code> into <code>{}</code>, head <code>{}</code></p>\n",
        escape(&p.path_with_namespace),
        escape(&mr.title),
        mr.state.as_str(),
        escape(&username(state, mr.author_id)),
        escape(&mr.source_branch),
        escape(&mr.target_branch),
        escape(&mr.sha),
    );
    body.push_str(&pipelines_html(p, mr, runs));
    let _ = writeln!(
        body,
        "<form method=\"post\" action=\"{base}/pipelines\">{}<button>Run pipeline</button></form>",
        hidden_token(token)
    );
    body.push_str("<h2>Threads</h2>\n");
    if mr.discussions.is_empty() {
        body.push_str("<p>No notes yet.</p>\n");
    }
    let people: Vec<&str> = state
        .users
        .iter()
        .filter(|u| !BOT_USER_TYPES.contains(&u.user_type.as_str()))
        .map(|u| u.username.as_str())
        .collect();
    for d in &mr.discussions {
        let Some(first) = d.notes.first() else {
            continue;
        };
        let status = if d.resolvable() && d.resolved() {
            format!(
                "resolved by {}",
                first
                    .resolved_by
                    .map_or_else(|| "?".into(), |id| username(state, id))
            )
        } else if d.resolvable() {
            "unresolved".into()
        } else {
            "note".into()
        };
        let place = match first.position.as_ref() {
            Some(p) => match (p.new_line, p.old_line) {
                (Some(line), _) => format!(" on {} line {line}", p.new_path),
                (None, Some(line)) => format!(" on {} removed line {line}", p.old_path),
                (None, None) => format!(" on {}", p.new_path),
            },
            None => String::new(),
        };
        let _ = writeln!(
            body,
            "<section id=\"{}\">\n<h3>Thread {}{} ({})</h3>",
            escape(&d.id),
            escape(&d.id),
            escape(&place),
            escape(&status)
        );
        for note in &d.notes {
            let _ = writeln!(
                body,
                "<p id=\"note_{}\"><b>{}</b>{}</p>\n<pre>{}</pre>",
                note.id,
                escape(&username(state, note.author_id)),
                if note.system { " (system note)" } else { "" },
                escape(&note.body)
            );
        }
        if d.resolvable() {
            let resolved = !d.resolved();
            let verb = if resolved { "Resolve" } else { "Unresolve" };
            let _ = write!(
                body,
                "<form method=\"post\" action=\"{base}/discussions/{}/resolve\">{}<input type=\"hidden\" name=\"resolved\" value=\"{resolved}\">",
                escape(&d.id),
                hidden_token(token)
            );
            for who in &people {
                let _ = write!(
                    body,
                    " <button name=\"as\" value=\"{0}\">{verb} as {0}</button>",
                    escape(who)
                );
            }
            body.push_str("</form>\n");
        }
        body.push_str("</section>\n");
    }
    page(&format!("!{iid} {}", mr.title), &body)
}

fn pipelines_html(p: &Project, mr: &MergeRequest, runs: &[crate::hooks::RunnerRun]) -> String {
    let pipelines: Vec<_> = p
        .pipelines
        .iter()
        .filter(|pl| pl.mr_iid == Some(mr.iid))
        .collect();
    let mut out = String::from("<h2>Pipelines</h2>\n");
    if pipelines.is_empty() {
        out.push_str("<p>No pipeline yet.</p>\n");
        return out;
    }
    out.push_str("<ul>\n");
    for pl in pipelines.iter().rev() {
        let exit = runs
            .iter()
            .find(|r| r.pipeline_id == pl.id)
            .and_then(|r| r.exit_code)
            .map_or_else(String::new, |c| format!(", exit {c}"));
        let _ = writeln!(
            out,
            "<li>#{} for <code>{}</code>: <b>{}</b>{exit} (<a href=\"/{}/-/jobs/{}\">job log</a>)</li>",
            pl.id,
            escape(pl.sha.get(..8).unwrap_or(&pl.sha)),
            escape(&pl.status),
            escape(&p.path_with_namespace),
            pl.id
        );
    }
    out.push_str("</ul>\n");
    out
}

fn job_trace(
    state: &State,
    project_id: u64,
    id: u64,
    runs: &[crate::hooks::RunnerRun],
) -> Response {
    let Some(pipeline) = state
        .project(project_id)
        .and_then(|p| p.pipelines.iter().find(|pl| pl.id == id))
    else {
        return text(404, "404 Job not found\n".into());
    };
    match runs.iter().find(|r| r.pipeline_id == id) {
        Some(run) => text(
            200,
            format!(
                "Running in {}\n$ {}\n{}{}\nJob exit code: {}\nPipeline status: {}\n",
                run.dir.display(),
                run.command,
                run.stdout,
                run.stderr,
                run.exit_code
                    .map_or_else(|| "none (killed, or not started)".into(), |c| c.to_string()),
                pipeline.status
            ),
        ),
        None => text(
            200,
            format!(
                "Pipeline status: {} (no job has run for it: a runner runs jobs only with --run-pipelines)\n",
                pipeline.status
            ),
        ),
    }
}

/// `POST /__fake/push`: the body's tree pushed to the MR's source branch.
pub(crate) fn push(shared: &Shared, body: &[u8]) -> Response {
    use base64::Engine;
    #[derive(serde::Deserialize)]
    struct Push {
        project: String,
        mr: u64,
        files: std::collections::BTreeMap<String, String>,
    }
    let push: Push = match serde_json::from_slice(body) {
        Ok(p) => p,
        Err(e) => return Response::error(400, &format!("not a push: {e}")),
    };
    let mut tree = crate::sandbox::Tree::new();
    for (path, content) in push.files {
        match base64::engine::general_purpose::STANDARD.decode(content) {
            Ok(bytes) => {
                tree.insert(path, bytes);
            }
            Err(e) => return Response::error(400, &format!("{path}: not base64: {e}")),
        }
    }
    let mut g = shared.lock();
    let state = &mut g.state;
    let Some(project_id) = state
        .projects
        .iter()
        .find(|p| p.path_with_namespace == push.project || p.id.to_string() == push.project)
        .map(|p| p.id)
    else {
        return Response::error(404, &format!("no project {:?}", push.project));
    };
    match crate::sandbox::push(state, project_id, push.mr, &tree) {
        Ok(sha) => {
            let pipeline = state
                .mr_ref(project_id, push.mr)
                .ok()
                .and_then(|m| m.head_pipeline.as_ref())
                .map(|p| p.id);
            Response::json(201, &json!({"sha": sha, "pipeline": pipeline}))
        }
        Err(e @ crate::sandbox::PushError::NothingToCommit) => Response::error(409, &e.to_string()),
        Err(e) => Response::error(404, &e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_leaves_no_markup() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }
}
