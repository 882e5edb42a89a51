//! The `odyssey` binary: everything lives in the library's `run_cli`, so tests can drive the
//! same code in-process.

use std::process::ExitCode;

use odyssey_cli::{Style, run_cli_with};

#[tokio::main]
async fn main() -> ExitCode {
    // Lossy, not `env::args()`, which panics on a non-UTF-8 argument.
    let args = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let code = run_cli_with(args, &mut out, &mut err, Style::detect()).await;
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
