//! A renewed token, as GitLab makes it: a NEW project access token has a new bot user
//! (`lib/api/resource_access_tokens.rb` creates one per token; rotation,
//! `POST …/access_tokens/:token_id/rotate`, keeps it). assent's earlier artifacts are then
//! another user's notes: the run must neither duplicate them nor lose their assents
//! (docs/run.md, "Renewing the token").

use assent_test_support::run::{RunResult, World, orders};
use fake_gitlab::{Discussion, Token, User, fixtures};

use crate::ASSENT;

const RETENTION: &str = "retention-shrink";
/// The username of `fixtures::basic()`'s bot, the one the first token had.
const BOT_NAME: &str = "assent-bot";
/// The bot user of the token created to replace the first one.
const NEW_BOT_ID: u64 = 101;
const NEW_BOT: &str = "project_42_bot_renewed";
const NEW_BOT_TOKEN: &str = "glpat-renewed-bot-token";

/// A new project access token, and with it a new bot user, as GitLab creates both.
fn renew_by_a_new_token(w: &World) {
    w.fake.with_state(|st| {
        st.users.push(User::new(NEW_BOT_ID, NEW_BOT).bot(true));
        st.tokens
            .push(Token::new(NEW_BOT_TOKEN, NEW_BOT_ID, &["api"]));
    });
}

fn run_as_new_bot(w: &World, args: &[&str]) -> RunResult {
    let r = w
        .invocation()
        .env("ASSENT_TOKEN", NEW_BOT_TOKEN)
        .args(args)
        .run();
    for out in [&r.stdout, &r.stderr] {
        assert!(!out.contains(NEW_BOT_TOKEN), "token leaked: {out}");
    }
    r
}

/// Discussions whose first note carries a marker of `kind`, by `author`.
fn with_marker(w: &World, kind: &str, author: u64) -> Vec<Discussion> {
    let needle = format!("\"kind\":\"{kind}\"");
    w.discussions()
        .into_iter()
        .filter(|d| d.notes[0].author_id == author && d.notes[0].body.contains(&needle))
        .collect()
}

/// The first run as the old bot, and a reviewer's assent on its thread.
fn reviewed_by_the_old_bot() -> World {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(1);
    let thread = w.thread(RETENTION);
    w.fake.resolve(
        fixtures::PROJECT_ID,
        fixtures::MR_IID,
        &thread.id,
        fixtures::HUMAN_ID,
        true,
    );
    w
}

/// The reproduction: before, the new bot's run posted a second summary and a second
/// thread, and the reviewer's assent was lost (REVIEW). Now it writes nothing, exits 2 and
/// says who the previous bot is, why it stops, and the fix.
#[test]
fn a_new_bot_user_stops_the_run_before_any_write() {
    let w = reviewed_by_the_old_bot();
    renew_by_a_new_token(&w);
    let before = w.discussions();
    w.fake.reset_log();
    let r = run_as_new_bot(&w, &[]);
    r.expect_code(2);
    assert!(w.writes().is_empty(), "{:#?}", w.writes());
    assert_eq!(w.discussions(), before);
    for part in [
        "assent-bot (id 100)",
        "another bot user",
        "duplicate every thread and lose every assent",
        "--previous-bot-user assent-bot",
        "ASSENT_PREVIOUS_BOT_USERS=assent-bot",
        "rotation API",
    ] {
        assert!(r.stderr.contains(part), "{part}: {}", r.stderr);
    }
    // A dry run stops the same way: it would plan the duplicates.
    let dry = run_as_new_bot(&w, &["--dry-run"]);
    dry.expect_code(2);
    assert!(w.writes().is_empty());
    w.assert_no_violations();
}

