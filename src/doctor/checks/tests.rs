//! Every verdict and every fix of every check, from typed facts alone (no HTTP).

use super::*;
use crate::doctor::DuplicatePrevention;
use crate::doctor::report::Status;
use crate::doctor::single_writer::SingleWriterVerdict;

fn failed(diagnosis: Diagnosis) -> Failed {
    Failed {
        diagnosis,
        // Wording that would mislead a text match: only the diagnosis may count.
        error: "GET version: certificate proxy tls refused 404".into(),
    }
}

fn reach() -> Reach {
    Reach {
        base: "https://gitlab.example.com/api/v4/".into(),
        https: true,
        proxy: None,
        ca_file: None,
    }
}

fn with_ca(source: &str) -> Reach {
    Reach {
        ca_file: Some(("/etc/ssl/gitlab-ca.pem".into(), Some(source.into()))),
        ..reach()
    }
}

fn cert(failure: CertificateFailure) -> Diagnosis {
    Diagnosis::NoAnswer(TransportFailure::Certificate(failure))
}

fn user() -> CurrentUser {
    CurrentUser {
        id: Some(100),
        username: Some("assent-bot".into()),
        bot: Some(true),
    }
}

#[track_caller]
fn assert_check(check: &Check, id: &str, status: Status, detail_part: &str) {
    assert_eq!(check.id, id);
    assert_eq!(check.status, status, "{check:?}");
    assert!(
        check.detail.contains(detail_part),
        "{detail_part:?} in {check:?}"
    );
    assert_eq!(
        check.fix.is_none(),
        matches!(status, Status::Pass | Status::Skipped),
        "{check:?}"
    );
}

#[track_caller]
fn fix(check: &Check) -> &str {
    check.fix.as_deref().expect("a fix")
}

// ---- api -------------------------------------------------------------------------------------

#[test]
fn api_passes_with_the_version_and_how_it_was_reached() {
    let plain = Reach {
        https: false,
        proxy: Some("http://proxy.example:3128/".into()),
        ..with_ca("ASSENT_CA_FILE")
    };
    let check = api_check(
        &plain,
        &Ok(Version {
            version: Some("18.6.0".into()),
        }),
    );
    assert_check(
        &check,
        "api",
        Status::Pass,
        "GitLab 18.6.0 reached at https://gitlab.example.com/api/v4/ (plain HTTP, no TLS, proxy http://proxy.example:3128/, CA file /etc/ssl/gitlab-ca.pem (from ASSENT_CA_FILE) plus public roots)",
    );
    let unknown = api_check(&reach(), &Ok(Version::default()));
    assert!(
        unknown.detail.contains("GitLab of unknown version"),
        "{unknown:?}"
    );
}

#[test]
fn api_is_reached_when_only_the_token_is_refused() {
    for diagnosis in [Diagnosis::TokenRejected, Diagnosis::Forbidden] {
        let answer = Err(failed(diagnosis));
        assert!(api_reached(&answer));
        assert_check(
            &api_check(&reach(), &answer),
            "api",
            Status::Pass,
            "it refused this token",
        );
    }
    assert!(!api_reached(&Err(failed(Diagnosis::ServerError))));
}

#[test]
fn api_failures_name_their_fix() {
    use TransportFailure as T;
    let cases = [
        (
            Diagnosis::NoAnswer(T::ConnectFailed),
            "can reach the GitLab host",
        ),
        (Diagnosis::NoAnswer(T::Timeout), "can reach the GitLab host"),
        (Diagnosis::ServerError, "GitLab is up"),
        (Diagnosis::NoAnswer(T::UnknownHost), "runner's DNS"),
        (Diagnosis::Redirected, "redirects are never followed"),
        (Diagnosis::NotFound, "which ends in /api/v4"),
        (Diagnosis::Unreadable, "which ends in /api/v4"),
        (Diagnosis::RateLimited, "rate limiting"),
        (
            Diagnosis::NoAnswer(T::Tls),
            "for a private CA set ASSENT_CA_FILE",
        ),
        (
            cert(CertificateFailure::UnknownIssuer),
            "Set ASSENT_CA_FILE (or pass --ca-file) to the PEM bundle of the CA that signed GitLab's certificate.",
        ),
        (
            cert(CertificateFailure::WrongName),
            "use the host name the certificate was issued for",
        ),
        (
            cert(CertificateFailure::NotCurrentlyValid),
            "renew it, or check the runner's clock",
        ),
        (
            cert(CertificateFailure::Other),
            "for a private CA set ASSENT_CA_FILE",
        ),
    ];
    for (diagnosis, part) in cases {
        let check = api_check(&reach(), &Err(failed(diagnosis)));
        assert_check(
            &check,
            "api",
            Status::Fail,
            "cannot reach GitLab at https://gitlab.example.com/api/v4/",
        );
        assert!(fix(&check).contains(part), "{diagnosis:?}: {}", fix(&check));
    }
}

