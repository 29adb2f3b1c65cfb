//! Fuzz target `inert`: see `assent_test_support::fuzz::checks::inert_input` for the properties.
#![no_main]

use assent_test_support::fuzz::checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        checks::inert_input(text);
    }
});
