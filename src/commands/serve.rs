//! `assent serve`: flags and environment in, the checks at start (configuration: exit 2;
//! GitLab: exit 3), then [`crate::serve::run`] until SIGTERM or SIGINT (exit 0).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use crate::commands::gitlab_inputs::{ConnectionArgs, RateLimitArgs, process_env};
use crate::commands::{CliResult, UsageError};
use crate::core::sweep_classification::check_window;
use crate::core::time::SweepDuration;
use crate::engine::sweep::pass::SweepSettings;
use crate::gitlab::{GitLabClient, GitLabSweepForge};
use crate::serve::log::{Log, LogFormat};
use crate::serve::{ServeConfig, ServedProject, parse_listen};

const SERVE_HELP: &str = "\
Receives GitLab webhooks (Merge Request, Note, Emoji and Pipeline Hooks) on POST /webhook and,
for the MR an event names, runs the sweep's own classification a --settle delay after the
MR's latest event: where the review state needs a new run (a reviewer resolved the last
challenge, a pipeline was lost), it creates an MR pipeline. It never posts, edits, resolves
or approves anything itself: the CI job stays the one publisher, so replicas are safe.

The webhook secret comes only from ASSENT_WEBHOOK_SECRET (never a flag), the token from
ASSENT_TOKEN or GITLAB_TOKEN. GitLab sends no event when a thread is resolved while another
stays open: every MR a classification left at REVIEW is therefore re-examined every
--recheck-interval (off disables it) for --recheck-for after its last event, at most
--max-watched MRs. Besides the live path, an embedded sweep runs for every --project
--sweep-delay after start and every --sweep-interval (off disables it).

Endpoints: POST /webhook (202 queued; 204 ignored; 401 missing or wrong secret; 202 also
for every delivery with the right secret serve cannot act on: queue full, shutting down, a
body over 25 MiB or not JSON or naming no MR, counted and left to the recheck and the
sweep, since GitLab disables a hook that keeps failing), GET /healthz, GET /readyz,
GET /metrics (Prometheus text). Durations: a whole number with a unit ms, s, m, h or d
(sweep windows: s, m, h or d).

Examples:
  ASSENT_WEBHOOK_SECRET=... ASSENT_TOKEN=... \\
    assent serve --api-url https://gitlab.example.com/api/v4 --project group/proj
  assent serve --listen 0.0.0.0:8080 --project 42 --project group/other --log-format json
  assent serve --project group/proj --sweep-interval off   (a scheduled assent sweep instead)

Exit codes: 0 after SIGTERM/SIGINT and the drain, 2 configuration error at start (no secret,
a look-back not wider than the sweep interval, an unusable address), 3 GitLab error at start
(token rejected, GitLab unreachable, a project that cannot be read).";