#[test]
fn a_proxy_failure_names_the_proxy_in_use() {
    let reach = Reach {
        proxy: Some("http://10.0.0.1:3128/".into()),
        ..reach()
    };
    let check = api_check(
        &reach,
        &Err(failed(Diagnosis::NoAnswer(TransportFailure::Proxy))),
    );
    assert_eq!(
        fix(&check),
        "Check HTTPS_PROXY and NO_PROXY: the proxy http://10.0.0.1:3128/ must be reachable from the runner and allow CONNECT to GitLab, or add GitLab's host to NO_PROXY."
    );
}

#[test]
fn with_a_ca_file_in_use_the_fix_never_says_to_set_one() {
    for source in ["--ca-file", "ASSENT_CA_FILE", "CI_SERVER_TLS_CA_FILE"] {
        let reach = with_ca(source);
        let unknown_issuer = fix(&api_check(
            &reach,
            &Err(failed(cert(CertificateFailure::UnknownIssuer))),
        ))
        .to_owned();
        assert_eq!(
            unknown_issuer,
            format!(
                "The CA file /etc/ssl/gitlab-ca.pem (from {source}) does not verify GitLab's certificate: it must hold the certificate (PEM) of the CA that issued GitLab's, or of an intermediate up to it, not another CA's; `openssl s_client -connect <host>:443 -showcerts` shows who issued it."
            )
        );
        for diagnosis in [
            cert(CertificateFailure::Other),
            Diagnosis::NoAnswer(TransportFailure::Tls),
        ] {
            let text = fix(&api_check(&reach, &Err(failed(diagnosis)))).to_owned();
            assert!(
                text.contains(&format!(
                    "although the CA file /etc/ssl/gitlab-ca.pem (from {source}) is in use"
                )),
                "{text}"
            );
            assert!(!text.contains("set ASSENT_CA_FILE"), "{text}");
        }
    }
}

#[test]
fn a_ca_certificate_served_as_gitlabs_own_is_explained_with_and_without_a_ca_file() {
    let diagnosis = cert(CertificateFailure::CaUsedAsEndEntity);
    let without = fix(&api_check(&reach(), &Err(failed(diagnosis)))).to_owned();
    assert_eq!(
        without,
        "GitLab presents a CA certificate (basic constraints CA:TRUE, as `openssl req -x509` makes a self-signed one by default) as its own, and the TLS library assent uses (rustls) refuses that whatever CA file is given: serve GitLab a certificate issued by a CA (CA:FALSE) and set ASSENT_CA_FILE to that CA, or re-issue the self-signed certificate with CA:FALSE and set ASSENT_CA_FILE to it."
    );
    let with = fix(&api_check(
        &with_ca("ASSENT_CA_FILE"),
        &Err(failed(diagnosis)),
    ))
    .to_owned();
    assert!(
        with.contains("whatever CA file is given (the CA file /etc/ssl/gitlab-ca.pem (from ASSENT_CA_FILE) is in use): serve GitLab"),
        "{with}"
    );
}

// ---- token, identity, scope ------------------------------------------------------------------

#[test]
fn token_verdicts() {
    assert_check(
        &token_check(&Ok(user())),
        "token",
        Status::Pass,
        "valid: user @assent-bot (id 100)",
    );
    let no_name = CurrentUser {
        username: None,
        ..user()
    };
    assert_check(
        &token_check(&Ok(no_name)),
        "token",
        Status::Pass,
        "valid: user id 100",
    );
    let no_id = CurrentUser { id: None, ..user() };
    assert_check(
        &token_check(&Ok(no_id)),
        "token",
        Status::Unknown,
        "does not say which user",
    );

    let rejected = token_check(&Err(failed(Diagnosis::TokenRejected)));
    assert_check(
        &rejected,
        "token",
        Status::Fail,
        "GitLab rejects the token (401)",
    );
    assert!(fix(&rejected).contains("project access token"));
    let forbidden = token_check(&Err(failed(Diagnosis::Forbidden)));
    assert_check(&forbidden, "token", Status::Fail, "(403)");
    assert!(fix(&forbidden).contains("api scope"));
    let down = token_check(&Err(failed(Diagnosis::ServerError)));
    assert_check(
        &down,
        "token",
        Status::Unknown,
        "cannot read the token's user",
    );
}

