//! The serialization verdict: a pure function of the evidence the probe gathered.
//!
//! # The evidence rule
//!
//! `single-writer-serialized` is claimed only when **every** one of these was read from the
//! GitLab API during this doctor run and agrees; anything else is `unserialized-best-effort`
//! with the first missing or contradicting piece as the reason:
//!
//! 1. **Context**: an MR IID (`--mr`/`CI_MERGE_REQUEST_IID`) and the running job's id
//!    (`CI_JOB_ID`). Outside a CI job there is nothing to verify.
//! 2. **The job** (`GET /projects/:id/jobs/:job_id`): that id, status `running`, in a pipeline
//!    whose source is `merge_request_event` and whose ref is
//!    `refs/merge-requests/<iid>/{head,merge,train}`.
//! 3. **Its configuration** (the CI Lint API's `merged_yaml` for the pipeline's commit, or for
//!    the external CI configuration file): valid, holds a job of that name, whose
//!    `resource_group` is `assent-mr-$CI_MERGE_REQUEST_IID` (`${…}` form accepted; `:key`
//!    symbol keys of older GitLab accepted). A literal key, another variable or a missing
//!    `resource_group` is not keyed per MR.
//! 4. **The group** (`GET /projects/:id/resource_groups/assent-mr-<iid>`) exists with that key.
//! 5. **The holder** (`GET …/resource_groups/assent-mr-<iid>/current_job`, GitLab 18.6+) is
//!    this very job.
//!
//! An API error, a missing permission, an older or unknown GitLab version, an unparsable
//! answer, or two sources that disagree all end in `unserialized-best-effort`. The verdict is
//! never upgraded by default, by a cache or by configuration.

use serde::Serialize;
use serde_yaml::Value as Yaml;

/// Which duplicate-prevention guarantee the deployment provides (docs/contract.md#ci-template).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DuplicatePrevention {
    /// The running job provably holds the per-MR resource group.
    SingleWriterSerialized,
    /// Serialization is absent, misconfigured or unverifiable: step 8 repair only.
    UnserializedBestEffort,
}

impl DuplicatePrevention {
    /// The value as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            DuplicatePrevention::SingleWriterSerialized => "single-writer-serialized",
            DuplicatePrevention::UnserializedBestEffort => "unserialized-best-effort",
        }
    }
}

/// One piece of evidence: read, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe<T> {
    /// Not asked (an earlier piece was missing); the text says why.
    NotAsked(String),
    /// The request failed (status, transport, decode); the text is the redacted error.
    Failed(String),
    /// The API answered.
    Got(T),
}

/// What `GET /projects/:id/jobs/:job_id` said.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobFacts {
    /// The job id in the answer.
    pub id: Option<u64>,
    /// Job name.
    pub name: Option<String>,
    /// Job status.
    pub status: Option<String>,
    /// The pipeline's ref (`refs/merge-requests/7/head`).
    pub pipeline_ref: Option<String>,
    /// The pipeline's source (`merge_request_event`).
    pub pipeline_source: Option<String>,
    /// The pipeline's commit.
    pub sha: Option<String>,
}

/// What the CI Lint API said about the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFacts {
    /// `valid`.
    pub valid: bool,
    /// `merged_yaml` (absent when invalid).
    pub merged_yaml: Option<String>,
    /// The lint errors, when invalid.
    pub errors: Vec<String>,
    /// The includes the configuration resolved (the lint answer's `includes`), when GitLab
    /// lists them.
    pub includes: Option<Vec<IncludeFacts>>,
}

/// One include the CI Lint API says the configuration resolved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IncludeFacts {
    /// `local`, `file`, `remote`, `template`, `component`.
    pub kind: Option<String>,
    /// The file, URL or component it names.
    pub location: Option<String>,
    /// For a `file` include: the project it reads.
    pub project: Option<String>,
    /// For a `file` include: the ref it reads.
    pub git_ref: Option<String>,
    /// The project whose configuration included it (where a `local` include is read).
    pub context_project: Option<String>,
}

/// Everything the verdict looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SingleWriterEvidence {
    /// The MR IID, when known.
    pub mr_iid: Option<u64>,
    /// `CI_JOB_ID`, when set.
    pub job_id: Option<u64>,
    /// GitLab's version (`GET /version`), when read.
    pub gitlab_version: Option<String>,
    /// The job.
    pub job: Probe<JobFacts>,
    /// The merged configuration.
    pub config: Probe<ConfigFacts>,
    /// `GET …/resource_groups/:key`: the key in the answer.
    pub resource_group: Probe<String>,
    /// `GET …/current_job`: the holder's id, `None` when GitLab answered `null`.
    pub current_job: Probe<Option<u64>>,
}

