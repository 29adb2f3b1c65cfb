//! A change of the policies themselves: the self-edit challenge and its owners.

use super::*;

// ---- policy owners: the self-edit challenge --------------------------------------------------

const SELF_EDIT: &str = "assent/self-edit";
const EXTRA_POLICY: &str = ".assent/policies/extra.yaml";
const EXTRA_POLICY_TEXT: &str = "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: extra\n    match: { files: [\"other/*.yaml\"] }\n    effect: comment\n";
/// carol: a project maintainer, neither the author nor the bot.
const CAROL: u64 = 400;

/// The MR shrinks a retention and adds a policy file, at `NEW_SHA`; carol is a maintainer and
/// bob (the author) holds `author_level`.
fn policy_mr(author_level: u32) -> World {
    let w = World::new(ASSENT);
    w.fake.with_state(|s| {
        s.users.push(fake_gitlab::User::new(CAROL, "carol"));
        s.tokens
            .push(fake_gitlab::Token::new("glpat-carol", CAROL, &["api"]).access_level(40));
        s.tokens.push(
            fake_gitlab::Token::new("glpat-bob", fixtures::AUTHOR_ID, &["api"])
                .access_level(author_level),
        );
    });
    w.push(
        NEW_SHA,
        &[
            ("topics/orders.yaml", &orders(7)),
            (EXTRA_POLICY, EXTRA_POLICY_TEXT),
        ],
    );
    w
}

fn run_at_new(w: &World) -> RunResult {
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEW_SHA)
        .run()
}

/// Both threads resolved by `by`, then a run.
fn resolve_both_and_run(w: &World, by: u64) -> RunResult {
    for rule in [SELF_EDIT, RETENTION] {
        w.fake
            .resolve(project(), mr(), &w.thread(rule).id, by, true);
    }
    run_at_new(w)
}

/// (rule, assented, assentedBy) of each finding of a receipt.
fn assents(receipt: &Value) -> Vec<(String, bool, Option<String>)> {
    receipt["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["assented"] == true,
                f.get("assentedBy").map(|b| b.as_str().unwrap().to_owned()),
            )
        })
        .collect()
}

#[test]
fn an_mr_that_edits_its_own_policies_gets_a_self_edit_challenge() {
    let w = policy_mr(30);
    let r = run_at_new(&w);
    r.expect_code(1);
    assert!(
        r.stdout.starts_with("assent: REVIEW for !7"),
        "{}",
        r.stdout
    );

    let thread = w.thread(SELF_EDIT);
    assert!(!thread.resolved(), "a challenge waits for a policy owner");
    assert!(
        thread.notes[0]
            .body
            .contains("\"subject\":\".assent/policies/extra.yaml#\""),
        "{}",
        thread.notes[0].body
    );
    assert!(thread.notes[0].body.contains("**⏳ challenge**"));
    assert!(
        thread.notes[0]
            .body
            .contains("_A policy owner other than the merge request's author assents"),
        "{}",
        thread.notes[0].body
    );
    // The MR's other change is still judged under the target's policies.
    w.thread(RETENTION);

    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    let rules: Vec<&str> = receipt["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, vec![SELF_EDIT, RETENTION], "sorted by rule");
    assert_eq!(receipt["findings"][0]["effect"], "challenge");
    w.assert_no_violations();
    r.assert_no_token();
}

#[test]
fn a_maintainer_other_than_the_author_assents_to_a_policy_change_on_the_record() {
    let w = policy_mr(30);
    run_at_new(&w).expect_code(1);
    let r = resolve_both_and_run(&w, CAROL);
    r.expect_code(0);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "APPROVE");
    assert_eq!(
        assents(&receipt),
        [
            (SELF_EDIT.to_owned(), true, Some("carol".to_owned())),
            (RETENTION.to_owned(), true, Some("carol".to_owned())),
        ]
    );
    let text = std::fs::read_to_string(w.receipt_path()).unwrap();
    assert!(
        text.contains("\"resolved\":true,\"assented\":true,\"assentedBy\":\"carol\"}"),
        "assentedBy right after assented: {text}"
    );
    let summary = w.summary().body;
    assert!(summary.contains("## assent · APPROVE"), "{summary}");
    assert!(summary.contains("· assented by `carol` |"), "{summary}");
    assert!(!summary.contains("@carol"), "never a mention: {summary}");
    w.assert_no_violations();
    r.assert_no_token();
}

