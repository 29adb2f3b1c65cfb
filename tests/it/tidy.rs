//! The repository's own documentation, checked against the code (in the spirit of
//! rust-analyzer's `tidy.rs`):
//!
//! * every module of every crate, and every module of the integration test binary, is named in
//!   the codemap (docs/architecture.md);
//! * every module path and source file the codemap names exists;
//! * every contract section a comment or a docs page cites (`docs/contract.md#anchor`) is an
//!   anchor of docs/contract.md, and nothing cites the contract by section number;
//! * every `cargo test --test it FILTER` a docs page gives a reader selects at least one test
//!   of the integration binary (libtest matches a filter anywhere in `module::test_name`), and
//!   names no test binary but `it`;
//! * no two public types of the product crates share a name, so a name says which one it is
//!   (the fake GitLab and the test support mirror GitLab's names and are left out);
//! * no two modules of the product crates share a name, but for the few names that mean one
//!   thing wherever they appear (a command's own name, `SHARED_MODULE_NAMES`);
//! * no public function is a variant of an entry named for how it reports or locks
//!   (`_observed`, `_shared`): a use case has a plain function and one `_with` form.
//! * no two modules of a product crate import each other, directly or around a circle
//!   (`use crate::…`, `crate::…` and `super::…` paths outside tests), but the few circles of
//!   `ALLOWED_CIRCLES`, each with its reason;
//! * no field or parameter named `sha`/`…_sha` in the core, the ports or the engine holds text
//!   (`String`, `&str`) outside tests, but the wire forms of `TEXT_SHAS`.
//!
//! Each check is a function over (file list, doc text), so the unit tests below can plant a
//! drift and show the check catches it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The folders whose `.rs` files are modules the codemap must name.
const MODULE_ROOTS: &[&str] = &[
    "src",
    "crates/assent-core/src",
    "crates/assent-semdiff/src",
    "crates/assent-forge/src",
    "crates/assent-engine/src",
    "crates/assent-gitlab/src",
    "tests/fake_gitlab/src",
    "tests/support/src",
    "tests/it",
];

/// The prefixes a codemap path may start with, and the source folder each one names.
const PATH_PREFIXES: &[(&str, &str)] = &[
    ("assent_test_support::", "tests/support/src"),
    ("fake_gitlab::", "tests/fake_gitlab/src"),
    ("semdiff::", "crates/assent-semdiff/src"),
    ("core::semantic_diff::", "crates/assent-semdiff/src"),
    ("core::", "crates/assent-core/src"),
    ("forge::", "crates/assent-forge/src"),
    ("engine::", "crates/assent-engine/src"),
    ("gitlab::", "crates/assent-gitlab/src"),
];

/// The product crates' sources, where a public type's name must be unique.
const PRODUCT_ROOTS: &[&str] = &[
    "src",
    "crates/assent-core/src",
    "crates/assent-semdiff/src",
    "crates/assent-forge/src",
    "crates/assent-engine/src",
    "crates/assent-gitlab/src",
];

/// The folders whose files may cite the contract.
const CITING_ROOTS: &[&str] = &[
    "src",
    "crates",
    "tests",
    "docs",
    "benches",
    "ci-templates",
    "fixtures",
    "README.md",
];

/// The product crates that know no command (the core, the semantic diff, the ports), whose
/// module names are never shared.
const COMMANDLESS_ROOTS: &[&str] = &[
    "crates/assent-core/src",
    "crates/assent-semdiff/src",
    "crates/assent-forge/src",
];

/// Module names more than one product module carries, each with one meaning (the naming rule
/// in docs/architecture.md): a command's name, kept by its `commands` module, its use case in
/// the engine and its parts in the application (`run`, `sweep`, `serve`, `doctor`, `replay`);
/// `report`, what a command found, typed and rendered (`doctor::report`,
/// `commands::test::report`); `endpoints`, `Endpoint` impls (`gitlab::endpoints`,
/// `gitlab::doctor::endpoints`).
const SHARED_MODULE_NAMES: &[&str] = &[
    "doctor",
    "endpoints",
    "replay",
    "report",
    "run",
    "serve",
    "sweep",
];

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files_under(root: &Path, rel: &str, out: &mut Vec<String>) {
    let path = root.join(rel);
    if path.is_file() {
        out.push(rel.to_string());
        return;
    }
    let Ok(entries) = std::fs::read_dir(&path) else {
        return;
    };
    let mut names: Vec<String> = entries
        .map(|e| e.expect("a readable directory entry").file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        if name == "target" || name == "snapshots" || name.starts_with('.') {
            continue;
        }
        files_under(root, &format!("{rel}/{name}"), out);
    }
}

/// A module's path inside its crate, from its file's path under the crate's `src/`
/// (`semantic_diff/yaml/events.rs` → `semantic_diff::yaml::events`); `None` for a crate
/// root, a binary and a unit-test module (`tests`, `*_tests`), which the codemap does not list.
fn module_path(relative: &str) -> Option<String> {
    let stem = relative.strip_suffix(".rs")?;
    let stem = stem.strip_suffix("/mod").unwrap_or(stem);
    if matches!(stem, "lib" | "main") || stem.starts_with("bin/") {
        return None;
    }
    let leaf = stem.rsplit('/').next()?;
    if leaf == "tests" || leaf.ends_with("_tests") {
        return None;
    }
    Some(stem.replace('/', "::"))
}

/// The crate alias the codemap writes before a root's module paths (`gitlab::transport`).
fn alias_of(root: &str) -> Option<&'static str> {
    PATH_PREFIXES
        .iter()
        .find(|(_, dir)| *dir == root)
        .map(|(prefix, _)| *prefix)
}

