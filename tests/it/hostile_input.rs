//! Hostile input through the library API: each case gets a specific finding, error or warning,
//! never a panic, a hang or a wrong decision. The last section runs the binary against the
//! fake GitLab on files other readers of a registry read otherwise than assent would.
//!
//! "Never hangs" is bounded by construction, not by a clock: every input here is finite and
//! the code under test has no loop whose length is not a function of that input (size, depth
//! and node limits of the semantic diff, the CEL cost bound). A regression shows up as a test
//! that takes far longer than the suite, not as a flaky timing assertion.

use assent::core::commit_sha::CommitSha;
use assent::core::desired_state::{
    ChangedFileInput, DesiredOutcome, FileContent, RULE_PARSE_ERROR, RULE_POLICY_ERROR,
    ReviewInputs, compute_desired_state, self_edit_sides_of_contents,
};
use assent::core::inventory::Inventory;
use assent::core::marker::{self, MARKER_PREFIX, Marker};
use assent::core::model::{DesiredState, Effect, Finding, ListedDiscussion, Slot};
use assent::core::policy::{MrContext, PolicyFile};
use assent::core::render;
use assent::core::semantic_diff::Limits;
use assent::engine::fixture::replay::fixture_pins;
use assent::engine::run::reconcile::{RunContext, reconcile};
use assent::forge::Forge;
use assent::forge::memory::InMemoryForge;

const BOT: u64 = 1;
const CONTRIBUTOR: u64 = 2;
static HEAD: std::sync::LazyLock<CommitSha> = std::sync::LazyLock::new(|| {
    assent_test_support::sha("1111111111111111111111111111111111111111")
});

/// Governs every JSON/YAML/TOML file; fires a `challenge` on every change.
const CATCH_ALL: &str = r#"apiVersion: assent/v1
kind: Policy
rules:
  - id: any-change
    match:
      files: ["**"]
    effect: challenge
"#;

fn policy(text: &str) -> Vec<PolicyFile> {
    vec![PolicyFile {
        path: ".assent/policies/p.yaml".into(),
        bytes: text.as_bytes().to_vec(),
    }]
}

fn added(path: &str, bytes: Vec<u8>) -> ChangedFileInput {
    ChangedFileInput {
        old_path: path.into(),
        new_path: path.into(),
        base: FileContent::Absent,
        source: FileContent::Present(bytes),
    }
}

fn judge(policies: Vec<PolicyFile>, files: Vec<ChangedFileInput>) -> DesiredOutcome {
    compute_desired_state(ReviewInputs {
        policy_files: policies,
        policy_problems: Vec::new(),
        self_edit_sides: self_edit_sides_of_contents(&files),
        changed_files: Ok(files),
        mr: MrContext::default(),
        limits: Limits::default(),
    })
}

/// The only finding of `outcome`, which must have rule `rule` and effect `block`.
fn only_block(outcome: &DesiredOutcome, rule: &str) -> Finding {
    let findings = &outcome.desired.findings;
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let f = findings[0].clone();
    assert_eq!(f.slot.rule, rule, "{f:#?}");
    assert_eq!(f.effect, Effect::Block, "{f:#?}");
    f
}

/// Parses `bytes` as the added governed file `path` and returns the parse-error message.
fn parse_error(path: &str, bytes: Vec<u8>) -> String {
    let out = judge(policy(CATCH_ALL), vec![added(path, bytes)]);
    let f = only_block(&out, RULE_PARSE_ERROR);
    assert_eq!(f.slot.subject, format!("{path}#"));
    assert!(
        out.changes.is_empty(),
        "a file with a parse error is not diffed"
    );
    f.message
}

fn policy_error(text: &str) -> String {
    let out = judge(
        policy(text),
        vec![added("cfg/a.json", b"{\"a\":1}".to_vec())],
    );
    only_block(&out, RULE_POLICY_ERROR).message
}

// ---------------------------------------------------------------- governed files

#[test]
fn a_yaml_alias_bomb_is_a_parse_error_naming_the_first_alias() {
    // Billion laughs: 9 levels of 9 aliases, 9^9 = 387 million strings if expanded.
    let mut text = String::from(
        "l0: &l0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for i in 1..=9 {
        let refs = vec![format!("*l{}", i - 1); 9].join(",");
        text.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
    }
    let message = parse_error("cfg/bomb.yaml", text.into_bytes());
    assert!(message.contains("cfg/bomb.yaml:2:"), "{message}");
    assert!(message.contains("alias"), "{message}");
}

