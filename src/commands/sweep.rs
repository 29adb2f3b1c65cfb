//! `assent sweep`: the scheduled safety net (docs/contract.md#sweep). Flags and environment in, one call
//! into [`crate::engine::sweep::pass::sweep`], the report out, an exit code back.
//!
//! The clock is read here (`crate::clock::now`), once, and the same instant is handed to the sweep: the window
//! start and every "reconciling for longer than" judgement use it.

use std::path::PathBuf;

use clap::Args;

use crate::commands::gitlab_inputs::{
    ConnectionArgs, RATE_LIMIT_ADVICE, RateLimitArgs, process_env, with_gitlab_environment,
};
use crate::commands::report_file::write_atomically;
use crate::commands::{CliResult, OutputFormat, UsageError, progress_for};
use crate::core::sweep_classification::{check_window, coverage_warning};
use crate::core::time::SweepDuration;
use crate::engine::sweep::pass::{SweepReport, SweepSettings, Unshared, sweep_with};
use crate::gitlab::{GitLabClient, GitLabSweepForge};

const SWEEP_HELP: &str = "\
Lists the project's open MRs, reads the assent summary of each one updated within --lookback
and creates a merge request pipeline for every MR whose review state is not verified for its
head and target branch (summary missing, verified for an older head, for another target branch
or for none recorded, or reconciling for longer than --stuck-after). Every open MR whose
summary says REVIEW is examined however long ago it was updated (GitLab moves no updated_at
when one thread of several is resolved): it gets a pipeline when its thread resolutions
changed since that summary and a thread is resolved by a user who may assent. No pipeline
while the head pipeline of the MR's head is still pending or running; GitLab's refusal to
create one (405, 400) is reported on the MR's line. Never publishes review artifacts itself.

The report lists every MR examined with its verdict and action, then two counts of the
pipelines created:
  refreshed: M  after a human action: a resolution that may count changed a summary at
                REVIEW (review-resolved), or the MR was retargeted (verified-other-target).
                Reviewers make this grow; it is no sign of trouble.
  healed: N     for runs that were lost or never happened (missing, reconciling-stuck,
                verified-older-head, verified-no-target). In a healthy deployment N stays 0;
                a persistently non-zero N means MR pipelines are being lost.

Progress goes to stderr (`progress: ...` lines: the listing, MRs examined k/n); --quiet or
--format json leave only errors and warnings there.

--report PATH writes the JSON report to a file too, and --metrics PATH the two counts as
GitLab metrics (`assent_sweep_healed N`, `assent_sweep_refreshed M`) for the job's
`artifacts:reports:metrics`; both are written when the sweep ends, also after a failure.

Examples:
  assent sweep --interval 1h --lookback 3h
  assent sweep --interval 24h --lookback 48h --dry-run --format json
  assent sweep --report assent-sweep.json --metrics assent-sweep.metrics.txt

Exit codes: 0 the sweep ran (whatever N), 2 usage or configuration error (including a look-back
not wider than the interval), 3 forge failure (the report shows the progress made).";

/// Arguments of `assent sweep`.
#[derive(Debug, Args)]
#[command(after_help = with_gitlab_environment(SWEEP_HELP))]
pub struct SweepArgs {
    /// Where GitLab is and which project to sweep.
    #[command(flatten)]
    pub connection: ConnectionArgs,
    /// Examine open MRs updated within this long before now (and those at REVIEW whenever updated); must be wider than --interval.
    #[arg(long, value_name = "DURATION", default_value = "3h", value_parser = parse_duration)]
    pub lookback: SweepDuration,
    /// The period of the schedule that runs the sweep (e.g. 1h for an hourly schedule).
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration)]
    pub interval: SweepDuration,
    /// A summary still `reconciling` after this long (from the note's updated_at) is stuck.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse_duration)]
    pub stuck_after: SweepDuration,
    /// Classify and report, create no pipeline (zero writes).
    #[arg(long)]
    pub dry_run: bool,
    /// Report format on stdout: one line per MR then `refreshed: M` and `healed: N` (`text`), or one JSON document with the same content (`json`).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Read the discussions of at most this many MRs (in the window first, oldest update first); the rest wait for the next sweep.
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_mrs: u64,
    /// How long to wait for GitLab's rate limits.
    #[command(flatten)]
    pub rate_limit: RateLimitArgs,
    /// No progress lines on stderr (errors and warnings still go there).
    #[arg(long)]
    pub quiet: bool,
    /// Also write the JSON report (as `--format json` prints it) to this file, for a CI
    /// artifact; written whole or not at all (a temporary file, then a rename).
    #[arg(long, value_name = "PATH")]
    pub report: Option<PathBuf>,
    /// Also write `healed` and `refreshed` to this file as OpenMetrics text lines
    /// (`assent_sweep_healed 0`) for GitLab's metrics report
    /// (`artifacts:reports:metrics`); written whole or not at all.
    #[arg(long, value_name = "PATH")]
    pub metrics: Option<PathBuf>,
}

