//! Reading a checkout's `.assent/` tree for `assent lint` and `assent test`, as hostile input.
//!
//! Both commands are meant to run in CI on merge requests that change `.assent/`, so the tree
//! they read was written by the merge request's author. A checkout can hold symbolic links
//! (to `~/.git-credentials`, to `/dev/zero`, to `/`), and a local tree can hold FIFOs,
//! sockets and devices. Reading any of those would leak another file into the job log, read
//! without end, or block. So:
//!
//! * **Only regular files and folders are read.** Every entry under the folder is looked at
//!   with `symlink_metadata` (never followed); a symbolic link (to a file or a folder, inside
//!   the repository or not, dangling or not) and anything that is not a regular file or a
//!   folder is refused with a problem naming its path, whatever its name, and is never opened.
//!   The same holds for the folder itself and for `.assent`: `REPO/.assent` or
//!   `REPO/.assent/policies` being a link is refused (GitLab stores a link as a blob holding
//!   its target, so `assent run` would not see policies there either). `REPO` itself is the
//!   user's argument and may be a link.
//! * **Opening cannot be raced into following a link or blocking.** Files are opened with
//!   `O_NOFOLLOW | O_NONBLOCK` (on Unix), and the opened file must be regular: a file swapped
//!   for a link or a FIFO after the listing is refused, not read.
//! * **Sizes and counts are capped** ([`MAX_FILE_BYTES`] per file, read with at most one byte
//!   more, never the whole file first; [`MAX_ENTRIES`] entries and [`MAX_DEPTH`] levels per
//!   folder; [`MAX_TOTAL_BYTES`] for all the policy files together).
//! * **Names are checked.** A name that is not UTF-8 is refused (it could not be named in a
//!   problem, or be a repository path, without being changed).
//!
//! Refusals are problems, not I/O errors: the callers report them like any other problem
//! and fail. Their messages quote no file content.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

use crate::core::policy::MAX_POLICY_FILE_BYTES;

/// Largest file read (a policy file or a test case), in bytes.
pub const MAX_FILE_BYTES: usize = MAX_POLICY_FILE_BYTES;

/// Most entries (files, folders, anything) walked under one folder.
pub const MAX_ENTRIES: usize = 1000;

/// Deepest folder nesting walked under one folder.
pub const MAX_DEPTH: usize = 16;

/// Most bytes read for all the policy files of a checkout together.
pub const MAX_TOTAL_BYTES: usize = 16 << 20;

/// The reason given for a symbolic link.
pub const LINK_REFUSED: &str = "is a symbolic link; assent reads only regular files and folders \
                                (a link could point outside the repository)";

/// One path under the folder that is not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RefusedEntry {
    /// Repository path, `/`-separated (non-UTF-8 bytes replaced).
    pub path: String,
    /// Why, in one line, without any of the file's content.
    pub reason: String,
}

/// What a folder holds: the files to read and the entries refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeListing {
    /// Repository paths of the regular files accepted by the name filter, sorted.
    pub files: Vec<String>,
    /// Entries refused (links, special files, bad names, too deep), sorted by path.
    pub refused: Vec<RefusedEntry>,
    /// Repository paths of the regular files the name filter passed over, sorted: never
    /// read, but a caller can say that they are not (a `topics.json` policy file).
    pub passed_over: Vec<String>,
}

/// Why a folder could not be listed at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListError {
    /// The folder (or a component of it) does not exist, or is not a folder.
    Missing,
    /// The folder, or a component of it, is refused (a link), or it holds too much.
    Refused(RefusedEntry),
    /// Reading a folder failed; the error, with the shown path.
    Io(String),
}

/// Why one file was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// Refused (a link, not a regular file, too large); the reason.
    Refused(String),
    /// An I/O error, as text.
    Io(String),
}

/// What kind of non-regular thing `meta` describes, for a refusal; `None` for a regular file
/// or a folder.
fn refusal_reason(meta: &Metadata) -> Option<String> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Some(LINK_REFUSED.to_owned());
    }
    if kind.is_file() || kind.is_dir() {
        return None;
    }
    Some(format!(
        "is {}; assent reads only regular files",
        special_kind(&kind)
    ))
}

#[cfg(unix)]
fn special_kind(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_char_device() {
        "a character device"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: &std::fs::FileType) -> &'static str {
    "not a regular file"
}

