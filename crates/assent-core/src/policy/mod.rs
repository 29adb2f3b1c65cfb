//! Policies: loading `.assent/policies/*.yaml` strictly, and judging semantic changes.
//!
//! A [`PolicySet`] is compiled from the bytes of every policy file (callers do the reading:
//! this module does no I/O and reads no clock or environment). Loading reports **all**
//! problems it can find, each with `file:line` whenever a line exists, sorted, so that
//! `assent lint` shows everything at once and a policy error finding names a place.
//!
//! # Decisions
//!
//! * **Load order** is files sorted by path, then rules in document order. Evaluation emits
//!   findings per change (input order), then per rule (load order): the output is a pure
//!   function of the inputs.
//! * **Rule ids** match `^[a-z0-9][a-z0-9._-]*$` and are unique across all files; the
//!   `assent/` prefix is reserved for built-in findings. A duplicate is reported at the later
//!   definition, naming the earlier one's `file:line`.
//! * **`match.files`** is required and non-empty: a rule that silently applied to every file
//!   of the repository is more likely a mistake than an intent. `match.pointer` defaults to
//!   every pointer, the whole-file pointer `""` included (same as `/**`). `match.kinds`
//!   defaults to all kinds; an empty list is a problem (it could never fire).
//! * **Identities** (`file glob → list pointer pattern → identity field`) are consulted
//!   first-match in load order. Declaring the same glob and pattern twice with different
//!   fields (in one file or across files) is a problem: the diff of those lists would depend
//!   on file names.
//! * **`when`** runs under the limits documented in [`cel_eval`]: the `cel` crate has no cost
//!   limit, so size, depth and comprehension nesting are capped at load time, and a worst-case
//!   cost computed from the expression is checked at load time and, with the sizes of the
//!   change's values, before every evaluation (over the limit: not evaluated). A run-time error
//!   or a non-bool result is never read as `false`: it becomes a `block` finding for the same
//!   slot saying the rule could not be evaluated, because failing open would let exactly the
//!   unexpected data through.
//! * **The run's CEL budget** ([`CelBudget`], default [`RUN_BUDGET`]): every evaluation is
//!   charged its cost bound; once the budget is spent the remaining evaluations are not
//!   performed, and [`Evaluation::unevaluated`] names, per file, the rules left unjudged, so
//!   the caller can block (`assent/undecidable`) instead of passing what was never judged.
//! * **Messages** are templates ([`template`]); a missing message renders
//!   `<rule>: <kind> of <pointer> in <file>`.
//! * **`group_above`** is a positive integer (YAML integer, `1` or more); without it a rule
//!   is grouped above [`DEFAULT_GROUP_ABOVE`] findings ([`crate::grouping`]). Evaluation
//!   itself never groups: [`PolicySet::group_above`] tells the caller the threshold.
//! * **Rule ids** are at most [`MAX_RULE_ID_CHARS`] characters: an id sits in every marker,
//!   headline and summary row, so its length counts against GitLab's note limit.
//! * **Digest**: see [`PolicySet::digest`].

mod cel_cost;
pub mod cel_eval;
mod cel_limits;
pub mod cel_shared;
pub mod cel_types;
pub mod document;
pub mod excerpt;
mod loader;
pub mod pattern;
pub mod suggest;
pub mod template;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use crate::grouping::DEFAULT_GROUP_ABOVE;
use crate::inert;
use crate::model::{Assenters, Change, ChangeKind, Effect, Finding, Occurrence, Slot};
use crate::semantic_diff::{Node, escape_pointer_token};

use cel_eval::{EvalError, Predicate};
use cel_shared::Bindings;

pub use cel_eval::{CelBudget, RUN_BUDGET};
use pattern::{FileGlob, PointerPattern};
use template::{Template, TemplateValues};

/// Largest policy file that loads, in bytes: far more than any real policy, small enough
/// that a hostile file cannot make `lint` or a run hold or parse much. `assent lint` and
/// `assent test` read at most this many bytes (plus one) of each file.
pub const MAX_POLICY_FILE_BYTES: usize = 1 << 20;

/// Longest rule id that loads, in characters.
pub const MAX_RULE_ID_CHARS: usize = 100;