/// Adopted, the old bot's thread keeps the reviewer's assent: APPROVE, no second thread,
/// one summary by the new bot, the old summary kept unedited with a reply and resolved;
/// a rerun writes nothing, and after a push the new occurrence gets one fresh thread by the
/// new bot beside the old bot's resolved one (no duplicate of either).
#[test]
fn an_adopted_previous_bot_keeps_its_threads_and_their_assent() {
    let w = reviewed_by_the_old_bot();
    let old_summary = w.summary();
    let old_thread = w.thread(RETENTION);
    renew_by_a_new_token(&w);

    let r = run_as_new_bot(&w, &["--previous-bot-user", BOT_NAME]);
    r.expect_code(0);
    assert!(r.stdout.starts_with("assent: APPROVE"), "{}", r.stdout);
    assert_eq!(r.receipt()["actions"][0]["action"], "preserve-resolution");

    assert_eq!(w.threads_of(RETENTION).len(), 1, "no second thread");
    assert!(w.thread(RETENTION).resolved());
    let new_summaries = with_marker(&w, "summary", NEW_BOT_ID);
    assert_eq!(new_summaries.len(), 1, "one live summary");
    let live = &new_summaries[0].notes[0].body;
    assert!(live.contains("\"state\":\"verified\""), "{live}");
    assert!(live.contains("## assent · APPROVE"), "{live}");
    // The old summary cannot be edited by the new bot: kept as written, superseded by a
    // reply, resolved.
    let old = w
        .discussions()
        .into_iter()
        .find(|d| d.notes[0].id == old_summary.id)
        .unwrap();
    assert_eq!(old.notes[0].body, old_summary.body);
    assert_eq!(old.notes.len(), 2, "{old:#?}");
    assert_eq!(old.notes[1].author_id, NEW_BOT_ID);
    assert!(old.notes[1].body.starts_with("Superseded"), "{old:#?}");
    assert!(old.resolved(), "{old:#?}");

    // The variable adopts as the flag does; the rerun is at rest.
    w.fake.reset_log();
    let again = w
        .invocation()
        .env("ASSENT_TOKEN", NEW_BOT_TOKEN)
        .env(
            "ASSENT_PREVIOUS_BOT_USERS",
            &format!(" {} ,someone", BOT_NAME),
        )
        .run();
    again.expect_code(0);
    assert!(w.writes().is_empty(), "{:#?}", w.writes());

    // A push changes the occurrence: the old bot's thread is superseded by the new bot, and
    // the fresh thread is the new bot's.
    w.push(
        "4444444444444444444444444444444444444444",
        &[("topics/orders.yaml", &orders(1))],
    );
    let pushed = w
        .invocation()
        .env("ASSENT_TOKEN", NEW_BOT_TOKEN)
        .env(
            "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA",
            "4444444444444444444444444444444444444444",
        )
        .args(&["--previous-bot-user", BOT_NAME])
        .run();
    pushed.expect_code(1);
    let threads = w.threads_of(RETENTION);
    assert_eq!(threads.len(), 2, "{threads:#?}");
    // Resolved, the stale thread stays as it is (docs/contract.md#reconciliation).
    let stale = threads.iter().find(|d| d.id == old_thread.id).unwrap();
    assert!(stale.resolved() && stale.notes.len() == 1, "{stale:#?}");
    let fresh = threads.iter().find(|d| d.id != old_thread.id).unwrap();
    assert_eq!(fresh.notes[0].author_id, NEW_BOT_ID);
    assert!(!fresh.resolved());
    assert_eq!(with_marker(&w, "summary", NEW_BOT_ID).len(), 1);
    w.assert_no_violations();
}

