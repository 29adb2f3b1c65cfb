//! The desired review state of a merge request, computed from already-read inputs (docs/contract.md#desired-state).
//!
//! [`compute_desired_state`] is pure: the caller (see `assent_engine::run::inputs`) reads policy
//! files, the change set and file contents at pinned SHAs, and this module judges them. The
//! result is a function of its inputs only; the order in which files are given does not matter.
//!
//! # Built-in findings (always on, fail closed; all `block` but `self-edit` and `git-attributes`, challenges)
//!
//! | rule | subject | when |
//! | --- | --- | --- |
//! | `assent/policy-error` | `.assent/policies#` | the target's policies do not load |
//! | `assent/self-edit` | `<path>#` | a changed file's old or new path is under `.assent/` (a `challenge` only a policy owner may assent to) |
//! | `assent/undecidable` | `merge-request#` | the change set could not be listed completely |
//! | `assent/undecidable` | `<path>#` | a governed file is unreadable, the run's CEL budget was spent before every rule was evaluated on the file's changes, or the descendants its rules would judge carry more values than the bound |
//! | `assent/parse-error` | `<path>#` | a governed file does not parse at the base or the source |
//! | `assent/ambiguous-identity` | `<path>#<list pointer>` | an identity-keyed list's entries cannot be told apart |
//! | `assent/git-attributes` | `<.gitattributes path>#` | a changed line gives a governed path an attribute that changes what a checkout or an archive holds, or hides its diff (a `challenge`: [`crate::git_attributes`]) |
//!
//! # Decisions
//!
//! * **Governed file**: a path that is not under `.assent/`, that some rule's `match.files`
//!   glob matches ([`PolicySet::governs`]) and whose extension names a structured format
//!   ([`format_for_path`]). Only governed files are parsed and diffed; every other file is
//!   ignored (apart from the built-ins that look at paths only). Paths under `.assent/` are never
//!   governed: each is an `assent/self-edit` challenge whatever it changes, and judging
//!   policy files with the policies they replace would be meaningless.
//! * **Policy owners** (docs/policies.md, "Changing policies"): a self-edit challenge counts
//!   as assented only when resolved by a policy owner: the target's `policy_owners:`
//!   ([`PolicySet::policy_owners`]), or, when the target declares none or its policies do not
//!   load, [`Assenters::default_policy_owners`]. They are the self-edit rule's entry in
//!   [`DesiredState::assenters_of`], so `crate::assent` judges them like any `assenters:`.
//!   Every other change is judged by the target's policies only, never the MR's own.
//! * **Policy errors**: when the policies do not load, *one* `assent/policy-error` finding lists
//!   every problem (`file:line: message`). No policy rule is evaluated and no file is known to
//!   be governed, so no content is read or diffed; the path-only built-ins (`self-edit`,
//!   `undecidable` for an incomplete change set) still apply. Its occurrence is
//!   `Occurrence::of("assent/policy-error", ".assent/policies#", modify, null, [problems as
//!   strings])`, so it changes (and the thread is superseded) exactly when the problems change.
//! * **Occurrences of the other built-ins** follow the same shape, `kind` `modify`, `old` null:
//!   `undecidable` and `parse-error` have `new` = the list of reasons, so a different reason
//!   gives a new thread.
//! * **Self-edit occurrences** (docs/contract.md#policy-owners) cover the path at the base
//!   (`old`) and at the source (`new`): `null` where it does not exist, its git mode and the
//!   SHA-256 of its content where it does ([`ReviewInputs::self_edit_sides`], the `self_edit`
//!   module). An owner's assent is to that change: any later change of the path is a new
//!   thread, a rebase that leaves it as it was keeps the assent. A side that could not be read
//!   makes the path `assent/undecidable` as well.
//! * **Withheld diffs** are not this module's concern: a file whose diff text the forge
//!   withheld (too large, collapsed) is judged from its contents at both SHAs like any other
//!   (docs/contract.md#withheld-diffs); only the placement of its threads differs
//!   (`crate::placement`).
//! * **Unreadable content** of a governed side makes that file `assent/undecidable`, and the
//!   file is not diffed at all (a partial diff would be a guess). Reasons for one path are
//!   merged into one finding, so the slot holds every reason.
//! * **Parse errors** name `path:line: message` for each side that fails (base and/or source);
//!   a file with a parse error is not diffed.
//! * **Renames** (`renames`): a consumer reads by path, so a rename is the deletion of the
//!   old path's content, judged by the old path's rules, and the addition of the new path's,
//!   judged by the new path's; a pure rename between governed paths fires the rules a delete
//!   and an add fire (a rule whose `kinds` or `when` leave them out still does not care).
//!   Entries of the listing that name the same path are one change of that path.
//! * **Ambiguous identities** (docs/contract.md#identity-keys): a list declared with an identity field whose
//!   entries cannot be told apart (an entry that is not a map, lacks the field or holds neither
//!   a string nor an integer there, or two entries with the same value) is not compared at all
//!   (see [`diff_documents_with`]), so none of its changes are judged, and one
//!   `assent/ambiguous-identity` finding per list names, per side, each duplicated value or
//!   missing key with the `file:line` of every entry involved (the base side under the old
//!   path, the source side under the new one). Its occurrence is `new` = `{field, base,
//!   source}`, each side `null` or `{duplicated: [sorted values], unkeyed: count}`: the same
//!   ambiguity keeps its thread on every run, also when lines move, and a different one (another
//!   value, another side, more or fewer unkeyed entries) gets a new thread. Lines and
//!   positions stay out of it, as out of every occurrence. Changes elsewhere in the file are
//!   judged as usual.
//! * **Descendants** (docs/policies.md, "How changes reach rules"): the findings depend on the
//!   documents on both sides, not on how an edit is spelled. Every value inside what a change
//!   deletes, adds or replaces by another type is judged as a change of its own (see
//!   [`diff_documents_with`]), with its own values and lines, so `topics: null` fires
//!   `topic-deleted` for each topic as deleting them one by one does. Only the descendants some
//!   rule's `match` (files, pointer, kinds) accepts are built ([`PolicySet::could_judge`]);
//!   they carry at most `DESCENDANT_VALUES_PER_NODE` × [`Limits::max_nodes`] values in the
//!   whole run (files in path order): a file whose descendants do not fit in what is left
//!   has none of them judged and is `assent/undecidable`. They are in
//!   [`DesiredOutcome::changes`] with the rest.
//! * **Emptied files**: a side that holds nothing (`null`: an empty or blank YAML file, a
//!   `null` document; a TOML file without a key) facing a side that holds a document is
//!   judged as absent, so emptying a file is its whole-file delete (and filling an empty file
//!   its whole-file add): `""`-delete rules fire, and everything it held is deleted with it.
//!   A file created or deleted empty, or empty on both sides, is diffed as it is.
//! * **Grouping** (docs/contract.md#grouping): the policy findings of a rule that fires more than its
//!   `group_above` (default 25) times are one finding `(rule, "*")` ([`crate::grouping`]);
//!   the built-in findings above are never grouped.
//! * **Sites** (docs/contract.md#lines): every policy finding's site (its change's file, kind and the line
//!   of each side) is kept in [`DesiredState::sites`], beside the findings and never in them,
//!   so a value that only moves keeps its slot and occurrence; a grouped finding's site is
//!   its first member's (for the Code Quality report; it is never placed on a line), and
//!   built-in findings have none. `crate::placement` turns sites into diff positions.
//! * **Contents that were not read** are [`FileContent::Absent`] in [`ChangedFileInput`]: the
//!   reader only reads the governed sides and `.gitattributes` files (see [`is_read`]), and
//!   this module only looks at those, so the two agree by construction.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

pub use self_edit::{PathState, REGULAR_FILE_MODE, SelfEditSides, self_edit_sides_of_contents};

use crate::git_attributes::{
    self, AttributesChange, SideContent as AttributesSide, is_attributes_file,
};
use crate::grouping::{Fired, group_fired};
use crate::inert;
use crate::model::{
    Assenters, Change, ChangeKind, DesiredState, Effect, Finding, FindingSite, GROUP_SUBJECT,
    MemberFinding, Occurrence, Slot, bounded_subject,
};
use crate::policy::{CelBudget, EvaluationFailure, MrContext, PolicyFile, PolicySet};
use crate::semantic_diff::{
    AmbiguousList, Descendants, EntryAt, Format, Limits, Node, ParseError, SideAmbiguity, Unkeyed,
    diff_documents_with, format_for_path, parse_document,
};

/// Rule id of the finding for policies that do not load.
pub const RULE_POLICY_ERROR: &str = "assent/policy-error";
/// Rule id of the `comment` finding of a merge request judged as the repair of policies that
/// load alone but not together with the central policy project's (a rule id both define).
pub const RULE_POLICY_REPAIR: &str = "assent/policy-repair";
/// Rule id of the finding for an MR touching `.assent/`.
pub const RULE_SELF_EDIT: &str = "assent/self-edit";
/// Rule id of the finding for a change set or file that cannot be judged.
pub const RULE_UNDECIDABLE: &str = "assent/undecidable";
/// Rule id of the finding for a governed file that does not parse.
pub const RULE_PARSE_ERROR: &str = "assent/parse-error";
/// Rule id of the finding for an identity-keyed list whose entries cannot be told apart.
pub const RULE_AMBIGUOUS_IDENTITY: &str = "assent/ambiguous-identity";
/// Subject of the `assent/policy-error` finding.
pub const POLICY_ERROR_SUBJECT: &str = ".assent/policies#";
/// Subject of the `assent/undecidable` finding for an incomplete change set.
pub const MERGE_REQUEST_SUBJECT: &str = "merge-request#";
/// The folder whose changes are always `assent/self-edit`.
pub const ASSENT_DIR: &str = ".assent/";

/// The content of one side of a changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileContent {
    /// The file does not exist at that SHA (or was not read because it needs no judging).
    Absent,
    /// The file's bytes.
    Present(Vec<u8>),
    /// The file could not be read; the reason, for the `assent/undecidable` message.
    Unreadable(String),
}

/// One changed file with the contents a run needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFileInput {
    /// Path at the base SHA.
    pub old_path: String,
    /// Path at the source SHA.
    pub new_path: String,
    /// `old_path` at the base SHA.
    pub base: FileContent,
    /// `new_path` at the source SHA.
    pub source: FileContent,
}

/// Everything [`compute_desired_state`] judges.
#[derive(Debug, Clone)]
pub struct ReviewInputs {
    /// Every policy file under `.assent/policies` at the **target** SHA, and the central
    /// policy project's (paths from [`central_policy_path`]) when one is configured.
    pub policy_files: Vec<PolicyFile>,
    /// Why some policies could not be read at all (a central policy project that cannot be
    /// read): each is a line of the `assent/policy-error` finding, and no rule is evaluated,
    /// exactly as when a policy file does not load.
    pub policy_problems: Vec<String>,
    /// The changed files, or why the change set is incomplete.
    pub changed_files: Result<Vec<ChangedFileInput>, String>,
    /// Each changed path under `.assent/` at the base and at the source SHA, by path: what
    /// its `assent/self-edit` occurrence covers. A changed path missing here was not read,
    /// and is `assent/undecidable` beside its self-edit.
    pub self_edit_sides: BTreeMap<String, SelfEditSides>,
    /// What `when` predicates see of the MR.
    pub mr: MrContext,
    /// Parser limits for governed files.
    pub limits: Limits,
}

/// The desired state and what it was computed from.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredOutcome {
    /// Findings, one per slot, sorted.
    pub desired: DesiredState,
    /// [`PolicySet::digest`] of the policy files.
    pub policy_digest: String,
    /// The semantic changes of the governed files, and the descendants of those, that some
    /// rule could judge (its `match` accepts the file, pointer and kind:
    /// [`PolicySet::could_judge`]), sorted by (file, pointer, kind). A change no rule could
    /// judge can give no finding, so it is not copied out of the documents at all.
    pub changes: Vec<Change>,
    /// Each rule that could not be judged on a change (its `when` failed there) or on a file
    /// (the CEL budget was spent first, subject `<file>#`), sorted. Each is also among the
    /// findings, as a `block`; a caller that records results as expectations must not take
    /// them for a verdict (`assent test --update`).
    pub evaluation_failures: Vec<EvaluationFailure>,
}

/// How the path of a central policy project's file begins among the policy files: no path of
/// the governed project's own policies (all under `.assent/policies/`) can begin so, so the two
/// sets never collide, and the digest covers both.
pub const CENTRAL_POLICY_PREFIX: &str = "central:";

/// The policy-file path of `path` (e.g. `.assent/policies/topics.yaml`) in the central policy
/// project `project` (its id or path, as configured): `central:<project>/<path>`.
pub fn central_policy_path(project: &str, path: &str) -> String {
    format!("{CENTRAL_POLICY_PREFIX}{project}/{path}")
}

/// Whether `path` is under `.assent/`.
pub fn is_assent_path(path: &str) -> bool {
    path.starts_with(ASSENT_DIR) || path == ASSENT_DIR.trim_end_matches('/')
}

/// Whether `path` is governed by `policies`: not under `.assent/`, matched by some rule's file
/// glob, and in a structured format. The reader uses the same test to decide what to read.
pub fn is_governed(policies: &PolicySet, path: &str) -> bool {
    !is_assent_path(path) && format_for_path(path).is_some() && policies.governs(path)
}

/// Whether a run reads `path`'s content: a governed file, or a `.gitattributes` file (it
/// decides what git hands the consumers of governed files: [`crate::git_attributes`]).
pub fn is_read(policies: &PolicySet, path: &str) -> bool {
    is_governed(policies, path) || is_attributes_file(path)
}

/// The `assent/git-attributes` findings of the changed `.gitattributes` paths (one change
/// per path); a side that could not be read makes its path undecidable instead.
fn attributes_findings(
    policies: &PolicySet,
    paths: &[ChangedFileInput],
    undecidable: &mut BTreeMap<String, Vec<Reason>>,
) -> Vec<Finding> {
    let mut changes = Vec::new();
    for file in paths.iter().filter(|f| is_attributes_file(&f.new_path)) {
        let sides = [("base", &file.base), ("source", &file.source)].map(|(name, content)| Side {
            used: true,
            name,
            path: &file.new_path,
            content: content.clone(),
        });
        let unreadable: Vec<Reason> = sides.iter().filter_map(Side::unreadable).collect();
        if !unreadable.is_empty() {
            undecidable
                .entry(subject_of(&file.new_path))
                .or_default()
                .extend(unreadable);
            continue;
        }
        fn side(content: &FileContent) -> AttributesSide<'_> {
            match content {
                FileContent::Present(bytes) => AttributesSide::Present(bytes),
                _ => AttributesSide::Absent,
            }
        }
        changes.push(AttributesChange {
            path: &file.new_path,
            base: side(&file.base),
            source: side(&file.source),
        });
    }
    git_attributes::judge(&changes, &policies.file_globs())
}