/// One policy file as read from the target ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyFile {
    /// Repository path, e.g. `.assent/policies/topics.yaml`; used in problems and the digest.
    pub path: String,
    /// The file's bytes, unmodified.
    pub bytes: Vec<u8>,
}

/// One reason the policy set does not load.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyProblem {
    /// The policy file's path.
    pub file: String,
    /// 1-based line, when the problem has one.
    pub line: Option<usize>,
    /// What is wrong, in one line.
    pub message: String,
}

impl fmt::Display for PolicyProblem {
    /// `file:line: message`, or `file: message` without a line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file, line, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for PolicyProblem {}

/// What `when` predicates see of the merge request (the `mr` variable).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MrContext {
    /// Project-scoped IID.
    pub iid: u64,
    /// Title.
    pub title: String,
    /// Source branch name.
    pub source_branch: String,
    /// Target branch name.
    pub target_branch: String,
    /// Author username.
    pub author: String,
    /// Label names.
    pub labels: Vec<String>,
}

/// What [`PolicySet::evaluate_within`] judged, and what it could not.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The findings, per change in input order, then per rule in load order.
    pub findings: Vec<Finding>,
    /// For each finding (same index), the index in the evaluated `changes` of the change it
    /// judged: what a grouped finding's members are made of ([`crate::grouping::Fired`]).
    pub sources: Vec<usize>,
    /// File → ids of the rules whose `when` was not evaluated on at least one change of that
    /// file because the run's CEL budget was spent. Non-empty means the judgement is
    /// incomplete: the caller must fail closed (`assent/undecidable`).
    pub unevaluated: BTreeMap<String, BTreeSet<String>>,
    /// The budget after the run: how much was spent, and whether it ran out.
    pub budget: CelBudget,
    /// Each (rule, change) whose `when` failed (a run-time error, a non-bool, a cost over
    /// the limit): each is also a `block` finding among [`Evaluation::findings`], saying it
    /// could not be evaluated.
    pub failures: Vec<EvaluationFailure>,
}

/// A rule that could not be judged on one change: its `when` failed there, or the run's CEL
/// budget was spent before it could run. What `assent test --update` refuses to write down
/// as an expectation without a look.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EvaluationFailure {
    /// The rule's id.
    pub rule: String,
    /// The change's subject, `<file>#<pointer>` (`<file>#` for a spent budget).
    pub subject: String,
    /// Why, in one line (it may quote the change's values).
    pub reason: String,
}

/// One compiled rule.
#[derive(Debug)]
struct Rule {
    id: String,
    files: Vec<FileGlob>,
    pointer: PointerPattern,
    /// `None`: every kind.
    kinds: Option<Vec<ChangeKind>>,
    when: Option<Predicate>,
    effect: Effect,
    message: Template,
    /// The rule's own `assenters`, else its file's; `None`: the default.
    assenters: Option<Assenters>,
    /// Above this many findings the rule's findings are grouped.
    group_above: usize,
    /// The policy file defining the rule, and the line of its `match.files`, for lint
    /// warnings.
    defined_at: (String, Option<usize>),
}

impl Rule {
    fn matches(&self, change: &Change) -> bool {
        self.files.iter().any(|g| g.is_match(&change.file))
            && self.pointer.is_match(&change.pointer)
            && self.kinds.as_ref().is_none_or(|k| k.contains(&change.kind))
    }
}

/// One identity declaration: lists at `list` in files matching `file` are keyed by `field`.
#[derive(Debug)]
struct Identity {
    file: FileGlob,
    list: PointerPattern,
    field: String,
    /// The policy file and the line of the list pattern.
    defined_at: (String, Option<usize>),
    /// The line of the file glob.
    glob_line: Option<usize>,
}

/// Compiled rules and identity declarations from all policy files.
pub struct PolicySet {
    rules: Vec<Rule>,
    identities: Vec<Identity>,
    /// The `policy_owners:` one file declares; `None`: the default.
    policy_owners: Option<Assenters>,
    env: Arc<cel::Env>,
}

impl fmt::Debug for PolicySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicySet")
            .field("rules", &self.rules)
            .field("identities", &self.identities)
            .field("policy_owners", &self.policy_owners)
            .finish_non_exhaustive()
    }
}

