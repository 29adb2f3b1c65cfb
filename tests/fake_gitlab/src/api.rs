//! The GitLab REST API v4 routes: auth, parameters, pagination and JSON shapes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::http::{RawRequest, Response};
use crate::model::{Discussion, MergeRequest, Note, Pipeline, Project, State, Token, User};
use crate::ops::OpError;
use crate::route::{Route, RouteKind};
use crate::server::Inner;
use crate::time;

/// Notes longer than this are refused, as GitLab does.
const MAX_NOTE_CHARS: usize = 1_000_000;

type Params = BTreeMap<String, String>;

struct Ctx<'a> {
    token: Token,
    params: Params,
    query_pairs: Vec<(String, String)>,
    host: &'a str,
    raw_path: &'a str,
}

fn parse_pairs(s: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(s.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn value_to_param(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn unauthorized() -> Response {
    Response::message(401, "401 Unauthorized")
}

fn insufficient_scope() -> Response {
    Response::json(
        403,
        &json!({
            "error": "insufficient_scope",
            "error_description": "The request requires higher privileges than provided by the access token.",
            "scope": "api"
        }),
    )
    .header(
        "WWW-Authenticate",
        "Bearer realm=\"\", error=\"insufficient_scope\", error_description=\"The request requires higher privileges than provided by the access token.\", scope=\"api\"",
    )
}

fn op_err(e: OpError) -> Response {
    Response::message(e.status(), e.message())
}

/// Runs one API request against the state. Returns the answer and the authenticated user.
pub(crate) fn dispatch(
    inner: &mut Inner,
    req: &RawRequest,
    route: &Route,
    raw_path: &str,
    query: &str,
    host: &str,
) -> (Response, Option<u64>) {
    let query_pairs = parse_pairs(query);
    // A token in the URL is refused and recorded: it would end up in access logs.
    let token_in_url = query_pairs
        .iter()
        .any(|(k, _)| k == "private_token" || k == "access_token" || k == "job_token")
        || inner
            .state
            .tokens
            .iter()
            .any(|t| !t.token.is_empty() && req.target.contains(&t.token));
    if token_in_url {
        inner
            .violations
            .push(format!("token in URL: {} {}", req.method, raw_path));
        return (unauthorized(), None);
    }
    if route.kind == RouteKind::Unknown {
        return (Response::message(404, "404 Not Found"), None);
    }
    let presented = req.header("private-token").map(str::to_string).or_else(|| {
        req.header("authorization")
            .and_then(|a| a.strip_prefix("Bearer ").map(str::to_string))
    });
    let Some(token) =
        presented.and_then(|p| inner.state.tokens.iter().find(|t| t.token == p).cloned())
    else {
        return (unauthorized(), None);
    };
    let user = token.user_id;
    if inner.state.user(user).is_none() {
        return (unauthorized(), None);
    }
    let write = !matches!(req.method.as_str(), "GET" | "HEAD");
    let has = |s: &str| token.scopes.iter().any(|x| x == s);
    let allowed = if write {
        has("api")
    } else {
        has("api")
            || has("read_api")
            || (matches!(route.kind, RouteKind::User | RouteKind::UserById) && has("read_user"))
    };
    if !allowed {
        return (insufficient_scope(), Some(user));
    }

    let mut params: Params = query_pairs.iter().cloned().collect();
    let ctype = req
        .header("content-type")
        .unwrap_or("")
        .to_ascii_lowercase();
    if !req.body.is_empty() {
        if ctype.starts_with("application/json") {
            match serde_json::from_slice::<Value>(&req.body) {
                Ok(Value::Object(m)) => {
                    for (k, v) in m {
                        params.insert(k, value_to_param(&v));
                    }
                }
                _ => {
                    return (
                        Response::error(400, "400 Bad request - malformed JSON"),
                        Some(user),
                    );
                }
            }
        } else {
            for (k, v) in parse_pairs(&String::from_utf8_lossy(&req.body)) {
                params.insert(k, v);
            }
        }
    }
    for (_, v) in params.iter() {
        if v.lines().any(|l| l.starts_with('/')) && write {
            inner.violations.push(format!(
                "quick-action line in a body: {} {}",
                req.method, raw_path
            ));
            break;
        }
    }
    let ctx = Ctx {
        token,
        params,
        query_pairs,
        host,
        raw_path,
    };
    let resp = route_request(&mut inner.state, &req.method, route, &ctx);
    (expand_inflated(&inner.state, resp), Some(user))
}

/// What [`note_json`] writes in place of an inflated note's extra text (`\0` keeps it from
/// ever matching a real body); serialized, it reads `\u0000inflate:<id>\u0000`.
const INFLATE_MARK: &str = "\\u0000inflate:";

/// Replaces each inflated note's mark in a serialized answer by its text, escaped once and
/// repeated: serializing a megabyte string is slow in a debug build, copying it is not.
fn expand_inflated(st: &State, mut resp: Response) -> Response {
    if st.inflated_notes.is_empty() {
        return resp;
    }
    let body = std::mem::take(&mut resp.body);
    let Ok(text) = String::from_utf8(body) else {
        return resp;
    };
    if !text.contains(INFLATE_MARK) {
        resp.body = text.into_bytes();
        return resp;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(INFLATE_MARK) {
        out.push_str(&rest[..at]);
        let after = &rest[at + INFLATE_MARK.len()..];
        let end = after.find("\\u0000").unwrap_or(after.len());
        let inflation = after[..end]
            .parse::<u64>()
            .ok()
            .and_then(|id| st.inflated_notes.get(&id));
        if let Some((unit, times)) = inflation {
            let escaped = serde_json::to_string(unit).expect("a string serializes");
            out.push_str(&escaped[1..escaped.len() - 1].repeat(*times));
        }
        rest = after.get(end + "\\u0000".len()..).unwrap_or("");
    }
    out.push_str(rest);
    resp.body = out.into_bytes();
    resp
}

fn find_project(st: &State, key: &str) -> Option<u64> {
    st.projects
        .iter()
        .find(|p| p.id.to_string() == key || p.path_with_namespace == key)
        .map(|p| p.id)
}

fn method_not_allowed() -> Response {
    Response::message(405, "405 Method Not Allowed")
}

fn route_request(st: &mut State, method: &str, route: &Route, ctx: &Ctx) -> Response {
    let uid = ctx.token.user_id;
    match (route.kind, method) {
        (RouteKind::User, "GET") => return Response::json(200, &user_full(st, uid)),
        (RouteKind::TokenSelf, "GET") => {
            let t = &ctx.token;
            return Response::json(
                200,
                &json!({
                    "id": 1, "name": t.name, "revoked": false, "created_at": "2024-01-01T00:00:00.000Z",
                    "scopes": t.scopes, "user_id": t.user_id, "last_used_at": st.now(),
                    "active": true, "expires_at": t.expires_at
                }),
            );
        }
        (RouteKind::Version, "GET") => return crate::ci::version(st),
        // `lib/api/users.rb` `get ":id"`: `Entities::User` for a token that is not an
        // admin's, 404 for a user it may not see (the fake knows no hidden users).
        (RouteKind::UserById, "GET") => {
            return match route
                .name
                .parse::<u64>()
                .ok()
                .filter(|id| st.user(*id).is_some())
            {
                Some(id) => Response::json(200, &user_full(st, id)),
                None => Response::message(404, "404 User Not Found"),
            };
        }
        (RouteKind::User | RouteKind::UserById | RouteKind::TokenSelf | RouteKind::Version, _) => {
            return method_not_allowed();
        }
        _ => {}
    }
    let Some(pid) = find_project(st, &route.project) else {
        return Response::message(404, "404 Project Not Found");
    };
    let level = ctx.token.access_level;
    macro_rules! p {
        () => {
            st.project(pid).expect("project")
        };
    }
    let body = || ctx.params.get("body").cloned().unwrap_or_default();
    let check_body = |b: &str| -> Option<Response> {
        if b.is_empty() {
            Some(Response::error(400, "body is missing"))
        } else {
            note_too_long(b)
        }
    };
    match (route.kind, method) {
        (RouteKind::Project, "GET") => Response::json(200, &project_json(st, p!(), level)),
        (RouteKind::ProjectMember, "GET") => {
            let u: Option<u64> = route.name.parse().ok();
            match u.and_then(|u| st.user(u)) {
                Some(user) => {
                    let lvl = st
                        .tokens
                        .iter()
                        .filter(|t| t.user_id == user.id)
                        .map(|t| t.access_level)
                        .max()
                        .unwrap_or(0);
                    if lvl == 0 {
                        return Response::message(404, "404 Not found");
                    }
                    let mut v = user_basic(st, user.id);
                    v["access_level"] = json!(lvl);
                    Response::json(200, &v)
                }
                None => Response::message(404, "404 Not found"),
            }
        }
        (RouteKind::MergeRequests, "GET") => list_mrs(st, pid, ctx),
        (RouteKind::MergeRequest, "GET") => match p!().mr(route.iid) {
            Some(mr) => Response::json(200, &mr_json(st, p!(), mr, true)),
            None => op_err(OpError::MergeRequestNotFound),
        },
        (RouteKind::Discussions, "GET") => match p!().mr(route.iid) {
            Some(mr) => {
                let items = mr.listed_discussions();
                paginate_with(st, items, ctx, |d| discussion_json(st, p!(), mr, d))
            }
            None => op_err(OpError::MergeRequestNotFound),
        },
        (RouteKind::Discussions, "POST") => {
            let b = body();
            if let Some(r) = check_body(&b) {
                return r;
            }
            let created = if crate::positions::has_position(&ctx.params) {
                let Some(mr) = p!().mr(route.iid) else {
                    return op_err(OpError::MergeRequestNotFound);
                };
                match crate::positions::validate(mr, &ctx.params) {
                    Ok(position) => st.create_diff_thread(pid, route.iid, uid, &b, position),
                    Err(refused) => return refused,
                }
            } else {
                st.create_thread(pid, route.iid, uid, &b)
            };
            match created {
                Ok((did, _)) => {
                    let mr = p!().mr(route.iid).expect("mr");
                    let d = mr.discussion(&did).expect("discussion");
                    Response::json(201, &discussion_json(st, p!(), mr, d))
                }
                Err(e) => op_err(e),
            }
        }
        (RouteKind::Discussion, "GET") => match st.mr_ref(pid, route.iid) {
            Ok(mr) => match mr.discussion(&route.discussion) {
                Some(d) => Response::json(200, &discussion_json(st, p!(), mr, d)),
                None => op_err(OpError::DiscussionNotFound),
            },
            Err(e) => op_err(e),
        },
        (RouteKind::Discussion, "PUT") => {
            let Some(resolved) = ctx.params.get("resolved") else {
                return Response::error(400, "resolved is missing");
            };
            let resolved = match parse_bool(resolved) {
                Some(b) => b,
                None => return Response::error(400, "resolved is invalid"),
            };
            if let Err(e) = can_resolve(st, pid, route.iid, uid, level) {
                return e;
            }
            match st.set_resolved(pid, route.iid, &route.discussion, uid, resolved) {
                Ok(()) => {
                    let mr = p!().mr(route.iid).expect("mr");
                    let d = mr.discussion(&route.discussion).expect("discussion");
                    Response::json(200, &discussion_json(st, p!(), mr, d))
                }
                Err(e) => op_err(e),
            }
        }
        (RouteKind::DiscussionNotes, "POST") => {
            let b = body();
            if let Some(r) = check_body(&b) {
                return r;
            }
            match st.reply(pid, route.iid, &route.discussion, uid, &b) {
                Ok(nid) => {
                    let mr = p!().mr(route.iid).expect("mr");
                    Response::json(201, &note_json(st, p!(), mr, mr.note(nid).expect("note")))
                }
                Err(e) => op_err(e),
            }
        }
        (RouteKind::DiscussionNote, "GET" | "PUT" | "DELETE") => {
            let in_discussion = st
                .mr_ref(pid, route.iid)
                .ok()
                .and_then(|m| m.discussion(&route.discussion))
                .is_some_and(|d| d.notes.iter().any(|n| n.id == route.note));
            if !in_discussion {
                return op_err(OpError::NoteNotFound);
            }
            note_route(st, pid, route, method, ctx, level)
        }
        (RouteKind::Notes, "GET") => match p!().mr(route.iid) {
            Some(mr) => {
                let mut notes: Vec<&Note> =
                    mr.discussions.iter().flat_map(|d| d.notes.iter()).collect();
                let asc = ctx.params.get("sort").map(String::as_str) == Some("asc");
                let by_updated =
                    ctx.params.get("order_by").map(String::as_str) == Some("updated_at");
                notes.sort_by_key(|n| {
                    let t = if by_updated {
                        &n.updated_at
                    } else {
                        &n.created_at
                    };
                    (time::parse(t).unwrap_or(0), n.id)
                });
                if !asc {
                    notes.reverse();
                }
                paginate_with(st, notes, ctx, |n| note_json(st, p!(), mr, n))
            }
            None => op_err(OpError::MergeRequestNotFound),
        },
        (RouteKind::Notes, "POST") => {
            let b = body();
            if let Some(r) = check_body(&b) {
                return r;
            }
            match st.create_note(pid, route.iid, uid, &b, false) {
                Ok((_, nid)) => {
                    let mr = p!().mr(route.iid).expect("mr");
                    Response::json(201, &note_json(st, p!(), mr, mr.note(nid).expect("note")))
                }
                Err(e) => op_err(e),
            }
        }
        (RouteKind::Note, "GET" | "PUT" | "DELETE") => {
            note_route(st, pid, route, method, ctx, level)
        }
        (RouteKind::Diffs, "GET") => match p!().mr(route.iid) {
            Some(mr) => {
                let items = crate::diff_limits::served_diffs(st, &mr.diffs)
                    .iter()
                    .map(|d| serde_json::to_value(d).map(strip_nulls).expect("diff"))
                    .collect();
                paginate(st, items, ctx)
            }
            None => op_err(OpError::MergeRequestNotFound),
        },
        // `lib/api/merge_request_diffs.rb`: `paginate(merge_request.merge_request_diffs
        // .order_id_desc)` as `Entities::MergeRequestDiff` (id, head, base and start SHAs,
        // created_at, merge_request_id, state, real_size, patch_id_sha): one version per
        // head the MR had, the current one first.
        (RouteKind::Versions, "GET") => match p!().mr(route.iid) {
            Some(mr) => {
                let mr_id = mr.global_id(pid);
                let heads: Vec<&String> = mr.earlier_heads.iter().chain([&mr.sha]).collect();
                let items = heads
                    .iter()
                    .enumerate()
                    .rev()
                    .map(|(i, head)| {
                        json!({
                            "id": mr_id * 100 + i as u64 + 1,
                            "head_commit_sha": head,
                            "base_commit_sha": mr.diff_refs.base_sha,
                            "start_commit_sha": mr.diff_refs.start_sha,
                            "created_at": mr.created_at,
                            "merge_request_id": mr_id,
                            "state": "collected",
                            "real_size": mr.diffs.len().to_string(),
                            "patch_id_sha": null,
                        })
                    })
                    .collect();
                paginate(st, items, ctx)
            }
            None => op_err(OpError::MergeRequestNotFound),
        },
        // The MR with every diff GitLab collected and whether it stopped at its limits.
        (RouteKind::Changes, "GET") => match p!().mr(route.iid) {
            Some(mr) => {
                let mut v = mr_json(st, p!(), mr, true);
                v["changes"] = mr
                    .diffs
                    .iter()
                    .map(|d| serde_json::to_value(d).map(strip_nulls).expect("diff"))
                    .collect();
                v["overflow"] = json!(mr.overflow);
                Response::json(200, &v)
            }
            None => op_err(OpError::MergeRequestNotFound),
        },
        // `lib/api/merge_requests.rb`: no `authorize!`; `MergeRequests::CreatePipelineService`
        // answers a nil pipeline for an MR without commits (`not_allowed!`, 405), and
        // `Ci::CreatePipelineService` refuses a user below Developer without persisting the
        // pipeline (`Gitlab::Ci::Pipeline::Chain::Validate::Abilities`:
        // `render_validation_error!`, 400); a persisted pipeline is `status :ok` (200).
        (RouteKind::Pipelines, "POST") => {
            match p!().mr(route.iid) {
                None => return op_err(OpError::MergeRequestNotFound),
                Some(mr) if mr.has_no_commits => {
                    return Response::message(405, "405 Method Not Allowed");
                }
                Some(_) => {}
            }
            if level < 30 {
                return Response::json(
                    400,
                    &json!({"message": {"base": ["Insufficient permissions to create a new pipeline"]}}),
                );
            }
            match st.create_pipeline(pid, route.iid) {
                Ok(pl) => Response::json(200, &pipeline_json(st, p!(), &pl)),
                Err(e) => op_err(e),
            }
        }
        (RouteKind::Pipelines, "GET") => match p!().mr(route.iid) {
            Some(_) => {
                let mut pls: Vec<&Pipeline> = p!()
                    .pipelines
                    .iter()
                    .filter(|x| x.mr_iid == Some(route.iid))
                    .collect();
                pls.sort_by_key(|x| std::cmp::Reverse(x.id));
                let items = pls
                    .into_iter()
                    .map(|x| pipeline_json(st, p!(), x))
                    .collect();
                paginate(st, items, ctx)
            }
            None => op_err(OpError::MergeRequestNotFound),
        },
        (RouteKind::Job, "GET") => crate::ci::job(st, p!(), &route.name, level),
        (RouteKind::ResourceGroup, "GET") => crate::ci::resource_group(p!(), &route.name, level),
        (RouteKind::ProjectHooks, "GET") => {
            if level < 40 {
                return Response::message(403, "403 Forbidden");
            }
            // Auto-disabling as `app/models/concerns/web_hooks/auto_disabling.rb`: see
            // `crate::hooks`.
            let now_ms = crate::time::parse(&st.now()).unwrap_or(0);
            let items = p!()
                .hooks
                .iter()
                .map(|h| {
                    json!({"id": h.id, "url": h.url, "project_id": p!().id,
                           "name": null, "description": null,
                           "created_at": "2026-01-01T00:00:00.000Z",
                           "push_events": h.push_events, "tag_push_events": false,
                           "merge_requests_events": h.merge_requests_events,
                           "note_events": h.note_events, "emoji_events": h.emoji_events,
                           "pipeline_events": h.pipeline_events, "job_events": false,
                           "issues_events": false, "confidential_issues_events": false,
                           "confidential_note_events": false, "wiki_page_events": false,
                           "deployment_events": false, "releases_events": false,
                           "push_events_branch_filter": "", "branch_filter_strategy": "wildcard",
                           "enable_ssl_verification": h.enable_ssl_verification,
                           "alert_status": crate::hooks::alert_status(h, now_ms),
                           "disabled_until": h.disabled_until,
                           "url_variables": [], "custom_webhook_template": null})
                })
                .collect();
            paginate(st, items, ctx)
        }
        (RouteKind::ProjectVariable, "GET") => crate::ci::variable(
            p!(),
            &route.name,
            ctx.params.get("filter[environment_scope]"),
            level,
        ),
        (RouteKind::ResourceGroupCurrentJob, "GET") => {
            crate::ci::current_job(st, p!(), &route.name, level)
        }
        (RouteKind::CiLint, "GET" | "POST") => {
            crate::ci::lint(st, p!(), method, &ctx.params, level)
        }
        (
            RouteKind::MrApprovals
            | RouteKind::Approve
            | RouteKind::Unapprove
            | RouteKind::MrApprovalRules
            | RouteKind::ProjectApprovals
            | RouteKind::ApprovalRules,
            _,
        ) => crate::approvals::route(st, pid, route, method, &ctx.params, uid, level),
        (RouteKind::Tree, "GET") => tree(st, p!(), ctx),
        (RouteKind::FileRaw, "GET") | (RouteKind::File, "GET") => {
            let Some(r) = ctx.params.get("ref").filter(|r| !r.is_empty()) else {
                return Response::error(400, "ref is missing");
            };
            let Some(sha) = resolve_ref(p!(), r) else {
                return Response::message(404, "404 Commit Not Found");
            };
            let Some(content) = p!().files.get(&sha).and_then(|t| t.get(&route.name)) else {
                return Response::message(404, "404 File Not Found");
            };
            // A submodule is a commit in the tree, not a blob: no file there.
            if p!().mode_of(&sha, &route.name) == "160000" {
                return Response::message(404, "404 File Not Found");
            }
            let lfs = ctx.params.get("lfs").and_then(|v| parse_bool(v)) == Some(true);
            if route.kind == RouteKind::FileRaw
                && lfs
                && p!().lfs_enabled
                && let Some(oid) = crate::model::lfs_pointer_oid(&content.0)
            {
                // GitLab answers with the LFS object the pointer names, or 404 without one;
                // from object storage by a redirect unless `proxy_download` is on
                // (`present_carrierwave_file!`, `crate::lfs_storage`).
                return match p!().lfs_objects.get(&oid) {
                    Some(_) if !st.lfs_proxy_download => Response::message(302, "302 Found")
                        .header(
                            "Location",
                            crate::lfs_storage::signed_location(ctx.host, &oid),
                        ),
                    Some(object) => {
                        Response::bytes(200, "application/octet-stream", object.0.clone())
                    }
                    None => Response::message(404, "404 Not found"),
                };
            }
            if route.kind == RouteKind::FileRaw {
                return Response::bytes(200, "text/plain; charset=utf-8", content.0.clone())
                    .header("X-Gitlab-File-Path", route.name.clone())
                    .header("X-Gitlab-Ref", r.clone())
                    .header("X-Gitlab-Commit-Id", sha.clone())
                    .header("X-Gitlab-Size", content.0.len().to_string());
            }
            use base64::Engine;
            let name = route.name.rsplit('/').next().unwrap_or("").to_string();
            Response::json(
                200,
                &json!({
                    "file_name": name, "file_path": route.name, "size": content.0.len(),
                    "encoding": "base64",
                    "content": base64::engine::general_purpose::STANDARD.encode(&content.0),
                    "content_sha256": hex::encode(Sha256::digest(&content.0)),
                    "ref": r, "blob_id": blob_id(&content.0), "commit_id": sha,
                    "last_commit_id": sha, "execute_filemode": false
                }),
            )
        }
        // `lib/api/commits.rb`: `not_found! 'Commit'` for a ref the repository does not know.
        (RouteKind::Commit, "GET") => match resolve_ref(p!(), &route.name) {
            Some(sha) => Response::json(
                200,
                &json!({
                    "id": sha, "short_id": &sha[..sha.len().min(8)], "title": "commit",
                    "message": "commit", "parent_ids": [], "created_at": st.now(),
                    "author_name": "Fake", "author_email": "fake@example.com",
                    "authored_date": st.now(), "committer_name": "Fake",
                    "committer_email": "fake@example.com", "committed_date": st.now(),
                    "web_url": format!("{}/-/commit/{}", p!().web_url(&st.web_url), sha)
                }),
            ),
            None => Response::message(404, "404 Commit Not Found"),
        },
        (RouteKind::Branch, "GET") => match p!().branches.get(&route.name) {
            Some(sha) => Response::json(
                200,
                &json!({
                    "name": route.name, "merged": false, "protected": route.name == p!().default_branch,
                    "default": route.name == p!().default_branch, "developers_can_push": false,
                    "developers_can_merge": false, "can_push": level >= 30,
                    "web_url": format!("{}/-/tree/{}", p!().web_url(&st.web_url), route.name),
                    "commit": {
                        "id": sha, "short_id": &sha[..sha.len().min(8)], "title": "commit",
                        "message": "commit", "parent_ids": [], "created_at": st.now(),
                        "author_name": "Fake", "author_email": "fake@example.com",
                        "authored_date": st.now(), "committer_name": "Fake",
                        "committer_email": "fake@example.com", "committed_date": st.now(),
                        "web_url": format!("{}/-/commit/{}", p!().web_url(&st.web_url), sha)
                    }
                }),
            ),
            None => Response::message(404, "404 Branch Not Found"),
        },
        _ => method_not_allowed(),
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "1" | "yes" | "t" => Some(true),
        "false" | "0" | "no" | "f" => Some(false),
        _ => None,
    }
}

/// Developers and above, or the MR author, may resolve threads.
fn can_resolve(st: &State, pid: u64, iid: u64, uid: u64, level: u32) -> Result<(), Response> {
    let mr = st.mr_ref(pid, iid).map_err(op_err)?;
    if level >= 30 || mr.author_id == uid {
        Ok(())
    } else {
        Err(Response::message(403, "403 Forbidden"))
    }
}

/// GitLab's note length validation (`Note` is at most 1,000,000 characters), on creation
/// and on edits alike.
fn note_too_long(body: &str) -> Option<Response> {
    (body.chars().count() > MAX_NOTE_CHARS).then(|| {
        Response::json(
            400,
            &json!({"message": {"note": ["is too long (maximum is 1000000 characters)"]}}),
        )
    })
}

fn note_route(
    st: &mut State,
    pid: u64,
    route: &Route,
    method: &str,
    ctx: &Ctx,
    level: u32,
) -> Response {
    let uid = ctx.token.user_id;
    let p = |st: &State| st.project(pid).cloned().expect("project");
    match method {
        "GET" => match st.mr_ref(pid, route.iid) {
            Ok(mr) => match mr.note(route.note) {
                Some(n) => Response::json(200, &note_json(st, &p(st), mr, n)),
                None => op_err(OpError::NoteNotFound),
            },
            Err(e) => op_err(e),
        },
        "PUT" => {
            let body = ctx.params.get("body").cloned();
            let resolved = ctx.params.get("resolved").and_then(|r| parse_bool(r));
            if body.is_none() && resolved.is_none() {
                return Response::error(
                    400,
                    "body, resolved are missing, at least one parameter must be provided",
                );
            }
            if let Some(b) = &body {
                if b.is_empty() {
                    return Response::error(400, "body is empty");
                }
                if let Some(refused) = note_too_long(b) {
                    return refused;
                }
                if let Err(e) = st.edit_note(pid, route.iid, route.note, Some(uid), b) {
                    return op_err(e);
                }
            }
            if let Some(r) = resolved {
                if let Err(e) = can_resolve(st, pid, route.iid, uid, level) {
                    return e;
                }
                // One note, saved: its `updated_at` moves (`ops::set_note_resolved`).
                if let Err(e) = st.set_note_resolved(pid, route.iid, route.note, uid, r) {
                    return op_err(e);
                }
            }
            let mr = st.mr_ref(pid, route.iid).expect("mr");
            Response::json(
                200,
                &note_json(st, &p(st), mr, mr.note(route.note).expect("note")),
            )
        }
        "DELETE" => match st.delete_note(pid, route.iid, route.note, Some(uid)) {
            Ok(()) => Response::bytes(204, "application/json", vec![]),
            Err(e) => op_err(e),
        },
        _ => method_not_allowed(),
    }
}

fn strip_nulls(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.retain(|_, x| !x.is_null());
    }
    v
}

fn blob_id(content: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(format!("blob {}\0", content.len()).as_bytes());
    h.update(content);
    hex::encode(h.finalize())[..40].to_string()
}

/// A branch name resolves to its commit; otherwise the ref must be a known commit sha.
fn resolve_ref(p: &Project, r: &str) -> Option<String> {
    if let Some(sha) = p.branches.get(r) {
        return Some(sha.clone());
    }
    let known = p.files.contains_key(r)
        || p.merge_requests.iter().any(|m| {
            m.sha == r
                || m.diff_refs.base_sha == r
                || m.diff_refs.start_sha == r
                || m.diff_refs.head_sha == r
        });
    known.then(|| r.to_string())
}

fn tree(st: &State, p: &Project, ctx: &Ctx) -> Response {
    let r = ctx
        .params
        .get("ref")
        .filter(|r| !r.is_empty())
        .cloned()
        .unwrap_or_else(|| p.default_branch.clone());
    let Some(sha) = resolve_ref(p, &r) else {
        return Response::message(404, "404 Tree Not Found");
    };
    let recursive = ctx.params.get("recursive").and_then(|r| parse_bool(r)) == Some(true);
    let base = ctx
        .params
        .get("path")
        .map(|s| s.trim_matches('/').to_string())
        .unwrap_or_default();
    let empty = BTreeMap::new();
    let files = p.files.get(&sha).unwrap_or(&empty);
    let prefix = if base.is_empty() {
        String::new()
    } else {
        format!("{base}/")
    };
    let mut trees = BTreeSet::new();
    let mut blobs: BTreeMap<String, &crate::model::FileContent> = BTreeMap::new();
    for (path, content) in files {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        for i in 1..parts.len() {
            if recursive || i == 1 {
                trees.insert(format!("{prefix}{}", parts[..i].join("/")));
            }
        }
        if recursive || parts.len() == 1 {
            blobs.insert(path.clone(), content);
        }
    }
    let mut items: Vec<Value> = trees
        .into_iter()
        .map(|t| {
            let name = t.rsplit('/').next().unwrap_or("").to_string();
            json!({"id": hex::encode(Sha256::digest(format!("tree {sha} {t}").as_bytes()))[..40].to_string(),
                   "name": name, "type": "tree", "path": t, "mode": "040000"})
        })
        .collect();
    items.extend(blobs.into_iter().map(|(path, c)| {
        let name = path.rsplit('/').next().unwrap_or("").to_string();
        let mode = p.mode_of(&sha, &path);
        // A submodule is listed as the commit it names.
        let (kind, id) = if mode == "160000" {
            ("commit", String::from_utf8_lossy(&c.0).trim().to_string())
        } else {
            ("blob", blob_id(&c.0))
        };
        json!({"id": id, "name": name, "type": kind, "path": path, "mode": mode})
    }));
    paginate(st, items, ctx)
}

fn list_mrs(st: &State, pid: u64, ctx: &Ctx) -> Response {
    let p = st.project(pid).expect("project");
    let state = ctx.params.get("state").map(String::as_str).unwrap_or("all");
    let after = match ctx.params.get("updated_after") {
        Some(s) => match time::parse(s) {
            Some(t) => Some(t),
            None => return Response::error(400, "updated_after is invalid"),
        },
        None => None,
    };
    let before = match ctx.params.get("updated_before") {
        Some(s) => match time::parse(s) {
            Some(t) => Some(t),
            None => return Response::error(400, "updated_before is invalid"),
        },
        None => None,
    };
    let order_by = ctx
        .params
        .get("order_by")
        .map(String::as_str)
        .unwrap_or("created_at");
    if !matches!(
        order_by,
        "created_at" | "updated_at" | "title" | "merged_at"
    ) {
        return Response::error(400, "order_by does not have a valid value");
    }
    let asc = match ctx.params.get("sort").map(String::as_str) {
        None | Some("desc") => false,
        Some("asc") => true,
        Some(_) => return Response::error(400, "sort does not have a valid value"),
    };
    let mut mrs: Vec<&MergeRequest> = p
        .merge_requests
        .iter()
        .filter(|m| state == "all" || m.state.as_str() == state)
        .filter(|m| {
            let u = time::parse(&m.updated_at).unwrap_or(0);
            after.is_none_or(|a| u >= a) && before.is_none_or(|b| u <= b)
        })
        .filter(|m| {
            ctx.params
                .get("source_branch")
                .is_none_or(|b| &m.source_branch == b)
        })
        .filter(|m| {
            ctx.params
                .get("target_branch")
                .is_none_or(|b| &m.target_branch == b)
        })
        .collect();
    mrs.sort_by(|a, b| {
        let k = |m: &MergeRequest| match order_by {
            "updated_at" => (time::parse(&m.updated_at).unwrap_or(0), String::new()),
            "title" => (0, m.title.clone()),
            _ => (time::parse(&m.created_at).unwrap_or(0), String::new()),
        };
        (k(a), a.iid).cmp(&(k(b), b.iid))
    });
    if !asc {
        mrs.reverse();
    }
    let items = mrs.into_iter().map(|m| mr_json(st, p, m, false)).collect();
    paginate(st, items, ctx)
}

fn page_param(ctx: &Ctx, key: &str, default: u64) -> Result<u64, Response> {
    match ctx.params.get(key) {
        None => Ok(default),
        Some(s) if s.is_empty() => Ok(default),
        Some(s) => match s.parse::<i64>() {
            Ok(n) if n >= 1 => Ok(n as u64),
            Ok(_) => Ok(default),
            Err(_) => Err(Response::error(400, &format!("{key} is invalid"))),
        },
    }
}

/// GitLab offset pagination: `page`/`per_page` (default 20, clamped to 100) and the
/// `X-*` + `Link` headers.
fn paginate(st: &State, items: Vec<Value>, ctx: &Ctx) -> Response {
    paginate_with(st, items, ctx, |v| v)
}

/// [`paginate`] rendering only the requested page's items, so listing D items costs O(D)
/// rather than O(D²) over all pages (the performance harness lists 5,000 discussions).
fn paginate_with<T>(st: &State, items: Vec<T>, ctx: &Ctx, render: impl Fn(T) -> Value) -> Response {
    let page = match page_param(ctx, "page", 1) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let per_page = match page_param(ctx, "per_page", 20) {
        Ok(p) => p.min(st.max_per_page.unwrap_or(100).clamp(1, 100)),
        Err(r) => return r,
    };
    let total = items.len() as u64;
    let start = ((page - 1) * per_page).min(total);
    let end = (start + per_page).min(total);
    let slice: Vec<Value> = items
        .into_iter()
        .skip(start as usize)
        .take((end - start) as usize)
        .map(render)
        .collect();
    let total_pages = total.div_ceil(per_page).max(1);
    let full = end - start == per_page;
    let next = (end < total || (st.next_on_full_page && full)).then_some(page + 1);
    let prev = (page > 1).then(|| page - 1);
    let href = |pg: u64| {
        let mut q: BTreeMap<String, String> = ctx.query_pairs.iter().cloned().collect();
        q.insert("page".into(), pg.to_string());
        q.insert("per_page".into(), per_page.to_string());
        let mut s = form_urlencoded::Serializer::new(String::new());
        for (k, v) in &q {
            s.append_pair(k, v);
        }
        let userinfo = st
            .link_userinfo
            .as_ref()
            .map(|u| format!("{u}@"))
            .unwrap_or_default();
        format!(
            "http://{userinfo}{}{}?{}",
            ctx.host,
            ctx.raw_path,
            s.finish()
        )
    };
    let mut links = vec![];
    if let Some(p) = prev {
        links.push(format!("<{}>; rel=\"prev\"", href(p)));
    }
    if let Some(n) = next {
        links.push(format!("<{}>; rel=\"next\"", href(n)));
    }
    links.push(format!("<{}>; rel=\"first\"", href(1)));
    if !st.omit_totals {
        links.push(format!("<{}>; rel=\"last\"", href(total_pages)));
    }
    if st.link_only {
        return Response::json(200, &Value::Array(slice)).header("Link", links.join(", "));
    }
    let opt = |o: Option<u64>| o.map(|x| x.to_string()).unwrap_or_default();
    let mut r = Response::json(200, &Value::Array(slice))
        .header("X-Page", page.to_string())
        .header("X-Per-Page", per_page.to_string())
        .header("X-Next-Page", opt(next))
        .header("X-Prev-Page", opt(prev))
        .header("Link", links.join(", "));
    if !st.omit_totals {
        r = r
            .header("X-Total", total.to_string())
            .header("X-Total-Pages", total_pages.to_string());
    }
    r
}

// ---- JSON shapes -----------------------------------------------------------------------

pub(crate) fn user_basic(st: &State, id: u64) -> Value {
    match st.user(id) {
        Some(u) => json!({
            "id": u.id, "username": u.username, "name": u.name, "state": u.state,
            "locked": false,
            "avatar_url": format!("https://secure.gravatar.com/avatar/{}?s=80&d=identicon", u.id),
            "web_url": format!("{}/{}", st.web_url, u.username)
        }),
        None => Value::Null,
    }
}

fn user_full(st: &State, id: u64) -> Value {
    let mut v = user_basic(st, id);
    let bot = st.user(id).is_some_and(User::is_bot);
    if let Value::Object(m) = &mut v {
        m.insert("bot".into(), json!(bot));
        m.insert("created_at".into(), json!("2024-01-01T00:00:00.000Z"));
        m.insert("bio".into(), json!(""));
        m.insert("public_email".into(), Value::Null);
        m.insert("is_admin".into(), json!(false));
        m.insert("two_factor_enabled".into(), json!(false));
        m.insert("external".into(), json!(false));
    }
    v
}

fn project_json(st: &State, p: &Project, level: u32) -> Value {
    let name = p
        .path_with_namespace
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_string();
    json!({
        "id": p.id, "name": name, "path": name,
        "path_with_namespace": p.path_with_namespace,
        "name_with_namespace": p.path_with_namespace.replace('/', " / "),
        "default_branch": p.default_branch,
        "web_url": p.web_url(&st.web_url),
        "visibility": "private", "archived": false,
        "merge_method": "merge",
        "only_allow_merge_if_all_discussions_are_resolved": p.only_allow_merge_if_all_discussions_are_resolved,
        "only_allow_merge_if_pipeline_succeeds": p.only_allow_merge_if_pipeline_succeeds,
        "ci_config_path": if p.ci_config_path.is_empty() { Value::Null } else { json!(p.ci_config_path) },
        "allow_merge_on_skipped_pipeline": p.allow_merge_on_skipped_pipeline,
        "resolve_outdated_diff_discussions": p.resolve_outdated_diff_discussions,
        "merge_requests_enabled": true,
        "permissions": {
            "project_access": { "access_level": level, "notification_level": 3 },
            "group_access": null
        }
    })
}

fn pipeline_json(st: &State, p: &Project, pl: &Pipeline) -> Value {
    json!({
        "id": pl.id, "iid": pl.id, "project_id": p.id, "sha": pl.sha, "ref": pl.git_ref,
        "status": pl.status, "source": pl.source, "created_at": pl.created_at,
        "updated_at": pl.updated_at,
        "web_url": format!("{}/-/pipelines/{}", p.web_url(&st.web_url), pl.id)
    })
}

fn mr_json(st: &State, p: &Project, m: &MergeRequest, full: bool) -> Value {
    // GitLab's `blocking_discussions_resolved` is `mergeable_discussions_state?`
    // (`lib/api/entities/merge_request_basic.rb`), which is `true` whenever the project does
    // not require resolved threads (`app/models/merge_request.rb`), and otherwise says whether
    // every resolvable discussion is resolved (plain notes do not count). The same value in
    // the listing and the single MR.
    let every_thread_resolved = m
        .discussions
        .iter()
        .filter(|d| d.resolvable())
        .all(|d| d.resolved());
    let blocking_resolved =
        !p.only_allow_merge_if_all_discussions_are_resolved || every_thread_resolved;
    let mut v = json!({
        "id": m.global_id(p.id), "iid": m.iid, "project_id": p.id,
        "title": m.title, "description": m.description, "state": m.state.as_str(),
        "created_at": m.created_at, "updated_at": m.updated_at,
        "merged_at": null, "closed_at": null,
        "target_branch": m.target_branch, "source_branch": m.source_branch,
        "source_project_id": if m.source_project_id == 0 { p.id } else { m.source_project_id },
        "target_project_id": p.id,
        "author": user_basic(st, m.author_id),
        "labels": m.labels, "draft": m.draft, "work_in_progress": m.draft,
        "merge_status": "can_be_merged",
        "detailed_merge_status": if !blocking_resolved && p.only_allow_merge_if_all_discussions_are_resolved { "discussions_not_resolved" } else { "mergeable" },
        "sha": m.sha, "merge_commit_sha": null, "squash_commit_sha": null,
        "user_notes_count": m.discussions.iter().flat_map(|d| d.notes.iter()).filter(|n| !n.system).count(),
        "has_conflicts": false, "blocking_discussions_resolved": blocking_resolved,
        "references": { "short": format!("!{}", m.iid), "full": format!("{}!{}", p.path_with_namespace, m.iid) },
        "web_url": format!("{}/-/merge_requests/{}", p.web_url(&st.web_url), m.iid)
    });
    if full {
        let hp = m.head_pipeline.as_ref().map(|x| pipeline_json(st, p, x));
        v["diff_refs"] = json!({
            "base_sha": m.diff_refs.base_sha, "head_sha": m.diff_refs.head_sha,
            "start_sha": m.diff_refs.start_sha
        });
        v["pipeline"] = hp.clone().unwrap_or(Value::Null);
        v["head_pipeline"] = hp.unwrap_or(Value::Null);
        v["changes_count"] = m.changes_count_json();
    }
    v
}

fn note_json(st: &State, p: &Project, m: &MergeRequest, n: &Note) -> Value {
    // An inflated note's extra text is spliced in after serialization (expand_inflated).
    let body = match st.inflated_notes.get(&n.id) {
        Some(_) => format!("{}\u{0}inflate:{}\u{0}", n.body, n.id),
        None => n.body.clone(),
    };
    let mut v = json!({
        "id": n.id, "type": n.note_type, "body": body, "attachment": null,
        "author": user_basic(st, n.author_id),
        "created_at": n.created_at, "updated_at": n.updated_at,
        "system": n.system, "noteable_id": m.global_id(p.id),
        "noteable_type": "MergeRequest", "project_id": p.id,
        "resolvable": n.resolvable, "confidential": n.confidential, "internal": n.internal,
        "imported": false, "imported_from": "none", "noteable_iid": m.iid,
        "commands_changes": {}
    });
    if let Some(position) = &n.position {
        v["position"] = crate::positions::position_json(position);
        // `lib/api/entities/note.rb` exposes `commit_id` for a DiffNote on an MR; a thread
        // started on the MR's diff (not on one commit of it) records none.
        v["commit_id"] = Value::Null;
    }
    if n.resolvable {
        v["resolved"] = json!(n.resolved);
        v["resolved_by"] = match n.resolved_by {
            Some(u) if n.resolved => user_basic(st, u),
            _ => Value::Null,
        };
        v["resolved_at"] = json!(if n.resolved {
            n.resolved_at.clone()
        } else {
            None
        });
    }
    v
}

fn discussion_json(st: &State, p: &Project, m: &MergeRequest, d: &Discussion) -> Value {
    json!({
        "id": d.id,
        "individual_note": d.individual_note,
        "notes": d.notes.iter().map(|n| note_json(st, p, m, n)).collect::<Vec<_>>()
    })
}