/// The sweep's counts as GitLab's metrics report reads them (`artifacts:reports:metrics`,
/// gitlabhq `doc/ci/testing/metrics_reports.md`): one `name value` line each and the
/// `# EOF` the OpenMetrics text format ends with, so a Prometheus textfile collector reads the
/// same file. `healed` is the number to alert on; `refreshed` grows with reviewers' work.
pub fn metrics_text(report: &SweepReport) -> String {
    format!(
        "assent_sweep_healed {}\nassent_sweep_refreshed {}\n# EOF\n",
        report.healed, report.refreshed
    )
}

/// Writes the files `--report` and `--metrics` ask for.
fn write_report_files(args: &SweepArgs, report: &SweepReport, json: &str) -> CliResult {
    let files = [
        (args.report.as_deref(), json.to_owned(), "--report"),
        (args.metrics.as_deref(), metrics_text(report), "--metrics"),
    ];
    for (path, text, flag) in files {
        let Some(path) = path else { continue };
        write_atomically(path, text.as_bytes()).map_err(|e| {
            anyhow::anyhow!(
                "cannot write {flag} {}: {e}; pass a path in a writable directory",
                path.display()
            )
        })?;
    }
    Ok(())
}

fn parse_duration(text: &str) -> Result<SweepDuration, String> {
    text.parse().map_err(|e: crate::core::time::DurationError| {
        format!(
            "{}: {} (expected a whole number with a unit s, m, h or d, e.g. 48h or 30m)",
            e.text, e.reason
        )
    })
}

/// Runs `assent sweep`.
pub fn run(args: &SweepArgs) -> CliResult {
    check_window(args.lookback, args.interval).map_err(|e| UsageError(e.to_string()))?;
    let mut connection = args
        .connection
        .resolve(&process_env)
        .map_err(UsageError::from)?;
    connection.rate_limit_wait = args
        .rate_limit
        .resolve(&process_env)
        .map_err(UsageError::from)?;
    let project = connection.project.clone();
    let client =
        GitLabClient::new(&connection.gitlab_config()).map_err(|e| UsageError(e.to_string()))?;
    let forge = GitLabSweepForge::new(client);
    let settings = SweepSettings {
        lookback: args.lookback,
        interval: args.interval,
        stuck_after: args.stuck_after,
        dry_run: args.dry_run,
        max_mrs: usize::try_from(args.max_mrs).unwrap_or(usize::MAX),
    };
    let progress = progress_for(args.format == OutputFormat::Json, args.quiet);
    let mut report = sweep_with(
        &forge,
        &project,
        crate::clock::now(),
        &settings,
        progress.as_ref(),
        &Unshared,
    );
    if let Some(w) = coverage_warning(args.lookback, args.interval, args.stuck_after) {
        report.warnings.push(w);
        report.warnings.sort();
    }
    let json = format!(
        "{}\n",
        serde_json::to_string_pretty(&report.to_json()).expect("JSON")
    );
    match args.format {
        OutputFormat::Text => crate::out!("{}", report.to_text()),
        OutputFormat::Json => crate::output::print_json(&json),
    }
    write_report_files(args, &report, &json)?;
    if let Some(line) = report.failure_line() {
        // The report is printed; the failure is the run's error (exit 3).
        if report.rate_limited {
            return Err(anyhow::anyhow!("{line} (rate limited; {RATE_LIMIT_ADVICE})").into());
        }
        return Err(anyhow::Error::msg(line).into());
    }
    if report.not_examined > 0 {
        let prefix = format!("stopped at --max-mrs {}: ", settings.max_mrs);
        if let Some(cap) = report.warnings.iter().find(|w| w.starts_with(&prefix)) {
            crate::errln!("warning: {}", crate::core::terminal::terminal_safe(cap));
        }
    }
    Ok(())
}
