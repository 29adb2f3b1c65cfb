//! What a failed request means to the person running assent, and what to do about it.
//!
//! [`diagnose`] reads a [`ForgeError`] as typed facts: GitLab's status (only the adapter
//! looks at statuses), and for a request without an answer the transport's
//! [`TransportFailure`], classified from the HTTP and TLS libraries' typed errors. Nothing
//! here reads an error's wording, so neither a library's new phrasing nor a hostile server's
//! text can change the advice. [`advice`] is the one line `run` and `sweep` print after such
//! a failure; `assent doctor` picks its own fixes from the same [`Diagnosis`], with what it
//! knows of the setup (a CA file, a proxy) beside it.

use assent_forge::{CertificateFailure, ForgeError, ForgeErrorKind, TransportFailure};

/// What a failed request means, as far as the person running assent can act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Diagnosis {
    /// GitLab rejected the token (401): expired, revoked, or another instance's.
    TokenRejected,
    /// The token may not do this (403): its scope or its role is too small.
    Forbidden,
    /// GitLab shows this token no such project, merge request or route (404).
    NotFound,
    /// GitLab answered with a redirect, which is never followed (the token would go along).
    Redirected,
    /// GitLab refused the request for another reason (400, 409, 422, …).
    Refused,
    /// GitLab rate-limited the token past what the run could wait for (429).
    RateLimited,
    /// GitLab failed (5xx) after the read retries.
    ServerError,
    /// No answer came back; the transport says why.
    NoAnswer(TransportFailure),
    /// An answer came back that is not GitLab's API (not JSON, or not the expected shape).
    Unreadable,
    /// Anything else: a write with an unknown outcome, an incomplete listing, an injected
    /// fault.
    Other,
}

/// The typed reading of `error`.
pub fn diagnose(error: &ForgeError) -> Diagnosis {
    match error {
        ForgeError::Status { status: 403, .. } => Diagnosis::Forbidden,
        // 304 is GitLab's "already so" (an approval that already stands), not a redirect.
        ForgeError::Status { status: 304, .. } => Diagnosis::Refused,
        ForgeError::Status {
            status: 300..=399, ..
        } => Diagnosis::Redirected,
        ForgeError::Status { status: 429, .. } | ForgeError::RateLimited(_) => {
            Diagnosis::RateLimited
        }
        ForgeError::Transport { cause, .. } => Diagnosis::NoAnswer(*cause),
        _ => match error.kind() {
            ForgeErrorKind::Unauthorized => Diagnosis::TokenRejected,
            ForgeErrorKind::NotFound => Diagnosis::NotFound,
            ForgeErrorKind::Conflict | ForgeErrorKind::Refused | ForgeErrorKind::NotModified => {
                Diagnosis::Refused
            }
            ForgeErrorKind::Unavailable => Diagnosis::ServerError,
            ForgeErrorKind::Decode => Diagnosis::Unreadable,
            ForgeErrorKind::Ambiguous | ForgeErrorKind::Incomplete | ForgeErrorKind::Injected => {
                Diagnosis::Other
            }
        },
    }
}

/// The advice for `error`, when there is one a person can act on.
pub fn advice(error: &ForgeError) -> Option<&'static str> {
    advice_for(diagnose(error))
}

/// The one line of advice for a diagnosis, when a person can act on it.
pub fn advice_for(diagnosis: Diagnosis) -> Option<&'static str> {
    match diagnosis {
        Diagnosis::TokenRejected => Some(
            "GitLab rejected the token: it is expired, revoked, or made for another GitLab. Set ASSENT_TOKEN to a project access token with the api scope and the Developer role; `assent doctor` checks it",
        ),
        Diagnosis::Forbidden => Some(
            "the token may not do this: assent needs the api scope and the Developer role (a Reporter can comment but not resolve threads); `assent doctor` shows the token's role and scopes",
        ),
        Diagnosis::NotFound => Some(
            "GitLab shows this token no such project or merge request: check CI_PROJECT_ID (--project) and the MR IID, and that the token belongs to this project; `assent doctor` checks both",
        ),
        Diagnosis::Redirected => Some(
            "GitLab answered with a redirect, which assent never follows: set CI_API_V4_URL (--api-url) to the exact API base GitLab serves, https://<host>/api/v4; `assent doctor` checks it",
        ),
        Diagnosis::RateLimited | Diagnosis::ServerError => Some(
            "GitLab is unavailable or rate-limiting: the job's retry (exit 3) or the next pipeline reconciles from what was posted",
        ),
        Diagnosis::NoAnswer(cause) => transport_advice(cause),
        Diagnosis::Refused | Diagnosis::Unreadable | Diagnosis::Other => None,
    }
}

