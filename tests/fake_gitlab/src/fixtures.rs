//! A ready-made seed: one bot, one human, one project with one open MR.

use crate::model::{CiVariable, DiffFile, MergeRequest, Project, State, Token, User};

/// The project's id.
pub const PROJECT_ID: u64 = 42;
/// The project's path.
pub const PROJECT_PATH: &str = "group/sub/proj";
/// The open MR's iid.
pub const MR_IID: u64 = 7;
/// The bot user's id (`assent-bot`).
pub const BOT_ID: u64 = 100;
/// The bot's token (`api` scope).
pub const BOT_TOKEN: &str = "glpat-bot-token";
/// Same bot user, `read_api` scope only.
pub const READ_TOKEN: &str = "glpat-read-token";
/// A reviewer: resolutions by this user count as assent.
pub const HUMAN_ID: u64 = 200;
/// The reviewer's token.
pub const HUMAN_TOKEN: &str = "glpat-alice-token";
/// The MR's author: GitLab lets them resolve threads; assent does not count it.
pub const AUTHOR_ID: u64 = 300;
/// The MR's diff base.
pub const BASE_SHA: &str = "1111111111111111111111111111111111111111";
/// The MR's source head (`feature`).
pub const HEAD_SHA: &str = "2222222222222222222222222222222222222222";
/// The target branch's tip (`main`).
pub const TARGET_SHA: &str = "3333333333333333333333333333333333333333";

/// Users `assent-bot` (id 100, bot), `alice` (id 200, a reviewer) and `bob` (id 300, the
/// MR's author); project 42
/// `group/sub/proj` with `main` at [`TARGET_SHA`] and `feature` at [`HEAD_SHA`]; open MR !7
/// from `feature` into `main` with diff base [`BASE_SHA`] and one modified file
/// `topics/orders.yaml`; the bot's token in the project variable `ASSENT_TOKEN`, scoped to the
/// environment `assent` as docs/setup.md sets it up. Note ids start at 1000.
pub fn basic() -> State {
    let topics_old = "topics:\n  - name: orders.events.v1\n    retention_days: 30\n";
    let topics_new = "topics:\n  - name: orders.events.v1\n    retention_days: 7\n";
    State {
        note_id_start: 1000,
        pipeline_id_start: 5000,
        users: vec![
            User::new(BOT_ID, "assent-bot").bot(true),
            User::new(HUMAN_ID, "alice"),
            User::new(AUTHOR_ID, "bob"),
        ],
        tokens: vec![
            Token::new(BOT_TOKEN, BOT_ID, &["api"]),
            Token::new(READ_TOKEN, BOT_ID, &["read_api"]),
            Token::new(HUMAN_TOKEN, HUMAN_ID, &["api"]).access_level(30),
        ],
        projects: vec![
            Project::new(PROJECT_ID, PROJECT_PATH)
                .branch("main", TARGET_SHA)
                .branch("feature", HEAD_SHA)
                .file(BASE_SHA, "topics/orders.yaml", topics_old)
                .file(TARGET_SHA, "topics/orders.yaml", topics_old)
                .file(HEAD_SHA, "topics/orders.yaml", topics_new)
                .merge_request(
                    MergeRequest::new(MR_IID, AUTHOR_ID, HEAD_SHA, BASE_SHA)
                        .branches("feature", "main")
                        .diff(DiffFile::modified("topics/orders.yaml")),
                )
                .variable(CiVariable {
                    key: "ASSENT_TOKEN".into(),
                    value: BOT_TOKEN.into(),
                    environment_scope: "assent".into(),
                    ..CiVariable::default()
                }),
        ],
        ..State::default()
    }
}
