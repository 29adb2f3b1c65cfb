//! Fuzz target `inert`: see `checks::inert_input` in `tests/fuzz/checks.rs` for the properties.
#![no_main]

#[allow(dead_code)] // each target uses one of the checks
#[path = "../checks.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        checks::inert_input(text);
    }
});
