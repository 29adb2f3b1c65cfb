//! Generated merge requests of a chosen size for the request-count tests
//! (`tests/it/request_counts.rs`) and the end-to-end benchmark (`benches/e2e.rs`).
//!
//! A [`Scenario`] is seeded into the fake GitLab's basic world (project 42, MR !7, bot 100,
//! human 200) with the example policies of `fixtures/repos/topic-registry/.assent/policies`
//! at the target SHA:
//!
//! * `discussions` pre-existing discussions that are not assent's: human threads, human plain
//!   notes and system notes, in rotation;
//! * `files` changed governed files `topics/gen-NNN.yaml` (modified, so both sides are read),
//!   each padded with unchanged topics to at least `file_bytes`;
//! * `findings` topics whose `retention_days` shrinks from 30 to 7 (one `retention-shrink`
//!   challenge finding each), spread round-robin over the files; every file also gets one
//!   topic whose retention grows (a change that produces no finding), so each file is a
//!   changed governed file whatever the finding count.
//!
//! Nothing else fires with the example policies, so a first run has exactly `findings`
//! findings, all `challenge`; above [`GROUP_ABOVE`] of them a rule is grouped (docs/contract.md#grouping)
//! and its findings are published as one thread ([`threads`]).
//!
//! With `rules` above 1 the findings come from that many rules instead: a generated policy
//! file (`.assent/policies/generated-rules.yaml`) holds rules `shrink-000`, `shrink-001`, …,
//! rule `k` judging only `streams/gen-k.yaml`, and the changed files are `streams/gen-NNN.yaml`
//! (one per rule, so `files` must equal `rules`), where the example policies do not look.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use fake_gitlab::{DiffFile, Discussion, FakeGitLab, FileContent, Note, fixtures};

/// Gives `command` (an `assent run`) exactly the environment of an MR pipeline for the basic
/// world's MR, with the API at `api_url`.
pub fn pipeline_env<'c>(command: &'c mut Command, api_url: &str) -> &'c mut Command {
    command
        .env_clear()
        .env("CI_API_V4_URL", api_url)
        .env("CI_PROJECT_ID", fixtures::PROJECT_PATH)
        .env("CI_MERGE_REQUEST_IID", fixtures::MR_IID.to_string())
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", fixtures::HEAD_SHA)
        .env("CI_MERGE_REQUEST_TARGET_BRANCH_SHA", fixtures::TARGET_SHA)
        .env("CI_MERGE_REQUEST_DIFF_BASE_SHA", fixtures::BASE_SHA)
        .env("ASSENT_TOKEN", fixtures::BOT_TOKEN)
}

/// The size of a generated merge request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    /// Discussions on the MR before assent's first run (none of them assent's).
    pub discussions: usize,
    /// `retention-shrink` findings the MR produces.
    pub findings: usize,
    /// Changed governed files.
    pub files: usize,
    /// Minimum size of each governed file, in bytes (both sides).
    pub file_bytes: usize,
    /// Rules the findings come from: 1 is the example policies' `retention-shrink`; more is
    /// a generated policy file with that many rules, one per changed file.
    pub rules: usize,
}

/// `retention-shrink` has no `group_above` in the example policies: the default applies.
pub const GROUP_ABOVE: usize = 25;

/// The finding threads a first run on `scenario` publishes: one per finding, or one for
/// the group when the rule fires more than [`GROUP_ABOVE`] times.
pub fn threads(scenario: &Scenario) -> usize {
    if scenario.findings > GROUP_ABOVE {
        1
    } else {
        scenario.findings
    }
}

/// Number of policy files in the example repository (each read once per run).
pub fn policy_file_count() -> usize {
    policy_files().len()
}

/// Policy files a run of `scenario` reads: the example ones, and the generated one.
fn scenario_policy_files(scenario: &Scenario) -> usize {
    policy_file_count() + usize::from(scenario.rules > 1)
}

