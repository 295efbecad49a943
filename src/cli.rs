//! The command line: every clap definition in one file (one struct per subcommand), and
//! logging set-up. The commands themselves live in `cmd/`, one file each.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::CycleKind;

const EXIT_CODES: &str = "\
Exit codes:
  0   success (including a run that found nothing to do)
  1   failure while working (I/O, git, state, provider)
  2   usage or configuration error (the message names the key or argument)
  75  another dream process holds the repo's lock; nothing was written

Environment:
  DREAM_REPO                 the memory repo, when --repo is not given
  DREAM_<SECTION>_<KEY>      override a dream.toml key, e.g. DREAM_BUDGET_TOKENS_PER_CYCLE=50000
  NO_COLOR                   no colour in logs";

/// dream: a memory for AI agents that maintains itself.
///
/// Agents append what happened (messages, tool calls, session summaries) to the inbox of a
/// memory repository. Twice a day `dream run` consolidates those events into a few durable,
/// auditable facts in plain Markdown files under git, queues the doubtful ones as review
/// cards, refuses what it cannot justify (saying why), and exits.
///
/// Start with `dream init ~/memory`, point your agent at `~/memory/events/`, and schedule
/// `dream run`. `dream demo` shows a whole cycle on sample data.
#[derive(Debug, Parser)]
#[command(name = "dream", version, after_long_help = EXIT_CODES, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct Global {
    /// The memory repository (default: $DREAM_REPO, else the nearest folder upwards holding
    /// dream.toml).
    #[arg(long, global = true, value_name = "DIR", env = "DREAM_REPO")]
    pub repo: Option<PathBuf>,

    /// The cycle's clock, as RFC 3339 (for replays, tests and evaluations); default: now.
    #[arg(long, global = true, value_name = "RFC3339")]
    pub now: Option<String>,

    /// More log output on stderr (-v info, -vv debug, -vvv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Only errors on stderr.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a memory repository: layout, commented dream.toml, .gitignore, first commit.
    Init(InitArgs),
    /// Run one consolidation cycle (what the timer runs twice a day).
    Run(RunArgs),
    /// Validate events and append them to the inbox.
    Ingest(IngestArgs),
    /// Show pending events, inbox lag, review queue, quarantine and recent cycles.
    Status(StatusArgs),
    /// Run a whole cycle on the shipped sample events in a scratch repository.
    Demo(DemoArgs),
    /// Measure memory quality on a public conversation benchmark (LoCoMo).
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Measure speed, memory and token cost on a synthetic workload (for maintainers).
    #[command(hide = true)]
    Bench(BenchArgs),
    /// One `dream run --json` cycle that also reports its own peak memory (what `dream
    /// bench` measures in a child process).
    #[command(hide = true)]
    BenchCycle(RunArgs),
}

/// Create a memory repository in DIR (default: the current folder).
///
/// DIR must be new, empty, or an empty git repository. On an existing dream repository
/// this says so and changes nothing.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to create the repository.
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Run one cycle: lock, ingest new inbox lines, embed, cluster the rolling window,
/// reflect, gate, judge, route, commit, advance the watermark, report.
///
/// Auto-promoted facts land in memory/*.md, doubtful ones become review cards under
/// review/, and every refusal is listed with its reason. A second run with nothing new
/// makes no commit.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Which cycle: evening consolidates; morning ingests, embeds and writes a digest
    /// (profiles are set under [cycles] in dream.toml).
    #[arg(long, value_enum, default_value_t = CycleKind::Evening)]
    pub cycle: CycleKind,

    /// Run every step and print the report and the plan, but write nothing at all: no
    /// file, no commit, no state row, no watermark.
    #[arg(long)]
    pub dry_run: bool,

    /// Print the report as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,

    /// Override budget.tokens_per_cycle for this run.
    #[arg(long, value_name = "TOKENS")]
    pub budget: Option<u64>,
}

/// Validate events (JSON Lines, one object per line) and append them to the inbox.
///
/// Each line needs `ts` (RFC 3339), `kind` and `text`; see README.md for every field.
/// Secrets are redacted before anything is written. Valid lines are appended to
/// events/ingest-<date>.jsonl; invalid ones are listed with their line number and reason,
/// and the exit code is 1 when there were any.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Files to read; `-` or nothing reads standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// Show what is waiting: unreflected events, unread inbox bytes, review cards,
/// quarantined lines and the last cycles.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Create a scratch repository, ingest the shipped sample events (five days of an agent's
/// sessions, with noise, a pasted API key and a malformed line), run an evening cycle and
/// print its report and where to look.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Create the demo repository here instead of a temporary folder (kept afterwards).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,

    /// Print the report as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Evaluations of memory quality on public datasets, replayed the way a timer would run