#[test]
fn a_developers_resolution_of_a_policy_change_does_not_count() {
    let w = policy_mr(30);
    run_at_new(&w).expect_code(1);
    // alice is a developer: enough for the retention rule, not for a policy change.
    let r = resolve_both_and_run(&w, fixtures::HUMAN_ID);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(
        assents(&receipt),
        [
            (SELF_EDIT.to_owned(), false, None),
            (RETENTION.to_owned(), true, Some("alice".to_owned())),
        ]
    );
    assert_eq!(receipt["findings"][0]["resolved"], true);
    assert!(w.thread(SELF_EDIT).resolved(), "never re-opened");
    let summary = w.summary().body;
    assert!(
        summary.contains("resolved by `alice`, which does not count as assent: a change to the policies needs a policy owner's assent (a maintainer or above); the resolver is a developer."),
        "{summary}"
    );
}

#[test]
fn the_author_never_assents_to_their_own_policy_change_even_as_a_maintainer() {
    let w = policy_mr(40);
    run_at_new(&w).expect_code(1);
    w.fake.resolve(
        project(),
        mr(),
        &w.thread(SELF_EDIT).id,
        fixtures::AUTHOR_ID,
        true,
    );
    let r = run_at_new(&w);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(assents(&receipt)[0], (SELF_EDIT.to_owned(), false, None));
    let summary = w.summary().body;
    assert!(
        summary.contains("resolved by `bob`, which does not count as assent: the merge request's author cannot assent to their own change."),
        "{summary}"
    );
}

#[test]
fn the_targets_policy_owners_replace_the_default() {
    let w = policy_mr(30);
    // Only alice (a developer) owns the policies; carol, a maintainer, does not.
    w.put_file(
        fixtures::TARGET_SHA,
        ".assent/policies/owners.yaml",
        "apiVersion: assent/v1\nkind: Policy\npolicy_owners:\n  users: [alice]\nrules:\n  - id: owners-noop\n    match: { files: [\"none/*.yaml\"] }\n    effect: comment\n",
    );
    run_at_new(&w).expect_code(1);
    let self_edit = w.thread(SELF_EDIT);
    w.fake.resolve(project(), mr(), &self_edit.id, CAROL, true);
    w.fake.resolve(
        project(),
        mr(),
        &w.thread(RETENTION).id,
        fixtures::HUMAN_ID,
        true,
    );
    let r = run_at_new(&w);
    r.expect_code(1);
    assert_eq!(r.receipt()["decision"], "REVIEW");
    assert_eq!(
        assents(&r.receipt())[0],
        (SELF_EDIT.to_owned(), false, None)
    );
    assert!(
        w.summary()
            .body
            .contains("resolved by `carol`, which does not count as assent: a change to the policies needs a policy owner's assent (one of alice); the resolver is not listed."),
        "{}",
        w.summary().body
    );
    // alice re-resolves it: she is the named owner.
    w.fake.resolve(project(), mr(), &self_edit.id, CAROL, false);
    w.fake
        .resolve(project(), mr(), &self_edit.id, fixtures::HUMAN_ID, true);
    let r = run_at_new(&w);
    r.expect_code(0);
    assert_eq!(r.receipt()["decision"], "APPROVE");
    assert_eq!(
        assents(&r.receipt())[0],
        (SELF_EDIT.to_owned(), true, Some("alice".to_owned()))
    );
}

// ---- an owner's assent is to the change it saw (docs/contract.md#policy-owners) -------------

