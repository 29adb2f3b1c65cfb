//! Fuzz target `policy_tree`: see `assent_test_support::fuzz::tree_checks::policy_tree`
//! for the input layout and the properties. Each input builds a small tree in the system's
//! temporary folder and removes it again.
#![no_main]

use assent_test_support::fuzz::tree_checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tree_checks::policy_tree(data);
});
