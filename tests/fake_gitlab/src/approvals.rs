//! Merge request approvals, with GitLab's answers:
//!
//! * `GET …/merge_requests/:iid/approvals`: the approval state, `approved_by[].user`.
//! * `POST …/merge_requests/:iid/approve` (optional `sha`): 201 and the approval state; 409
//!   `SHA does not match HEAD of source branch: <head>` when `sha` is not the MR's head; when
//!   the user approves already, 304 Not Modified from GitLab 18 on and 401 before; 401 when
//!   the user is the MR's author while author approval is off, or the MR is not open; 403
//!   below Developer.
//! * `POST …/merge_requests/:iid/unapprove`: 201 and the approval state; when the user does
//!   not approve, 304 Not Modified from GitLab 18 on and 404 before; 403 below Developer.
//!
//! The 304 is `not_modified!` in GitLab's `lib/api/merge_request_approvals.rb` (current
//! version), checked before the approval services run; older versions of that file only have
//! the services' failures (`unauthorized!`, `not_found!`). A 304 has no body on the wire.
//! * `GET …/merge_requests/:iid/approval_rules`, `GET /projects/:id/approval_rules`,
//!   `GET /projects/:id/approvals` (settings): 403 when the project's tier has no approval
//!   rules (GitLab Free), and below Reporter.
//!
//! A push that moves an MR's head clears its approvals when the project's
//! `reset_approvals_on_push` is on (GitLab's default), see [`reset_on_push`].

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::api::user_basic;
use crate::http::Response;
use crate::model::{ApprovalRule, MergeRequest, Project, State};
use crate::ops::OpError;
use crate::route::{Route, RouteKind};

const DEVELOPER: u32 = 30;
const REPORTER: u32 = 20;

fn forbidden() -> Response {
    Response::message(403, "403 Forbidden")
}

fn unauthorized() -> Response {
    Response::message(401, "401 Unauthorized")
}

/// The first GitLab version that answers an approval already so with 304
/// (docs/contract.md#approvals-already-so).
const NOT_MODIFIED_SINCE: (u64, u64) = (18, 0);

/// GitLab's answer to an approval or unapproval that is already so: `older` (401 or 404)
/// before [`NOT_MODIFIED_SINCE`], 304 with an empty body (Rack sends none with a 304) from
/// then on.
fn already_so(st: &State, older: Response) -> Response {
    let (major, minor) = NOT_MODIFIED_SINCE;
    if crate::ci::version_at_least(&st.version, major, minor) {
        Response::bytes(304, "application/json", Vec::new())
    } else {
        older
    }
}

/// Clears the approvals of MR `iid` when a push to `new_head` moves its head and the project
/// removes approvals on push.
pub(crate) fn reset_on_push(st: &mut State, pid: u64, iid: u64, new_head: &str) {
    let Some(project) = st.project_mut(pid) else {
        return;
    };
    let reset = project.approvals.reset_approvals_on_push;
    if let Some(mr) = project.mr_mut(iid)
        && reset
        && mr.sha != new_head
    {
        mr.approved_by.clear();
    }
}

/// Answers one approval route.
pub(crate) fn route(
    st: &mut State,
    pid: u64,
    route: &Route,
    method: &str,
    params: &BTreeMap<String, String>,
    uid: u64,
    level: u32,
) -> Response {
    let project = || st.project(pid).expect("project");
    match (route.kind, method) {
        (RouteKind::ProjectApprovals, "GET") => {
            settings_gate(project(), level).unwrap_or_else(|| settings_json(project()))
        }
        (RouteKind::ApprovalRules, "GET") => settings_gate(project(), level).unwrap_or_else(|| {
            let rules = project().approvals.rules.iter();
            Response::json(
                200,
                &Value::Array(rules.map(|r| rule_json(st, r)).collect()),
            )
        }),
        (RouteKind::MrApprovalRules, "GET") => {
            if let Some(refused) = settings_gate(project(), level) {
                return refused;
            }
            match project().mr(route.iid) {
                Some(mr) => Response::json(
                    200,
                    &Value::Array(
                        mr.approval_rules
                            .iter()
                            .map(|r| {
                                let mut v = rule_json(st, r);
                                v["source_rule"] = Value::Null;
                                v["overridden"] = json!(false);
                                v
                            })
                            .collect(),
                    ),
                ),
                None => mr_not_found(),
            }
        }
        (RouteKind::MrApprovals, "GET") => match project().mr(route.iid) {
            Some(mr) => Response::json(200, &approvals_json(st, project(), mr, uid)),
            None => mr_not_found(),
        },
        (RouteKind::Approve, "POST") => approve(st, pid, route.iid, params, uid, level),
        (RouteKind::Unapprove, "POST") => unapprove(st, pid, route.iid, uid, level),
        _ => Response::message(405, "405 Method Not Allowed"),
    }
}

fn mr_not_found() -> Response {
    Response::message(404, OpError::MergeRequestNotFound.message())
}

/// The refusal of a settings or rules read, if any.
fn settings_gate(p: &Project, level: u32) -> Option<Response> {
    (!p.approvals.rules_available || level < REPORTER).then(forbidden)
}

