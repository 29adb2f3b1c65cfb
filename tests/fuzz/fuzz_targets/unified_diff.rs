//! Fuzz target `unified_diff`: see `assent_test_support::fuzz::checks::unified_diff` for the
//! properties.
#![no_main]

use assent_test_support::fuzz::checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    checks::unified_diff(data);
});