#[test]
fn identity_verdicts() {
    assert_check(
        &identity_check(&user(), None),
        "identity",
        Status::Pass,
        "@assent-bot is a bot user",
    );
    let person = CurrentUser {
        bot: Some(false),
        ..user()
    };
    let check = identity_check(&person, None);
    assert_check(&check, "identity", Status::Fail, "is a person");
    assert!(
        fix(&check).contains("project or group access token")
            && fix(&check).contains("ASSENT_BOT_USER")
    );
    let unsaid = CurrentUser {
        bot: None,
        ..user()
    };
    assert_check(
        &identity_check(&unsaid, None),
        "identity",
        Status::Unknown,
        "does not say whether",
    );
    // A dedicated account declared as the bot (GitLab.com Free offers no project tokens).
    assert_check(
        &identity_check(&person, Some("@assent-bot")),
        "identity",
        Status::Pass,
        "declared as the bot (ASSENT_BOT_USER)",
    );
    assert_check(
        &identity_check(&person, Some("someone-else")),
        "identity",
        Status::Fail,
        "not to @someone-else",
    );
    // Declaring the bot account never turns another account into it.
    assert_check(
        &identity_check(&user(), Some("someone-else")),
        "identity",
        Status::Fail,
        "not to @someone-else",
    );
    assert_check(
        &identity_check(&user(), Some("ASSENT-BOT")),
        "identity",
        Status::Pass,
        "is a bot user",
    );
}

#[test]
fn scope_verdicts() {
    let scopes = |s: &[&str]| {
        Ok(TokenSelf {
            scopes: Some(s.iter().map(|x| (*x).to_owned()).collect()),
            ..TokenSelf::default()
        })
    };
    assert_check(
        &scope_check(&scopes(&["api", "read_repository"])),
        "scope",
        Status::Pass,
        "scopes: api, read_repository",
    );
    let read = scope_check(&scopes(&["read_api"]));
    assert_check(&read, "scope", Status::Fail, "scopes: read_api (no api)");
    assert!(fix(&read).contains("api scope"));
    assert_check(
        &scope_check(&scopes(&[])),
        "scope",
        Status::Unknown,
        "lists no scopes",
    );
    assert_check(
        &scope_check(&Ok(TokenSelf::default())),
        "scope",
        Status::Unknown,
        "lists no scopes",
    );
    assert_check(
        &scope_check(&Err(failed(Diagnosis::NotFound))),
        "scope",
        Status::Unknown,
        "does not expose",
    );
}

/// The token's expiry, judged on a fixed day: ✓ at 31 days, a warning at 30 and 29 days
/// and at one day, a failure on the date and after it, "not checked" when GitLab does not
/// say, ✓ for a token without expiry.
#[test]
fn token_expiry_verdicts() {
    let today = chrono::NaiveDate::from_ymd_opt(2026, 12, 6).unwrap();
    let expiring = |date: Option<&str>| {
        Ok(TokenSelf {
            expires_at: Some(date.map(str::to_owned)),
            ..TokenSelf::default()
        })
    };
    let check = |date: &str| token_expiry_check(&expiring(Some(date)), today);
    assert_check(
        &check("2027-01-06"),
        "token-expiry",
        Status::Pass,
        "the token expires on 2027-01-06, in 31 days",
    );
    for (date, days) in [
        ("2027-01-05", "30 days"),
        ("2027-01-04", "29 days"),
        ("2026-12-07", "1 day"),
    ] {
        let warning = check(date);
        assert_check(
            &warning,
            "token-expiry",
            Status::Unknown,
            &format!("the token expires on {date}, in {days}"),
        );
        assert!(fix(&warning).contains("rotation API"), "{warning:?}");
        assert!(fix(&warning).contains("new bot user"), "{warning:?}");
    }
    for date in ["2026-12-06", "2026-11-30"] {
        let expired = check(date);
        assert_check(
            &expired,
            "token-expiry",
            Status::Fail,
            &format!("the token expired on {date}"),
        );
        assert!(fix(&expired).contains("/rotate"), "{expired:?}");
    }
    assert_check(
        &token_expiry_check(&expiring(None), today),
        "token-expiry",
        Status::Pass,
        "the token does not expire",
    );
    for not_said in [
        Ok(TokenSelf::default()),
        expiring(Some("next year")),
        Err(failed(Diagnosis::NotFound)),
    ] {
        assert_check(
            &token_expiry_check(&not_said, today),
            "token-expiry",
            Status::Skipped,
            "GitLab does not say when this token expires",
        );
    }
}

