//! `assent completions SHELL`: the shell completion script, generated from the same clap
//! definition as `--help`, so it can never drift from the options the binary takes.

use std::io::Write as _;

use clap::{Args, CommandFactory as _};
use clap_complete::Shell;

use anyhow::Context as _;

use crate::commands::{Cli, CliResult};

/// `assent completions`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  assent completions bash > ~/.local/share/bash-completion/completions/assent
  assent completions zsh > \"${fpath[1]}/_assent\"
  assent completions fish > ~/.config/fish/completions/assent.fish")]
pub struct CompletionsArgs {
    /// The shell to write the completion script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Writes the completion script for `args.shell` on stdout.
pub fn run(args: &CompletionsArgs) -> CliResult {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "assent", &mut script);
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(&script)
        .and_then(|()| stdout.flush())
        .context("writing the completion script")?;
    Ok(())
}
