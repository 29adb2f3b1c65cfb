//! The vocabulary of reconciliation: findings, slots, occurrences and artifacts.
//!
//! A *finding* is one (rule, concrete change) that fired. Its *slot* `(rule, subject)` says
//! where it lives across runs; its *occurrence* fingerprints the judged content, so the same
//! content gives the same occurrence on every run and a change of content gives a new one.
//! An *artifact* is what a forge listing shows of something assent posted earlier.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::canonical_json::{self, Sink};
use crate::commit_sha::CommitSha;

/// How strongly a finding gates the merge request. Ordered: `Comment < Challenge < Block`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Informs; its thread is resolved by assent right after creation, so it never gates.
    Comment,
    /// Gates until a human resolves (assents to) its thread.
    Challenge,
    /// Gates unconditionally: the decision is `BLOCK`.
    Block,
}

impl Effect {
    /// The lowercase name used in policies, receipts and summaries.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Comment => "comment",
            Effect::Challenge => "challenge",
            Effect::Block => "block",
        }
    }
}

pub use assent_semdiff::{Change, ChangeKind};

/// Where a finding lives across runs: `(rule id, subject)`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Slot {
    /// The rule id, e.g. `retention-shrink` or `assent/self-edit`.
    pub rule: String,
    /// `<file>#<pointer>`, or another stable subject for built-in findings.
    pub subject: String,
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} @ {}", self.rule, self.subject)
    }
}

/// The fingerprint of a finding's judged content: `sha256:<64 lowercase hex>`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Occurrence(String);

/// Why a string is not an occurrence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("occurrence must be `sha256:` followed by 64 lowercase hex digits")]
pub struct InvalidOccurrence;

impl Occurrence {
    /// The occurrence of a finding: the SHA-256 of the canonical JSON (see
    /// [`canonical_json`]) of `{"kind","new","old","rule","subject"}`, where an absent
    /// `old`/`new` is JSON `null`.
    pub fn of(
        rule: &str,
        subject: &str,
        kind: ChangeKind,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> Self {
        // The canonical JSON of `{"kind","new","old","rule","subject"}`, keys in sorted order,
        // hashed as it is written: the values are neither copied nor held as text.
        let mut hash = Sha256::new();
        hash.put("{\"kind\":");
        canonical_json::write_str(kind.as_str(), &mut hash);
        hash.put(",\"new\":");
        write_or_null(new, &mut hash);
        hash.put(",\"old\":");
        write_or_null(old, &mut hash);
        hash.put(",\"rule\":");
        canonical_json::write_str(rule, &mut hash);
        hash.put(",\"subject\":");
        canonical_json::write_str(subject, &mut hash);
        hash.put("}");
        Self::of_hash(hash)
    }

    /// The occurrence of a grouped finding (docs/contract.md#grouping): the SHA-256 of the canonical JSON of
    /// `{"members":[{"kind","new","old","subject"}, …],"rule","subject":"*"}`, members sorted
    /// by subject (then kind, then the occurrence of their content, so the result never
    /// depends on input order), an absent `old`/`new` being JSON `null`. Any member added,
    /// removed or changed gives a new occurrence.
    pub fn of_group(rule: &str, members: &[GroupMember<'_>]) -> Self {
        Self::of_group_part(rule, GROUP_SUBJECT, members)
    }

    /// The occurrence of one part of a grouped finding split over several threads
    /// ([`group_part_subject`]): as [`Occurrence::of_group`], with the part's own subject
    /// (`*`, `*2`, `*3`, …) and only its own members, so a part's resolution assents to its
    /// members and no others. Part 1 (`*`) is exactly [`Occurrence::of_group`].
    pub fn of_group_part(rule: &str, subject: &str, members: &[GroupMember<'_>]) -> Self {
        let mut sorted: Vec<&GroupMember<'_>> = members.iter().collect();
        sorted.sort_by(|a, b| {
            a.subject
                .cmp(b.subject)
                .then(a.kind.cmp(&b.kind))
                .then_with(|| member_json(a).cmp(&member_json(b)))
        });
        // `{"members":[{"kind","new","old","subject"}, …],"rule","subject"}` in canonical form,
        // hashed as it is written (a group can hold every value of a registry).
        let mut hash = Sha256::new();
        hash.put("{\"members\":[");
        for (i, m) in sorted.into_iter().enumerate() {
            hash.put(if i == 0 { "{\"kind\":" } else { ",{\"kind\":" });
            canonical_json::write_str(m.kind.as_str(), &mut hash);
            hash.put(",\"new\":");
            write_or_null(m.new, &mut hash);
            hash.put(",\"old\":");
            write_or_null(m.old, &mut hash);
            hash.put(",\"subject\":");
            canonical_json::write_str(m.subject, &mut hash);
            hash.put("}");
        }
        hash.put("],\"rule\":");
        canonical_json::write_str(rule, &mut hash);
        hash.put(",\"subject\":");
        canonical_json::write_str(subject, &mut hash);
        hash.put("}");
        Self::of_hash(hash)
    }

    fn of_hash(hash: Sha256) -> Self {
        Occurrence(format!("sha256:{}", hex::encode(hash.finalize())))
    }

    /// `sha256:` of arbitrary bytes (used for the summary occurrence and the policy digest).
    pub fn digest(bytes: &[u8]) -> Self {
        Occurrence(format!("sha256:{}", hex::encode(Sha256::digest(bytes))))
    }

    /// Parses `sha256:<64 lowercase hex>`.
    pub fn parse(text: &str) -> Result<Self, InvalidOccurrence> {
        let hex = text.strip_prefix("sha256:").ok_or(InvalidOccurrence)?;
        if hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            Ok(Occurrence(text.to_owned()))
        } else {
            Err(InvalidOccurrence)
        }
    }

    /// The textual form, `sha256:…`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Occurrence {
    type Error = InvalidOccurrence;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Occurrence::parse(&value)
    }
}

impl From<Occurrence> for String {
    fn from(value: Occurrence) -> Self {
        value.0
    }
}

impl fmt::Display for Occurrence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The subject of a grouped finding's slot: `(rule, "*")` (docs/contract.md#grouping). A group too large
/// for one note is split, and its later parts are `*2`, `*3`, … ([`group_part_subject`]).
pub const GROUP_SUBJECT: &str = "*";

/// The subject of part `index` (1-based) of a grouped finding: `*` for the first (the slot
/// of a group that fits one note), `*<index>` for the others.
pub fn group_part_subject(index: usize) -> String {
    if index <= 1 {
        GROUP_SUBJECT.to_owned()
    } else {
        format!("{GROUP_SUBJECT}{index}")
    }
}

/// Whether `subject` is a grouped finding's (`*`, or `*` and a number from 2 on without a
/// leading zero). No other finding's subject can be: a policy finding's is
/// `<file>#<pointer>` and a built-in finding's ends in `#<…>`, both with a `#`.
pub fn is_group_subject(subject: &str) -> bool {
    match subject.strip_prefix(GROUP_SUBJECT) {
        Some("") => true,
        Some(n) => {
            !n.starts_with('0')
                && n.bytes().all(|b| b.is_ascii_digit())
                && n.parse::<usize>().is_ok_and(|n| n >= 2)
        }
        None => false,
    }
}

/// One finding a grouped finding stands for, as it would have been published ungrouped: what
/// the receipt lists under the group and the Code Quality report gives its own entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberFinding {
    /// The member's own finding: its slot (rule, subject), effect, occurrence and message.
    pub finding: Finding,
    /// The judged change's kind.
    pub kind: ChangeKind,
}

