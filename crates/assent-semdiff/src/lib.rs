//! Semantic diff of governed configuration files (docs/contract.md#desired-state).
//!
//! A governed file (JSON, YAML or TOML, chosen by [`format_for_path`]) is parsed into a
//! [`Node`] tree by [`parse_document`]; two trees are compared by [`diff_documents`] into
//! field-level [`Change`]s addressed by RFC 6901 pointers, whose
//! values are `serde_json::Value`s. Everything here is pure: no I/O, no clock, no environment.
//! [`Node`] rather than `Value` because both sides of a large file are held at once: see
//! `tree.rs` for why it is less than half the size.
//!
//! # Parsing: one value model for three formats
//!
//! All three formats are read under the same rules into the same tree, so the same data gives
//! the same changes whatever its syntax, and every limit is enforced the same way. JSON and
//! TOML go through one `serde` value builder (`build.rs`); YAML is built straight from
//! libyaml's events (`yaml/`), which is faster and smaller than buffering them through
//! `serde_yaml`, and lets YAML-only refusals happen at the offending event.
//!
//! Decisions, each one failing closed (a refused file becomes an `assent/parse-error` block
//! finding upstream, never a silently wrong diff):
//!
//! * **Input.** Bytes must be UTF-8 (the error names the line of the first bad byte); a leading
//!   UTF-8 byte-order mark is skipped, since editors add it and it carries no content.
//! * **Limits** ([`Limits`]): size is checked before any parsing; depth and node count while
//!   building. Depth counts nested containers (a scalar document has depth 0, `{"a":[1]}` has
//!   depth 2). The parsers add their own stack guards on top: `serde_json` refuses 128 nested
//!   containers (so with the default limit JSON stops one level earlier than YAML), the YAML
//!   builder 129, `toml` 81 nested brackets or a key chain of 80 segments (an error `toml` reports
//!   without a position, so it has no line). No document can overflow the stack, whatever
//!   `max_depth` is set to.
//! * **Duplicate keys** are an error in every format (JSON parsers usually keep the last one
//!   silently, which would let a reviewer read one value while a program reads another).
//! * **What other readers read otherwise is refused.** The registry's other readers (PyYAML's
//!   YAML 1.1, Go's yaml.v3 and `encoding/json`, JavaScript) must see the value assent judged,
//!   so every shape on which they disagree with assent is a [`ParseError`] saying what they
//!   would read: plain YAML scalars that YAML 1.1 or yaml.v3 resolve otherwise (`030`, `1:30`,
//!   `1_000`, `yes`, `1e3`, timestamps; `yaml/readers.rs`), an untagged `<<` merge key (never
//!   merged), plain keys whose text is not the one written (`0x10`, `~`), and in every format
//!   keys alike under Unicode case folding or holding an invisible character (`keys.rs`;
//!   values may hold invisible characters: every reader reads them alike), integers a double
//!   cannot hold exactly (JSON and YAML) and JSON's `-0`. `docs/policies.md`, "What assent
//!   refuses to parse, and why", is the table; `tests/it/consumers.rs` holds it to the real
//!   readers.
//! * **Numbers** must be representable in JSON: NaN and infinities are refused; YAML integers
//!   must fit in `i64`/`u64` (TOML's always do), and JSON and YAML integers in a double
//!   exactly (above). JSON floats are read as the nearest double (`serde_json`'s
//!   `float_roundtrip`), as every other reader does. `1` and `1.0` are different values (a
//!   change between them is a `modify`).
//! * **YAML**: one document per file (a stream of several is refused; an empty file is `null`).
//!   Aliases are refused outright — the simplest sound defence against alias bombs ("billion
//!   laughs") and against a value silently changing because its anchor moved; anchors alone are
//!   harmless and allowed. Application tags (`!secret x`, `!reference [..]`) are refused: assent
//!   cannot judge what they mean, and stripping them would let a change of tag pass unseen; so
//!   are tags a `%TAG` directive expands, and standard tags that are not plain data (`!!binary`,
//!   `!!timestamp`, `!!set`, a `!!map` tag on a list). `!!str`, `!!int`, `!!float`, `!!bool`,
//!   `!!null`, `!!seq` and `!!map` on their own kind resolve as usual. Plain scalars resolve as
//!   `serde_yaml` 0.9 resolved them (`yaml/scalar.rs` lists the rules), where the other
//!   readers agree (above). Scalar keys become
//!   their string form (`1: a` is key `"1"`, `true: b` key `"true"`, `null: c` key `"null"`);
//!   two keys with the same string form are duplicates. Lists or maps as keys are refused.
//! * **TOML** datetimes become their RFC 3339 strings.
//! * **Keys a parser library reserves for itself** are data. `toml` hands a datetime over as a
//!   one-entry map keyed `$__toml_private_datetime`, and a value's span under
//!   `$__serde_spanned_private_*` fields; a table that has such a key written in it is still
//!   the table, with all its keys (`build.rs` tells them apart by whether the value comes with
//!   a span), as it is to Python's `tomllib`. `serde_json`'s `$serde_json::private::*` keys
//!   are only special with features this build does not enable, and the YAML builder gives no
//!   key a meaning beyond YAML's own `<<` (refused, above).
//! * **Lines are git's**: a value's line counts `\n` alone, as git and GitLab's diff positions
//!   do, whatever else the file holds. libyaml also starts a line at a lone CR, U+0085, U+2028
//!   and U+2029; where a YAML file holds one, lines are counted from libyaml's byte offsets
//!   instead (`yaml/events.rs`). JSON and TOML lines already count `\n` alone.
//!
//! Error messages are the parsers' own, without the trailing position (it is in
//! [`ParseError::line`]). YAML content errors are prefixed with the path of the offending node
//! (`topics[3].acls: duplicate key "principal"`), because that helps find the spot in a large
//! file; syntax errors keep libyaml's context (`…, while parsing a flow sequence at line 2
//! column 4`).
//!
//! # Diffing
//!
//! See [`diff_documents`] for the rules. Decisions:
//!
//! * Object keys and identity-keyed list entries are visited in sorted order (by their text, so
//!   `team44` precedes `team9`): a [`Node`] map is sorted, and the two sides are merged.
//! * An identity-keyed list is diffed as a map only when **both** sides qualify (every element
//!   an object whose identity field is a string or integer, unique by its text). Otherwise it is
//!   an [`AmbiguousList`] (docs/contract.md#identity-keys) and is not compared at all: never by position, since a
//!   copied entry would shift a change onto a position no rule judges, and not partly by
//!   identity, since which entry is which is exactly what is unknown. Everything else in the
//!   file is still diffed, so one ambiguous list fails closed without hiding the rest; the
//!   caller turns each one into a `block` finding naming the offending entries by line.
//! * Under each change the walk goes on ([`diff_documents_with`]): every value inside what a
//!   change deletes, adds or replaces by another type is a descendant change of its own,
//!   addressed as a direct diff would address it, so rules written on entries see a container
//!   deleted, nulled, emptied or retyped exactly as they see its entries deleted one by one.
//!   The caller says which descendants it wants (a run: those some rule's `match` accepts),
//!   and only those are copied, within a bound on the values they carry.
//! * A value that appears or disappears whole (added, deleted, or replaced by a value of another
//!   type) is checked for ambiguous lists inside it on the side that holds it, so an ambiguity
//!   can neither enter nor leave a file without blocking; a list equal on both sides is not,
//!   since nothing in it is compared.
//! * `identity_for` is asked with the list's pointer as it appears in the output, so a list
//!   inside an identity-keyed entry is asked about as `/topics/orders.events.v1/acls`.
//! * Equal subtrees are skipped without asking anything, so the cost is proportional to what
//!   changed plus one equality pass per level.

