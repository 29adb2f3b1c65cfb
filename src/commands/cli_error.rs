//! How a command ends: its exit code and, when it failed, the one error that says why.
//!
//! Every command's entry function returns a [`CliResult`]; [`finish`] is the one place the
//! error is printed (`error: …` on one escaped line, then a `help:` line when the operator can
//! fix the cause) and turned into the exit code (docs/contract.md#exit-codes). A command
//! that goes through many items (policy files, test cases, fixtures) prints what it found
//! about each as its report, [`report_error`] for the `error:` lines among them, and returns
//! the condition that fails it as its [`CliError`].

use crate::core::terminal::terminal_safe;
use crate::engine::run::review::RunError;
use crate::forge::ForgeError;

/// Exit codes shared by every command (docs/contract.md#commands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success (for `run`: published and verified, or a designed no-write refusal).
    Success = 0,
    /// The gate failed, or `lint`/`test`/`doctor`/`replay` found problems.
    GateFailed = 1,
    /// Usage or configuration error, before any forge write.
    Usage = 2,
    /// Forge or runtime failure.
    Runtime = 3,
}

impl From<Exit> for std::process::ExitCode {
    fn from(value: Exit) -> Self {
        std::process::ExitCode::from(value as u8)
    }
}

/// A usage or configuration error: exit 2, found before any forge write. Any other error a
/// command returns is a forge or runtime failure (exit 3).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl From<super::inputs::InputError> for UsageError {
    fn from(error: super::inputs::InputError) -> Self {
        UsageError(error.0)
    }
}

/// A failed command: the error [`finish`] prints, and the exit code.
#[derive(Debug)]
pub struct CliError {
    /// Why the command failed, its chain read outermost context first. `None` when the
    /// command's report already says it all (the exit code is then the only signal).
    pub error: Option<anyhow::Error>,
    /// The exit code.
    pub exit: Exit,
}

/// What a command's entry function returns: success (exit 0) or a [`CliError`].
pub type CliResult = Result<(), CliError>;

impl CliError {
    /// `error`, exiting with `exit`.
    pub fn new(error: anyhow::Error, exit: Exit) -> Self {
        CliError {
            error: Some(error),
            exit,
        }
    }

    /// A usage or configuration error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        UsageError(message.into()).into()
    }

    /// The gate failed, or the command found problems (exit 1).
    pub fn gate_failed(message: impl Into<String>) -> Self {
        CliError::new(anyhow::Error::msg(message.into()), Exit::GateFailed)
    }

    /// Exit `exit` with nothing printed: the command's report is the whole story.
    pub fn code(exit: Exit) -> Self {
        CliError { error: None, exit }
    }
}

impl From<anyhow::Error> for CliError {
    /// Exit 2 when a [`UsageError`] is anywhere in the chain, else 3 ([`exit_of`]).
    fn from(error: anyhow::Error) -> Self {
        let exit = exit_of(&error);
        CliError::new(error, exit)
    }
}

impl From<UsageError> for CliError {
    fn from(error: UsageError) -> Self {
        CliError::new(error.into(), Exit::Usage)
    }
}

/// The exit code of a failed command: 2 when a [`UsageError`] is anywhere in the chain,
/// else 3.
pub fn exit_of(error: &anyhow::Error) -> Exit {
    if error.chain().any(|cause| cause.is::<UsageError>()) {
        Exit::Usage
    } else {
        Exit::Runtime
    }
}

/// What the operator can do about `error`, when a failed forge request caused it.
pub fn help_for(error: &anyhow::Error) -> Option<&'static str> {
    error
        .chain()
        .find_map(|cause| {
            cause
                .downcast_ref::<RunError>()
                .and_then(RunError::forge_error)
                .or_else(|| cause.downcast_ref::<ForgeError>())
        })
        .and_then(crate::gitlab::advice)
}

/// The stderr lines of `error`: one `error:` line, causes joined by `: ` and escaped into one
/// visible line (they quote servers, files and merge requests), then a `help:` line when the
/// operator can fix the cause.
pub fn error_lines(error: &anyhow::Error) -> Vec<String> {
    let text = format!("{error:#}");
    let mut lines = vec![format!("error: {}", terminal_safe(&text))];
    lines.extend(help_for(error).map(|help| format!("help: {help}")));
    lines
}

/// Prints a failed command's error on stderr ([`error_lines`]) and returns its exit code:
/// the one place commands' errors are printed.
pub fn finish(result: CliResult) -> Exit {
    match result {
        Ok(()) => Exit::Success,
        Err(CliError { error, exit }) => {
            for line in error.as_ref().map(error_lines).unwrap_or_default() {
                crate::errln!("{line}");
            }
            exit
        }
    }
}

/// Prints one `error:` line of a command's report on stderr: a problem with one of the items
/// the command goes through (a case file, a fixture path), or a count of such problems,
/// after which it carries on. Never the command's own error: that one is its [`CliError`].
pub fn report_error(problem: impl std::fmt::Display) {
    crate::errln!("error: {problem}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    #[test]
    fn a_usage_error_anywhere_in_the_chain_is_exit_2_and_anything_else_3() {
        let usage = anyhow::Error::new(UsageError("no token".into()));
        assert_eq!(exit_of(&usage), Exit::Usage);
        let wrapped = Err::<(), _>(UsageError("bad SHA".into()))
            .context("reading the inputs")
            .unwrap_err();
        assert_eq!(exit_of(&wrapped), Exit::Usage);
        assert_eq!(CliError::from(wrapped).exit, Exit::Usage);
        let runtime = anyhow::anyhow!("GET /projects/1: HTTP 500");
        assert_eq!(exit_of(&runtime), Exit::Runtime);
        assert_eq!(CliError::from(runtime).exit, Exit::Runtime);
        assert_eq!(CliError::usage("bad flag").exit, Exit::Usage);
        assert_eq!(
            CliError::gate_failed("1 case failed").exit,
            Exit::GateFailed
        );
    }

    #[test]
    fn finish_maps_every_result_to_its_exit_code() {
        assert_eq!(finish(Ok(())), Exit::Success);
        assert_eq!(
            finish(Err(CliError::code(Exit::GateFailed))),
            Exit::GateFailed
        );
        assert_eq!(finish(Err(CliError::gate_failed("x"))), Exit::GateFailed);
        assert_eq!(finish(Err(CliError::usage("x"))), Exit::Usage);
        assert_eq!(finish(Err(anyhow::anyhow!("x").into())), Exit::Runtime);
    }

    #[test]
    fn an_error_is_one_escaped_line_with_its_causes_then_its_help_once() {
        let wrapped = Err::<(), _>(UsageError("bad SHA \"a\nb\u{1b}[2K\"".into()))
            .context("reading the inputs")
            .unwrap_err();
        assert_eq!(
            error_lines(&wrapped),
            vec!["error: reading the inputs: bad SHA \"a\\nb\\u{1b}[2K\""]
        );
        let forge = ForgeError::Status {
            method: "GET".into(),
            route: "/user".into(),
            status: 401,
            message: "401 Unauthorized".into(),
        };
        let help = crate::gitlab::advice(&forge).expect("a 401 has advice");
        let failed = anyhow::Error::new(forge).context("GET /user");
        let lines = error_lines(&failed);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("error: GET /user: "), "{lines:?}");
        assert_eq!(lines[1], format!("help: {help}"));
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("error:")).count(),
            1,
            "{lines:?}"
        );
    }
}
