//! Which proxy a request goes through: chosen once from the environment (or the
//! configuration), `NO_PROXY` matched here (trimmed entries, domain suffixes on a label
//! boundary, ports, CIDR ranges), and the value checked and built into ureq's proxy, every
//! refusal naming where the value came from.

use std::net::IpAddr;

use url::Url;

use super::redaction::redact_userinfo;
use crate::GitLabConfigError;

/// The proxy URL schemes the transport can use, as named in a refusal.
pub const SUPPORTED_PROXY_SCHEMES: &str =
    "http://, https:// (CONNECT), socks4://, socks4a://, socks5:// (or socks://), socks5h://";

/// Where proxy settings come from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ProxyConfig {
    /// `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` and `NO_PROXY` (see [`select_proxy`]).
    #[default]
    FromEnv,
    /// Connect directly, whatever the environment says.
    Direct,
    /// This proxy URL (e.g. `http://proxy:3128`), no `NO_PROXY` applied.
    Url(String),
}

/// The proxy the agent uses, as `config` says: none, the configured one, or the one the
/// environment (`lookup`) chooses for `base`.
pub(super) fn chosen_proxy(
    config: &ProxyConfig,
    base: &Url,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<ureq::Proxy>, GitLabConfigError> {
    let proxy = match config {
        ProxyConfig::Direct => None,
        ProxyConfig::Url(url) => Some(("the configured proxy", url.clone())),
        ProxyConfig::FromEnv => select_proxy_with_source(base, lookup),
    };
    match proxy {
        Some((source, value)) => Ok(Some(build_proxy(source, &value)?)),
        None => Ok(None),
    }
}

/// Builds the ureq proxy for `value`, which came from `source` (a variable name). Every
/// refusal names the source and the supported schemes and never shows credentials.
pub(crate) fn build_proxy(source: &str, value: &str) -> Result<ureq::Proxy, GitLabConfigError> {
    let refuse = |why: &str| {
        GitLabConfigError::Proxy(format!(
            "{source}={:?}: {why}; supported proxy schemes: {SUPPORTED_PROXY_SCHEMES}",
            redact_userinfo(value)
        ))
    };
    // ureq reads a value without a scheme as `http://`, as curl does; the URL parser here
    // checks the same reading has a host, so an empty or port-only authority is refused now
    // rather than at the first request.
    let with_scheme = if value.contains("://") {
        value.to_owned()
    } else {
        format!("http://{value}")
    };
    let parsed = Url::parse(&with_scheme).map_err(|_| refuse("not a proxy URL"))?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(refuse("the proxy URL has no host"));
    }
    if parsed.path() != "/" && !parsed.path().is_empty()
        || parsed.query().is_some()
        || parsed.fragment().is_some()
    {
        return Err(refuse(
            "a proxy URL is scheme://[user:password@]host[:port] only",
        ));
    }
    let proxy = ureq::Proxy::new(value).map_err(|_| refuse("not a supported proxy URL"))?;
    match proxy.protocol() {
        ureq::ProxyProtocol::Socks4 | ureq::ProxyProtocol::Socks4A
            if proxy.username().is_some() || proxy.password().is_some() =>
        {
            Err(refuse(
                "SOCKS4 cannot carry a user name or password (use socks5:// for an authenticating proxy)",
            ))
        }
        _ => Ok(proxy),
    }
}

/// Chooses the proxy for requests to `target` from environment-style variables.
///
/// * https targets: `HTTPS_PROXY`/`https_proxy`, else `ALL_PROXY`/`all_proxy`; http targets:
///   `http_proxy`/`HTTP_PROXY`, else `ALL_PROXY`/`all_proxy`. Empty values count as unset.
/// * `NO_PROXY`/`no_proxy`: comma- (or space-) separated entries, case-insensitive, trimmed.
///   `*` bypasses every host; `example.com`, `.example.com` and `*.example.com` all match
///   `example.com` and its subdomains (on a label boundary, so not `badexample.com`); an
///   entry may end in `:port` to match that port only; IP literals match exactly and CIDR
///   ranges (`10.0.0.0/8`, `fd00::/8`) match addresses inside them. Hostnames are not
///   resolved to be matched against ranges.
pub fn select_proxy(target: &Url, lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
    select_proxy_with_source(target, lookup).map(|(_, proxy)| proxy)
}

