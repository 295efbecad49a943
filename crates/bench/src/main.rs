//! `dream-bench`: the benchmark of docs/BENCHMARKS.md, for maintainers. It builds memory
//! repositories from the test kit's synthetic workload and measures the cycles that matter
//! in child processes (`dream-bench cycle`, one `dream run --json` cycle that also reports
//! its own peak memory), with the fake model server when token costs are measured. It is
//! its own binary so the shipped `dream` carries none of the test kit.

mod bench;
mod parts;
mod quality;
mod recall;
mod stream;
mod sync;
mod year;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use bench::Options;
use dream::cli::{Global, RunArgs};
use dream_engine::cycle::{self, Options as CycleOptions};
use dream_engine::error::{Context, Result, EXIT_OK};

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
    /// Serve the tests' fake OpenAI-compatible server on loopback for another process (the
    /// mem0 comparison, scripts/mem0-compare.py): write the token scenario's events as
    /// JSON lines, print the server's base URL on one line, and serve until stdin closes.
    /// A request without `X-Dream-Stage` (another tool's) is answered as mem0's extraction
    /// call expects: each `user:` line of its new messages as one memory. `GET
    /// /fake/usage` answers the calls and tokens counted so far.
    FakeServer(FakeServerArgs),
    /// Replay LoCoMo as `dream eval locomo` does; with --reference, every reflect call is
    /// answered by the scripted fake server with the LoCoMo authors' own observations of
    /// the turns it holds (a stand-in for a good model), and the fate of every observation
    /// is listed by reason.
    EvalLocomo(EvalLocomoArgs),
    /// Replay generated coding-agent sessions (the test kit's labelled dev set) one evening
    /// cycle per working day and score memory against the labels.
    EvalAgent(EvalAgentArgs),
    /// Time `recall` (the read path `dream mcp` and the quiz use) over a memory of --facts
    /// synthetic facts, asking quiz clozes of them: median and p90 ms, hit@5.
    Recall(RecallArgs),
    /// Time sharing one memory across machines (a file:// remote): each member's first and
    /// idle sync, the dreamer's sync over every member's events, the remote's size.
    Sync(SyncArgs),
}