/// Arguments of `assent serve`.
#[derive(Debug, Args)]
#[command(after_help = SERVE_HELP)]
pub struct ServeArgs {
    /// GitLab API v4 base URL, e.g. `https://gitlab.example.com/api/v4`.
    #[arg(
        long,
        value_name = "URL",
        env = "CI_API_V4_URL",
        hide_env_values = true
    )]
    pub api_url: Option<String>,
    /// A project to serve and sweep (id or full path); repeat for several. Events of other
    /// projects are answered 204 and ignored.
    #[arg(long, value_name = "ID|PATH", required = true)]
    pub project: Vec<String>,
    /// PEM bundle trusted in addition to the public roots [env: ASSENT_CA_FILE, then
    /// CI_SERVER_TLS_CA_FILE].
    #[arg(long, value_name = "PATH")]
    pub ca_file: Option<std::path::PathBuf>,
    /// Address and port to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080", value_parser = parse_listen)]
    pub listen: SocketAddr,
    /// Classify an MR this long after its latest event (a burst gives one classification).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_wait)]
    pub settle: Duration,
    /// The most MRs queued or being classified; past it an event is answered 202 and
    /// counted as dropped (the recheck and the sweep heal it).
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_queued: u64,
    /// The first embedded sweep pass runs this long after start.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_wait)]
    pub sweep_delay: Duration,
    /// The embedded sweep's period, or `off`.
    #[arg(long, value_name = "DURATION|off", default_value = "1h", value_parser = parse_interval)]
    pub sweep_interval: SweepInterval,
    /// The sweep examines open MRs updated within this long; wider than --sweep-interval.
    #[arg(long, value_name = "DURATION", default_value = "3h", value_parser = parse_sweep_duration)]
    pub lookback: SweepDuration,
    /// A summary still `reconciling` after this long is stuck.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_sweep_duration)]
    pub stuck_after: SweepDuration,
    /// A sweep pass examines at most this many MRs (oldest update first).
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_mrs: u64,
    /// On SIGTERM/SIGINT, wait this long for classifications in flight.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_wait)]
    pub shutdown_grace: Duration,
    /// A client that has not sent its request (headers, then body) within this long is cut.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_wait)]
    pub read_timeout: Duration,
    /// The most connections served at once; more wait to be accepted.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub max_connections: u64,
    /// Re-examine every MR left at REVIEW this often (GitLab sends no event when one thread
    /// of several is resolved), or `off`.
    #[arg(long, value_name = "DURATION|off", default_value = "1m", value_parser = parse_recheck_interval)]
    pub recheck_interval: RecheckInterval,
    /// Stop re-examining an MR this long after its last event.
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = parse_wait)]
    pub recheck_for: Duration,
    /// The most MRs re-examined; past it the one whose last event is oldest drops out
    /// (counted in assent_watch_dropped_total; the sweep still heals it).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub max_watched: u64,
    /// Log lines on stderr: `text` or `json` (one object per line).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// How long to wait for GitLab's rate limits.
    #[command(flatten)]
    pub rate_limit: RateLimitArgs,
}

/// `--recheck-interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecheckInterval {
    /// `off`.
    Off,
    /// A period.
    Every(Duration),
}

fn parse_recheck_interval(text: &str) -> Result<RecheckInterval, String> {
    if text.trim() == "off" {
        return Ok(RecheckInterval::Off);
    }
    match parse_wait(text)? {
        d if d.is_zero() => Err(format!(
            "{text:?}: a recheck interval is longer than 0 (or off)"
        )),
        d => Ok(RecheckInterval::Every(d)),
    }
}

/// `--sweep-interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepInterval {
    /// `off`.
    Off,
    /// A period.
    Every(SweepDuration),
}

fn parse_sweep_duration(text: &str) -> Result<SweepDuration, String> {
    text.parse().map_err(|e: crate::core::time::DurationError| {
        format!(
            "{}: {} (expected a whole number with a unit s, m, h or d, e.g. 48h or 30m)",
            e.text, e.reason
        )
    })
}

fn parse_interval(text: &str) -> Result<SweepInterval, String> {
    if text.trim() == "off" {
        return Ok(SweepInterval::Off);
    }
    parse_sweep_duration(text).map(SweepInterval::Every)
}

/// A whole number with a unit `ms`, `s`, `m`, `h` or `d`.
pub fn parse_wait(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (digits, unit_ms) = if let Some(d) = t.strip_suffix("ms") {
        (d, 1)
    } else if let Some(d) = t.strip_suffix('s') {
        (d, 1_000)
    } else if let Some(d) = t.strip_suffix('m') {
        (d, 60_000)
    } else if let Some(d) = t.strip_suffix('h') {
        (d, 3_600_000)
    } else if let Some(d) = t.strip_suffix('d') {
        (d, 86_400_000)
    } else {
        return Err(format!(
            "{text:?}: expected a whole number with a unit ms, s, m, h or d (e.g. 5s, 500ms)"
        ));
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{text:?}: expected a whole number with a unit ms, s, m, h or d (e.g. 5s, 500ms)"
        ));
    }
    let n: u64 = digits.parse().map_err(|_| format!("{text:?}: too large"))?;
    n.checked_mul(unit_ms)
        .filter(|ms| *ms <= 366 * 86_400_000)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?}: longer than a year"))
}

