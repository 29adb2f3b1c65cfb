//! The one way a command writes a report file (`run`'s receipt and Code Quality report,
//! `check`'s Code Quality report, `sweep`'s report and metrics files): whole or not at all.
//!
//! A CI job uploads whatever file is at the path when it ends, and an author's editor or a
//! later step reads it: a report truncated by a full disk or a killed process would be read
//! as a complete one with fewer findings. So the bytes go to a temporary file in the same
//! folder (the same filesystem, so the rename is atomic), are synced, then renamed over the
//! path. On any failure the temporary file is removed and the report already at the path, if
//! any, is left as it was.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically (see the module docs).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically_with(path, |file| file.write_all(bytes))
}

/// Writes what `fill` writes to `path` atomically: `fill` writes into the temporary file,
/// and only once it and the sync succeed is the file renamed over `path`.
pub fn write_atomically_with(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let temporary = temporary_beside(path);
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        fill(&mut file)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, path)
    })();
    if result.is_err() {
        // Nothing half-written stays behind; the report at `path` was never touched.
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// `.<name>.<pid>.tmp` in the folder of `path`: hidden, and distinct per process, so two
/// writers of the same report never write into one temporary file.
fn temporary_beside(path: &Path) -> PathBuf {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    dir.join(format!(".{name}.{}.tmp", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_report_replaces_the_old_one_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gl-code-quality-report.json");
        std::fs::write(&path, "old report, longer than the new one").unwrap();
        write_atomically(&path, b"[]\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"[]\n");
        assert_eq!(entries(dir.path()), ["gl-code-quality-report.json"]);
    }

    #[test]
    fn a_write_failing_half_way_leaves_the_old_report_intact_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gl-code-quality-report.json");
        std::fs::write(&path, "[{\"complete\": true}]\n").unwrap();
        // As a full disk fails a write: some bytes out, then an error.
        let error = write_atomically_with(&path, |file| {
            file.write_all(b"[{\"desc")?;
            Err(std::io::Error::other("no space left on device"))
        })
        .unwrap_err();
        assert_eq!(error.to_string(), "no space left on device");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "[{\"complete\": true}]\n"
        );
        assert_eq!(entries(dir.path()), ["gl-code-quality-report.json"]);
        // Without an old report, nothing at all is left.
        let fresh = dir.path().join("fresh.json");
        write_atomically_with(&fresh, |file| {
            file.write_all(b"[")?;
            Err(std::io::Error::other("no space left on device"))
        })
        .unwrap_err();
        assert!(!fresh.exists());
        assert_eq!(entries(dir.path()), ["gl-code-quality-report.json"]);
    }

    #[test]
    fn a_rename_that_fails_removes_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the report should go: the rename over it fails.
        let path = dir.path().join("report.json");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), "kept").unwrap();
        assert!(write_atomically(&path, b"[]\n").is_err());
        assert_eq!(entries(dir.path()), ["report.json"]);
        assert_eq!(
            std::fs::read_to_string(path.join("inside")).unwrap(),
            "kept"
        );
    }

    #[test]
    fn a_relative_path_writes_beside_it_in_the_current_folder() {
        assert_eq!(
            temporary_beside(Path::new("report.json")),
            PathBuf::from(format!("./.report.json.{}.tmp", std::process::id()))
        );
        assert_eq!(
            temporary_beside(Path::new("out/report.json")),
            PathBuf::from(format!("out/.report.json.{}.tmp", std::process::id()))
        );
    }
}