/// How sure the verdict is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Certainty {
    /// Every piece read and agreeing.
    Verified,
    /// The API positively shows serialization missing or misconfigured.
    Absent,
    /// Something could not be read or two answers disagree.
    Unverifiable,
}

/// The verdict and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SingleWriterVerdict {
    /// The guarantee.
    pub guarantee: DuplicatePrevention,
    /// Verified, absent or unverifiable.
    pub certainty: Certainty,
    /// The evidence, or the first missing or contradicting piece.
    pub reason: String,
}

/// The resource group key the shipped template uses for MR `iid`.
pub fn expected_key(iid: u64) -> String {
    format!("assent-mr-{iid}")
}

/// The configured key, with `$CI_MERGE_REQUEST_IID`/`${CI_MERGE_REQUEST_IID}` expanded; an
/// error when the key does not depend on exactly that variable.
pub fn expand_key(configured: &str, iid: u64) -> Result<String, String> {
    let var_forms = ["${CI_MERGE_REQUEST_IID}", "$CI_MERGE_REQUEST_IID"];
    if !var_forms.iter().any(|v| configured.contains(v)) {
        return Err(format!(
            "resource_group {configured:?} is not keyed by $CI_MERGE_REQUEST_IID"
        ));
    }
    let mut expanded = configured.to_owned();
    for v in var_forms {
        expanded = expanded.replace(v, &iid.to_string());
    }
    if expanded.contains('$') {
        return Err(format!(
            "resource_group {configured:?} depends on a variable other than $CI_MERGE_REQUEST_IID"
        ));
    }
    Ok(expanded)
}

/// The `resource_group` of job `name` in a lint `merged_yaml`: `Ok(None)` when the job has
/// none, an error when the job is absent, ambiguous or the document unreadable. Keys may be
/// Ruby symbols (`:name`), as older GitLab versions render them.
pub fn job_resource_group(merged_yaml: &str, name: &str) -> Result<Option<String>, String> {
    let doc: Yaml = serde_yaml::from_str(merged_yaml)
        .map_err(|e| format!("the merged CI configuration does not parse: {e}"))?;
    let Yaml::Mapping(top) = doc else {
        return Err("the merged CI configuration is not a mapping".into());
    };
    let key_is = |k: &Yaml, want: &str| {
        k.as_str()
            .is_some_and(|s| s == want || s.strip_prefix(':') == Some(want))
    };
    let jobs: Vec<&Yaml> = top
        .iter()
        .filter(|(k, _)| key_is(k, name))
        .map(|(_, v)| v)
        .collect();
    let job = match jobs.as_slice() {
        [] => {
            return Err(format!(
                "job {name:?} is not in the merged CI configuration"
            ));
        }
        [one] => *one,
        _ => {
            return Err(format!(
                "job {name:?} appears more than once in the merged CI configuration"
            ));
        }
    };
    let Yaml::Mapping(fields) = job else {
        return Err(format!("job {name:?} is not a mapping"));
    };
    let groups: Vec<&Yaml> = fields
        .iter()
        .filter(|(k, _)| key_is(k, "resource_group"))
        .map(|(_, v)| v)
        .collect();
    match groups.as_slice() {
        [] => Ok(None),
        [Yaml::String(s)] => Ok(Some(s.clone())),
        [other] => Err(format!(
            "job {name:?} has a resource_group that is not a string: {other:?}"
        )),
        _ => Err(format!("job {name:?} has more than one resource_group")),
    }
}

fn unserialized(certainty: Certainty, reason: impl Into<String>) -> SingleWriterVerdict {
    SingleWriterVerdict {
        guarantee: DuplicatePrevention::UnserializedBestEffort,
        certainty,
        reason: reason.into(),
    }
}

/// True for a `major.minor` at least 18.6 (where `current_job` exists); `None` when the text
/// is not a version.
fn has_current_job_route(version: &str) -> Option<bool> {
    let mut parts = version.split(['.', '-', '+']);
    let major: u64 = parts.next()?.trim().parse().ok()?;
    let minor: u64 = parts.next()?.trim().parse().ok()?;
    Some((major, minor) >= (18, 6))
}

