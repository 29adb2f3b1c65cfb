//! CI routes: `/version`, jobs, resource groups and the CI lint API.
//!
//! Shapes and permissions follow GitLab's API: jobs need `read_build` (Reporter), resource
//! groups `read_resource_group` (Developer), the lint GET route `read_code` (Reporter).
//! `current_job` exists from GitLab 18.6 and answers `null` when no job holds the group.
//!
//! The lint `merged_yaml` is the configuration with its `include:` entries resolved (`local`
//! and `project`, each with an optional `ref`; a bare string is local) and merged under the
//! including file, the way GitLab deep-merges them. The fake does not expand `extends`,
//! `!reference` or components, and runs no pipeline simulation (`dry_run` is ignored).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use serde_yaml::Value as Yaml;

use crate::http::Response;
use crate::model::{Job, Project, State};

fn not_found() -> Response {
    Response::message(404, "404 Not found")
}

fn forbidden() -> Response {
    Response::message(403, "403 Forbidden")
}

/// `major.minor` of a version text like `18.6.0-ee`.
pub(crate) fn version_at_least(version: &str, major: u64, minor: u64) -> bool {
    let mut parts = version
        .split(['.', '-'])
        .map(|p| p.parse::<u64>().unwrap_or(0));
    let got = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    got >= (major, minor)
}

pub(crate) fn version(st: &State) -> Response {
    Response::json(
        200,
        &json!({"version": st.version, "revision": "fake", "kas": {"enabled": false}, "enterprise": false}),
    )
}

fn job_json(st: &State, p: &Project, j: &Job, full: bool) -> Value {
    let web = p.web_url(&st.web_url);
    let mut v = json!({
        "id": j.id, "status": j.status, "stage": j.stage, "name": j.name, "ref": j.git_ref,
        "tag": false, "coverage": null, "allow_failure": false,
        "created_at": j.created_at, "started_at": j.created_at, "finished_at": null,
        "erased_at": null, "duration": null, "queued_duration": 0.5,
        "user": null,
        "commit": {"id": j.sha, "short_id": &j.sha[..j.sha.len().min(8)], "title": "commit"},
        "pipeline": {
            "id": j.pipeline_id, "iid": j.pipeline_id, "project_id": p.id, "sha": j.sha,
            "ref": j.git_ref, "status": "running", "source": j.source,
            "created_at": j.created_at, "updated_at": j.created_at,
            "web_url": format!("{web}/-/pipelines/{}", j.pipeline_id)
        },
        "failure_reason": null,
        "web_url": format!("{web}/-/jobs/{}", j.id),
        "project": {"ci_job_token_scope_enabled": false}
    });
    if full {
        v["artifacts"] = json!([]);
        v["runner"] = Value::Null;
        v["artifacts_expire_at"] = Value::Null;
        v["tag_list"] = json!([]);
        v["archived"] = json!(false);
    }
    v
}

pub(crate) fn job(st: &State, p: &Project, id: &str, level: u32) -> Response {
    if level < 20 {
        return forbidden();
    }
    let Ok(id) = id.parse::<u64>() else {
        return Response::error(400, "job_id is invalid");
    };
    match p.jobs.iter().find(|j| j.id == id) {
        Some(j) => Response::json(200, &job_json(st, p, j, true)),
        None => not_found(),
    }
}

pub(crate) fn resource_group(p: &Project, key: &str, level: u32) -> Response {
    match p.resource_groups.iter().find(|g| g.key == key) {
        None => not_found(),
        Some(_) if level < 30 => forbidden(),
        Some(g) => Response::json(
            200,
            &json!({"id": g.id, "key": g.key, "process_mode": g.process_mode,
                    "created_at": g.created_at, "updated_at": g.created_at}),
        ),
    }
}

