//! The gate-enforcement verdict (docs/contract.md#enforcement): a pure function of the evidence the probe
//! gathered, built like [`super::single_writer`].
//!
//! GitLab lets an MR's author resolve threads, so unresolved challenges alone cannot stop an
//! author from assenting to their own change. Something the author cannot do must hold the
//! gate: an approval only the bot can give, or a pipeline that fails on `REVIEW` while
//! "Pipelines must succeed" is on.
//!
//! # The evidence rule
//!
//! Every piece below must be read from the GitLab API during this doctor run; the first
//! verdict whose pieces all hold wins, and anything missing, forbidden, unreadable or
//! contradicting gives `threads-only`, with the missing pieces as the reason and a warning
//! saying what to change.
//!
//! **`approval-required`**
//! 1. An approval rule of the project (`GET /projects/:id/approval_rules`) or of the MR
//!    (`GET …/merge_requests/:iid/approval_rules`) requires at least one approval, names the
//!    bot user (`GET /user`) as its only user, no group (hidden or not), and lists no other
//!    eligible approver. A project rule must apply to every branch (no protected-branch
//!    scope), since an MR can target another branch.
//! 2. The project's approval settings (`GET /projects/:id/approvals`) remove approvals when
//!    commits are added (`reset_approvals_on_push`), so an approval of one head never
//!    carries over to the next push, and forbid editing approval rules in MRs
//!    (`disable_overriding_approvers_per_merge_request`), so an author cannot drop the rule.
//! 3. The CI configuration (below) has a job running `assent run --approve` (or with
//!    `ASSENT_APPROVE: "true"` in its variables).
//!
//! **`pipeline-required`**
//! 1. The project (`GET /projects/:id`) has "Pipelines must succeed" on
//!    (`only_allow_merge_if_pipeline_succeeds`) and does not count skipped pipelines as
//!    successful (`allow_merge_on_skipped_pipeline: false`): a `[skip ci]` push would
//!    otherwise merge without assent running.
//! 2. The CI configuration has a job running `assent run` failing on review (`--fail-on
//!    review`, literally or through a variable the configuration sets), as a plain command
//!    (no `|| true` or other shell operator), in a job that cannot pass while assent fails:
//!    no `allow_failure`, no `when: manual`/`delayed`/`never`, no `only`/`except`, and rules
//!    that neither allow failure nor skip the job on a condition an MR can influence.
//!
//! **The CI configuration** is the CI Lint API's `merged_yaml` for the running job's commit,
//! as the serialization check reads it (so only from inside a CI job), and it must come from
//! outside the project's repository: the project's "CI/CD configuration file" names a file
//! in another project (`file@group/project`) or a URL. A project's own `.gitlab-ci.yml` is
//! what an MR's branch provides, so the MR could drop the job, or use `ASSENT_TOKEN` itself.
//! Values of CI/CD variables set in the project's settings (which override the
//! configuration's) are not readable with a Developer token; the configuration's own values
//! are taken as the ones the job gets.
//!
//! A configuration file in the MR author's own namespace (`file@<author>/…`, the author read
//! with the MR) is the author's to push to and proves nothing. Neither does a configuration
//! that reads something an MR can change: an `include:` (as the CI Lint API lists them) of a
//! file of the governed project, of a `local` file read there, of a `ref:` naming the MR's
//! source branch, or of a URL or component under the governed project's path. And the
//! configuration must not create a pipeline on the MR's source branch that is not the MR's
//! pipeline ([`workflow_gap`]): GitLab takes the newest pipeline of the head commit as the
//! MR's head pipeline, so a passing branch pipeline without the `assent` job would satisfy
//! "Pipelines must succeed". What the API cannot show is named in the `pipeline-required`
//! reason as not verified: who besides maintainers can push to the configuration project and
//! to the projects it includes files from, who can change a remote include, and (without
//! `--mr`) the MR's author and source branch.

use serde::Serialize;
use serde_yaml::Value as Yaml;

use crate::core::switch::parse_switch;

use super::single_writer::{ConfigFacts, IncludeFacts, Probe};

/// Whether something an MR's author cannot do holds the gate (docs/contract.md#enforcement).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateEnforcement {
    /// An approval rule requires the bot's approval, which assent gives only on `APPROVE`.
    ApprovalRequired,
    /// "Pipelines must succeed" is on and the job fails on `REVIEW`.
    PipelineRequired,
    /// Nothing proven beyond "all threads must be resolved", which the author can satisfy.
    ThreadsOnly,
}

impl GateEnforcement {
    /// The value as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            GateEnforcement::ApprovalRequired => "approval-required",
            GateEnforcement::PipelineRequired => "pipeline-required",
            GateEnforcement::ThreadsOnly => "threads-only",
        }
    }
}

/// What `GET /projects/:id` says that matters here.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProjectFacts {
    /// `path_with_namespace`.
    pub path_with_namespace: Option<String>,
    /// "Pipelines must succeed".
    pub only_allow_merge_if_pipeline_succeeds: Option<bool>,
    /// "Skipped pipelines are considered successful".
    pub allow_merge_on_skipped_pipeline: Option<bool>,
    /// The "CI/CD configuration file" setting; `None` for the default `.gitlab-ci.yml`.
    pub ci_config_path: Option<String>,
}

/// What `GET /projects/:id/approvals` says that matters here.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApprovalSettingsFacts {
    /// "Remove all approvals when commits are added to the source branch".
    pub reset_approvals_on_push: Option<bool>,
    /// "Prevent editing approval rules in merge requests".
    pub disable_overriding_approvers_per_merge_request: Option<bool>,
}

/// One approval rule, project or MR level. An entry GitLab lists without an id is `None`:
/// an unknown user or group, never the bot.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RuleFacts {
    /// The rule's name (for the reason; `(unnamed)` when GitLab gives none).
    pub name: String,
    /// `regular`, `any_approver`, `code_owner`, `report_approver`.
    pub rule_type: Option<String>,
    /// Approvals the rule requires, when GitLab says.
    pub approvals_required: Option<u64>,
    /// Ids of the users the rule names.
    pub user_ids: Vec<Option<u64>>,
    /// Ids of the groups the rule names.
    pub group_ids: Vec<Option<u64>>,
    /// Ids of every eligible approver, when GitLab lists them.
    pub eligible_approver_ids: Option<Vec<Option<u64>>>,
    /// The rule names groups the token cannot see; `None` (not said) is read as "may".
    pub contains_hidden_groups: Option<bool>,
    /// Protected branches the rule is scoped to.
    pub protected_branches: Vec<String>,
    /// The rule applies to every protected branch (and only to those).
    pub applies_to_all_protected_branches: bool,
}

/// Everything the verdict looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnforcementEvidence {
    /// The token's user id (`GET /user`).
    pub bot_user_id: Option<u64>,
    /// The project's settings.
    pub project: Probe<ProjectFacts>,
    /// The project's approval settings.
    pub approval_settings: Probe<ApprovalSettingsFacts>,
    /// The project's approval rules.
    pub project_rules: Probe<Vec<RuleFacts>>,
    /// The MR's approval rules (not asked without an MR).
    pub mr_rules: Probe<Vec<RuleFacts>>,
    /// The merged CI configuration, as the serialization check read it.
    pub config: Probe<ConfigFacts>,
    /// The MR author's username (not asked without an MR).
    pub mr_author: Probe<String>,
    /// The MR's source branch (not asked without an MR).
    pub mr_source_branch: Probe<String>,
}

/// The verdict, why, and (for `threads-only`) what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnforcementVerdict {
    /// The verdict.
    pub enforcement: GateEnforcement,
    /// The evidence, or the missing pieces of each stronger verdict.
    pub reason: String,
    /// For `threads-only`: what to change so the gate holds.
    pub warning: Option<String>,
}

/// What to change when the gate is `threads-only`.
pub const THREADS_ONLY_WARNING: &str = "an MR's author can resolve their own challenge threads and nothing stops the merge. Hold the gate with one of: Settings > Merge requests > Pipelines must succeed on (and skipped pipelines not successful) with the template's fail_on: review (any GitLab tier); or an approval rule requiring 1 approval from the bot user only, approvals removed on push, approval rules not editable in MRs, and the template's approve: true (GitLab Premium). Load the template from a protected CI configuration project (docs/setup.md, Step 3)";

