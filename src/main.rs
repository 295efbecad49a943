//! The `dream` binary: parse the command line, run the command, map errors to exit codes.

use clap::Parser;

fn main() {
    let cli = dream::cli::Cli::parse();
    dream::cli::init_logging(&cli.global);
    let code = match dream::cmd::run(cli) {
        Ok(code) => code,
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