/// dream.
#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Replay LoCoMo conversations (one evening cycle per session date, offline by default)
    /// and measure answer retention, memory size, evidence recall and traceability.
    ///
    /// Each conversation becomes a stream of events (one per turn, id
    /// `<sample_id>:<dia_id>`, both speakers trusted as owners, image captions included)
    /// consolidated in its own temporary repository with the default configuration (or
    /// the keys of --config). Answer retention counts the questions of categories 1, 2 and
    /// 4 whose answer's content words all appear in one durable fact (and, beside it, in
    /// one fact or review card); memory size is durable memory's words as a share of the
    /// transcript's; evidence recall is the share of the questions' evidence turns cited
    /// by some fact or card, shown with the average number of events a fact cites;
    /// traceability is the share of facts whose every content word appears in the events
    /// they cite (it must be 100%: the command exits 1 otherwise).
    Locomo(EvalLocomoArgs),
}

#[derive(Debug, Args)]
pub struct EvalLocomoArgs {
    /// The LoCoMo JSON file (an array of conversations, as in data/locomo10.json).
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,

    /// Only these conversations (sample ids, comma-separated).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub only: Vec<String>,

    /// A dream.toml whose keys replace the defaults in every replay repository.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Keep the replay repositories in this folder (one per conversation) to inspect them.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}

/// Build repositories from a deterministic synthetic workload and measure the cycles that
/// matter in child processes: per-stage time, engine and process wall time, peak memory,
/// LLM calls and tokens, as medians over --runs. Use a release build. See
/// docs/BENCHMARKS.md.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Scenarios: all, heavy (also measures idle), incremental, cluster, tokens.
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        default_value = "all"
    )]
    pub scenario: Vec<String>,

    /// Measured runs per scenario (the figures are medians).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,

    /// Print one JSON object on stdout (the table goes to stderr).
    #[arg(long)]
    pub json: bool,

    /// Work in this folder and keep it (default: a temporary folder).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Events in the window of the heavy scenario.
    #[arg(long, default_value_t = 100_000)]
    pub window: usize,

    /// New events of the heavy scenario.
    #[arg(long, default_value_t = 10_000)]
    pub new: usize,

    /// Events of the incremental scenario's history (older than the window).
    #[arg(long, default_value_t = 100_000)]
    pub history: usize,

    /// New events of the incremental scenario.
    #[arg(long, default_value_t = 1_000)]
    pub increment: usize,

    /// Window sizes of the clustering scenario.
    #[arg(long, value_delimiter = ',', default_value = "10000,50000,100000")]
    pub cluster_sizes: Vec<usize>,

    /// Compare with exact (quadratic) clustering up to this many events (100,000 takes
    /// a few minutes).
    #[arg(long, default_value_t = 20_000)]
    pub exact_up_to: usize,

    /// Also time linfa's own indexes (k-d tree, ball tree, linear search) up to this many
    /// events (0: never; they are quadratic in 256 dimensions).
    #[arg(long, default_value_t = 0)]
    pub linfa_up_to: usize,

    /// Sign-LSH hash tables for the clustering scenario (default: the engine's).
    #[arg(long)]
    pub lsh_tables: Option<usize>,

    /// Sign-LSH bits per table key for the clustering scenario (0: log2 of the distinct
    /// rows minus 3, the engine's rule).
    #[arg(long)]
    pub lsh_bits: Option<usize>,

    /// Sign-LSH least certain bits probed per table for the clustering scenario.
    #[arg(long)]
    pub lsh_probes: Option<usize>,

    /// Events of the token scenario.
    #[arg(long, default_value_t = 2_000)]
    pub token_events: usize,

    /// Base URL of an OpenAI-compatible server for the token scenario (for example the
    /// fake server's http://127.0.0.1:PORT/v1); without it the scenario reports offline.
    #[arg(long, value_name = "URL")]
    pub llm_url: Option<String>,

    /// Model name sent to --llm-url.
    #[arg(long, default_value = "gpt-4o-mini")]
    pub llm_model: String,

    /// Seed of the synthetic workload.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

/// Set up `tracing` on stderr from the global flags: warnings by default, `-v` for more,
/// `--log-format json` for machines; no colour unless stderr is a terminal and NO_COLOR is
/// unset.
pub fn init_logging(g: &Global) {
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
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match g.log_format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.with_ansi(color).try_init(),
    };
}