/// One member of a grouped finding: the judged content of one finding it stands for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupMember<'a> {
    /// The member's own subject, `<file>#<pointer>`.
    pub subject: &'a str,
    /// Add, modify or delete.
    pub kind: ChangeKind,
    /// The value at the base SHA; `None` for an add.
    pub old: Option<&'a Value>,
    /// The value at the source SHA; `None` for a delete.
    pub new: Option<&'a Value>,
}

/// `value` in canonical JSON, an absent one as `null`.
fn write_or_null(value: Option<&Value>, out: &mut impl Sink) {
    match value {
        Some(value) => canonical_json::write(value, out),
        None => out.put("null"),
    }
}

/// Tie-break for two members with the same subject and kind (which a policy cannot produce,
/// but a caller could): their values in canonical form.
fn member_json(m: &GroupMember<'_>) -> (String, String) {
    let text = |v: Option<&Value>| v.map(canonical_json::to_string).unwrap_or_default();
    (text(m.old), text(m.new))
}

/// Longest subject a slot keeps as it is, in characters. Subjects come from the merge
/// request (file paths, keys) and sit in full in every marker, so an unbounded one could
/// push a body past GitLab's note limit (docs/contract.md#note-size); real subjects are far shorter.
pub const MAX_SUBJECT_CHARS: usize = 2_000;

/// `subject`, or for one longer than [`MAX_SUBJECT_CHARS`] its first 1,900 characters, `…`,
/// and `[<n> characters, sha256:<hex of the full subject's UTF-8>]` (about
/// [`MAX_SUBJECT_CHARS`] in all): still one stable slot per full subject, and short enough
/// for any marker. The occurrence is computed from the full subject before this is applied.
pub fn bounded_subject(subject: &str) -> std::borrow::Cow<'_, str> {
    let Some((cut, _)) = subject.char_indices().nth(MAX_SUBJECT_CHARS) else {
        return std::borrow::Cow::Borrowed(subject);
    };
    // Room for the suffix.
    let keep = subject[..cut]
        .char_indices()
        .nth(MAX_SUBJECT_CHARS - 100)
        .map_or(cut, |(at, _)| at);
    std::borrow::Cow::Owned(format!(
        "{}…[{} characters, sha256:{}]",
        &subject[..keep],
        subject.chars().count(),
        hex::encode(Sha256::digest(subject.as_bytes()))
    ))
}

