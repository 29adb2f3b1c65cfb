//! Fuzz target `marker`: see `assent_test_support::fuzz::checks::marker` for the properties.
#![no_main]

use assent_test_support::fuzz::checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(body) = std::str::from_utf8(data) {
        checks::marker(body);
    }
});
