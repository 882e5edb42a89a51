#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| odyssey_runtime::fuzzing::event_log(data));