/// Whether the codemap names a module. Any module: its file, or its path in backticks (from
/// the crate root, optionally after the crate's alias: `gitlab::transport`). A top-level
/// module: its name in backticks. A nested module: its name in backticks in its parent's row
/// (`doctor`'s row names `probe`), or `parent::leaf`.
fn is_named(doc: &str, root: &str, module: &str) -> bool {
    let file = format!("{root}/{}.rs", module.replace("::", "/"));
    let short_file = format!("src/{}.rs", module.replace("::", "/"));
    let full = |path: &str| {
        doc.contains(&format!("`{path}`"))
            || doc.contains(&format!("`{path}::"))
            || alias_of(root).is_some_and(|alias| {
                doc.contains(&format!("`{alias}{path}`"))
                    || doc.contains(&format!("`{alias}{path}::"))
            })
    };
    if doc.contains(&file) || doc.contains(&short_file) || full(module) {
        return true;
    }
    let Some((parent, leaf)) = module.rsplit_once("::") else {
        return false;
    };
    let parent_leaf = parent.rsplit("::").next().unwrap_or(parent);
    if doc.contains(&format!("`{parent_leaf}::{leaf}`"))
        || doc.contains(&format!("`{parent_leaf}::{leaf}::"))
    {
        return true;
    }
    let row_heads = [
        format!("| `{parent}`"),
        format!("| `{parent}` ("),
        alias_of(root).map_or_else(String::new, |alias| format!("| `{alias}{parent}`")),
    ];
    doc.lines()
        .filter(|line| {
            row_heads
                .iter()
                .any(|head| !head.is_empty() && line.starts_with(head.as_str()))
        })
        .any(|row| row.contains(&format!("`{leaf}`")) || row.contains(&format!("`{leaf}::")))
}

/// Check (a): the modules of `files` (paths from the workspace root) that `doc` does not name.
fn modules_missing_from_codemap(files: &[String], doc: &str) -> Vec<String> {
    let mut missing = Vec::new();
    for file in files {
        for root in MODULE_ROOTS {
            let Some(relative) = file.strip_prefix(&format!("{root}/")) else {
                continue;
            };
            if let Some(module) = module_path(relative)
                && !is_named(doc, root, &module)
            {
                missing.push(format!("{root}: {module}"));
            }
        }
    }
    missing
}

/// Every backticked text of `doc`.
fn code_spans(doc: &str) -> impl Iterator<Item = &str> {
    doc.split('`').skip(1).step_by(2)
}

/// Check (b): the module paths (`gitlab::transport`, `assent_test_support::fuzz`) and source
/// files (`tests/it/serve.rs`) that `doc` names and `files` lacks. A path's last segment may be
/// an item of the module before it (`examination::examine_iid`) when that module exists.
fn codemap_names_that_do_not_exist(files: &[String], doc: &str) -> Vec<String> {
    let known: BTreeSet<&str> = files.iter().map(String::as_str).collect();
    let module_exists = |dir: &str, segments: &[&str]| {
        let base = format!("{dir}/{}", segments.join("/"));
        segments.is_empty()
            || known.contains(format!("{base}.rs").as_str())
            || known.contains(format!("{base}/mod.rs").as_str())
    };
    let mut missing = BTreeSet::new();
    for span in code_spans(doc) {
        let span = span.trim();
        if (span.ends_with(".rs") && !span.contains(' '))
            && (span.starts_with("src/")
                || span.starts_with("tests/")
                || span.starts_with("crates/")
                || span.starts_with("benches/"))
        {
            if !known.contains(span) {
                missing.insert(span.to_string());
            }
            continue;
        }
        for (prefix, dir) in PATH_PREFIXES {
            let Some(rest) = span.strip_prefix(prefix) else {
                continue;
            };
            let segments: Vec<&str> = rest.split("::").collect();
            let all_lower = segments.iter().all(|s| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
            });
            if !all_lower {
                continue;
            }
            let whole = module_exists(dir, &segments);
            let item_of_module = segments.len() > 1 && {
                let (module, _item) = segments.split_at(segments.len() - 1);
                module_exists(dir, module)
            };
            if !whole && !item_of_module {
                missing.insert(span.to_string());
            }
        }
    }
    missing.into_iter().collect()
}