#[test]
fn bot_markers_verdicts() {
    use crate::core::bot_identity::{IdentityRefusal, Owners};
    let check = |found: &MarkerOwners| bot_markers_check(Some((7, found)));
    assert_check(
        &check(&Ok(Ok(Owners::only(1)))),
        "bot-markers",
        Status::Pass,
        "no other bot user's assent markers on MR !7",
    );
    let adopted = Owners {
        bot: 1,
        adopted: [9].into(),
    };
    assert_check(
        &check(&Ok(Ok(adopted))),
        "bot-markers",
        Status::Pass,
        "adopted previous bot user(s) id 9",
    );
    let previous = check(&Ok(Err(IdentityRefusal::PreviousBot {
        previous: vec![(Some("old-bot".into()), 9)],
    })));
    assert_check(&previous, "bot-markers", Status::Fail, "old-bot (id 9)");
    assert!(fix(&previous).contains("ASSENT_PREVIOUS_BOT_USERS"));
    let person = check(&Ok(Err(IdentityRefusal::NamedPerson {
        username: "alice".into(),
        id: 200,
    })));
    assert_check(
        &person,
        "bot-markers",
        Status::Fail,
        "alice (id 200) is not a bot",
    );
    assert_check(
        &check(&Ok(Err(IdentityRefusal::TooManyAuthors { authors: 6 }))),
        "bot-markers",
        Status::Unknown,
        "6 users",
    );
    assert_check(
        &check(&Err(failed(Diagnosis::NotFound))),
        "bot-markers",
        Status::Unknown,
        "cannot list MR !7's discussions",
    );
    assert_check(
        &bot_markers_check(None),
        "bot-markers",
        Status::Skipped,
        "pass --mr",
    );
}

// ---- role and settings -----------------------------------------------------------------------

#[test]
fn role_verdicts() {
    assert_check(
        &role_check("g/p", &user(), Some(40)),
        "role",
        Status::Pass,
        "Maintainer (40) on g/p",
    );
    assert_check(
        &role_check("g/p", &user(), Some(30)),
        "role",
        Status::Pass,
        "Developer (30)",
    );
    let reporter = role_check("g/p", &user(), Some(20));
    assert_check(&reporter, "role", Status::Fail, "Reporter (20) on g/p");
    assert!(fix(&reporter).contains("Developer role"));
    assert_check(
        &role_check("g/p", &user(), Some(15)),
        "role",
        Status::Fail,
        "Planner (15)",
    );
    assert_check(
        &role_check("g/p", &user(), None),
        "role",
        Status::Unknown,
        "no role of @assent-bot",
    );
    let anonymous = CurrentUser::default();
    assert_check(
        &role_check("g/p", &anonymous, None),
        "role",
        Status::Unknown,
        "no role of the token's user",
    );

    let hidden = project_unreadable_check("g/p", &failed(Diagnosis::NotFound));
    assert_check(&hidden, "project", Status::Fail, "cannot read project g/p");
    assert!(fix(&hidden).contains("404 for projects a user cannot see"));
    assert_check(
        &project_unreadable_check("g/p", &failed(Diagnosis::ServerError)),
        "project",
        Status::Unknown,
        "cannot read project g/p",
    );
}

#[test]
fn setting_verdicts() {
    let project = |on: Option<bool>| Project {
        only_allow_merge_if_all_discussions_are_resolved: on,
        only_allow_merge_if_pipeline_succeeds: on,
        ..Project::default()
    };
    assert_check(
        &threads_setting_check(&project(Some(true))),
        "threads-setting",
        Status::Pass,
        ": on",
    );
    let off = threads_setting_check(&project(Some(false)));
    assert_check(
        &off,
        "threads-setting",
        Status::Fail,
        "only_allow_merge_if_all_discussions_are_resolved is false",
    );
    assert!(fix(&off).contains("All threads must be resolved"));
    assert_check(
        &threads_setting_check(&project(None)),
        "threads-setting",
        Status::Unknown,
        "does not show",
    );
    let off = pipelines_setting_check(&project(Some(false)));
    assert_check(
        &off,
        "pipelines-setting",
        Status::Fail,
        "only_allow_merge_if_pipeline_succeeds is false",
    );
    assert!(fix(&off).contains("Pipelines must succeed"));
    assert_check(
        &pipelines_setting_check(&project(None)),
        "pipelines-setting",
        Status::Unknown,
        "does not show",
    );
}