#[derive(Debug, Args)]
struct SyncArgs {
    /// Members shipping to the memory.
    #[arg(long, default_value_t = 3)]
    members: usize,
    /// Events in each member's inbox.
    #[arg(long, default_value_t = 2000)]
    events: usize,
    /// Runs (fresh machines each); medians are reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Seed of the synthetic workload.
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

#[derive(Debug, Args)]
struct RecallArgs {
    /// Facts in memory.
    #[arg(long, default_value_t = 1000)]
    facts: usize,
    /// Questions asked (each a cloze of one fact).
    #[arg(long, default_value_t = 200)]
    questions: usize,
    /// Seed of the synthetic workload.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// A dream.toml whose keys replace the defaults (for example an embedder).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct FakeServerArgs {
    /// Where to write the workload's events (JSON lines, oldest first).
    #[arg(long, value_name = "FILE")]
    events_out: PathBuf,
    /// Events of the workload (as --token-events).
    #[arg(long, default_value_t = 2000)]
    events: usize,
    /// Days the events span (as --token-days).
    #[arg(long, default_value_t = 7)]
    days: u32,
    /// Seed of the synthetic workload (as --seed).
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Write the stream scenario's events instead (a LoCoMo file's turns as one stream,
    /// oldest first, as `--scenario stream` reads them); --events, --days and --seed are
    /// then unused.
    #[arg(long, value_name = "PATH")]
    stream: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct EvalLocomoArgs {
    /// The LoCoMo JSON file.
    #[arg(value_name = "PATH")]
    path: PathBuf,
    /// Answer reflect with the authors' observations through the fake server.
    #[arg(long)]
    reference: bool,
    /// Only these conversations (sample ids, comma-separated).
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    only: Vec<String>,
    /// A dream.toml whose keys replace the defaults (for example an embedder).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Keep the replay repositories in this folder.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// Print one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct EvalAgentArgs {
    /// Seeds of the generated sets (each a different person).
    #[arg(long, value_delimiter = ',', default_value = "15,16,17,18,19")]
    seeds: Vec<u64>,
    /// Working days per set.
    #[arg(long, default_value_t = 10)]
    days: u32,
    /// A dream.toml whose keys replace the defaults.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Keep the replay repositories in this folder.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// Print one JSON value on stdout.
    #[arg(long)]
    json: bool,
}

fn main() {
    dream::cmd::process::tune_allocator();
    let cli = Cli::parse();
    dream::cmd::out::init_logging(&cli.global);
    let result = match &cli.command {
        Some(Command::Cycle(a)) => cycle(&cli.global, a),
        Some(Command::FakeServer(a)) => fake_server(a),
        Some(Command::EvalLocomo(a)) => eval_locomo(a),
        Some(Command::EvalAgent(a)) => eval_agent(a),
        Some(Command::Recall(a)) => recall_bench(a),
        Some(Command::Sync(a)) => {
            sync::measure_sync(a.members, a.events, a.runs, a.seed).map(|r| {
                println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
                EXIT_OK
            })
        }
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

fn recall_bench(a: &RecallArgs) -> Result<i32> {
    let config = match &a.config {
        Some(p) => {
            let t = std::fs::read_to_string(p).context(|| format!("reading {}", p.display()))?;
            dream_core::schema::settings::Config::parse(
                &t,
                &p.display().to_string(),
                &Default::default(),
            )?
        }
        None => dream_core::schema::settings::Config::default(),
    };
    let r = recall::measure_recall(&config, a.facts, a.questions, a.seed)?;
    println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
    Ok(EXIT_OK)
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
        fake.set_latency(std::time::Duration::from_millis(a.fake_latency_ms));
        fake.set_prefix_cache(true);
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
            let d = dream_core::selection::cluster::SignLsh::default();
            dream_core::selection::cluster::SignLsh {
                tables: a.lsh_tables.unwrap_or(d.tables),
                bits: a.lsh_bits.unwrap_or(d.bits),
                probes: a.lsh_probes.unwrap_or(d.probes),
                max_neighbours: a.lsh_max_neighbours.unwrap_or(d.max_neighbours),
                ..d
            }
        },
        token_events: a.token_events.clone(),
        token_days: a.token_days,
        cycles_per_day: a.cycles_per_day.clone(),
        llm_url,
        llm_model: a.llm_model.clone(),
        seed: a.seed,
        facts: a.facts,
        stream: a.stream.as_deref().map(|p| dream::cmd::absolute(&cwd, p)),
        stream_reflect: a.stream_reflect.clone(),
        year_events: a.year_events,
        year_days: a.year_days,
        year_points: a.year_points,
    };
    let report = bench::run_scenario(&opts, fake.as_ref())?;
    if a.json {
        eprint!("{}", bench::render(&report));
        dream::cmd::print_json(&report)?;
    } else {
        print!("{}", bench::render(&report));
    }
    Ok(EXIT_OK)
}

fn eval_locomo(a: &EvalLocomoArgs) -> Result<i32> {
    let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
    let o = quality::LocomoOptions {
        path: dream::cmd::absolute(&cwd, &a.path),
        reference: a.reference,
        eval: dream_engine::eval::Options {
            only: a.only.clone(),
            config: a.config.as_deref().map(|p| dream::cmd::absolute(&cwd, p)),
            keep: a.keep.as_deref().map(|p| dream::cmd::absolute(&cwd, p)),
            llm: None,
        },
    };
    let q = quality::locomo(&o)?;
    if a.json {
        dream::cmd::print_json(&q)?;
    } else {
        print!("{}", quality::render_locomo(&q));
    }
    let c = &q.eval.overall.counts;
    if c.traceable_facts < c.facts + c.episodes {
        eprintln!("error: a fact or episode is not fully traceable to the events it cites");
        return Ok(1);
    }
    Ok(EXIT_OK)
}

fn eval_agent(a: &EvalAgentArgs) -> Result<i32> {
    let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
    let o = quality::AgentOptions {
        seeds: a.seeds.clone(),
        days: a.days,
        config: a.config.as_deref().map(|p| dream::cmd::absolute(&cwd, p)),
        keep: a.keep.as_deref().map(|p| dream::cmd::absolute(&cwd, p)),
    };
    let rows = quality::agent(&o)?;
    if a.json {
        dream::cmd::print_json(&rows)?;
    } else {
        print!("{}", quality::render_agent(&rows));
    }
    Ok(EXIT_OK)
}

/// One cycle as `dream run --json` runs it, printed with the process's own peak memory.
fn cycle(g: &Global, a: &RunArgs) -> Result<i32> {
    let root = dream::cmd::repo_root(g)?;
    let mut config = dream_engine::config::load(&root)?;
    if let Some(b) = a.budget {
        config.budget.tokens_per_cycle = b;
    }
    let provider = dream_engine::providers::llm(&config)?;
    let embedder = dream_engine::providers::embedder(&config)?;
    let opts = CycleOptions {
        kind: a.cycle,
        dry_run: a.dry_run,
        allow_loss: false,
        now: dream::cmd::now(g)?,
    };
    let report = cycle::run_cycle(&root, &config, provider.as_ref(), embedder.as_ref(), &opts)?;
    dream::cmd::print_json(&serde_json::json!({
        "report": report,
        "peak_rss_kb": bench::peak_rss_kb(),
    }))?;
    Ok(EXIT_OK)
}

fn fake_server(a: &FakeServerArgs) -> Result<i32> {
    use std::io::{BufRead, Write};
    let events = match &a.stream {
        Some(path) => stream::load(path)?.1,
        None => bench::token_workload_of(a.seed, a.days, a.events).events,
    };
    let mut text = String::with_capacity(events.len() * 200);
    for e in &events {
        text.push_str(&e.to_line());
        text.push('\n');
    }
    std::fs::write(&a.events_out, text)
        .context(|| format!("writing {}", a.events_out.display()))?;
    let fake = dream_testkit::fake_llm::FakeLlm::start();
    fake.on("", dream_testkit::fake_llm::mem0_extract);
    println!("{}", fake.base_url());
    std::io::stdout().flush().ok();
    // Serve until whoever started us closes our stdin.
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
    Ok(EXIT_OK)
}

/// Build repositories from a deterministic synthetic workload and measure the cycles that
/// matter in child processes: per-stage time, engine and process wall time, peak memory,
/// LLM calls and tokens, as medians over --runs. Use a release build. See
/// docs/BENCHMARKS.md.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Scenarios: all, heavy (also measures idle), incremental, cluster, tokens, agents;
    /// and, not in all: stream (it reads a dataset, --stream) and year (a million events).
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

