//! The desired review state of a merge request, computed from already-read inputs (SPEC §3).
//!
//! [`compute_desired_state`] is pure: the caller (see `crate::review_input`) reads policy
//! files, the change set and file contents at pinned SHAs, and this module judges them. The
//! result is a function of its inputs only; the order in which files are given does not matter.
//!
//! # Built-in findings (always on, all `block`, fail closed)
//!
//! | rule | subject | when |
//! | --- | --- | --- |
//! | `assent/policy-error` | `.assent/policies#` | the target's policies do not load |
//! | `assent/self-edit` | `<path>#` | a changed file's old or new path is under `.assent/` |
//! | `assent/undecidable` | `merge-request#` | the change set could not be listed completely |
//! | `assent/undecidable` | `<path>#` | a changed file is withheld, a governed file is unreadable, or the run's CEL budget was spent before every rule was evaluated on the file's changes |
//! | `assent/parse-error` | `<path>#` | a governed file does not parse at the base or the source |
//!
//! # Decisions
//!
//! * **Governed file**: a path that is not under `.assent/`, that some rule's `match.files`
//!   glob matches ([`PolicySet::governs`]) and whose extension names a structured format
//!   ([`format_for_path`]). Only governed files are parsed and diffed; every other file is
//!   ignored (apart from the built-ins that look at paths only). Paths under `.assent/` are never
//!   governed: such an MR is blocked by `assent/self-edit` whatever it changes, and judging
//!   policy files with the policies they replace would be meaningless.
//! * **Policy errors**: when the policies do not load, *one* `assent/policy-error` finding lists
//!   every problem (`file:line: message`). No policy rule is evaluated and no file is known to
//!   be governed, so no content is read or diffed; the path-only built-ins (`self-edit`,
//!   `undecidable` for an incomplete or withheld change set) still apply. Its occurrence is
//!   `Occurrence::of("assent/policy-error", ".assent/policies#", modify, null, [problems as
//!   strings])`, so it changes (and the thread is superseded) exactly when the problems change.
//! * **Occurrences of the other built-ins** follow the same shape, `kind` `modify`, `old` null:
//!   `self-edit` has `new` null (one stable thread per path, however often the policy file is
//!   pushed again); `undecidable` and `parse-error` have `new` = the list of reasons, so a
//!   different reason gives a new thread.
//! * **Withheld files**: any changed file the forge withheld (diff too large or collapsed) is
//!   `assent/undecidable`, governed or not, as SPEC §3 says an incomplete change set is.
//! * **Unreadable content** of a governed side makes that file `assent/undecidable`, and the
//!   file is not diffed at all (a partial diff would be a guess). Reasons for one path are
//!   merged into one finding, so the slot holds every reason.
//! * **Parse errors** name `path:line: message` for each side that fails (base and/or source);
//!   a file with a parse error is not diffed.
//! * **Renames**: when both paths are governed, `old_path` at the base is diffed against
//!   `new_path` at the source under `file = new_path` (identities and subjects of the new
//!   path), so a pure rename is no change. When only one of the two paths is governed, the
//!   rename is judged as what it is for the governed side: a whole-file delete of `old_path`
//!   (file moved out of governance) or a whole-file add of `new_path` (moved in). That way a
//!   rename can never carry a governed file out of sight silently.
//! * **Contents that were not read** are [`FileContent::Absent`] in [`ChangedFileInput`]: the
//!   reader only reads the governed sides (see [`is_governed`]), and this module only looks at
//!   governed sides, so the two agree by construction.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::core::model::{Change, ChangeKind, DesiredState, Effect, Finding, Occurrence, Slot};
use crate::core::policy::{CelBudget, MrContext, PolicyFile, PolicySet};
use crate::core::semantic_diff::{
    Limits, Node, ParseError, diff_documents, format_for_path, parse_document,
};

/// Rule id of the finding for policies that do not load.
pub const RULE_POLICY_ERROR: &str = "assent/policy-error";
/// Rule id of the finding for an MR touching `.assent/`.
pub const RULE_SELF_EDIT: &str = "assent/self-edit";
/// Rule id of the finding for a change set or file that cannot be judged.
pub const RULE_UNDECIDABLE: &str = "assent/undecidable";
/// Rule id of the finding for a governed file that does not parse.
pub const RULE_PARSE_ERROR: &str = "assent/parse-error";
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
    /// The forge withheld this file's diff (too large or collapsed).
    pub withheld: bool,
}

