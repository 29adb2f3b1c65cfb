//! The one way the commands print text: every byte of stdout and stderr that is not JSON
//! goes through [`core::terminal`](crate::core::terminal)'s escape, so no character taken
//! from a merge request (a topic name, a file path, a finding's subject, a server's error)
//! reaches a terminal or a CI job log as a control: no cursor move, erased line, colour or
//! direction change, and no line of its own.
//!
//! The macros [`out!`](crate::out), [`outln!`](crate::outln) and [`errln!`](crate::errln)
//! are `print!`, `println!` and `eprintln!` through [`print_text`] and [`eprint_text`]; JSON
//! documents go through [`print_json`], which keeps them JSON.

// The workspace denies printing; this module is the command layer's one way to print.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;

use crate::core::terminal::{json_terminal_safe, terminal_lines};

/// Prints `text` on stdout, its line breaks kept and every other control escaped.
pub fn print_text(text: &str) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (a pipe to `head`) is not worth a panic.
    let _ = out.write_all(terminal_lines(text).as_bytes());
}

/// Prints `text` on stderr, its line breaks kept and every other control escaped.
pub fn eprint_text(text: &str) {
    let _ = std::io::stderr()
        .lock()
        .write_all(terminal_lines(text).as_bytes());
}

/// Prints a JSON document on stdout, still the same JSON, with the characters `serde_json`
/// leaves raw (DEL, C1 controls, format characters) as `\uXXXX` escapes.
pub fn print_json(json: &str) {
    let _ = std::io::stdout()
        .lock()
        .write_all(json_terminal_safe(json).as_bytes());
}

/// `print!` through [`print_text`].
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::print_text(&::std::format!($($arg)*))
    };
}

/// `println!` through [`print_text`].
#[macro_export]
macro_rules! outln {
    () => {
        $crate::output::print_text("\n")
    };
    ($($arg:tt)*) => {
        $crate::output::print_text(&::std::format!("{}\n", ::std::format_args!($($arg)*)))
    };
}

/// `eprintln!` through [`eprint_text`].
#[macro_export]
macro_rules! errln {
    () => {
        $crate::output::eprint_text("\n")
    };
    ($($arg:tt)*) => {
        $crate::output::eprint_text(&::std::format!("{}\n", ::std::format_args!($($arg)*)))
    };
}
