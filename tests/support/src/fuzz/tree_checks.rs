//! The properties of the `policy_tree` fuzz target, shared with `tests/it/fuzz_regressions.rs`:
//! `assent lint` and `assent test` reading a hostile `.assent/` tree (links to a secret file,
//! to `/dev/zero`, to folders outside; sockets; sparse files over the size limit; folders with
//! too many entries or nested too deep; arbitrary file names and contents).
//!
//! Input layout: records separated by `0x00`. A record is a kind byte, a place byte, a path
//! (bytes up to the first `0x01`) and a payload (the bytes after it):
//!
//! | kind | creates |
//! | --- | --- |
//! | `f` | a regular file holding the payload |
//! | `d` | a folder |
//! | `l` | a symbolic link to the payload: `@secret` (a file outside the repository), `@zero` (`/dev/zero`), `@outside` (a folder outside holding a policy), else the payload as written |
//! | `s` | a Unix socket |
//! | `b` | a sparse file one byte (plus the payload's length) over the size limit |
//! | `m` | a folder with just over the entry limit of empty files |
//!
//! The place byte puts the path under `.assent/policies/` (`p`), `.assent/tests/` (`t`) or
//! the repository root (anything else). `..` and `.` components are dropped, and nothing is
//! created through an existing link, so the tree stays inside its temporary folder.
//!
//! Properties: reading never panics; every file handed on is a regular file created by the
//! input, with exactly its bytes (never a link's target), within the size, count and total
//! limits; a tree with a refused entry never loads; every problem and error is one line, has
//! no control character, is bounded, and never holds the secret.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use assent::commands::lint::{LocalReadError, read_local_policies, shown_path};
use assent::commands::local_tree::{MAX_ENTRIES, MAX_FILE_BYTES, MAX_TOTAL_BYTES, list_folder};
use assent::commands::test::load_case;
use assent::core::policy::excerpt::MAX_MESSAGE_CHARS;
use assent::core::policy_cases::run_case;
use assent::engine::run::inputs::is_policy_file_name;

/// What a followed link would leak: found in a message, it was followed.
const SECRET: &str = "S3CR3T-0d9c7a-from-outside-the-repository";

/// Most records, path components and component bytes used from one input.
const MAX_RECORDS: usize = 64;
const MAX_COMPONENTS: usize = 24;
const MAX_COMPONENT_BYTES: usize = 200;

/// A temporary folder removed on drop (`remove_dir_all` does not follow links).
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch() -> Scratch {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "assent-policy-tree-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("repo")).unwrap();
    std::fs::create_dir_all(dir.join("outside/policies")).unwrap();
    std::fs::write(dir.join("outside/secret.yaml"), format!("{SECRET}\n")).unwrap();
    std::fs::write(
        dir.join("outside/policies/p.yaml"),
        format!("apiVersion: assent/v1\nkind: Policy\nrules: \"{SECRET}\"\n"),
    )
    .unwrap();
    Scratch(dir)
}

/// Creates the parents of `relative` under `repo` as folders; `false` when one exists as
/// anything but a folder (a link in particular: nothing is created through it).
fn make_parents(repo: &Path, relative: &[&[u8]]) -> bool {
    let mut at = repo.to_path_buf();
    for component in &relative[..relative.len() - 1] {
        at.push(std::ffi::OsStr::from_bytes(component));
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_dir() => {}
            Ok(_) => return false,
            Err(_) => {
                if std::fs::create_dir(&at).is_err() {
                    return false;
                }
            }
        }
    }
    true
}