/// `GET /projects/:id/variables/:key`: Maintainer and above (GitLab answers 403 below). A
/// key defined for several environment scopes is a 409 unless `filter[environment_scope]`
/// picks one, as GitLab's `find_variable` does.
pub(crate) fn variable(p: &Project, key: &str, scope: Option<&String>, level: u32) -> Response {
    if level < 40 {
        return forbidden();
    }
    let found: Vec<_> = p
        .variables
        .iter()
        .filter(|v| v.key == key && scope.is_none_or(|s| &v.environment_scope == s))
        .collect();
    match found.as_slice() {
        [] => Response::message(404, "404 Variable Not Found"),
        [v] => Response::json(
            200,
            &json!({"variable_type": v.variable_type, "key": v.key,
                    "value": if v.hidden { Value::Null } else { json!(v.value) },
                    "hidden": v.hidden, "protected": v.protected, "masked": v.masked,
                    "raw": v.raw, "environment_scope": v.environment_scope,
                    "description": v.description}),
        ),
        _ => Response::message(
            409,
            "There are multiple variables with provided parameters. Please use 'filter[environment_scope]'",
        ),
    }
}

pub(crate) fn current_job(st: &State, p: &Project, key: &str, level: u32) -> Response {
    if !version_at_least(&st.version, 18, 6) {
        return Response::message(404, "404 Not Found");
    }
    match p.resource_groups.iter().find(|g| g.key == key) {
        None => not_found(),
        Some(_) if level < 30 => forbidden(),
        Some(g) => {
            let holder = g
                .holder
                .and_then(|id| p.jobs.iter().find(|j| j.id == id))
                .map(|j| job_json(st, p, j, false));
            Response::json(200, &holder.unwrap_or(Value::Null))
        }
    }
}

/// `GET` (the project's configuration at `content_ref`) or `POST` (`content`).
pub(crate) fn lint(
    st: &State,
    p: &Project,
    method: &str,
    params: &BTreeMap<String, String>,
    level: u32,
) -> Response {
    if level < 20 {
        return forbidden();
    }
    let default_sha = p.branches.get(&p.default_branch).cloned();
    let (sha, content) = match method {
        "GET" => {
            let sha = match params.get("content_ref").or_else(|| params.get("sha")) {
                Some(r) => match p.branches.get(r) {
                    Some(s) => s.clone(),
                    None if p.files.contains_key(r) => r.clone(),
                    None => return Response::message(404, "404 Commit Not Found"),
                },
                None => match default_sha {
                    Some(s) => s,
                    None => return Response::message(404, "404 Repository Not Found"),
                },
            };
            let path = if p.ci_config_path.is_empty() {
                ".gitlab-ci.yml"
            } else {
                p.ci_config_path.as_str()
            };
            let content = p
                .files
                .get(&sha)
                .and_then(|t| t.get(path))
                .map(|c| String::from_utf8_lossy(&c.0).into_owned());
            (sha, content)
        }
        "POST" => {
            let Some(content) = params.get("content") else {
                return Response::error(400, "content is missing");
            };
            (default_sha.unwrap_or_default(), Some(content.clone()))
        }
        _ => return Response::message(405, "405 Method Not Allowed"),
    };
    let invalid = |errors: Vec<String>| {
        Response::json(
            200,
            &json!({"valid": false, "errors": errors, "warnings": [], "merged_yaml": null, "includes": []}),
        )
    };
    let Some(content) = content.filter(|c| !c.trim().is_empty()) else {
        return invalid(vec!["Please provide content of .gitlab-ci.yml".into()]);
    };
    let mut includes = Vec::new();
    let merged = match merge(st, p, &sha, &content, 0, &mut includes) {
        Ok(m) => m,
        Err(e) => return invalid(vec![e]),
    };
    let merged = if p.lint_symbol_keys {
        symbolize(merged)
    } else {
        merged
    };
    let text = serde_yaml::to_string(&merged).unwrap_or_default();
    let mut v = json!({"valid": true, "errors": [], "warnings": [],
                       "merged_yaml": format!("---\n{text}"), "includes": includes});
    if params.get("include_jobs").map(String::as_str) == Some("true") {
        let jobs: Vec<Value> = match &merged {
            Yaml::Mapping(m) => m
                .iter()
                .filter_map(|(k, v)| {
                    let name = k.as_str()?.trim_start_matches(':');
                    let is_job = !name.starts_with('.')
                        && v.as_mapping().is_some_and(|m| {
                            m.keys()
                                .any(|k| k.as_str().is_some_and(|k| k.ends_with("script")))
                        });
                    is_job.then(|| json!({"name": name, "stage": "test", "when": "on_success", "allow_failure": false}))
                })
                .collect(),
            _ => vec![],
        };
        v["jobs"] = Value::Array(jobs);
    }
    Response::json(200, &v)
}

