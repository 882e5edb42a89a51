#![no_main]

use odyssey_runtime::fuzzing::{bash_split, bash_split_init};

libfuzzer_sys::fuzz_target!(init: bash_split_init(), |data: &[u8]| bash_split(data));