/// The anchors (`<a id="…">`) of the contract page.
fn contract_anchors(contract: &str) -> BTreeSet<String> {
    contract
        .split("<a id=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_string)
        .collect()
}

/// Check (c): each `(file, text)` that cites a contract anchor the page lacks, or cites the
/// contract by section number.
fn bad_contract_citations(files: &[(String, String)], contract: &str) -> Vec<String> {
    let anchors = contract_anchors(contract);
    let section_sign = '\u{a7}';
    let by_number = [format!("SPEC {section_sign}"), ["seed", " 00"].concat()];
    let mut bad = Vec::new();
    for (path, text) in files {
        // The page itself, and this file's own examples of what the check refuses.
        if path == "docs/contract.md" || path == "tests/it/tidy.rs" {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            for needle in &by_number {
                if line.contains(needle.as_str()) {
                    bad.push(format!("{path}:{}: cites {needle:?}", n + 1));
                }
            }
            for cited in line.split("contract.md#").skip(1) {
                let anchor: String = cited
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                    .collect();
                if !anchors.contains(&anchor) {
                    bad.push(format!(
                        "{path}:{}: no anchor {anchor:?} in docs/contract.md",
                        n + 1
                    ));
                }
            }
        }
    }
    bad
}

/// Every test of the integration binary (`tests/it/`), as libtest names it: its module path
/// and its name (`run_cli::publishing::first_run_publishes_…`). `files` are `(path, text)`
/// under `tests/it`.
fn integration_tests(files: &[(String, String)]) -> Vec<String> {
    let mut tests = Vec::new();
    for (path, text) in files {
        let Some(relative) = path.strip_prefix("tests/it/") else {
            continue;
        };
        let Some(stem) = relative.strip_suffix(".rs") else {
            continue;
        };
        let stem = stem.strip_suffix("/mod").unwrap_or(stem);
        let module = if stem == "main" {
            String::new()
        } else {
            format!("{}::", stem.replace('/', "::"))
        };
        let mut in_test = false;
        for line in text.lines().map(str::trim_start) {
            if line.starts_with("#[test]") {
                in_test = true;
            } else if in_test && !line.starts_with("#[") && !line.starts_with("//") {
                let name = line
                    .strip_prefix("fn ")
                    .or_else(|| line.strip_prefix("async fn "))
                    .and_then(|rest| rest.split(['(', '<']).next());
                if let Some(name) = name {
                    tests.push(format!("{module}{name}"));
                }
                in_test = false;
            }
        }
    }
    tests
}

/// Check (d): each `cargo test --test it …` a page gives whose filter selects no test of
/// `tests`, or that names another test binary (`--test other`).
fn dead_test_filters(pages: &[(String, String)], tests: &[String]) -> Vec<String> {
    let mut dead = Vec::new();
    for (path, text) in pages {
        for (n, line) in text.lines().enumerate() {
            for command in line.split("cargo test ").skip(1) {
                let command = command.split(['`', '|']).next().unwrap_or("");
                let at = format!("{path}:{}", n + 1);
                let parsed = TestCommand::parse(command);
                if parsed.filters_before_separator > 1 {
                    dead.push(format!(
                        "{at}: cargo takes one test filter before `--`: `cargo test {}` needs `--` before its filters",
                        command.trim()
                    ));
                }
                // Another package's tests (`-p fake-gitlab --test fake`) are not this binary's.
                if parsed.other_package {
                    continue;
                }
                for target in &parsed.targets {
                    if *target != "it" {
                        dead.push(format!(
                            "{at}: `--test {target}`: the integration tests are one binary, `it`"
                        ));
                    }
                }
                if !parsed.targets.contains(&"it") {
                    continue;
                }
                for filter in parsed.filters {
                    if !tests.iter().any(|t| t.contains(filter)) {
                        dead.push(format!(
                            "{at}: `cargo test --test it {filter}` selects no test"
                        ));
                    }
                }
            }
        }
    }
    dead
}

/// What one `cargo test …` a page gives asks for.
struct TestCommand<'a> {
    /// `-p`/`--package`: another package's tests.
    other_package: bool,
    /// The `--test` targets.
    targets: Vec<&'a str>,
    /// The test-name filters, before and after `--`.
    filters: Vec<&'a str>,
    /// How many filters come before `--` (cargo refuses more than one).
    filters_before_separator: usize,
}

impl<'a> TestCommand<'a> {
    /// Reads the words after `cargo test `, up to the end of the command: a shell comment,
    /// or prose going on (a `…` shorthand, punctuation).
    fn parse(command: &'a str) -> Self {
        let mut parsed = TestCommand {
            other_package: false,
            targets: Vec::new(),
            filters: Vec::new(),
            filters_before_separator: 0,
        };
        let mut after_separator = false;
        let mut words = command.split_whitespace();
        while let Some(word) = words.next() {
            match word {
                "--test" => parsed.targets.extend(words.next()),
                "-p" | "--package" => {
                    parsed.other_package = true;
                    words.next();
                }
                "--" => after_separator = true,
                "--bench" | "--profile" | "--features" => {
                    words.next();
                }
                _ if word.starts_with('-') => {}
                _ if word.starts_with('#') || word.contains(['…', ',', '(', ')', '.']) => break,
                _ => {
                    parsed.filters_before_separator += usize::from(!after_separator);
                    parsed.filters.push(word);
                }
            }
        }
        parsed
    }
}

/// `name: file, file` for each public struct, enum, trait or type alias name declared in
/// more than one place.
fn public_type_names_used_twice(files: &[(String, String)]) -> Vec<String> {
    let mut declared: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for (path, text) in files {
        for line in text.lines() {
            let Some(rest) = line.trim_start().strip_prefix("pub ") else {
                continue;
            };
            let Some(rest) = ["struct ", "enum ", "trait ", "type "]
                .iter()
                .find_map(|kind| rest.strip_prefix(kind))
            else {
                continue;
            };
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if end > 0 {
                declared.entry(&rest[..end]).or_default().push(path);
            }
        }
    }
    declared
        .into_iter()
        .filter(|(_, paths)| paths.len() > 1)
        .map(|(name, paths)| format!("{name}: {}", paths.join(", ")))
        .collect()
}

/// `name: module, module` for each module name (the last segment of its path) that more than
/// one product module carries, outside `SHARED_MODULE_NAMES`; a shared name is a command's,
/// so it never names a module of the crates that know no command (`COMMANDLESS_ROOTS`).
/// `files` are paths from the workspace root.
fn module_names_used_twice(files: &[String]) -> Vec<String> {
    let mut carriers: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for file in files {
        for root in PRODUCT_ROOTS {
            let Some(module) = file.strip_prefix(&format!("{root}/")).and_then(module_path) else {
                continue;
            };
            let leaf = module.rsplit("::").next().unwrap_or(&module).to_string();
            carriers
                .entry(leaf)
                .or_default()
                .push(format!("{root}: {module}"));
        }
    }
    carriers
        .into_iter()
        .filter(|(name, modules)| {
            modules.len() > 1
                && (!SHARED_MODULE_NAMES.contains(&name.as_str())
                    || modules.iter().any(|module| {
                        COMMANDLESS_ROOTS
                            .iter()
                            .any(|root| module.starts_with(&format!("{root}: ")))
                    }))
        })
        .map(|(name, modules)| format!("{name}: {}", modules.join(", ")))
        .collect()
}