    /// Events of the token scenario (several sizes: 1000,5000).
    #[arg(long, value_delimiter = ',', default_value = "2000")]
    pub token_events: Vec<usize>,

    /// Days the token scenario's events span.
    #[arg(long, default_value_t = 7)]
    pub token_days: u32,

    /// The token scenario's schedules, in cycles a day: 0 is one cycle over all the events
    /// at the end; 1 an evening cycle each day as the timer runs it; 2 a cycle every 12
    /// hours (several: 0,1,2). Each daily schedule is compared with the one cycle.
    #[arg(long, value_delimiter = ',', default_value = "0,1")]
    pub cycles_per_day: Vec<u32>,

    /// Neighbour groups one search keeps for the clustering scenario (0: all; the engine
    /// keeps `dream_core::selection::cluster::MAX_NEIGHBOURS`).
    #[arg(long)]
    pub lsh_max_neighbours: Option<usize>,

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

    /// The stream scenario's dataset: a LoCoMo file (a JSON array of conversations), read
    /// where it is; every conversation's turns become one person's stream.
    #[arg(long, value_name = "PATH")]
    pub stream: Option<PathBuf>,

    /// What the fake server's reflect answers in the stream scenario: reference (the
    /// dataset's own observations of the turns a call shows, citing them) or echo (each
    /// cluster's first owner line, as in the token scenario).
    #[arg(long, default_value = "reference", value_parser = ["reference", "echo"])]
    pub stream_reflect: String,

    /// Events of the year scenario (a heavy user's year).
    #[arg(long, default_value_t = 1_000_000)]
    pub year_events: usize,

    /// Days of the year scenario.
    #[arg(long, default_value_t = 365)]
    pub year_days: u32,

    /// Lengths of history the year scenario measures: the whole year, and before it each
    /// half the one after (4: 45, 91, 182 and 365 days).
    #[arg(long, default_value_t = 4)]
    pub year_points: u32,
}
