//! Why one attempt got no response: a `Failure`, and its `TransportFailure` read from ureq's
//! and rustls's error types, never from their wording.

use std::fmt;

use super::Transport;
use assent_forge::{CertificateFailure, TransportFailure};

/// Why one attempt got no response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Nothing reached the server (name resolution, connect, proxy connect or certificate
    /// verification failed).
    NotSent(String, TransportFailure),
    /// The request may have reached the server but no complete answer came back (reset,
    /// timeout, truncated or undecodable body).
    NoAnswer(String, TransportFailure),
    /// The response body exceeded the limit.
    BodyTooLarge { status: u16, limit: u64 },
    /// A successful answer's body did not fit in the run's content budget: it was not read
    /// (or not past the point it stopped fitting), and nothing of it stays taken.
    OverBudget { limit: u64 },
    /// An answer assent does not take, final, never retried: a redirect it does not follow
    /// (refused before anything was sent to its target), or the LFS object storage's refusal;
    /// `message` says which.
    Refused { status: u16, message: String },
}

impl Failure {
    /// What the transport could tell of the failure.
    pub(crate) fn cause(&self) -> TransportFailure {
        match self {
            Failure::NotSent(_, cause) | Failure::NoAnswer(_, cause) => *cause,
            Failure::BodyTooLarge { .. } | Failure::OverBudget { .. } | Failure::Refused { .. } => {
                TransportFailure::Other
            }
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::NotSent(m, _) => write!(f, "not sent: {m}"),
            Failure::NoAnswer(m, _) => write!(f, "no answer: {m}"),
            Failure::BodyTooLarge { status, limit } => {
                write!(
                    f,
                    "HTTP {status}: response body exceeds the {limit}-byte limit"
                )
            }
            Failure::OverBudget { limit } => {
                write!(
                    f,
                    "the response body does not fit in the run's {limit}-byte content budget"
                )
            }
            Failure::Refused { status, message } => write!(f, "HTTP {status}: {message}"),
        }
    }
}

impl Transport {
    /// The failure a ureq error stands for: connect-phase errors were not sent (the
    /// proxy's when there is one), a certificate refused in the handshake was not sent
    /// either, anything later may have reached the server.
    pub(super) fn classify_error(&self, error: &ureq::Error) -> Failure {
        use ureq::Timeout;
        let message = self.redact(error.to_string());
        let connecting = match error {
            ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::InvalidProxyUrl
            | ureq::Error::ConnectProxyFailed(_)
            | ureq::Error::Timeout(Timeout::Resolve | Timeout::Connect) => true,
            ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::ConnectionRefused,
            _ => false,
        };
        if let Some(rustls::Error::InvalidMessage(
            rustls::InvalidMessage::InvalidContentType
            | rustls::InvalidMessage::UnknownProtocolVersion,
        )) = rustls_error(error)
        {
            // A TLS record starts with its content type (22 for a handshake); `H` (72), the
            // first byte of `HTTP/1.1 400`, is none. The hello carried nothing of the request.
            return Failure::NotSent(
                format!(
                    "{} answered in plain HTTP, not TLS: use http:// (and {}) or the HTTPS port",
                    self.host_port(),
                    super::ALLOW_HTTP_VAR
                ),
                TransportFailure::PlainHttp,
            );
        }
        if connecting {
            // Through a proxy, every connect-phase failure is the proxy's to report: the
            // runner only ever connects to the proxy itself.
            let cause = if self.proxied {
                TransportFailure::Proxy
            } else if matches!(
                error,
                ureq::Error::HostNotFound | ureq::Error::Timeout(Timeout::Resolve)
            ) {
                TransportFailure::UnknownHost
            } else {
                TransportFailure::ConnectFailed
            };
            if matches!(error, ureq::Error::Timeout(Timeout::Connect))
                && !self.proxied
                && self.base.scheme() == "https"
            {
                // ureq's connect timeout covers the TLS handshake too, so a port that takes
                // the connection and never answers the hello (a plain-HTTP server waiting
                // for the rest of a request line) ends here, not in DNS.
                return Failure::NotSent(
                    format!(
                        "{}: no TCP connection or TLS handshake within the {} s connect timeout; \
                         a port that accepts connections but never answers the TLS hello does \
                         not speak TLS (use http:// (and {}) for a plain-HTTP GitLab, or the \
                         HTTPS port), otherwise check the network path",
                        self.host_port(),
                        self.connect_timeout.as_secs_f64(),
                        super::ALLOW_HTTP_VAR
                    ),
                    cause,
                );
            }
            return Failure::NotSent(message, cause);
        }
        if let ureq::Error::BodyExceedsLimit(_) = error {
            return Failure::BodyTooLarge {
                status: 0,
                limit: self.body_limit,
            };
        }
        match rustls_error(error) {
            // A certificate is verified during the handshake, before any byte of the request.
            Some(rustls::Error::InvalidCertificate(problem)) => Failure::NotSent(
                message,
                TransportFailure::Certificate(certificate_failure(problem)),
            ),
            Some(_) => Failure::NoAnswer(message, TransportFailure::Tls),
            None if matches!(error, ureq::Error::Tls(_)) => {
                Failure::NoAnswer(message, TransportFailure::Tls)
            }
            None if matches!(error, ureq::Error::Timeout(_)) => {
                Failure::NoAnswer(message, TransportFailure::Timeout)
            }
            None => Failure::NoAnswer(message, TransportFailure::Other),
        }
    }
}