impl EnforcementVerdict {
    /// `threads-only` with `reason`, and the standard warning (for a doctor that could not
    /// read the evidence: [`judge`] names what is missing instead).
    pub fn threads_only(reason: impl Into<String>) -> Self {
        EnforcementVerdict {
            enforcement: GateEnforcement::ThreadsOnly,
            reason: reason.into(),
            warning: Some(THREADS_ONLY_WARNING.to_owned()),
        }
    }
}

/// One job of the merged configuration that runs `assent run`, as far as the gate cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssentJob {
    /// The job's name.
    pub name: String,
    /// The `--fail-on` value its `assent run` gets (`review` when not given), or why it
    /// cannot be told.
    pub fail_on: Result<String, String>,
    /// Whether its `assent run` manages the approval (`--approve`, `ASSENT_APPROVE`), or why
    /// it cannot be told.
    pub approve: Result<bool, String>,
    /// Why a failing `assent run` might not fail the pipeline, if anything says so.
    pub failure_escape: Option<String>,
}

/// Top-level keys of a CI configuration that are not jobs.
const GLOBAL_KEYWORDS: &[&str] = &[
    "default",
    "include",
    "stages",
    "variables",
    "workflow",
    "image",
    "services",
    "cache",
    "before_script",
    "after_script",
    "spec",
];

/// Variables a rule may test without the job's running depending on an MR's content.
const NEUTRAL_RULE_VARIABLES: &[&str] = &["CI_PIPELINE_SOURCE", "CI_MERGE_REQUEST_IID"];

/// A key, with the `:` of Ruby symbol keys (older GitLab's `merged_yaml`) removed.
fn key_name(k: &Yaml) -> Option<&str> {
    k.as_str().map(|s| s.strip_prefix(':').unwrap_or(s))
}

/// The jobs of a merged configuration: its top-level mappings that are neither a global
/// keyword nor hidden (`.name`), with their names.
fn job_entries(top: &serde_yaml::Mapping) -> impl Iterator<Item = (&str, &serde_yaml::Mapping)> {
    top.iter().filter_map(|(key, value)| {
        let name = key_name(key)?;
        if name.starts_with('.') || GLOBAL_KEYWORDS.contains(&name) {
            return None;
        }
        match value {
            Yaml::Mapping(job) => Some((name, job)),
            _ => None,
        }
    })
}

fn field<'a>(map: &'a serde_yaml::Mapping, name: &str) -> Option<&'a Yaml> {
    map.iter()
        .find(|(k, _)| key_name(k) == Some(name))
        .map(|(_, v)| v)
}

fn scalar_text(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Bool(b) => Some(b.to_string()),
        Yaml::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A `variables:` mapping as name → value (`{value: …}` forms included).
fn variables(map: Option<&Yaml>) -> Vec<(String, String)> {
    let Some(Yaml::Mapping(vars)) = map else {
        return vec![];
    };
    vars.iter()
        .filter_map(|(k, v)| {
            let value = match v {
                Yaml::Mapping(m) => field(m, "value").and_then(scalar_text),
                other => scalar_text(other),
            }?;
            Some((key_name(k)?.to_owned(), value))
        })
        .collect()
}

/// Every line of a `script:` (a string or nested sequences of strings).
fn script_lines(v: Option<&Yaml>, out: &mut Vec<String>) {
    match v {
        Some(Yaml::String(s)) => out.push(s.clone()),
        Some(Yaml::Sequence(items)) => {
            for item in items {
                script_lines(Some(item), out);
            }
        }
        _ => {}
    }
}

/// `$NAME` and `${NAME}` replaced by the first of `scopes` that sets NAME; unknown names are
/// left as they are.
fn expand(text: &str, scopes: &[&[(String, String)]]) -> String {
    let lookup = |name: &str| {
        scopes
            .iter()
            .find_map(|vars| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    };
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, len) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        match (name.is_empty(), lookup(name)) {
            (false, Some(value)) => out.push_str(&value),
            _ => out.push_str(&rest[at..at + 1 + len]),
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

/// Shell characters that let a script line do something other than run one command.
fn shell_operator(line: &str) -> Option<char> {
    line.chars()
        .find(|c| matches!(c, '|' | '&' | ';' | '<' | '>' | '(' | ')' | '`' | '\n'))
}

/// The words of `assent run`'s arguments when `line` starts with `assent run` (or
/// `/path/to/assent run`), cut at the first shell operator.
fn assent_run_arguments(line: &str) -> Option<Vec<String>> {
    let command = match shell_operator(line) {
        Some(op) => &line[..line.find(op).unwrap_or(line.len())],
        None => line,
    };
    let mut words = command
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\''));
    let program = words.next()?;
    let is_assent = program == "assent" || program.ends_with("/assent");
    (is_assent && words.next() == Some("run")).then(|| words.map(str::to_owned).collect())
}

fn fail_on_argument(args: &[String]) -> Result<String, String> {
    let mut values = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        if arg == "--fail-on" {
            values.push(it.next().cloned().unwrap_or_default());
        } else if let Some(v) = arg.strip_prefix("--fail-on=") {
            values.push(v.to_owned());
        }
    }
    match values.as_slice() {
        // assent run's own default (docs/contract.md#run-inputs).
        [] => Ok("review".to_owned()),
        [one] if one.contains('$') => Err(format!(
            "--fail-on {one} depends on a variable the CI configuration does not set"
        )),
        [one] => Ok(one.clone()),
        _ => Err("--fail-on is given more than once".to_owned()),
    }
}

fn approve_setting(args: &[String], scopes: &[&[(String, String)]]) -> Result<bool, String> {
    if args.iter().any(|a| a == "--approve") {
        return Ok(true);
    }
    let value = scopes.iter().find_map(|vars| {
        vars.iter()
            .find(|(k, _)| k == "ASSENT_APPROVE")
            .map(|(_, v)| v.clone())
    });
    // Read as `assent run` reads the variable: empty is unset, then the one on/off parser.
    match value.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(false),
        Some(v) => {
            parse_switch(v).ok_or_else(|| format!("ASSENT_APPROVE is {v:?}, neither on nor off"))
        }
    }
}

/// Why a job whose script fails might still let the pipeline pass, judged on its keywords.
fn job_escape(name: &str, job: &serde_yaml::Mapping) -> Option<String> {
    match field(job, "allow_failure") {
        None | Some(Yaml::Bool(false)) => {}
        Some(other) => {
            return Some(format!(
                "job {name:?} has allow_failure: {}",
                scalar_text(other).unwrap_or_else(|| "(a mapping)".into())
            ));
        }
    }
    if let Some(when) = field(job, "when").and_then(scalar_text)
        && !matches!(when.as_str(), "on_success" | "always")
    {
        return Some(format!("job {name:?} runs when: {when}"));
    }
    for keyword in ["only", "except"] {
        if field(job, keyword).is_some() {
            return Some(format!(
                "job {name:?} uses {keyword}:, which doctor cannot evaluate"
            ));
        }
    }
    let rules = match field(job, "rules") {
        None => return None,
        Some(Yaml::Sequence(rules)) => rules,
        Some(_) => return Some(format!("job {name:?} has rules that are not a list")),
    };
    for rule in rules {
        let Yaml::Mapping(rule) = rule else {
            return Some(format!("job {name:?} has a rule that is not a mapping"));
        };
        if matches!(field(rule, "allow_failure"), Some(v) if *v != Yaml::Bool(false)) {
            return Some(format!("a rule of job {name:?} allows it to fail"));
        }
        if let Some(when) = field(rule, "when").and_then(scalar_text)
            && !matches!(when.as_str(), "on_success" | "always")
        {
            return Some(format!("a rule of job {name:?} says when: {when}"));
        }
        for keyword in ["changes", "exists"] {
            if field(rule, keyword).is_some() {
                return Some(format!(
                    "a rule of job {name:?} depends on {keyword}:, which an MR controls"
                ));
            }
        }
        let condition = field(rule, "if").and_then(scalar_text).unwrap_or_default();
        let mut rest = condition.as_str();
        while let Some(at) = rest.find('$') {
            let var: String = rest[at + 1..]
                .trim_start_matches('{')
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !NEUTRAL_RULE_VARIABLES.contains(&var.as_str()) {
                return Some(format!(
                    "a rule of job {name:?} depends on ${var}: doctor cannot tell whether the job runs in every MR pipeline"
                ));
            }
            rest = &rest[at + 1..];
        }
    }
    None
}

