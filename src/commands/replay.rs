//! `assent replay PATH...`: run protocol fixtures against the in-memory forge.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::commands::{CliError, CliResult, report_error};
use crate::core::terminal::terminal_safe;
use crate::engine::fixture::replay::FixtureLoadError;
use crate::engine::fixture::schema::default_head;
use crate::engine::fixture::{Fixture, InMemoryWorld, parse_fixture, replay_fixture};

/// Arguments of `assent replay`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  assent replay fixtures/\n  assent replay fixtures/duplicate-repair.yaml fixtures/state-table/"
)]
pub struct ReplayArgs {
    /// Fixture files, or folders searched recursively for `*.yaml`/`*.yml`.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// Runs `assent replay`: one line per fixture, then a tally. Exit 1 when any fixture fails,
/// 2 when a path or fixture cannot be read.
pub fn run(args: &ReplayArgs) -> CliResult {
    let mut files = Vec::new();
    let mut broken = 0usize;
    for path in &args.paths {
        if let Err(err) = collect_fixture_files(path, &mut files) {
            report_error(format_args!("{}: {err}", path.display()));
            broken += 1;
        }
    }
    let mut fixtures = Vec::with_capacity(files.len());
    for file in &files {
        match load_fixture(file) {
            Ok(fixture) => fixtures.push((file, fixture)),
            Err(err) => {
                report_error(&err);
                broken += 1;
            }
        }
    }
    // One column for the names, as wide as the longest (loaded first, so the column holds).
    let width = fixtures
        .iter()
        .map(|(_, f)| terminal_safe(&f.name).chars().count())
        .max()
        .unwrap_or(0);
    let (mut passed, mut failed) = (0usize, 0usize);
    for (file, fixture) in fixtures {
        let world = InMemoryWorld::new(fixture.bot_user_id, &default_head());
        let report = replay_fixture(&fixture, &world);
        let writes: Vec<String> = report.runs.iter().map(|r| r.writes.to_string()).collect();
        match &report.mismatch {
            None => {
                passed += 1;
                crate::outln!(
                    "PASS {:<width$} writes per run: {}",
                    terminal_safe(&report.name),
                    writes.join(" ")
                );
            }
            Some(mismatch) => {
                failed += 1;
                crate::outln!(
                    "FAIL {:<width$} {}: {}",
                    terminal_safe(&report.name),
                    terminal_safe(&file.display().to_string()),
                    terminal_safe(&mismatch.to_string())
                );
            }
        }
    }
    crate::outln!("replay: {passed} passed, {failed} failed");
    if broken > 0 {
        Err(CliError::usage(format!(
            "{broken} fixture path(s) could not be read or parsed"
        )))
    } else if failed > 0 {
        // Each failure's line is on stdout, with its first mismatch; stderr names the cause.
        Err(CliError::gate_failed(format!("{failed} fixture(s) failed")))
    } else {
        Ok(())
    }
}

/// Adds `path` (a file) or every `*.yaml`/`*.yml` below it (a folder), sorted. Hidden
/// entries and policy repositories (folders holding `.assent/`, such as the example
/// repositories under `fixtures/repos/`) are not fixtures and are skipped.
pub fn collect_fixture_files(path: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if path.is_file() {
        files.push(path.to_owned());
        return Ok(());
    }
    if path.join(".assent").is_dir() {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for entry in entries {
        if entry
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            continue;
        }
        if entry.is_dir() {
            collect_fixture_files(&entry, files)?;
        } else if entry.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            files.push(entry);
        }
    }
    Ok(())
}

/// Reads and validates one fixture file (the engine parses: `engine::fixture::parse_fixture`).
pub fn load_fixture(path: &Path) -> Result<Fixture, FixtureLoadError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| FixtureLoadError {
        path: shown.clone(),
        line: None,
        message: e.to_string(),
    })?;
    parse_fixture(&shown, &text)
}