/// A GitLab project access level, ordered from least to most privileged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Access level 10.
    Guest,
    /// Access level 20.
    Reporter,
    /// Access level 30.
    Developer,
    /// Access level 40.
    Maintainer,
    /// Access level 50.
    Owner,
}

impl Role {
    /// Every role, least privileged first (for error messages and "did you mean").
    pub const ALL: [Role; 5] = [
        Role::Guest,
        Role::Reporter,
        Role::Developer,
        Role::Maintainer,
        Role::Owner,
    ];

    /// The lowercase name used in policies.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Guest => "guest",
            Role::Reporter => "reporter",
            Role::Developer => "developer",
            Role::Maintainer => "maintainer",
            Role::Owner => "owner",
        }
    }

    /// The name GitLab's settings show (`Reporter`), for messages to a project's owners.
    pub fn title(self) -> &'static str {
        match self {
            Role::Guest => "Guest",
            Role::Reporter => "Reporter",
            Role::Developer => "Developer",
            Role::Maintainer => "Maintainer",
            Role::Owner => "Owner",
        }
    }

    /// Parses a policy's role name.
    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// The role of a GitLab `access_level`: the highest role whose level it reaches, `None`
    /// below Guest (e.g. 0 "no access", 5 "minimal access").
    pub fn from_access_level(level: u64) -> Option<Role> {
        match level {
            50.. => Some(Role::Owner),
            40.. => Some(Role::Maintainer),
            30.. => Some(Role::Developer),
            20.. => Some(Role::Reporter),
            10.. => Some(Role::Guest),
            _ => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy's narrowing of who may assent (`assenters:` on a rule or a policy file). Someone
/// other than the MR's author and the bot counts when they are listed in `users` **or** hold
/// at least `min_role`; with neither given the narrowing would be empty, which loading
/// refuses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assenters {
    /// Usernames (without `@`), compared exactly.
    pub users: Vec<String>,
    /// The least project role that may assent.
    pub min_role: Option<Role>,
}

impl Assenters {
    /// Who may assent to a change of the policies themselves (`assent/self-edit`) when the
    /// target branch's policies name no `policy_owners`: project members of at least
    /// Maintainer role, inherited membership included (docs/policies.md, "Changing policies").
    pub fn default_policy_owners() -> Assenters {
        Assenters {
            users: Vec::new(),
            min_role: Some(Role::Maintainer),
        }
    }
}

/// One finding the current run wants to be visible on the merge request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Where it lives.
    pub slot: Slot,
    /// How strongly it gates.
    pub effect: Effect,
    /// Fingerprint of the judged content.
    pub occurrence: Occurrence,
    /// The human-readable message (rendered template), Markdown.
    pub message: String,
}

/// Where a finding's judged value sits in its file (docs/contract.md#lines). Presentation only: a site
/// never enters a slot or an occurrence, so a value that only moves keeps its finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingSite {
    /// The repository path the finding is reported under (its change's `file`).
    pub file: String,
    /// Add, modify or delete.
    pub kind: ChangeKind,
    /// A whole-file add or delete (pointer `""`): the finding is about the file, no line.
    pub whole_file: bool,
    /// The 1-based line of the old value at the base SHA, when known.
    pub old_line: Option<usize>,
    /// The 1-based line of the new value at the source SHA, when known.
    pub new_line: Option<usize>,
}

impl FindingSite {
    /// The site of the value `change` judges.
    pub fn of_change(change: &Change) -> Self {
        FindingSite {
            file: change.file.clone(),
            kind: change.kind,
            whole_file: change.pointer.is_empty(),
            old_line: change.old_line,
            new_line: change.new_line,
        }
    }
}

/// The line of a diff a DiffNote sits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DiffLine {
    /// An added line, numbered at the source side (`position[new_line]`).
    New(usize),
    /// A removed line, numbered at the base side (`position[old_line]`).
    Old(usize),
}

/// Where a finding thread is created in the merge request's diff (docs/contract.md#diffnotes): a GitLab
/// `text` position on the version of the diff named by its three SHAs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DiffPosition {
    /// `diff_refs.base_sha` of the merge request.
    pub base_sha: CommitSha,
    /// `diff_refs.start_sha` of the merge request.
    pub start_sha: CommitSha,
    /// `diff_refs.head_sha` of the merge request: the pinned source SHA.
    pub head_sha: CommitSha,
    /// The file's path at the base.
    pub old_path: String,
    /// The file's path at the source.
    pub new_path: String,
    /// The line.
    pub line: DiffLine,
}