fn approve(
    st: &mut State,
    pid: u64,
    iid: u64,
    params: &BTreeMap<String, String>,
    uid: u64,
    level: u32,
) -> Response {
    let project = st.project(pid).expect("project");
    let author_may_approve = project.approvals.merge_requests_author_approval;
    let Some(mr) = project.mr(iid) else {
        return mr_not_found();
    };
    if level < DEVELOPER {
        return forbidden();
    }
    if let Some(sha) = params.get("sha")
        && *sha != mr.diff_refs.head_sha
    {
        return Response::message(
            409,
            &format!(
                "SHA does not match HEAD of source branch: {}",
                mr.diff_refs.head_sha
            ),
        );
    }
    if mr.approved_by.contains(&uid) {
        return already_so(st, unauthorized());
    }
    let own = mr.author_id == uid && !author_may_approve;
    if mr.state.as_str() != "opened" || own {
        return unauthorized();
    }
    let mr = st.project_mut(pid).and_then(|p| p.mr_mut(iid)).expect("mr");
    mr.approved_by.push(uid);
    let project = st.project(pid).expect("project");
    Response::json(
        201,
        &approvals_json(st, project, project.mr(iid).expect("mr"), uid),
    )
}

fn unapprove(st: &mut State, pid: u64, iid: u64, uid: u64, level: u32) -> Response {
    let Some(mr) = st.project(pid).and_then(|p| p.mr(iid)) else {
        return mr_not_found();
    };
    if level < DEVELOPER {
        return forbidden();
    }
    if !mr.approved_by.contains(&uid) {
        return already_so(st, Response::message(404, "404 Not Found"));
    }
    let mr = st.project_mut(pid).and_then(|p| p.mr_mut(iid)).expect("mr");
    mr.approved_by.retain(|u| *u != uid);
    let project = st.project(pid).expect("project");
    Response::json(
        201,
        &approvals_json(st, project, project.mr(iid).expect("mr"), uid),
    )
}

fn settings_json(p: &Project) -> Response {
    let a = &p.approvals;
    Response::json(
        200,
        &json!({
            "approvals_before_merge": 0,
            "reset_approvals_on_push": a.reset_approvals_on_push,
            "selective_code_owner_removals": false,
            "disable_overriding_approvers_per_merge_request": a.disable_overriding_approvers_per_merge_request,
            "merge_requests_author_approval": a.merge_requests_author_approval,
            "merge_requests_disable_committers_approval": false,
            "require_password_to_approve": false,
            "require_reauthentication_to_approve": false
        }),
    )
}

fn rule_json(st: &State, r: &ApprovalRule) -> Value {
    let users: Vec<Value> = r.user_ids.iter().map(|u| user_basic(st, *u)).collect();
    json!({
        "id": r.id,
        "name": r.name,
        "rule_type": r.rule_type,
        "report_type": null,
        // The fake knows no group members: the eligible approvers are the named users.
        "eligible_approvers": users,
        "approvals_required": r.approvals_required,
        "users": users,
        "groups": r.group_ids.iter().map(|g| json!({
            "id": g, "name": format!("group{g}"), "path": format!("group{g}"),
            "full_path": format!("group{g}"), "visibility": "private"
        })).collect::<Vec<_>>(),
        "contains_hidden_groups": r.contains_hidden_groups,
        "protected_branches": r.protected_branches.iter().enumerate().map(|(i, b)| json!({
            "id": i + 1, "name": b
        })).collect::<Vec<_>>(),
        "applies_to_all_protected_branches": r.applies_to_all_protected_branches
    })
}

/// The approval state entity: who approves, and what the rules still need.
fn approvals_json(st: &State, p: &Project, m: &MergeRequest, uid: u64) -> Value {
    let rules = if m.approval_rules.is_empty() {
        &p.approvals.rules
    } else {
        &m.approval_rules
    };
    let left: u64 = rules
        .iter()
        .map(|r| {
            let counted = m
                .approved_by
                .iter()
                .filter(|u| r.rule_type == "any_approver" || r.user_ids.contains(u))
                .count() as u64;
            r.approvals_required.saturating_sub(counted)
        })
        .sum();
    let required: u64 = rules.iter().map(|r| r.approvals_required).sum();
    json!({
        "id": m.global_id(p.id), "iid": m.iid, "project_id": p.id,
        "title": m.title, "description": m.description, "state": m.state.as_str(),
        "created_at": m.created_at, "updated_at": m.updated_at,
        "merge_status": "can_be_merged",
        "approved": left == 0 && !m.approved_by.is_empty(),
        "approvals_required": required,
        "approvals_left": left,
        "require_password_to_approve": false,
        "approved_by": m.approved_by.iter().map(|u| json!({"user": user_basic(st, *u)})).collect::<Vec<_>>(),
        "suggested_approvers": [],
        "approvers": [],
        "approver_groups": [],
        "user_has_approved": m.approved_by.contains(&uid),
        "user_can_approve": !m.approved_by.contains(&uid) && m.author_id != uid,
        "approval_rules_left": [],
        "has_approval_rules": !rules.is_empty(),
        "merge_request_approvers_available": p.approvals.rules_available,
        "multiple_approval_rules_available": p.approvals.rules_available,
        "invalid_approvers_rules": []
    })
}
