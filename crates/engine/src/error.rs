//! One error type for the library, and the one place that decides exit codes.
//!
//! The library never prints and never exits: it returns an [`Error`] whose kind says what
//! went wrong and whose [`Error::hint`] says what to do. `main.rs` prints both and exits
//! with [`Error::exit_code`], so the mapping from failures to the exit codes of SPEC S11
//! (0 ok, 1 failure, 2 usage or config error, 75 lock held) lives here and nowhere else,
//! beside the one code a success may carry: [`EXIT_WARNING`].

use std::path::{Path, PathBuf};

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: a failure while working (I/O, git, state, provider).
pub const EXIT_FAILURE: i32 = 1;
/// Exit code: the command line or the configuration is wrong.
pub const EXIT_USAGE: i32 = 2;
/// Exit code: another process holds the single-writer lock (EX_TEMPFAIL).
pub const EXIT_LOCKED: i32 = 75;
/// Exit code of `dream run` (and `dream status --check`): the cycle finished and committed,
/// and the heartbeat raised a warning (a quiet failure: nothing kept, a stage degraded, a
/// timer not firing, ...). The shipped units count it as success (`SuccessExitStatus=`), so
/// it never retries a cycle that did its work; a monitor that reads exit codes sees it.
/// 10 has no meaning in the LSB, BSD (sysexits) or systemd tables, so the journal shows a
/// plain `status=10`.
pub const EXIT_WARNING: i32 = 10;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command line asks for something that cannot be done as asked.
    #[error("{0}")]
    Usage(String),

    /// `dream.toml` (or an environment override of it) is invalid.
    #[error("{file}: {message}")]
    Config { file: String, message: String },

    /// The folder is not a dream repository.
    #[error("{} is not a dream repository (no dream.toml here or in any parent folder)", path.display())]
    NotARepo { path: PathBuf },

    /// Another process holds `.dream/lock`.
    #[error("another dream cycle is running ({holder})")]
    LockHeld { holder: String },

    /// Input that cannot be accepted (a bad event, a bad id).
    #[error("{0}")]
    Input(String),

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    #[error("{context}: {source}")]
    Git {
        context: String,
        #[source]
        source: git2::Error,
    },

    #[error("{context}: {source}")]
    State {
        context: String,
        #[source]
        source: rusqlite::Error,
    },

    /// A model server refused the API key: configuration, not a passing failure.
    #[error("{0}")]
    Auth(String),

    /// A model or embedding provider failed in a way the cycle cannot degrade around.
    #[error("{0}")]
    Provider(String),

    /// A change passed its commit point (it happened: the branch or the state records
    /// it), but writing its files failed; the next dream command finishes them.
    #[error("{source}")]
    Unfinished { commit: String, source: Box<Error> },

    /// A writing command failed before its commit point: memory, cards, history and
    /// state are as it found them (see [`Error::unchanged`]).
    #[error("{source}")]
    Unchanged { source: Box<Error> },

    /// A command made of several changes failed after one of them happened: `done` says
    /// what is in place; running the same command again finishes the rest.
    #[error("{source}")]
    Partial { done: String, source: Box<Error> },

    /// Anything else, already phrased for a person.
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// The error of a writing command that has not passed its commit point: an I/O, git or
    /// state failure is marked as having changed nothing, so its hint says so. Only the
    /// commands' entry points call this, for errors that cannot come after a commit point
    /// (those are [`Error::Unfinished`] or [`Error::Partial`], left as they are).
    pub fn unchanged(self) -> Error {
        match self {
            Error::Io { .. } | Error::Git { .. } | Error::State { .. } => Error::Unchanged {
                source: Box::new(self),
            },
            other => other,
        }
    }

    /// An error after one change of several happened (`done` says which).
    pub fn partial(done: impl Into<String>) -> impl FnOnce(Error) -> Error {
        let done = done.into();
        move |e| match e {
            e @ (Error::Unfinished { .. } | Error::Partial { .. }) => e,
            e => Error::Partial {
                done,
                source: Box::new(e),
            },
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Unchanged { source } | Error::Partial { source, .. } => source.exit_code(),
            Error::Usage(_) | Error::Config { .. } | Error::NotARepo { .. } | Error::Auth(_) => {
                EXIT_USAGE
            }
            Error::LockHeld { .. } => EXIT_LOCKED,
            _ => EXIT_FAILURE,
        }
    }

    /// What the person should do next, when there is something useful to say.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::NotARepo { .. } => Some(
                "run `dream init DIR` to create one, or point at one with --repo DIR or DREAM_REPO"
                    .into(),
            ),
            Error::LockHeld { .. } => Some(
                "this run wrote nothing; the next scheduled run will pick up the work".into(),
            ),
            Error::Auth(_) => Some(
                "no event was consumed: the cycle stopped before reflecting, and the next run starts from the same place"
                    .into(),
            ),
            Error::Config { file, .. } if file.starts_with("environment variable") => {
                Some("fix or unset the variable; dream.toml lists every key and its default".into())
            }
            Error::Config { .. } => Some(
                "fix the key in dream.toml (every key and its default is listed in the file `dream init` writes)"
                    .into(),
            ),
            Error::Unchanged { source } => Some(match source.hint() {
                Some(h) if h.contains("nothing was changed") => h,
                Some(h) => format!("{h}; nothing was changed"),
                None => "nothing was changed (memory, cards, history and state are as they were); \
                         run the command again once the cause is fixed"
                    .into(),
            }),
            Error::Partial { done, .. } => Some(format!(
                "{done}; the rest was not done: run the same command again to finish it (nothing is lost)"
            )),
            Error::Unfinished { commit, .. } => Some(format!(
                "the change was committed ({commit}) but its files are not all written yet; \
                 the next dream command finishes them from .dream/journal.json (nothing is lost)"
            )),
            Error::Git { source, .. } if source.code() == git2::ErrorCode::Locked => Some(
                "a git command is running in the repository (or a process that is gone left its \
                 *.lock file under .git/, which dream removes only when no git process runs there); \
                 nothing was changed, and the next run tries again"
                    .into(),
            ),
            Error::State {
                source: rusqlite::Error::SqliteFailure(e, _),
                ..
            } if matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase
            ) =>
            {
                Some(
                    "the state database .dream/state.sqlite is damaged. It only caches what the inbox and \
                     the repository hold: `dream rebuild` moves it aside and rebuilds it (memory, cards and \
                     history are not touched; the next run reads the inbox again)"
                        .into(),
                )
            }
            Error::Io { source, .. } => match source.kind() {
                std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                    Some("make the repository writable for this user".into())
                }
                std::io::ErrorKind::StorageFull => {
                    Some("free some disk space and run again".into())
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// Attach a sentence of context to I/O, git and SQLite errors.
pub trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> Context<T> for std::result::Result<T, std::io::Error> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Io {
            context: what(),
            source,
        })
    }
}

impl<T> Context<T> for std::result::Result<T, git2::Error> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Git {
            context: what(),
            source,
        })
    }
}

impl<T> Context<T> for std::result::Result<T, rusqlite::Error> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::State {
            context: what(),
            source,
        })
    }
}

/// `path` shown the way a person would type it.
pub fn show(path: &Path) -> String {
    path.display().to_string()
}
