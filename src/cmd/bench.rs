//! `dream bench` (hidden): the benchmark of docs/BENCHMARKS.md.

use crate::bench::{self, Options};
use crate::cli::{BenchArgs, Global, RunArgs};
use crate::config::Config;
use crate::cycle::{self, Options as CycleOptions};
use crate::error::{Context, Result, EXIT_OK};

pub fn run(g: &Global, a: &BenchArgs) -> Result<i32> {
    let _ = g;
    let exe = std::env::current_exe().context(|| "finding the dream binary".into())?;
    let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
    // --fake-llm: the scripted OpenAI-compatible server of the tests, on loopback in this
    // process, answering reflect with the owner's sentence, judge with "no conflict", and
    // every other stage (the passes, the baseline's extraction) with an empty object, each
    // with its token usage; --fake-latency-ms adds a delay to every reply.
    let fake = a.fake_llm.then(|| {
        let fake = crate::fake_llm::FakeLlm::start();
        fake.on("reflect", crate::fake_llm::echo_reflect);
        fake.on("judge", crate::fake_llm::agreeable_judge);
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
        dir: a.dir.as_deref().map(|d| super::absolute(&cwd, d)),
        exe,
        window: a.window,
        new: a.new,
        history: a.history,
        increment: a.increment,
        cluster_sizes: a.cluster_sizes.clone(),
        exact_up_to: a.exact_up_to,
        linfa_up_to: a.linfa_up_to,
        lsh: {
            let d = crate::cluster::SignLsh::default();
            crate::cluster::SignLsh {
                tables: a.lsh_tables.unwrap_or(d.tables),
                bits: a.lsh_bits.unwrap_or(d.bits),
                probes: a.lsh_probes.unwrap_or(d.probes),
                ..d
            }
        },
        token_events: a.token_events,
        llm_url,
        llm_model: a.llm_model.clone(),
        seed: a.seed,
    };
    let report = bench::run(&opts, super::init::init)?;
    if a.json {
        eprint!("{}", bench::render(&report));
        super::print_json(&report)?;
    } else {
        print!("{}", bench::render(&report));
    }
    Ok(EXIT_OK)
}

/// `dream bench-cycle` (hidden): one cycle as `dream run --json` runs it, printed with the
/// process's own peak memory.
pub fn cycle(g: &Global, a: &RunArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let mut config = Config::load(&root)?;
    if let Some(b) = a.budget {
        config.budget.tokens_per_cycle = b;
    }
    let provider = crate::llm::from_config(&config)?;
    let embedder = crate::embed::from_config(&config)?;
    let opts = CycleOptions {
        kind: a.cycle,
        dry_run: a.dry_run,
        now: super::now(g)?,
    };
    let report = cycle::run(&root, &config, provider.as_ref(), embedder.as_ref(), &opts)?;
    super::print_json(&serde_json::json!({
        "report": report,
        "peak_rss_kb": bench::peak_rss_kb(),
    }))?;
    Ok(EXIT_OK)
}
