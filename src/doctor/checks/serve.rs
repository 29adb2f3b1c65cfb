//! The checks of `assent serve` (`--serve-url`): it answers ready, and a project webhook
//! points at it with the events it needs. Pure: the answers are read by the probe.

use url::Url;

use super::Failed;
use crate::doctor::report::Check;
use crate::gitlab::Diagnosis;
use crate::gitlab::doctor::responses::ProjectHook;
use crate::gitlab::health::HealthAnswer;

/// `<serve>/readyz`.
pub fn readyz_url(serve: &Url) -> Url {
    serve_path(serve, "readyz")
}

/// `<serve>/webhook`: where GitLab's webhook must point.
pub fn webhook_url(serve: &Url) -> Url {
    serve_path(serve, "webhook")
}

fn serve_path(serve: &Url, leaf: &str) -> Url {
    let mut url = serve.clone();
    let path = format!("{}/{leaf}", serve.path().trim_end_matches('/'));
    url.set_path(&path);
    url.set_query(None);
    url.set_fragment(None);
    url
}

/// The `serve-ready` check: `GET <serve>/readyz` answers 200.
pub fn serve_ready_check(serve: &Url, answer: &Result<HealthAnswer, String>) -> Check {
    const ID: &str = "serve-ready";
    let readyz = readyz_url(serve);
    match answer {
        Ok(a) if a.status == 200 => Check::pass(ID, format!("{readyz} answers 200")),
        Ok(a) => Check::fail(
            ID,
            format!(
                "{readyz} answers {}: {}",
                a.status,
                a.body.lines().next().unwrap_or("").trim()
            ),
            "A 503 names what serve is waiting for (its GitLab check or a draining shutdown); see its log, and docs/serve.md for the probes.",
        ),
        Err(error) => Check::fail(
            ID,
            format!("{readyz} does not answer: {error}"),
            "Check that assent serve runs and listens where --serve-url says (serve's --listen), and that this machine reaches it.",
        ),
    }
}

/// The `serve-webhook` check: a project webhook points at `<serve>/webhook` with merge
/// request, comment and emoji events and SSL verification on, and GitLab has neither backed
/// it off nor disabled it (its `alert_status`: either way no event reaches serve now, so
/// both fail the check). A webhook doctor cannot see (the project's hooks unreadable below
/// Maintainer, or a group webhook) is a warning, never a pass.
pub fn serve_webhook_check(serve: &Url, hooks: &Result<Vec<ProjectHook>, Failed>) -> Check {
    const ID: &str = "serve-webhook";
    let target = webhook_url(serve);
    let fix = format!(
        "Settings > Webhooks: URL {target}, the secret token of ASSENT_WEBHOOK_SECRET, triggers Merge request events, Comments and Emoji events, SSL verification on (docs/serve.md)."
    );
    let hooks = match hooks {
        Ok(hooks) => hooks,
        Err(failed) => {
            let why = match failed.diagnosis {
                Diagnosis::Forbidden => {
                    "the token cannot read the project's webhooks (GitLab shows them to Maintainers)".to_owned()
                }
                _ => format!("reading them failed: {}", failed.error),
            };
            return Check::unknown(
                ID,
                format!("not verified that a webhook reaches {target}: {why}"),
                fix,
            );
        }
    };
    let Some(hook) = hooks.iter().find(|h| same_endpoint(&h.url, &target)) else {
        return Check::unknown(
            ID,
            format!(
                "no project webhook of the {} listed points at {target} (a group webhook cannot be read here)",
                hooks.len()
            ),
            fix,
        );
    };
    if let Some(failed) = auto_disabled(hook, &target) {
        return failed;
    }
    let mut off = Vec::new();
    for (on, name) in [
        (hook.merge_requests_events, "merge request events"),
        (hook.note_events, "comments"),
        (hook.emoji_events, "emoji events"),
    ] {
        if on != Some(true) {
            off.push(name);
        }
    }
    if target.scheme() == "https" && hook.enable_ssl_verification != Some(true) {
        off.push("SSL verification");
    }
    if !off.is_empty() {
        return Check::fail(
            ID,
            format!(
                "webhook {} points at {target} with {} off",
                hook.id,
                off.join(", ")
            ),
            fix,
        );
    }
    if target.scheme() == "http" && !crate::gitlab::transport::is_loopback_host(&target) {
        return Check::fail(
            ID,
            format!(
                "webhook {} points at {target} over plain HTTP: the secret token travels in clear",
                hook.id
            ),
            fix,
        );
    }
    Check::pass(
        ID,
        format!(
            "webhook {} points at {target} with merge request, comment and emoji events{}",
            hook.id,
            if target.scheme() == "https" {
                " and SSL verification on"
            } else {
                ""
            }
        ),
    )
}