/// Everything [`compute_desired_state`] judges.
#[derive(Debug, Clone)]
pub struct ReviewInputs {
    /// Every policy file under `.assent/policies` at the **target** SHA.
    pub policy_files: Vec<PolicyFile>,
    /// The changed files, or why the change set is incomplete.
    pub changed_files: Result<Vec<ChangedFileInput>, String>,
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
    /// Every semantic change of the governed files, sorted by (file, pointer, kind).
    pub changes: Vec<Change>,
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
        changed_files,
        mr,
        limits,
    } = inputs;
    let policy_digest = PolicySet::digest(&policy_files);
    let mut builtins = Vec::new();
    // Undecidable reasons per subject, merged into one finding each.
    let mut undecidable: BTreeMap<String, Vec<String>> = BTreeMap::new();

    let mut files: Vec<ChangedFileInput> = match changed_files {
        Ok(files) => files,
        Err(reason) => {
            undecidable
                .entry(MERGE_REQUEST_SUBJECT.to_owned())
                .or_default()
                .push(format!("the change set is incomplete: {reason}"));
            Vec::new()
        }
    };
    // Input order must not matter.
    files.sort_by(|a, b| {
        (&a.new_path, &a.old_path, a.withheld).cmp(&(&b.new_path, &b.old_path, b.withheld))
    });

    let mut self_edited: Vec<&str> = files
        .iter()
        .flat_map(|f| [f.old_path.as_str(), f.new_path.as_str()])
        .filter(|p| is_assent_path(p))
        .collect();
    self_edited.sort_unstable();
    self_edited.dedup();
    for path in self_edited {
        builtins.push(self_edit_finding(path));
    }

    for file in &files {
        if file.withheld {
            undecidable
                .entry(subject_of(&file.new_path))
                .or_default()
                .push(format!(
                    "the forge withheld the diff of `{}` (too large or collapsed)",
                    file.new_path
                ));
        }
    }

    let policies = match PolicySet::load(&policy_files) {
        Ok(set) => Some(set),
        Err(problems) => {
            builtins.push(policy_error_finding(
                &problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ));
            None
        }
    };

    let mut changes = Vec::new();
    if let Some(policies) = &policies {
        for file in files {
            if file.withheld {
                continue;
            }
            judge_file(
                policies,
                file,
                &limits,
                &mut changes,
                &mut undecidable,
                &mut builtins,
            );
        }
    }
    changes.sort_by(|a, b| (&a.file, &a.pointer, a.kind).cmp(&(&b.file, &b.pointer, b.kind)));
    changes.dedup();

    let mut findings = match &policies {
        Some(policies) => {
            let evaluation = policies.evaluate_within(&changes, &mr, cel_budget);
            for (file, rules) in &evaluation.unevaluated {
                undecidable
                    .entry(subject_of(file))
                    .or_default()
                    .push(budget_spent_reason(file, rules, evaluation.budget.limit()));
            }
            evaluation.findings
        }
        None => Vec::new(),
    };
    findings.extend(builtins);
    for (subject, reasons) in undecidable {
        findings.push(undecidable_finding(&subject, &reasons));
    }
    let assenters = policies
        .as_ref()
        .map(PolicySet::assenters_by_rule)
        .unwrap_or_default();
    DesiredOutcome {
        desired: DesiredState::new(findings).with_assenters(assenters),
        policy_digest,
        changes,
    }
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

