//! dream's command line: the only code that parses arguments and prints.
//!
//! The `dream` binary (`main.rs`) is this crate's thin entry: [`cli`] holds every clap
//! definition, [`cmd`] one file per subcommand with a small `run()` that resolves the
//! repository, calls the engine (`dream-engine`) and prints, and [`mcp`] is the Model
//! Context Protocol front door (`dream mcp`). The engine and the pure core (`dream-core`)
//! know nothing of the terminal; nothing there calls up into this crate. Exit codes and
//! hints come from `dream_engine::error`.

pub mod cli;
pub mod cmd;
pub mod mcp;

pub use dream_engine::error::{self, Error, Result};