/// The failure of a hook GitLab backed off or disabled after failed deliveries
/// (`app/models/concerns/web_hooks/auto_disabling.rb`): events are lost meanwhile and only
/// the sweep heals their MRs. `None` for an executable hook, or a GitLab that does not say.
fn auto_disabled(hook: &ProjectHook, target: &Url) -> Option<Check> {
    const ID: &str = "serve-webhook";
    let fix = "Make serve answer GitLab (its log, /readyz; serve answers every delivery carrying the right secret 2xx, so failures mean GitLab did not reach it or the secret differs), then send a test delivery from Settings > Webhooks: GitLab re-enables a hook whose delivery succeeds (docs/serve.md).";
    let detail = match hook.alert_status.as_deref() {
        None | Some("executable") => return None,
        Some("temporarily_disabled") => format!(
            "webhook {} to {target} is backed off by GitLab after failed deliveries (until {}): no event reaches serve meanwhile",
            hook.id,
            hook.disabled_until.as_deref().unwrap_or("an unknown time")
        ),
        Some("disabled") => format!(
            "webhook {} to {target} is disabled by GitLab after 40 failed deliveries in a row: no event reaches serve",
            hook.id
        ),
        Some(other) => {
            return Some(Check::unknown(
                ID,
                format!(
                    "webhook {} to {target} has an alert status doctor does not know ({:?})",
                    hook.id,
                    other.chars().take(40).collect::<String>()
                ),
                fix,
            ));
        }
    };
    Some(Check::fail(ID, detail, fix))
}

