#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| odyssey_server::fuzzing::event_log(data));