fn transport_advice(cause: TransportFailure) -> Option<&'static str> {
    match cause {
        TransportFailure::Proxy => Some(
            "the proxy from HTTPS_PROXY, HTTP_PROXY or ALL_PROXY could not be reached or refused the connection: check it, or add GitLab's host to NO_PROXY; `assent doctor` shows the proxy in use",
        ),
        TransportFailure::Certificate(CertificateFailure::CaUsedAsEndEntity) => Some(
            "GitLab presents a CA certificate (CA:TRUE, as `openssl req -x509` makes a self-signed one by default) as its own, which the TLS library refuses whatever CA file is given: serve GitLab a certificate issued by a CA (CA:FALSE) and set ASSENT_CA_FILE to that CA, or re-issue the self-signed certificate with CA:FALSE and set ASSENT_CA_FILE to it; `assent doctor` shows which CA file is in use",
        ),
        TransportFailure::Certificate(CertificateFailure::WrongName) => Some(
            "GitLab's certificate does not name the host in CI_API_V4_URL (--api-url): use the host name the certificate was issued for; `assent doctor` checks it",
        ),
        TransportFailure::Certificate(CertificateFailure::NotCurrentlyValid) => Some(
            "GitLab's certificate has expired or is not valid yet: renew it, or check the runner's clock; `assent doctor` checks it",
        ),
        TransportFailure::Certificate(_) | TransportFailure::Tls => Some(
            "TLS verification failed: for a private CA set ASSENT_CA_FILE to the CA's certificate (PEM), not the server's own certificate; `assent doctor` shows which CA file is in use",
        ),
        TransportFailure::PlainHttp => Some(
            "GitLab's port answered in plain HTTP, not TLS: set CI_API_V4_URL (--api-url) to http://<host>/api/v4 (and ASSENT_ALLOW_HTTP=1 for a host that is not loopback), or to the port that serves HTTPS; `assent doctor` checks it",
        ),
        TransportFailure::UnknownHost | TransportFailure::ConnectFailed => Some(
            "GitLab could not be reached: check CI_API_V4_URL (--api-url) and the network path; `assent doctor` checks it",
        ),
        TransportFailure::Timeout | TransportFailure::Other => None,
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

    /// A transport failure whose message says the opposite of its cause: only the cause
    /// counts.
    fn transport(cause: TransportFailure) -> ForgeError {
        ForgeError::Transport {
            method: "GET".into(),
            route: "user".into(),
            message: "proxy certificate tls dns refused".into(),
            cause,
        }
    }

    #[test]
    fn each_status_and_transport_failure_has_one_diagnosis() {
        assert_eq!(diagnose(&status(401)), Diagnosis::TokenRejected);
        assert_eq!(diagnose(&status(403)), Diagnosis::Forbidden);
        assert_eq!(diagnose(&status(404)), Diagnosis::NotFound);
        assert_eq!(diagnose(&status(302)), Diagnosis::Redirected);
        assert_eq!(diagnose(&status(409)), Diagnosis::Refused);
        assert_eq!(diagnose(&status(422)), Diagnosis::Refused);
        assert_eq!(diagnose(&status(429)), Diagnosis::RateLimited);
        assert_eq!(diagnose(&status(502)), Diagnosis::ServerError);
        let cause = TransportFailure::Certificate(CertificateFailure::UnknownIssuer);
        assert_eq!(diagnose(&transport(cause)), Diagnosis::NoAnswer(cause));
        let decode = ForgeError::Decode {
            method: "GET".into(),
            route: "version".into(),
            message: "expected value".into(),
        };
        assert_eq!(diagnose(&decode), Diagnosis::Unreadable);
        assert_eq!(
            diagnose(&ForgeError::Injected("crash".into())),
            Diagnosis::Other
        );
    }

    #[test]
    fn each_fixable_failure_names_its_fix_and_doctor() {
        use CertificateFailure as C;
        use TransportFailure as T;
        for (error, needle) in [
            (status(401), "ASSENT_TOKEN"),
            (status(403), "Developer role"),
            (status(404), "CI_PROJECT_ID"),
            (status(301), "never follows"),
            (
                transport(T::Certificate(C::UnknownIssuer)),
                "ASSENT_CA_FILE",
            ),
            (transport(T::Certificate(C::Other)), "not the server's own"),
            (transport(T::Tls), "TLS verification failed"),
            (
                transport(T::Certificate(C::CaUsedAsEndEntity)),
                "issued by a CA",
            ),
            (transport(T::Certificate(C::WrongName)), "host name"),
            (transport(T::Certificate(C::NotCurrentlyValid)), "expired"),
            (transport(T::Proxy), "NO_PROXY"),
            (transport(T::UnknownHost), "CI_API_V4_URL"),
            (transport(T::ConnectFailed), "could not be reached"),
        ] {
            let advice = advice(&error).unwrap_or_else(|| panic!("{error:?}"));
            assert!(advice.contains(needle), "{error:?}: {advice}");
            assert!(advice.contains("assent doctor"), "{advice}");
        }
        assert!(advice(&status(500)).is_some());
        assert_eq!(advice(&status(409)), None);
        assert_eq!(advice(&transport(T::Timeout)), None);
        assert_eq!(advice(&ForgeError::Injected("crash".into())), None);
    }
}
