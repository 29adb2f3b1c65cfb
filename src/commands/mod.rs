//! The thin command layer: flags and environment in, a call into the core, text out, an exit
//! code back. No protocol logic lives here.

use std::process::ExitCode;

/// Parses the command line, runs the command and returns its exit code.
pub fn main() -> ExitCode {
    ExitCode::SUCCESS
}
