#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| odyssey_server::fuzzing::bash_split(data));
