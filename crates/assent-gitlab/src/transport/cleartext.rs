//! A plain `http://` API base to a host that is not loopback sends the token unencrypted:
//! whether it does, the warning that says so, and the switch that accepts it.

use std::sync::atomic::{AtomicBool, Ordering};

use url::{Host, Url};

/// The variable that lets a plain-`http://` API base to a remote host go without a warning.
pub const ALLOW_HTTP_VAR: &str = "ASSENT_ALLOW_HTTP";

/// Set once the cleartext warning has been printed: one line per process, however many
/// transports the command builds.
static CLEARTEXT_WARNED: AtomicBool = AtomicBool::new(false);

/// True when `ASSENT_ALLOW_HTTP` is on (`1`, `true`, `yes`, …: the one on/off parser,
/// [`assent_core::switch`]): the operator accepts a plain-`http://` API base to a remote host.
/// Anything else keeps the warning, so a misspelt value fails towards saying more.
pub fn allow_http(lookup: impl Fn(&str) -> Option<String>) -> bool {
    lookup(ALLOW_HTTP_VAR).is_some_and(|v| assent_core::switch::parse_switch(&v) == Some(true))
}

/// True for a host that never leaves the machine: `localhost`, `127.0.0.0/8`, `::1` (also
/// as an IPv4-mapped address).
pub fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(name)) => name.trim_end_matches('.').eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        None => false,
    }
}

/// The warning for an API base that sends the token unencrypted: plain `http://` to a host
/// that is not loopback, unless `allow_http`. `None` when there is nothing to say.
pub fn cleartext_warning(base: &Url, allow_http: bool) -> Option<String> {
    if base.scheme() != "http" || allow_http || is_loopback_host(base) {
        return None;
    }
    Some(format!(
        "the GitLab API URL {} is plain http:// to a host that is not loopback, so the token \
         travels unencrypted; use https:// (or set {ALLOW_HTTP_VAR}=1 to accept this)",
        base.origin().ascii_serialization()
    ))
}

/// Prints [`cleartext_warning`] for `base` on stderr, once per process however many
/// transports the command builds.
pub(super) fn warn_once(base: &Url, lookup: impl Fn(&str) -> Option<String>) {
    if let Some(warning) = cleartext_warning(base, allow_http(lookup))
        && !CLEARTEXT_WARNED.swap(true, Ordering::Relaxed)
    {
        // Printed where it is decided, once per process, for every command alike (run,
        // sweep, doctor, serve); an exception to the workspace's no-printing lint.
        #[allow(clippy::print_stderr)]
        {
            eprintln!("warning: {warning}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn plain_http_to_a_host_that_is_not_loopback_warns_unless_allowed() {
        for remote in [
            "http://gitlab.example.com/api/v4/",
            "http://10.0.0.5:8080/api/v4/",
            "http://[fd00::1]/api/v4/",
            "http://localhost.evil.example/api/v4/",
            "http://127.0.0.1.nip.io/api/v4/",
            "http://0.0.0.0/api/v4/",
        ] {
            let warning = cleartext_warning(&url(remote), false)
                .unwrap_or_else(|| panic!("{remote} must warn"));
            assert!(warning.contains("unencrypted"), "{warning}");
            assert!(warning.contains("ASSENT_ALLOW_HTTP=1"), "{warning}");
            assert!(
                !warning.contains("/api/v4"),
                "only the origin is named: {warning}"
            );
            assert_eq!(cleartext_warning(&url(remote), true), None, "{remote}");
        }
        for quiet in [
            "https://gitlab.example.com/api/v4/",
            "http://127.0.0.1:8080/api/v4/",
            "http://127.5.6.7/api/v4/",
            "http://localhost/api/v4/",
            "http://LOCALHOST./api/v4/",
            "http://[::1]:80/api/v4/",
            "http://[::ffff:127.0.0.1]/api/v4/",
        ] {
            assert_eq!(cleartext_warning(&url(quiet), false), None, "{quiet}");
        }
        let env = |value: &'static str| {
            move |name: &str| (name == ALLOW_HTTP_VAR).then(|| value.to_owned())
        };
        for yes in ["1", " 1 ", "true", "YES", "on"] {
            assert!(allow_http(env(yes)), "{yes:?}");
        }
        for no in ["", "0", "false", "off", "11", "maybe"] {
            assert!(!allow_http(env(no)), "{no:?}");
        }
        assert!(!allow_http(|_: &str| None));
    }
}
