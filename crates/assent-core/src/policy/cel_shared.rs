//! The vocabulary the CEL modules share, below all of them: the load-time limits, the
//! variables a predicate may use and the values one evaluation binds to them (see
//! [`super::cel_eval`], "Guarding against hostile expressions"). Compiling and evaluating
//! (`cel_eval`), the cost bound (`cel_cost`), the structural checks (`cel_limits`) and the
//! type checks (`cel_types`) all read them, so none imports another for them.

use cel::Value as CelValue;
use serde_json::Value;

/// Longest accepted `when` source, in bytes.
pub const MAX_SOURCE_BYTES: usize = 4096;
/// Deepest accepted syntax tree (after macro expansion).
pub const MAX_DEPTH: usize = 64;
/// Deepest accepted nesting of comprehension macros.
pub const MAX_COMPREHENSION_NESTING: usize = 2;

/// Largest accepted worst-case cost of one evaluation, in abstract steps (about one value
/// visited each): at most seconds of work, whatever the data.
pub const MAX_COST: f64 = 1e8;

/// The variables every predicate may use.
pub const VARIABLES: [&str; 7] = ["old", "new", "kind", "file", "pointer", "entry", "mr"];

/// The values one evaluation sees.
#[derive(Debug, Clone, Copy)]
pub struct Bindings<'a> {
    /// Value at the base SHA.
    pub old: Option<&'a Value>,
    /// Value at the source SHA.
    pub new: Option<&'a Value>,
    /// `add`, `modify` or `delete`.
    pub kind: &'a str,
    /// Repository path.
    pub file: &'a str,
    /// RFC 6901 pointer.
    pub pointer: &'a str,
    /// Identity of the enclosing list entry.
    pub entry: Option<&'a str>,
    /// The `mr` map, converted once per evaluation run.
    pub mr: &'a CelValue,
}

/// `text` on one line, its runs of whitespace one space each (a predicate quoted in a problem).
pub(super) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
