//! The `assent` binary: parse, dispatch, map errors to exit codes.

use std::process::ExitCode;

fn main() -> ExitCode {
    assent::commands::main()
}