impl PolicySet {
    /// Compiles `files`. An empty slice gives a set with no rules. On failure, returns every
    /// problem found, sorted by (file, line, message).
    pub fn load(files: &[PolicyFile]) -> Result<PolicySet, Vec<PolicyProblem>> {
        loader::load(files)
    }

    /// The policy digest pinned in receipts: `sha256:` + 64 lowercase hex over the files
    /// sorted by path (ties by content), hashing for each file its path bytes, one `0x00`
    /// byte, the content length as a big-endian `u64`, then the content bytes. The separator
    /// and length prefix make the encoding injective: moving bytes between a path and a
    /// content, or between two files, changes the digest. It covers the bytes as given,
    /// whether or not they load.
    pub fn digest(files: &[PolicyFile]) -> String {
        let mut sorted: Vec<&PolicyFile> = files.iter().collect();
        sorted.sort_by(|a, b| a.path.cmp(&b.path).then_with(|| a.bytes.cmp(&b.bytes)));
        let mut hasher = Sha256::new();
        for file in sorted {
            hasher.update(file.path.as_bytes());
            hasher.update([0u8]);
            hasher.update((file.bytes.len() as u64).to_be_bytes());
            hasher.update(&file.bytes);
        }
        format!("sha256:{}", hex::encode(hasher.finalize()))
    }

    /// The identity field of lists at `list_pointer` in `file`: the first declaration (load
    /// order) whose file glob matches `file` and whose pointer pattern matches `list_pointer`.
    pub fn identity_for(&self, file: &str, list_pointer: &str) -> Option<String> {
        self.identities
            .iter()
            .find(|i| i.file.is_match(file) && i.list.is_match(list_pointer))
            .map(|i| i.field.clone())
    }

    /// The `entry` of a change: the identity value (unescaped token) of the nearest enclosing
    /// identity-keyed list entry of `pointer` in `file`, or `None`. For
    /// `/topics/orders.events.v1/retention_days` with lists at `/topics` keyed by identity,
    /// it is `orders.events.v1`; for `/topics` itself it is `None`.
    pub fn entry_of(&self, file: &str, pointer: &str) -> Option<String> {
        if self.identities.is_empty() {
            return None;
        }
        // Byte offsets of each token's leading `/`: the text before it is the list pointer.
        let slashes: Vec<usize> = pointer.match_indices('/').map(|(i, _)| i).collect();
        let tokens = pattern::pointer_tokens(pointer);
        (0..tokens.len())
            .rev()
            .find(|&i| self.identity_for(file, &pointer[..slashes[i]]).is_some())
            .map(|i| tokens[i].clone())
    }

    /// Judges `changes` within the default per-run budget ([`CelBudget::default`]); see
    /// [`PolicySet::evaluate_within`].
    pub fn evaluate(&self, changes: &[Change], mr: &MrContext) -> Evaluation {
        self.evaluate_within(changes, mr, CelBudget::default())
    }