/// Every job of a merged CI configuration that runs `assent run`, with what the gate needs
/// to know of it; an error when the document is not a readable configuration.
pub fn assent_jobs(merged_yaml: &str) -> Result<Vec<AssentJob>, String> {
    let doc: Yaml = serde_yaml::from_str(merged_yaml)
        .map_err(|e| format!("the merged CI configuration does not parse: {e}"))?;
    let Yaml::Mapping(top) = doc else {
        return Err("the merged CI configuration is not a mapping".into());
    };
    let globals = variables(field(&top, "variables"));
    let mut jobs = Vec::new();
    for (name, job) in job_entries(&top) {
        let locals = variables(field(job, "variables"));
        let scopes: [&[(String, String)]; 2] = [&locals, &globals];
        let mut lines = Vec::new();
        script_lines(field(job, "script"), &mut lines);
        for line in &lines {
            let expanded = expand(line.trim(), &scopes);
            let Some(args) = assent_run_arguments(&expanded) else {
                continue;
            };
            let failure_escape = match shell_operator(expanded.trim()) {
                Some(op) => Some(format!(
                    "job {name:?} runs {:?}: the {op:?} lets the line succeed whatever assent exits with",
                    line.trim()
                )),
                None => job_escape(name, job),
            };
            jobs.push(AssentJob {
                name: name.to_owned(),
                fail_on: fail_on_argument(&args),
                approve: approve_setting(&args, &scopes),
                failure_escape,
            });
        }
    }
    Ok(jobs)
}

/// Whether the CI configuration comes from outside the project's repository, or why not.
fn configuration_origin(project: &ProjectFacts) -> Result<String, String> {
    let own = project.path_with_namespace.as_deref().unwrap_or_default();
    match project.ci_config_path.as_deref().map(str::trim) {
        None | Some("") => Err("the CI configuration is the project's own .gitlab-ci.yml, which an MR's branch provides: the MR can drop the job or use ASSENT_TOKEN itself".into()),
        Some(url) if url.starts_with("https://") || url.starts_with("http://") => {
            Ok(format!("from {url}"))
        }
        Some(path) => match path.split_once('@') {
            Some((_, rest)) => {
                let other = rest.split(':').next().unwrap_or(rest);
                if !own.is_empty() && !other.eq_ignore_ascii_case(own) {
                    Ok(format!("from {other}"))
                } else {
                    Err(format!("the CI configuration file {path:?} is in this project, where an MR can edit it"))
                }
            }
            None => Err(format!("the CI configuration file {path:?} is in this project's repository, which an MR's branch provides")),
        },
    }
}

/// The jobs of the CI configuration, or why they cannot be trusted.
fn configured_jobs(e: &EnforcementEvidence) -> Result<(String, Vec<AssentJob>), String> {
    let project = match &e.project {
        Probe::Got(p) => p,
        Probe::Failed(err) => return Err(format!("cannot read the project: {err}")),
        Probe::NotAsked(why) => return Err(why.clone()),
    };
    let origin = configuration_origin(project)?;
    let config = match &e.config {
        Probe::Got(c) => c,
        Probe::Failed(err) => {
            return Err(format!("cannot read the merged CI configuration: {err}"));
        }
        Probe::NotAsked(why) if why.is_empty() => {
            return Err("the CI configuration is read only from inside the MR's CI job (CI_JOB_ID), and this is not one".into());
        }
        Probe::NotAsked(why) => return Err(why.clone()),
    };
    if !config.valid {
        return Err(format!(
            "the CI Lint API calls the configuration invalid: {}",
            config.errors.join("; ")
        ));
    }
    let merged = config
        .merged_yaml
        .as_deref()
        .ok_or("the CI Lint API returned no merged_yaml")?;
    let jobs = assent_jobs(merged)?;
    if jobs.is_empty() {
        return Err("no job of the CI configuration runs assent run".into());
    }
    Ok((origin, jobs))
}

/// Why `rule` is not an approval only the bot can give, or `None` when it is.
fn rule_gap(rule: &RuleFacts, bot: u64, project_level: bool) -> Option<String> {
    let name = &rule.name;
    match rule.approvals_required {
        Some(0) => return Some(format!("rule {name:?} requires no approval")),
        None => {
            return Some(format!(
                "GitLab does not say how many approvals rule {name:?} requires"
            ));
        }
        Some(_) => {}
    }
    if rule.user_ids != [Some(bot)] {
        let users: Vec<String> = rule
            .user_ids
            .iter()
            .map(|id| id.map_or_else(|| "(no id)".to_owned(), |id| id.to_string()))
            .collect();
        return Some(format!(
            "rule {name:?} names users [{}], not the bot user {bot} alone",
            users.join(", ")
        ));
    }
    if !rule.group_ids.is_empty() || rule.contains_hidden_groups != Some(false) {
        return Some(format!(
            "rule {name:?} also names groups, whose members can approve"
        ));
    }
    if let Some(eligible) = &rule.eligible_approver_ids
        && eligible.iter().any(|id| *id != Some(bot))
    {
        return Some(format!(
            "rule {name:?} has eligible approvers other than the bot"
        ));
    }
    if project_level
        && (!rule.protected_branches.is_empty() || rule.applies_to_all_protected_branches)
    {
        return Some(format!(
            "rule {name:?} applies to some branches only, and an MR can target another"
        ));
    }
    None
}

fn approval_required(e: &EnforcementEvidence) -> Result<String, String> {
    let bot = e.bot_user_id.ok_or("the token's user is unknown")?;
    let mut gaps = Vec::new();
    let mut found = None;
    for (level, probe, project_level) in [
        ("project", &e.project_rules, true),
        ("merge request", &e.mr_rules, false),
    ] {
        match probe {
            Probe::Got(rules) => {
                for rule in rules {
                    match rule_gap(rule, bot, project_level) {
                        None => {
                            found.get_or_insert_with(|| format!("{level} approval rule {:?} requires {} approval(s) from the bot user only", rule.name, rule.approvals_required.map_or_else(|| "?".to_owned(), |n| n.to_string())));
                        }
                        Some(gap) => gaps.push(gap),
                    }
                }
            }
            Probe::Failed(err) => gaps.push(format!(
                "cannot read the {level} approval rules (approval rules need GitLab Premium): {err}"
            )),
            Probe::NotAsked(why) if !why.is_empty() => gaps.push(why.clone()),
            Probe::NotAsked(_) => {}
        }
    }
    let Some(rule) = found else {
        return Err(if gaps.is_empty() {
            "no approval rule requires the bot's approval".into()
        } else {
            format!(
                "no approval rule requires the bot's approval alone ({})",
                gaps.join("; ")
            )
        });
    };
    match &e.approval_settings {
        Probe::Got(s) => {
            if s.reset_approvals_on_push != Some(true) {
                return Err("approvals are not removed when commits are added: the bot's approval of one head would carry over to the next push".into());
            }
            if s.disable_overriding_approvers_per_merge_request != Some(true) {
                return Err(
                    "approval rules can be edited in MRs: an author could drop the bot's rule"
                        .into(),
                );
            }
        }
        Probe::Failed(err) => {
            return Err(format!(
                "cannot read the project's approval settings: {err}"
            ));
        }
        Probe::NotAsked(why) => return Err(why.clone()),
    }
    let (origin, jobs) = configured_jobs(e)?;
    let approving: Vec<&AssentJob> = jobs.iter().filter(|j| j.approve == Ok(true)).collect();
    let Some(job) = approving.first() else {
        let why: Vec<String> = jobs
            .iter()
            .map(|j| match &j.approve {
                Err(err) => format!("job {:?}: {err}", j.name),
                _ => format!("job {:?} runs assent run without --approve", j.name),
            })
            .collect();
        return Err(why.join("; "));
    };
    Ok(format!(
        "{rule}, approvals are removed on push, MRs cannot edit approval rules, and job {:?} of the CI configuration ({origin}) runs assent run --approve",
        job.name
    ))
}

