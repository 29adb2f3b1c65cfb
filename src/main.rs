//! The `assent` binary: parse, dispatch, map errors to exit codes.

#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    assent::commands::main()
}
