//! Fuzz target `policy_tree`: see `tree_checks::policy_tree` in `tests/fuzz/tree_checks.rs`
//! for the input layout and the properties. Each input builds a small tree in the system's
//! temporary folder and removes it again.
#![no_main]

#[path = "../tree_checks.rs"]
mod tree_checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tree_checks::policy_tree(data);
});
