//! `dream-bench`: the benchmark of docs/BENCHMARKS.md, for maintainers. It builds memory
//! repositories from the test kit's synthetic workload and measures the cycles that matter
//! in child processes (`dream-bench cycle`, one `dream run --json` cycle that also reports
//! its own peak memory), with the fake model server when token costs are measured. It is
//! its own binary so the shipped `dream` carries none of the test kit.

mod bench;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use bench::Options;
use dream::cli::{Global, RunArgs};
use dream::cycle::{self, Options as CycleOptions};
use dream::error::{Context, Result, EXIT_OK};

#[derive(Debug, Parser)]
#[command(name = "dream-bench", version)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    bench: BenchArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// One `dream run --json` cycle that also reports its own peak memory (what the
    /// benchmark measures in a child process).
    Cycle(RunArgs),
}

fn main() {
    let cli = Cli::parse();
    dream::cli::init_logging(&cli.global);
    let result = match &cli.command {
        Some(Command::Cycle(a)) => cycle(&cli.global, a),
        None => run(&cli.global, &cli.bench),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e}");
            if let Some(hint) = e.hint() {
                eprintln!("hint: {hint}");
            }
            std::process::exit(e.exit_code());
        }
    }
}

fn run(g: &Global, a: &BenchArgs) -> Result<i32> {
    let _ = g;
    let exe = std::env::current_exe().context(|| "finding the dream-bench binary".into())?;
    let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
    // --fake-llm: the scripted OpenAI-compatible server of the tests, on loopback in this
    // process, answering reflect with the owner's sentence, judge with "no conflict", and
    // every other stage (the passes, the baseline's extraction) with an empty object, each
    // with its token usage; --fake-latency-ms adds a delay to every reply.
    let fake = a.fake_llm.then(|| {
        let fake = dream_testkit::fake_llm::FakeLlm::start();
        fake.on("reflect", dream_testkit::fake_llm::echo_reflect);
        fake.on("judge", dream_testkit::fake_llm::agreeable_judge);
        fake.set_latency(std::time::Duration::from_millis(a.fake_latency_ms));
        fake
    });
    let llm_url = match &fake {
        Some(f) => Some(f.base_url()),
        None => a.llm_url.clone(),
    };
    let opts = Options {
        scenarios: a.scenario.clone(),
        runs: a.runs.max(1),
        dir: a.dir.as_deref().map(|d| dream::cmd::absolute(&cwd, d)),
        exe,
        window: a.window,
        new: a.new,
        history: a.history,
        increment: a.increment,
        cluster_sizes: a.cluster_sizes.clone(),
        exact_up_to: a.exact_up_to,
        linfa_up_to: a.linfa_up_to,
        lsh: {
            let d = dream_core::cluster::SignLsh::default();
            dream_core::cluster::SignLsh {
                tables: a.lsh_tables.unwrap_or(d.tables),
                bits: a.lsh_bits.unwrap_or(d.bits),
                probes: a.lsh_probes.unwrap_or(d.probes),
                max_neighbours: a.lsh_max_neighbours.unwrap_or(d.max_neighbours),
                ..d
            }
        },
        token_events: a.token_events,
        llm_url,
        llm_model: a.llm_model.clone(),
        seed: a.seed,
        facts: a.facts,
    };
    let report = bench::run(&opts)?;
    if a.json {
        eprint!("{}", bench::render(&report));
        dream::cmd::print_json(&report)?;
    } else {
        print!("{}", bench::render(&report));
    }
    Ok(EXIT_OK)
}

/// One cycle as `dream run --json` runs it, printed with the process's own peak memory.
fn cycle(g: &Global, a: &RunArgs) -> Result<i32> {
    let root = dream::cmd::repo_root(g)?;
    let mut config = dream::config::load(&root)?;
    if let Some(b) = a.budget {
        config.budget.tokens_per_cycle = b;
    }
    let provider = dream::providers::llm(&config)?;
    let embedder = dream::providers::embedder(&config)?;
    let opts = CycleOptions {
        kind: a.cycle,
        dry_run: a.dry_run,
        allow_loss: false,
        now: dream::cmd::now(g)?,
    };
    let report = cycle::run(&root, &config, provider.as_ref(), embedder.as_ref(), &opts)?;
    dream::cmd::print_json(&serde_json::json!({
        "report": report,
        "peak_rss_kb": bench::peak_rss_kb(),
    }))?;
    Ok(EXIT_OK)
}

/// Build repositories from a deterministic synthetic workload and measure the cycles that
/// matter in child processes: per-stage time, engine and process wall time, peak memory,
/// LLM calls and tokens, as medians over --runs. Use a release build. See
/// docs/BENCHMARKS.md.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Scenarios: all, heavy (also measures idle), incremental, cluster, tokens, agents.
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

    /// Neighbour groups one search keeps for the clustering scenario (0: all; the engine
    /// keeps `dream_core::cluster::MAX_NEIGHBOURS`).
    #[arg(long)]
    pub lsh_max_neighbours: Option<usize>,

    /// Events of the token scenario.
    #[arg(long, default_value_t = 2_000)]
    pub token_events: usize,

    /// Base URL of an OpenAI-compatible server for the token scenario (for example the
    /// fake server's http://127.0.0.1:PORT/v1); without it the scenario reports offline.
    #[arg(long, value_name = "URL")]
    pub llm_url: Option<String>,

    /// Start the scripted fake OpenAI-compatible server (the tests' own) on loopback for the
    /// token scenario, instead of --llm-url.
    #[arg(long, conflicts_with = "llm_url")]
    pub fake_llm: bool,

    /// Latency the fake server adds to every reply, in milliseconds.
    #[arg(long, default_value_t = 0, requires = "fake_llm")]
    pub fake_latency_ms: u64,

    /// Model name sent to --llm-url.
    #[arg(long, default_value = "gpt-4o-mini")]
    pub llm_model: String,

    /// Seed of the synthetic workload.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,

    /// Facts in the agents scenario's repository (`dream context`, `recall` over MCP).
    #[arg(long, default_value_t = 1_000)]
    pub facts: usize,
}