fn pipeline_required(e: &EnforcementEvidence) -> Result<String, String> {
    let project = match &e.project {
        Probe::Got(p) => p,
        Probe::Failed(err) => return Err(format!("cannot read the project: {err}")),
        Probe::NotAsked(why) => return Err(why.clone()),
    };
    match project.only_allow_merge_if_pipeline_succeeds {
        Some(true) => {}
        Some(false) => return Err("Pipelines must succeed is off".into()),
        None => return Err("GitLab does not show only_allow_merge_if_pipeline_succeeds".into()),
    }
    match project.allow_merge_on_skipped_pipeline {
        Some(false) => {}
        Some(true) => {
            return Err("skipped pipelines count as successful: a [skip ci] push merges without assent running".into());
        }
        None => return Err("GitLab does not show allow_merge_on_skipped_pipeline".into()),
    }
    let (origin, jobs) = configured_jobs(e)?;
    let mut why = Vec::new();
    let mut gating = None;
    for job in &jobs {
        match (&job.fail_on, &job.failure_escape) {
            (Ok(fail_on), None) if fail_on == "review" => {
                gating = Some(job);
                break;
            }
            (Ok(fail_on), None) => why.push(format!(
                "job {:?} runs assent run --fail-on {fail_on}: a REVIEW decision passes",
                job.name
            )),
            (Err(err), _) => why.push(format!("job {:?}: {err}", job.name)),
            (Ok(_), Some(escape)) => why.push(escape.clone()),
        }
    }
    let Some(job) = gating else {
        return Err(why.join("; "));
    };
    let unverified = unverified_or_reaching(e, project)?;
    Ok(format!(
        "Pipelines must succeed is on (skipped pipelines do not count), and job {:?} of the CI configuration ({origin}) runs assent run failing on review, not allowed to fail; not verified: {unverified}",
        job.name
    ))
}

/// What doctor could not verify about who can change the CI configuration, or why an MR
/// can change it or route around it (an author's own configuration project, an include an
/// MR reaches, a pipeline on the source branch that is not the MR's).
fn unverified_or_reaching(
    e: &EnforcementEvidence,
    project: &ProjectFacts,
) -> Result<String, String> {
    let mut unverified = configuration_pushers(project, &e.mr_author)?;
    if let Probe::Got(config) = &e.config {
        if let Some(gap) = config.merged_yaml.as_deref().and_then(workflow_gap) {
            return Err(format!("{gap} (docs/setup.md, Step 4)"));
        }
        let source_branch = match &e.mr_source_branch {
            Probe::Got(branch) => Some(branch.as_str()),
            _ => None,
        };
        match &config.includes {
            Some(includes) => {
                let governed = project.path_with_namespace.as_deref().unwrap_or_default();
                unverified.extend(include_reach(includes, governed, source_branch)?);
                if source_branch.is_none() {
                    unverified.push("whether an include: reads the MR's own branch (no MR read: pass --mr)".into());
                }
            }
            None => unverified.push(
                "whether an include: of that configuration reads this project's branches (the CI Lint API listed no includes)".into(),
            ),
        }
    }
    let mut seen = std::collections::HashSet::new();
    unverified.retain(|item| seen.insert(item.clone()));
    Ok(if unverified.is_empty() {
        "nothing".to_owned()
    } else {
        unverified.join("; ")
    })
}

/// What to change when the gate is `threads-only`: how to hold the gate, leaving out the
/// settings the evidence shows on already. What each stronger verdict lacks is the reason's,
/// said there once.
fn threads_only_advice(e: &EnforcementEvidence) -> String {
    let setting_on = matches!(
        &e.project,
        Probe::Got(p) if p.only_allow_merge_if_pipeline_succeeds == Some(true)
            && p.allow_merge_on_skipped_pipeline == Some(false)
    );
    let pipeline_how = if setting_on {
        "the template's fail_on: review, from a protected CI configuration project (Pipelines must succeed is on already)"
    } else {
        "Settings > Merge requests > Pipelines must succeed on (and skipped pipelines not successful) with the template's fail_on: review, from a protected CI configuration project (any GitLab tier)"
    };
    format!(
        "an MR's author can resolve their own challenge threads and nothing stops the merge \
         (the reason says what each stronger verdict lacks). Hold the gate with one of: {pipeline_how}; or an approval rule requiring 1 approval \
         from the bot user only, approvals removed on push, approval rules not editable in MRs, \
         and the template's approve: true (GitLab Premium). docs/setup.md, Step 3 and Step 6"
    )
}

/// Whether an include of the CI configuration reads something the MR's author can push to:
/// a file of the governed project (any ref: its branches are what MRs push), a `local`
/// include read in the governed project, a `ref:` naming the MR's source branch, or a
/// remote URL or component under the governed project's path. `Ok` with what was not
/// verified (empty when nothing), `Err` naming the include that reaches.
pub fn include_reach(
    includes: &[IncludeFacts],
    governed: &str,
    source_branch: Option<&str>,
) -> Result<Vec<String>, String> {
    let same = |p: Option<&str>| {
        p.is_some_and(|p| !governed.is_empty() && p.eq_ignore_ascii_case(governed))
    };
    let mut unverified = Vec::new();
    for include in includes {
        let location = include.location.as_deref().unwrap_or("(no location)");
        let kind = include.kind.as_deref().unwrap_or_default();
        match kind {
            "local" if same(include.context_project.as_deref()) => {
                return Err(format!(
                    "the CI configuration includes local file {location:?} of {governed}, whose branches an MR pushes"
                ));
            }
            "local" if include.context_project.is_none() => {
                return Err(format!(
                    "the CI configuration includes local file {location:?} and GitLab does not say from which project"
                ));
            }
            "file" if same(include.project.as_deref()) => {
                return Err(format!(
                    "the CI configuration includes {location:?} from {governed} itself, whose branches an MR pushes"
                ));
            }
            "file" => {
                if let (Some(r), Some(branch)) = (include.git_ref.as_deref(), source_branch)
                    && r == branch
                {
                    return Err(format!(
                        "the CI configuration includes {location:?} at ref {r:?}, the MR's own source branch"
                    ));
                }
                match include.project.as_deref() {
                    None => {
                        return Err(format!(
                            "GitLab does not say which project the CI configuration's include {location:?} reads"
                        ));
                    }
                    // Repeats are dropped with the caller's list.
                    Some(other) => {
                        unverified.push(format!("who besides maintainers can push to {other}"))
                    }
                }
            }
            "remote" | "component" => {
                let lower = location.to_ascii_lowercase();
                let path = format!("/{}/", governed.to_ascii_lowercase());
                if !governed.is_empty() && lower.contains(&path) {
                    return Err(format!(
                        "the CI configuration includes {location:?}, under {governed} itself"
                    ));
                }
                if kind == "remote" {
                    unverified.push(format!("who can change the remote include {location}"));
                }
            }
            "template" | "local" => {}
            other => {
                return Err(format!(
                    "the CI configuration's include {location:?} is of a kind doctor does not know ({other:?})"
                ));
            }
        }
    }
    Ok(unverified)
}