/// Parses and diffs one file (not withheld) whose sides may be governed.
fn judge_file(
    policies: &PolicySet,
    file: ChangedFileInput,
    limits: &Limits,
    changes: &mut Vec<Change>,
    undecidable: &mut BTreeMap<String, Vec<String>>,
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

    let mut unreadable = Vec::new();
    for (used, side, content, side_path) in [
        (use_base, "base", &base, old_path),
        (use_source, "source", &source, new_path),
    ] {
        if let (true, FileContent::Unreadable(reason)) = (used, content) {
            unreadable.push(format!(
                "`{side_path}` could not be read at the {side} SHA: {reason}"
            ));
        }
    }
    if !unreadable.is_empty() {
        undecidable.entry(subject).or_default().extend(unreadable);
        return;
    }

    // Consumes the side's content: its bytes are freed once its tree is built.
    let parse_side = |used: bool, content: FileContent, side_path: &str| {
        let FileContent::Present(bytes) = content else {
            return None;
        };
        if !used {
            return None;
        }
        let format = format_for_path(side_path)?;
        Some(parse_document(side_path, format, &bytes, limits))
    };
    let parallel = side_bytes(&base) + side_bytes(&source) >= PARALLEL_PARSE_BYTES;
    let parse_base = move || parse_side(use_base, base, old_path);
    let parse_source = move || parse_side(use_source, source, new_path);
    let (old, new) = if parallel {
        // Parsing is most of a large file's cost and the sides are independent: one side on a
        // scoped thread halves the wait. The result is the same either way.
        std::thread::scope(|scope| {
            let base = scope.spawn(parse_base);
            let source = parse_source();
            let base = base
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (base, source)
        })
    } else {
        (parse_base(), parse_source())
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
    if !errors.is_empty() {
        builtins.push(parse_error_finding(&subject, &errors));
        return;
    }
    let identity = |pointer: &str| policies.identity_for(path, pointer);
    changes.extend(diff_documents(path, old.as_ref(), new.as_ref(), &identity));
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

fn self_edit_finding(path: &str) -> Finding {
    builtin(
        RULE_SELF_EDIT,
        &subject_of(path),
        None,
        format!(
            "This merge request changes `{path}`. A merge request is never judged under policies \
             it edits itself, so assent blocks it: the gate can only pass once the merge request \
             no longer touches `.assent/`. Move policy changes into a merge request of their own; \
             a maintainer must review it (with `assent lint` and `assent test`) and take the merge \
             decision outside this gate. Later merge requests are then judged under the new \
             policies."
        ),
    )
}

fn policy_error_finding(problems: &[String]) -> Finding {
    let list: String = problems.iter().map(|p| format!("\n- `{p}`")).collect();
    builtin(
        RULE_POLICY_ERROR,
        POLICY_ERROR_SUBJECT,
        Some(json!(problems)),
        format!(
            "The policies in `.assent/policies` on the target branch do not load, so this merge \
             request cannot be judged and assent blocks it. Fix them on the target branch (run \
             `assent lint` to see every problem):{list}"
        ),
    )
}

fn undecidable_finding(subject: &str, reasons: &[String]) -> Finding {
    let list: String = reasons.iter().map(|r| format!("\n- {r}")).collect();
    builtin(
        RULE_UNDECIDABLE,
        subject,
        Some(json!(reasons)),
        format!(
            "assent cannot see everything this merge request changes, so it blocks rather than \
             guess. Rerun the pipeline once the cause is gone, or split the merge request:{list}"
        ),
    )
}

/// Names the rules and the limit only (no counts), so the finding keeps its occurrence while
/// the same rules stay unjudged.
fn budget_spent_reason(file: &str, rules: &BTreeSet<String>, limit: f64) -> String {
    let names: Vec<String> = rules.iter().map(|r| format!("`{r}`")).collect();
    format!(
        "the run's CEL budget ({limit:e} steps) was spent before rule(s) {} could be evaluated \
         on every change of `{file}`: make the predicates cheaper, narrow their \
         `match.pointer`, or split the merge request",
        names.join(", ")
    )
}

fn parse_error_finding(subject: &str, errors: &[String]) -> Finding {
    let list: String = errors.iter().map(|e| format!("\n- `{e}`")).collect();
    builtin(
        RULE_PARSE_ERROR,
        subject,
        Some(json!(errors)),
        format!(
            "A governed file does not parse, so its changes cannot be judged and assent blocks \
             the merge request. Fix the file:{list}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
            withheld: false,
        }
    }

    fn inputs(files: Vec<ChangedFileInput>) -> ReviewInputs {
        ReviewInputs {
            policy_files: policies(),
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
            "Retention of orders.events.v1 shrinks from 30 to 7 days."
        );
        assert_eq!(out.changes.len(), 1);
        assert_eq!(out.policy_digest, PolicySet::digest(&policies()));
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
            ChangedFileInput {
                withheld: true,
                ..file("big.json", FileContent::Absent, FileContent::Absent)
            },
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
                slot(RULE_UNDECIDABLE, "big.json#", Effect::Block),
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

    #[test]
    fn touching_assent_is_a_self_edit_block_per_path() {
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
                withheld: false,
            },
            file(".assentish/x.yaml", present("a: 1"), present("a: 2")),
        ]));
        assert_eq!(
            slots(&out),
            vec![
                slot(
                    RULE_SELF_EDIT,
                    ".assent/policies/topics.yaml#",
                    Effect::Block
                ),
                slot(RULE_SELF_EDIT, ".assent/tests/a.yaml#", Effect::Block),
            ]
        );
        let f = finding(&out, RULE_SELF_EDIT);
        assert!(
            f.message
                .contains("never judged under policies it edits itself")
        );
        assert!(f.message.contains("maintainer"));
        assert!(f.message.contains("only pass once"));
        assert!(!f.message.lines().any(|l| l.starts_with('/')));
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
                Effect::Block
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
    fn withheld_files_are_undecidable_governed_or_not() {
        let withheld = |path: &str| ChangedFileInput {
            withheld: true,
            ..file(path, present(ORDERS_30), present(ORDERS_7))
        };
        let out = compute_desired_state(inputs(vec![
            withheld("topics/orders.yaml"),
            withheld("vendor/blob.bin"),
        ]));
        assert_eq!(
            slots(&out),
            vec![
                slot(RULE_UNDECIDABLE, "topics/orders.yaml#", Effect::Block),
                slot(RULE_UNDECIDABLE, "vendor/blob.bin#", Effect::Block),
            ],
            "a withheld governed file is not diffed: no guess from partial data"
        );
        assert!(finding(&out, RULE_UNDECIDABLE).message.contains("withheld"));
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
            billing.message.contains("base SHA: timeout"),
            "{}",
            billing.message
        );
        assert!(
            billing.message.contains("source SHA: reset"),
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
    fn withheld_and_unreadable_reasons_share_one_slot() {
        let out = compute_desired_state(inputs(vec![
            ChangedFileInput {
                withheld: true,
                ..file("topics/orders.yaml", present(ORDERS_30), present(ORDERS_7))
            },
            ChangedFileInput {
                old_path: "topics/orders.yaml".into(),
                new_path: "topics/orders.yaml".into(),
                base: FileContent::Unreadable("x".into()),
                source: present(ORDERS_7),
                withheld: false,
            },
        ]));
        assert_eq!(out.desired.findings.len(), 1);
        let message = &out.desired.findings[0].message;
        assert!(
            message.contains("withheld") && message.contains("could not be read"),
            "{message}"
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
        assert_eq!(
            slots(&out),
            vec![slot("file-deleted", "topics/gone.yaml#", Effect::Block)]
        );
        assert_eq!(out.changes.len(), 2);
        assert_eq!(out.changes[0].kind, ChangeKind::Delete);
        assert_eq!(out.changes[1].kind, ChangeKind::Add);
    }

    #[test]
    fn a_rename_between_governed_paths_diffs_old_against_new_under_the_new_path() {
        let out = compute_desired_state(inputs(vec![ChangedFileInput {
            old_path: "topics/orders.yaml".into(),
            new_path: "topics/orders-v2.yaml".into(),
            base: present(ORDERS_30),
            source: present(ORDERS_7),
            withheld: false,
        }]));
        assert_eq!(
            slots(&out),
            vec![slot(
                "retention-shrink",
                "topics/orders-v2.yaml#/topics/orders.events.v1/retention_days",
                Effect::Challenge
            )]
        );
        // A pure rename is no change.
        let out = compute_desired_state(inputs(vec![ChangedFileInput {
            old_path: "topics/orders.yaml".into(),
            new_path: "topics/orders-v2.yaml".into(),
            base: present(ORDERS_30),
            source: present(ORDERS_30),
            withheld: false,
        }]));
        assert!(out.changes.is_empty());
        assert!(out.desired.findings.is_empty());
    }

    #[test]
    fn a_rename_out_of_or_into_governance_is_a_whole_file_delete_or_add() {
        let out = compute_desired_state(inputs(vec![ChangedFileInput {
            old_path: "topics/orders.yaml".into(),
            new_path: "attic/orders.yaml".into(),
            base: present(ORDERS_30),
            source: present(ORDERS_30),
            withheld: false,
        }]));
        assert_eq!(
            slots(&out),
            vec![slot("file-deleted", "topics/orders.yaml#", Effect::Block)]
        );
        let out = compute_desired_state(inputs(vec![ChangedFileInput {
            old_path: "topics/orders.yaml".into(),
            new_path: "archive/orders.yaml".into(),
            base: present(ORDERS_30),
            source: present(ORDERS_30),
            withheld: false,
        }]));
        // Both governed: diffed under the new path, nothing changed, nothing fires.
        assert!(out.desired.findings.is_empty(), "{:?}", slots(&out));
        let out = compute_desired_state(inputs(vec![ChangedFileInput {
            old_path: "attic/orders.yaml".into(),
            new_path: "archive/orders.yaml".into(),
            base: FileContent::Unreadable("not read".into()),
            source: present(ORDERS_30),
            withheld: false,
        }]));
        assert_eq!(
            slots(&out),
            vec![slot("archived", "archive/orders.yaml#", Effect::Comment)],
            "the ungoverned side is neither read nor judged"
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
            ChangedFileInput {
                withheld: true,
                ..file("topics/huge.yaml", FileContent::Absent, FileContent::Absent)
            },
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
        assert_eq!(forward.desired.findings.len(), 6, "{:?}", slots(&forward));
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

    #[test]
    fn no_policies_and_no_changes_is_an_empty_state() {
        let out = compute_desired_state(ReviewInputs {
            policy_files: Vec::new(),
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
}
