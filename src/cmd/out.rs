//! Writing to stdout and stderr without ever panicking or stopping a command half way.
//!
//! `println!` and friends panic when a write fails (a full device, a closed pipe), which
//! made `dream run >/dev/full` exit 101. In `cmd` they are replaced (see the macros at the
//! top of `cmd/mod.rs`) by these functions: a closed pipe ends the process quietly by
//! SIGPIPE, as command-line tools do (`dream log | head`), and any other failure is
//! remembered so that `main` can exit 1 saying the output was lost, once the command's own
//! work (a cycle's commits) is done. Stderr failures are ignored: there is nowhere left to
//! say anything.

use std::fmt::Arguments;
use std::io::Write;
use std::sync::Mutex;

static FAILED: Mutex<Option<String>> = Mutex::new(None);

fn stdout(args: Arguments<'_>, newline: bool) {
    let mut out = std::io::stdout().lock();
    let r = out
        .write_fmt(args)
        .and_then(|_| {
            if newline {
                out.write_all(b"\n")
            } else {
                Ok(())
            }
        })
        .and_then(|_| out.flush());
    if let Err(e) = r {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            closed_pipe();
        }
        let mut f = FAILED.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert_with(|| e.to_string());
    }
}

pub fn line(args: Arguments<'_>) {
    stdout(args, true);
}

pub fn text(args: Arguments<'_>) {
    stdout(args, false);
}

pub fn err_line(args: Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|_| err.write_all(b"\n"));
}

pub fn err_text(args: Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// Why writing to stdout failed, if it did.
pub fn failure() -> Option<String> {
    FAILED.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The reader went away: end as a command-line tool does, by SIGPIPE.
fn closed_pipe() -> ! {
    #[cfg(unix)]
    // SAFETY: restoring the default action of a signal and raising it; no handler runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(141)
}

/// A writer for logs on stderr that never fails (a full or closed stderr must not stop a
/// cycle, and the log layer would print its own complaint, to stderr, and panic).
pub struct QuietStderr;

impl Write for QuietStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = std::io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

/// Set up `tracing` on stderr from the global flags: warnings by default, `-v` for more,
/// `--log-format json` for machines; no colour unless stderr is a terminal and NO_COLOR is
/// unset.
pub fn init_logging(g: &crate::cli::Global) {
    let level = if g.quiet {
        "error"
    } else {
        match g.verbose {
            0 => "warn",
            1 => "info",
            2 => "debug",
            _ => "trace",
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("DREAM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("dream={level},{level}")));
    let color = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| QuietStderr)
        .with_target(false);
    let _ = match g.log_format {
        crate::cli::LogFormat::Json => builder.json().try_init(),
        crate::cli::LogFormat::Text => builder.with_ansi(color).try_init(),
    };
}