/// Builds the tree; returns the regular files created (UTF-8 repository path → bytes) and
/// whether the input itself wrote the secret into a file.
fn build(root: &Path, data: &[u8]) -> (BTreeMap<String, Vec<u8>>, bool) {
    let repo = root.join("repo");
    let mut regular = BTreeMap::new();
    let mut wrote_secret = false;
    for record in data.split(|&b| b == 0).take(MAX_RECORDS) {
        let [kind, place, rest @ ..] = record else {
            continue;
        };
        let (path, payload) = match rest.iter().position(|&b| b == 1) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, &[][..]),
        };
        let base: &[&[u8]] = match place {
            b'p' => &[b".assent", b"policies"],
            b't' => &[b".assent", b"tests"],
            _ => &[],
        };
        let mut components: Vec<&[u8]> = base.to_vec();
        components.extend(
            path.split(|&b| b == b'/')
                .filter(|c| !c.is_empty() && *c != b"." && *c != b"..")
                .map(|c| &c[..c.len().min(MAX_COMPONENT_BYTES)])
                .take(MAX_COMPONENTS),
        );
        if components.is_empty() || !make_parents(&repo, &components) {
            continue;
        }
        let target: PathBuf = components
            .iter()
            .fold(repo.clone(), |p, c| p.join(std::ffi::OsStr::from_bytes(c)));
        if std::fs::symlink_metadata(&target).is_ok() {
            continue;
        }
        match kind {
            b'f' => {
                if std::fs::write(&target, payload).is_err() {
                    continue;
                }
                wrote_secret |= payload
                    .windows(SECRET.len())
                    .any(|w| w == SECRET.as_bytes());
                let joined: Vec<u8> = components.join(&b'/');
                if let Ok(path) = String::from_utf8(joined) {
                    regular.insert(path, payload.to_vec());
                }
            }
            b'd' => {
                let _ = std::fs::create_dir(&target);
            }
            b'l' => {
                let to = match payload {
                    b"@secret" => root.join("outside/secret.yaml"),
                    b"@zero" => PathBuf::from("/dev/zero"),
                    b"@outside" => root.join("outside"),
                    other => PathBuf::from(std::ffi::OsStr::from_bytes(other)),
                };
                let _ = std::os::unix::fs::symlink(to, &target);
            }
            b's' => {
                let _ = std::os::unix::net::UnixListener::bind(&target);
            }
            b'b' => {
                if let Ok(file) = std::fs::File::create(&target) {
                    let _ = file.set_len((MAX_FILE_BYTES + 1 + payload.len()) as u64);
                }
            }
            b'm' => {
                if std::fs::create_dir(&target).is_err() {
                    continue;
                }
                let extra = payload.first().map_or(0, |b| usize::from(b % 8));
                for i in 0..=MAX_ENTRIES + extra {
                    let _ = std::fs::write(target.join(format!("{i}.md")), "");
                }
            }
            _ => {}
        }
    }
    (regular, wrote_secret)
}

/// One line, no control character, bounded, and (unless the input wrote it itself) without
/// the secret.
fn check_line(what: &str, text: &str, secret_allowed: bool) {
    assert!(
        !text.chars().any(char::is_control),
        "{what} holds a control character: {text:?}"
    );
    if !secret_allowed {
        assert!(!text.contains(SECRET), "{what} leaks the secret: {text:?}");
    }
    // Paths are bounded by the input's limits, messages by MAX_MESSAGE_CHARS.
    let bound = MAX_MESSAGE_CHARS + 8 * MAX_COMPONENTS * (MAX_COMPONENT_BYTES + 1) + 200;
    assert!(
        text.chars().count() <= bound,
        "{what} is too long: {}",
        text.len()
    );
}

/// Builds the tree of `data` in a temporary folder and reads it as `assent lint` and
/// `assent test` do.
pub fn policy_tree(data: &[u8]) {
    let dir = scratch();
    let (regular, wrote_secret) = build(&dir.0, data);
    let repo = dir.0.join("repo");

    let policies = match read_local_policies(&repo) {
        Ok(local) => Some(local),
        Err(LocalReadError(message)) => {
            check_line("a read error", &message, wrote_secret);
            None
        }
    };
    let mut loaded = None;
    if let Some(local) = &policies {
        assert!(local.files.len() <= MAX_ENTRIES);
        let mut total = 0;
        for file in &local.files {
            assert!(file.bytes.len() <= MAX_FILE_BYTES, "{}", file.path);
            total += file.bytes.len();
            assert_eq!(
                regular.get(&file.path),
                Some(&file.bytes),
                "{} is not a regular file of the input, or not its bytes",
                file.path
            );
        }
        assert!(total <= MAX_TOTAL_BYTES);
        for problem in &local.refused {
            check_line("a refusal", &problem.message, wrote_secret);
        }
        match local.load() {
            Ok(set) => {
                assert!(
                    local.refused.is_empty(),
                    "a tree with a refused entry loaded"
                );
                loaded = Some(set);
            }
            Err(problems) => {
                assert!(!problems.is_empty());
                for problem in &problems {
                    // The path is escaped where it is printed (`shown_path`).
                    check_line("a problem", &problem.message, wrote_secret);
                    check_line("a shown path", &shown_path(&repo, &problem.file), true);
                }
            }
        }
    }

    match list_folder(&repo, ".assent/tests", is_policy_file_name) {
        Err(_) => {}
        Ok(listing) => {
            assert!(listing.files.len() <= MAX_ENTRIES);
            for refusal in &listing.refused {
                check_line("a refusal", &refusal.reason, wrote_secret);
            }
            for path in &listing.files {
                match load_case(&repo, path) {
                    Err(broken) => check_line(
                        "a broken case",
                        &broken.at(&shown_path(&repo, path)),
                        wrote_secret,
                    ),
                    Ok((text, case)) => {
                        assert_eq!(
                            regular.get(path).map(Vec::as_slice),
                            Some(text.as_bytes()),
                            "{path} is not a regular file of the input, or not its bytes"
                        );
                        if let (Some(_), Some(local)) = (&loaded, &policies) {
                            let _ = run_case(&local.files, &case);
                        }
                    }
                }
            }
        }
    }
}