/// A link from a body to the file a finding is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLink {
    /// The destination, already safe inside a Markdown link (`crate::links`).
    pub url: String,
    /// The line it points at, when known.
    pub line: Option<usize>,
    /// True when it points at the file at the diff base (the value of a delete exists only
    /// there), false at the source SHA.
    pub at_base: bool,
}

/// How a finding is shown, beyond its message: where its thread goes and what it links to.
/// Presentation only, like [`FindingSite`]: never part of a slot, an occurrence or a marker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Placement {
    /// The diff line its thread is created on, `None` for a general thread.
    pub position: Option<DiffPosition>,
    /// The file (and line) its bodies link to, `None` for no link.
    pub link: Option<FileLink>,
}

/// Everything the current run wants on the merge request, computed from pinned inputs only.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DesiredState {
    /// Findings, at most one per slot, sorted by slot.
    pub findings: Vec<Finding>,
    /// Rule id → who may assent to its challenges, for rules (or policy files) that narrow
    /// it; a rule absent here takes the default (anyone but the MR author and the bot).
    pub assenters: BTreeMap<String, Assenters>,
    /// Slot → where its judged value sits, for findings about one value (a grouped finding:
    /// its first member's), and for each member of a grouped finding under the member's own
    /// slot; built-in findings have none.
    pub sites: BTreeMap<Slot, FindingSite>,
    /// Grouped finding's slot → the findings it stands for, in the order its thread lists
    /// them (gating first). Empty for a state without grouped findings.
    pub members: BTreeMap<Slot, Vec<MemberFinding>>,
    /// Slot → its thread's diff position and file link, once the run knows the merge
    /// request's diff; a slot absent here is a general thread without a file link.
    pub placements: BTreeMap<Slot, Placement>,
}

impl DesiredState {
    /// Builds a desired state, sorting by slot and keeping the strongest finding when two
    /// share a slot (ties broken by occurrence, so the result never depends on input order).
    /// A subject longer than [`MAX_SUBJECT_CHARS`] is shortened first ([`bounded_subject`]).
    pub fn new(mut findings: Vec<Finding>) -> Self {
        for finding in &mut findings {
            if let std::borrow::Cow::Owned(short) = bounded_subject(&finding.slot.subject) {
                finding.slot.subject = short;
            }
        }
        findings.sort_by(|a, b| {
            a.slot
                .cmp(&b.slot)
                .then(b.effect.cmp(&a.effect))
                .then(a.occurrence.cmp(&b.occurrence))
        });
        findings.dedup_by(|later, earlier| later.slot == earlier.slot);
        DesiredState {
            findings,
            ..DesiredState::default()
        }
    }

    /// The same state with `extra` findings beside its own, normalised as [`DesiredState::new`]
    /// normalises (sorted by slot, the strongest kept per slot); sites, members and
    /// assenters stay as they were.
    pub fn with_findings(self, extra: Vec<Finding>) -> Self {
        let mut findings = self.findings;
        findings.extend(extra);
        DesiredState {
            findings: DesiredState::new(findings).findings,
            ..self
        }
    }

    /// The same state with the sites of its findings and of their members (other slots are
    /// dropped). Give the members ([`DesiredState::with_members`]) first.
    pub fn with_sites(mut self, mut sites: BTreeMap<Slot, FindingSite>) -> Self {
        let member_slots: std::collections::BTreeSet<&Slot> = self
            .members
            .values()
            .flatten()
            .map(|m| &m.finding.slot)
            .collect();
        sites.retain(|slot, _| self.get(slot).is_some() || member_slots.contains(slot));
        self.sites = sites;
        self
    }

    /// The same state with the members of its grouped findings (slots not desired are
    /// dropped; a member subject longer than [`MAX_SUBJECT_CHARS`] is shortened as
    /// [`DesiredState::new`] shortens a finding's).
    pub fn with_members(mut self, mut members: BTreeMap<Slot, Vec<MemberFinding>>) -> Self {
        members.retain(|slot, _| self.get(slot).is_some());
        for member in members.values_mut().flatten() {
            if let std::borrow::Cow::Owned(short) = bounded_subject(&member.finding.slot.subject) {
                member.finding.slot.subject = short;
            }
        }
        self.members = members;
        self
    }

    /// The members of the grouped finding of `slot`, in its thread's order; empty for any
    /// other finding.
    pub fn members_of(&self, slot: &Slot) -> &[MemberFinding] {
        self.members.get(slot).map_or(&[], Vec::as_slice)
    }