/// Pushes `sha`: the base tree with `files` on top, then each of `modes` (path, git mode) set
/// in its tree and on the path's listing entry (`b_mode`), as GitLab lists a mode change.
fn push_with_modes(w: &World, sha: &str, files: &[(&str, &str)], modes: &[(&str, &str)]) {
    w.push(sha, files);
    w.fake.with_state(|s| {
        let p = s.project_mut(project()).expect("project");
        for (path, mode) in modes {
            p.modes
                .entry(sha.to_owned())
                .or_default()
                .insert((*path).to_owned(), (*mode).to_owned());
            let listed = p.mr_mut(mr()).expect("mr");
            match listed.diffs.iter_mut().find(|d| d.new_path == *path) {
                Some(d) => d.b_mode = (*mode).to_owned(),
                None => listed
                    .diffs
                    .push(DiffFile::modified(path).modes("100644", mode)),
            }
        }
    });
}

fn run_at(w: &World, sha: &str) -> RunResult {
    w.invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", sha)
        .run()
}

/// The policy MR with carol's assent to both of its challenges: `APPROVE`.
fn assented_policy_mr() -> World {
    let w = policy_mr(30);
    run_at_new(&w).expect_code(1);
    let r = resolve_both_and_run(&w, CAROL);
    r.expect_code(0);
    assert_eq!(r.receipt()["decision"], "APPROVE");
    w
}

#[test]
fn an_owners_assent_does_not_carry_over_to_a_later_change_of_the_policy_file() {
    let orders7 = orders(7);
    let weakened =
        EXTRA_POLICY_TEXT.replace("effect: comment", "effect: comment\n    message: later");
    // (shape, files pushed, git modes set, the decision).
    type Shape<'a> = (
        &'a str,
        Vec<(&'a str, &'a str)>,
        Vec<(&'a str, &'a str)>,
        &'a str,
    );
    let shapes: [Shape<'_>; 3] = [
        // A second push that changes what the rule says.
        ("content", vec![(EXTRA_POLICY, &weakened)], vec![], "REVIEW"),
        // The same bytes, now executable.
        (
            "mode",
            vec![(EXTRA_POLICY, EXTRA_POLICY_TEXT)],
            vec![(EXTRA_POLICY, "100755")],
            "REVIEW",
        ),
        // A symbolic link instead of the file: GitLab reads a link as its target's path, which
        // does not load as a policy (`assent/policy-broken` as well).
        (
            "symlink",
            vec![(EXTRA_POLICY, "topics.yaml")],
            vec![(EXTRA_POLICY, "120000")],
            "BLOCK",
        ),
    ];
    for (shape, files, modes, decision) in shapes {
        let w = assented_policy_mr();
        let mut pushed = vec![("topics/orders.yaml", orders7.as_str())];
        pushed.extend(files);
        push_with_modes(&w, NEWER_SHA, &pushed, &modes);
        let r = run_at(&w, NEWER_SHA);
        r.expect_code(if decision == "APPROVE" { 0 } else { 1 });
        let receipt = r.receipt();
        assert_eq!(receipt["decision"], decision, "{shape}");
        let assented: Vec<_> = assents(&receipt)
            .into_iter()
            .filter(|(rule, ..)| rule == SELF_EDIT || rule == RETENTION)
            .collect();
        assert_eq!(
            assented,
            [
                (SELF_EDIT.to_owned(), false, None),
                // The retention is as it was: its assent stands.
                (RETENTION.to_owned(), true, Some("carol".to_owned())),
            ],
            "{shape}"
        );
        let threads = w.threads_of(SELF_EDIT);
        assert_eq!(threads.len(), 2, "{shape}: {threads:#?}");
        assert!(
            threads[0].resolved(),
            "{shape}: the assented thread is superseded"
        );
        assert!(
            !threads[1].resolved(),
            "{shape}: a policy owner must assent again"
        );
        w.assert_no_violations();
    }
}

/// The MR's head `sha`: the base tree without `deleted`, with `files` on top, and the listing
/// of what differs from the base.
fn push_deleting(w: &World, sha: &str, deleted: &str, files: &[(&str, &str)]) {
    w.fake.with_state(|s| {
        let p = s.project_mut(project()).expect("project");
        let base = p.files[fixtures::BASE_SHA].clone();
        let mut tree = base.clone();
        tree.remove(deleted);
        for (path, text) in files {
            tree.insert(
                (*path).to_owned(),
                fake_gitlab::FileContent(text.as_bytes().to_vec()),
            );
        }
        let diffs = DiffFile::listing(&base, &tree);
        p.files.insert(sha.to_owned(), tree);
        p.branches.insert("feature".into(), sha.to_owned());
        p.mr_mut(mr()).expect("mr").diffs = diffs;
    });
    w.fake.set_head(project(), mr(), sha);
}

