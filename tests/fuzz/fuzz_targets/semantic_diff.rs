//! Fuzz target `semantic_diff`: see `assent_test_support::fuzz::checks::semantic_diff`
//! for the properties.
#![no_main]

use assent_test_support::fuzz::checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    checks::semantic_diff(data);
});