/// Lists the regular files under `repo/folder` (a `/`-separated repository path such as
/// `.assent/policies`) whose repository path passes `wanted`, walking at most
/// [`MAX_ENTRIES`] entries and [`MAX_DEPTH`] levels and following no link.
pub fn list_folder(
    repo: &Path,
    folder: &str,
    wanted: impl Fn(&str) -> bool,
) -> Result<TreeListing, ListError> {
    // Each component below REPO must be a real folder.
    let mut prefix = String::new();
    for component in folder.split('/') {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(component);
        let meta = match std::fs::symlink_metadata(repo.join(&prefix)) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ListError::Missing),
            Err(e) => return Err(ListError::Io(format!("{prefix}: {e}"))),
        };
        if let Some(reason) = refusal_reason(&meta) {
            return Err(ListError::Refused(RefusedEntry {
                path: prefix,
                reason,
            }));
        }
        if !meta.is_dir() {
            return Err(ListError::Missing);
        }
    }

    let mut listing = TreeListing::default();
    let mut entries = 0usize;
    // (repository path of a folder, its depth below `folder`)
    let mut pending = vec![(folder.to_owned(), 0usize)];
    while let Some((dir, depth)) = pending.pop() {
        let read =
            std::fs::read_dir(repo.join(&dir)).map_err(|e| ListError::Io(format!("{dir}: {e}")))?;
        for entry in read {
            let entry = entry.map_err(|e| ListError::Io(format!("{dir}: {e}")))?;
            entries += 1;
            if entries > MAX_ENTRIES {
                return Err(ListError::Refused(RefusedEntry {
                    path: folder.to_owned(),
                    reason: format!(
                        "holds more than {MAX_ENTRIES} entries; assent reads at most {MAX_ENTRIES}"
                    ),
                }));
            }
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                listing.refused.push(RefusedEntry {
                    path: format!("{dir}/{}", name.to_string_lossy()),
                    reason: "has a name that is not valid UTF-8; assent reads only UTF-8 paths"
                        .to_owned(),
                });
                continue;
            };
            let path = format!("{dir}/{name}");
            // `DirEntry::metadata` does not follow links.
            let meta = entry
                .metadata()
                .map_err(|e| ListError::Io(format!("{path}: {e}")))?;
            if let Some(reason) = refusal_reason(&meta) {
                listing.refused.push(RefusedEntry { path, reason });
            } else if meta.is_dir() {
                if depth + 1 > MAX_DEPTH {
                    listing.refused.push(RefusedEntry {
                        path,
                        reason: format!(
                            "is nested more than {MAX_DEPTH} folders deep; assent reads at most {MAX_DEPTH} levels"
                        ),
                    });
                } else {
                    pending.push((path, depth + 1));
                }
            } else if wanted(&path) {
                listing.files.push(path);
            } else {
                listing.passed_over.push(path);
            }
        }
    }
    listing.files.sort();
    listing.refused.sort();
    listing.passed_over.sort();
    Ok(listing)
}

/// Most entries walked when listing a whole checkout ([`list_checkout`]).
pub const MAX_CHECKOUT_ENTRIES: usize = 200_000;

/// Deepest folder nesting walked when listing a whole checkout.
pub const MAX_CHECKOUT_DEPTH: usize = 32;

/// Why a checkout was not listed whole: it holds more than the caps allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckoutTooLarge(pub String);

/// The repository paths of everything in the checkout at `repo` that `assent run` could
/// see as a file: regular files and symbolic links (GitLab stores a link as a blob), never
/// followed, never opened. `.git` at the root is skipped; names that are not UTF-8 are left
/// out. At most [`MAX_CHECKOUT_ENTRIES`] entries and [`MAX_CHECKOUT_DEPTH`] levels are
/// walked: a tree beyond either is not listed at all, so a caller never judges from part of
/// it.
pub fn list_checkout(repo: &Path) -> Result<Vec<String>, CheckoutTooLarge> {
    let mut paths = Vec::new();
    let mut entries = 0usize;
    let mut pending: Vec<(String, usize)> = vec![(String::new(), 0)];
    while let Some((dir, depth)) = pending.pop() {
        // A folder that cannot be read (permissions) holds nothing `lint` can see.
        let Ok(read) = std::fs::read_dir(repo.join(&dir)) else {
            continue;
        };
        for entry in read {
            let Ok(entry) = entry else { continue };
            entries += 1;
            if entries > MAX_CHECKOUT_ENTRIES {
                return Err(CheckoutTooLarge(format!(
                    "the checkout holds more than {MAX_CHECKOUT_ENTRIES} entries"
                )));
            }
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let path = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            // `DirEntry::file_type` does not follow links.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if dir.is_empty() && path == ".git" {
                    continue;
                }
                if depth + 1 > MAX_CHECKOUT_DEPTH {
                    return Err(CheckoutTooLarge(format!(
                        "the checkout nests folders more than {MAX_CHECKOUT_DEPTH} deep"
                    )));
                }
                pending.push((path, depth + 1));
            } else if kind.is_file() || kind.is_symlink() {
                paths.push(path);
            }
        }
    }
    paths.sort();
    Ok(paths)
}