/// `file: name` for each public function named as a variant of another entry by how it
/// reports or locks (`run_review_observed`, `sweep_shared`).
fn entry_variants(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        for line in text.lines() {
            let Some(rest) = line.trim_start().strip_prefix("pub fn ") else {
                continue;
            };
            let name = rest.split(['(', '<']).next().unwrap_or(rest);
            if name.ends_with("_observed") || name.ends_with("_shared") {
                found.push(format!("{path}: {name}"));
            }
        }
    }
    found
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `.rs` file under `roots` with its text, paths relative to `root`.
fn rust_sources(root: &Path, roots: &[&str]) -> Vec<(String, String)> {
    all_files(root, roots)
        .into_iter()
        .filter(|path| path.ends_with(".rs"))
        .map(|path| {
            let text = read(&root.join(&path));
            (path, text)
        })
        .collect()
}

fn all_files(root: &Path, roots: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    for rel in roots {
        files_under(root, rel, &mut files);
    }
    files
}

#[test]
fn every_module_is_in_the_codemap() {
    let root = workspace_root();
    let doc = read(&root.join("docs/architecture.md"));
    let missing = modules_missing_from_codemap(&all_files(&root, MODULE_ROOTS), &doc);
    assert!(
        missing.is_empty(),
        "modules docs/architecture.md does not name (add a row or a mention):\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_path_the_codemap_names_exists() {
    let root = workspace_root();
    let doc = read(&root.join("docs/architecture.md"));
    let files = all_files(&root, &["src", "crates", "tests", "benches"]);
    let missing = codemap_names_that_do_not_exist(&files, &doc);
    assert!(
        missing.is_empty(),
        "docs/architecture.md names what does not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn no_two_public_types_share_a_name() {
    let root = workspace_root();
    let files = rust_sources(&root, PRODUCT_ROOTS);
    assert!(files.len() > 50, "the walk found the product's sources");
    let twice = public_type_names_used_twice(&files);
    assert!(
        twice.is_empty(),
        "public types sharing a name (rename one so each says what it is):\n{}",
        twice.join("\n")
    );
}

#[test]
fn every_module_name_means_one_thing() {
    let root = workspace_root();
    let files = all_files(&root, PRODUCT_ROOTS);
    assert!(files.len() > 50, "the walk found the product's sources");
    let twice = module_names_used_twice(&files);
    assert!(
        twice.is_empty(),
        "modules sharing a name (rename the vaguer one for what it holds, \
         docs/architecture.md \"Naming\"):\n{}",
        twice.join("\n")
    );
}

#[test]
fn a_module_name_used_twice_is_found() {
    let files = [
        "crates/assent-engine/src/sweep.rs",
        "src/commands/sweep.rs",
        "crates/assent-core/src/assent.rs",
        "src/assent/mod.rs",
        "crates/assent-core/src/tests.rs",
        "src/tests.rs",
        "crates/assent-gitlab/src/lib.rs",
        "src/lib.rs",
    ]
    .map(String::from);
    assert_eq!(
        module_names_used_twice(&files),
        ["assent: crates/assent-core/src: assent, src: assent"]
    );
    let core_sweep = [
        "crates/assent-core/src/sweep.rs",
        "crates/assent-engine/src/sweep.rs",
    ]
    .map(String::from);
    assert_eq!(
        module_names_used_twice(&core_sweep),
        ["sweep: crates/assent-core/src: sweep, crates/assent-engine/src: sweep"]
    );
}

#[test]
fn a_use_case_has_one_plain_entry_and_one_with_form() {
    let root = workspace_root();
    let files = rust_sources(&root, PRODUCT_ROOTS);
    let variants = entry_variants(&files);
    assert!(
        variants.is_empty(),
        "entry variants (fold them into the plain function or its one `_with` form):\n{}",
        variants.join("\n")
    );
}

#[test]
fn an_entry_variant_is_found() {
    let files = [(
        "crates/assent-engine/src/sweep/pass.rs",
        "pub fn sweep(a: u8) {}\npub fn sweep_with(a: u8) {}\npub fn sweep_observed(a: u8) {}\n\
         pub fn sweep_shared<T>(a: T) {}\nfn run_observed() {}\n",
    )]
    .map(|(p, t)| (p.to_string(), t.to_string()));
    assert_eq!(
        entry_variants(&files),
        [
            "crates/assent-engine/src/sweep/pass.rs: sweep_observed",
            "crates/assent-engine/src/sweep/pass.rs: sweep_shared"
        ]
    );
}

#[test]
fn a_public_type_name_declared_twice_is_found() {
    let files = [
        (
            "src/a.rs",
            "pub struct Verdict {\n}\npub(crate) struct Hidden;\n",
        ),
        (
            "src/b.rs",
            "    pub enum Verdict {}\npub type Alias = u8;\n",
        ),
        (
            "src/c.rs",
            "pub trait Port {}\n// pub struct Verdict in a comment\n",
        ),
    ]
    .map(|(p, t)| (p.to_string(), t.to_string()));
    assert_eq!(
        public_type_names_used_twice(&files),
        ["Verdict: src/a.rs, src/b.rs"]
    );
    assert!(public_type_names_used_twice(&files[1..]).is_empty());
}

#[test]
fn every_contract_citation_has_its_anchor() {
    let root = workspace_root();
    let contract = read(&root.join("docs/contract.md"));
    let files: Vec<(String, String)> = all_files(&root, CITING_ROOTS)
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(root.join(&path)).ok()?;
            Some((path, text))
        })
        .collect();
    assert!(files.len() > 100, "the walk found the repository's files");
    let bad = bad_contract_citations(&files, &contract);
    assert!(
        bad.is_empty(),
        "bad contract citations:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_test_filter_the_docs_give_selects_a_test() {
    let root = workspace_root();
    let texts = |roots: &[&str]| -> Vec<(String, String)> {
        all_files(&root, roots)
            .into_iter()
            .filter(|path| path.ends_with(".md") || path.ends_with(".rs"))
            .map(|path| {
                let text = read(&root.join(&path));
                (path, text)
            })
            .collect()
    };
    let tests = integration_tests(&texts(&["tests/it"]));
    assert!(
        tests.len() > 300,
        "the walk found the tests: {}",
        tests.len()
    );
    let pages: Vec<(String, String)> = texts(&["README.md", "docs", "ci-templates", "tests/it"])
        .into_iter()
        .filter(|(path, _)| path.ends_with(".md") || path == "tests/it/main.rs")
        .collect();
    let dead = dead_test_filters(&pages, &tests);
    assert!(
        dead.is_empty(),
        "test commands in the docs that run nothing:\n{}",
        dead.join("\n")
    );
}

// ---- the checks catch a planted drift ----------------------------------------------------------

fn paths(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_module_missing_from_the_codemap_is_found() {
    let files = paths(&[
        "crates/assent-core/src/lib.rs",
        "crates/assent-core/src/marker.rs",
        "crates/assent-core/src/planted.rs",
        "crates/assent-core/src/policy/mod.rs",
        "crates/assent-core/src/policy/tests.rs",
        "tests/fake_gitlab/src/hooks.rs",
        "src/bin/helper.rs",
    ]);
    let doc = "| `marker` | … |\n| `policy` | … |\n`tests/fake_gitlab/src/hooks.rs`";
    assert_eq!(
        modules_missing_from_codemap(&files, doc),
        ["crates/assent-core/src: planted"]
    );
    let doc_with_it = format!("{doc}\n| `planted` | … |");
    assert!(modules_missing_from_codemap(&files, &doc_with_it).is_empty());

    // A nested module counts only in its parent's row (or by its path).
    let nested = paths(&[
        "src/doctor/mod.rs",
        "src/doctor/endpoints.rs",
        "src/doctor/probe.rs",
    ]);
    let doc = "| `doctor` | `probe` sends the requests |\n| `gitlab::endpoints` | routes |";
    assert_eq!(
        modules_missing_from_codemap(&nested, doc),
        ["src: doctor::endpoints"]
    );
}

#[test]
fn a_codemap_path_that_does_not_exist_is_found() {
    let files = paths(&[
        "tests/support/src/run.rs",
        "tests/fake_gitlab/src/unified_diff.rs",
        "src/examination.rs",
        "tests/it/serve.rs",
    ]);
    let doc = "`assent_test_support::unified_diff`, `fake_gitlab::unified_diff`, \
               `assent_test_support::run`, `tests/it/serve.rs`, `tests/it/gone.rs`, \
               `gitlab::transport`, `core::sweep_classification::classify`";
    assert_eq!(
        codemap_names_that_do_not_exist(&files, doc),
        [
            "assent_test_support::unified_diff",
            "core::sweep_classification::classify",
            "gitlab::transport",
            "tests/it/gone.rs"
        ]
    );
}

#[test]
fn a_citation_of_a_missing_anchor_or_a_section_number_is_found() {
    let contract = "<a id=\"receipt\"></a>\n## Receipt\n";
    let sign = '\u{a7}';
    let files = vec![
        (
            "src/a.rs".to_string(),
            "// the receipt (docs/contract.md#receipt)\n".to_string(),
        ),
        (
            "src/b.rs".to_string(),
            "// docs/contract.md#recipt\n".to_string(),
        ),
        ("docs/c.md".to_string(), format!("see SPEC {sign}6\n")),
    ];
    assert_eq!(
        bad_contract_citations(&files, contract),
        [
            "src/b.rs:1: no anchor \"recipt\" in docs/contract.md",
            &format!("docs/c.md:1: cites \"SPEC {sign}\""),
        ]
    );
}

#[test]
fn a_test_filter_that_selects_nothing_is_found() {
    let files = vec![(
        "tests/it/run_cli/approval.rs".to_string(),
        "#[test]\n#[ignore = \"slow\"]\nfn approves_at_the_head() {}\nfn helper() {}\n".to_string(),
    )];
    let tests = integration_tests(&files);
    assert_eq!(tests, ["run_cli::approval::approves_at_the_head"]);
    let pages = vec![(
        "docs/a.md".to_string(),
        "`cargo test --test it run_cli::approval`, `cargo test --test it -- run_cli::approves x_cli` \
         and `cargo test --test it fixtures:: --test http_fixtures`; `cargo test -p fake-gitlab --test fake x` \
         and `cargo test --test it run_cli::approval   # a comment`, \
         `cargo test --test it run_cli::approval run_cli::approves_at`\n"
            .to_string(),
    )];
    assert_eq!(
        dead_test_filters(&pages, &tests),
        [
            "docs/a.md:1: `cargo test --test it run_cli::approves` selects no test",
            "docs/a.md:1: `cargo test --test it x_cli` selects no test",
            "docs/a.md:1: `--test http_fixtures`: the integration tests are one binary, `it`",
            "docs/a.md:1: `cargo test --test it fixtures::` selects no test",
            "docs/a.md:1: cargo takes one test filter before `--`: `cargo test --test it run_cli::approval run_cli::approves_at` needs `--` before its filters",
            "docs/a.md:1: `cargo test --test it run_cli::approves_at` selects no test",
        ]
    );
}

// ---- no import circles between a crate's modules -----------------------------------------------

/// The circles between modules that stay, each as `root: module, module, …` (the modules of
/// one strongly connected part of the crate's import graph, sorted) with why.
const ALLOWED_CIRCLES: &[(&str, &str)] = &[];

/// A module's path inside its crate for the import graph: like [`module_path`], but the crate
/// root is `""` and a unit-test module is `None`; a binary beside a library (`main.rs`,
/// `bin/`) is another crate and left out.
fn graph_module(relative: &str, has_lib: bool) -> Option<String> {
    let stem = relative.strip_suffix(".rs")?;
    let stem = stem.strip_suffix("/mod").unwrap_or(stem);
    if stem == "lib" || (stem == "main" && !has_lib) {
        return Some(String::new());
    }
    if stem == "main" || stem.starts_with("bin/") {
        return None;
    }
    module_path(relative)
}

/// The code of a file without its comments (a doc link is resolved by rustdoc, it is no
/// dependency of the code) and with the insides of its string and character literals blanked
/// (a `{` or a `crate::` in a string is neither a brace nor a path).
fn without_comments_and_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut code = String::with_capacity(text.len());
    let mut at = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while at < chars.len() {
        let c = chars[at];
        let next = chars.get(at + 1).copied();
        if c == '/' && next == Some('/') {
            while at < chars.len() && chars[at] != '\n' {
                at += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while at < chars.len() {
                if chars[at] == '/' && chars.get(at + 1) == Some(&'*') {
                    depth += 1;
                    at += 2;
                } else if chars[at] == '*' && chars.get(at + 1) == Some(&'/') {
                    depth -= 1;
                    at += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    at += 1;
                }
            }
            code.push(' ');
        } else if c == 'r'
            && (at == 0 || !ident(chars[at - 1]) || chars[at - 1] == 'b')
            && matches!(next, Some('"' | '#'))
            && chars[at + 1..].iter().find(|c| **c != '#') == Some(&'"')
        {
            let hashes = chars[at + 1..].iter().take_while(|c| **c == '#').count();
            at += 2 + hashes;
            let closing: Vec<char> = std::iter::once('"')
                .chain((0..hashes).map(|_| '#'))
                .collect();
            while at < chars.len() && !chars[at..].starts_with(&closing) {
                at += 1;
            }
            at += closing.len();
            code.push_str("\"\"");
        } else if c == '"' {
            at += 1;
            while at < chars.len() && chars[at] != '"' {
                at += if chars[at] == '\\' { 2 } else { 1 };
            }
            at += 1;
            code.push_str("\"\"");
        } else if c == '\'' && (next == Some('\\') || chars.get(at + 2) == Some(&'\'')) {
            // A character literal (`'{'`, `'\''`), not a lifetime (`'a`).
            at += 1;
            while at < chars.len() && chars[at] != '\'' {
                at += if chars[at] == '\\' { 2 } else { 1 };
            }
            at += 1;
            code.push_str("' '");
        } else {
            code.push(c);
            at += 1;
        }
    }
    code
}

/// The code the compiler sees outside tests ([`without_comments_and_literals`]), each
/// `#[cfg(test)]` item cut out to its closing brace or semicolon.
fn non_test_code(text: &str) -> String {
    let code = without_comments_and_literals(text);
    let mut kept = String::with_capacity(code.len());
    let mut rest = code.as_str();
    while let Some(start) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..start]);
        let item = &rest[start..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (at, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = at + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = at + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    kept.push_str(rest);
    kept
}

/// The paths a `crate::`/`super::` path names from `at` (just after its `::`): one for a
/// plain path, one per leaf of a `{…}` group; each as segments after `prefix`.
fn paths_from(text: &[u8], mut at: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut segments = prefix.to_vec();
    loop {
        while at < text.len() && text[at].is_ascii_whitespace() {
            at += 1;
        }
        if text.get(at) == Some(&b'{') {
            at += 1;
            loop {
                while at < text.len() && (text[at].is_ascii_whitespace() || text[at] == b',') {
                    at += 1;
                }
                if at >= text.len() || text[at] == b'}' {
                    return at + 1;
                }
                at = paths_from(text, at, &segments, out);
            }
        }
        let start = at;
        while at < text.len() && (text[at].is_ascii_alphanumeric() || text[at] == b'_') {
            at += 1;
        }
        if at == start {
            if text.get(at) == Some(&b'*') {
                at += 1;
            }
            out.push(segments);
            return at;
        }
        let word = String::from_utf8_lossy(&text[start..at]).into_owned();
        if word != "self" {
            segments.push(word);
        }
        if text[at..].starts_with(b"::") {
            at += 2;
            continue;
        }
        out.push(segments);
        // `… as Alias`: the alias names nothing of the crate.
        let rest = &text[at..];
        let spaces = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
        if rest[spaces..].starts_with(b"as ") {
            at += spaces + 3;
            while at < text.len() && text[at].is_ascii_whitespace() {
                at += 1;
            }
            while at < text.len() && (text[at].is_ascii_alphanumeric() || text[at] == b'_') {
                at += 1;
            }
        }
        return at;
    }
}

/// The import graph of one crate's modules: `module → modules it names` through `crate::`
/// and `super::` paths in non-test code. A path names the longest module it starts with
/// (`crate::marker::GateLine` → `marker`). An edge between a module and its own ancestor or
/// descendant does not count: a parent declares its children (`mod x;`) and so always
/// depends on them, and a child reaching its parent's items is how Rust's privacy is meant
/// to be used; the circles worth closing are between modules that are not nested.
fn import_graph(
    files: &[(String, String)],
) -> std::collections::BTreeMap<String, BTreeSet<String>> {
    let has_lib = files.iter().any(|(path, _)| path == "lib.rs");
    let modules: std::collections::BTreeMap<String, &str> = files
        .iter()
        .filter_map(|(path, text)| Some((graph_module(path, has_lib)?, text.as_str())))
        .collect();
    let nested = |a: &str, b: &str| {
        a.is_empty()
            || b.is_empty()
            || a.starts_with(&format!("{b}::"))
            || b.starts_with(&format!("{a}::"))
    };
    // Each module's paths, from the crate root, and the names its `use` declarations bring
    // in (a facade's `pub use child::Item`), so a path through a re-export names the module
    // that defines the item.
    let mut named = std::collections::BTreeMap::<&str, Vec<Vec<String>>>::new();
    let mut imported = std::collections::BTreeMap::<(String, String), Vec<String>>::new();
    for (module, text) in &modules {
        let code = non_test_code(text);
        let here: Vec<String> = module
            .split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let (paths, uses) = paths_named(&code, &here);
        for path in uses {
            if let Some(name) = path.last() {
                imported.insert((module.clone(), name.clone()), path);
            }
        }
        named.insert(module, paths);
    }
    let longest_module = |path: &[String]| {
        (0..=path.len())
            .rev()
            .find(|len| modules.contains_key(&path[..*len].join("::")))
            .unwrap_or(0)
    };
    let mut graph = std::collections::BTreeMap::<String, BTreeSet<String>>::new();
    for (module, paths) in named {
        for mut path in paths {
            let mut len = longest_module(&path);
            // Follow re-exports (a few hops at most: a facade of a facade).
            for _ in 0..4 {
                let key = (
                    path[..len].join("::"),
                    path.get(len).cloned().unwrap_or_default(),
                );
                match imported.get(&key) {
                    Some(source) if *source != path => {
                        path = source.clone();
                        len = longest_module(&path);
                    }
                    _ => break,
                }
            }
            let target = path[..len].join("::");
            if target != module && !nested(module, &target) {
                graph.entry(module.to_string()).or_default().insert(target);
            }
        }
    }
    graph
}

/// The paths `code` (of the module at `here`) names, from the crate root: every `crate::…`
/// and `super::…` path, and every `use self::…` or `use child::…`; and apart, the paths of
/// its `use` declarations, whose last segment is a name the module then holds.
fn paths_named(code: &str, here: &[String]) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let bytes = code.as_bytes();
    let word_start = |at: usize| {
        !bytes[..at]
            .last()
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b':')
    };
    let parent = here[..here.len().saturating_sub(1)].to_vec();
    // The base a path starting at `at` is relative to, and where its first segment starts.
    let base_at = |mut at: usize, bare_is_relative: bool| -> Option<(Vec<String>, usize)> {
        let rest = &code[at..];
        let mut base = if rest.starts_with("crate::") {
            at += "crate::".len();
            Vec::new()
        } else if rest.starts_with("self::") {
            at += "self::".len();
            here.to_vec()
        } else if rest.starts_with("super::") {
            parent.clone()
        } else if bare_is_relative {
            here.to_vec()
        } else {
            return None;
        };
        while code[at..].starts_with("super::") {
            base.pop();
            at += "super::".len();
        }
        Some((base, at))
    };
    let mut paths = Vec::new();
    for keyword in ["crate::", "super::"] {
        for (found, _) in code.match_indices(keyword) {
            if word_start(found) && !code[..found].ends_with("in ") {
                let (base, at) = base_at(found, false).expect("a crate or super path");
                paths_from(bytes, at, &base, &mut paths);
            }
        }
    }
    let mut uses = Vec::new();
    for (found, _) in code.match_indices("use ") {
        if word_start(found) {
            let start = found + "use ".len();
            let (base, at) = base_at(start, true).expect("a bare path is relative");
            let mut declared = Vec::new();
            paths_from(bytes, at, &base, &mut declared);
            if !code[start..].starts_with("crate::") && !code[start..].starts_with("super::") {
                paths.extend(declared.iter().cloned());
            }
            uses.extend(declared);
        }
    }
    (paths, uses)
}

