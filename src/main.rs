//! The `dream` binary: parse the command line, run the command, map errors to exit codes.

use clap::Parser;

fn main() {
    restore_sigpipe();
    let cli = dream::cli::Cli::parse();
    dream::cli::init_logging(&cli.global);
    let json_logs = cli.global.log_format == dream::cli::LogFormat::Json;
    let code = match dream::cmd::run(cli) {
        Ok(code) => code,
        Err(e) if json_logs => {
            // Keep stderr one JSON object per line for log collectors.
            let hint = e.hint().unwrap_or_default();
            tracing::error!(exit_code = e.exit_code(), hint = %hint, "{e}");
            e.exit_code()
        }
        Err(e) => {
            eprintln!("error: {e}");
            if let Some(hint) = e.hint() {
                eprintln!("hint: {hint}");
            }
            e.exit_code()
        }
    };
    std::process::exit(code);
}

/// Die quietly when stdout is closed early (`dream log | head`), as command-line tools do,
/// instead of panicking on the write: Rust ignores SIGPIPE by default.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called once at start-up, before any thread exists; SIG_DFL is always valid.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