/// The TLS library's own error inside `error`: ureq reports a failed handshake as an I/O
/// error that wraps it.
fn rustls_error(error: &ureq::Error) -> Option<&rustls::Error> {
    match error {
        ureq::Error::Rustls(e) => Some(e),
        ureq::Error::Io(io) => io.get_ref()?.downcast_ref::<rustls::Error>(),
        _ => None,
    }
}

/// Why the server's certificate did not verify, from the TLS library's typed error (its
/// certificate verifier's own error for a CA certificate used as the server's).
fn certificate_failure(problem: &rustls::CertificateError) -> CertificateFailure {
    use rustls::CertificateError as E;
    match problem {
        E::UnknownIssuer => CertificateFailure::UnknownIssuer,
        E::NotValidForName | E::NotValidForNameContext { .. } => CertificateFailure::WrongName,
        E::Expired | E::ExpiredContext { .. } | E::NotValidYet | E::NotValidYetContext { .. } => {
            CertificateFailure::NotCurrentlyValid
        }
        E::Other(other)
            if matches!(
                other.0.downcast_ref::<webpki::Error>(),
                Some(webpki::Error::CaUsedAsEndEntity)
            ) =>
        {
            CertificateFailure::CaUsedAsEndEntity
        }
        _ => CertificateFailure::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_failures_are_read_from_the_tls_librarys_types() {
        use rustls::CertificateError as E;
        use rustls::OtherError;
        use std::sync::Arc;
        for (error, failure) in [
            (E::UnknownIssuer, CertificateFailure::UnknownIssuer),
            (E::NotValidForName, CertificateFailure::WrongName),
            (E::Expired, CertificateFailure::NotCurrentlyValid),
            (E::NotValidYet, CertificateFailure::NotCurrentlyValid),
            (
                E::Other(OtherError(Arc::new(webpki::Error::CaUsedAsEndEntity))),
                CertificateFailure::CaUsedAsEndEntity,
            ),
            (
                E::Other(OtherError(Arc::new(webpki::Error::EndEntityUsedAsCa))),
                CertificateFailure::Other,
            ),
            (E::BadSignature, CertificateFailure::Other),
        ] {
            assert_eq!(certificate_failure(&error), failure, "{error:?}");
        }
    }
}