/// Opens `path` for reading without following a final symbolic link and without blocking on
/// a FIFO.
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    options.open(path)
}

/// Whether an open error says the path is a symbolic link (`O_NOFOLLOW` refused it).
fn is_link_error(error: &std::io::Error) -> bool {
    #[cfg(unix)]
    {
        error.raw_os_error() == Some(libc::ELOOP) || error.raw_os_error() == Some(libc::EMLINK)
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}

/// The problem of a file over `cap` bytes.
fn too_large(bytes: u64, cap: usize) -> String {
    format!("file is {bytes} bytes, more than the {cap} allowed")
}

/// Reads the regular file at `repo/path` (a repository path), at most `cap` bytes: a link,
/// a special file or a larger file is refused without reading its content.
pub fn read_file(repo: &Path, path: &str, cap: usize) -> Result<Vec<u8>, ReadError> {
    let full = repo.join(path);
    let file = match open_no_follow(&full) {
        Ok(file) => file,
        Err(e) if is_link_error(&e) => return Err(ReadError::Refused(LINK_REFUSED.to_owned())),
        Err(e) => return Err(ReadError::Io(e.to_string())),
    };
    // The file opened may not be the one listed: check what it is now.
    let meta = file.metadata().map_err(|e| ReadError::Io(e.to_string()))?;
    if !meta.is_file() {
        let reason = refusal_reason(&meta)
            .unwrap_or_else(|| "is not a regular file; assent reads only regular files".into());
        return Err(ReadError::Refused(reason));
    }
    if meta.len() > cap as u64 {
        return Err(ReadError::Refused(too_large(meta.len(), cap)));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // One byte more than allowed tells a file that grew since `metadata` from one that fits.
    file.take(cap as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError::Io(e.to_string()))?;
    if bytes.len() > cap {
        return Err(ReadError::Refused(format!(
            "file is more than the {cap} bytes allowed"
        )));
    }
    Ok(bytes)
}

/// Replaces the content of the regular file at `path`, refusing to write through a symbolic
/// link (`O_NOFOLLOW`): a case file swapped for a link after it was read is not followed.
pub fn write_file_no_follow(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let mut file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    file.write_all(bytes)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn yaml(path: &str) -> bool {
        path.ends_with(".yaml")
    }

    #[test]
    fn links_and_special_files_are_refused_whatever_their_names() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        let policies = repo.join(".assent/policies");
        std::fs::create_dir_all(policies.join("sub")).unwrap();
        std::fs::write(policies.join("a.yaml"), "a").unwrap();
        std::fs::write(policies.join("sub/b.yaml"), "b").unwrap();
        std::fs::write(policies.join("notes.md"), "n").unwrap();
        symlink("/dev/zero", policies.join("zero.yaml")).unwrap();
        symlink("/", policies.join("root")).unwrap();
        symlink("a.yaml", policies.join("alias.md")).unwrap();
        symlink("missing", policies.join("dangling.yaml")).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(policies.join("s.yaml")).unwrap();
        let listing = list_folder(repo, ".assent/policies", yaml).unwrap();
        assert_eq!(
            listing.files,
            vec![".assent/policies/a.yaml", ".assent/policies/sub/b.yaml"]
        );
        let refused: Vec<(&str, &str)> = listing
            .refused
            .iter()
            .map(|r| (r.path.as_str(), r.reason.as_str()))
            .collect();
        assert_eq!(
            refused,
            vec![
                (".assent/policies/alias.md", LINK_REFUSED),
                (".assent/policies/dangling.yaml", LINK_REFUSED),
                (".assent/policies/root", LINK_REFUSED),
                (
                    ".assent/policies/s.yaml",
                    "is a socket; assent reads only regular files"
                ),
                (".assent/policies/zero.yaml", LINK_REFUSED),
            ]
        );
    }

    #[test]
    fn a_linked_assent_or_policy_folder_is_refused_and_a_missing_one_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let elsewhere = dir.path().join("elsewhere/policies");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::create_dir_all(&repo).unwrap();
        assert_eq!(
            list_folder(&repo, ".assent/policies", yaml),
            Err(ListError::Missing)
        );
        symlink(dir.path().join("elsewhere"), repo.join(".assent")).unwrap();
        assert_eq!(
            list_folder(&repo, ".assent/policies", yaml),
            Err(ListError::Refused(RefusedEntry {
                path: ".assent".into(),
                reason: LINK_REFUSED.into()
            }))
        );
        std::fs::remove_file(repo.join(".assent")).unwrap();
        std::fs::create_dir(repo.join(".assent")).unwrap();
        symlink(&elsewhere, repo.join(".assent/policies")).unwrap();
        assert!(matches!(
            list_folder(&repo, ".assent/policies", yaml),
            Err(ListError::Refused(RefusedEntry { path, .. })) if path == ".assent/policies"
        ));
        // REPO itself may be a link: the user named it.
        std::fs::remove_file(repo.join(".assent/policies")).unwrap();
        std::fs::create_dir(repo.join(".assent/policies")).unwrap();
        symlink(&repo, dir.path().join("link-to-repo")).unwrap();
        assert!(list_folder(&dir.path().join("link-to-repo"), ".assent/policies", yaml).is_ok());
    }

    #[test]
    fn entries_depth_and_names_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        let policies = repo.join(".assent/policies");
        std::fs::create_dir_all(&policies).unwrap();
        for i in 0..MAX_ENTRIES {
            std::fs::write(policies.join(format!("{i}.md")), "").unwrap();
        }
        assert!(list_folder(repo, ".assent/policies", yaml).is_ok());
        std::fs::write(policies.join("one-more.md"), "").unwrap();
        let Err(ListError::Refused(refusal)) = list_folder(repo, ".assent/policies", yaml) else {
            panic!("too many entries must be refused");
        };
        assert_eq!(refusal.path, ".assent/policies");
        assert!(
            refusal.reason.contains("more than 1000 entries"),
            "{refusal:?}"
        );

        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        let mut deep = repo.join(".assent/tests");
        for _ in 0..=MAX_DEPTH + 1 {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("case.yaml"), "").unwrap();
        use std::os::unix::ffi::OsStrExt;
        let bad = std::ffi::OsStr::from_bytes(b"bad\xff.yaml");
        std::fs::write(repo.join(".assent/tests").join(bad), "").unwrap();
        let listing = list_folder(repo, ".assent/tests", yaml).unwrap();
        assert!(listing.files.is_empty(), "{listing:?}");
        let reasons: Vec<&str> = listing.refused.iter().map(|r| r.reason.as_str()).collect();
        assert_eq!(listing.refused.len(), 2, "{listing:?}");
        assert!(reasons.iter().any(|r| r.contains("not valid UTF-8")));
        assert!(
            reasons
                .iter()
                .any(|r| r.contains("more than 16 folders deep"))
        );
    }

    #[test]
    fn a_checkout_is_listed_without_following_links_or_entering_git() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("topics/deep")).unwrap();
        std::fs::create_dir_all(repo.join(".git/objects")).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        std::fs::write(repo.join("topics/a.yaml"), "").unwrap();
        std::fs::write(repo.join("topics/deep/b.json"), "").unwrap();
        std::fs::write(repo.join(".git/objects/x"), "").unwrap();
        std::fs::write(dir.path().join("outside/secret.yaml"), "").unwrap();
        symlink(dir.path().join("outside"), repo.join("linked")).unwrap();
        symlink("/dev/zero", repo.join("zero.yaml")).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(repo.join("s.yaml")).unwrap();
        assert_eq!(
            list_checkout(&repo).unwrap(),
            vec!["linked", "topics/a.yaml", "topics/deep/b.json", "zero.yaml"]
        );

        let mut deep = repo.clone();
        for _ in 0..=MAX_CHECKOUT_DEPTH {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        let err = list_checkout(&repo).unwrap_err();
        assert!(err.0.contains("more than 32 deep"), "{err:?}");
    }

    #[test]
    fn reading_refuses_links_fifos_and_large_files_without_reading_them() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        std::fs::write(repo.join("ok.yaml"), "fine").unwrap();
        assert_eq!(read_file(repo, "ok.yaml", 4).unwrap(), b"fine");
        assert_eq!(
            read_file(repo, "ok.yaml", 3).unwrap_err(),
            ReadError::Refused("file is 4 bytes, more than the 3 allowed".into())
        );
        symlink("/dev/zero", repo.join("zero.yaml")).unwrap();
        assert_eq!(
            read_file(repo, "zero.yaml", 10).unwrap_err(),
            ReadError::Refused(LINK_REFUSED.into())
        );
        let made = std::process::Command::new("mkfifo")
            .arg(repo.join("fifo.yaml"))
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(
            read_file(repo, "fifo.yaml", 10).unwrap_err(),
            ReadError::Refused("is a FIFO; assent reads only regular files".into())
        );
        // A sparse file larger than the cap is refused from its size, not read.
        let big = File::create(repo.join("big.yaml")).unwrap();
        big.set_len(64 << 30).unwrap();
        assert!(matches!(
            read_file(repo, "big.yaml", MAX_FILE_BYTES),
            Err(ReadError::Refused(reason)) if reason.contains("68719476736 bytes")
        ));
        assert!(write_file_no_follow(&repo.join("zero.yaml"), b"x").is_err());
        write_file_no_follow(&repo.join("ok.yaml"), b"new").unwrap();
        assert_eq!(std::fs::read(repo.join("ok.yaml")).unwrap(), b"new");
    }
}
