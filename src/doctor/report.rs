//! The doctor's report: one line per check, the duplicate-prevention guarantee, text and
//! JSON rendering. Pure: no I/O, no clock.

use serde::Serialize;

use crate::gitlab::Token;

use super::enforcement::{EnforcementVerdict, GateEnforcement, THREADS_ONLY_WARNING};
use super::single_writer::DuplicatePrevention;

/// The outcome of one check (docs/contract.md#commands: a check that fails is exit 1; one that cannot be
/// verified is a warning, exit 0 unless `--strict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Verified good (`✓`).
    Pass,
    /// Verified wrong (`✗`): exit 1.
    Fail,
    /// Could not be verified (`?`): a warning, exit 1 only with `--strict`.
    Unknown,
    /// Not checked because an earlier check failed or could not be verified (the text form
    /// lists these on one `-` line). Not a warning of its own: the check that stopped it
    /// counts already, once.
    Skipped,
}

impl Status {
    /// The one-character mark of the text form.
    pub fn mark(self) -> &'static str {
        match self {
            Status::Pass => "✓",
            Status::Fail => "✗",
            Status::Unknown => "?",
            Status::Skipped => "-",
        }
    }

    /// True for a warning: a check that could not be verified.
    pub fn is_warning(self) -> bool {
        self == Status::Unknown
    }
}

/// One check: what was verified and, unless it passed, how to fix it in one sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Stable identifier (`inputs`, `api`, `token`, ...).
    pub id: &'static str,
    /// Pass, fail or unknown.
    pub status: Status,
    /// What was found, in one line.
    pub detail: String,
    /// The fix in one sentence; `None` when the check passed.
    pub fix: Option<String>,
}

impl Check {
    /// A passing check.
    pub fn pass(id: &'static str, detail: impl Into<String>) -> Check {
        Check {
            id,
            status: Status::Pass,
            detail: detail.into(),
            fix: None,
        }
    }

    /// A failing check with its fix.
    pub fn fail(id: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            id,
            status: Status::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// A check that could not be verified, with what to do about it.
    pub fn unknown(id: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            id,
            status: Status::Unknown,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    /// A check not made because of `why` (an earlier check's outcome, which carries the
    /// fix).
    pub fn skipped(id: &'static str, why: impl Into<String>) -> Check {
        Check {
            id,
            status: Status::Skipped,
            detail: why.into(),
            fix: None,
        }
    }
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Always `assent/v1`.
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    /// Always `DoctorReport`.
    pub kind: &'static str,
    /// Every check, in the order run.
    pub checks: Vec<Check>,
    /// The guarantee.
    pub duplicate_prevention: DuplicatePrevention,
    /// Why that guarantee (the evidence, or the first missing piece of it).
    pub duplicate_prevention_reason: String,
    /// What holds the gate against an author's own resolutions.
    pub gate_enforcement: GateEnforcement,
    /// Why that verdict (the evidence, or what is missing for each stronger one).
    pub gate_enforcement_reason: String,
    /// For `threads-only`: what to change so that the gate holds; `None` otherwise.
    pub gate_enforcement_warning: Option<String>,
}

impl Report {
    /// A report of `checks` with the guarantee and its reason. The gate enforcement is
    /// `threads-only` ("not verified") until [`Report::with_gate_enforcement`] sets it.
    pub fn new(checks: Vec<Check>, guarantee: DuplicatePrevention, reason: String) -> Report {
        Report {
            api_version: "assent/v1",
            kind: "DoctorReport",
            checks,
            duplicate_prevention: guarantee,
            duplicate_prevention_reason: reason,
            gate_enforcement: GateEnforcement::ThreadsOnly,
            gate_enforcement_reason: "not verified".to_owned(),
            gate_enforcement_warning: Some(THREADS_ONLY_WARNING.to_owned()),
        }
    }

    /// The report with the gate-enforcement verdict.
    pub fn with_gate_enforcement(mut self, verdict: EnforcementVerdict) -> Report {
        self.gate_enforcement = verdict.enforcement;
        self.gate_enforcement_reason = verdict.reason;
        self.gate_enforcement_warning = verdict.warning;
        self
    }

    /// Ids of the checks that failed.
    pub fn failures(&self) -> Vec<&'static str> {
        self.ids(|s| s == Status::Fail)
    }

    /// Ids of the checks that could not be verified: warnings.
    pub fn warnings(&self) -> Vec<&'static str> {
        self.ids(Status::is_warning)
    }