    /// Judges `changes`: one finding per (change, rule) that matches and whose `when` is
    /// absent or true, per change in input order and rule in load order. A `when` that fails
    /// at run time gives a `block` finding for the same slot (see the module docs). Every
    /// evaluation is charged to `budget`; once it is spent, no further `when` is evaluated
    /// and the rules left unjudged are listed per file in [`Evaluation::unevaluated`] (rules
    /// without `when` still fire: they cost no CEL work).
    pub fn evaluate_within(
        &self,
        changes: &[Change],
        mr: &MrContext,
        mut budget: CelBudget,
    ) -> Evaluation {
        let mr_value = mr_to_cel(mr);
        let mut findings = Vec::new();
        let mut sources = Vec::new();
        let mut unevaluated: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut failures = Vec::new();
        for (index, change) in changes.iter().enumerate() {
            let mut matching = self.rules.iter().filter(|r| r.matches(change)).peekable();
            if matching.peek().is_none() {
                continue;
            }
            let subject = change.subject();
            let entry = self.entry_of(&change.file, &change.pointer);
            let kind = change.kind.as_str();
            for rule in matching {
                let verdict = match &rule.when {
                    None => Ok(true),
                    Some(predicate) => predicate.evaluate(
                        &self.env,
                        &Bindings {
                            old: change.old.as_ref(),
                            new: change.new.as_ref(),
                            kind,
                            file: &change.file,
                            pointer: &change.pointer,
                            entry: entry.as_deref(),
                            mr: &mr_value,
                        },
                        &mut budget,
                    ),
                };
                let (effect, message) = match verdict {
                    Ok(false) => continue,
                    Ok(true) => (
                        rule.effect,
                        rule.message.render(&TemplateValues {
                            old: change.old.as_ref(),
                            new: change.new.as_ref(),
                            entry: entry.as_deref(),
                            file: &change.file,
                            pointer: &change.pointer,
                            kind,
                            rule: &rule.id,
                        }),
                    ),
                    Err(EvalError::BudgetSpent { .. }) => {
                        unevaluated
                            .entry(change.file.clone())
                            .or_default()
                            .insert(rule.id.clone());
                        continue;
                    }
                    Err(error) => {
                        let reason = error.to_string();
                        // The subject and the error (which may quote values) are MR content.
                        let message = format!(
                            "rule {} could not be evaluated on {}: {} — fix the rule or the data",
                            inert::code(&rule.id),
                            inert::code(&subject),
                            inert::code(&reason)
                        );
                        failures.push(EvaluationFailure {
                            rule: rule.id.clone(),
                            subject: subject.clone(),
                            reason,
                        });
                        (Effect::Block, message)
                    }
                };
                findings.push(Finding {
                    slot: Slot {
                        rule: rule.id.clone(),
                        subject: subject.clone(),
                    },
                    effect,
                    occurrence: Occurrence::of(
                        &rule.id,
                        &subject,
                        change.kind,
                        change.old.as_ref(),
                        change.new.as_ref(),
                    ),
                    message,
                });
                sources.push(index);
            }
        }
        Evaluation {
            findings,
            sources,
            unevaluated,
            budget,
            failures,
        }
    }