/// The verdict (see the module docs for the rule): the first missing or contradicting piece
/// of evidence decides it, in the rule's order.
pub fn judge(e: &SingleWriterEvidence) -> SingleWriterVerdict {
    match prove(e) {
        Ok(verdict) | Err(verdict) => verdict,
    }
}

/// One step of the proof: what it established, or the verdict that ends the proof there.
type Step<T> = Result<T, SingleWriterVerdict>;

/// The rule's steps in order, each stopping the proof at its first gap.
fn prove(e: &SingleWriterEvidence) -> Step<SingleWriterVerdict> {
    let (iid, job_id) = context(e)?;
    let key = expected_key(iid);
    let job = read(&e.job, |err| format!("cannot read job {job_id}: {err}"))?;
    let name = job_is_the_running_one(job, job_id)?;
    job_runs_for_the_merge_request(job, iid, job_id)?;
    let config = read(&e.config, |err| {
        format!("cannot read the merged CI configuration: {err}")
    })?;
    configuration_keys_the_job_by_merge_request(config, name, iid, &key)?;
    group_exists(&e.resource_group, &key)?;
    holder_is_this_job(e, job_id, name, &key)
}

/// Rule 1: an MR and the job running doctor: without both there is nothing to verify.
fn context(e: &SingleWriterEvidence) -> Step<(u64, u64)> {
    let Some(iid) = e.mr_iid else {
        return Err(unserialized(
            Certainty::Unverifiable,
            "no merge request: serialization is per MR, so it can only be verified for one (--mr or CI_MERGE_REQUEST_IID)",
        ));
    };
    let Some(job_id) = e.job_id else {
        return Err(unserialized(
            Certainty::Unverifiable,
            "not running inside a CI job (CI_JOB_ID unset): only the MR job itself can show that it holds its resource group",
        ));
    };
    Ok((iid, job_id))
}

/// A piece the API answered, or the verdict naming why it is missing (`failed` words a
/// failed request; a piece not asked carries its own reason).
fn read<T>(probe: &Probe<T>, failed: impl FnOnce(&str) -> String) -> Step<&T> {
    match probe {
        Probe::Got(piece) => Ok(piece),
        Probe::Failed(err) => Err(unserialized(Certainty::Unverifiable, failed(err))),
        Probe::NotAsked(why) => Err(unserialized(Certainty::Unverifiable, why.clone())),
    }
}

/// Rule 2: the job GitLab answered is the one asked for, running, and named (its name finds its
/// configuration).
fn job_is_the_running_one(job: &JobFacts, job_id: u64) -> Step<&str> {
    use Certainty::Unverifiable;
    match job.id {
        Some(id) if id == job_id => {}
        Some(id) => {
            return Err(unserialized(
                Unverifiable,
                format!("GitLab answered job {id} when asked for job {job_id}"),
            ));
        }
        None => {
            return Err(unserialized(
                Unverifiable,
                format!("GitLab's answer for job {job_id} carries no job id"),
            ));
        }
    }
    match job.status.as_deref() {
        Some("running") => {}
        Some(status) => {
            return Err(unserialized(
                Unverifiable,
                format!(
                    "job {job_id} is {status:?}, not running: it cannot be the job running doctor"
                ),
            ));
        }
        None => {
            return Err(unserialized(
                Unverifiable,
                format!("GitLab did not say whether job {job_id} is running"),
            ));
        }
    }
    job.name.as_deref().ok_or_else(|| {
        unserialized(
            Unverifiable,
            format!("GitLab did not say job {job_id}'s name, so its configuration cannot be found"),
        )
    })
}

/// Rule 2, continued: the job's pipeline is a merge request pipeline of this MR.
fn job_runs_for_the_merge_request(job: &JobFacts, iid: u64, job_id: u64) -> Step<()> {
    use Certainty::{Absent, Unverifiable};
    let mr_refs = ["head", "merge", "train"].map(|k| format!("refs/merge-requests/{iid}/{k}"));
    match &job.pipeline_ref {
        Some(r) if mr_refs.contains(r) => {}
        Some(r) => {
            return Err(unserialized(
                Absent,
                format!("job {job_id} runs for ref {r:?}, not in a pipeline of MR !{iid}"),
            ));
        }
        None => {
            return Err(unserialized(
                Unverifiable,
                format!("GitLab did not say which pipeline ref job {job_id} runs for"),
            ));
        }
    }
    match job.pipeline_source.as_deref() {
        Some("merge_request_event") => Ok(()),
        Some(other) => Err(unserialized(
            Absent,
            format!("job {job_id} runs in a {other:?} pipeline, not a merge request pipeline"),
        )),
        None => Err(unserialized(
            Unverifiable,
            format!("GitLab did not say which source started job {job_id}'s pipeline"),
        )),
    }
}