/// The generated policy of `rules` rules (see the module docs).
fn generated_rules(rules: usize) -> String {
    let mut out = String::from(
        "apiVersion: assent/v1\nkind: Policy\nidentities:\n  \"streams/*.yaml\": { \"/topics\": name }\nrules:\n",
    );
    for k in 0..rules {
        let _ = write!(
            out,
            "  - id: shrink-{k:03}\n    match:\n      files: [\"{}\"]\n      pointer: \"/topics/*/retention_days\"\n      kinds: [modify]\n    when: \"int(new) < int(old)\"\n    effect: challenge\n    message: \"Retention of {{{{ entry }}}} shrinks from {{{{ old }}}} to {{{{ new }}}} days.\"\n",
            stream_path(k)
        );
    }
    out
}

fn stream_path(index: usize) -> String {
    format!("streams/gen-{index:03}.yaml")
}

fn policy_files() -> Vec<PathBuf> {
    let dir = crate::repo_root().join("fixtures/repos/topic-registry/.assent/policies");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// One topic entry of a registry file.
fn topic(out: &mut String, name: &str, retention_days: u32, k: usize) {
    let _ = write!(
        out,
        "  - name: {name}\n    retention_days: {retention_days}\n    partitions: 12\n    \
         owner: team-{}\n    cleanup_policy: delete\n",
        k % 50
    );
}

/// Base and source content of governed file `index` of `scenario`.
pub fn file_pair(scenario: &Scenario, index: usize) -> (String, String) {
    let findings_here = scenario.findings / scenario.files
        + usize::from(index < scenario.findings % scenario.files);
    let mut base = String::from("# Generated topic registry.\ntopics:\n");
    let mut source = base.clone();
    // One change that fires nothing: retention grows.
    let name = format!("f{index:03}.grow.v1");
    topic(&mut base, &name, 30, 0);
    topic(&mut source, &name, 31, 0);
    for k in 0..findings_here {
        let name = format!("f{index:03}.shrink{k:06}.v1");
        topic(&mut base, &name, 30, k);
        topic(&mut source, &name, 7, k);
    }
    let mut k = 0;
    while base.len() < scenario.file_bytes {
        let name = format!("f{index:03}.same{k:07}.v1");
        topic(&mut base, &name, 30, k);
        topic(&mut source, &name, 30, k);
        k += 1;
    }
    (base, source)
}

/// Path of governed file `index` of a one-rule scenario.
pub fn file_path(index: usize) -> String {
    format!("topics/gen-{index:03}.yaml")
}

/// Path of governed file `index` of `scenario`.
fn scenario_file_path(scenario: &Scenario, index: usize) -> String {
    if scenario.rules > 1 {
        stream_path(index)
    } else {
        file_path(index)
    }
}

/// Seeds `scenario` into a fake started on `fixtures::basic()`: replaces the MR's diff and
/// adds policies, files and discussions.
pub fn seed(fake: &FakeGitLab, scenario: &Scenario) {
    assert!(scenario.files >= 1, "a scenario changes at least one file");
    assert!(
        scenario.rules <= 1 || scenario.rules == scenario.files,
        "one changed file per generated rule"
    );
    let mut policies: Vec<(String, Vec<u8>)> = policy_files()
        .iter()
        .map(|f| {
            (
                format!(
                    ".assent/policies/{}",
                    f.file_name().unwrap().to_string_lossy()
                ),
                std::fs::read(f).unwrap(),
            )
        })
        .collect();
    if scenario.rules > 1 {
        policies.push((
            ".assent/policies/generated-rules.yaml".to_owned(),
            generated_rules(scenario.rules).into_bytes(),
        ));
    }
    let pairs: Vec<(String, String)> = (0..scenario.files)
        .map(|i| file_pair(scenario, i))
        .collect();
    let discussions: Vec<Discussion> = (0..scenario.discussions).map(human_discussion).collect();
    fake.with_state(|state| {
        let project = state
            .projects
            .iter_mut()
            .find(|p| p.id == fixtures::PROJECT_ID)
            .unwrap();
        for (path, bytes) in policies {
            project
                .files
                .entry(fixtures::TARGET_SHA.to_owned())
                .or_default()
                .insert(path, FileContent(bytes));
        }
        let mr = project
            .merge_requests
            .iter_mut()
            .find(|m| m.iid == fixtures::MR_IID)
            .unwrap();
        mr.diffs.clear();
        for (i, (base, source)) in pairs.into_iter().enumerate() {
            let path = scenario_file_path(scenario, i);
            mr.diffs.push(DiffFile::modified(&path));
            project
                .files
                .entry(fixtures::BASE_SHA.to_owned())
                .or_default()
                .insert(path.clone(), FileContent(base.into_bytes()));
            project
                .files
                .entry(fixtures::HEAD_SHA.to_owned())
                .or_default()
                .insert(path, FileContent(source.into_bytes()));
        }
        mr.discussions.extend(discussions);
    });
}

/// Pre-existing discussion `i`: a human thread, a human plain note or a system note.
fn human_discussion(i: usize) -> Discussion {
    let (individual, system, resolvable) = match i % 3 {
        0 => (false, false, true),
        1 => (true, false, false),
        _ => (true, true, false),
    };
    Discussion {
        id: String::new(),
        individual_note: individual,
        notes: vec![Note {
            note_type: resolvable.then(|| "DiscussionNote".to_owned()),
            body: format!("Human remark {i}: please double-check the consumer lag dashboards."),
            author_id: fixtures::HUMAN_ID,
            system,
            resolvable,
            ..Note::default()
        }],
    }
}

/// Discussions currently on the MR.
pub fn discussion_count(fake: &FakeGitLab) -> usize {
    fake.discussions(fixtures::PROJECT_ID, fixtures::MR_IID)
        .len()
}

/// `⌈n / 100⌉`, at least 1: the pages of a listing of `n` items (an empty listing is one
/// empty page).
pub fn pages(n: usize) -> u64 {
    n.div_ceil(100).max(1) as u64
}

/// The request counts the protocol implies for one run (see `docs/performance-e2e.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    /// GET requests.
    pub reads: u64,
    /// Other requests.
    pub writes: u64,
    /// GET pages of the discussion listing.
    pub discussion_pages: u64,
}