/// Computes the desired review state. See the module docs for every rule.
///
/// Takes the inputs by value so each file's bytes are freed as soon as they are parsed: for a
/// large file the two value trees and the two texts would otherwise be held at once.
pub fn compute_desired_state(inputs: ReviewInputs) -> DesiredOutcome {
    compute_desired_state_with_budget(inputs, CelBudget::default())
}

/// [`compute_desired_state`] with the CEL work of the run bounded by `cel_budget` instead of
/// the default: every file some rule could not be evaluated on, once the budget was spent,
/// is `assent/undecidable` (subject `<path>#`) naming those rules.
pub fn compute_desired_state_with_budget(
    inputs: ReviewInputs,
    cel_budget: CelBudget,
) -> DesiredOutcome {
    let ReviewInputs {
        policy_files,
        policy_problems,
        changed_files,
        self_edit_sides,
        mr,
        limits,
    } = inputs;
    let policy_digest = PolicySet::digest(&policy_files);
    let mut builtins = Vec::new();
    // Undecidable reasons per subject, merged into one finding each.
    let mut undecidable: BTreeMap<String, Vec<Reason>> = BTreeMap::new();

    let files = change_set(changed_files, &mut undecidable);
    let self_edited = self_edited_paths(&files);
    for path in &self_edited {
        let sides = self_edit_sides.get(*path);
        builtins.push(self_edit_finding(path, sides));
        self_edit_unreadable(path, sides, &mut undecidable);
    }
    let any_self_edit = !self_edited.is_empty();
    let central_read = policy_problems.is_empty();
    let central = !central_read
        || policy_files
            .iter()
            .any(|f| f.path.starts_with(CENTRAL_POLICY_PREFIX));
    let mut repair_owners = None;
    let policies = match load_policies(&policy_files, policy_problems) {
        Ok(set) => Some(set),
        Err(problems) => {
            repair_owners = central_read
                .then(|| central_clash_repair(&policy_files, &files))
                .flatten();
            builtins.push(match repair_owners {
                Some(_) => policy_repair_finding(&problems),
                None => policy_error_finding(&problems, central),
            });
            None
        }
    };

    let changes = match &policies {
        Some(policies) => {
            let paths = renames::path_changes(files);
            builtins.extend(attributes_findings(policies, &paths, &mut undecidable));
            judge_files(policies, paths, &limits, &mut undecidable, &mut builtins)
        }
        None => Vec::new(),
    };
    let judged = match &policies {
        Some(policies) => judge_changes(policies, &changes, &mr, cel_budget, &mut undecidable),
        None => Judged::default(),
    };
    let mut findings = judged.findings;
    findings.extend(builtins);
    for (subject, reasons) in undecidable {
        findings.push(undecidable_finding(&subject, &reasons));
    }
    DesiredOutcome {
        desired: DesiredState::new(findings)
            .with_assenters(assenters(policies.as_ref(), any_self_edit, repair_owners))
            .with_members(judged.members)
            .with_sites(judged.sites),
        policy_digest,
        changes,
        evaluation_failures: judged.failures,
    }
}

/// The changed files, in an order that does not depend on the input's; an incomplete change
/// set is no file and a reason the merge request is undecidable.
fn change_set(
    changed_files: Result<Vec<ChangedFileInput>, String>,
    undecidable: &mut BTreeMap<String, Vec<Reason>>,
) -> Vec<ChangedFileInput> {
    let mut files = match changed_files {
        Ok(files) => files,
        Err(reason) => {
            undecidable
                .entry(MERGE_REQUEST_SUBJECT.to_owned())
                .or_default()
                .push(Reason {
                    detail: format!("the change set is incomplete: {reason}"),
                    markdown: format!("the change set is incomplete: {}", inert::code(&reason)),
                });
            Vec::new()
        }
    };
    files.sort_by(|a, b| (&a.new_path, &a.old_path).cmp(&(&b.new_path, &b.old_path)));
    files
}

/// Every path under `.assent/` a changed file has on either side, sorted, once each.
fn self_edited_paths(files: &[ChangedFileInput]) -> Vec<&str> {
    let mut paths: Vec<&str> = files
        .iter()
        .flat_map(|f| [f.old_path.as_str(), f.new_path.as_str()])
        .filter(|p| is_assent_path(p))
        .collect();
    paths.sort_unstable();
    paths.dedup();
    paths
}

/// The target's policies, or every problem that keeps them from loading (the files' own and
/// `policy_problems`, reads that failed).
fn load_policies(
    policy_files: &[PolicyFile],
    policy_problems: Vec<String>,
) -> Result<PolicySet, Vec<String>> {
    match (PolicySet::load(policy_files), policy_problems.is_empty()) {
        (Ok(set), true) => Ok(set),
        (loaded, _) => {
            let mut problems = policy_problems;
            problems.extend(loaded.err().into_iter().flatten().map(|p| p.to_string()));
            Err(problems)
        }
    }
}

/// The policy owners of a merge request judged as the repair of a clash with the central
/// policy project (docs/policies.md, "When the central project clashes with a project's
/// own"), or `None` when it is not one: the project's own policies at the target load alone,
/// the central project's load alone (so the two only clash together, a rule id both define),
/// and the merge request changes nothing outside `.assent/` (so nothing is left for rules
/// that do not load to judge). Its own policies loading beside the central set is what the
/// source-side check demands (`assent/policy-broken` otherwise). The owners are the ones the
/// project's own policies declare, else the central project's, else the default: never a
/// wider set because the policies are broken.
fn central_clash_repair(
    policy_files: &[PolicyFile],
    files: &[ChangedFileInput],
) -> Option<Assenters> {
    let (central, own): (Vec<PolicyFile>, Vec<PolicyFile>) = policy_files
        .iter()
        .cloned()
        .partition(|f| f.path.starts_with(CENTRAL_POLICY_PREFIX));
    let only_assent = !files.is_empty()
        && files
            .iter()
            .all(|f| is_assent_path(&f.old_path) && is_assent_path(&f.new_path));
    if central.is_empty() || !only_assent {
        return None;
    }
    let own = PolicySet::load(&own).ok()?;
    let central = PolicySet::load(&central).ok()?;
    Some(
        own.declared_policy_owners()
            .or(central.declared_policy_owners())
            .cloned()
            .unwrap_or_else(Assenters::default_policy_owners),
    )
}

/// The changes of every governed file some rule could judge, sorted by (file, pointer, kind).
fn judge_files(
    policies: &PolicySet,
    files: Vec<ChangedFileInput>,
    limits: &Limits,
    undecidable: &mut BTreeMap<String, Vec<Reason>>,
    builtins: &mut Vec<Finding>,
) -> Vec<Change> {
    let mut changes = Vec::new();
    // One bound for the whole run, not one per file: the memory of the judged values is what
    // it caps, and a merge request can change many files.
    let mut descendant_values = DescendantValues {
        limit: limits.max_nodes.saturating_mul(DESCENDANT_VALUES_PER_NODE),
        spent: 0,
    };
    for file in files {
        judge_file(
            policies,
            file,
            limits,
            &mut descendant_values,
            &mut changes,
            undecidable,
            builtins,
        );
    }
    changes.sort_by(|a, b| (&a.file, &a.pointer, a.kind).cmp(&(&b.file, &b.pointer, b.kind)));
    changes.dedup();
    changes
}

/// What the policies' rules said of the changes.
#[derive(Default)]
struct Judged {
    /// Their findings, grouped where a rule fired more than its threshold.
    findings: Vec<Finding>,
    /// Each grouped finding's members.
    members: BTreeMap<Slot, Vec<MemberFinding>>,
    /// Where each finding's value sits; a grouped finding's is its first member's. Kept
    /// beside the findings, never in them: lines are presentation only
    /// (docs/contract.md#lines).
    sites: BTreeMap<Slot, FindingSite>,
    /// Each rule that could not be judged on a change or a file, sorted.
    failures: Vec<EvaluationFailure>,
}

/// Evaluates every rule on `changes` within `cel_budget` and groups the findings; a file some
/// rule could not be evaluated on before the budget was spent is undecidable.
fn judge_changes(
    policies: &PolicySet,
    changes: &[Change],
    mr: &MrContext,
    cel_budget: CelBudget,
    undecidable: &mut BTreeMap<String, Vec<Reason>>,
) -> Judged {
    let evaluation = policies.evaluate_within(changes, mr, cel_budget);
    let mut failures = Vec::new();
    for (file, rules) in &evaluation.unevaluated {
        undecidable
            .entry(subject_of(file))
            .or_default()
            .push(budget_spent_reason(file, rules, evaluation.budget.limit()));
        failures.extend(rules.iter().map(|rule| EvaluationFailure {
            rule: rule.clone(),
            subject: subject_of(file),
            reason: format!(
                "the run's CEL budget ({:e} steps) was spent before it could be evaluated",
                evaluation.budget.limit()
            ),
        }));
    }
    failures.extend(evaluation.failures);
    failures.sort();
    let mut sites: BTreeMap<Slot, FindingSite> = BTreeMap::new();
    let fired = evaluation
        .findings
        .into_iter()
        .zip(evaluation.sources)
        .map(|(finding, index)| {
            let change = &changes[index];
            let site = FindingSite::of_change(change);
            let rule = &finding.slot.rule;
            for subject in [
                bounded_subject(&finding.slot.subject).as_ref(),
                GROUP_SUBJECT,
            ] {
                sites
                    .entry(Slot {
                        rule: rule.clone(),
                        subject: subject.to_owned(),
                    })
                    .or_insert_with(|| site.clone());
            }
            Fired {
                finding,
                kind: change.kind,
                old: change.old.as_ref(),
                new: change.new.as_ref(),
            }
        })
        .collect();
    let grouped = group_fired(fired, |rule| policies.group_above(rule));
    Judged {
        findings: grouped.findings,
        members: grouped.members,
        sites,
        failures,
    }
}

/// Who may assent, by rule id: the policies' narrowing, and for a run that changes policies
/// the policy owners for `assent/self-edit` (the default ones when the policies do not load
/// and so name none).
fn assenters(
    policies: Option<&PolicySet>,
    any_self_edit: bool,
    repair_owners: Option<Assenters>,
) -> BTreeMap<String, Assenters> {
    let mut assenters = policies
        .map(PolicySet::assenters_by_rule)
        .unwrap_or_default();
    if any_self_edit {
        let owners = match (policies, repair_owners) {
            (Some(policies), _) => policies.policy_owners(),
            (None, Some(owners)) => owners,
            (None, None) => Assenters::default_policy_owners(),
        };
        assenters.insert(RULE_SELF_EDIT.to_owned(), owners);
    }
    assenters
}

/// From this many bytes in a file's two sides together, they are parsed in parallel. Below it
/// a thread costs more than it saves.
const PARALLEL_PARSE_BYTES: usize = 1 << 20;

/// The size of one side's content (0 when absent or unreadable).
fn side_bytes(content: &FileContent) -> usize {
    match content {
        FileContent::Present(bytes) => bytes.len(),
        _ => 0,
    }
}

/// Parses and diffs one file whose sides may be governed.
fn judge_file(
    policies: &PolicySet,
    file: ChangedFileInput,
    limits: &Limits,
    descendant_values: &mut DescendantValues,
    changes: &mut Vec<Change>,
    undecidable: &mut BTreeMap<String, Vec<Reason>>,
    builtins: &mut Vec<Finding>,
) {
    let ChangedFileInput {
        old_path,
        new_path,
        base,
        source,
        ..
    } = file;
    let (old_path, new_path) = (old_path.as_str(), new_path.as_str());
    let old_governed = is_governed(policies, old_path);
    let new_governed = is_governed(policies, new_path);
    // The path the changes are reported under, and which sides take part.
    let (path, use_base, use_source) = match (old_governed, new_governed) {
        (false, false) => return,
        (_, true) => (new_path, old_governed, true),
        (true, false) => (old_path, true, false),
    };
    let subject = subject_of(path);
    let base = Side {
        used: use_base,
        name: "base",
        path: old_path,
        content: base,
    };
    let source = Side {
        used: use_source,
        name: "source",
        path: new_path,
        content: source,
    };
    let unreadable: Vec<Reason> = [&base, &source]
        .into_iter()
        .filter_map(Side::unreadable)
        .collect();
    if !unreadable.is_empty() {
        undecidable.entry(subject).or_default().extend(unreadable);
        return;
    }
    let (old, new) = match parse_sides(base, source, limits) {
        Ok(trees) => trees,
        Err(errors) => {
            builtins.push(parse_error_finding(&subject, &errors));
            return;
        }
    };
    let (old, new) = emptied_as_absent(old, new, old_path, new_path);
    let identity = |pointer: &str| policies.identity_for(path, pointer);
    let could_judge = policies.could_judge(path);
    let descendants = Descendants {
        wanted: &could_judge,
        max_values: descendant_values.limit - descendant_values.spent,
        filter_reported: true,
    };
    let diff = diff_documents_with(path, old.as_ref(), new.as_ref(), &identity, &descendants);
    descendant_values.spent += diff.descendant_values;
    if diff.descendants_cut {
        undecidable
            .entry(subject.clone())
            .or_default()
            .push(descendants_cut_reason(path, descendant_values));
    }
    changes.extend(diff.changes);
    changes.extend(diff.descendants);
    let paths = SidePaths {
        reported: path,
        base: old_path,
        source: new_path,
    };
    for list in &diff.ambiguities {
        builtins.push(ambiguous_identity_finding(&paths, list));
    }
}

/// One side of a changed file: whether it takes part, its SHA's name, its path there and its
/// content.
struct Side<'a> {
    used: bool,
    name: &'static str,
    path: &'a str,
    content: FileContent,
}