#[test]
fn outdated_threads_resolved_by_a_push_fail_the_gate() {
    let project = |on: Option<bool>| Project {
        resolve_outdated_diff_discussions: on,
        ..Project::default()
    };
    // Off is the safe value: a reviewer, never a push, resolves a thread on a changed line.
    assert_check(
        &outdated_threads_setting_check(&project(Some(false))),
        "outdated-threads-setting",
        Status::Pass,
        "leaves its threads open",
    );
    let on = outdated_threads_setting_check(&project(Some(true)));
    assert_check(
        &on,
        "outdated-threads-setting",
        Status::Fail,
        "a push by anyone but the MR's author would assent",
    );
    assert!(fix(&on).contains("Turn off"), "{}", fix(&on));
    assert!(fix(&on).contains("become outdated"), "{}", fix(&on));
    assert_check(
        &outdated_threads_setting_check(&project(None)),
        "outdated-threads-setting",
        Status::Unknown,
        "does not show",
    );
}

// ---- merge request, policies, serialization --------------------------------------------------

#[test]
fn merge_request_verdicts() {
    assert_check(
        &merge_request_check(None),
        "merge-request",
        Status::Skipped,
        "no MR given",
    );
    let mr = |source, target| {
        Ok(MergeRequest {
            state: Some("opened".into()),
            target_branch: Some("main".into()),
            source_project_id: source,
            target_project_id: target,
            author: None,
            source_branch: None,
        })
    };
    assert_check(
        &merge_request_check(Some((7, &mr(Some(1), Some(1))))),
        "merge-request",
        Status::Pass,
        "MR !7 is opened, same-project",
    );
    let fork = merge_request_check(Some((7, &mr(Some(77), Some(1)))));
    assert_check(
        &fork,
        "merge-request",
        Status::Fail,
        "comes from a fork (project 77)",
    );
    assert!(fix(&fork).contains("parent project"));
    assert_check(
        &merge_request_check(Some((7, &mr(None, Some(1))))),
        "merge-request",
        Status::Unknown,
        "does not say whether",
    );
    let missing = merge_request_check(Some((99, &Err(failed(Diagnosis::NotFound)))));
    assert_check(
        &missing,
        "merge-request",
        Status::Fail,
        "cannot read MR !99",
    );
    assert!(fix(&missing).contains("--mr"));
    assert_check(
        &merge_request_check(Some((7, &Err(failed(Diagnosis::ServerError))))),
        "merge-request",
        Status::Unknown,
        "cannot read MR !7",
    );
}

#[test]
fn policies_verdicts() {
    const SHA: &str = "3333333333333333333333333333333333333333";
    let file = |path: &str, text: &str| PolicyFile {
        path: path.into(),
        bytes: text.as_bytes().to_vec(),
    };
    let good = "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: retention-shrink\n    match:\n      files: [\"topics/*.yaml\"]\n      pointer: \"/topics/*/retention_days\"\n      kinds: [modify]\n    effect: challenge\n    message: \"Retention shrinks.\"\n";
    let read = |files: Vec<PolicyFile>| -> PolicyRead {
        Ok((
            crate::core::commit_sha::CommitSha::parse(SHA).unwrap(),
            files,
        ))
    };
    assert_check(
        &policies_check(None, None),
        "policies",
        Status::Unknown,
        "no target branch known",
    );
    assert_check(
        &policies_check(Some("main"), Some(&read(vec![]))),
        "policies",
        Status::Pass,
        "no policy files under .assent/policies on main@33333333",
    );
    assert_check(
        &policies_check(
            Some("main"),
            Some(&read(vec![file(".assent/policies/a.yaml", good)])),
        ),
        "policies",
        Status::Pass,
        "1 policy file(s) on main@33333333 load",
    );
    let broken = policies_check(
        Some("main"),
        Some(&read(vec![file(
            ".assent/policies/broken.yaml",
            "apiVersion: assent/v1\nkind: Policy\nrules:\n  - id: Bad Id\n",
        )])),
    );
    assert_check(
        &broken,
        "policies",
        Status::Fail,
        ".assent/policies/broken.yaml:",
    );
    assert!(fix(&broken).contains("assent lint"));
    assert_check(
        &policies_check(Some("main"), Some(&Err(failed(Diagnosis::Forbidden)))),
        "policies",
        Status::Unknown,
        "cannot read .assent/policies on main",
    );
}