mod build;
mod change;
mod diff;
mod keys;
mod lines;
mod parse;
mod tree;
mod yaml;

#[cfg(test)]
mod tests;

pub use change::{Change, ChangeKind};
pub use diff::{
    AmbiguousList, Descendants, DocumentDiff, DuplicateIdentity, EntryAt, SideAmbiguity, Unkeyed,
    UnkeyedEntry, diff_documents, diff_documents_with, escape_pointer_token,
};
pub use keys::Key;
pub use parse::{ParseError, parse_document};
pub use tree::{Line, Node};

/// The syntax of a governed structured file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `.json`
    Json,
    /// `.yaml` or `.yml`
    Yaml,
    /// `.toml`
    Toml,
}

/// The format of a repository path, by extension (ASCII case-insensitive): `.json`,
/// `.yaml`/`.yml`, `.toml`. `None` means the file is not a governed structured file.
pub fn format_for_path(path: &str) -> Option<Format> {
    // Only the last path segment counts: `conf.json/README` is not JSON.
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() {
        // `.json` alone is a hidden file named "json", not a JSON file with an empty name.
        return None;
    }
    match ext.to_ascii_lowercase().as_str() {
        "json" => Some(Format::Json),
        "yaml" | "yml" => Some(Format::Yaml),
        "toml" => Some(Format::Toml),
        _ => None,
    }
}

/// Bounds on what [`parse_document`] accepts, so a hostile or accidental file costs bounded
/// memory and time. Exceeding any of them is a [`ParseError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted input, in bytes.
    pub max_bytes: usize,
    /// Deepest accepted nesting of containers (lists and maps).
    pub max_depth: usize,
    /// Most values (scalars and containers, not counting map keys) in one document.
    pub max_nodes: usize,
}

impl Default for Limits {
    /// 16 MiB, depth 128, one million nodes.
    ///
    /// Why these numbers: hand-written configuration registries are kilobytes to a few
    /// megabytes, so 16 MiB leaves generous room while bounding the parse (a value tree costs
    /// several times its text). Depth 128 is far beyond any real configuration and matches the
    /// parsers' own recursion guards, so the limit is the same whatever the format. A million
    /// nodes is more than a 16 MiB file of ordinary records holds, yet caps the memory of dense
    /// documents like `[0,0,0,…]`, whose trees are the most expensive per input byte.
    fn default() -> Self {
        Limits {
            max_bytes: 16 * 1024 * 1024,
            max_depth: 128,
            max_nodes: 1_000_000,
        }
    }
}