/// The circles of a graph: each strongly connected part of more than one module, sorted.
fn circles(graph: &std::collections::BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Tarjan<'g> {
        graph: &'g std::collections::BTreeMap<String, BTreeSet<String>>,
        index: std::collections::HashMap<&'g str, (usize, usize)>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, node: &'g str) {
            let order = self.index.len();
            self.index.insert(node, (order, order));
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.graph.get(node).into_iter().flatten() {
                let next = next.as_str();
                let low = if let Some(&(next_order, _)) = self.index.get(next) {
                    if !self.on_stack.contains(next) {
                        continue;
                    }
                    next_order
                } else {
                    self.visit(next);
                    self.index[next].1
                };
                let entry = self.index.get_mut(node).expect("visited");
                entry.1 = entry.1.min(low);
            }
            let (order, low) = self.index[node];
            if order == low {
                let mut part = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    part.push(member.to_string());
                    if member == node {
                        break;
                    }
                }
                if part.len() > 1 {
                    part.sort();
                    self.found.push(part);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: Default::default(),
        stack: Vec::new(),
        on_stack: Default::default(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !tarjan.index.contains_key(node.as_str()) {
            tarjan.visit(node);
        }
    }
    tarjan.found.sort();
    tarjan.found
}

/// `root: module, module, …` for each circle of each product crate.
fn import_circles(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for crate_root in PRODUCT_ROOTS {
        let mut files = Vec::new();
        files_under(root, crate_root, &mut files);
        let files: Vec<(String, String)> = files
            .into_iter()
            .filter(|path| path.ends_with(".rs"))
            .map(|path| {
                let text = read(&root.join(&path));
                let relative = path[crate_root.len() + 1..].to_string();
                (relative, text)
            })
            .collect();
        for circle in circles(&import_graph(&files)) {
            found.push(format!("{crate_root}: {}", circle.join(", ")));
        }
    }
    found
}

#[test]
fn no_import_circle_between_modules() {
    let found = import_circles(&workspace_root());
    let allowed: Vec<&str> = ALLOWED_CIRCLES.iter().map(|(circle, _)| *circle).collect();
    let (new, gone) = against_allowlist(&found, &allowed);
    assert!(
        new.is_empty() && gone.is_empty(),
        "import circles between modules (move the shared definition down to its natural home, \
         a small vocabulary module where none fits):\n{}\nallowed circles that are gone (drop \
         them from ALLOWED_CIRCLES):\n{}",
        new.join("\n"),
        gone.join("\n"),
    );
}

/// What `found` holds that `allowed` does not list (new findings), and what `allowed` lists
/// that is no longer found (an allowlist entry to drop).
fn against_allowlist<'a>(found: &'a [String], allowed: &[&'a str]) -> (Vec<&'a str>, Vec<&'a str>) {
    let new = found
        .iter()
        .map(String::as_str)
        .filter(|f| !allowed.contains(f))
        .collect();
    let gone = allowed
        .iter()
        .copied()
        .filter(|a| !found.iter().any(|f| f == a))
        .collect();
    (new, gone)
}

#[test]
fn an_import_circle_is_found() {
    let files = [
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\npub mod d;\n"),
        ("a.rs", "use crate::b::{Thing, other::Deep};\n"),
        (
            "b.rs",
            "use crate::{c::Leaf as L, d::Y};\n/// [`crate::a::Doc`]\n",
        ),
        ("c.rs", "pub struct Leaf;\n"),
        (
            "d/mod.rs",
            "mod inner;\npub use inner::Y;\npub(in crate::a) fn f() {}\n",
        ),
        ("d/inner.rs", "use super::super::a::X;\nuse super::f;\n"),
        ("b_tests.rs", "use crate::a::X;\n"),
    ]
    .map(|(p, t)| (p.to_string(), t.to_string()));
    let graph = import_graph(&files);
    assert_eq!(graph["a"], BTreeSet::from(["b".to_string()]));
    // `d::Y` is `d`'s re-export of `d::inner::Y`: the path names the module defining it.
    assert_eq!(
        graph["b"],
        BTreeSet::from(["c".to_string(), "d::inner".to_string()])
    );
    // `super::f` names the parent: no edge, a child reaching its parent is no circle.
    assert_eq!(graph["d::inner"], BTreeSet::from(["a".to_string()]));
    assert_eq!(
        circles(&graph),
        [["a", "b", "d::inner"].map(String::from).to_vec()]
    );

    // A use inside test code, or in a doc comment, is no edge.
    let mut files = files.to_vec();
    files[5].1 = concat!(
        "#[cfg(test)]\nmod tests {\n    const BRACE: char = '}';\n    const JSON: &str = r#\"}\"#;\n",
        "    use super::super::a::X;\n}\n// crate::a\n/* crate::a */\nconst T: &str = \"crate::a\";\n",
    )
    .into();
    assert!(circles(&import_graph(&files)).is_empty());
}

/// The crates a commit SHA reaches only parsed: below the adapter and the application, every
/// SHA is a `CommitSha` (docs/architecture.md, "Vocabulary notes").
const TYPED_SHA_ROOTS: &[&str] = &[
    "crates/assent-core/src",
    "crates/assent-forge/src",
    "crates/assent-engine/src",
];

/// The SHAs left as text there, each a wire form read through the parser: `file: name`.
const TEXT_SHAS: &[(&str, &str)] = &[
    // The receipt's `pins` as written: a refused run's unknown pin is `""`.
    ("crates/assent-core/src/model.rs", "target_sha"),
    ("crates/assent-core/src/model.rs", "base_sha"),
    // The parser and the display helper themselves.
    ("crates/assent-core/src/commit_sha.rs", "sha"),
];

/// Whether `path` holds only tests (a `#[cfg(test)]` module of its own).
fn is_test_file(path: &str) -> bool {
    path.ends_with("_tests.rs")
        || path.ends_with("/tests.rs")
        || path.ends_with("test_support.rs")
        || path.contains("/tests/")
}

/// `file: name` for every field or parameter named `sha` or `…_sha` typed as text (`String`,
/// `&str`, or an `Option` of one) outside tests.
fn text_shas(files: &[(String, String)]) -> Vec<String> {
    let text = regex::Regex::new(
        r"\b((?:\w+_)?sha)\s*:\s*(?:&(?:'\w+\s+)?str|String|Option<\s*(?:String|&(?:'\w+\s+)?str)\s*>)",
    )
    .expect("a valid pattern");
    let mut found = BTreeSet::new();
    for (path, source) in files {
        if is_test_file(path) {
            continue;
        }
        for capture in text.captures_iter(&non_test_code(source)) {
            found.insert(format!("{path}: {}", &capture[1]));
        }
    }
    found.into_iter().collect()
}

#[test]
fn below_the_edges_a_commit_sha_is_a_commit_sha() {
    let root = workspace_root();
    let files = rust_sources(&root, TYPED_SHA_ROOTS);
    let allowed: Vec<String> = TEXT_SHAS
        .iter()
        .map(|(file, name)| format!("{file}: {name}"))
        .collect();
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    let found = text_shas(&files);
    let (new, gone) = against_allowlist(&found, &allowed);
    assert!(
        new.is_empty() && gone.is_empty(),
        "commit SHAs held as text (take or hold a CommitSha, parsed where the text arrives):\n{}\n\
         text SHAs that are gone (drop them from TEXT_SHAS):\n{}",
        new.join("\n"),
        gone.join("\n"),
    );
}

#[test]
fn a_commit_sha_held_as_text_is_found() {
    let files = [
        (
            "a.rs",
            "pub struct P { pub base_sha: String, pub head_sha: Option<&'a str>, digest_sha256: String }\nfn f(sha: &str) {}\n",
        ),
        ("b.rs", "fn g(sha: &CommitSha, head: &str) {}\n#[cfg(test)]\nmod tests { fn t(sha: &str) {} }\n"),
        ("c_tests.rs", "fn t(sha: &str) {}\n"),
    ]
    .map(|(p, t)| (p.to_string(), t.to_string()));
    assert_eq!(
        text_shas(&files),
        ["a.rs: base_sha", "a.rs: head_sha", "a.rs: sha"]
    );
}