/// Rule 3: the merged configuration is valid and gives job `name` the resource group keyed by
/// this MR.
fn configuration_keys_the_job_by_merge_request(
    config: &ConfigFacts,
    name: &str,
    iid: u64,
    key: &str,
) -> Step<()> {
    use Certainty::{Absent, Unverifiable};
    if !config.valid {
        return Err(unserialized(
            Unverifiable,
            format!(
                "the CI Lint API calls the configuration invalid: {}",
                config.errors.join("; ")
            ),
        ));
    }
    let Some(merged) = &config.merged_yaml else {
        return Err(unserialized(
            Unverifiable,
            "the CI Lint API returned no merged_yaml",
        ));
    };
    let configured = match job_resource_group(merged, name) {
        Ok(Some(g)) => g,
        Ok(None) => {
            return Err(unserialized(
                Absent,
                format!("job {name:?} has no resource_group in the merged CI configuration"),
            ));
        }
        Err(err) => return Err(unserialized(Unverifiable, err)),
    };
    match expand_key(&configured, iid) {
        Ok(k) if k == key => Ok(()),
        Ok(k) => Err(unserialized(
            Absent,
            format!(
                "job {name:?} has resource_group {configured:?} (= {k:?}), expected \"assent-mr-$CI_MERGE_REQUEST_IID\""
            ),
        )),
        Err(err) => Err(unserialized(Absent, format!("job {name:?}: {err}"))),
    }
}

/// Rule 4: the resource group exists under the expected key.
fn group_exists(group: &Probe<String>, key: &str) -> Step<()> {
    let answered = read(group, |err| {
        format!("cannot read resource group {key}: {err}")
    })?;
    if answered == key {
        Ok(())
    } else {
        Err(unserialized(
            Certainty::Unverifiable,
            format!("GitLab answered resource group {answered:?} when asked for {key:?}"),
        ))
    }
}

/// Rule 5: the group's holder is this very job: the only positive proof, so the only way to
/// `single-writer-serialized`.
fn holder_is_this_job(
    e: &SingleWriterEvidence,
    job_id: u64,
    name: &str,
    key: &str,
) -> Step<SingleWriterVerdict> {
    use Certainty::Unverifiable;
    match &e.current_job {
        Probe::Got(Some(holder)) if *holder == job_id => Ok(SingleWriterVerdict {
            guarantee: DuplicatePrevention::SingleWriterSerialized,
            certainty: Certainty::Verified,
            reason: format!(
                "job {job_id} ({name:?}) holds resource group {key}, and the merged CI configuration keys that job's resource_group by $CI_MERGE_REQUEST_IID"
            ),
        }),
        Probe::Got(Some(holder)) => Err(unserialized(
            Unverifiable,
            format!("resource group {key} is held by job {holder}, not by this job {job_id}"),
        )),
        Probe::Got(None) => Err(unserialized(
            Unverifiable,
            format!("resource group {key} is held by no job, yet job {job_id} is running"),
        )),
        Probe::Failed(err) => Err(unserialized(
            Unverifiable,
            format!(
                "cannot read which job holds resource group {key}: {err}{}",
                version_note(e.gitlab_version.as_deref())
            ),
        )),
        Probe::NotAsked(why) => Err(unserialized(Unverifiable, why.clone())),
    }
}