/// An adopted bot's open thread is the bot's own: when a push makes its occurrence stale,
/// the new bot replies "superseded" in it and resolves it, and posts the one fresh thread.
#[test]
fn an_adopted_bots_open_thread_is_superseded_by_the_new_bot() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(1);
    let old_thread = w.thread(RETENTION);
    renew_by_a_new_token(&w);
    let sha = "4444444444444444444444444444444444444444";
    w.push(sha, &[("topics/orders.yaml", &orders(1))]);
    let r = w
        .invocation()
        .env("ASSENT_TOKEN", NEW_BOT_TOKEN)
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", sha)
        .env("ASSENT_PREVIOUS_BOT_USERS", BOT_NAME)
        .run();
    r.expect_code(1);
    let threads = w.threads_of(RETENTION);
    assert_eq!(threads.len(), 2, "{threads:#?}");
    let old = threads.iter().find(|d| d.id == old_thread.id).unwrap();
    assert!(old.resolved(), "{old:#?}");
    assert_eq!(old.notes.last().unwrap().author_id, NEW_BOT_ID);
    assert!(old.notes.last().unwrap().body.contains(sha), "{old:#?}");
    assert_eq!(old.notes[0].resolved_by, Some(NEW_BOT_ID));
    let fresh = threads.iter().find(|d| d.id != old_thread.id).unwrap();
    assert_eq!(fresh.notes[0].author_id, NEW_BOT_ID);
    assert_eq!(with_marker(&w, "summary", NEW_BOT_ID).len(), 1);
    w.fake.reset_log();
    w.invocation()
        .env("ASSENT_TOKEN", NEW_BOT_TOKEN)
        .env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA", sha)
        .env("ASSENT_PREVIOUS_BOT_USERS", BOT_NAME)
        .run()
        .expect_code(1);
    assert!(w.writes().is_empty(), "{:#?}", w.writes());
}

/// Doctor on the MR says it before a run does: with the new bot's token, `bot-markers`
/// fails naming the previous bot (exit 1); with it adopted, it passes.
#[test]
fn doctor_names_the_previous_bot_on_the_mr() {
    let w = reviewed_by_the_old_bot();
    renew_by_a_new_token(&w);
    w.fake.reset_log();
    let doctor = |adopt: Option<&str>| {
        let mut command = std::process::Command::new(ASSENT);
        command
            .arg("doctor")
            .env_clear()
            .env("CI_API_V4_URL", w.fake.base_url())
            .env("CI_PROJECT_ID", fixtures::PROJECT_ID.to_string())
            .env("CI_MERGE_REQUEST_IID", fixtures::MR_IID.to_string())
            .env("ASSENT_TOKEN", NEW_BOT_TOKEN);
        if let Some(names) = adopt {
            command.env("ASSENT_PREVIOUS_BOT_USERS", names);
        }
        let out = command.output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(!stdout.contains(NEW_BOT_TOKEN));
        (out.status.code(), stdout)
    };
    let line = |stdout: &str| {
        stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some("bot-markers"))
            .unwrap_or_else(|| panic!("{stdout}"))
            .to_owned()
    };
    let (code, stdout) = doctor(None);
    assert_eq!(code, Some(1), "{stdout}");
    let found = line(&stdout);
    assert!(found.starts_with('✗'), "{found}");
    assert!(found.contains("assent-bot (id 100)"), "{found}");
    let (_, stdout) = doctor(Some(BOT_NAME));
    let adopted = line(&stdout);
    assert!(adopted.starts_with('✓'), "{adopted}");
    assert!(adopted.contains("id 100"), "{adopted}");
    assert_eq!(w.fake.writes(), 0, "doctor writes nothing");
}

/// A person who pastes assent's marker gains nothing: the marker stays invisible (no
/// duplicate, no warning), and naming the person as a previous bot is refused with exit 2
/// and no write.
#[test]
fn a_persons_marker_stays_invisible_even_when_the_person_is_named() {
    let w = World::new(ASSENT);
    w.run(&[]).expect_code(1);
    let forged = w.thread(RETENTION).notes[0].body.clone();
    w.fake
        .with_state(|st| {
            st.create_thread(
                fixtures::PROJECT_ID,
                fixtures::MR_IID,
                fixtures::HUMAN_ID,
                &forged,
            )
        })
        .unwrap();
    w.fake.reset_log();
    let r = w.run(&[]);
    r.expect_code(1);
    assert!(w.writes().is_empty(), "{:#?}", w.writes());
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);

    let named = w.run(&["--previous-bot-user", "alice"]);
    named.expect_code(2);
    assert!(w.writes().is_empty(), "{:#?}", w.writes());
    for part in ["alice (id 200) is not a bot", "never read as assent's own"] {
        assert!(named.stderr.contains(part), "{part}: {}", named.stderr);
    }
    w.assert_no_violations();
}