impl Side<'_> {
    /// Why a side that takes part could not be read, if it could not.
    fn unreadable(&self) -> Option<Reason> {
        let (true, FileContent::Unreadable(reason)) = (self.used, &self.content) else {
            return None;
        };
        let (side, side_path) = (self.name, self.path);
        Some(Reason {
            detail: format!("`{side_path}` could not be read at the {side} SHA: {reason}"),
            markdown: format!(
                "{} could not be read at the {side} SHA: {}",
                inert::code(side_path),
                inert::code(reason)
            ),
        })
    }

    /// The side's tree, `None` when it takes no part, is absent or is no format assent
    /// reads; consumes the content, so its bytes are freed once its tree is built.
    fn parse(self, limits: &Limits) -> Option<Result<Node, ParseError>> {
        let FileContent::Present(bytes) = self.content else {
            return None;
        };
        if !self.used {
            return None;
        }
        let format = format_for_path(self.path)?;
        Some(parse_document(self.path, format, &bytes, limits))
    }
}

/// Both sides' trees, or every parse error (`file:line: message (at the base SHA)`).
fn parse_sides(
    base: Side<'_>,
    source: Side<'_>,
    limits: &Limits,
) -> Result<(Option<Node>, Option<Node>), Vec<String>> {
    let parallel = side_bytes(&base.content) + side_bytes(&source.content) >= PARALLEL_PARSE_BYTES;
    let (old, new) = if parallel {
        // Parsing is most of a large file's cost and the sides are independent: one side on a
        // scoped thread halves the wait. The result is the same either way.
        std::thread::scope(|scope| {
            let old = scope.spawn(|| base.parse(limits));
            let new = source.parse(limits);
            let old = old
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (old, new)
        })
    } else {
        (base.parse(limits), source.parse(limits))
    };
    let mut errors = Vec::new();
    let mut tree = |parsed: Option<Result<Node, ParseError>>, side: &str| match parsed? {
        Ok(tree) => Some(tree),
        Err(e) => {
            // `file:line: message`, as `ParseError` displays itself.
            errors.push(format!("{e} (at the {side} SHA)"));
            None
        }
    };
    let old = tree(old, "base");
    let new = tree(new, "source");
    if errors.is_empty() {
        Ok((old, new))
    } else {
        Err(errors)
    }
}

/// An emptied file holds nothing: judged as deleted (and a filled-in empty file as added), so
/// its whole-file rules see it as they see a deletion.
fn emptied_as_absent(
    old: Option<Node>,
    new: Option<Node>,
    old_path: &str,
    new_path: &str,
) -> (Option<Node>, Option<Node>) {
    match (old, new) {
        (Some(old), Some(new))
            if holds_nothing(&old, old_path) && !holds_nothing(&new, new_path) =>
        {
            (None, Some(new))
        }
        (Some(old), Some(new))
            if !holds_nothing(&old, old_path) && holds_nothing(&new, new_path) =>
        {
            (Some(old), None)
        }
        sides => sides,
    }
}

/// The values the descendants of a run's changes may carry together, in all its files, per
/// node the parser accepts in one document ([`Limits::max_nodes`]): as many as both sides of
/// one file can hold. A registry is shallow, so each value is copied into few descendants (a
/// 150,000-topic list set to `null` copies each topic once, into its `topic-deleted` change,
/// and each field once: 1.2 million values of the 2 million); a deep document whose every
/// level some rule matches would copy its values once per level. Every judged value costs
/// memory until the findings exist, so the bound is the run's, not each file's.
const DESCENDANT_VALUES_PER_NODE: usize = 2;

/// The run's bound on the values descendants carry, and what the files judged so far spent.
struct DescendantValues {
    limit: usize,
    spent: usize,
}

/// Whether a parsed side holds nothing: `null` (an empty or blank YAML file, `null`, `~`), or
/// a TOML file without a key (TOML has no `null`; its empty file is the empty table).
fn holds_nothing(document: &Node, path: &str) -> bool {
    match document {
        Node::Null(_) => true,
        Node::Object(entries, _) => {
            entries.is_empty() && format_for_path(path) == Some(Format::Toml)
        }
        _ => false,
    }
}

/// Names the limit only, so the finding keeps its occurrence while the file stays too large.
fn descendants_cut_reason(file: &str, values: &DescendantValues) -> Reason {
    let (limit, spent) = (values.limit, values.spent);
    let text = |file: &str| {
        if spent == 0 {
            format!(
                "the values inside what {file} deletes, adds or replaces are more than the \
                 {limit} assent judges one by one against the rules written on them: split the \
                 merge request"
            )
        } else {
            format!(
                "the values inside what {file} deletes, adds or replaces are more than the \
                 {} left of the {limit} assent judges one by one against the rules written on \
                 them in one merge request (the files before it in path order took {spent}): \
                 split the merge request",
                limit - spent
            )
        }
    };
    Reason {
        detail: text(&format!("`{file}`")),
        markdown: text(&inert::code(file)),
    }
}

/// The paths a file has on each side of the change, and the one its findings are under.
struct SidePaths<'a> {
    reported: &'a str,
    base: &'a str,
    source: &'a str,
}

/// Why a subject is undecidable: `detail` is hashed into the occurrence (its wording is kept
/// so occurrences stay stable), `markdown` is the message line, contributor text inert.
#[derive(Debug)]
struct Reason {
    detail: String,
    markdown: String,
}

fn subject_of(path: &str) -> String {
    format!("{path}#")
}

fn builtin(rule: &str, subject: &str, details: Option<Value>, message: String) -> Finding {
    Finding {
        slot: Slot {
            rule: rule.to_owned(),
            subject: subject.to_owned(),
        },
        effect: Effect::Block,
        occurrence: Occurrence::of(rule, subject, ChangeKind::Modify, None, details.as_ref()),
        message,
    }
}

/// The self-edit challenge of `path`, its occurrence covering the path at the base and at
/// the source (`sides`; the `self_edit` module says how).
fn self_edit_finding(path: &str, sides: Option<&SelfEditSides>) -> Finding {
    let subject = subject_of(path);
    let (old, new) = match sides {
        Some(sides) => sides.occurrence_values(),
        None => (json!({ "unread": true }), json!({ "unread": true })),
    };
    Finding {
        slot: Slot {
            rule: RULE_SELF_EDIT.to_owned(),
            subject: subject.clone(),
        },
        effect: Effect::Challenge,
        occurrence: Occurrence::of(
            RULE_SELF_EDIT,
            &subject,
            ChangeKind::Modify,
            Some(&old),
            Some(&new),
        ),
        // The first line is what a reviewer's notification shows: short, the rest below.
        message: format!(
            "Changing {} needs a policy owner's assent: it is part of the gate's own \
             configuration.\n\nA merge \
             request is never judged under policies it edits itself: its other changes are \
             judged by the target branch's policies, and this change needs a policy owner's \
             assent. A policy owner other than the merge request's author (by default a \
             Maintainer or Owner of the project; the target branch's `policy_owners` may name \
             others) reviews it, with `assent lint` and `assent test`, and resolves this thread. \
             The assent is to the path as it is now: any later change of it asks again. \
             Later merge requests are judged under the new policies once it is merged.",
            inert::code(path)
        ),
    }
}

/// A self-edited path a side of which could not be read (or was not read at all) is
/// undecidable: its assent could not be tied to what it is.
fn self_edit_unreadable(
    path: &str,
    sides: Option<&SelfEditSides>,
    undecidable: &mut BTreeMap<String, Vec<Reason>>,
) {
    let details = match sides {
        Some(sides) => sides.unreadable_reasons(path),
        None => vec![format!(
            "`{path}` was not read at the base and source SHAs, so an assent to it could not \
             be tied to what it is"
        )],
    };
    for detail in details {
        undecidable
            .entry(subject_of(path))
            .or_default()
            .push(Reason {
                markdown: inert::code(&detail),
                detail,
            });
    }
}

fn policy_error_finding(problems: &[String], central: bool) -> Finding {
    let list: String = problems
        .iter()
        .map(|p| format!("\n- {}", inert::code(p)))
        .collect();
    let message = if central {
        format!(
            "The policies this merge request is judged by (`.assent/policies` on the target \
             branch and the central policy project's, whose files are named `central:<project>/…`) \
             do not load or cannot be read, so this merge request cannot be judged and assent \
             blocks it. Fix each where it is named (run `assent lint --policy-project-dir` to see \
             every problem of both sets); when each set loads alone and only a rule id both \
             define clashes, a merge request that changes only `.assent/` so that they load \
             together is judged as the repair, with a policy owner's assent:{list}"
        )
    } else {
        format!(
            "The policies in `.assent/policies` on the target branch do not load, so this merge \
             request cannot be judged and assent blocks it. Fix them on the target branch (run \
             `assent lint` to see every problem):{list}"
        )
    };
    builtin(
        RULE_POLICY_ERROR,
        POLICY_ERROR_SUBJECT,
        Some(json!(problems)),
        message,
    )
}

/// The `comment` of a merge request judged as the repair of a clash with the central policy
/// project: what does not load, and that its changes under `.assent/` need a policy owner.
fn policy_repair_finding(problems: &[String]) -> Finding {
    let list: String = problems
        .iter()
        .map(|p| format!("\n- {}", inert::code(p)))
        .collect();
    Finding {
        effect: Effect::Comment,
        ..builtin(
            RULE_POLICY_REPAIR,
            POLICY_ERROR_SUBJECT,
            Some(json!(problems)),
            format!(
                "The target branch's policies load alone, and so do the central policy \
                 project's, but not together, so every merge request that changes anything \
                 else is blocked with `assent/policy-error`. This merge request changes only \
                 `.assent/`: it is judged as their repair. Its own policies must load beside \
                 the central set and pass their tests, and each change needs a policy owner's \
                 assent. What does not load now:{list}"
            ),
        )
    }
}

fn undecidable_finding(subject: &str, reasons: &[Reason]) -> Finding {
    let list: String = reasons
        .iter()
        .map(|r| format!("\n- {}", r.markdown))
        .collect();
    let details: Vec<&str> = reasons.iter().map(|r| r.detail.as_str()).collect();
    builtin(
        RULE_UNDECIDABLE,
        subject,
        Some(json!(details)),
        format!(
            "assent cannot see everything this merge request changes, so it blocks rather than \
             guess. Rerun the pipeline once the cause is gone, or split the merge request:{list}"
        ),
    )
}

/// Names the rules and the limit only (no counts), so the finding keeps its occurrence while
/// the same rules stay unjudged.
fn budget_spent_reason(file: &str, rules: &BTreeSet<String>, limit: f64) -> Reason {
    let names: Vec<String> = rules.iter().map(|r| format!("`{r}`")).collect();
    let text = |file: &str| {
        format!(
            "the run's CEL budget ({limit:e} steps) was spent before rule(s) {} could be evaluated \
             on every change of {file}: make the predicates cheaper, narrow their \
             `match.pointer`, or split the merge request",
            names.join(", ")
        )
    };
    Reason {
        detail: text(&format!("`{file}`")),
        markdown: text(&inert::code(file)),
    }
}

fn parse_error_finding(subject: &str, errors: &[String]) -> Finding {
    let list: String = errors
        .iter()
        .map(|e| format!("\n- {}", inert::code(e)))
        .collect();
    builtin(
        RULE_PARSE_ERROR,
        subject,
        Some(json!(errors)),
        // The first error leads the first line, which is what the summary's row shows.
        format!(
            "Does not parse: {}{}. A governed file that does not parse cannot be judged, so \
             assent blocks the merge request. Fix the file:{list}",
            errors.first().map(|e| inert::code(e)).unwrap_or_default(),
            match errors.len() {
                0 | 1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            }
        ),
    )
}

/// At most this many duplicated values, and entries per value or unkeyed entries, are
/// listed per side; the rest is counted. Keeps a hostile file from producing a note beyond
/// GitLab's size limit.
const MAX_LISTED: usize = 10;

fn ambiguous_identity_finding(paths: &SidePaths<'_>, list: &AmbiguousList) -> Finding {
    let field = code_span(&list.field);
    let mut problems = String::new();
    for (side, path, ambiguity) in [
        ("base", paths.base, &list.base),
        ("source", paths.source, &list.source),
    ] {
        let Some(ambiguity) = ambiguity else {
            continue;
        };
        for duplicate in ambiguity.duplicates.iter().take(MAX_LISTED) {
            problems.push_str(&format!(
                "\n- at the {side} SHA: {} is the {field} of {} entries: {}",
                code_span(&duplicate.value),
                duplicate.entries.len(),
                entry_locations(path, &duplicate.entries),
            ));
        }
        if ambiguity.duplicates.len() > MAX_LISTED {
            problems.push_str(&format!(
                "\n- at the {side} SHA: {} more duplicated values",
                ambiguity.duplicates.len() - MAX_LISTED
            ));
        }
        for (reason, what) in [
            (Unkeyed::MissingField, format!("missing key {field}")),
            (
                Unkeyed::NotAMap,
                format!("not a map, so missing key {field}"),
            ),
            (
                Unkeyed::NotStringOrInteger,
                format!("{field} is neither a string nor an integer"),
            ),
        ] {
            let entries: Vec<EntryAt> = ambiguity
                .unkeyed
                .iter()
                .filter(|u| u.reason == reason)
                .map(|u| u.entry)
                .collect();
            if !entries.is_empty() {
                problems.push_str(&format!(
                    "\n- at the {side} SHA: {what}: {}",
                    entry_locations(path, &entries)
                ));
            }
        }
    }
    let base_note = if list.base.is_some() {
        " The ambiguity at the base SHA is already on the target branch: a merge request that \
         removes it is blocked as well (its base stays ambiguous), so a maintainer reviews that \
         fix and merges it outside the gate."
    } else {
        ""
    };
    let subject = format!("{}#{}", paths.reported, list.pointer);
    let pointer = if list.pointer.is_empty() {
        "at the root".to_owned()
    } else {
        code_span(&list.pointer)
    };
    builtin(
        RULE_AMBIGUOUS_IDENTITY,
        &subject,
        Some(json!({
            "field": list.field,
            "base": list.base.as_ref().map(ambiguity_fingerprint),
            "source": list.source.as_ref().map(ambiguity_fingerprint),
        })),
        format!(
            "The entries of the list {pointer} in {} cannot be told apart by {field}, so assent \
             blocks rather than compare them by position. No change inside this list is judged \
             until every entry has a {field} no other entry has:{problems}\n\nGive each entry its own {field} (remove a copied entry, or rename \
             it).{base_note}",
            code_span(paths.reported),
        ),
    )
}