/// Reads every run makes before it can decide anything: MR, policy tree, policy files, diff
/// pages, both sides of each modified governed file, bot user, the project's
/// `resolve_outdated_diff_discussions`, one discussion listing of `discussions` items.
fn fixed_reads(scenario: &Scenario, discussions: usize) -> u64 {
    1 + 1
        + scenario_policy_files(scenario) as u64
        + pages(scenario.files)
        + 2 * scenario.files as u64
        + 1
        + 1
        + pages(discussions)
}

/// A first run on `scenario` (the MR carries `scenario.discussions` discussions and no
/// assent artifact): everything is created.
pub fn expected_first_run(scenario: &Scenario) -> Expected {
    let d = scenario.discussions;
    let after = d + threads(scenario) + 1;
    Expected {
        // + the head re-check and the bot's role before the first write + the rescan
        // listing + the listing that confirms the "verified" edit (docs/contract.md#verified-means-verified).
        reads: fixed_reads(scenario, d) + 2 + 2 * pages(after),
        // summary "reconciling" + one thread per published finding + summary "verified".
        writes: threads(scenario) as u64 + 2,
        discussion_pages: pages(d) + 2 * pages(after),
    }
}

/// A rerun on an unchanged MR that carries `discussions` discussions (assent's included).
pub fn expected_rerun(scenario: &Scenario, discussions: usize) -> Expected {
    Expected {
        reads: fixed_reads(scenario, discussions),
        writes: 0,
        discussion_pages: pages(discussions),
    }
}