/// Why the holder may be unreadable, from GitLab's version: ` (GitLab 18.5 has no
/// current_job route: it came in 18.6)`, empty when the version has the route.
fn version_note(version: Option<&str>) -> String {
    match version.map(|v| (v, has_current_job_route(v))) {
        Some((v, Some(false))) => {
            format!(" (GitLab {v} has no current_job route: it came in 18.6)")
        }
        Some((v, None)) => format!(" (unknown GitLab version {v:?})"),
        None => " (GitLab version unknown)".to_owned(),
        Some((_, Some(true))) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MERGED: &str = "---\nassent:\n  stage: test\n  resource_group: assent-mr-$CI_MERGE_REQUEST_IID\n  script:\n  - assent run\n";

    fn good() -> SingleWriterEvidence {
        SingleWriterEvidence {
            mr_iid: Some(7),
            job_id: Some(901),
            gitlab_version: Some("18.6.0-ee".into()),
            job: Probe::Got(JobFacts {
                id: Some(901),
                name: Some("assent".into()),
                status: Some("running".into()),
                pipeline_ref: Some("refs/merge-requests/7/head".into()),
                pipeline_source: Some("merge_request_event".into()),
                sha: Some("abc".into()),
            }),
            config: Probe::Got(ConfigFacts {
                valid: true,
                merged_yaml: Some(MERGED.into()),
                errors: vec![],
                includes: None,
            }),
            resource_group: Probe::Got("assent-mr-7".into()),
            current_job: Probe::Got(Some(901)),
        }
    }

    fn serialized(e: &SingleWriterEvidence) -> bool {
        judge(e).guarantee == DuplicatePrevention::SingleWriterSerialized
    }

    #[test]
    fn all_evidence_agreeing_is_serialized() {
        let v = judge(&good());
        assert_eq!(
            v.guarantee,
            DuplicatePrevention::SingleWriterSerialized,
            "{v:?}"
        );
        assert_eq!(v.certainty, Certainty::Verified);
    }

    #[test]
    fn symbol_keys_and_braced_variable_are_accepted() {
        let mut e = good();
        e.config = Probe::Got(ConfigFacts {
            valid: true,
            merged_yaml: Some(
                "---\n:assent:\n  :resource_group: assent-mr-${CI_MERGE_REQUEST_IID}\n".into(),
            ),
            errors: vec![],
            includes: None,
        });
        assert!(serialized(&e), "{:?}", judge(&e));
    }

    #[test]
    fn every_missing_or_contradicting_piece_is_best_effort() {
        type Mutation = fn(&mut SingleWriterEvidence);
        let cases: Vec<(&str, Mutation)> = vec![
            ("no mr", |e| e.mr_iid = None),
            ("no job id", |e| e.job_id = None),
            ("job 403", |e| e.job = Probe::Failed("HTTP 403".into())),
            ("job not asked", |e| e.job = Probe::NotAsked("x".into())),
            ("other job answered", |e| {
                if let Probe::Got(j) = &mut e.job {
                    j.id = Some(5)
                }
            }),
            ("job without an id", |e| {
                if let Probe::Got(j) = &mut e.job {
                    j.id = None
                }
            }),
            ("job finished", |e| {
                if let Probe::Got(j) = &mut e.job {
                    j.status = Some("success".into())
                }
            }),
            ("job without a status", |e| {
                if let Probe::Got(j) = &mut e.job {
                    j.status = None
                }
            }),
            ("job without a name", |e| {
                if let Probe::Got(j) = &mut e.job {
                    j.name = None
                }
            }),
            ("branch pipeline", |e| {
                if let Probe::Got(j) = &mut e.job {
                    j.pipeline_ref = Some("main".into())
                }
            }),
            ("other MR", |e| {
                if let Probe::Got(j) = &mut e.job {
                    j.pipeline_ref = Some("refs/merge-requests/8/head".into())
                }
            }),
            ("no ref", |e| {
                if let Probe::Got(j) = &mut e.job {
                    j.pipeline_ref = None
                }
            }),
            ("push source", |e| {
                if let Probe::Got(j) = &mut e.job {
                    j.pipeline_source = Some("push".into())
                }
            }),
            ("no source", |e| {
                if let Probe::Got(j) = &mut e.job {
                    j.pipeline_source = None
                }
            }),
            ("lint error", |e| {
                e.config = Probe::Failed("HTTP 500".into())
            }),
            ("lint invalid", |e| {
                e.config = Probe::Got(ConfigFacts {
                    valid: false,
                    merged_yaml: None,
                    errors: vec!["bad".into()],
                    includes: None,
                })
            }),
            ("lint no yaml", |e| {
                e.config = Probe::Got(ConfigFacts {
                    valid: true,
                    merged_yaml: None,
                    errors: vec![],
                    includes: None,
                })
            }),
            ("job not in config", |e| {
                e.config = Probe::Got(ConfigFacts {
                    valid: true,
                    merged_yaml: Some("other:\n  script: x\n".into()),
                    errors: vec![],
                    includes: None,
                })
            }),
            ("no resource_group", |e| {
                e.config = Probe::Got(ConfigFacts {
                    valid: true,
                    merged_yaml: Some("assent:\n  script: x\n".into()),
                    errors: vec![],
                    includes: None,
                })
            }),
            ("static key", |e| {
                e.config = Probe::Got(ConfigFacts {
                    valid: true,
                    merged_yaml: Some("assent:\n  resource_group: assent-mr-7\n".into()),
                    errors: vec![],
                    includes: None,
                })
            }),
            ("shared key", |e| {
                e.config = Probe::Got(ConfigFacts {
                    valid: true,
                    merged_yaml: Some("assent:\n  resource_group: assent\n".into()),
                    errors: vec![],
                    includes: None,
                })
            }),
            ("other variable", |e| {
                e.config = Probe::Got(ConfigFacts {
                    valid: true,
                    merged_yaml: Some(
                        "assent:\n  resource_group: assent-mr-$CI_MERGE_REQUEST_IID-$CI_JOB_ID\n"
                            .into(),
                    ),
                    errors: vec![],
                    includes: None,
                })
            }),
            ("wrong prefix", |e| {
                e.config = Probe::Got(ConfigFacts {
                    valid: true,
                    merged_yaml: Some(
                        "assent:\n  resource_group: review-$CI_MERGE_REQUEST_IID\n".into(),
                    ),
                    errors: vec![],
                    includes: None,
                })
            }),
            ("ambiguous job", |e| {
                e.config = Probe::Got(ConfigFacts { valid: true, merged_yaml: Some("assent:\n  resource_group: assent-mr-$CI_MERGE_REQUEST_IID\n':assent':\n  script: x\n".into()), errors: vec![], includes: None })
            }),
            ("garbage yaml", |e| {
                e.config = Probe::Got(ConfigFacts {
                    valid: true,
                    merged_yaml: Some("{[".into()),
                    errors: vec![],
                    includes: None,
                })
            }),
            ("group 404", |e| {
                e.resource_group = Probe::Failed("HTTP 404".into())
            }),
            ("group other key", |e| {
                e.resource_group = Probe::Got("assent-mr-8".into())
            }),
            ("holder other job", |e| {
                e.current_job = Probe::Got(Some(900))
            }),
            ("holder none", |e| e.current_job = Probe::Got(None)),
            ("current_job 404", |e| {
                e.current_job = Probe::Failed("HTTP 404".into())
            }),
            ("current_job not asked", |e| {
                e.current_job = Probe::NotAsked("x".into())
            }),
        ];
        let mut reasons = String::new();
        for (name, mutate) in cases {
            let mut e = good();
            mutate(&mut e);
            let v = judge(&e);
            assert_eq!(
                v.guarantee,
                DuplicatePrevention::UnserializedBestEffort,
                "{name}: {v:?}"
            );
            assert!(!v.reason.is_empty(), "{name}");
            reasons.push_str(&format!("{name}: {:?}: {}\n", v.certainty, v.reason));
        }
        // Which piece was missing, how sure, and the words an operator reads: reviewed whole.
        insta::assert_snapshot!(reasons);
    }

    #[test]
    fn old_or_unknown_versions_are_named_in_the_reason() {
        let mut e = good();
        e.current_job = Probe::Failed("HTTP 404: 404 Not Found".into());
        e.gitlab_version = Some("17.11.2".into());
        assert!(judge(&e).reason.contains("came in 18.6"), "{:?}", judge(&e));
        e.gitlab_version = None;
        assert!(judge(&e).reason.contains("version unknown"));
        e.gitlab_version = Some("weird".into());
        assert!(judge(&e).reason.contains("unknown GitLab version"));
    }

    #[test]
    fn key_expansion() {
        assert_eq!(
            expand_key("assent-mr-$CI_MERGE_REQUEST_IID", 7).unwrap(),
            "assent-mr-7"
        );
        assert_eq!(
            expand_key("assent-mr-${CI_MERGE_REQUEST_IID}", 7).unwrap(),
            "assent-mr-7"
        );
        assert!(expand_key("assent-mr-7", 7).is_err());
        assert!(expand_key("$X-$CI_MERGE_REQUEST_IID", 7).is_err());
    }
}