#[test]
fn an_owners_assent_to_a_deletion_does_not_carry_over_to_a_different_re_add() {
    let w = policy_mr(30);
    // The policy file exists at the base: the MR deletes it, and a maintainer assents.
    w.put_file(fixtures::BASE_SHA, EXTRA_POLICY, EXTRA_POLICY_TEXT);
    push_deleting(
        &w,
        NEW_SHA,
        EXTRA_POLICY,
        &[("topics/orders.yaml", &orders(7))],
    );
    run_at_new(&w).expect_code(1);
    let r = resolve_both_and_run(&w, CAROL);
    r.expect_code(0);
    assert_eq!(r.receipt()["decision"], "APPROVE");
    // The author puts it back with other content: the change is no longer the deletion the
    // owner saw.
    let weakened = EXTRA_POLICY_TEXT.replace("other/*.yaml", "nothing/*.yaml");
    push_deleting(
        &w,
        NEWER_SHA,
        "none",
        &[
            ("topics/orders.yaml", &orders(7)),
            (EXTRA_POLICY, &weakened),
        ],
    );
    let r = run_at(&w, NEWER_SHA);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(
        assents(&receipt),
        [
            (SELF_EDIT.to_owned(), false, None),
            (RETENTION.to_owned(), true, Some("carol".to_owned())),
        ]
    );
    assert_eq!(w.threads_of(SELF_EDIT).len(), 2);
}

#[test]
fn a_rebase_that_leaves_the_policy_file_as_it_was_keeps_the_owners_assent() {
    const REBASED_BASE: &str = "6666666666666666666666666666666666666666";
    let w = assented_policy_mr();
    // The target moved on by an unrelated file and the MR was rebased onto it: new base, new
    // head, the policy file as it was on both sides.
    w.fake.with_state(|s| {
        let p = s.project_mut(project()).expect("project");
        let mut base = p.files[fixtures::BASE_SHA].clone();
        base.insert(
            "docs/readme.md".into(),
            fake_gitlab::FileContent(b"hi".to_vec()),
        );
        let mut head = p.files[NEW_SHA].clone();
        head.insert(
            "docs/readme.md".into(),
            fake_gitlab::FileContent(b"hi".to_vec()),
        );
        p.files.insert(REBASED_BASE.into(), base);
        p.files.insert(NEWER_SHA.into(), head);
    });
    w.fake.set_head(project(), mr(), NEWER_SHA);
    let r = w
        .invocation()
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", NEWER_SHA)
        .env("CI_MERGE_REQUEST_DIFF_BASE_SHA", REBASED_BASE)
        .run();
    r.expect_code(0);
    assert_eq!(r.receipt()["decision"], "APPROVE");
    assert_eq!(
        w.threads_of(SELF_EDIT).len(),
        1,
        "the same thread, still assented"
    );
}

// ---- bots and accounts that are not active never assent (docs/contract.md#who-may-assent) --

/// A project access token's bot user: a Maintainer, as its creator chose.
const TOKEN_BOT: u64 = 500;

/// Adds user `id` (`username`, of `user_type` and `state`) as a Maintainer of the project.
fn add_maintainer(w: &World, id: u64, username: &str, user_type: &str, state: &str) {
    w.fake.with_state(|s| {
        s.users.push(
            fake_gitlab::User::new(id, username)
                .user_type(user_type)
                .state(state),
        );
        s.tokens.push(
            fake_gitlab::Token::new(&format!("glpat-{username}"), id, &["api"]).access_level(40),
        );
    });
}