/// What of one side's ambiguity enters the occurrence: the duplicated values (sorted, as
/// the diff gives them) and how many entries have no usable identity. Not lines or positions,
/// so a push that only moves entries keeps the thread.
fn ambiguity_fingerprint(ambiguity: &SideAmbiguity) -> Value {
    let duplicated: Vec<&str> = ambiguity
        .duplicates
        .iter()
        .map(|d| d.value.as_str())
        .collect();
    json!({"duplicated": duplicated, "unkeyed": ambiguity.unkeyed.len()})
}

/// `` `path:line` `` for each entry (at most [`MAX_LISTED`]), or the entry's position when its
/// line is unknown.
fn entry_locations(path: &str, entries: &[EntryAt]) -> String {
    let mut listed: Vec<String> = entries
        .iter()
        .take(MAX_LISTED)
        .map(|entry| match entry.line {
            Some(line) => code_span(&format!("{path}:{line}")),
            None => format!(
                "{} entry {} (line unknown)",
                code_span(path),
                entry.index + 1
            ),
        })
        .collect();
    if entries.len() > MAX_LISTED {
        listed.push(format!("and {} more", entries.len() - MAX_LISTED));
    }
    listed.join(", ")
}

/// Contributor text (a value, a path) in an ambiguity message: shortened to 120 characters,
/// then rendered inert by the one shared helper (docs/contract.md#inert-text).
fn code_span(text: &str) -> String {
    const MAX_CHARS: usize = 120;
    match text.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => crate::inert::code(&format!("{}…", &text[..cut])),
        None => crate::inert::code(text),
    }
}

mod renames;
mod self_edit;
#[cfg(test)]
mod spelling_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// A reviewer's notification shows the first line of a thread's message: the self-edit
    /// message says there what is needed, in one short line, and the detail below it.
    #[test]
    fn the_self_edit_message_starts_with_one_short_line() {
        let finding = self_edit_finding(".assent/policies/topics.yaml", None);
        let (first, rest) = finding.message.split_once("\n\n").expect("a first line");
        assert_eq!(
            first,
            "Changing `.assent/policies/topics.yaml` needs a policy owner's assent: it is part of the gate's own configuration."
        );
        assert!(first.chars().count() <= 120, "{first}");
        assert!(rest.contains("resolves this thread"), "{rest}");
    }
    use crate::model::Role;
    use sha2::Digest;

    const POLICY: &str = r#"apiVersion: assent/v1
kind: Policy
identities:
  "topics/*.yaml": { "/topics": name }
rules:
  - id: retention-shrink
    match:
      files: ["topics/*.yaml"]
      pointer: "/topics/*/retention_days"
      kinds: [modify]
    when: "int(new) < int(old)"
    effect: challenge
    message: "Retention of {{ entry }} shrinks from {{ old }} to {{ new }} days."
  - id: topic-deleted
    match:
      files: ["topics/*.yaml"]
      pointer: "/topics/*"
      kinds: [delete]
    effect: block
  - id: file-deleted
    match:
      files: ["topics/*.yaml", "archive/*.yaml"]
      pointer: ""
      kinds: [delete]
    effect: block
  - id: archived
    match:
      files: ["archive/*.yaml"]
      pointer: ""
      kinds: [add]
    effect: comment
"#;

    const ORDERS_30: &str = "topics:\n  - name: orders.events.v1\n    retention_days: 30\n  - name: orders.audit.v1\n    retention_days: 90\n";
    const ORDERS_7: &str = "topics:\n  - name: orders.audit.v1\n    retention_days: 90\n  - name: orders.events.v1\n    retention_days: 7\n";

    fn policies() -> Vec<PolicyFile> {
        vec![PolicyFile {
            path: ".assent/policies/topics.yaml".into(),
            bytes: POLICY.as_bytes().to_vec(),
        }]
    }

    fn present(text: &str) -> FileContent {
        FileContent::Present(text.as_bytes().to_vec())
    }

    fn file(path: &str, base: FileContent, source: FileContent) -> ChangedFileInput {
        ChangedFileInput {
            old_path: path.into(),
            new_path: path.into(),
            base,
            source,
        }
    }

    fn inputs(files: Vec<ChangedFileInput>) -> ReviewInputs {
        ReviewInputs {
            policy_files: policies(),
            policy_problems: Vec::new(),
            self_edit_sides: self_edit_sides_of_contents(&files),
            changed_files: Ok(files),
            mr: MrContext::default(),
            limits: Limits::default(),
        }
    }

    fn slots(outcome: &DesiredOutcome) -> Vec<(String, String, Effect)> {
        outcome
            .desired
            .findings
            .iter()
            .map(|f| (f.slot.rule.clone(), f.slot.subject.clone(), f.effect))
            .collect()
    }

    fn slot(rule: &str, subject: &str, effect: Effect) -> (String, String, Effect) {
        (rule.into(), subject.into(), effect)
    }

    fn finding<'a>(outcome: &'a DesiredOutcome, rule: &str) -> &'a Finding {
        outcome
            .desired
            .findings
            .iter()
            .find(|f| f.slot.rule == rule)
            .unwrap_or_else(|| panic!("no {rule} finding in {:?}", slots(outcome)))
    }

    #[test]
    fn policy_rules_judge_identity_keyed_changes() {
        let out = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_30),
            present(ORDERS_7),
        )]));
        assert_eq!(
            slots(&out),
            vec![slot(
                "retention-shrink",
                "topics/orders.yaml#/topics/orders.events.v1/retention_days",
                Effect::Challenge
            )]
        );
        assert_eq!(
            out.desired.findings[0].message,
            "Retention of `orders.events.v1` shrinks from `30` to `7` days."
        );
        assert_eq!(out.changes.len(), 1);
        assert_eq!(out.policy_digest, PolicySet::digest(&policies()));
    }

    /// A retention rule for topic registries in all three formats.
    const ANY_FORMAT_POLICY: &str = r#"apiVersion: assent/v1
kind: Policy
identities:
  "topics/*": { "/topics": name }
rules:
  - id: retention-shrink
    match:
      files: ["topics/*"]
      pointer: "/topics/*/retention_days"
    effect: challenge
  - id: topic-deleted
    match:
      files: ["topics/*"]
      pointer: "/topics/*"
      kinds: [delete]
    effect: block