    /// The same state with the placements of its findings (slots not desired are dropped).
    pub fn with_placements(mut self, mut placements: BTreeMap<Slot, Placement>) -> Self {
        placements.retain(|slot, _| self.get(slot).is_some());
        self.placements = placements;
        self
    }

    /// Where the judged value of `slot` sits, when known.
    pub fn site(&self, slot: &Slot) -> Option<&FindingSite> {
        self.sites.get(slot)
    }

    /// How the finding of `slot` is placed; `None`: a general thread without a file link.
    pub fn placement(&self, slot: &Slot) -> Option<&Placement> {
        self.placements.get(slot)
    }

    /// The same state with the policies' narrowing of who may assent, by rule id.
    pub fn with_assenters(mut self, assenters: BTreeMap<String, Assenters>) -> Self {
        self.assenters = assenters;
        self
    }

    /// Who may assent to challenges of `rule`, when its policy narrows it.
    pub fn assenters_of(&self, rule: &str) -> Option<&Assenters> {
        self.assenters.get(rule)
    }

    /// The finding desired for `slot`, if any.
    pub fn get(&self, slot: &Slot) -> Option<&Finding> {
        self.findings
            .binary_search_by(|f| f.slot.cmp(slot))
            .ok()
            .map(|i| &self.findings[i])
    }
}

/// The gate's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Decision {
    /// No block finding and every challenge thread resolved.
    Approve,
    /// Some challenge thread is unresolved.
    Review,
    /// Some block finding fired.
    Block,
}

impl Decision {
    /// `APPROVE`, `REVIEW` or `BLOCK`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "APPROVE",
            Decision::Review => "REVIEW",
            Decision::Block => "BLOCK",
        }
    }
}

/// The commits a run reads, each pinned before the first read: the source it judges, the
/// target its policies come from, the diff base. [`Pins`] adds what reading them found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedCommits {
    /// The MR's source head SHA the run judges.
    pub source_sha: CommitSha,
    /// The target branch SHA policies are read from.
    pub target_sha: CommitSha,
    /// The diff base SHA.
    pub base_sha: CommitSha,
}

/// The pinned inputs a run was computed from (receipt `pins`, summary footer).
///
/// Built once, after the policies were read: no `Default` and no placeholder, so a summary
/// or receipt never shows a pin that was not read. A run refused before it read anything
/// has [`RefusedPins`] instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pins {
    /// The MR's source head SHA the run judged.
    pub source_sha: CommitSha,
    /// The target branch SHA policies were read from.
    pub target_sha: CommitSha,
    /// The diff base SHA.
    pub base_sha: CommitSha,
    /// `sha256:` over the loaded policy files (path and bytes, sorted by path).
    pub policy_digest: String,
    /// The central policy project (`--policy-project`) as configured, when there is one;
    /// its policies are covered by `policy_digest` too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_project: Option<String>,
    /// The commit of the central policy project its policies were read at, once resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_sha: Option<CommitSha>,
}

impl Pins {
    /// The pins of a run that read `commits` and loaded policies digesting to
    /// `policy_digest`, with no central policy project.
    pub fn of(commits: PinnedCommits, policy_digest: String) -> Pins {
        Pins {
            source_sha: commits.source_sha,
            target_sha: commits.target_sha,
            base_sha: commits.base_sha,
            policy_digest,
            policy_project: None,
            policy_sha: None,
        }
    }
}

/// What a run refused before reading anything (a stale pipeline, an MR not open) had pinned:
/// the source it was asked to judge, and the target and base when they were given or the MR
/// reported them. Its receipt writes an unknown pin and the policy digest as `""`
/// (docs/contract.md#receipt): the keys stay, no value is made up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedPins {
    /// The source SHA the run was asked to judge.
    pub source_sha: CommitSha,
    /// The target SHA, when the pipeline pinned it.
    pub target_sha: Option<CommitSha>,
    /// The base SHA, when the pipeline pinned it or the MR reported it.
    pub base_sha: Option<CommitSha>,
}

/// A receipt's `pins`: a judged run's [`Pins`], or what a refused run had pinned. Read back,
/// an empty `policyDigest` says which: a judged run always has a `sha256:` digest.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "PinsWire")]
pub enum ReceiptPins {
    /// The run read its inputs (published, dry run, or found stale after judging).
    Judged(Pins),
    /// The run was refused before reading them.
    Refused(RefusedPins),
}

impl ReceiptPins {
    /// The source SHA the run judged or was asked to judge.
    pub fn source_sha(&self) -> &CommitSha {
        match self {
            ReceiptPins::Judged(pins) => &pins.source_sha,
            ReceiptPins::Refused(pins) => &pins.source_sha,
        }
    }
}

impl From<Pins> for ReceiptPins {
    fn from(pins: Pins) -> ReceiptPins {
        ReceiptPins::Judged(pins)
    }
}

