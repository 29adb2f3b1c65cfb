//! Embeds the sandbox's example repositories (`fixtures/repos/`) in the library, so that
//! `fake-gitlab --example` runs from any folder, with the source tree that built it gone.
//!
//! Writes `$OUT_DIR/examples.rs`: one `include_bytes!` per file of each example, in path
//! order, so Cargo rebuilds when a file changes and nothing is read at run time.

// A build script talks to Cargo through stdout.
#![allow(clippy::print_stdout)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The examples embedded: their folder under `fixtures/repos/`.
const EXAMPLES: &[&str] = &["topic-registry", "platform-policies"];

fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        println!("cargo:rerun-if-changed={}", dir.display());
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot read the example folder {}: {e}", dir.display()));
        for entry in entries {
            let entry = entry.expect("a folder entry");
            let kind = entry.file_type().expect("a file type");
            if kind.is_dir() {
                if entry.file_name() != ".git" {
                    stack.push(entry.path());
                }
            } else if kind.is_file() {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let repos = manifest.join("../../fixtures/repos");
    let mut code = String::from(
        "/// Each embedded example file: (example, path with `/`, content).\n\
         pub(crate) static EMBEDDED: &[(&str, &str, &[u8])] = &[\n",
    );
    for example in EXAMPLES {
        let root = repos.join(example);
        for file in files(&root) {
            let relative = file
                .strip_prefix(&root)
                .expect("below the example's root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let absolute = file.canonicalize().expect("an existing file");
            writeln!(
                code,
                "    ({example:?}, {relative:?}, include_bytes!({:?})),",
                absolute.display().to_string()
            )
            .expect("write to a string");
            println!("cargo:rerun-if-changed={}", file.display());
        }
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("examples.rs");
    std::fs::write(&out, code).expect("write examples.rs");
}