#[test]
fn serialization_verdicts() {
    let verdict = |certainty| SingleWriterVerdict {
        guarantee: DuplicatePrevention::UnserializedBestEffort,
        certainty,
        reason: "the reason".into(),
    };
    assert_check(
        &serialization_check(&verdict(Certainty::Verified)),
        "serialization",
        Status::Pass,
        "the reason",
    );
    let absent = serialization_check(&verdict(Certainty::Absent));
    assert_check(&absent, "serialization", Status::Fail, "the reason");
    assert!(fix(&absent).contains("resource_group: assent-mr-$CI_MERGE_REQUEST_IID"));
    let unverifiable = serialization_check(&verdict(Certainty::Unverifiable));
    assert_check(
        &unverifiable,
        "serialization",
        Status::Unknown,
        "the reason",
    );
    assert!(fix(&unverifiable).contains("MR job itself"));
}

// ---- token-variable ---------------------------------------------------------------------------

#[test]
fn the_token_variable_passes_only_when_scoped_to_the_assent_environment() {
    let check = |seen: TokenVariable| token_variable_check("ASSENT_TOKEN", "assent", &seen);
    let scoped = check(TokenVariable::Scoped(Some("assent".into())));
    assert_eq!(scoped.status, Status::Pass, "{scoped:?}");
    let every_job = check(TokenVariable::Scoped(Some("*".into())));
    assert_eq!(every_job.status, Status::Fail, "{every_job:?}");
    assert!(every_job.detail.contains("every job"), "{every_job:?}");
    assert_eq!(
        check(TokenVariable::SeveralOneForEveryJob).status,
        Status::Fail
    );
    for unknown in [
        TokenVariable::Scoped(Some("review/*".into())),
        TokenVariable::Scoped(None),
        TokenVariable::SeveralNoneForEveryJob,
    ] {
        assert_eq!(
            check(unknown.clone()).status,
            Status::Unknown,
            "{unknown:?}"
        );
    }
    let forbidden = check(TokenVariable::Unread(Failed {
        diagnosis: Diagnosis::Forbidden,
        error: "403".into(),
    }));
    assert_eq!(
        forbidden.status,
        Status::Unknown,
        "never a claim it cannot back"
    );
    assert!(forbidden.detail.contains("not verified"), "{forbidden:?}");
    assert!(forbidden.detail.contains("Maintainers"), "{forbidden:?}");
}

// ---- inputs, cleartext, skipped --------------------------------------------------------------

#[test]
fn inputs_cleartext_and_skipped_checks() {
    let inputs = DoctorInputs {
        api_url: "https://g/api/v4".into(),
        project: "g/p".into(),
        token: crate::gitlab::Token::new("glpat-x"),
        ca_file: None,
        ca_source: None,
        mr: Some(7),
        job_id: None,
        token_variable: "ASSENT_TOKEN".into(),
        environment: "assent".into(),
        policy_project: None,
        serve_url: None,
        bot_user: None,
        today: chrono::NaiveDate::default(),
        previous_bot_users: Vec::new(),
    };
    let check = inputs_check(&inputs);
    assert_check(
        &check,
        "inputs",
        Status::Pass,
        "API https://g/api/v4, project g/p, MR !7, no CI job, token set",
    );
    assert!(!check.detail.contains("glpat-x"));
    let missing = missing_inputs_check("2 problems with the inputs: (1) …; (2) …");
    assert_check(&missing, "inputs", Status::Fail, "2 problems");
    assert_eq!(cleartext_check(None), None);
    let cleartext = cleartext_check(Some("the token travels unencrypted".into())).unwrap();
    assert_check(&cleartext, "cleartext", Status::Unknown, "unencrypted");
    assert!(fix(&cleartext).contains("ASSENT_ALLOW_HTTP=1"));
    let skipped = skipped(&["token", "role"], "the api check failed");
    assert_eq!(skipped.len(), 2);
    assert_check(&skipped[1], "role", Status::Skipped, "the api check failed");
    assert_eq!(skipped[1].fix, None);
}