"#;

    fn any_format(path: &str, base: &str, source: &str) -> DesiredOutcome {
        compute_desired_state(ReviewInputs {
            policy_files: vec![PolicyFile {
                path: ".assent/policies/any.yaml".into(),
                bytes: ANY_FORMAT_POLICY.as_bytes().to_vec(),
            }],
            ..inputs(vec![file(path, present(base), present(source))])
        })
    }

    fn site_of<'a>(outcome: &'a DesiredOutcome, rule: &str) -> &'a FindingSite {
        outcome
            .desired
            .site(&finding(outcome, rule).slot)
            .unwrap_or_else(|| panic!("no site for {rule}"))
    }

    #[test]
    fn findings_know_the_line_of_each_side_in_every_format() {
        let cases = [
            (
                "topics/a.yaml",
                "topics:\n  - name: t\n    retention_days: 30\n  - name: gone\n    retention_days: 1\n",
                "# moved down\ntopics:\n  - name: t\n\n    retention_days: 7\n",
                (Some(3), Some(5)),
                4,
            ),
            (
                "topics/a.json",
                "{\"topics\": [\n  {\"name\": \"t\",\n   \"retention_days\": 30},\n  {\"name\": \"gone\"}\n]}\n",
                "{\n\"topics\": [\n  {\"name\": \"t\",\n\n   \"retention_days\": 7}\n]}\n",
                (Some(3), Some(5)),
                4,
            ),
            (
                "topics/a.toml",
                "[[topics]]\nname = \"t\"\nretention_days = 30\n\n[[topics]]\nname = \"gone\"\n",
                "# moved\n[[topics]]\nname = \"t\"\n\nretention_days = 7\n",
                (Some(3), Some(5)),
                5,
            ),
        ];
        for (path, base, source, (old, new), deleted_line) in cases {
            let out = any_format(path, base, source);
            let shrink = Slot {
                rule: "retention-shrink".into(),
                subject: format!("{path}#/topics/t/retention_days"),
            };
            let site = out.desired.site(&shrink).expect("a site");
            assert_eq!(
                (site.file.as_str(), site.kind, site.whole_file),
                (path, ChangeKind::Modify, false)
            );
            assert_eq!((site.old_line, site.new_line), (old, new), "{path}");
            let deleted = site_of(&out, "topic-deleted");
            assert_eq!(
                (deleted.kind, deleted.old_line, deleted.new_line),
                (ChangeKind::Delete, Some(deleted_line), None),
                "{path}"
            );
            let change = out
                .changes
                .iter()
                .find(|c| c.pointer == "/topics/t/retention_days")
                .unwrap();
            assert_eq!((change.old_line, change.new_line), (old, new), "{path}");
        }
    }

    #[test]
    fn moving_a_line_leaves_every_slot_and_occurrence_as_it_was() {
        let base = "topics:\n  - name: t\n    retention_days: 30\n";
        let here = any_format(
            "topics/a.yaml",
            base,
            "topics:\n  - name: t\n    retention_days: 7\n",
        );
        let moved = any_format(
            "topics/a.yaml",
            base,
            "# a comment pushes everything down\n\ntopics:\n  - name: t\n\n    retention_days: 7\n",
        );
        assert_eq!(
            here.desired.findings, moved.desired.findings,
            "slots, occurrences, messages"
        );
        assert_ne!(
            site_of(&here, "retention-shrink").new_line,
            site_of(&moved, "retention-shrink").new_line,
            "the line did move"
        );
        let judged = |out: &DesiredOutcome| {
            let c = &out.changes[0];
            (
                c.file.clone(),
                c.pointer.clone(),
                c.kind,
                c.old.clone(),
                c.new.clone(),
            )
        };
        assert_eq!(judged(&here), judged(&moved));
    }

    #[test]
    fn a_nulled_list_of_many_topics_is_one_grouped_finding_placed_at_its_first_member() {
        let base: String = (0..1_000)
            .map(|i| format!("  - name: t{i:04}\n    retention_days: 30\n"))
            .collect();
        let out = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(&format!("topics:\n{base}")),
            present("topics: null\n"),
        )]));
        assert_eq!(
            slots(&out),
            vec![slot("topic-deleted", GROUP_SUBJECT, Effect::Block)]
        );
        let site = site_of(&out, "topic-deleted");
        assert_eq!(
            (site.kind, site.old_line, site.new_line),
            (ChangeKind::Delete, Some(2), None)
        );
        let deleted = out
            .changes
            .iter()
            .filter(|c| c.kind == ChangeKind::Delete)
            .count();
        assert_eq!(deleted, 1_000, "one delete per topic, nothing else copied");
    }

    /// `paths`, each a JSON file of 10 topics (5 values each) set to `{"topics": null}`, judged
    /// under one rule matching every delete, with the parser's node limit at `max_nodes`: each
    /// topic's deletes copy 12 values (every value copies its own subtree).
    fn every_delete_of_nulled_topics(paths: &[&str], max_nodes: usize) -> DesiredOutcome {
        const EVERY_DELETE: &str = r#"apiVersion: assent/v1
kind: Policy
identities:
  "cfg/*.json": { "/topics": name }
rules:
  - id: every-delete
    match: { files: ["cfg/*.json"], pointer: "/**", kinds: [delete] }
    effect: comment
"#;
        let topics: Vec<Value> = (0..10)
            .map(|i| json!({"name": format!("t{i}"), "x": {"y": {"z": 1}}}))
            .collect();
        let base = serde_json::to_vec(&json!({"topics": topics})).unwrap();
        let files = paths
            .iter()
            .map(|path| {
                file(
                    path,
                    FileContent::Present(base.clone()),
                    present("{\"topics\": null}"),
                )
            })
            .collect();
        compute_desired_state(ReviewInputs {
            policy_files: vec![PolicyFile {
                path: ".assent/policies/p.yaml".into(),
                bytes: EVERY_DELETE.as_bytes().to_vec(),
            }],
            limits: Limits {
                max_nodes,
                ..Limits::default()
            },
            ..inputs(files)
        })
    }

    #[test]
    fn descendants_past_the_copy_bound_make_the_file_undecidable_and_none_is_judged() {
        // 120 values to copy, more than twice the document's 52.
        let judge = |max_nodes: usize| every_delete_of_nulled_topics(&["cfg/a.json"], max_nodes);
        let out = judge(52);
        assert_eq!(
            slots(&out),
            vec![slot(RULE_UNDECIDABLE, "cfg/a.json#", Effect::Block)]
        );
        assert!(
            finding(&out, RULE_UNDECIDABLE)
                .message
                .contains("more than the 104 assent judges one by one"),
            "{}",
            finding(&out, RULE_UNDECIDABLE).message
        );
        // With room for them, each value is a delete of its own, grouped.
        let out = judge(60);
        assert_eq!(
            slots(&out),
            vec![slot("every-delete", GROUP_SUBJECT, Effect::Comment)]
        );
        // The 50 deletes; `/topics` itself (a modify, list to `null`) matches no rule and is
        // not copied at all.
        assert_eq!(out.changes.len(), 50);
        assert!(out.changes.iter().all(|c| c.kind == ChangeKind::Delete));
    }

    #[test]
    fn the_bound_on_judged_values_is_the_runs_not_each_files() {
        // Each file's deletes carry 120 values; the files are given out of path order.
        let judge = |max_nodes: usize| {
            every_delete_of_nulled_topics(&["cfg/b.json", "cfg/a.json"], max_nodes)
        };
        // Room for one file: the first in path order is judged, the second is undecidable
        // and says what the first took.
        let out = judge(60);
        assert_eq!(
            slots(&out),
            vec![
                slot(RULE_UNDECIDABLE, "cfg/b.json#", Effect::Block),
                slot("every-delete", GROUP_SUBJECT, Effect::Comment),
            ]
        );
        assert!(
            out.changes.iter().all(|c| c.file == "cfg/a.json") && out.changes.len() == 50,
            "{:?}",
            out.changes
        );
        let message = &finding(&out, RULE_UNDECIDABLE).message;
        assert!(
            message.contains("more than the 0 left of the 120 assent judges one by one")
                && message.contains("took 120"),
            "{message}"
        );
        // Room for both.
        let out = judge(120);
        assert_eq!(
            slots(&out),
            vec![slot("every-delete", GROUP_SUBJECT, Effect::Comment)]
        );
        assert_eq!(out.changes.len(), 100);
    }

    #[test]
    fn a_grouped_finding_has_its_first_members_site_and_built_ins_have_none() {
        let many: String = (0..30)
            .map(|i| format!("  - name: t{i:02}\n    retention_days: 7\n"))
            .collect();
        let base: String = (0..30)
            .map(|i| format!("  - name: t{i:02}\n    retention_days: 30\n"))
            .collect();
        let out = any_format(
            "topics/a.yaml",
            &format!("topics:\n{base}"),
            &format!("topics:\n{many}"),
        );
        let grouped = finding(&out, "retention-shrink");
        assert_eq!(grouped.slot.subject, GROUP_SUBJECT);
        assert_eq!(site_of(&out, "retention-shrink").new_line, Some(3));
        let members = out.desired.members_of(&grouped.slot);
        assert_eq!(members.len(), 30);
        assert_eq!(
            out.desired.sites.len(),
            31,
            "the group's and each member's own"
        );
        let last = out.desired.site(&members[29].finding.slot).unwrap();
        assert_eq!(last.new_line, Some(3 + 2 * 29), "a member's own line");

        let broken = any_format("topics/a.yaml", "topics: []\n", "topics: [\n");
        let parse_error = finding(&broken, RULE_PARSE_ERROR);
        assert_eq!(broken.desired.site(&parse_error.slot), None);
    }

    #[test]
    fn ungoverned_files_are_ignored_even_when_unparseable_or_unreadable() {
        let out = compute_desired_state(inputs(vec![
            file("README.md", present("# hi"), present("# ho")),
            file("services/a.yaml", present("a: ["), present("a: 1")),
            file(
                "services/b.yaml",
                FileContent::Unreadable("boom".into()),
                present("a: 1"),
            ),
            file("topics/notes.txt", present("x"), present("y")),
        ]));
        assert!(out.desired.findings.is_empty(), "{:?}", slots(&out));
        assert!(out.changes.is_empty());
    }

    #[test]
    fn policy_errors_give_one_block_finding_listing_every_problem() {
        let mut inp = inputs(vec![
            file("topics/orders.yaml", present(ORDERS_30), present(ORDERS_7)),
            file(".assent/notes.md", FileContent::Absent, present("x")),
        ]);
        inp.policy_files = vec![
            PolicyFile {
                path: ".assent/policies/a.yaml".into(),
                bytes: b"apiVersion: assent/v1\nkind: Policy\nrules: []\n".to_vec(),
            },
            PolicyFile {
                path: ".assent/policies/b.yaml".into(),
                bytes: b"apiVersion: assent/v2\nkind: Policy\nrules:\n  - id: x\n    match: {files: [a]}\n    effect: nope\n".to_vec(),
            },
        ];
        let out = compute_desired_state(inp.clone());
        assert_eq!(
            slots(&out),
            vec![
                slot(RULE_POLICY_ERROR, POLICY_ERROR_SUBJECT, Effect::Block),
                slot(RULE_SELF_EDIT, ".assent/notes.md#", Effect::Challenge),
            ],
            "no policy rule is evaluated, other built-ins still apply"
        );
        assert!(out.changes.is_empty());
        let f = finding(&out, RULE_POLICY_ERROR);
        assert!(
            f.message
                .contains(".assent/policies/a.yaml:3: rules must not be empty"),
            "{}",
            f.message
        );
        assert!(
            f.message
                .contains(".assent/policies/b.yaml:1: apiVersion must be"),
            "{}",
            f.message
        );
        assert!(
            f.message
                .contains(".assent/policies/b.yaml:6: rule `x`: unknown effect"),
            "{}",
            f.message
        );

        // The occurrence follows the problems: same problems, same occurrence; others, new one.
        let again = compute_desired_state(inp.clone());
        assert_eq!(finding(&again, RULE_POLICY_ERROR).occurrence, f.occurrence);
        inp.policy_files.pop();
        let fewer = compute_desired_state(inp.clone());
        assert_ne!(finding(&fewer, RULE_POLICY_ERROR).occurrence, f.occurrence);
        let problems = vec![".assent/policies/a.yaml:3: rules must not be empty".to_owned()];
        assert_eq!(
            finding(&fewer, RULE_POLICY_ERROR).occurrence,
            Occurrence::of(
                RULE_POLICY_ERROR,
                POLICY_ERROR_SUBJECT,
                ChangeKind::Modify,
                None,
                Some(&json!(problems))
            )
        );
    }

    /// What `assent lint` rejects, a run rejects the same way: a predicate certain to fail
    /// and a misspelt field are `assent/policy-error`, with every problem, and no rule runs
    /// (not even the well-formed ones).
    #[test]
    fn what_lint_rejects_is_a_policy_error_in_a_run() {
        let mut inp = inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_30),
            present(ORDERS_7),
        )]);
        let broken = POLICY
            .replace("int(new) < int(old)", "new < 'abc' + 1")
            .replace("    effect: comment\n", "    efect: comment\n");
        inp.policy_files[0].bytes = broken.into_bytes();
        let out = compute_desired_state(inp);
        assert_eq!(
            slots(&out),
            vec![slot(RULE_POLICY_ERROR, POLICY_ERROR_SUBJECT, Effect::Block)]
        );
        let message = &finding(&out, RULE_POLICY_ERROR).message;
        assert!(
            message.contains("`+` to string and int") && message.contains("unknown field `efect`"),
            "{message}"
        );
    }

    /// A rule whose `when` fails on a change, or that the spent budget left unjudged, is a
    /// block finding and an evaluation failure: what `assent test --update` must not record.
    #[test]
    fn rules_that_could_not_be_evaluated_are_listed_beside_their_findings() {
        let text = |days: &str| {
            format!("topics:\n  - name: orders.events.v1\n    retention_days: {days}\n")
        };
        let out = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(&text("30")),
            present(&text("soon")),
        )]));
        let subject = "topics/orders.yaml#/topics/orders.events.v1/retention_days";
        assert_eq!(
            slots(&out),
            vec![slot("retention-shrink", subject, Effect::Block)]
        );
        assert_eq!(
            out.evaluation_failures.len(),
            1,
            "{:?}",
            out.evaluation_failures
        );
        let failure = &out.evaluation_failures[0];
        assert_eq!(
            (failure.rule.as_str(), failure.subject.as_str()),
            ("retention-shrink", subject)
        );
        assert!(
            out.desired.findings[0].message.contains(&failure.reason),
            "{failure:?}"
        );

        // Judged, a change fails nothing.
        let fine = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(&text("30")),
            present(&text("7")),
        )]));
        assert!(fine.evaluation_failures.is_empty());

        // A budget spent before the rule ran.
        let spent = compute_desired_state_with_budget(
            inputs(vec![file(
                "topics/orders.yaml",
                present(&text("30")),
                present(&text("7")),
            )]),
            CelBudget::new(0.0),
        );
        assert_eq!(
            spent
                .evaluation_failures
                .iter()
                .map(|f| (f.rule.as_str(), f.subject.as_str()))
                .collect::<Vec<_>>(),
            vec![("retention-shrink", "topics/orders.yaml#")]
        );
    }

    #[test]
    fn touching_assent_is_a_self_edit_challenge_per_path() {
        let out = compute_desired_state(inputs(vec![
            file(
                ".assent/policies/topics.yaml",
                present(POLICY),
                present("garbage: ["),
            ),
            ChangedFileInput {
                old_path: ".assent/tests/a.yaml".into(),
                new_path: "docs/a.yaml".into(),
                base: FileContent::Absent,
                source: FileContent::Absent,
            },
            file(".assentish/x.yaml", present("a: 1"), present("a: 2")),
        ]));
        assert_eq!(
            slots(&out),
            vec![
                slot(
                    RULE_SELF_EDIT,
                    ".assent/policies/topics.yaml#",
                    Effect::Challenge
                ),
                slot(RULE_SELF_EDIT, ".assent/tests/a.yaml#", Effect::Challenge),
            ]
        );
        let f = finding(&out, RULE_SELF_EDIT);
        assert!(
            f.message
                .contains("never judged under policies it edits itself")
        );
        assert!(
            f.message
                .contains("policy owner other than the merge request's author")
        );
        assert!(!f.message.lines().any(|l| l.starts_with('/')));
        // The occurrence covers the path at both sides, mode and content.
        let side = |text: &str| json!({"mode": "100644", "sha256": hex::encode(sha2::Sha256::digest(text))});
        assert_eq!(
            f.occurrence,
            Occurrence::of(
                RULE_SELF_EDIT,
                ".assent/policies/topics.yaml#",
                ChangeKind::Modify,
                Some(&side(POLICY)),
                Some(&side("garbage: [")),
            )
        );
        // Only the default policy owners may assent: Maintainers and above.
        assert_eq!(
            out.desired.assenters_of(RULE_SELF_EDIT),
            Some(&Assenters::default_policy_owners())
        );
    }

    /// The self-edit occurrence of `.assent/policies/topics.yaml` with these sides, and the
    /// findings of that run.
    fn self_edit_of(
        base: PathState,
        source: PathState,
    ) -> (Occurrence, Vec<(String, String, Effect)>) {
        let path = ".assent/policies/topics.yaml";
        let mut inp = inputs(vec![file(path, FileContent::Absent, FileContent::Absent)]);
        inp.self_edit_sides = BTreeMap::from([(path.to_owned(), SelfEditSides { base, source })]);
        let out = compute_desired_state(inp);
        (
            finding(&out, RULE_SELF_EDIT).occurrence.clone(),
            slots(&out),
        )
    }

    #[test]
    fn a_self_edits_occurrence_is_the_path_at_both_sides_so_any_later_change_asks_again() {
        let regular = |text: &str| PathState::present("100644", text.as_bytes());
        let assented = self_edit_of(regular(POLICY), regular("harmless"));
        // The same sides (a rebase that leaves the path as it was) keep the occurrence.
        assert_eq!(self_edit_of(regular(POLICY), regular("harmless")), assented);
        let weakened = POLICY.replace("int(new) < int(old)", "false");
        let later = [
            // A second push of other content.
            ("content", self_edit_of(regular(POLICY), regular(&weakened))),
            // The same bytes, executable.
            (
                "mode",
                self_edit_of(regular(POLICY), PathState::present("100755", b"harmless")),
            ),
            // The same bytes, a symbolic link to them.
            (
                "symlink",
                self_edit_of(regular(POLICY), PathState::present("120000", b"harmless")),
            ),
            // Deleted.
            ("deleted", self_edit_of(regular(POLICY), PathState::Absent)),
            // A rebase onto a base where the path differs.
            (
                "base",
                self_edit_of(regular(&weakened), regular("harmless")),
            ),
        ];
        for (what, (occurrence, slots)) in later {
            assert_ne!(occurrence, assented.0, "{what}");
            assert_eq!(slots, assented.1, "{what}: still only the self-edit");
        }
        // Deleted, then added back as it was at the base: no change, so no self-edit at all
        // is the caller's listing; added back otherwise, a new occurrence again.
        assert_ne!(
            self_edit_of(PathState::Absent, regular("harmless")).0,
            self_edit_of(PathState::Absent, regular("harmless ")).0
        );
    }

    #[test]
    fn a_self_edited_path_that_was_not_or_could_not_be_read_is_undecidable() {
        let path = ".assent/policies/topics.yaml";
        let (_, unreadable) = self_edit_of(
            PathState::present("100644", b"a"),
            PathState::Unreadable("403 Forbidden".into()),
        );
        assert_eq!(
            unreadable,
            vec![
                slot(RULE_SELF_EDIT, &format!("{path}#"), Effect::Challenge),
                slot(RULE_UNDECIDABLE, &format!("{path}#"), Effect::Block),
            ]
        );
        let mut inp = inputs(vec![file(path, present("a"), present("b"))]);
        inp.self_edit_sides.clear();
        let out = compute_desired_state(inp);
        assert_eq!(
            slots(&out),
            vec![
                slot(RULE_SELF_EDIT, &format!("{path}#"), Effect::Challenge),
                slot(RULE_UNDECIDABLE, &format!("{path}#"), Effect::Block),
            ]
        );
        assert!(
            finding(&out, RULE_UNDECIDABLE)
                .message
                .contains("was not read"),
            "{}",
            finding(&out, RULE_UNDECIDABLE).message
        );
    }

    #[test]
    fn sides_from_contents_follow_renames_and_a_file_listed_twice() {
        let sides = self_edit_sides_of_contents(&[
            ChangedFileInput {
                old_path: ".assent/a.yaml".into(),
                new_path: ".assent/b.yaml".into(),
                base: present("x"),
                source: present("x"),
            },
            // A file turned into a link: listed deleted, then added.
            file(".assent/c", present("x"), FileContent::Absent),
            file(".assent/c", FileContent::Absent, present("y")),
        ]);
        let x = PathState::present(REGULAR_FILE_MODE, b"x");
        assert_eq!(
            sides[".assent/a.yaml"],
            SelfEditSides {
                base: x.clone(),
                source: PathState::Absent
            }
        );
        assert_eq!(
            sides[".assent/b.yaml"],
            SelfEditSides {
                base: PathState::Absent,
                source: x.clone()
            }
        );
        assert_eq!(
            sides[".assent/c"],
            SelfEditSides {
                base: x,
                source: PathState::present(REGULAR_FILE_MODE, b"y")
            }
        );
    }

    const OWNERS_POLICY: &str = "apiVersion: assent/v1\nkind: Policy\npolicy_owners:\n  users: [alice]\n  min_role: owner\nrules:\n  - id: any\n    match: {files: [\"x/*.yaml\"]}\n    effect: comment\n";

    #[test]
    fn the_targets_policy_owners_decide_who_assents_to_a_self_edit() {
        let mut inp = inputs(vec![file(
            ".assent/policies/topics.yaml",
            present(POLICY),
            present(""),
        )]);
        inp.policy_files.push(PolicyFile {
            path: ".assent/policies/owners.yaml".into(),
            bytes: OWNERS_POLICY.as_bytes().to_vec(),
        });
        let out = compute_desired_state(inp);
        assert_eq!(
            out.desired.assenters_of(RULE_SELF_EDIT),
            Some(&Assenters {
                users: vec!["alice".into()],
                min_role: Some(Role::Owner),
            })
        );
        // No self-edit, no entry: a run without one reads no roles for it.
        let out = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_30),
            present(ORDERS_7),
        )]));
        assert_eq!(out.desired.assenters_of(RULE_SELF_EDIT), None);
    }

    #[test]
    fn a_clash_with_the_central_set_is_repaired_only_by_an_mr_changing_only_assent() {
        let central = PolicyFile {
            path: central_policy_path("platform/policies", ".assent/policies/c.yaml"),
            bytes: POLICY.as_bytes().to_vec(),
        };
        let owners = PolicyFile {
            path: ".assent/policies/owners.yaml".into(),
            bytes: OWNERS_POLICY.as_bytes().to_vec(),
        };
        let judged = |files: Vec<ChangedFileInput>, problems: Vec<String>, own: Vec<PolicyFile>| {
            let mut inp = inputs(files);
            inp.policy_files = own;
            inp.policy_files.push(central.clone());
            inp.policy_problems = problems;
            compute_desired_state(inp)
        };
        let own = || [policies(), vec![owners.clone()]].concat();
        let policy_edit = || {
            file(
                ".assent/policies/topics.yaml",
                present(POLICY),
                present("x: 1"),
            )
        };
        let self_edit = slot(
            RULE_SELF_EDIT,
            ".assent/policies/topics.yaml#",
            Effect::Challenge,
        );

        let out = judged(vec![policy_edit()], vec![], own());
        assert_eq!(
            slots(&out),
            vec![
                slot(RULE_POLICY_REPAIR, POLICY_ERROR_SUBJECT, Effect::Comment),
                self_edit.clone(),
            ]
        );
        assert!(
            finding(&out, RULE_POLICY_REPAIR)
                .message
                .contains("duplicate rule id `retention-shrink`"),
            "{}",
            finding(&out, RULE_POLICY_REPAIR).message
        );
        // The owners the project's own policies declare, never the wider default.
        assert_eq!(
            out.desired.assenters_of(RULE_SELF_EDIT),
            Some(&Assenters {
                users: vec!["alice".into()],
                min_role: Some(Role::Owner),
            })
        );
        let error = slot(RULE_POLICY_ERROR, POLICY_ERROR_SUBJECT, Effect::Block);
        // Anything else changed: nothing can judge it.
        let out = judged(
            vec![
                policy_edit(),
                file("topics/orders.yaml", present(ORDERS_30), present(ORDERS_7)),
            ],
            vec![],
            own(),
        );
        assert_eq!(slots(&out), vec![error.clone(), self_edit.clone()]);
        // The central project could not be read, or the project's own policies do not load
        // alone: no repair path.
        let out = judged(vec![policy_edit()], vec!["cannot be read".into()], own());
        assert_eq!(slots(&out), vec![error.clone(), self_edit.clone()]);
        let broken = vec![PolicyFile {
            path: ".assent/policies/topics.yaml".into(),
            bytes: b"garbage: [".to_vec(),
        }];
        let out = judged(vec![policy_edit()], vec![], broken);
        assert_eq!(slots(&out), vec![error, self_edit]);
    }

    #[test]
    fn while_the_targets_policies_fail_to_load_the_default_owners_decide() {
        let mut inp = inputs(vec![file(
            ".assent/policies/topics.yaml",
            present("garbage: ["),
            present(POLICY),
        )]);
        inp.policy_files = vec![PolicyFile {
            path: ".assent/policies/topics.yaml".into(),
            bytes: b"garbage: [".to_vec(),
        }];
        let out = compute_desired_state(inp);
        assert_eq!(
            slots(&out),
            vec![
                slot(RULE_POLICY_ERROR, POLICY_ERROR_SUBJECT, Effect::Block),
                slot(
                    RULE_SELF_EDIT,
                    ".assent/policies/topics.yaml#",
                    Effect::Challenge
                ),
            ]
        );
        assert_eq!(
            out.desired.assenters_of(RULE_SELF_EDIT),
            Some(&Assenters::default_policy_owners())
        );
    }

    #[test]
    fn deleting_renaming_or_hiding_policy_files_is_a_self_edit_per_path() {
        let renamed = |old: &str, new: &str| ChangedFileInput {
            old_path: old.into(),
            new_path: new.into(),
            base: FileContent::Absent,
            source: FileContent::Absent,
        };
        let out = compute_desired_state(inputs(vec![
            // The whole folder deleted...
            file(
                ".assent/policies/topics.yaml",
                present(POLICY),
                FileContent::Absent,
            ),
            // ... or moved where the loader does not look ...
            renamed(".assent/tests/a.yaml", ".assent-old/tests/a.yaml"),
            // ... or a file the loader skips added under it.
            file(
                ".assent/policies/x.YAML",
                FileContent::Absent,
                present(POLICY),
            ),
            file(".assent/notes.txt", FileContent::Absent, present("hi")),
        ]));
        assert_eq!(
            slots(&out),
            vec![
                slot(RULE_SELF_EDIT, ".assent/notes.txt#", Effect::Challenge),
                slot(
                    RULE_SELF_EDIT,
                    ".assent/policies/topics.yaml#",
                    Effect::Challenge
                ),
                slot(
                    RULE_SELF_EDIT,
                    ".assent/policies/x.YAML#",
                    Effect::Challenge
                ),
                slot(RULE_SELF_EDIT, ".assent/tests/a.yaml#", Effect::Challenge),
            ]
        );
    }

    #[test]
    fn an_mr_weakening_a_rule_is_still_judged_by_the_targets_rule() {
        // The MR drops the retention rule from its own policy and shrinks a retention in the
        // same push: the target's rule still fires, beside the self-edit challenge.
        let weakened = POLICY.replace("int(new) < int(old)", "false");
        let out = compute_desired_state(inputs(vec![
            file(
                ".assent/policies/topics.yaml",
                present(POLICY),
                present(&weakened),
            ),
            file("topics/orders.yaml", present(ORDERS_30), present(ORDERS_7)),
        ]));
        assert_eq!(
            slots(&out),
            vec![
                slot(
                    RULE_SELF_EDIT,
                    ".assent/policies/topics.yaml#",
                    Effect::Challenge
                ),
                slot(
                    "retention-shrink",
                    "topics/orders.yaml#/topics/orders.events.v1/retention_days",
                    Effect::Challenge
                ),
            ]
        );
    }

    #[test]
    fn assent_paths_are_never_governed_even_by_a_catch_all_rule() {
        let mut inp = inputs(vec![file(
            ".assent/policies/extra.yaml",
            present("a: 1"),
            present("a: ["),
        )]);
        inp.policy_files = vec![PolicyFile {
            path: ".assent/policies/all.yaml".into(),
            bytes: b"apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: any\n    match: {files: [\"**\"]}\n    effect: comment\n".to_vec(),
        }];
        let out = compute_desired_state(inp.clone());
        assert_eq!(
            slots(&out),
            vec![slot(
                RULE_SELF_EDIT,
                ".assent/policies/extra.yaml#",
                Effect::Challenge
            )]
        );
    }

    #[test]
    fn an_incomplete_change_set_is_undecidable_for_the_whole_mr() {
        let mut inp = inputs(Vec::new());
        inp.changed_files = Err("page 3 of the diffs is missing".into());
        let out = compute_desired_state(inp.clone());
        assert_eq!(
            slots(&out),
            vec![slot(RULE_UNDECIDABLE, MERGE_REQUEST_SUBJECT, Effect::Block)]
        );
        let f = finding(&out, RULE_UNDECIDABLE);
        assert!(f.message.contains("page 3 of the diffs is missing"));
        inp.changed_files = Err("another reason".into());
        assert_ne!(
            finding(&compute_desired_state(inp.clone()), RULE_UNDECIDABLE).occurrence,
            f.occurrence
        );
    }

    #[test]
    fn unreadable_governed_content_is_undecidable_and_not_diffed() {
        let out = compute_desired_state(inputs(vec![
            file(
                "topics/orders.yaml",
                present(ORDERS_30),
                FileContent::Unreadable("HTTP 500 after 3 attempts".into()),
            ),
            file(
                "topics/billing.yaml",
                FileContent::Unreadable("timeout".into()),
                FileContent::Unreadable("reset".into()),
            ),
        ]));
        assert_eq!(
            slots(&out),
            vec![
                slot(RULE_UNDECIDABLE, "topics/billing.yaml#", Effect::Block),
                slot(RULE_UNDECIDABLE, "topics/orders.yaml#", Effect::Block),
            ]
        );
        assert!(out.changes.is_empty());
        let billing = &out.desired.findings[0];
        assert!(
            billing.message.contains("base SHA: `timeout`"),
            "{}",
            billing.message
        );
        assert!(
            billing.message.contains("source SHA: `reset`"),
            "{}",
            billing.message
        );
        assert!(
            out.desired.findings[1]
                .message
                .contains("HTTP 500 after 3 attempts")
        );
    }

    #[test]
    fn built_in_messages_render_paths_and_reasons_inert() {
        let hostile = "@all `x` <img src=x>\n/close";
        let out = compute_desired_state(inputs(vec![
            file(
                &format!(".assent/{hostile}"),
                FileContent::Absent,
                present("a"),
            ),
            file(
                "topics/orders.yaml",
                present(ORDERS_30),
                FileContent::Unreadable(hostile.into()),
            ),
            file(
                "topics/bad.yaml",
                present(ORDERS_30),
                present("topics:\n  - name: a\n    \"@all `x`\": 1\n    \"@all `x`\": 2\n"),
            ),
        ]));
        let rendered = "``@all `x` <img src=x>\\n/close``";
        let message = |rule: &str, subject: &str| {
            out.desired
                .findings
                .iter()
                .find(|f| f.slot.rule == rule && f.slot.subject == subject)
                .map(|f| f.message.clone())
                .unwrap_or_else(|| panic!("no {rule} {subject}: {:?}", slots(&out)))
        };
        let self_edit = message(RULE_SELF_EDIT, &format!(".assent/{hostile}#"));
        assert!(
            self_edit.starts_with("Changing ``.assent/@all `x` <img src=x>\\n/close`` needs"),
            "{self_edit}"
        );
        let unreadable = message(RULE_UNDECIDABLE, "topics/orders.yaml#");
        assert!(
            unreadable.ends_with(&format!("at the source SHA: {rendered}")),
            "{unreadable}"
        );
        let parse = message(RULE_PARSE_ERROR, "topics/bad.yaml#");
        assert!(parse.contains("\n- ``topics/bad.yaml:4: "), "{parse}");
        assert!(parse.contains("duplicate key \"@all `x`\""), "{parse}");
        for m in [&self_edit, &unreadable, &parse] {
            assert!(!m.lines().any(|l| l.trim_start().starts_with('/')), "{m}");
        }
    }

    #[test]
    fn built_in_occurrences_keep_their_reason_wording() {
        // Occurrences hash the reasons' wording, not the rendered message: rendering changes
        // must never supersede a live thread.
        let out = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_30),
            FileContent::Unreadable("HTTP 403".into()),
        )]));
        assert_eq!(
            out.desired.findings[0].occurrence,
            Occurrence::of(
                RULE_UNDECIDABLE,
                "topics/orders.yaml#",
                ChangeKind::Modify,
                None,
                Some(&json!([
                    "`topics/orders.yaml` could not be read at the source SHA: HTTP 403"
                ])),
            )
        );
    }

    #[test]
    fn parse_errors_name_file_line_and_side() {
        let out = compute_desired_state(inputs(vec![
            file(
                "topics/orders.yaml",
                present(ORDERS_30),
                present("topics:\n  - name: a\n    name: b\n"),
            ),
            file(
                "topics/billing.yaml",
                present("topics: [\n"),
                present("topics: {\n"),
            ),
        ]));
        assert_eq!(
            slots(&out),
            vec![
                slot(RULE_PARSE_ERROR, "topics/billing.yaml#", Effect::Block),
                slot(RULE_PARSE_ERROR, "topics/orders.yaml#", Effect::Block),
            ]
        );
        assert!(
            out.changes.is_empty(),
            "a file that does not parse is not diffed"
        );
        let orders = &out.desired.findings[1].message;
        assert!(orders.contains("`topics/orders.yaml:3: "), "{orders}");
        // The summary's row is the message's first line: it names the error.
        let first = orders.lines().next().unwrap();
        assert!(
            first.starts_with("Does not parse: `topics/orders.yaml:3: ")
                && first.contains("duplicate"),
            "{first}"
        );
        let billing_first = out.desired.findings[0].message.lines().next().unwrap();
        assert!(billing_first.contains("(and 1 more)"), "{billing_first}");
        assert!(orders.contains("duplicate"), "{orders}");
        assert!(orders.contains("(at the source SHA)"), "{orders}");
        let billing = &out.desired.findings[0].message;
        assert!(
            billing.contains("at the base SHA") && billing.contains("at the source SHA"),
            "{billing}"
        );
    }

    #[test]
    fn large_files_parsed_in_parallel_give_the_same_findings_and_errors_in_side_order() {
        // Padding past the parallel threshold, with the same edit as the small case.
        let pad: String = (0..40_000)
            .map(|i| format!("  - name: pad{i:05}.v1\n    retention_days: 30\n"))
            .collect();
        assert!(2 * pad.len() >= PARALLEL_PARSE_BYTES);
        let big = |text: &str| present(&format!("{text}{pad}"));
        let small = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_30),
            present(ORDERS_7),
        )]));
        let large = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            big(ORDERS_30),
            big(ORDERS_7),
        )]));
        assert_eq!(slots(&large), slots(&small));
        assert_eq!(large.changes, small.changes);

        let broken = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            big("topics:\n  - name: a\n    name: b\n"),
            big("topics:\n  - {name: a, name: b}\n"),
        )]));
        let message = &broken.desired.findings[0].message;
        let (base, source) = (
            message.find("(at the base SHA)").expect(message),
            message.find("(at the source SHA)").expect(message),
        );
        assert!(base < source, "{message}");
    }

    #[test]
    fn parse_error_occurrence_follows_the_error() {
        let run = |text: &str| {
            let out = compute_desired_state(inputs(vec![file(
                "topics/orders.yaml",
                present(ORDERS_30),
                present(text),
            )]));
            finding(&out, RULE_PARSE_ERROR).occurrence.clone()
        };
        assert_eq!(run("topics: ["), run("topics: ["));
        assert_ne!(run("topics: ["), run("a: 1\na: 2\n"));
    }

    #[test]
    fn limits_apply_to_governed_files() {
        let mut inp = inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_30),
            present(ORDERS_7),
        )]);
        inp.limits.max_bytes = 10;
        let out = compute_desired_state(inp.clone());
        assert_eq!(
            slots(&out),
            vec![slot(RULE_PARSE_ERROR, "topics/orders.yaml#", Effect::Block)]
        );
        assert!(finding(&out, RULE_PARSE_ERROR).message.contains("bytes"));
    }

    #[test]
    fn whole_file_add_and_delete() {
        let out = compute_desired_state(inputs(vec![
            file("topics/new.yaml", FileContent::Absent, present(ORDERS_30)),
            file("topics/gone.yaml", present(ORDERS_30), FileContent::Absent),
        ]));
        // The deleted file's topics are deleted with it: `topic-deleted` sees each one.
        assert_eq!(
            slots(&out),
            vec![
                slot("file-deleted", "topics/gone.yaml#", Effect::Block),
                slot(
                    "topic-deleted",
                    "topics/gone.yaml#/topics/orders.audit.v1",
                    Effect::Block
                ),
                slot(
                    "topic-deleted",
                    "topics/gone.yaml#/topics/orders.events.v1",
                    Effect::Block
                ),
            ]
        );
        let judged: Vec<(&str, &str, ChangeKind)> = out
            .changes
            .iter()
            .map(|c| (c.file.as_str(), c.pointer.as_str(), c.kind))
            .collect();
        // Only what some rule could match is spelled out under a whole-file change, and only
        // what some rule could match is a change at all: no rule judges a whole-file add.
        assert_eq!(
            judged,
            [
                ("topics/gone.yaml", "", ChangeKind::Delete),
                (
                    "topics/gone.yaml",
                    "/topics/orders.audit.v1",
                    ChangeKind::Delete
                ),
                (
                    "topics/gone.yaml",
                    "/topics/orders.events.v1",
                    ChangeKind::Delete
                ),
            ]
        );
        assert_eq!(
            out.changes[1].old_line,
            Some(4),
            "each carries its own line"
        );
    }

    fn renamed(old: &str, new: &str, base: FileContent, source: FileContent) -> ChangedFileInput {
        ChangedFileInput {
            old_path: old.into(),
            new_path: new.into(),
            base,
            source,
        }
    }

    /// What deleting `topics/orders.yaml` (holding `ORDERS_30`) fires.
    fn orders_deleted() -> Vec<(String, String, Effect)> {
        vec![
            slot("file-deleted", "topics/orders.yaml#", Effect::Block),
            slot(
                "topic-deleted",
                "topics/orders.yaml#/topics/orders.audit.v1",
                Effect::Block,
            ),
            slot(
                "topic-deleted",
                "topics/orders.yaml#/topics/orders.events.v1",
                Effect::Block,
            ),
        ]
    }

    #[test]
    fn a_pure_rename_between_governed_paths_deletes_the_old_paths_content() {
        // A consumer reading `topics/orders.yaml` loses every topic, whatever the new path.
        let pure = || {
            renamed(
                "topics/orders.yaml",
                "topics/orders-v2.yaml",
                present(ORDERS_30),
                present(ORDERS_30),
            )
        };
        let out = compute_desired_state(inputs(vec![pure()]));
        assert_eq!(slots(&out), orders_deleted());
        // The same rename on a rerun, listed among other files in another order: the same
        // slots and occurrences.
        let again = compute_desired_state(inputs(vec![
            file("topics/other.yaml", present(ORDERS_30), present(ORDERS_30)),
            pure(),
        ]));
        assert_eq!(again.desired.findings, out.desired.findings);
    }

    #[test]
    fn a_rename_with_an_edit_is_judged_on_each_path_by_its_own_rules() {
        let out = compute_desired_state(inputs(vec![renamed(
            "topics/orders.yaml",
            "archive/orders.yaml",
            present(ORDERS_30),
            present(ORDERS_7),
        )]));
        let mut expected = orders_deleted();
        expected.insert(0, slot("archived", "archive/orders.yaml#", Effect::Comment));
        assert_eq!(slots(&out), expected);
        // The shrink is no modify of either path: nothing compares the two.
        assert!(
            out.desired
                .findings
                .iter()
                .all(|f| f.slot.rule != "retention-shrink")
        );
    }

    #[test]
    fn a_case_only_rename_is_two_paths() {
        let out = compute_desired_state(inputs(vec![renamed(
            "topics/orders.yaml",
            "topics/Orders.yaml",
            present(ORDERS_30),
            present(ORDERS_30),
        )]));
        assert_eq!(slots(&out), orders_deleted());
    }

    #[test]
    fn a_rename_onto_a_path_the_listing_also_deletes_modifies_that_path() {
        // Git broke the rewrite of `topics/orders.yaml` into a delete and an add, and paired
        // the add with `topics/legacy.yaml`'s delete: the path still exists, with new content.
        let out = compute_desired_state(inputs(vec![
            renamed(
                "topics/legacy.yaml",
                "topics/orders.yaml",
                FileContent::Unreadable("never read: the old path is not governed".into()),
                present(ORDERS_7),
            ),
            file(
                "topics/orders.yaml",
                present(ORDERS_30),
                FileContent::Absent,
            ),
        ]));
        let out_slots = slots(&out);
        assert!(
            out_slots.contains(&slot(
                "retention-shrink",
                "topics/orders.yaml#/topics/orders.events.v1/retention_days",
                Effect::Challenge
            )),
            "{out_slots:?}"
        );
        assert!(
            !out_slots.contains(&slot("file-deleted", "topics/orders.yaml#", Effect::Block)),
            "{out_slots:?}"
        );
        // The old path is governed too (`topics/*.yaml`) and could not be read.
        assert!(out_slots.contains(&slot(
            RULE_UNDECIDABLE,
            "topics/legacy.yaml#",
            Effect::Block
        )));
    }

    #[test]
    fn a_rename_out_of_or_into_governance_is_a_whole_file_delete_or_add() {
        let out = compute_desired_state(inputs(vec![renamed(
            "topics/orders.yaml",
            "attic/orders.yaml",
            present(ORDERS_30),
            present(ORDERS_30),
        )]));
        assert_eq!(slots(&out), orders_deleted());
        let out = compute_desired_state(inputs(vec![renamed(
            "attic/orders.yaml",
            "archive/orders.yaml",
            FileContent::Unreadable("not read".into()),
            present(ORDERS_30),
        )]));
        assert_eq!(
            slots(&out),
            vec![slot("archived", "archive/orders.yaml#", Effect::Comment)],
            "the ungoverned side is neither read nor judged"
        );
    }

    #[test]
    fn a_rename_into_or_out_of_the_assent_folder_is_a_self_edit_and_the_governed_sides_change() {
        let out = compute_desired_state(inputs(vec![renamed(
            "topics/orders.yaml",
            ".assent/orders.yaml",
            present(ORDERS_30),
            FileContent::Absent,
        )]));
        let mut expected = vec![slot(
            RULE_SELF_EDIT,
            ".assent/orders.yaml#",
            Effect::Challenge,
        )];
        expected.extend(orders_deleted());
        expected.sort();
        let mut got = slots(&out);
        got.sort();
        assert_eq!(got, expected);
        let out = compute_desired_state(inputs(vec![renamed(
            ".assent/orders.yaml",
            "archive/orders.yaml",
            FileContent::Absent,
            present(ORDERS_30),
        )]));
        let mut got = slots(&out);
        got.sort();
        assert_eq!(
            got,
            vec![
                slot("archived", "archive/orders.yaml#", Effect::Comment),
                slot(RULE_SELF_EDIT, ".assent/orders.yaml#", Effect::Challenge),
            ]
        );
    }

    #[test]
    fn a_renamed_or_unreadable_attributes_file_is_judged_per_path() {
        // Moved below `docs/`, the line now reaches `docs/topics/*.yaml` only: the top-level
        // path lost a line that gave governed files `-diff`.
        let out = compute_desired_state(inputs(vec![renamed(
            ".gitattributes",
            "docs/.gitattributes",
            present("topics/*.yaml -diff\n"),
            present("topics/*.yaml -diff\n"),
        )]));
        assert_eq!(
            slots(&out),
            vec![slot(
                crate::git_attributes::RULE_GIT_ATTRIBUTES,
                ".gitattributes#",
                Effect::Challenge
            )]
        );
        let out = compute_desired_state(inputs(vec![file(
            ".gitattributes",
            present("*.png binary\n"),
            FileContent::Unreadable("403 Forbidden".into()),
        )]));
        assert_eq!(
            slots(&out),
            vec![slot(RULE_UNDECIDABLE, ".gitattributes#", Effect::Block)]
        );
    }

    #[test]
    fn mr_context_reaches_predicates() {
        let mut inp = inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_30),
            present(ORDERS_7),
        )]);
        inp.policy_files = vec![PolicyFile {
            path: ".assent/policies/p.yaml".into(),
            bytes: b"apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: labelled\n    match: {files: [\"topics/*.yaml\"]}\n    when: \"'retention-ok' in mr.labels\"\n    effect: comment\n".to_vec(),
        }];
        assert!(
            compute_desired_state(inp.clone())
                .desired
                .findings
                .is_empty()
        );
        inp.mr.labels = vec!["retention-ok".into()];
        assert!(
            !compute_desired_state(inp.clone())
                .desired
                .findings
                .is_empty()
        );
    }

    #[test]
    fn output_does_not_depend_on_input_order() {
        let files = vec![
            file("topics/orders.yaml", present(ORDERS_30), present(ORDERS_7)),
            file("topics/gone.yaml", present(ORDERS_30), FileContent::Absent),
            file("topics/bad.yaml", present(ORDERS_30), present("x: [")),
            file(".assent/policies/x.yaml", FileContent::Absent, present("x")),
            file(
                "topics/huge.yaml",
                FileContent::Unreadable("413".into()),
                FileContent::Absent,
            ),
            file(
                "topics/lost.yaml",
                FileContent::Unreadable("500".into()),
                present(ORDERS_7),
            ),
            file("README.md", present("a"), present("b")),
        ];
        let forward = compute_desired_state(inputs(files.clone()));
        let mut reversed = files.clone();
        reversed.reverse();
        let backward = compute_desired_state(inputs(reversed));
        let mut rotated = files;
        rotated.rotate_left(3);
        let rotated = compute_desired_state(inputs(rotated));
        assert_eq!(forward, backward);
        assert_eq!(forward, rotated);
        assert_eq!(forward.desired.findings.len(), 8, "{:?}", slots(&forward));
        // Policy file order does not matter either.
        let mut inp = inputs(Vec::new());
        inp.policy_files.push(PolicyFile {
            path: ".assent/policies/a.yaml".into(),
            bytes: b"x".to_vec(),
        });
        let one = compute_desired_state(inp.clone());
        inp.policy_files.reverse();
        assert_eq!(one, compute_desired_state(inp.clone()));
    }

    // ---- assent/ambiguous-identity (docs/contract.md#identity-keys) ------------------------------------------

    /// The reproduction: the source adds a verbatim copy of `orders.audit.v1` and shrinks
    /// `orders.events.v1` from 30 to 1 day. Compared by position (as assent once fell back to),
    /// the shrunk entry lands on position 2, an `add` no rule judges, and the MR passed.
    const ORDERS_COPIED_AND_SHRUNK: &str = "topics:\n  - name: orders.audit.v1\n    retention_days: 90\n  - name: orders.audit.v1\n    retention_days: 90\n  - name: orders.events.v1\n    retention_days: 1\n";

    fn ambiguity(outcome: &DesiredOutcome) -> &Finding {
        finding(outcome, RULE_AMBIGUOUS_IDENTITY)
    }

    #[test]
    fn a_copied_entry_blocks_and_keeps_the_shrink_next_to_it_from_passing_unjudged() {
        let out = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_30),
            present(ORDERS_COPIED_AND_SHRUNK),
        )]));
        assert_eq!(
            slots(&out),
            vec![slot(
                RULE_AMBIGUOUS_IDENTITY,
                "topics/orders.yaml#/topics",
                Effect::Block
            )]
        );
        assert!(out.changes.is_empty(), "{:?}", out.changes);
        let message = &ambiguity(&out).message;
        assert!(
            message.contains(
                "- at the source SHA: `orders.audit.v1` is the `name` of 2 entries: \
                 `topics/orders.yaml:2`, `topics/orders.yaml:4`"
            ),
            "{message}"
        );
        assert!(
            message.contains("rather than compare them by position"),
            "{message}"
        );
        assert!(!message.contains("base SHA"), "{message}");

        // Without the copy, the same shrink is judged by name.
        let fixed = "topics:\n  - name: orders.audit.v1\n    retention_days: 90\n  - name: orders.events.v1\n    retention_days: 1\n";
        let out = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_30),
            present(fixed),
        )]));
        assert_eq!(
            slots(&out),
            vec![slot(
                "retention-shrink",
                "topics/orders.yaml#/topics/orders.events.v1/retention_days",
                Effect::Challenge
            )]
        );
    }

    #[test]
    fn a_duplicate_at_the_base_blocks_under_the_base_path_and_says_how_to_fix_it() {
        let base = "topics:\n  - name: orders.events.v1\n    retention_days: 30\n  - name: orders.events.v1\n    retention_days: 1\n";
        let out = compute_desired_state(inputs(vec![ChangedFileInput {
            old_path: "topics/orders-old.yaml".into(),
            new_path: "topics/orders.yaml".into(),
            base: present(base),
            source: present(ORDERS_7),
        }]));
        // The rename deletes the old path's content: its ambiguity is the old path's.
        assert_eq!(
            slots(&out),
            vec![
                slot(
                    RULE_AMBIGUOUS_IDENTITY,
                    "topics/orders-old.yaml#/topics",
                    Effect::Block
                ),
                slot("file-deleted", "topics/orders-old.yaml#", Effect::Block),
            ]
        );
        let message = &ambiguity(&out).message;
        assert!(
            message.contains(
                "- at the base SHA: `orders.events.v1` is the `name` of 2 entries: \
                 `topics/orders-old.yaml:2`, `topics/orders-old.yaml:4`"
            ),
            "{message}"
        );
        assert!(!message.contains("source SHA"), "{message}");
        assert!(message.contains("outside the gate"), "{message}");
    }

    #[test]
    fn ambiguities_on_both_sides_are_one_finding_naming_each_side() {
        let base = "topics:\n  - name: a\n  - name: a\n  - retention_days: 3\n";
        let source = "topics:\n  - name: b\n    retention_days: 1\n  - name: b\n";
        let out = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(base),
            present(source),
        )]));
        assert_eq!(out.desired.findings.len(), 1, "{:?}", slots(&out));
        let message = &ambiguity(&out).message;
        let base_dup = message
            .find("- at the base SHA: `a` is the `name` of 2 entries: `topics/orders.yaml:2`, `topics/orders.yaml:3`")
            .expect(message);
        let base_missing = message
            .find("- at the base SHA: missing key `name`: `topics/orders.yaml:4`")
            .expect(message);
        let source_dup = message
            .find("- at the source SHA: `b` is the `name` of 2 entries: `topics/orders.yaml:2`, `topics/orders.yaml:4`")
            .expect(message);
        assert!(
            base_dup < base_missing && base_missing < source_dup,
            "{message}"
        );
    }

    #[test]
    fn entries_without_a_usable_key_block_with_the_reason_and_line() {
        let source = "topics:\n  - name: orders.events.v1\n    retention_days: 1\n  - retention_days: 5\n  - just-a-string\n  - name: [x]\n";
        let out = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_30),
            present(source),
        )]));
        assert_eq!(
            slots(&out),
            vec![slot(
                RULE_AMBIGUOUS_IDENTITY,
                "topics/orders.yaml#/topics",
                Effect::Block
            )],
            "the shrink of orders.events.v1 is not judged while the list is ambiguous"
        );
        let message = &ambiguity(&out).message;
        for expected in [
            "- at the source SHA: missing key `name`: `topics/orders.yaml:4`",
            "- at the source SHA: not a map, so missing key `name`: `topics/orders.yaml:5`",
            "- at the source SHA: `name` is neither a string nor an integer: `topics/orders.yaml:6`",
        ] {
            assert!(message.contains(expected), "{expected}\n{message}");
        }
    }

    /// Topics keyed by `name`, each topic's ACLs by `principal`, and rules inside and
    /// outside the lists.
    const NESTED_POLICY: &str = r#"apiVersion: assent/v1