/// [`select_proxy`], with the name of the variable the proxy came from (for error messages).
pub fn select_proxy_with_source(
    target: &Url,
    lookup: impl Fn(&str) -> Option<String>,
) -> Option<(&'static str, String)> {
    let get = |names: &[&'static str]| {
        names.iter().find_map(|&n| {
            lookup(n)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .map(|v| (n, v))
        })
    };
    let proxy = if target.scheme() == "https" {
        get(&["HTTPS_PROXY", "https_proxy"]).or_else(|| get(&["ALL_PROXY", "all_proxy"]))
    } else {
        get(&["http_proxy", "HTTP_PROXY"]).or_else(|| get(&["ALL_PROXY", "all_proxy"]))
    }?;
    let host = target.host_str()?;
    let port = target.port_or_known_default().unwrap_or(0);
    match get(&["NO_PROXY", "no_proxy"]) {
        Some((_, no_proxy)) if no_proxy_matches(&no_proxy, host, port) => None,
        _ => Some(proxy),
    }
}

/// True when `host:port` matches a `NO_PROXY` list (see [`select_proxy`]).
pub fn no_proxy_matches(no_proxy: &str, host: &str, port: u16) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let host_ip: Option<IpAddr> = host.parse().ok();
    no_proxy
        .split([',', ' ', '\t'])
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            let entry = entry.to_ascii_lowercase();
            // IP, CIDR range, bracketed IPv6 with port.
            if let Some(ip) = host_ip {
                if let Some((net, bits)) = entry.split_once('/')
                    && let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u8>())
                {
                    return ip_in_range(ip, net, bits);
                }
                let (addr, entry_port) = split_port(&entry);
                if let Ok(addr) = addr
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<IpAddr>()
                {
                    return addr == ip && entry_port.is_none_or(|p| p == port);
                }
                if let Ok(addr) = entry.parse::<IpAddr>() {
                    return addr == ip;
                }
                return false;
            }
            let (name, entry_port) = split_port(&entry);
            if entry_port.is_some_and(|p| p != port) {
                return false;
            }
            let name = name
                .trim_start_matches('*')
                .trim_start_matches('.')
                .trim_end_matches('.');
            !name.is_empty()
                && (host == name
                    || host
                        .strip_suffix(name)
                        .is_some_and(|rest| rest.ends_with('.')))
        })
}

