//! `odyssey-sandbox`: applies rlimits, Landlock and seccomp to itself inside bubblewrap,
//! then execs the command. The logic and the command line are documented in
//! `odyssey_runtime::sandbox::helper`; this file only reports a failure.

use std::process::ExitCode;

fn main() -> ExitCode {
    let error = odyssey_sandbox::main(std::env::args_os().skip(1));
    eprintln!("odyssey-sandbox: {error}");
    ExitCode::from(error.exit_code())
}