kind: Policy
identities:
  "topics/*.yaml": { "/topics": name, "/topics/*/acls": principal }
rules:
  - id: retention-shrink
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/retention_days", kinds: [modify] }
    when: "int(new) < int(old)"
    effect: challenge
  - id: acl-change
    match: { files: ["topics/*.yaml"], pointer: "/topics/*/acls/**" }
    effect: challenge
  - id: owner-change
    match: { files: ["topics/*.yaml"], pointer: "/owner" }
    effect: comment
"#;

    fn nested_inputs(files: Vec<ChangedFileInput>) -> ReviewInputs {
        ReviewInputs {
            policy_files: vec![PolicyFile {
                path: ".assent/policies/nested.yaml".into(),
                bytes: NESTED_POLICY.as_bytes().to_vec(),
            }],
            ..inputs(files)
        }
    }

    const NESTED_BASE: &str = "owner: team-a\ntopics:\n  - name: orders\n    retention_days: 30\n    acls:\n      - principal: svc-a\n        op: read\n  - name: audit\n    retention_days: 90\n    acls:\n      - principal: svc-b\n        op: read\n";

    #[test]
    fn a_nested_ambiguous_list_blocks_alone_and_everything_else_in_the_file_is_judged() {
        // orders' ACLs gain a second `svc-a` (granting `all`); audit's ACL changes; orders'
        // retention shrinks; the owner changes.
        let source = "owner: team-b\ntopics:\n  - name: orders\n    retention_days: 7\n    acls:\n      - principal: svc-a\n        op: read\n      - principal: svc-a\n        op: all\n  - name: audit\n    retention_days: 90\n    acls:\n      - principal: svc-b\n        op: write\n";
        let out = compute_desired_state(nested_inputs(vec![file(
            "topics/orders.yaml",
            present(NESTED_BASE),
            present(source),
        )]));
        assert_eq!(
            slots(&out),
            vec![
                slot(
                    "acl-change",
                    "topics/orders.yaml#/topics/audit/acls/svc-b/op",
                    Effect::Challenge
                ),
                slot(
                    RULE_AMBIGUOUS_IDENTITY,
                    "topics/orders.yaml#/topics/orders/acls",
                    Effect::Block
                ),
                slot("owner-change", "topics/orders.yaml#/owner", Effect::Comment),
                slot(
                    "retention-shrink",
                    "topics/orders.yaml#/topics/orders/retention_days",
                    Effect::Challenge
                ),
            ]
        );
        let message = &ambiguity(&out).message;
        assert!(
            message.contains(
                "`svc-a` is the `principal` of 2 entries: `topics/orders.yaml:6`, `topics/orders.yaml:8`"
            ),
            "{message}"
        );
        assert!(
            message.contains("The entries of the list `/topics/orders/acls` in"),
            "{message}"
        );
    }

    #[test]
    fn an_ambiguous_outer_list_keeps_a_change_elsewhere_in_the_file_judged() {
        let source = "owner: team-b\ntopics:\n  - name: orders\n    retention_days: 1\n  - name: orders\n    retention_days: 30\n";
        let out = compute_desired_state(nested_inputs(vec![file(
            "topics/orders.yaml",
            present(NESTED_BASE),
            present(source),
        )]));
        assert_eq!(
            slots(&out),
            vec![
                slot(
                    RULE_AMBIGUOUS_IDENTITY,
                    "topics/orders.yaml#/topics",
                    Effect::Block
                ),
                slot("owner-change", "topics/orders.yaml#/owner", Effect::Comment),
            ]
        );
        assert_eq!(out.changes.len(), 1, "only /owner is compared");
    }

    #[test]
    fn a_new_file_with_a_copied_entry_blocks_before_the_ambiguity_reaches_the_target() {
        let out = compute_desired_state(inputs(vec![file(
            "topics/new.yaml",
            FileContent::Absent,
            present(ORDERS_COPIED_AND_SHRUNK),
        )]));
        assert_eq!(
            slots(&out),
            vec![slot(
                RULE_AMBIGUOUS_IDENTITY,
                "topics/new.yaml#/topics",
                Effect::Block
            )]
        );
        assert!(
            out.changes.is_empty(),
            "nothing under the list is compared, and no rule judges the whole-file add"
        );
    }

    #[test]
    fn json_and_toml_entries_are_located_by_line_too() {
        let policy = r#"apiVersion: assent/v1
kind: Policy
identities:
  "topics/*": { "/topics": name }
rules:
  - id: any
    match: { files: ["topics/*"] }
    effect: comment
"#;
        let run = |path: &str, base: &str, source: &str| {
            let mut inp = inputs(vec![file(path, present(base), present(source))]);
            inp.policy_files = vec![PolicyFile {
                path: ".assent/policies/p.yaml".into(),
                bytes: policy.as_bytes().to_vec(),
            }];
            ambiguity(&compute_desired_state(inp)).message.clone()
        };
        let json = run(
            "topics/a.json",
            r#"{"topics": [{"name": "x"}]}"#,
            "{\"topics\": [\n  {\"name\": \"x\"},\n  {\"name\": \"x\"}\n]}",
        );
        assert!(
            json.contains("`topics/a.json:2`, `topics/a.json:3`"),
            "{json}"
        );
        let toml = run(
            "topics/a.toml",
            "[[topics]]\nname = \"x\"\n",
            "[[topics]]\nname = \"x\"\n\n[[topics]]\nname = \"x\"\n",
        );
        assert!(
            toml.contains("`topics/a.toml:1`, `topics/a.toml:4`"),
            "{toml}"
        );
    }

    #[test]
    fn the_occurrence_follows_the_ambiguity_not_its_lines() {
        let occurrence = |source: &str| {
            ambiguity(&compute_desired_state(inputs(vec![file(
                "topics/orders.yaml",
                present(ORDERS_30),
                present(source),
            )])))
            .occurrence
            .clone()
        };
        let first = occurrence(ORDERS_COPIED_AND_SHRUNK);
        assert_eq!(first, occurrence(ORDERS_COPIED_AND_SHRUNK), "rerun");
        let moved = format!("# a comment shifts every line\n\n{ORDERS_COPIED_AND_SHRUNK}");
        assert_eq!(first, occurrence(&moved), "moved lines keep the thread");
        let reordered = "topics:\n  - name: orders.events.v1\n    retention_days: 1\n  - name: orders.audit.v1\n    retention_days: 90\n  - name: orders.audit.v1\n    retention_days: 90\n";
        assert_eq!(
            first,
            occurrence(reordered),
            "moved entries keep the thread"
        );
        let other_value = ORDERS_COPIED_AND_SHRUNK.replace("orders.audit.v1", "orders.x.v1");
        assert_ne!(first, occurrence(&other_value), "another duplicated value");
        let missing_too = format!("{ORDERS_COPIED_AND_SHRUNK}  - retention_days: 3\n");
        assert_ne!(first, occurrence(&missing_too), "one more problem");
        assert_eq!(
            first,
            Occurrence::of(
                RULE_AMBIGUOUS_IDENTITY,
                "topics/orders.yaml#/topics",
                ChangeKind::Modify,
                None,
                Some(&json!({
                    "field": "name",
                    "base": null,
                    "source": {"duplicated": ["orders.audit.v1"], "unkeyed": 0}
                }))
            )
        );
        // The same ambiguity moved to the base side is a different one.
        let both_base = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_COPIED_AND_SHRUNK),
            present(ORDERS_30),
        )]));
        assert_ne!(first, ambiguity(&both_base).occurrence);
    }

    #[test]
    fn contributor_values_in_the_message_stay_inert() {
        // A value that tries to close its code span, start a quick action on a new line and
        // mention everyone.
        let source = "topics:\n  - name: \"x` @all\\n/close\"\n  - name: \"x` @all\\n/close\"\n";
        let out = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_30),
            present(source),
        )]));
        let message = &ambiguity(&out).message;
        assert!(
            message.contains("``x` @all\\n/close``"),
            "a longer fence holds the backtick, the newline stays escaped: {message}"
        );
        assert!(
            !message.lines().any(|l| l.trim_start().starts_with('/')),
            "{message}"
        );
        assert_eq!(code_span("`a`"), "`` `a` ``");
        assert_eq!(code_span("a\r\nb"), "`a\\r\\nb`");
        let long = "y".repeat(500);
        assert_eq!(code_span(&long), format!("`{}…`", "y".repeat(120)));
    }

    #[test]
    fn a_hostile_number_of_duplicates_keeps_the_message_short() {
        let mut source = String::from("topics:\n");
        for i in 0..5_000 {
            source.push_str(&format!("  - name: t{}\n", i % 50));
        }
        let out = compute_desired_state(inputs(vec![file(
            "topics/orders.yaml",
            present(ORDERS_30),
            present(&source),
        )]));
        let message = &ambiguity(&out).message;
        assert!(message.len() < 5_000, "{} bytes", message.len());
        assert!(message.contains("and 90 more"), "{message}");
        assert!(message.contains("40 more duplicated values"), "{message}");
    }

    #[test]
    fn no_policies_and_no_changes_is_an_empty_state() {
        let out = compute_desired_state(ReviewInputs {
            policy_files: Vec::new(),
            policy_problems: Vec::new(),
            self_edit_sides: Default::default(),
            changed_files: Ok(vec![file(
                "topics/a.yaml",
                present("a: 1"),
                present("a: 2"),
            )]),
            mr: MrContext::default(),
            limits: Limits::default(),
        });
        assert!(out.desired.findings.is_empty());
        assert_eq!(out.policy_digest, PolicySet::digest(&[]));
    }

    /// `n` topics whose retention shrinks from 30 to 7 days.
    fn shrinking(n: usize) -> (String, String) {
        let (mut base, mut source) = ("topics:\n".to_owned(), "topics:\n".to_owned());
        for i in 0..n {
            base.push_str(&format!("  - name: t{i:03}\n    retention_days: 30\n"));
            source.push_str(&format!("  - name: t{i:03}\n    retention_days: 7\n"));
        }
        (base, source)
    }

    #[test]
    fn a_rule_firing_more_than_25_times_is_one_grouped_finding_builtins_never() {
        let judge = |n: usize| {
            let (base, source) = shrinking(n);
            compute_desired_state(inputs(vec![
                file("topics/orders.yaml", present(&base), present(&source)),
                file("topics/broken.yaml", present("a: ["), present("a: 1")),
            ]))
        };
        let at = judge(25);
        assert_eq!(
            at.desired
                .findings
                .iter()
                .filter(|f| f.slot.rule == "retention-shrink")
                .count(),
            25
        );
        let above = judge(26);
        assert_eq!(
            slots(&above),
            vec![
                slot(RULE_PARSE_ERROR, "topics/broken.yaml#", Effect::Block),
                slot("retention-shrink", "*", Effect::Challenge),
            ]
        );
        assert_eq!(above.changes.len(), 26, "the changes are all still there");
        let group = finding(&above, "retention-shrink");
        let subjects: Vec<String> = above.changes.iter().map(Change::subject).collect();
        let members: Vec<_> = above
            .changes
            .iter()
            .zip(&subjects)
            .map(|(c, subject)| crate::model::GroupMember {
                subject,
                kind: c.kind,
                old: c.old.as_ref(),
                new: c.new.as_ref(),
            })
            .collect();
        assert_eq!(
            group.occurrence,
            Occurrence::of_group("retention-shrink", &members)
        );
        assert!(
            group
                .message
                .contains("- `topics/orders.yaml#/topics/t000/retention_days`: `30` → `7`"),
            "{}",
            group.message
        );
        assert!(
            group.message.contains(
                "For the first of them the rule says: Retention of `t000` shrinks from `30` to `7` days."
            ),
            "{}",
            group.message
        );
    }

    #[test]
    fn a_rule_s_group_above_replaces_the_default() {
        let mut inp = inputs(Vec::new());
        let policy = POLICY.replace(
            "    effect: challenge\n",
            "    effect: challenge\n    group_above: 2\n",
        );
        inp.policy_files[0].bytes = policy.into_bytes();
        let judge = |n: usize| {
            let (base, source) = shrinking(n);
            let mut inp = inp.clone();
            inp.changed_files = Ok(vec![file(
                "topics/orders.yaml",
                present(&base),
                present(&source),
            )]);
            slots(&compute_desired_state(inp))
        };
        assert_eq!(judge(2).len(), 2);
        assert_eq!(
            judge(3),
            vec![slot("retention-shrink", "*", Effect::Challenge)]
        );
    }
}