    fn ids(&self, which: impl Fn(Status) -> bool) -> Vec<&'static str> {
        self.checks
            .iter()
            .filter(|c| which(c.status))
            .map(|c| c.id)
            .collect()
    }

    /// The exit code's meaning: `true` when doctor found problems, a failed check, or with
    /// `strict` also a warning.
    pub fn found_problems(&self, strict: bool) -> bool {
        !self.failures().is_empty() || (strict && !self.warnings().is_empty())
    }

    /// Removes `token` everywhere in the report, in every form
    /// [`redact_secret`](crate::gitlab::transport::redact_secret) knows (defence in depth: no
    /// text built by the doctor contains the token, but a forge message might echo it).
    pub fn redact(&mut self, token: &Token) {
        let clean = |s: &mut String| {
            *s = token.redact(s);
        };
        for check in &mut self.checks {
            clean(&mut check.detail);
            if let Some(fix) = &mut check.fix {
                clean(fix);
            }
        }
        clean(&mut self.duplicate_prevention_reason);
        clean(&mut self.gate_enforcement_reason);
        if let Some(warning) = &mut self.gate_enforcement_warning {
            clean(warning);
        }
    }

    /// The text form: one line per check (`✓`/`✗`/`?`, id, detail), the fix indented under
    /// each check that did not pass; checks skipped for one reason in a row share one `-`
    /// line naming them; a `summary:` line with the tally; then the guarantee and its
    /// reason, then the gate enforcement, its reason and (for `threads-only`) the warning.
    ///
    /// Every detail, fix, reason and warning is one escaped field
    /// ([`terminal_safe`](crate::core::terminal::terminal_safe)): what GitLab or a CI
    /// configuration put in it (an error text, a job name) never starts a line of its own.
    pub fn to_text(&self) -> String {
        use crate::core::terminal::terminal_safe;
        let width = self
            .checks
            .iter()
            .map(|c| match c.status {
                Status::Skipped => "skipped".len(),
                _ => c.id.len(),
            })
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        let mut rest = self.checks.as_slice();
        while let Some(c) = rest.first() {
            if c.status == Status::Skipped {
                let run = rest
                    .iter()
                    .take_while(|s| s.status == Status::Skipped && s.detail == c.detail)
                    .count();
                let ids: Vec<&str> = rest[..run].iter().map(|s| s.id).collect();
                out.push_str(&format!(
                    "{} {:<width$}  {} (not checked: {})\n",
                    c.status.mark(),
                    "skipped",
                    ids.join(", "),
                    terminal_safe(&c.detail)
                ));
                rest = &rest[run..];
                continue;
            }
            out.push_str(&format!(
                "{} {:<width$}  {}\n",
                c.status.mark(),
                c.id,
                terminal_safe(&c.detail)
            ));
            if let Some(fix) = &c.fix {
                out.push_str(&format!("  {:<width$}  fix: {}\n", "", terminal_safe(fix)));
            }
            rest = &rest[1..];
        }
        out.push_str(&self.summary_line());
        out.push_str(&format!(
            "duplicate_prevention: {}\n",
            self.duplicate_prevention.as_str()
        ));
        out.push_str(&format!(
            "  reason: {}\n",
            terminal_safe(&self.duplicate_prevention_reason)
        ));
        out.push_str(&format!(
            "gate_enforcement: {}\n",
            self.gate_enforcement.as_str()
        ));
        out.push_str(&format!(
            "  reason: {}\n",
            terminal_safe(&self.gate_enforcement_reason)
        ));
        if let Some(warning) = &self.gate_enforcement_warning {
            out.push_str(&format!("  warning: {}\n", terminal_safe(warning)));
        }
        out
    }

    /// `summary: P passed, F failed, W warnings (…), S not checked`: the tally the exit code
    /// follows.
    fn summary_line(&self) -> String {
        let count = |status| self.checks.iter().filter(|c| c.status == status).count();
        let plural = |n: usize, word: &str| {
            if n == 1 {
                format!("{n} {word}")
            } else {
                format!("{n} {word}s")
            }
        };
        let (unknown, skipped) = (count(Status::Unknown), count(Status::Skipped));
        let mut line = format!(
            "summary: {} passed, {} failed, {}",
            count(Status::Pass),
            count(Status::Fail),
            plural(unknown, "warning")
        );
        if unknown > 0 {
            line.push_str(" (not verified; a warning fails doctor only with --strict)");
        }
        if skipped > 0 {
            line.push_str(&format!(", {skipped} not checked"));
        }
        line.push('\n');
        line
    }

    /// The JSON form (one document, keys in declaration order).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Report {
        Report::new(
            vec![
                Check::pass("token", "@assent-bot (id 100)"),
                Check::fail("scope", "scopes: read_api", "Recreate the token with api."),
                Check::unknown("role", "not readable", "Check the member list."),
            ],
            DuplicatePrevention::UnserializedBestEffort,
            "no CI job".into(),
        )
    }

    #[test]
    fn text_has_one_line_per_check_and_a_fix_under_each_non_pass() {
        let text = report().to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "✓ token  @assent-bot (id 100)");
        assert_eq!(lines[1], "✗ scope  scopes: read_api");
        assert_eq!(lines[2], "         fix: Recreate the token with api.");
        assert_eq!(lines[3], "? role   not readable");
        assert_eq!(lines[4], "         fix: Check the member list.");
        assert_eq!(
            lines[5],
            "summary: 1 passed, 1 failed, 1 warning (not verified; a warning fails doctor only with --strict)"
        );
        assert_eq!(lines[6], "duplicate_prevention: unserialized-best-effort");
        assert_eq!(lines[7], "  reason: no CI job");
        assert_eq!(lines[8], "gate_enforcement: threads-only");
        assert_eq!(lines[9], "  reason: not verified");
        assert!(lines[10].starts_with("  warning: an MR's author can resolve"));
        assert_eq!(lines.len(), 11);
    }

    #[test]
    fn no_value_in_the_text_report_starts_a_line_of_its_own() {
        let forged = "x\r\x1b[2K\x1b[32m\n✓ serialization  verified";
        let mut report = Report::new(
            vec![
                Check::fail("scope", forged, forged),
                Check::skipped("role", forged),
                Check::skipped("policies", forged),
            ],
            DuplicatePrevention::UnserializedBestEffort,
            forged.into(),
        );
        report.gate_enforcement_reason = forged.into();
        report.gate_enforcement_warning = Some(forged.into());
        let text = report.to_text();
        assert!(!text.contains('\x1b') && !text.contains('\r'), "{text:?}");
        assert!(!text.lines().any(|l| l.starts_with('✓')), "{text}");
        // scope + its fix, one skipped line, summary, two lines per verdict, the warning.
        assert_eq!(text.lines().count(), 2 + 1 + 1 + 4 + 1, "{text}");
    }

    #[test]
    fn skipped_checks_share_one_line_per_reason() {
        let mut checks = vec![Check::fail(
            "token",
            "GitLab rejects the token (401)",
            "Fix it.",
        )];
        for id in ["identity", "scope", "role"] {
            checks.push(Check::skipped(id, "the token check failed"));
        }
        checks.push(Check::skipped("policies", "no target branch"));
        let r = Report::new(
            checks,
            DuplicatePrevention::UnserializedBestEffort,
            "x".into(),
        );
        let text = r.to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "✗ token    GitLab rejects the token (401)");
        assert_eq!(lines[1], "           fix: Fix it.");
        assert_eq!(
            lines[2],
            "- skipped  identity, scope, role (not checked: the token check failed)"
        );
        assert_eq!(
            lines[3],
            "- skipped  policies (not checked: no target branch)"
        );
        assert_eq!(
            lines[4],
            "summary: 0 passed, 1 failed, 0 warnings, 4 not checked"
        );
        // The JSON keeps one entry per check.
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["checks"].as_array().unwrap().len(), 5);
        assert_eq!(v["checks"][1]["status"], "skipped");
        assert_eq!(v["checks"][1]["detail"], "the token check failed");
    }

    #[test]
    fn failures_always_count_and_warnings_only_when_strict() {
        let r = report();
        assert_eq!(r.failures(), vec!["scope"]);
        assert_eq!(r.warnings(), vec!["role"]);
        assert!(r.found_problems(false) && r.found_problems(true));
        let warned = Report::new(
            vec![
                Check::pass("token", "ok"),
                Check::unknown("serialization", "outside a CI job", "Run it in the job."),
            ],
            DuplicatePrevention::UnserializedBestEffort,
            "x".into(),
        );
        assert!(!warned.found_problems(false));
        assert!(warned.found_problems(true));
        let clean = Report::new(
            vec![Check::pass("token", "ok")],
            DuplicatePrevention::SingleWriterSerialized,
            "x".into(),
        );
        assert!(!clean.found_problems(true));
        // A check not made is no warning of its own: what stopped it counts, once.
        let not_checked = Report::new(
            vec![
                Check::pass("token", "ok"),
                Check::skipped("merge-request", "no MR given"),
            ],
            DuplicatePrevention::SingleWriterSerialized,
            "x".into(),
        );
        assert!(not_checked.warnings().is_empty());
        assert!(!not_checked.found_problems(true));
        assert!(
            clean
                .to_text()
                .contains("summary: 1 passed, 0 failed, 0 warnings\n")
        );
    }

    #[test]
    fn a_held_gate_has_no_warning() {
        let r = report().with_gate_enforcement(EnforcementVerdict {
            enforcement: GateEnforcement::PipelineRequired,
            reason: "job fails on review".into(),
            warning: None,
        });
        let text = r.to_text();
        assert!(
            text.ends_with("gate_enforcement: pipeline-required\n  reason: job fails on review\n"),
            "{text}"
        );
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["gate_enforcement"], "pipeline-required");
        assert_eq!(v["gate_enforcement_reason"], "job fails on review");
        assert_eq!(v["gate_enforcement_warning"], serde_json::Value::Null);
        for g in [
            GateEnforcement::ApprovalRequired,
            GateEnforcement::PipelineRequired,
            GateEnforcement::ThreadsOnly,
        ] {
            assert_eq!(serde_json::to_value(g).unwrap(), g.as_str());
        }
    }

    #[test]
    fn json_is_typed() {
        let v: serde_json::Value = serde_json::from_str(&report().to_json()).unwrap();
        assert_eq!(v["kind"], "DoctorReport");
        assert_eq!(v["duplicate_prevention"], "unserialized-best-effort");
        assert_eq!(v["checks"][1]["status"], "fail");
        assert_eq!(v["checks"][2]["status"], "unknown");
        assert_eq!(v["checks"][0]["fix"], serde_json::Value::Null);
        assert_eq!(
            serde_json::to_value(DuplicatePrevention::SingleWriterSerialized).unwrap(),
            "single-writer-serialized"
        );
    }

    #[test]
    fn redaction_reaches_every_text() {
        let mut r = report();
        r.checks[0].detail = "echo glpat-x".into();
        r.duplicate_prevention_reason = "glpat-x".into();
        r.gate_enforcement_reason = "glpat-x".into();
        r.gate_enforcement_warning = Some("glpat-x".into());
        r.checks[1].detail = "GLPAT-X and glpat%2Dx".into();
        r.redact(&Token::new("glpat-x"));
        let json = r.to_json().to_ascii_lowercase();
        assert!(
            !json.contains("glpat-x") && !json.contains("glpat%2dx"),
            "{json}"
        );
    }
}