/// Runs `assent serve`.
pub fn run(args: &ServeArgs) -> CliResult {
    let interval = match args.sweep_interval {
        SweepInterval::Off => None,
        SweepInterval::Every(i) => {
            check_window(args.lookback, i).map_err(|e| UsageError(e.to_string()))?;
            Some(i)
        }
    };
    let secret = process_env("ASSENT_WEBHOOK_SECRET").ok_or_else(|| {
        UsageError(
            "no webhook secret: set ASSENT_WEBHOOK_SECRET (the secret token of the GitLab webhook; never a flag)"
                .into(),
        )
    })?;
    let rate_limit_wait = args
        .rate_limit
        .resolve(&process_env)
        .map_err(UsageError::from)?;
    let mut clients = Vec::new();
    for project in &args.project {
        let connection_args = ConnectionArgs {
            api_url: args.api_url.clone(),
            project: Some(project.clone()),
            ca_file: args.ca_file.clone(),
        };
        let mut connection = connection_args
            .resolve(&process_env)
            .map_err(UsageError::from)?;
        connection.rate_limit_wait = rate_limit_wait;
        let client = GitLabClient::new(&connection.gitlab_config())
            .map_err(|e| UsageError(e.to_string()))?;
        clients.push((project.clone(), client));
    }
    let listener = std::net::TcpListener::bind(args.listen)
        .map_err(|e| UsageError(format!("cannot listen on {}: {e}", args.listen)))?;
    let log = Log::new(args.log_format);
    // GitLab at start: the token (GET /user) and each project's numeric id, which webhook
    // payloads name it by.
    let bot = clients[0]
        .1
        .current_user_id()
        .context("cannot check the token (GET /user)")?;
    let mut projects = Vec::new();
    for (name, client) in clients {
        let id = client
            .project_id()
            .with_context(|| format!("cannot read project {name:?}"))?;
        projects.push(ServedProject {
            id,
            name,
            forge: Arc::new(GitLabSweepForge::new(client)),
        });
    }
    let sweep = SweepSettings {
        lookback: args.lookback,
        interval: interval.unwrap_or(args.lookback),
        stuck_after: args.stuck_after,
        dry_run: false,
        max_mrs: usize::try_from(args.max_mrs).unwrap_or(usize::MAX),
    };
    crate::serve::run(ServeConfig {
        projects,
        bot,
        secret,
        listener,
        settle: args.settle,
        max_queued: usize::try_from(args.max_queued).unwrap_or(usize::MAX),
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        read_timeout: args.read_timeout,
        sweep_delay: args.sweep_delay,
        sweep_interval: interval,
        sweep,
        shutdown_grace: args.shutdown_grace,
        log,
        recheck_interval: match args.recheck_interval {
            RecheckInterval::Off => None,
            RecheckInterval::Every(d) => Some(d),
        },
        recheck_for: args.recheck_for,
        max_watched: usize::try_from(args.max_watched).unwrap_or(usize::MAX),
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_take_ms_for_tests_and_refuse_anything_else() {
        assert_eq!(parse_wait("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_wait("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_wait("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_wait("5").is_err());
        assert!(parse_wait("-5s").is_err());
        assert!(parse_wait("ms").is_err());
        assert!(parse_wait("400d").is_err());
        assert_eq!(parse_interval("off"), Ok(SweepInterval::Off));
        assert!(
            parse_interval("500ms").is_err(),
            "sweep windows are whole seconds"
        );
        assert_eq!(parse_recheck_interval("off"), Ok(RecheckInterval::Off));
        assert_eq!(
            parse_recheck_interval("200ms"),
            Ok(RecheckInterval::Every(Duration::from_millis(200)))
        );
        assert!(parse_recheck_interval("0s").is_err());
    }
}
