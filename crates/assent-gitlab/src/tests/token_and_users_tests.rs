//! What a token renewal needs from GitLab, against the fake GitLab:
//!
//! * `GET /users/:id` (`lib/api/users.rb`, `Entities::User`): `bot` and `username`, read for
//!   each other author of assent's markers, so that a previous bot user can be named and
//!   adopted, and a person told apart from a bot (`assent_core::bot_identity`); 404 for a user
//!   the token may not see.
//! * `GET personal_access_tokens/self` (`lib/api/personal_access_tokens/self_information.rb`,
//!   `Entities::PersonalAccessToken`): `expires_at`, a date or `null` for a token without
//!   expiry, told apart from an answer without the field (doctor's `token-expiry` check).

use crate::doctor::endpoints::{DoctorEndpoint, Route};
use crate::doctor::responses::TokenSelf;
use gitlab::api::common::NameOrId;

use super::*;

#[test]
fn a_users_account_names_them_and_says_whether_they_are_a_bot() {
    let mut state = world();
    state
        .users
        .push(fake_gitlab::User::new(101, "project_42_bot_renewed").bot(true));
    let fake = FakeGitLab::start(state);
    let (forge, _) = forge(&fake);
    let old_bot = forge.user_account(BOT_ID).unwrap().unwrap();
    assert_eq!(old_bot.bot, Some(true));
    assert_eq!(old_bot.username.as_deref(), Some("assent-bot"));
    let renewed = forge.user_account(101).unwrap().unwrap();
    assert_eq!(renewed.username.as_deref(), Some("project_42_bot_renewed"));
    let person = forge.user_account(HUMAN_ID).unwrap().unwrap();
    assert_eq!(person.bot, Some(false));
    assert_eq!(person.username.as_deref(), Some("alice"));
    assert_eq!(forge.user_account(999).unwrap(), None, "404: not shown");
}

fn token_self(fake: &FakeGitLab) -> TokenSelf {
    let client = GitLabClient::new(&config(fake)).unwrap();
    let value = client
        .send_json(&DoctorEndpoint {
            project: NameOrId::Name(PROJECT_PATH.into()),
            route: Route::TokenSelf,
        })
        .unwrap();
    serde_json::from_value(value).unwrap()
}

#[test]
fn a_tokens_expiry_is_a_date_null_or_not_said() {
    let mut state = world();
    let fake = FakeGitLab::start(state.clone());
    assert_eq!(token_self(&fake).expires_at, Some(None), "null: no expiry");
    let ours = state.tokens.iter_mut().find(|t| t.token == TOKEN).unwrap();
    *ours = ours.clone().expires_at("2027-01-06");
    let fake = FakeGitLab::start(state);
    let token = token_self(&fake);
    assert_eq!(token.expires_at, Some(Some("2027-01-06".to_owned())));
    assert_eq!(token.scopes, Some(vec!["api".to_owned()]));
    // An answer without the field (an older GitLab, a proxy) says nothing.
    let silent: TokenSelf = serde_json::from_value(json!({"scopes": ["api"]})).unwrap();
    assert_eq!(silent.expires_at, None);
}