fn split_port(entry: &str) -> (&str, Option<u16>) {
    // `[v6]:port`, `host:port`; a bare IPv6 address (several colons) has no port.
    if let Some(rest) = entry.strip_prefix('[') {
        if let Some((addr, tail)) = rest.split_once(']') {
            return (addr, tail.strip_prefix(':').and_then(|p| p.parse().ok()));
        }
        return (entry, None);
    }
    match entry.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => match port.parse() {
            Ok(p) => (name, Some(p)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

fn ip_in_range(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::transport::{
        DEFAULT_BODY_LIMIT, Method, PreparedRequest, Token, Transport, TransportSettings,
    };

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn odd_proxy_values_are_refused_or_work_and_never_panic() {
        let refused = [
            "ftp://proxy.example:21",
            "socks4://user:s3cret@127.0.0.1:1080",
            "socks4a://user@127.0.0.1:1080",
            "socks6://127.0.0.1:1080",
            "garbage with spaces",
            "http://",
            "http://:8080",
            "://proxy",
            "http://proxy:99999",
            "http://proxy.example/some/path",
            "http://proxy.example?q=1",
            "\u{0}",
            "http://[::1",
            "user:s3cret@",
            "😀://proxy",
        ];
        for value in refused {
            let err = build_proxy("HTTPS_PROXY", value).expect_err(value);
            let text = err.to_string();
            assert!(text.contains("HTTPS_PROXY="), "{text}");
            assert!(text.contains(SUPPORTED_PROXY_SCHEMES), "{text}");
            assert!(!text.contains("s3cret"), "{text}");
            assert!(!text.contains('\n'), "{text}");
        }
        // Every accepted form gets as far as a connection attempt (nothing listens on port 1):
        // an error, never a panic.
        let accepted = [
            "http://127.0.0.1:1",
            "HTTP://127.0.0.1:1",
            "https://127.0.0.1:1",
            "127.0.0.1:1",
            "http://user:s3cret@127.0.0.1:1",
            "socks://127.0.0.1:1",
            "socks4://127.0.0.1:1",
            "socks4a://127.0.0.1:1",
            "socks5://127.0.0.1:1",
            "SOCKS5://127.0.0.1:1",
            "socks5h://user:s3cret@127.0.0.1:1",
        ];
        let token = Token::new("glpat-x");
        for value in accepted {
            build_proxy("ALL_PROXY", value).expect(value);
            let proxy = ProxyConfig::Url(value.to_owned());
            let transport = Transport::new(&TransportSettings {
                api_url: "http://127.0.0.1:1/api/v4",
                token: &token,
                ca_file: None,
                connect_timeout: Duration::from_secs(2),
                request_timeout: Duration::from_secs(2),
                body_limit: DEFAULT_BODY_LIMIT,
                proxy: &proxy,
            })
            .expect(value);
            let request = PreparedRequest {
                method: Method::Get,
                url: url("http://127.0.0.1:1/api/v4/user"),
                body: None,
            };
            let failure = transport.execute(&request).expect_err(value);
            assert!(!failure.to_string().contains("s3cret"), "{failure}");
        }
    }

    #[test]
    fn the_proxy_error_names_the_variable_it_came_from() {
        let https = url("https://gitlab.example/api/v4/");
        let http = url("http://gitlab.example/api/v4/");
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(
            select_proxy_with_source(&https, env(&[("ALL_PROXY", "ftp://p")])),
            Some(("ALL_PROXY", "ftp://p".to_owned()))
        );
        assert_eq!(
            select_proxy_with_source(&https, env(&[("https_proxy", "x"), ("ALL_PROXY", "y")])),
            Some(("https_proxy", "x".to_owned()))
        );
        assert_eq!(
            select_proxy_with_source(&http, env(&[("HTTP_PROXY", "x")])),
            Some(("HTTP_PROXY", "x".to_owned()))
        );
    }

    #[test]
    fn proxy_is_chosen_by_scheme_and_no_proxy() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let https = url("https://gitlab.corp.example/api/v4/");
        let http = url("http://gitlab.corp.example/api/v4/");
        let vars: &[(&str, &str)] = &[
            ("HTTPS_PROXY", "http://secure:3128"),
            ("HTTP_PROXY", "http://plain:3128"),
        ];
        assert_eq!(
            select_proxy(&https, env(vars)).as_deref(),
            Some("http://secure:3128")
        );
        assert_eq!(
            select_proxy(&http, env(vars)).as_deref(),
            Some("http://plain:3128")
        );
        let vars: &[(&str, &str)] = &[("HTTPS_PROXY", ""), ("ALL_PROXY", "http://all:1")];
        assert_eq!(
            select_proxy(&https, env(vars)).as_deref(),
            Some("http://all:1")
        );
        let vars: &[(&str, &str)] = &[
            ("HTTPS_PROXY", "http://p:1"),
            ("NO_PROXY", "localhost, .example"),
        ];
        assert_eq!(select_proxy(&https, env(vars)), None);
        let vars: &[(&str, &str)] = &[("HTTPS_PROXY", "http://p:1"), ("no_proxy", "other.example")];
        assert!(select_proxy(&https, env(vars)).is_some());
        assert_eq!(select_proxy(&https, env(&[])), None);
    }

    #[test]
    fn no_proxy_matching_rules() {
        assert!(no_proxy_matches("*", "anything", 443));
        assert!(no_proxy_matches("example.com", "example.com", 443));
        assert!(no_proxy_matches("example.com", "gitlab.Example.com", 443));
        assert!(no_proxy_matches(
            " .example.com ",
            "gitlab.example.com",
            443
        ));
        assert!(no_proxy_matches("*.example.com", "example.com", 443));
        assert!(!no_proxy_matches("example.com", "badexample.com", 443));
        assert!(no_proxy_matches("example.com:443", "example.com", 443));
        assert!(!no_proxy_matches("example.com:8443", "example.com", 443));
        assert!(no_proxy_matches("10.0.0.0/8", "10.1.2.3", 443));
        assert!(!no_proxy_matches("10.0.0.0/8", "11.1.2.3", 443));
        assert!(no_proxy_matches("127.0.0.1", "127.0.0.1", 80));
        assert!(no_proxy_matches("::1", "[::1]", 80));
        assert!(no_proxy_matches("[::1]:80", "[::1]", 80));
        assert!(no_proxy_matches("fd00::/8", "[fd12::1]", 80));
        assert!(!no_proxy_matches("", "example.com", 443));
        assert!(!no_proxy_matches("10.0.0.0/8", "ten.example", 443));
    }
}