#[test]
fn ten_thousand_levels_of_nesting_are_parse_errors_in_every_format() {
    let deep = 10_000;
    let json = format!("{}{}", "[".repeat(deep), "]".repeat(deep));
    let message = parse_error("cfg/deep.json", json.into_bytes());
    assert!(message.contains("cfg/deep.json:1:"), "{message}");

    let yaml_flow = format!("{}{}", "[".repeat(deep), "]".repeat(deep));
    let message = parse_error("cfg/deep.yaml", yaml_flow.into_bytes());
    assert!(message.contains("cfg/deep.yaml:1:"), "{message}");
    assert!(message.contains("deep"), "{message}");

    let yaml_maps = format!("{}1{}", "{a: ".repeat(deep), "}".repeat(deep));
    let message = parse_error("cfg/maps.yml", yaml_maps.into_bytes());
    assert!(message.contains("cfg/maps.yml:1:"), "{message}");

    let toml = format!("a = {}{}", "[".repeat(deep), "]".repeat(deep));
    parse_error("cfg/deep.toml", toml.into_bytes());
}

#[test]
fn a_fifty_megabyte_file_is_refused_before_parsing() {
    // Built in memory: `[0,0,…]` is the densest document per byte.
    let mut bytes = Vec::with_capacity(50 * 1024 * 1024 + 2);
    bytes.push(b'[');
    while bytes.len() < 50 * 1024 * 1024 {
        bytes.extend_from_slice(b"0,");
    }
    bytes.extend_from_slice(b"0]");
    let size = bytes.len();
    let message = parse_error("cfg/big.json", bytes);
    assert!(
        message.contains(&format!(
            "cfg/big.json: file is {size} bytes, more than the 16777216 allowed"
        )),
        "{message}"
    );
}

#[test]
fn invalid_utf8_is_a_parse_error_naming_the_line() {
    let bytes = b"{\n  \"a\": 1,\n  \"b\": \"\xff\xfe\"\n}\n".to_vec();
    let message = parse_error("cfg/bad.json", bytes);
    assert!(
        message.contains("cfg/bad.json:3: invalid UTF-8"),
        "{message}"
    );

    let bytes = b"a: 1\nb: \xc3\x28\n".to_vec();
    let message = parse_error("cfg/bad.yaml", bytes);
    assert!(
        message.contains("cfg/bad.yaml:2: invalid UTF-8"),
        "{message}"
    );
}

#[test]
fn duplicate_keys_are_parse_errors_in_json_and_yaml() {
    let message = parse_error(
        "cfg/dup.json",
        b"{\n  \"replicas\": 1,\n  \"replicas\": 9\n}\n".to_vec(),
    );
    assert!(message.contains("cfg/dup.json:3:"), "{message}");
    assert!(message.contains("duplicate"), "{message}");

    let message = parse_error("cfg/dup.yaml", b"a: 1\nb:\n  x: 1\n  x: 2\n".to_vec());
    assert!(message.contains("cfg/dup.yaml:"), "{message}");
    assert!(message.contains("duplicate key"), "{message}");
    // `1` and `"1"` are the same key once keys are strings.
    let message = parse_error("cfg/dup2.yaml", b"1: a\n\"1\": b\n".to_vec());
    assert!(message.contains("duplicate"), "{message}");
}

// ---------------------------------------------------------------- policy files