/// Whether a hook's URL is `target`: same scheme, host (any case) and port, and the same
/// path but for a trailing slash. A query GitLab shows masked is not compared.
fn same_endpoint(hook_url: &str, target: &Url) -> bool {
    let Ok(hook) = Url::parse(hook_url.trim()) else {
        return false;
    };
    hook.scheme() == target.scheme()
        && hook.host_str().map(str::to_ascii_lowercase)
            == target.host_str().map(str::to_ascii_lowercase)
        && hook.port_or_known_default() == target.port_or_known_default()
        && hook.path().trim_end_matches('/') == target.path().trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::report::Status;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn hook(id: u64, u: &str) -> ProjectHook {
        ProjectHook {
            id,
            url: u.into(),
            merge_requests_events: Some(true),
            note_events: Some(true),
            emoji_events: Some(true),
            enable_ssl_verification: Some(true),
            alert_status: Some("executable".into()),
            disabled_until: None,
        }
    }

    #[test]
    fn a_hook_gitlab_backed_off_or_disabled_fails_the_check() {
        let serve = url("https://hooks.example.com/");
        let mut backed_off = hook(3, "https://hooks.example.com/webhook");
        backed_off.alert_status = Some("temporarily_disabled".into());
        backed_off.disabled_until = Some("2026-01-01T10:00:00.000Z".into());
        let check = serve_webhook_check(&serve, &Ok(vec![backed_off.clone()]));
        assert_eq!(check.status, Status::Fail, "{check:?}");
        assert!(check.detail.contains("backed off"), "{check:?}");
        assert!(
            check.detail.contains("2026-01-01T10:00:00.000Z"),
            "{check:?}"
        );
        let mut disabled = backed_off;
        disabled.alert_status = Some("disabled".into());
        let check = serve_webhook_check(&serve, &Ok(vec![disabled.clone()]));
        assert_eq!(check.status, Status::Fail, "{check:?}");
        assert!(check.detail.contains("disabled by GitLab"), "{check:?}");
        disabled.alert_status = None;
        let check = serve_webhook_check(&serve, &Ok(vec![disabled]));
        assert_eq!(
            check.status,
            Status::Pass,
            "a GitLab that does not say: {check:?}"
        );
    }

    #[test]
    fn the_serve_urls_keep_a_path_prefix() {
        let serve = url("https://hooks.example.com/assent/");
        assert_eq!(
            readyz_url(&serve).as_str(),
            "https://hooks.example.com/assent/readyz"
        );
        assert_eq!(
            webhook_url(&url("https://h.example.com")).as_str(),
            "https://h.example.com/webhook"
        );
    }

    #[test]
    fn readiness_passes_on_200_only() {
        let serve = url("https://h.example.com");
        let ok = HealthAnswer {
            status: 200,
            body: "ready".into(),
        };
        assert_eq!(serve_ready_check(&serve, &Ok(ok)).status, Status::Pass);
        let busy = HealthAnswer {
            status: 503,
            body: "draining\nmore".into(),
        };
        let c = serve_ready_check(&serve, &Ok(busy));
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.ends_with("answers 503: draining"), "{}", c.detail);
        let c = serve_ready_check(&serve, &Err("connection refused".into()));
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("connection refused"), "{}", c.detail);
    }

    #[test]
    fn the_webhook_must_point_at_serve_with_its_events_on() {
        let serve = url("https://h.example.com");
        let pass = |hooks: Vec<ProjectHook>| serve_webhook_check(&serve, &Ok(hooks));
        let c = pass(vec![
            hook(1, "https://other.example.com/webhook"),
            hook(2, "https://H.example.com:443/webhook/"),
        ]);
        assert_eq!(c.status, Status::Pass, "{}", c.detail);
        assert!(c.detail.starts_with("webhook 2 "), "{}", c.detail);

        let c = pass(vec![hook(1, "https://other.example.com/webhook")]);
        assert_eq!(c.status, Status::Unknown, "{}", c.detail);
        assert!(c.detail.contains("group webhook"), "{}", c.detail);

        let mut off = hook(3, "https://h.example.com/webhook");
        off.note_events = Some(false);
        off.emoji_events = None;
        off.enable_ssl_verification = Some(false);
        let c = pass(vec![off]);
        assert_eq!(c.status, Status::Fail);
        assert!(
            c.detail
                .contains("comments, emoji events, SSL verification off"),
            "{}",
            c.detail
        );

        let plain = url("http://hooks.internal:8080");
        let c = serve_webhook_check(
            &plain,
            &Ok(vec![hook(4, "http://hooks.internal:8080/webhook")]),
        );
        assert_eq!(c.status, Status::Fail);
        assert!(c.detail.contains("in clear"), "{}", c.detail);
        let loopback = url("http://127.0.0.1:8080");
        let c = serve_webhook_check(
            &loopback,
            &Ok(vec![hook(5, "http://127.0.0.1:8080/webhook")]),
        );
        assert_eq!(c.status, Status::Pass, "{}", c.detail);

        let forbidden = Failed {
            diagnosis: Diagnosis::Forbidden,
            error: "HTTP 403".into(),
        };
        let c = serve_webhook_check(&serve, &Err(forbidden));
        assert_eq!(c.status, Status::Unknown);
        assert!(c.detail.contains("Maintainers"), "{}", c.detail);
    }
}