/// Why the merged configuration may create a pipeline on an MR's source branch that is not
/// the MR's pipeline, or `None` when it cannot.
///
/// GitLab takes the newest pipeline for the MR's head commit as its head pipeline, whether
/// it is the MR's pipeline or a branch pipeline of the source branch (a push, a "Run
/// pipeline", an API call or a schedule the author sets up). A branch pipeline has no
/// `assent` job, so when it is the newest and passes, "Pipelines must succeed" passes
/// without assent. So every rule that creates a pipeline must require a merge request
/// pipeline, the default branch (which an MR's author cannot push to) or a tag. Without
/// `workflow:rules`, every job's own `rules:` must.
pub fn workflow_gap(merged_yaml: &str) -> Option<String> {
    let doc: Yaml = match serde_yaml::from_str(merged_yaml) {
        Ok(doc) => doc,
        Err(e) => return Some(format!("the merged CI configuration does not parse: {e}")),
    };
    let Some(top) = doc.as_mapping() else {
        return Some("the merged CI configuration is not a mapping".into());
    };
    if let Some(workflow) = field(top, "workflow") {
        let rules = workflow.as_mapping().and_then(|w| field(w, "rules"));
        return match rules {
            Some(Yaml::Sequence(rules)) => rules_gap(rules).map(|gap| format!("workflow {gap}")),
            _ => Some("the CI configuration's workflow: has no rules list, so a branch pipeline of the MR's source branch can become the MR's head pipeline".into()),
        };
    }
    for (name, job) in job_entries(top) {
        let gap = match field(job, "rules") {
            Some(Yaml::Sequence(rules)) => rules_gap(rules),
            _ => Some("has no rules".to_owned()),
        };
        if let Some(gap) = gap {
            return Some(format!(
                "the CI configuration has no workflow:rules and job {name:?} {gap}, so a branch pipeline of the MR's source branch can become the MR's head pipeline"
            ));
        }
    }
    None
}

/// Why `rules` may create a pipeline on a branch an MR comes from, or `None`.
fn rules_gap(rules: &[Yaml]) -> Option<String> {
    for (n, rule) in rules.iter().enumerate() {
        let n = n + 1;
        let Yaml::Mapping(rule) = rule else {
            return Some(format!("rule {n} is not a mapping"));
        };
        if field(rule, "when").and_then(scalar_text).as_deref() == Some("never") {
            continue;
        }
        let Some(condition) = field(rule, "if").and_then(scalar_text) else {
            return Some(format!(
                "rule {n} creates a pipeline with no if: condition, whatever its source, which can become the MR's head pipeline"
            ));
        };
        if !confined_to_unpushable_refs(&condition) {
            return Some(format!(
                "rule {n} ({condition}) admits pipelines on the branch an MR comes from that are not the MR's, one of which can become the MR's head pipeline"
            ));
        }
    }
    None
}

/// Whether `condition` holds only for a merge request pipeline, a pipeline of the default
/// branch or a tag pipeline: a conjunction (no `||`, no parentheses) with one term
/// `$CI_PIPELINE_SOURCE == "merge_request_event"`, `$CI_COMMIT_BRANCH ==
/// $CI_DEFAULT_BRANCH` (or `$CI_COMMIT_REF_NAME`) or `$CI_COMMIT_TAG`.
fn confined_to_unpushable_refs(condition: &str) -> bool {
    if condition.contains("||") || condition.contains('(') {
        return false;
    }
    let variable =
        |term: &str, name: &str| term == format!("${name}") || term == format!("${{{name}}}");
    let equals = |term: &str, left: &str, right: &dyn Fn(&str) -> bool| {
        term.split_once("==").is_some_and(|(a, b)| {
            let (a, b) = (a.trim(), b.trim());
            (variable(a, left) && right(b)) || (variable(b, left) && right(a))
        })
    };
    condition.split("&&").any(|term| {
        let term = term.trim().replace('\'', "\"");
        if term.contains("!=") || term.contains("=~") {
            return false;
        }
        equals(&term, "CI_PIPELINE_SOURCE", &|v| {
            v == "\"merge_request_event\""
        }) || ["CI_COMMIT_BRANCH", "CI_COMMIT_REF_NAME"]
            .iter()
            .any(|name| equals(&term, name, &|v| variable(v, "CI_DEFAULT_BRANCH")))
            || variable(&term, "CI_COMMIT_TAG")
    })
}

/// Whether the MR's author can change the CI configuration's project, as far as doctor can
/// tell: a configuration in the author's own namespace (`file@<author>/<project>`) is theirs
/// to push to. Anything it cannot show is returned as what was not verified, for the reason.
fn configuration_pushers(
    project: &ProjectFacts,
    author: &Probe<String>,
) -> Result<Vec<String>, String> {
    let config_project = project
        .ci_config_path
        .as_deref()
        .and_then(|path| path.split_once('@'))
        .map(|(_, rest)| rest.split(':').next().unwrap_or(rest).to_owned());
    let mut unverified = Vec::new();
    match (&config_project, author) {
        (Some(config), Probe::Got(author)) => {
            let namespace = config.split('/').next().unwrap_or_default();
            if namespace.eq_ignore_ascii_case(author) {
                return Err(format!(
                    "the CI configuration lives in {config}, in the namespace of the MR's author {author}, who can push to it"
                ));
            }
            unverified.insert(0, format!("who besides maintainers can push to {config}"));
        }
        (Some(config), _) => unverified.insert(
            0,
            format!("whether the MR's author can push to {config} (no MR read: pass --mr)"),
        ),
        (None, _) => {}
    }
    Ok(unverified)
}