impl From<RefusedPins> for ReceiptPins {
    fn from(pins: RefusedPins) -> ReceiptPins {
        ReceiptPins::Refused(pins)
    }
}

impl Serialize for ReceiptPins {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ReceiptPins::Judged(pins) => pins.serialize(serializer),
            ReceiptPins::Refused(pins) => {
                let text = |sha: &Option<CommitSha>| -> String {
                    sha.as_ref().map(CommitSha::to_string).unwrap_or_default()
                };
                PinsWire {
                    source_sha: pins.source_sha.clone(),
                    target_sha: text(&pins.target_sha),
                    base_sha: text(&pins.base_sha),
                    policy_digest: String::new(),
                    policy_project: None,
                    policy_sha: None,
                }
                .serialize(serializer)
            }
        }
    }
}

/// `pins` as the receipt spells them, either kind.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PinsWire {
    source_sha: CommitSha,
    target_sha: String,
    base_sha: String,
    policy_digest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    policy_project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    policy_sha: Option<CommitSha>,
}

impl TryFrom<PinsWire> for ReceiptPins {
    type Error = String;

    fn try_from(wire: PinsWire) -> Result<ReceiptPins, String> {
        let sha =
            |key: &str, text: &str| CommitSha::parse(text).map_err(|e| format!("pins.{key}: {e}"));
        if wire.policy_digest.is_empty() {
            let unread = |key: &str, text: &str| match text {
                "" => Ok(None),
                _ => sha(key, text).map(Some),
            };
            if wire.policy_project.is_some() || wire.policy_sha.is_some() {
                return Err(
                    "pins: a refused run (empty policyDigest) read no policy project".into(),
                );
            }
            return Ok(ReceiptPins::Refused(RefusedPins {
                source_sha: wire.source_sha,
                target_sha: unread("targetSha", &wire.target_sha)?,
                base_sha: unread("baseSha", &wire.base_sha)?,
            }));
        }
        Ok(ReceiptPins::Judged(Pins {
            source_sha: wire.source_sha,
            target_sha: sha("targetSha", &wire.target_sha)?,
            base_sha: sha("baseSha", &wire.base_sha)?,
            policy_digest: wire.policy_digest,
            policy_project: wire.policy_project,
            policy_sha: wire.policy_sha,
        }))
    }
}

/// A forge user as listings name them: the id decides, the username is for people.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UserRef {
    /// The forge's integer user id.
    pub id: u64,
    /// The username (without `@`), shown to people; never used to decide anything.
    pub username: String,
}

/// What GitLab says of a user's account (`GET /users/:id`, `lib/api/entities/user.rb`):
/// each field `None` when the answer left it out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Account {
    /// GitLab's `bot` (`User#bot?`).
    pub bot: Option<bool>,
    /// GitLab's `state`: `active`, `blocked`, `deactivated`, ….
    pub state: Option<String>,
    /// GitLab's `username`: how an operator names a previous bot user
    /// (`crate::bot_identity`).
    pub username: Option<String>,
}

/// The one account state whose resolutions can count.
pub const ACTIVE_STATE: &str = "active";

impl Account {
    /// An active account that is not a bot: a person whose resolution can count.
    pub fn active_human() -> Account {
        Account {
            bot: Some(false),
            state: Some(ACTIVE_STATE.to_owned()),
            username: None,
        }
    }
}

/// One note as a forge listing returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedNote {
    /// The forge's integer note id (global, increasing).
    pub id: u64,
    /// The author's user id.
    pub author_id: u64,
    /// A note the forge wrote itself (e.g. "resolved all threads"): never an artifact.
    pub system: bool,
    /// Whether this note's discussion can be resolved (only thread notes can).
    pub resolvable: bool,
    /// Whether it is resolved (false when not resolvable).
    pub resolved: bool,
    /// Who resolved it, when the forge says (GitLab's `resolved_by`).
    pub resolved_by: Option<UserRef>,
    /// When it was resolved, as the forge reports it (GitLab's `resolved_at`, ISO 8601).
    pub resolved_at: Option<String>,
    /// A note on a line of the diff (GitLab's `type: "DiffNote"`): a push can resolve its
    /// thread when the project resolves outdated diff threads automatically.
    pub diff_note: bool,
    /// The Markdown body.
    pub body: String,
    /// Creation time as the forge reports it (ISO 8601): GitLab writes `created_at` and
    /// `updated_at` as one instant when it creates a note.
    pub created_at: Option<String>,
    /// Last update time as the forge reports it (ISO 8601): `sweep` measures a stuck summary
    /// from it, and a finding thread's first note whose `updated_at` is not its `created_at`
    /// was edited (`inventory`).
    pub updated_at: Option<String>,
}