    /// For each rule with a `when` that reads fields of `mr` and that `match`es one of
    /// `changes` (so its `when` was asked about it), the fields it reads, by rule id. What
    /// a caller that could not fill every field of [`MrContext`] (`assent check`, before the
    /// merge request exists) must say its verdict depended on.
    pub fn mr_fields_read(&self, changes: &[Change]) -> BTreeMap<String, BTreeSet<&'static str>> {
        let mut read: BTreeMap<String, BTreeSet<&'static str>> = BTreeMap::new();
        for rule in &self.rules {
            let Some(predicate) = &rule.when else {
                continue;
            };
            let fields = predicate.mr_fields();
            if !fields.is_empty() && changes.iter().any(|c| rule.matches(c)) {
                read.entry(rule.id.clone()).or_default().extend(fields);
            }
        }
        read
    }

    /// Whether some rule could judge a change of a kind at a pointer of `file`: its
    /// `match.files`, `match.pointer` and `match.kinds` accept it (`when` is not asked). What
    /// a run spells out of the values under a reported change ([`crate::semantic_diff::Descendants`]):
    /// a change no rule matches can give no finding. The file globs are matched once, here.
    pub fn could_judge<'s>(&'s self, file: &str) -> impl Fn(&str, ChangeKind) -> bool + 's {
        let rules: Vec<&Rule> = self
            .rules
            .iter()
            .filter(|r| r.files.iter().any(|g| g.is_match(file)))
            .collect();
        move |pointer, kind| {
            rules.iter().any(|r| {
                r.kinds.as_ref().is_none_or(|k| k.contains(&kind)) && r.pointer.is_match(pointer)
            })
        }
    }

    /// Whether any rule's `match.files` glob matches `path`: the file is *governed*, so a
    /// run reads and diffs it. Identity declarations alone do not govern a file.
    pub fn governs(&self, path: &str) -> bool {
        self.rules
            .iter()
            .any(|r| r.files.iter().any(|g| g.is_match(path)))
    }

    /// Every rule's `match.files` globs as written, sorted, once each: what makes a path
    /// governed, for a built-in that must tell whether a pattern can reach a governed path
    /// without a path in hand (`crate::git_attributes`).
    pub fn file_globs(&self) -> Vec<&str> {
        let mut globs: Vec<&str> = self
            .rules
            .iter()
            .flat_map(|r| r.files.iter().map(FileGlob::as_str))
            .collect();
        globs.sort_unstable();
        globs.dedup();
        globs
    }

    /// Rule id → who may assent to its challenges, for every rule that narrows it (its
    /// own `assenters:` or its policy file's).
    pub fn assenters_by_rule(&self) -> BTreeMap<String, Assenters> {
        self.rules
            .iter()
            .filter_map(|r| Some((r.id.clone(), r.assenters.clone()?)))
            .collect()
    }

    /// Who may assent to a change of the policies themselves (`assent/self-edit`): the
    /// `policy_owners:` as a policy file declares it; `None` when none does.
    pub fn declared_policy_owners(&self) -> Option<&Assenters> {
        self.policy_owners.as_ref()
    }

    /// `policy_owners:` a policy file declares, else [`Assenters::default_policy_owners`].
    pub fn policy_owners(&self) -> Assenters {
        self.policy_owners
            .clone()
            .unwrap_or_else(Assenters::default_policy_owners)
    }

    /// Above how many findings in one merge request `rule`'s findings share one thread: the
    /// rule's `group_above`, else [`DEFAULT_GROUP_ABOVE`] (also for an id no rule has).
    pub fn group_above(&self, rule: &str) -> usize {
        self.rules
            .iter()
            .find(|r| r.id == rule)
            .map_or(DEFAULT_GROUP_ABOVE, |r| r.group_above)
    }

    /// A warning for each `match.files` glob that matches none of `paths` (a checkout's
    /// files, `/`-separated repository paths), in load order: such a glob governs nothing
    /// there, most likely a typo (`topics/*.yml` for `.yaml` files) or a moved folder. Paths
    /// under `.assent/` do not count: they are never governed.
    pub fn unmatched_globs<'p>(
        &self,
        paths: impl IntoIterator<Item = &'p str>,
    ) -> Vec<PolicyProblem> {
        let paths: Vec<&str> = paths
            .into_iter()
            .filter(|p| !p.starts_with(".assent/"))
            .collect();
        let mut warnings = Vec::new();
        for rule in &self.rules {
            for glob in &rule.files {
                if !paths.iter().any(|p| glob.is_match(p)) {
                    let (file, line) = &rule.defined_at;
                    warnings.push(PolicyProblem {
                        file: file.clone(),
                        line: *line,
                        message: excerpt::sanitize_message(&format!(
                            "rule `{}`: match.files glob `{}` matches no file in the checkout, so the rule judges nothing here",
                            rule.id,
                            glob.as_str()
                        )),
                    });
                }
            }
        }
        warnings
    }

    /// Rules that judge a pointer on some kinds of change but not on `delete`, where no rule
    /// (itself included) judges the delete instead: a merge request that deletes the key
    /// passes unjudged. One warning per such rule and file glob, in load order, at the
    /// rule's `match.files` line.
    ///
    /// A rule **covers** the delete of rule `r`'s pointer under glob `g` when it judges
    /// deletes (`kinds` absent or listing `delete`), one of its globs covers `g`
    /// ([`FileGlob::covers`]: by path component, `**` and `*` as wildcards) and its pointer
    /// pattern covers `r`'s ([`PointerPattern::covers`]: exact containment, `**` any run of
    /// segments, `*` one). A rule's `when` is not looked at: a rule that matches the delete
    /// counts even when its `when` is false there, so a warning is never raised for a gap a
    /// matching rule closes, and a `when` that cannot run on a delete fails closed at run
    /// time anyway (an evaluation error is a `block` finding). A rule on a parent
    /// (`/topics/*`) does not cover its children: deleting a key leaves its parent in place.
    pub fn uncovered_deletes(&self) -> Vec<PolicyProblem> {
        self.uncovered(ChangeKind::Delete)
    }

    /// The mirror image of [`PolicySet::uncovered_deletes`]: rules that judge a pointer on
    /// some kinds of change but not on `add`, where no rule judges the add instead, so a
    /// merge request that sets the key where it was absent (and the default applied) passes
    /// unjudged. Coverage is decided the same way; a rule on a parent does not cover its
    /// children here either, since adding a key to an existing entry adds no parent.
    pub fn uncovered_adds(&self) -> Vec<PolicyProblem> {
        self.uncovered(ChangeKind::Add)
    }

    /// The (rule, glob) pairs whose pointer no rule judges on `kind` (see
    /// [`PolicySet::uncovered_deletes`]).
    fn uncovered(&self, kind: ChangeKind) -> Vec<PolicyProblem> {
        let judges = |rule: &Rule| rule.kinds.as_ref().is_none_or(|k| k.contains(&kind));
        let (verb, participle) = match kind {
            ChangeKind::Add => ("add", "adds"),
            ChangeKind::Delete => ("delete", "deletes"),
            ChangeKind::Modify => ("modify", "modifies"),
        };
        let mut warnings = Vec::new();
        for rule in &self.rules {
            let Some(kinds) = &rule.kinds else { continue };
            if kinds.contains(&kind) {
                continue;
            }
            for glob in &rule.files {
                let covered = self.rules.iter().any(|other| {
                    judges(other)
                        && other.pointer.covers(&rule.pointer)
                        && other.files.iter().any(|g| g.covers(glob))
                });
                if covered {
                    continue;
                }
                let judged: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
                let (file, line) = &rule.defined_at;
                warnings.push(PolicyProblem {
                    file: file.clone(),
                    line: *line,
                    message: excerpt::sanitize_message(&format!(
                        "rule `{}`: judges {} in `{}` only on {}, and no rule judges its {verb}, so a merge request that {participle} it passes unjudged; add a rule with `kinds: [{verb}]` for that pointer",
                        rule.id,
                        pointer_shown(rule.pointer.as_str()),
                        glob.as_str(),
                        judged.join(", ")
                    )),
                });
            }
        }
        warnings
    }

    /// Whether some identity declaration's file glob matches `path`: the files whose lists
    /// [`PolicySet::unused_identities`] needs to see.
    pub fn identity_covers(&self, path: &str) -> bool {
        self.identities.iter().any(|i| i.file.is_match(path))
    }

    /// A warning for each identity declaration that keys nothing in a checkout, at its line,
    /// in load order: a typo there is silent at run time, since a list no declaration keys
    /// is compared by position, and a rule that names entries by their key
    /// (`/topics/orders.events.v1/…`, matched by `/topics/*/…`) then never fires.
    ///
    /// * its file glob matches none of `paths` (the checkout's files, `/`-separated; paths
    ///   under `.assent/` do not count), or only files no rule's `match.files` matches
    ///   (one warning per glob and policy file);
    /// * its list pattern matches no list in `documents` (the parsed files its glob matches,
    ///   each with its path), each list's pointer taken as changes carry it (an entry of a
    ///   keyed list by its key). Not raised when no file its glob matches could be parsed.
    pub fn unused_identities(
        &self,
        paths: &[&str],
        documents: &[(&str, &Node)],
    ) -> Vec<PolicyProblem> {
        let paths: Vec<&str> = paths
            .iter()
            .copied()
            .filter(|p| !p.starts_with(".assent/"))
            .collect();
        let mut lists: Vec<(&str, Vec<String>)> = Vec::new();
        for (path, document) in documents {
            let mut found = Vec::new();
            let mut pointer = String::new();
            self.collect_lists(path, document, &mut pointer, &mut found);
            lists.push((path, found));
        }
        let mut warnings = Vec::new();
        let mut globs_warned: BTreeSet<(&str, &str)> = BTreeSet::new();
        for identity in &self.identities {
            let (policy, line) = &identity.defined_at;
            let glob = identity.file.as_str();
            let matched: Vec<&str> = paths
                .iter()
                .copied()
                .filter(|p| identity.file.is_match(p))
                .collect();
            let governed = matched.iter().any(|p| {
                self.rules
                    .iter()
                    .any(|r| r.files.iter().any(|g| g.is_match(p)))
            });
            if matched.is_empty() || !governed {
                if globs_warned.insert((policy.as_str(), glob)) {
                    let why = if matched.is_empty() {
                        "matches no file in the checkout"
                    } else {
                        "matches only files no rule's match.files governs"
                    };
                    warnings.push(PolicyProblem {
                        file: policy.clone(),
                        line: identity.glob_line,
                        message: excerpt::sanitize_message(&format!(
                            "identities: file glob `{glob}` {why}, so it keys no list any rule judges: a list it was meant for is compared by position, where a reorder or an insert shifts every entry after it and a rule that names an entry by its key never fires; fix the glob"
                        )),
                    });
                }
                continue;
            }
            let parsed: Vec<&(&str, Vec<String>)> = lists
                .iter()
                .filter(|(path, _)| identity.file.is_match(path))
                .collect();
            if parsed.is_empty() {
                continue;
            }
            let used = parsed
                .iter()
                .any(|(_, found)| found.iter().any(|p| identity.list.is_match(p)));
            if !used {
                let shown: Vec<String> = {
                    let mut all: Vec<&String> =
                        parsed.iter().flat_map(|(_, found)| found.iter()).collect();
                    all.sort();
                    all.dedup();
                    all.iter().take(3).map(|p| pointer_shown(p)).collect()
                };
                let there = if shown.is_empty() {
                    "they hold no list".to_owned()
                } else {
                    format!("their lists are at {}", shown.join(", "))
                };
                warnings.push(PolicyProblem {
                    file: policy.clone(),
                    line: *line,
                    message: excerpt::sanitize_message(&format!(
                        "identities: list pattern {} matches no list in the {} file(s) `{glob}` matches ({there}), so the lists it was meant for are compared by position, where a reorder or an insert shifts every entry after it and a rule that names an entry by its key never fires; fix the pattern (one `*` stands for an entry of a list: a list inside each entry of `/topics` is `/topics/*/acls`)",
                        pointer_shown(identity.list.as_str()),
                        parsed.len()
                    )),
                });
            }
        }
        warnings
    }

    /// Every list in `node` at `pointer` of file `path`, each pointer as changes carry it:
    /// an entry of a list this set keys is named by its key (string or integer), any other
    /// entry by its index.
    fn collect_lists(&self, path: &str, node: &Node, pointer: &mut String, out: &mut Vec<String>) {
        let len = pointer.len();
        match node {
            Node::Object(entries, _) => {
                for (key, value) in entries.iter() {
                    pointer.push('/');
                    pointer.push_str(&escape_pointer_token(key.as_ref()));
                    self.collect_lists(path, value, pointer, out);
                    pointer.truncate(len);
                }
            }
            Node::Array(items, _) => {
                out.push(pointer.clone());
                let field = self.identity_for(path, pointer);
                for (index, item) in items.iter().enumerate() {
                    let key = field.as_deref().and_then(|f| match item.get(f) {
                        Some(Node::String(text, _)) => Some(text.to_string()),
                        Some(Node::Number(number, _)) if number.is_i64() || number.is_u64() => {
                            Some(number.to_string())
                        }
                        _ => None,
                    });
                    pointer.push('/');
                    pointer.push_str(&escape_pointer_token(
                        &key.unwrap_or_else(|| index.to_string()),
                    ));
                    self.collect_lists(path, item, pointer, out);
                    pointer.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// Rule ids in load order.
    pub fn rule_ids(&self) -> Vec<&str> {
        self.rules.iter().map(|r| r.id.as_str()).collect()
    }
}

/// A pointer pattern as a warning names it: `""` is the whole file.
fn pointer_shown(pattern: &str) -> String {
    if pattern.is_empty() {
        "the whole file (pointer `\"\"`)".to_owned()
    } else {
        format!("`{pattern}`")
    }
}

fn mr_to_cel(mr: &MrContext) -> cel::Value {
    let iid = i64::try_from(mr.iid).map_or(cel::Value::UInt(mr.iid), cel::Value::Int);
    let labels: Vec<cel::Value> = mr
        .labels
        .iter()
        .map(|l| cel::Value::from(l.as_str()))
        .collect();
    cel::Value::from(HashMap::from([
        ("iid", iid),
        ("title", mr.title.as_str().into()),
        ("source_branch", mr.source_branch.as_str().into()),
        ("target_branch", mr.target_branch.as_str().into()),
        ("author", mr.author.as_str().into()),
        ("labels", labels.into()),
    ]))
}

/// Whether `id` is a well-formed user rule id (`^[a-z0-9][a-z0-9._-]*$`).
/// The problem of a policy file over [`MAX_POLICY_FILE_BYTES`], also used by the local
/// readers of `assent lint` and `assent test`.
pub fn too_large(bytes: usize) -> String {
    format!("file is {bytes} bytes, more than the {MAX_POLICY_FILE_BYTES} allowed")
}

#[cfg(test)]
mod tests;
