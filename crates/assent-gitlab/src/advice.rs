//! What to do about a failed request: one line of advice per failure an operator can fix,
//! for the command layer to print after the error. The adapter decides it because only the
//! adapter knows what GitLab's statuses and this transport's messages mean.

use assent_forge::{ForgeError, ForgeErrorKind};

/// The advice for `error`, when there is one a person can act on.
pub fn advice(error: &ForgeError) -> Option<&'static str> {
    match error {
        ForgeError::Status { status: 401, .. } => Some(
            "GitLab rejected the token: it is expired, revoked, or made for another GitLab. Set ASSENT_TOKEN to a project access token with the api scope and the Developer role; `assent doctor` checks it",
        ),
        ForgeError::Status { status: 403, .. } => Some(
            "the token may not do this: assent needs the api scope and the Developer role (a Reporter can comment but not resolve threads); `assent doctor` shows the token's role and scopes",
        ),
        ForgeError::Status { status: 404, .. } => Some(
            "GitLab shows this token no such project or merge request: check CI_PROJECT_ID (--project) and the MR IID, and that the token belongs to this project; `assent doctor` checks both",
        ),
        ForgeError::Transport { message, .. } => transport_advice(message),
        _ if error.kind() == ForgeErrorKind::Unavailable => Some(
            "GitLab is unavailable or rate-limiting: the job's retry (exit 3) or the next pipeline reconciles from what was posted",
        ),
        _ => None,
    }
}

fn transport_advice(message: &str) -> Option<&'static str> {
    let lower = message.to_ascii_lowercase();
    if lower.contains("proxy") {
        Some(
            "the proxy from HTTPS_PROXY/ALL_PROXY could not be reached or refused the connection: check it, or add GitLab's host to NO_PROXY; `assent doctor` shows the proxy in use",
        )
    } else if lower.contains("certificate")
        || lower.contains("unknownissuer")
        || lower.contains("causedasendentity")
        || lower.contains("tls")
    {
        Some(
            "TLS verification failed: for a private CA set ASSENT_CA_FILE to the CA's certificate (PEM), not the server's own certificate; `assent doctor` shows which CA file is in use",
        )
    } else if lower.contains("dns") || lower.contains("resolve") || lower.contains("refused") {
        Some(
            "GitLab could not be reached: check CI_API_V4_URL (--api-url) and the network path; `assent doctor` checks it",
        )
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16) -> ForgeError {
        ForgeError::Status {
            method: "POST".into(),
            route: "projects/1/merge_requests/7/discussions".into(),
            status,
            message: "m".into(),
        }
    }

    fn transport(message: &str) -> ForgeError {
        ForgeError::Transport {
            method: "GET".into(),
            route: "user".into(),
            message: message.into(),
        }
    }

    #[test]
    fn each_fixable_failure_names_its_fix_and_doctor() {
        for (error, needle) in [
            (status(401), "ASSENT_TOKEN"),
            (status(403), "Developer role"),
            (status(404), "CI_PROJECT_ID"),
            (
                transport("invalid peer certificate: UnknownIssuer"),
                "ASSENT_CA_FILE",
            ),
            (
                transport("invalid peer certificate: CaUsedAsEndEntity"),
                "not the server's own",
            ),
            (
                transport("proxy connect to 10.0.0.1:3128: Connection refused"),
                "NO_PROXY",
            ),
            (
                transport("dns: failed to resolve gitlab.example"),
                "CI_API_V4_URL",
            ),
        ] {
            let advice = advice(&error).unwrap_or_else(|| panic!("{error}"));
            assert!(advice.contains(needle), "{error}: {advice}");
            assert!(advice.contains("assent doctor"), "{advice}");
        }
        assert!(
            status(500).kind() == ForgeErrorKind::Unavailable && advice(&status(500)).is_some()
        );
        assert_eq!(advice(&status(409)), None);
        assert_eq!(advice(&ForgeError::Injected("crash".into())), None);
    }
}