/// One discussion (thread or plain-note wrapper) as a forge listing returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedDiscussion {
    /// The forge's discussion id (40 hex on GitLab).
    pub id: String,
    /// True when the discussion wraps one plain note (not a thread).
    pub individual_note: bool,
    /// Notes oldest first; the first note carries the marker.
    pub notes: Vec<ListedNote>,
}

/// The state of a merge request as the forge reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MergeRequestState {
    /// Open for review.
    Opened,
    /// Closed without merging.
    Closed,
    /// Merged.
    Merged,
    /// Locked (transitional, treated as not open).
    Locked,
}

/// What a run needs to know about the merge request before writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeRequestInfo {
    /// Open, closed, merged or locked.
    pub state: MergeRequestState,
    /// The MR's current source head SHA.
    pub head_sha: CommitSha,
    /// `diff_refs.base_sha`, when the forge reports it.
    pub base_sha: Option<CommitSha>,
    /// `diff_refs.start_sha`, when the forge reports it (DiffNote positions name it).
    pub start_sha: Option<CommitSha>,
    /// `diff_refs.head_sha`, when the forge reports it: the head the MR's current diff
    /// version was computed for (DiffNote positions name it).
    pub diff_head_sha: Option<CommitSha>,
    /// The target branch name.
    pub target_branch: String,
    /// `head_pipeline.status`, when the forge reports it.
    pub head_pipeline_status: Option<String>,
    /// Web URL of the MR (for links), when known.
    pub web_url: Option<String>,
    /// The MR's title (the `mr.title` policy variable).
    pub title: String,
    /// The source branch name.
    pub source_branch: String,
    /// The author's username.
    pub author: String,
    /// The author's user id; `None` when the forge did not say (then no resolution can be
    /// shown not to be the author's, so none counts as assent).
    pub author_id: Option<u64>,
    /// The MR's labels.
    pub labels: Vec<String>,
    /// GitLab's `changes_count` as it sends it: the number of files the MR's diff changes (a
    /// rename counts once), `"1000+"` when GitLab stopped collecting at its diff limits;
    /// `None` when the forge did not say. A run checks its diff listing against it.
    pub changes_count: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The occurrences as they were first defined: a JSON document built and written in
    /// canonical form, then hashed. The streamed hashes must stay byte for byte these, or
    /// every published thread would be superseded.
    fn occurrence_of_document(doc: &Value) -> Occurrence {
        Occurrence::digest(canonical_json::to_string(doc).as_bytes())
    }

    fn any_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-z\"\\\\\n\u{e9}\u{1f600}\u{0}-\u{1f}]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map("[a-zB_é\"]{0,4}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn streamed_occurrences_equal_the_hash_of_the_document(
            old in proptest::option::of(any_value()),
            new in proptest::option::of(any_value()),
            other in any_value(),
            subject in "[a-z/#\"é]{0,12}",
        ) {
            let kind = ChangeKind::Modify;
            proptest::prop_assert_eq!(
                Occurrence::of("r\"1", &subject, kind, old.as_ref(), new.as_ref()),
                occurrence_of_document(&json!({
                    "rule": "r\"1", "subject": subject, "kind": "modify",
                    "old": old.clone().unwrap_or(Value::Null),
                    "new": new.clone().unwrap_or(Value::Null),
                }))
            );
            let members = [
                GroupMember { subject: &subject, kind, old: old.as_ref(), new: new.as_ref() },
                GroupMember { subject: "a", kind: ChangeKind::Delete, old: Some(&other), new: None },
            ];
            let mut sorted: Vec<&GroupMember<'_>> = members.iter().collect();
            sorted.sort_by(|a, b| a.subject.cmp(b.subject).then(a.kind.cmp(&b.kind))
                .then_with(|| member_json(a).cmp(&member_json(b))));
            let listed: Vec<Value> = sorted.iter().map(|m| json!({
                "subject": m.subject, "kind": m.kind.as_str(),
                "old": m.old.cloned().unwrap_or(Value::Null),
                "new": m.new.cloned().unwrap_or(Value::Null),
            })).collect();
            proptest::prop_assert_eq!(
                Occurrence::of_group_part("r", "*2", &members),
                occurrence_of_document(&json!({"rule": "r", "subject": "*2", "members": listed}))
            );
        }
    }

    #[test]
    fn occurrence_is_stable_and_content_sensitive() {
        let a = Occurrence::of(
            "r",
            "f#/x",
            ChangeKind::Modify,
            Some(&json!(30)),
            Some(&json!(7)),
        );
        let b = Occurrence::of(
            "r",
            "f#/x",
            ChangeKind::Modify,
            Some(&json!(30)),
            Some(&json!(7)),
        );
        let c = Occurrence::of(
            "r",
            "f#/x",
            ChangeKind::Modify,
            Some(&json!(30)),
            Some(&json!(1)),
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(Occurrence::parse(a.as_str()).is_ok());
    }

    #[test]
    fn occurrence_pins_the_documented_canonical_form() {
        // {"kind":"add","new":1,"old":null,"rule":"r","subject":"s"} hashed by sha256.
        let got = Occurrence::of("r", "s", ChangeKind::Add, None, Some(&json!(1)));
        let expected =
            Occurrence::digest(br#"{"kind":"add","new":1,"old":null,"rule":"r","subject":"s"}"#);
        assert_eq!(got, expected);
    }

    #[test]
    fn long_subjects_are_bounded_with_their_digest_and_short_ones_kept() {
        let short = "f.yaml#/a/b";
        assert_eq!(bounded_subject(short), short);
        let long = format!("f.yaml#/{}", "k".repeat(MAX_SUBJECT_CHARS));
        let other = format!("f.yaml#/{}x", "k".repeat(MAX_SUBJECT_CHARS));
        let bounded = bounded_subject(&long);
        assert!(
            bounded.chars().count() <= MAX_SUBJECT_CHARS,
            "{}",
            bounded.len()
        );
        assert!(bounded.starts_with("f.yaml#/kkk"));
        assert!(bounded.ends_with(&format!(
            "…[{} characters, sha256:{}]",
            long.chars().count(),
            hex::encode(Sha256::digest(long.as_bytes()))
        )));
        assert_ne!(
            bounded,
            bounded_subject(&other),
            "one slot per full subject"
        );

        // The desired state bounds every subject; the occurrence stays the full one's.
        let occurrence = Occurrence::of("r", &long, ChangeKind::Add, None, None);
        let desired = DesiredState::new(vec![Finding {
            slot: Slot {
                rule: "r".into(),
                subject: long.clone(),
            },
            effect: Effect::Comment,
            occurrence: occurrence.clone(),
            message: String::new(),
        }]);
        assert_eq!(desired.findings[0].slot.subject, bounded);
        assert_eq!(desired.findings[0].occurrence, occurrence);
    }

    #[test]
    fn group_occurrence_ignores_member_order_and_follows_every_member() {
        let (a, b, c) = (json!(1), json!(2), json!("x"));
        let m = |subject, old, new| GroupMember {
            subject,
            kind: ChangeKind::Modify,
            old: Some(old),
            new: Some(new),
        };
        let one = Occurrence::of_group("r", &[m("s1", &a, &b), m("s2", &a, &c)]);
        let same = Occurrence::of_group("r", &[m("s2", &a, &c), m("s1", &a, &b)]);
        assert_eq!(one, same);
        assert_ne!(
            one,
            Occurrence::of_group("r", &[m("s1", &a, &b), m("s2", &a, &b)])
        );
        assert_ne!(
            one,
            Occurrence::of_group("q", &[m("s1", &a, &b), m("s2", &a, &c)])
        );
        assert_ne!(one, Occurrence::of_group("r", &[m("s1", &a, &b)]));
        let absent = GroupMember {
            subject: "s",
            kind: ChangeKind::Add,
            old: None,
            new: None,
        };
        assert_eq!(
            Occurrence::of_group("r", &[absent]),
            Occurrence::digest(
                br#"{"members":[{"kind":"add","new":null,"old":null,"subject":"s"}],"rule":"r","subject":"*"}"#
            )
        );
    }

    #[test]
    fn occurrence_parse_rejects_bad_forms() {
        for bad in [
            "",
            "sha256:",
            "sha1:0000000000000000000000000000000000000000000000000000000000000000",
            "sha256:000000000000000000000000000000000000000000000000000000000000000",
            "sha256:00000000000000000000000000000000000000000000000000000000000000000",
            "sha256:ABCDEF0000000000000000000000000000000000000000000000000000000000",
            "sha256:g000000000000000000000000000000000000000000000000000000000000000",
        ] {
            assert_eq!(Occurrence::parse(bad), Err(InvalidOccurrence), "{bad:?}");
        }
    }

    #[test]
    fn desired_state_keeps_one_finding_per_slot_strongest_first() {
        let slot = Slot {
            rule: "r".into(),
            subject: "s".into(),
        };
        let mk = |effect, n: u8| Finding {
            slot: slot.clone(),
            effect,
            occurrence: Occurrence::digest(&[n]),
            message: String::new(),
        };
        let d1 = DesiredState::new(vec![mk(Effect::Comment, 1), mk(Effect::Block, 2)]);
        let d2 = DesiredState::new(vec![mk(Effect::Block, 2), mk(Effect::Comment, 1)]);
        assert_eq!(d1, d2);
        assert_eq!(d1.findings.len(), 1);
        assert_eq!(d1.findings[0].effect, Effect::Block);
        assert!(d1.get(&slot).is_some());
    }
}