/// The verdict (see the module docs for the rule).
pub fn judge(e: &EnforcementEvidence) -> EnforcementVerdict {
    let approval = match approval_required(e) {
        Ok(reason) => {
            return EnforcementVerdict {
                enforcement: GateEnforcement::ApprovalRequired,
                reason,
                warning: None,
            };
        }
        Err(why) => why,
    };
    let pipeline = match pipeline_required(e) {
        Ok(reason) => {
            return EnforcementVerdict {
                enforcement: GateEnforcement::PipelineRequired,
                reason,
                warning: None,
            };
        }
        Err(why) => why,
    };
    EnforcementVerdict {
        enforcement: GateEnforcement::ThreadsOnly,
        // The standard advice would tell an operator to turn on what may be on already: the
        // advice follows the same evidence as the reason.
        warning: Some(threads_only_advice(e)),
        reason: format!("not approval-required: {approval}; not pipeline-required: {pipeline}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOT: u64 = 100;

    const PIPELINE_CONFIG: &str = "---\nassent:\n  stage: test\n  resource_group: assent-mr-$CI_MERGE_REQUEST_IID\n  script:\n  - assent doctor || true\n  - assent run --fail-on review --receipt assent-receipt.json\n  rules:\n  - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"\n";

    const APPROVE_CONFIG: &str = "---\nassent:\n  variables:\n    ASSENT_APPROVE: 'true'\n  script:\n  - assent run --fail-on block\n";

    fn config(yaml: &str) -> Probe<ConfigFacts> {
        Probe::Got(ConfigFacts {
            valid: true,
            merged_yaml: Some(yaml.into()),
            errors: vec![],
            includes: None,
        })
    }

    fn bot_rule() -> RuleFacts {
        RuleFacts {
            name: "assent".into(),
            rule_type: Some("regular".into()),
            approvals_required: Some(1),
            user_ids: vec![Some(BOT)],
            eligible_approver_ids: Some(vec![Some(BOT)]),
            contains_hidden_groups: Some(false),
            ..Default::default()
        }
    }

    /// Pipelines must succeed with a job failing on review, from a protected project; no
    /// approval rule.
    fn pipeline_evidence() -> EnforcementEvidence {
        EnforcementEvidence {
            bot_user_id: Some(BOT),
            project: Probe::Got(ProjectFacts {
                path_with_namespace: Some("group/configs".into()),
                only_allow_merge_if_pipeline_succeeds: Some(true),
                allow_merge_on_skipped_pipeline: Some(false),
                ci_config_path: Some("assent.yml@platform/assent-ci".into()),
            }),
            approval_settings: Probe::Got(ApprovalSettingsFacts {
                reset_approvals_on_push: Some(true),
                disable_overriding_approvers_per_merge_request: Some(true),
            }),
            project_rules: Probe::Got(vec![]),
            mr_rules: Probe::Got(vec![]),
            config: config(PIPELINE_CONFIG),
            mr_author: Probe::Got("bob".into()),
            mr_source_branch: Probe::Got("shrink-orders".into()),
        }
    }

    fn include(
        kind: &str,
        location: &str,
        project: Option<&str>,
        git_ref: Option<&str>,
        context: &str,
    ) -> IncludeFacts {
        IncludeFacts {
            kind: Some(kind.into()),
            location: Some(location.into()),
            project: project.map(Into::into),
            git_ref: git_ref.map(Into::into),
            context_project: Some(context.into()),
        }
    }

    /// `assent run` without `--fail-on` fails on review (docs/contract.md#run-inputs): a
    /// hand-written job that leaves it out holds the gate like one that says it.
    #[test]
    fn a_job_without_fail_on_fails_on_review_and_is_pipeline_required() {
        let mut e = pipeline_evidence();
        e.config = config(&PIPELINE_CONFIG.replace("--fail-on review ", ""));
        let v = judge(&e);
        assert_eq!(v.enforcement, GateEnforcement::PipelineRequired, "{v:?}");
    }

    #[test]
    fn an_include_an_mr_can_change_is_not_pipeline_required() {
        let mut e = pipeline_evidence();
        let with = |e: &mut EnforcementEvidence, includes: Option<Vec<IncludeFacts>>| {
            if let Probe::Got(c) = &mut e.config {
                c.includes = includes;
            }
        };
        with(
            &mut e,
            Some(vec![include(
                "local",
                "/jobs.yml",
                None,
                None,
                "platform/assent-ci",
            )]),
        );
        let v = judge(&e);
        assert_eq!(v.enforcement, GateEnforcement::PipelineRequired, "{v:?}");
        assert!(
            v.reason
                .contains("not verified: who besides maintainers can push to platform/assent-ci"),
            "{v:?}"
        );
        assert!(
            !v.reason.contains("include"),
            "nothing about includes is unverified: {v:?}"
        );

        let cases = [
            (
                include(
                    "file",
                    "/ci/extra.yml",
                    Some("group/configs"),
                    Some("main"),
                    "platform/assent-ci",
                ),
                "from group/configs itself",
            ),
            (
                include(
                    "file",
                    "/ci/extra.yml",
                    Some("GROUP/Configs"),
                    Some("main"),
                    "platform/assent-ci",
                ),
                "from group/configs itself",
            ),
            (
                include(
                    "file",
                    "/x.yml",
                    Some("platform/shared"),
                    Some("shrink-orders"),
                    "platform/assent-ci",
                ),
                "the MR's own source branch",
            ),
            (
                include("local", "/jobs.yml", None, None, "group/configs"),
                "local file \"/jobs.yml\" of group/configs",
            ),
            (
                IncludeFacts {
                    context_project: None,
                    ..include("local", "/jobs.yml", None, None, "")
                },
                "does not say from which project",
            ),
            (
                include("file", "/x.yml", None, Some("main"), "platform/assent-ci"),
                "does not say which project",
            ),
            (
                include(
                    "remote",
                    "https://gitlab.example.com/group/configs/-/raw/main/ci.yml",
                    None,
                    None,
                    "platform/assent-ci",
                ),
                "under group/configs itself",
            ),
            (
                include(
                    "component",
                    "gitlab.example.com/group/configs/assent@1.0",
                    None,
                    None,
                    "platform/assent-ci",
                ),
                "under group/configs itself",
            ),
            (
                include("magic", "x", None, None, "platform/assent-ci"),
                "a kind doctor does not know",
            ),
        ];
        for (inc, why) in cases {
            with(
                &mut e,
                Some(vec![
                    include(
                        "template",
                        "Jobs/Build.gitlab-ci.yml",
                        None,
                        None,
                        "platform/assent-ci",
                    ),
                    inc.clone(),
                ]),
            );
            let v = judge(&e);
            assert_eq!(
                v.enforcement,
                GateEnforcement::ThreadsOnly,
                "{inc:?}: {v:?}"
            );
            assert!(v.reason.contains(why), "{inc:?}: {v:?}");
        }

        with(
            &mut e,
            Some(vec![
                include(
                    "file",
                    "/x.yml",
                    Some("platform/shared"),
                    Some("v1"),
                    "platform/assent-ci",
                ),
                include(
                    "remote",
                    "https://example.com/ci.yml",
                    None,
                    None,
                    "platform/assent-ci",
                ),
            ]),
        );
        let v = judge(&e);
        assert_eq!(v.enforcement, GateEnforcement::PipelineRequired, "{v:?}");
        assert!(
            v.reason
                .contains("who besides maintainers can push to platform/shared"),
            "{v:?}"
        );
        assert!(
            v.reason
                .contains("who can change the remote include https://example.com/ci.yml"),
            "{v:?}"
        );

        with(&mut e, None);
        let v = judge(&e);
        assert_eq!(v.enforcement, GateEnforcement::PipelineRequired, "{v:?}");
        assert!(
            v.reason.contains("the CI Lint API listed no includes"),
            "{v:?}"
        );

        with(&mut e, Some(vec![]));
        e.mr_source_branch = Probe::NotAsked(String::new());
        let v = judge(&e);
        assert_eq!(v.enforcement, GateEnforcement::PipelineRequired, "{v:?}");
        assert!(v.reason.contains("no MR read: pass --mr"), "{v:?}");
    }

    #[test]
    fn the_shipped_templates_create_no_pipeline_on_an_mrs_branch_but_the_mrs() {
        let classic = include_str!("../../ci-templates/assent.gitlab-ci.yml");
        assert_eq!(workflow_gap(classic), None);
        let component = include_str!("../../ci-templates/templates/assent/template.yml");
        let jobs = component
            .split("\n---\n")
            .nth(1)
            .expect("a spec header and the jobs");
        assert_eq!(workflow_gap(jobs), None);
        // The documented workflow:rules hold too.
        for doc in [
            include_str!("../../docs/setup.md"),
            include_str!("../../ci-templates/README.md"),
        ] {
            let start = doc
                .find("```yaml\nworkflow:\n")
                .expect("a workflow example")
                + 8;
            let end = start + doc[start..].find("```").unwrap();
            assert_eq!(workflow_gap(&doc[start..end]), None, "{}", &doc[start..end]);
        }
    }

    #[test]
    fn only_rules_confined_to_mr_pipelines_default_branch_or_tags_are_closed() {
        let closed = [
            // The template's own jobs, no workflow.
            PIPELINE_CONFIG,
            "workflow:\n  rules:\n  - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"\n",
            "workflow:\n  rules:\n  - if: '$CI_PIPELINE_SOURCE == \"merge_request_event\"'\n  - if: $CI_PIPELINE_SOURCE == \"schedule\" && $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH\n  - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH\n  - if: $CI_COMMIT_TAG\n  - if: $CI_COMMIT_BRANCH\n    when: never\n",
            "workflow:\n  rules:\n  - if: ${CI_DEFAULT_BRANCH}==${CI_COMMIT_REF_NAME}\n  - if: '\"merge_request_event\" == $CI_PIPELINE_SOURCE && $X'\n",
        ];
        for yaml in closed {
            assert_eq!(workflow_gap(yaml), None, "{yaml}");
        }
        let open = [
            (
                "workflow:\n  rules:\n  - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"\n  - if: $CI_PIPELINE_SOURCE == \"schedule\"\n",
                "rule 2",
            ),
            (
                "workflow:\n  rules:\n  - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"\n  - if: $CI_COMMIT_BRANCH && $CI_OPEN_MERGE_REQUESTS\n    when: never\n  - if: $CI_COMMIT_BRANCH\n",
                "rule 3",
            ),
            (
                "workflow:\n  rules:\n  - when: always\n",
                "no if: condition",
            ),
            (
                "workflow:\n  rules:\n  - if: $CI_PIPELINE_SOURCE == \"merge_request_event\" || $CI_COMMIT_BRANCH\n",
                "rule 1",
            ),
            (
                "workflow:\n  rules:\n  - if: $CI_PIPELINE_SOURCE != \"merge_request_event\"\n",
                "rule 1",
            ),
            (
                "workflow:\n  rules:\n  - if: $CI_PIPELINE_SOURCE =~ /merge_request_event|push/\n",
                "rule 1",
            ),
            ("workflow:\n  name: x\n", "no rules list"),
            (
                "workflow:\n  rules:\n  - if: $CI_COMMIT_BRANCH == \"main\"\n",
                "rule 1",
            ),
            ("lint:\n  script: make\n", "job \"lint\" has no rules"),
            (
                "lint:\n  script: make\n  rules:\n  - if: $CI_COMMIT_BRANCH\n",
                "job \"lint\" rule 1",
            ),
        ];
        for (yaml, why) in open {
            let gap = workflow_gap(yaml).unwrap_or_else(|| panic!("no gap in {yaml}"));
            assert!(gap.contains(why), "{yaml}: {gap}");
        }
        let mut e = pipeline_evidence();
        e.config = config(&format!("{PIPELINE_CONFIG}lint:\n  script: make\n"));
        let v = judge(&e);
        assert_eq!(v.enforcement, GateEnforcement::ThreadsOnly, "{v:?}");
        assert!(v.reason.contains("head pipeline"), "{v:?}");
    }

    #[test]
    fn a_configuration_in_the_authors_own_namespace_is_not_enough() {
        let mut e = pipeline_evidence();
        let v = judge(&e);
        assert_eq!(v.enforcement, GateEnforcement::PipelineRequired, "{v:?}");
        assert!(v.reason.contains("not verified"), "{v:?}");
        if let Probe::Got(p) = &mut e.project {
            p.ci_config_path = Some(".gitlab-ci.yml@bob/my-ci".into());
        }
        let v = judge(&e);
        assert_eq!(v.enforcement, GateEnforcement::ThreadsOnly, "{v:?}");
        assert!(v.reason.contains("bob/my-ci"), "{v:?}");
        e.mr_author = Probe::NotAsked(String::new());
        let v = judge(&e);
        assert_eq!(v.enforcement, GateEnforcement::PipelineRequired, "{v:?}");
        assert!(
            v.reason
                .contains("whether the MR's author can push to bob/my-ci"),
            "{v:?}"
        );
    }

    /// A bot-only rule and a job that approves; "Pipelines must succeed" off.
    fn approval_evidence() -> EnforcementEvidence {
        let mut e = pipeline_evidence();
        e.project_rules = Probe::Got(vec![bot_rule()]);
        e.config = config(APPROVE_CONFIG);
        if let Probe::Got(p) = &mut e.project {
            p.only_allow_merge_if_pipeline_succeeds = Some(false);
        }
        e
    }

    fn verdict(e: &EnforcementEvidence) -> GateEnforcement {
        judge(e).enforcement
    }

    #[test]
    fn each_verdict_on_its_evidence() {
        let v = judge(&pipeline_evidence());
        assert_eq!(v.enforcement, GateEnforcement::PipelineRequired, "{v:?}");
        assert!(v.reason.contains("job \"assent\""), "{}", v.reason);
        assert!(v.reason.contains("platform/assent-ci"), "{}", v.reason);
        assert_eq!(v.warning, None);

        let v = judge(&approval_evidence());
        assert_eq!(v.enforcement, GateEnforcement::ApprovalRequired, "{v:?}");
        assert!(v.reason.contains("rule \"assent\""), "{}", v.reason);
        assert_eq!(v.warning, None);

        let mut e = pipeline_evidence();
        e.config = Probe::NotAsked(String::new());
        let v = judge(&e);
        assert_eq!(v.enforcement, GateEnforcement::ThreadsOnly);
        assert!(v.reason.contains("CI_JOB_ID"), "{}", v.reason);
        assert!(
            v.warning
                .as_deref()
                .is_some_and(|w| w.contains("fail_on: review") && w.contains("approve: true"))
        );
    }

    #[test]
    fn approval_wins_when_both_hold() {
        let mut e = approval_evidence();
        e.config =
            config(&PIPELINE_CONFIG.replace("--fail-on review", "--fail-on review --approve"));
        if let Probe::Got(p) = &mut e.project {
            p.only_allow_merge_if_pipeline_succeeds = Some(true);
        }
        assert_eq!(verdict(&e), GateEnforcement::ApprovalRequired);
    }

    #[test]
    fn an_mr_rule_counts_like_a_project_rule() {
        let mut e = approval_evidence();
        e.project_rules = Probe::Failed("HTTP 403".into());
        e.mr_rules = Probe::Got(vec![bot_rule()]);
        assert_eq!(
            verdict(&e),
            GateEnforcement::ApprovalRequired,
            "{:?}",
            judge(&e)
        );
    }

    #[test]
    fn approval_rules_that_someone_else_can_satisfy_are_not_enough() {
        type Mutation = fn(&mut RuleFacts);
        let cases: Vec<(&str, Mutation)> = vec![
            ("bot plus a group", |r| r.group_ids = vec![Some(9)]),
            ("a group without an id", |r| r.group_ids = vec![None]),
            ("hidden groups", |r| r.contains_hidden_groups = Some(true)),
            ("hidden groups not said", |r| {
                r.contains_hidden_groups = None
            }),
            ("bot plus a person", |r| {
                r.user_ids = vec![Some(BOT), Some(200)];
                r.eligible_approver_ids = Some(vec![Some(BOT), Some(200)]);
            }),
            ("bot plus a user without an id", |r| {
                r.user_ids = vec![Some(BOT), None];
            }),
            ("a person only", |r| {
                r.user_ids = vec![Some(200)];
                r.eligible_approver_ids = Some(vec![Some(200)]);
            }),
            ("eligible through a group GitLab resolved", |r| {
                r.eligible_approver_ids = Some(vec![Some(BOT), Some(300)])
            }),
            ("an eligible approver without an id", |r| {
                r.eligible_approver_ids = Some(vec![Some(BOT), None])
            }),
            ("any approver", |r| {
                r.rule_type = Some("any_approver".into());
                r.user_ids = vec![];
                r.eligible_approver_ids = Some(vec![]);
            }),
            ("zero approvals", |r| r.approvals_required = Some(0)),
            ("approvals not said", |r| r.approvals_required = None),
            ("scoped to a branch", |r| {
                r.protected_branches = vec!["main".into()]
            }),
            ("protected branches only", |r| {
                r.applies_to_all_protected_branches = true
            }),
        ];
        for (name, mutate) in cases {
            let mut e = approval_evidence();
            let mut rule = bot_rule();
            mutate(&mut rule);
            e.project_rules = Probe::Got(vec![rule]);
            let v = judge(&e);
            assert_eq!(v.enforcement, GateEnforcement::ThreadsOnly, "{name}: {v:?}");
            assert!(
                v.reason.starts_with("not approval-required: "),
                "{name}: {}",
                v.reason
            );
        }
    }

    #[test]
    fn approval_settings_an_author_could_exploit_are_not_enough() {
        type Mutation = fn(&mut EnforcementEvidence);
        let cases: Vec<(&str, &str, Mutation)> = vec![
            ("no reset on push", "removed when commits are added", |e| {
                e.approval_settings = Probe::Got(ApprovalSettingsFacts {
                    reset_approvals_on_push: Some(false),
                    disable_overriding_approvers_per_merge_request: Some(true),
                })
            }),
            ("rules editable in MRs", "edited in MRs", |e| {
                e.approval_settings = Probe::Got(ApprovalSettingsFacts {
                    reset_approvals_on_push: Some(true),
                    disable_overriding_approvers_per_merge_request: Some(false),
                })
            }),
            ("settings unreadable (Free)", "approval settings", |e| {
                e.approval_settings = Probe::Failed("HTTP 403".into())
            }),
            ("rules unreadable (Free)", "Premium", |e| {
                e.project_rules = Probe::Failed("HTTP 403".into());
                e.mr_rules = Probe::NotAsked(String::new());
            }),
            ("no approving job", "without --approve", |e| {
                e.config = config("assent:\n  script:\n  - assent run\n")
            }),
            ("approve misspelt", "neither on nor off", |e| {
                e.config = config(
                    "assent:\n  variables:\n    ASSENT_APPROVE: 'ture'\n  script:\n  - assent run\n",
                )
            }),
            (
                "approve merely echoed",
                "no job of the CI configuration runs assent run",
                |e| e.config = config("assent:\n  script:\n  - echo assent run --approve\n"),
            ),
            ("bot unknown", "user is unknown", |e| e.bot_user_id = None),
        ];
        for (name, part, mutate) in cases {
            let mut e = approval_evidence();
            mutate(&mut e);
            let v = judge(&e);
            assert_eq!(v.enforcement, GateEnforcement::ThreadsOnly, "{name}: {v:?}");
            assert!(v.reason.contains(part), "{name}: {}", v.reason);
        }
    }

    #[test]
    fn pipelines_that_pass_while_assent_fails_are_not_enough() {
        type Mutation = fn(&mut EnforcementEvidence);
        let cases: Vec<(&str, &str, Mutation)> = vec![
            ("setting off", "Pipelines must succeed is off", |e| {
                if let Probe::Got(p) = &mut e.project {
                    p.only_allow_merge_if_pipeline_succeeds = Some(false)
                }
            }),
            ("skipped counts", "[skip ci]", |e| {
                if let Probe::Got(p) = &mut e.project {
                    p.allow_merge_on_skipped_pipeline = Some(true)
                }
            }),
            ("own .gitlab-ci.yml", "own .gitlab-ci.yml", |e| {
                if let Probe::Got(p) = &mut e.project {
                    p.ci_config_path = None
                }
            }),
            ("file in the same project", "in this project", |e| {
                if let Probe::Got(p) = &mut e.project {
                    p.ci_config_path = Some(".gitlab-ci.yml@group/configs".into())
                }
            }),
            ("project unreadable", "cannot read the project", |e| {
                e.project = Probe::Failed("HTTP 500".into())
            }),
            ("fail on block", "--fail-on block", |e| {
                e.config = config(&PIPELINE_CONFIG.replace("--fail-on review", "--fail-on block"))
            }),
            ("fail on never", "--fail-on never", |e| {
                e.config = config(&PIPELINE_CONFIG.replace("--fail-on review", "--fail-on=never"))
            }),
            ("allow_failure", "allow_failure: true", |e| {
                e.config = config(
                    &PIPELINE_CONFIG
                        .replace("  stage: test\n", "  stage: test\n  allow_failure: true\n"),
                )
            }),
            ("allow_failure on exit codes", "allow_failure", |e| {
                e.config = config(&PIPELINE_CONFIG.replace(
                    "  stage: test\n",
                    "  stage: test\n  allow_failure:\n    exit_codes: [1]\n",
                ))
            }),
            ("manual", "when: manual", |e| {
                e.config = config(
                    &PIPELINE_CONFIG.replace("  stage: test\n", "  stage: test\n  when: manual\n"),
                )
            }),
            ("or true", "lets the line succeed", |e| {
                e.config = config(
                    &PIPELINE_CONFIG
                        .replace("assent-receipt.json\n", "assent-receipt.json || true\n"),
                )
            }),
            ("rule allows failure", "allows it to fail", |e| {
                e.config = config(&PIPELINE_CONFIG.replace(
                    "merge_request_event\"\n",
                    "merge_request_event\"\n    allow_failure: true\n",
                ))
            }),
            ("rule skips on a label", "when: never", |e| {
                e.config = config(&PIPELINE_CONFIG.replace(
                    "  rules:\n",
                    "  rules:\n  - if: $CI_MERGE_REQUEST_LABELS =~ /skip/\n    when: never\n",
                ))
            }),
            ("rule on a commit message", "$CI_COMMIT_MESSAGE", |e| {
                e.config = config(&PIPELINE_CONFIG.replace(
                    "merge_request_event\"",
                    "merge_request_event\" && $CI_COMMIT_MESSAGE !~ /nogate/",
                ))
            }),
            ("rule on changes", "changes:", |e| {
                e.config = config(&PIPELINE_CONFIG.replace(
                    "merge_request_event\"\n",
                    "merge_request_event\"\n    changes: [topics/**]\n",
                ))
            }),
            ("only", "only:", |e| {
                e.config = config(&PIPELINE_CONFIG.replace(
                    "  rules:\n  - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"\n",
                    "  only: [merge_requests]\n",
                ))
            }),
            ("unset variable", "does not set", |e| {
                e.config = config(&PIPELINE_CONFIG.replace("--fail-on review", "--fail-on $GATE"))
            }),
            ("given twice", "more than once", |e| {
                e.config = config(
                    &PIPELINE_CONFIG
                        .replace("--fail-on review", "--fail-on review --fail-on never"),
                )
            }),
            ("lint invalid", "invalid", |e| {
                e.config = Probe::Got(ConfigFacts {
                    valid: false,
                    merged_yaml: None,
                    errors: vec!["bad".into()],
                    includes: None,
                })
            }),
            (
                "lint failed",
                "cannot read the merged CI configuration",
                |e| e.config = Probe::Failed("HTTP 502".into()),
            ),
            ("garbage", "does not parse", |e| e.config = config("{[")),
            ("no assent job", "no job", |e| {
                e.config = config("test:\n  script: [make]\n")
            }),
        ];
        for (name, part, mutate) in cases {
            let mut e = pipeline_evidence();
            mutate(&mut e);
            let v = judge(&e);
            assert_eq!(v.enforcement, GateEnforcement::ThreadsOnly, "{name}: {v:?}");
            assert!(v.reason.contains(part), "{name}: {}", v.reason);
            assert!(v.warning.is_some(), "{name}");
        }
    }

    #[test]
    fn fail_on_may_come_from_the_configurations_variables() {
        let classic = "workflow:\n  rules:\n  - if: $CI_PIPELINE_SOURCE == \"merge_request_event\"\nvariables:\n  ASSENT_FAIL_ON:\n    value: review\n    description: x\nassent:\n  script:\n  - assent run --fail-on \"$ASSENT_FAIL_ON\"\n";
        let mut e = pipeline_evidence();
        e.config = config(classic);
        assert_eq!(
            verdict(&e),
            GateEnforcement::PipelineRequired,
            "{:?}",
            judge(&e)
        );
        // A job's own variable overrides the global one.
        e.config = config(&format!(
            "{classic}  variables:\n    ASSENT_FAIL_ON: never\n"
        ));
        assert_eq!(verdict(&e), GateEnforcement::ThreadsOnly);
        assert!(judge(&e).reason.contains("--fail-on never"));
        // Braced form, symbol keys of older GitLab.
        e.config = config(
            ":workflow:\n  :rules:\n  - :if: $CI_PIPELINE_SOURCE == \"merge_request_event\"\n:variables:\n  :GATE: review\n:assent:\n  :script:\n  - assent run --fail-on ${GATE}\n",
        );
        assert_eq!(
            verdict(&e),
            GateEnforcement::PipelineRequired,
            "{:?}",
            judge(&e)
        );
    }

    #[test]
    fn one_good_job_is_enough_and_hidden_jobs_do_not_count() {
        let mut e = pipeline_evidence();
        e.config = config(&format!(
            "{PIPELINE_CONFIG}.template:\n  script:\n  - assent run --fail-on never\nlint:\n  script:\n  - assent lint\n  rules:\n  - if: $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH\n"
        ));
        assert_eq!(verdict(&e), GateEnforcement::PipelineRequired);
        e.config = config(".hidden:\n  script:\n  - assent run --fail-on review\n");
        assert_eq!(verdict(&e), GateEnforcement::ThreadsOnly);
    }

    #[test]
    fn expansion_leaves_unknown_variables_alone() {
        let vars = vec![("A".to_owned(), "x".to_owned())];
        assert_eq!(expand("$A-${A}-$B-${B}-$", &[&vars]), "x-x-$B-${B}-$");
        assert_eq!(
            assent_run_arguments("/usr/local/bin/assent run --approve"),
            Some(vec!["--approve".to_owned()])
        );
        assert_eq!(assent_run_arguments("assent sweep"), None);
        assert_eq!(assent_run_arguments("echo assent run"), None);
    }
}