#[test]
fn a_project_access_tokens_bot_never_assents_to_a_challenge_or_a_policy_change() {
    // bob, the author, is a Maintainer: he could create the token and resolve with it.
    let w = policy_mr(40);
    add_maintainer(&w, TOKEN_BOT, "project_42_bot_1", "project_bot", "active");
    run_at_new(&w).expect_code(1);
    let r = resolve_both_and_run(&w, TOKEN_BOT);
    r.expect_code(1);
    let receipt = r.receipt();
    assert_eq!(receipt["decision"], "REVIEW");
    assert_eq!(
        assents(&receipt),
        [
            (SELF_EDIT.to_owned(), false, None),
            (RETENTION.to_owned(), false, None)
        ]
    );
    let summary = w.summary().body;
    assert!(
        summary.contains("resolved by `project_42_bot_1`, which does not count as assent: GitLab marks the resolver as a bot"),
        "{summary}"
    );
    assert!(w.thread(SELF_EDIT).resolved(), "never re-opened");
    // One account read for the one resolver of both threads.
    let reads = w
        .fake
        .requests()
        .iter()
        .filter(|r| r.path.contains(&format!("/users/{TOKEN_BOT}")))
        .count();
    assert_eq!(reads, 1, "one read per resolver in a run");
}

#[test]
fn a_bot_counts_only_where_a_policy_names_it() {
    let w = policy_mr(30);
    add_maintainer(&w, TOKEN_BOT, "project_42_bot_1", "project_bot", "active");
    // The policy owners: Maintainers by role, and the bot by name. A role never admits it.
    w.put_file(
        fixtures::TARGET_SHA,
        ".assent/policies/owners.yaml",
        "apiVersion: assent/v1\nkind: Policy\npolicy_owners:\n  users: [project_42_bot_1]\n  min_role: maintainer\nrules:\n  - id: owners-noop\n    match: { files: [\"none/*.yaml\"] }\n    effect: comment\n",
    );
    run_at_new(&w).expect_code(1);
    let r = resolve_both_and_run(&w, TOKEN_BOT);
    r.expect_code(1);
    assert_eq!(
        assents(&r.receipt()),
        [
            (
                SELF_EDIT.to_owned(),
                true,
                Some("project_42_bot_1".to_owned())
            ),
            (RETENTION.to_owned(), false, None),
        ]
    );
}

#[test]
fn service_accounts_blocked_and_deactivated_members_never_assent() {
    for (id, username, user_type, state, why) in [
        (
            501,
            "svc-deploy",
            "service_account",
            "active",
            "GitLab marks the resolver as a bot",
        ),
        (
            502,
            "mallory",
            "human",
            "blocked",
            "the resolver's GitLab account is blocked, not active",
        ),
        (
            503,
            "dave",
            "human",
            "deactivated",
            "the resolver's GitLab account is deactivated, not active",
        ),
    ] {
        let w = policy_mr(30);
        add_maintainer(&w, id, username, user_type, state);
        run_at_new(&w).expect_code(1);
        let r = resolve_both_and_run(&w, id);
        r.expect_code(1);
        assert_eq!(r.receipt()["decision"], "REVIEW", "{username}");
        assert_eq!(
            assents(&r.receipt()),
            [
                (SELF_EDIT.to_owned(), false, None),
                (RETENTION.to_owned(), false, None)
            ],
            "{username}"
        );
        let summary = w.summary().body;
        assert!(
            summary.contains(&format!(
                "resolved by `{username}`, which does not count as assent: {why}"
            )),
            "{username}: {summary}"
        );
    }
}

#[test]
fn a_resolver_whose_account_cannot_be_read_does_not_count() {
    let w = policy_mr(30);
    run_at_new(&w).expect_code(1);
    w.fake.inject(
        FaultRule::new(FaultAction::Forbidden)
            .method("GET")
            .route(RouteKind::UserById),
    );
    let r = resolve_both_and_run(&w, CAROL);
    r.expect_code(1);
    assert_eq!(r.receipt()["decision"], "REVIEW");
    let summary = w.summary().body;
    assert!(
        summary.contains("resolved by `carol`, which does not count as assent: assent could not tell whether the resolver is an active person and not a bot: GitLab refused to show user 400"),
        "{summary}"
    );
}
