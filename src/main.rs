//! The `dream` binary: parse the command line, run the command, map errors to exit codes.

use std::io::Write;

use clap::Parser;

fn main() {
    dream::cmd::process::tune_allocator();
    // SIGPIPE stays ignored (Rust's default): a reader that closes stderr mid-cycle must
    // not kill the cycle; `cmd::out` ends the process by SIGPIPE when stdout's reader is
    // gone, as command-line tools do (`dream log | head`).
    let cli = dream::cli::Cli::parse();
    dream::cmd::out::init_logging(&cli.global);
    let json_logs = cli.global.log_format == dream::cli::LogFormat::Json;
    let mut code = match dream::cmd::run(cli) {
        Ok(code) => code,
        Err(e) if json_logs => {
            // Keep stderr one JSON object per line for log collectors.
            let hint = e.hint().unwrap_or_default();
            tracing::error!(exit_code = e.exit_code(), hint = %hint, "{e}");
            e.exit_code()
        }
        Err(e) => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "error: {e}");
            if let Some(hint) = e.hint() {
                let _ = writeln!(err, "hint: {hint}");
            }
            e.exit_code()
        }
    };
    if let Some(why) = dream::cmd::out::failure() {
        let _ = writeln!(
            std::io::stderr(),
            "error: the output could not be written to stdout ({why}); the command itself ran to its end"
        );
        if code == 0 {
            code = dream::error::EXIT_FAILURE;
        }
    }
    std::process::exit(code);
}
