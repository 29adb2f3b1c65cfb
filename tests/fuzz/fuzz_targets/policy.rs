//! Fuzz target `policy`: see `assent_test_support::fuzz::checks::policy` for the properties.
#![no_main]

use assent_test_support::fuzz::checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    checks::policy(data);
});