/// Resolve `content`'s includes (read in project `p` at `sha`) and merge them under it. Each
/// include resolved is listed in `includes` as the lint API's `includes` lists it: `type`
/// (`local` or `file`), `location`, `extra` (`project` and `ref` of a `file` include),
/// `context_project` (the project whose file included it) and `context_sha`.
fn merge(
    st: &State,
    p: &Project,
    sha: &str,
    content: &str,
    depth: u32,
    includes: &mut Vec<Value>,
) -> Result<Yaml, String> {
    if depth > 10 {
        return Err("Maximum of 10 nested includes are allowed!".into());
    }
    let mut doc: Yaml = serde_yaml::from_str(content).map_err(|e| format!("(<unknown>): {e}"))?;
    let Yaml::Mapping(map) = &mut doc else {
        return Err("Invalid configuration format".into());
    };
    let include_keyword = map.remove("include");
    let mut base = Yaml::Mapping(Default::default());
    let entries = match include_keyword {
        None => vec![],
        Some(Yaml::Sequence(s)) => s,
        Some(other) => vec![other],
    };
    for entry in entries {
        let (project, file, git_ref) = match &entry {
            Yaml::String(f) => (None, f.clone(), None),
            Yaml::Mapping(m) => {
                let get = |k: &str| m.get(k).and_then(|v| v.as_str()).map(str::to_owned);
                match (get("local"), get("project"), get("file")) {
                    (Some(f), _, _) => (None, f, None),
                    (None, Some(pr), Some(f)) => (Some(pr), f, get("ref")),
                    _ => return Err(format!("Included file `{entry:?}` is not supported")),
                }
            }
            _ => return Err("Included file is not a string or a mapping".into()),
        };
        let (target, target_sha) = match &project {
            None => (p, sha.to_owned()),
            Some(path) => {
                let t = st
                    .projects
                    .iter()
                    .find(|x| &x.path_with_namespace == path)
                    .ok_or_else(|| format!("Project `{path}` not found or access denied!"))?;
                let r = git_ref.clone().unwrap_or_else(|| t.default_branch.clone());
                let s = t.branches.get(&r).cloned().unwrap_or(r);
                (t, s)
            }
        };
        let text = target
            .files
            .get(&target_sha)
            .and_then(|t| t.get(file.trim_start_matches('/')))
            .map(|c| String::from_utf8_lossy(&c.0).into_owned())
            .ok_or_else(|| format!("Local file `{file}` does not exist!"))?;
        let web = target.web_url(&st.web_url);
        let file_path = file.trim_start_matches('/');
        includes.push(json!({
            "type": if project.is_some() { "file" } else { "local" },
            "location": file,
            "blob": format!("{web}/-/blob/{target_sha}/{file_path}"),
            "raw": format!("{web}/-/raw/{target_sha}/{file_path}"),
            "extra": match &project {
                Some(pr) => json!({"project": pr, "ref": git_ref.clone().unwrap_or_else(|| target.default_branch.clone())}),
                None => json!({}),
            },
            "context_project": p.path_with_namespace,
            "context_sha": sha,
        }));
        let included = merge(st, target, &target_sha, &text, depth + 1, includes)?;
        deep_merge(&mut base, included);
    }
    deep_merge(&mut base, doc);
    Ok(base)
}

fn deep_merge(into: &mut Yaml, from: Yaml) {
    match (into, from) {
        (Yaml::Mapping(a), Yaml::Mapping(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(existing) if existing.is_mapping() && v.is_mapping() => {
                        deep_merge(existing, v)
                    }
                    _ => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (slot, from) => *slot = from,
    }
}

fn symbolize(v: Yaml) -> Yaml {
    match v {
        Yaml::Mapping(m) => Yaml::Mapping(
            m.into_iter()
                .map(|(k, v)| {
                    let k = match k {
                        Yaml::String(s) => Yaml::String(format!(":{s}")),
                        other => other,
                    };
                    (k, symbolize(v))
                })
                .collect(),
        ),
        Yaml::Sequence(s) => Yaml::Sequence(s.into_iter().map(symbolize).collect()),
        other => other,
    }
}