#[test]
fn hostile_policy_files_are_one_policy_error_finding() {
    let mut bomb = String::from(CATCH_ALL);
    bomb.push_str("x0: &x0 [a, a, a, a, a, a, a, a, a]\n");
    for i in 1..=9 {
        let refs = vec![format!("*x{}", i - 1); 9].join(", ");
        bomb.push_str(&format!("x{i}: &x{i} [{refs}]\n"));
    }
    let message = policy_error(&bomb);
    assert!(message.contains(".assent/policies/p.yaml"), "{message}");

    let deep = format!(
        "apiVersion: assent/v1\nkind: Policy\nrules: {}{}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let message = policy_error(&deep);
    assert!(message.contains(".assent/policies/p.yaml:3"), "{message}");

    let mut bytes = CATCH_ALL.as_bytes().to_vec();
    bytes.extend_from_slice(b"# \xff\n");
    let out = judge(
        vec![PolicyFile {
            path: ".assent/policies/p.yaml".into(),
            bytes,
        }],
        vec![],
    );
    let message = only_block(&out, RULE_POLICY_ERROR).message;
    assert!(
        message.contains(".assent/policies/p.yaml:8: not valid UTF-8"),
        "{message}"
    );

    let message =
        policy_error(&CATCH_ALL.replace("kind: Policy\n", "kind: Policy\nkind: Policy\n"));
    assert!(message.contains("duplicate"), "{message}");
}

fn with_when(when: &str) -> String {
    format!(
        "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: costly\n    match:\n      files: [\"**\"]\n    when: '{when}'\n    effect: challenge\n"
    )
}

#[test]
fn cel_that_would_loop_or_allocate_without_bound_is_refused() {
    // Three nested comprehensions: refused at load.
    let message = policy_error(&with_when(
        "new.all(x, new.all(y, new.all(z, x == y && y == z)))",
    ));
    assert!(
        message.contains(":7: rule `costly`: `when` nests more than 2 comprehension"),
        "{message}"
    );

    // A map chain that doubles a value per link (6 * 2^40 bytes): refused at load by the cost
    // bound, although depth and nesting are within their limits.
    let chain = format!("size([kind]{}) > 0", ".map(x, x + x)".repeat(40));
    let message = policy_error(&with_when(&chain));
    assert!(
        message.contains(":7: rule `costly`: `when` could cost more than 1e8"),
        "{message}"
    );

    // 4,000 nested parentheses: refused by the parser or the depth limit, no stack overflow.
    let parens = format!("{}new{} == 1", "(".repeat(4000), ")".repeat(4000));
    let message = policy_error(&with_when(&parens));
    assert!(message.contains(":7: rule `costly`"), "{message}");
}

#[test]
fn cel_quadratic_in_contributor_data_is_a_block_finding_not_a_hang() {
    // On the whole file only: each of its values would otherwise be judged too (an `add`
    // under the file's), and the point here is one evaluation over all of them.
    let rule = with_when("new.all(x, new.exists_one(y, y == x))").replace(
        "files: [\"**\"]\n",
        "files: [\"**\"]\n      pointer: \"\"\n",
    );
    // 100,000 distinct values: 10^10 steps if evaluated. Not evaluated; a block finding for
    // the rule's slot says why.
    let values: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
    let doc = format!("[{}]", values.join(","));
    let out = judge(
        policy(&rule),
        vec![added("cfg/list.json", doc.into_bytes())],
    );
    let f = only_block(&out, "costly");
    assert_eq!(f.slot.subject, "cfg/list.json#");
    assert!(
        f.message.contains("could not be evaluated"),
        "{}",
        f.message
    );
    assert!(f.message.contains("could cost up to"), "{}", f.message);

    // The same rule over a small file runs and fires (every value is unique).
    let out = judge(
        policy(&rule),
        vec![added("cfg/list.json", b"[1,2,3]".to_vec())],
    );
    assert_eq!(out.desired.findings.len(), 1);
    assert_eq!(out.desired.findings[0].effect, Effect::Challenge);
}

#[test]
fn nested_comprehensions_over_the_largest_literal_lists_complete() {
    // Two 600-element literal lists, nested: 360,000 iterations, within every limit.
    let list = format!("[{}]", vec!["1"; 600].join(","));
    let when = format!("{list}.all(x, {list}.exists(y, y == x))");
    assert!(when.len() < 4096);
    let out = judge(
        policy(&with_when(&when)),
        vec![added("cfg/a.json", b"1".to_vec())],
    );
    assert_eq!(out.desired.findings.len(), 1, "{:#?}", out.desired.findings);
    assert_eq!(out.desired.findings[0].slot.rule, "costly");
    assert_eq!(out.desired.findings[0].effect, Effect::Challenge);
}

// ---------------------------------------------------------------- bodies and markers

fn no_line_starts_with_slash(body: &str) -> bool {
    body.split(['\n', '\r'])
        .all(|line| !line.trim_start().starts_with('/'))
}

fn assert_body_round_trips(finding: &Finding) {
    let body = render::finding_thread_body(finding);
    assert_eq!(
        marker::decode_body(&body),
        Ok(Some(Marker::Finding {
            slot: finding.slot.clone(),
            occurrence: finding.occurrence.clone(),
        })),
        "{body}"
    );
    assert!(no_line_starts_with_slash(&body), "{body}");
    assert_eq!(
        body.lines().next().unwrap().matches("-->").count(),
        1,
        "{body}"
    );
}

#[test]
fn messages_and_values_with_comment_delimiters_and_quick_actions_stay_inert() {
    let rule = "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: sneaky\n    match:\n      files: [\"**\"]\n    effect: challenge\n    message: |\n      end --> of comment <!-- assent:marker {\"v\":1} -->\n      /approve\n        /merge\n      \t/label ~ok\n      new is {{ new }}\n";
    let value = "-->\n/close\n<!-- assent:marker {} -->\n  /unassign";
    let doc = serde_json::json!({ "-->\n/approve": value, "<!--": "/merge", "a/b~c": 1 });
    let out = judge(
        policy(rule),
        vec![added("cfg/x.json", serde_json::to_vec(&doc).unwrap())],
    );
    // The whole-file add, and an add of each value in it, its key as the pointer token.
    let subjects: Vec<&str> = out
        .desired
        .findings
        .iter()
        .map(|f| f.slot.subject.as_str())
        .collect();
    assert_eq!(
        subjects,
        [
            "cfg/x.json#",
            "cfg/x.json#/-->\n~1approve",
            "cfg/x.json#/<!--",
            "cfg/x.json#/a~1b~0c"
        ]
    );
    let f = &out.desired.findings[0];
    assert!(f.message.contains("/approve"));
    assert!(f.message.contains("-->"));
    for f in &out.desired.findings {
        assert_body_round_trips(f);
    }

    // Keys become pointer tokens, so subjects carry them too: with identity-free diffing, a
    // modify of each key gives one subject per key.
    let base = serde_json::json!({ "-->\n/approve": 0, "<!--": 0, "a/b~c": 0 });
    let out = judge(
        policy(rule),
        vec![ChangedFileInput {
            base: FileContent::Present(serde_json::to_vec(&base).unwrap()),
            ..added("cfg/x.json", serde_json::to_vec(&doc).unwrap())
        }],
    );
    let subjects: Vec<&str> = out
        .desired
        .findings
        .iter()
        .map(|f| f.slot.subject.as_str())
        .collect();
    assert_eq!(
        subjects,
        [
            "cfg/x.json#/-->\n~1approve",
            "cfg/x.json#/<!--",
            "cfg/x.json#/a~1b~0c"
        ]
    );
    for f in &out.desired.findings {
        assert_body_round_trips(f);
    }
}

const AWKWARD_PATHS: [&str; 6] = [
    "../../etc/passwd.json",
    "a/../b/./c.json",
    "dir with spaces/file name.yaml",
    "ünïcödé/日本語/🦀.yml",
    "\u{202e}gpj.json",
    "--> <!--/x.toml",
];

fn awkward_outcome() -> DesiredOutcome {
    let files = AWKWARD_PATHS
        .iter()
        .map(|p| {
            let bytes = if p.ends_with(".toml") {
                b"a = 1\n".to_vec()
            } else if p.ends_with(".json") {
                b"{\"a\": 1}".to_vec()
            } else {
                b"a: 1\n".to_vec()
            };
            added(p, bytes)
        })
        .collect();
    judge(policy(CATCH_ALL), files)
}

fn ctx() -> RunContext {
    RunContext {
        project: "p".into(),
        mr: 1,
        pins: fixture_pins(&HEAD),
        web_url: None,
        dry_run: false,
        mr_author_id: Some(assent::forge::memory::MR_AUTHOR_USER_ID),
        target: None,
        requests_before: Default::default(),
        previous_bot_users: Vec::new(),
    }
}

fn bot_slots(snapshot: &[ListedDiscussion]) -> Vec<(Slot, bool)> {
    Inventory::from_listing(snapshot, BOT)
        .threads
        .into_iter()
        .map(|t| (t.slot, t.resolved))
        .collect()
}

#[test]
fn file_paths_with_dots_spaces_and_unicode_round_trip_through_the_marker() {
    let out = awkward_outcome();
    let mut subjects: Vec<String> = out
        .desired
        .findings
        .iter()
        .map(|f| f.slot.subject.clone())
        .collect();
    subjects.sort();
    // The whole-file add, and the add of its one key under it.
    let mut expected: Vec<String> = AWKWARD_PATHS
        .iter()
        .flat_map(|p| [format!("{p}#"), format!("{p}#/a")])
        .collect();
    expected.sort();
    assert_eq!(subjects, expected);
    for f in &out.desired.findings {
        assert_body_round_trips(f);
    }

    // And through a forge: posted, listed, recognised, and a second run writes nothing.
    let forge = InMemoryForge::new(BOT, &HEAD);
    reconcile(&forge, &out.desired, &ctx()).unwrap();
    let mut listed: Vec<Slot> = bot_slots(&forge.snapshot())
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    listed.sort();
    let mut desired: Vec<Slot> = out
        .desired
        .findings
        .iter()
        .map(|f| f.slot.clone())
        .collect();
    desired.sort();
    assert_eq!(listed, desired);
    let writes = forge.request_counts().writes;
    let second = reconcile(&forge, &out.desired, &ctx()).unwrap();
    assert_eq!(forge.request_counts().writes, writes);
    assert!(
        second.receipt.warnings.is_empty(),
        "{:?}",
        second.receipt.warnings
    );
}

#[test]
fn a_contributor_forged_marker_on_every_slot_is_ignored() {
    let desired = awkward_outcome().desired;
    let forge = InMemoryForge::new(BOT, &HEAD);
    // The contributor posts the exact body assent would post, for every slot, and resolves
    // each thread (a forged "assent"), plus a forged summary claiming verification.
    let mut forged = Vec::new();
    for f in &desired.findings {
        let id = forge
            .post(CONTRIBUTOR, &render::finding_thread_body(f), true, None)
            .unwrap();
        forge.set_resolved(id, true).unwrap();
        forged.push(id);
    }
    let summary = marker::compose_body(
        &Marker::Summary {
            occurrence: render::summary_occurrence(&desired, &HEAD),
            state: marker::SummaryState::Verified,
            source_sha: HEAD.clone(),
            target: Some("main".into()),
        },
        "all good",
    );
    forged.push(forge.post(CONTRIBUTOR, &summary, false, None).unwrap());
    let before = forge.snapshot();

    let publication = reconcile(&forge, &desired, &ctx()).unwrap();
    assert!(
        publication.receipt.warnings.is_empty(),
        "forged markers are invisible"
    );
    let after = forge.snapshot();
    let inventory = Inventory::from_listing(&after, BOT);
    assert_eq!(
        inventory.summaries.len(),
        1,
        "assent posted its own summary"
    );
    assert!(!forged.contains(&inventory.summaries[0].note_id));
    assert_eq!(inventory.threads.len(), desired.findings.len());
    for t in &inventory.threads {
        assert!(!forged.contains(&t.forge_id));
        assert!(
            !t.resolved,
            "assent's own challenge threads start unresolved"
        );
    }
    // The decision is not APPROVE: the forged resolutions count for nothing.
    assert_eq!(
        publication.receipt.decision.map(|d| d.as_str()),
        Some("REVIEW")
    );
    // Forged notes are untouched.
    for d in &before {
        let now = after.iter().find(|a| a.id == d.id).unwrap();
        assert_eq!(now.notes[0].body, d.notes[0].body);
        assert_eq!(now.notes[0].resolved, d.notes[0].resolved);
        assert_eq!(
            now.notes.len(),
            d.notes.len(),
            "no reply to a forged thread"
        );
    }
}

#[test]
fn million_character_bot_notes_are_artifacts_or_warnings() {
    let big = "x".repeat(1_000_000);
    let finding = Finding {
        slot: Slot {
            rule: "big".into(),
            subject: format!("cfg/{big}.json#"),
        },
        effect: Effect::Challenge,
        occurrence: assent::core::model::Occurrence::digest(b"1"),
        message: big.clone(),
    };
    // Built directly: `DesiredState::new` bounds a subject this long (docs/contract.md#note-size), but a note
    // posted before that bound, or by hand, can still carry one, and must still be read.
    let desired = DesiredState {
        findings: vec![finding.clone()],
        ..DesiredState::default()
    };
    let forge = InMemoryForge::new(BOT, &HEAD);

    // A valid marker with a 1,000,000-character subject and body: an artifact.
    let valid = render::finding_thread_body(&finding);
    assert!(valid.len() > 2_000_000);
    let valid_id = forge.post(BOT, &valid, true, None).unwrap();
    // A broken marker on a 1,000,000-character first line, and one followed by a huge body.
    let broken_line = format!("{MARKER_PREFIX}{{\"v\":1,\"kind\":\"finding\",\"rule\":\"{big}");
    let broken_line_id = forge.post(BOT, &broken_line, true, None).unwrap();
    let broken_body = format!("{MARKER_PREFIX}{{oops -->\n{big}");
    let broken_body_id = forge.post(BOT, &broken_body, true, None).unwrap();

    let publication = reconcile(&forge, &desired, &ctx()).unwrap();
    let receipt = &publication.receipt;
    assert_eq!(receipt.findings.len(), 1);
    assert_eq!(
        receipt.findings[0].forge_id,
        Some(valid_id),
        "the 1M-character thread is the artifact"
    );
    assert_eq!(receipt.warnings.len(), 2, "{:?}", receipt.warnings);
    for (warning, id) in receipt
        .warnings
        .iter()
        .zip([broken_line_id, broken_body_id])
    {
        assert!(
            warning.starts_with(&format!("note {id}: malformed assent marker")),
            "{warning}"
        );
        assert!(
            warning.len() < 400,
            "warnings quote at most a short excerpt: {} bytes",
            warning.len()
        );
    }
    // Malformed bot notes are never edited or deleted.
    let after = forge.snapshot();
    for (id, body) in [
        (broken_line_id, &broken_line),
        (broken_body_id, &broken_body),
    ] {
        let note = after
            .iter()
            .flat_map(|d| &d.notes)
            .find(|n| n.id == id)
            .unwrap();
        assert_eq!(&note.body, body);
    }
}

// ---------------------------------------------------------------- the run's CEL budget

#[test]
fn cel_work_past_the_runs_budget_is_undecidable_naming_the_rule() {
    use assent::core::desired_state::{RULE_UNDECIDABLE, compute_desired_state_with_budget};
    use assent::core::policy::CelBudget;

    // Quadratic in each changed value, far under the per-evaluation limit, and matched by
    // every key of every file: the per-evaluation bound alone lets the run do it all.
    let policies = policy(
        &with_when("new.all(x, new.exists(y, y == x))")
            .replace("files: [\"**\"]", "files: [\"**\"]\n      pointer: \"/*\""),
    );
    let values = |n: usize| {
        format!(
            "[{}]",
            (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
        )
    };
    let document = |keys: usize, n: usize| {
        let entries: Vec<String> = (0..keys)
            .map(|k| format!("\"k{k}\":{}", values(n)))
            .collect();
        format!("{{{}}}", entries.join(","))
    };
    let modified = |path: &str, keys: usize| ChangedFileInput {
        old_path: path.into(),
        new_path: path.into(),
        base: FileContent::Present(b"{}".to_vec()),
        source: FileContent::Present(document(keys, 40).into_bytes()),
    };
    // Judged in path order: `a` first (one change), then `b` (twenty), then `c` (one).
    let files = vec![
        modified("cfg/c.json", 1),
        modified("cfg/a.json", 1),
        modified("cfg/b.json", 20),
    ];
    let inputs = || ReviewInputs {
        policy_files: policies.clone(),
        policy_problems: Vec::new(),
        self_edit_sides: self_edit_sides_of_contents(&files),
        changed_files: Ok(files.clone()),
        mr: MrContext::default(),
        limits: Limits::default(),
    };

    // Under the default budget every change is judged: 22 challenges, nothing undecidable.
    let all = compute_desired_state(inputs());
    assert_eq!(all.desired.findings.len(), 22);
    assert!(
        all.desired
            .findings
            .iter()
            .all(|f| f.effect == Effect::Challenge)
    );

    // A budget with room for five of the 22 evaluations (each charges the same here).
    let one = {
        let set = assent::core::policy::PolicySet::load(&policies).unwrap();
        set.evaluate(&all.changes[..1], &MrContext::default())
            .budget
            .spent()
    };
    let budget = CelBudget::new(one * 5.5);
    let out = compute_desired_state_with_budget(inputs(), budget);
    let undecidable: Vec<&Finding> = out
        .desired
        .findings
        .iter()
        .filter(|f| f.slot.rule == RULE_UNDECIDABLE)
        .collect();
    let subjects: Vec<&str> = undecidable
        .iter()
        .map(|f| f.slot.subject.as_str())
        .collect();
    assert_eq!(
        subjects,
        vec!["cfg/b.json#", "cfg/c.json#"],
        "a was judged in full"
    );
    for f in &undecidable {
        assert_eq!(f.effect, Effect::Block);
        assert!(f.message.contains("CEL budget"), "{}", f.message);
        assert!(f.message.contains("rule(s) `costly`"), "{}", f.message);
        assert!(f.message.contains("was spent"), "{}", f.message);
    }
    let judged = out
        .desired
        .findings
        .iter()
        .filter(|f| f.slot.rule == "costly")
        .count();
    assert_eq!(judged, 5, "the evaluations that fit are published");
    // Fail closed: the decision is BLOCK whatever the judged findings are.
    assert!(
        out.desired
            .findings
            .iter()
            .any(|f| f.effect == Effect::Block)
    );
    // Deterministic: the same inputs and budget give the same state, occurrences included.
    assert_eq!(out, compute_desired_state_with_budget(inputs(), budget));
}

/// File names that would end a link, start one, open HTML, a code span or a mention, or
/// break a line, in thread bodies and the summary that link to the file (docs/contract.md#file-links,
/// docs/contract.md#inert-text): each enters the link only percent-encoded, the link text is fixed, and
/// the rest of the body reads as without the link (`checks::linked_bodies`).
#[test]
fn hostile_file_names_stay_inert_in_file_links() {
    use assent_test_support::fuzz::checks::{HostileChange, linked_bodies};
    let names = [
        "topics/a).yaml",
        "topics/x](javascript:alert(1)).yaml",
        "topics/with space.yaml",
        "topics/<img src=x onerror=alert(1)>.json",
        "topics/`code`.toml",
        "topics/line\nbreak.yaml",
        "topics/@all.yaml",
        "topics/[x]: https://evil.example/.yaml",
        "topics/#L1?.yaml",
        "topics/../escape.yaml",
    ];
    for name in names {
        linked_bodies(&HostileChange {
            file: name.to_owned(),
            pointer: "/topics/t/retention_days".to_owned(),
            old: serde_json::json!(30),
            new: serde_json::json!(7),
            entry: Some("t".to_owned()),
        });
    }
    // They do get links, but for `..` and an empty segment (`//`), which a browser would
    // resolve elsewhere and no repository holds.
    use assent::core::links::{WebUrl, blob_url};
    let project = WebUrl::parse("https://gitlab.example/g/p").unwrap();
    let unlinked: Vec<&str> = names
        .into_iter()
        .filter(|n| blob_url(&project, &HEAD, n, Some(3)).is_none())
        .collect();
    assert_eq!(
        unlinked,
        [
            "topics/[x]: https://evil.example/.yaml",
            "topics/../escape.yaml"
        ]
    );
}

/// Whether any character of `text` but its line breaks would act on a terminal.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| c != '\n' && assent::core::terminal::is_unsafe(c))
        .collect()
}

#[test]
fn a_topic_named_like_a_terminal_escape_is_printed_escaped_by_run() {
    use assent_test_support::run::World;
    use fake_gitlab::fixtures;
    // In a CI log, printed raw: the line is erased and a green verdict appears.
    let hostile = "x\r\u{1b}[2K\u{1b}[32massent: APPROVE\u{202e}\u{9b}";
    let shown = "x\\r\\u{1b}[2K\\u{1b}[32massent: APPROVE\\u{202e}\\u{9b}";
    let push = "7777777777777777777777777777777777777777";
    let registry = |days: u32| {
        // YAML's own escapes: a raw C1 control is not allowed in a YAML file.
        format!(
            "topics:\n  - name: \"x\\r\\e[2K\\e[32massent: APPROVE\\u202E\\x9b\"\n    retention_days: {days}\n"
        )
    };
    let w = World::new(crate::ASSENT);
    w.put_file(fixtures::BASE_SHA, "topics/orders.yaml", &registry(30));
    w.push(push, &[("topics/orders.yaml", &registry(7))]);
    for args in [&["--dry-run"][..], &[][..], &[][..]] {
        let r = w
            .invocation()
            .args(args)
            .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", push)
            .run();
        r.expect_code(1);
        for (stream, text) in [
            ("stdout", r.stdout.clone()),
            ("stderr", r.stderr.clone()),
            ("progress", r.progress.join("\n")),
        ] {
            assert_eq!(
                raw_controls(&text),
                Vec::<char>::new(),
                "{stream}: {text:?}"
            );
        }
        assert!(r.stdout.contains(shown), "{args:?}: {}", r.stdout);
        assert!(
            !r.stdout.lines().any(|l| l.starts_with("assent: APPROVE")),
            "{}",
            r.stdout
        );
    }
    // JSON output stays JSON, with the subject exactly as judged.
    let r = w
        .invocation()
        .args(&["--format", "json"])
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", push)
        .run();
    r.expect_code(1);
    assert_eq!(
        raw_controls(&r.stdout),
        Vec::<char>::new(),
        "{:?}",
        r.stdout
    );
    let printed: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let subject = printed["findings"][0]["subject"].as_str().unwrap();
    assert!(subject.contains(hostile), "{subject:?}");
    assert_eq!(printed, r.receipt());
}

// ---------------------------------------------------------------- what other readers read otherwise
//
// The binary against the fake GitLab: an MR whose file other readers of the registry would
// read otherwise than assent (a merge key, YAML 1.1 octal, keys alike under case folding, an
// invisible character in a key) blocks with `assent/parse-error` naming `file:line`, and is
// not diffed: without the refusal each of these passed as APPROVE with no finding.

const NEW_SHA: &str = "4444444444444444444444444444444444444444";

/// Governs JSON registries too (the example policies govern `topics/*.yaml`).
const JSON_POLICY: &str = r#"apiVersion: assent/v1
kind: Policy
rules:
  - id: json-retention
    match:
      files: ["topics/*.json"]
      pointer: "/retention_days"
    when: "int(new) < int(old)"
    effect: block
"#;

/// Pushes `content` as `path` and runs `assent run` at that head: the decision must be
/// `BLOCK` by one `assent/parse-error` thread whose body names `path:line` and says `says`.
fn blocks_as_read_otherwise(path: &str, content: &str, line: usize, says: &str) {
    use assent_test_support::run::World;
    let w = World::new(crate::ASSENT);
    w.put_file(
        fake_gitlab::fixtures::TARGET_SHA,
        ".assent/policies/json.yaml",
        JSON_POLICY,
    );
    w.push(NEW_SHA, &[(path, content)]);
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run();
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "BLOCK", "{receipt:#}");
    let rules: Vec<&str> = receipt["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["rule"].as_str().expect("rule"))
        .collect();
    assert_eq!(rules, ["assent/parse-error"], "{receipt:#}");
    let thread = w.thread("assent/parse-error");
    let body = &thread.notes[0].body;
    assert!(body.contains(&format!("{path}:{line}:")), "{body}");
    assert!(body.contains(says), "{body}");
    // The summary's row of the finding names the error too, not only its thread.
    let summary = w.summary().body;
    let row = summary
        .lines()
        .find(|l| l.contains("Does not parse:"))
        .unwrap_or_else(|| panic!("no parse-error row: {summary}"));
    assert!(row.contains(&format!("{path}:{line}:")), "{row}");
    w.assert_no_violations();
}

#[test]
fn a_merge_key_inside_an_entry_blocks_naming_its_line() {
    blocks_as_read_otherwise(
        "topics/orders.yaml",
        "topics:\n  - name: orders.events.v1\n    retention_days: 30\n    <<: {retention_days: 1}\n",
        4,
        "merge key",
    );
    blocks_as_read_otherwise(
        "topics/orders.yaml",
        "topics:\n  - name: orders.events.v1\n    <<:\n      retention_days: 1\n    retention_days: 30\n",
        3,
        "merge key",
    );
}

#[test]
fn yaml_1_1_octal_blocks_saying_what_pyyaml_reads() {
    blocks_as_read_otherwise(
        "topics/orders.yaml",
        "topics:\n  - name: orders.events.v1\n    retention_days: 030\n",
        3,
        "the integer 24 to PyYAML",
    );
    blocks_as_read_otherwise(
        "topics/orders.yaml",
        "topics:\n  - name: orders.events.v1\n    retention_days: 30\n    partitions: 012\n",
        4,
        "the integer 10 to PyYAML",
    );
}

#[test]
fn keys_alike_under_case_folding_block_in_yaml_and_json() {
    blocks_as_read_otherwise(
        "topics/orders.yaml",
        "topics:\n  - name: orders.events.v1\n    retention_days: 30\n    retention_day\u{17f}: 1\n",
        4,
        "differ only in letter case",
    );
    blocks_as_read_otherwise(
        "topics/orders.json",
        "{\n  \"retention_days\": 30,\n  \"RETENTION_DAYS\": 1\n}\n",
        3,
        "differ only in letter case",
    );
}

#[test]
fn an_invisible_character_in_a_key_blocks_naming_it() {
    blocks_as_read_otherwise(
        "topics/orders.yaml",
        "topics:\n  - name: orders.events.v1\n    retention\u{feff}_days: 1\n",
        3,
        "U+FEFF",
    );
    blocks_as_read_otherwise(
        "topics/orders.json",
        "{\n  \"retention\\u200b_days\": 1\n}\n",
        2,
        "U+200B",
    );
}

#[test]
fn yaml_1_1_booleans_sexagesimal_and_json_wide_integers_block() {
    blocks_as_read_otherwise(
        "topics/orders.yaml",
        "topics:\n  - name: orders.events.v1\n    retention_days: 30\n    compacted: yes\n",
        4,
        "the boolean true in YAML 1.1",
    );
    blocks_as_read_otherwise(
        "topics/orders.yaml",
        "topics:\n  - name: orders.events.v1\n    retention_days: 1:30\n",
        3,
        "the integer 90 to PyYAML",
    );
    blocks_as_read_otherwise(
        "topics/orders.json",
        "{\n  \"retention_days\": 9007199254740993\n}\n",
        2,
        "beyond what a double holds exactly",
    );
}
