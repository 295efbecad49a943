//! The command line: every clap definition in one file (one struct per subcommand), and
//! logging set-up. The commands themselves live in `cmd/`, one file each.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use dream_core::schema::settings::CycleKind;
use dream_core::sources::adapters::Format;
pub use dream_engine::agents::hooks::{Harness, HookMethod};

const EXIT_CODES: &str = "\
Exit codes:
  0   success (including a run that found nothing to do)
  1   failure while working (I/O, git, state, provider)
  2   usage or configuration error (the message names the key or argument)
  10  `dream run`, `dream status --check`: the cycle finished, and the heartbeat warns
      (nothing kept for cycles, a stage degraded, a timer not firing...): see `dream status`
  75  another dream process holds the repo's lock; nothing was written

Environment:
  DREAM_REPO                 the memory repo, when --repo is not given
  DREAM_<SECTION>_<KEY>      override a dream.toml key, e.g. DREAM_BUDGET_TOKENS_PER_CYCLE=50000
  OPENAI_API_KEY             the model server's key (or the variable llm.api_key_env names)
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
    /// dream.toml). `dream schedule install` and `uninstall` take several.
    #[arg(long, global = true, value_name = "DIR", env = "DREAM_REPO", action = clap::ArgAction::Append)]
    pub repo: Vec<PathBuf>,

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
    // Init, Run, Ingest, Status and Demo take their help from their argument structs (a
    // doc comment here would hide the struct's long help); so do Review, Explain, Undo, Log.
    Init(InitArgs),
    Join(JoinArgs),
    Sync(SyncArgs),
    Run(RunArgs),
    Backfill(BackfillArgs),
    Status(StatusArgs),
    Doctor(DoctorArgs),
    Review(ReviewArgs),
    Explain(ExplainArgs),
    Log(LogArgs),
    Undo(UndoArgs),
    Purge(PurgeArgs),
    Rebuild(RebuildArgs),
    Ingest(IngestArgs),
    Context(ContextArgs),
    Hooks(HooksArgs),
    Mcp(McpArgs),
    /// Re-audit the repository: every pass mutation, archive entry, fact and count.
    ///
    /// Independently of the code that wrote the repository, walks its git history and
    /// re-measures every mutation the maintenance passes applied (a dropped duplicate must
    /// really be >= 0.9 similar to the fact kept, a merged text must use only the merged
    /// facts' words and names, a forgotten fact must really be stale or over capacity and
    /// unprotected), checks every archive entry against what it claims and that no cycle
    /// deleted a fact without archiving it. Then traces every active fact to its supporting
    /// events in .dream/state.sqlite (facts you wrote yourself are trusted), looks for
    /// secrets (gitleaks' rule set and dream's own detectors) in every line of memory, the
    /// archive and pending cards, naming the file, line and rule but never the text, loads
    /// dream.toml (an invalid one is a problem), and checks that every cycle's counts balance.
    ///
    /// Exits 0 when every check passes and 1 when any fails, listing each problem with the
    /// commit and fact it concerns. Run it after hand edits, in CI, or from a timer.
    Verify(VerifyArgs),
    Quiz(QuizArgs),
    /// List, read, activate or discard the skills dream drafted from recurring procedures.
    ///
    /// When the same procedure (the tool calls that served one request, with one-off values
    /// such as paths and messages left out) recurs on several days across sessions, the
    /// evening cycle drafts an Agent Skills SKILL.md for it under skills/drafts/<name>/, or, when
    /// it is less sure, a review card proposes one. Drafts are inert: no agent sees them until
    /// you promote one, which moves it to skills/active/<name>/ and, when skills.install_to is
    /// set in dream.toml, copies it there (for example ~/.claude/skills). Each decision is one
    /// commit.
    Skills(SkillsArgs),
    /// Install, remove or show the timers that run the morning and evening cycles.
    ///
    /// dream runs twice a day with the platform's timer: systemd user units on Linux, launchd
    /// agents on macOS.
    ///
    /// `install` writes, for the current user, a morning and an evening unit that run
    /// `dream --repo REPO run --cycle morning|evening` with absolute paths to this binary and to
    /// the repository (--repo, $DREAM_REPO, or the repository around the current folder), then
    /// enables them. Where that is not possible (no user systemd instance, as in containers and
    /// CI) it says so and prints the exact commands to run later. `status` shows what is
    /// installed and when each cycle runs next; `uninstall` stops and removes the units.
    ///
    /// A missed run happens at the next boot or wake-up (systemd `Persistent=true`); a run that
    /// finds another cycle holding the lock exits 75, and one that finished with heartbeat
    /// warnings exits 10: the units count both as success. Logs go to the journal
    /// (`journalctl --user -u dream-evening`) or, with launchd, to REPO/.dream/logs/.
    ///
    /// Several repositories (`--repo A --repo B`) get the systemd template units, one
    /// instance per repository with staggered start times. See docs/operations.md.
    Schedule(ScheduleArgs),
    Demo(DemoArgs),
    /// Measure memory quality on a public conversation benchmark (LoCoMo).
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    ///
    /// For example: `dream completions bash > ~/.local/share/bash-completion/completions/dream`,
    /// `dream completions zsh > ~/.zfunc/_dream`, or
    /// `dream completions fish > ~/.config/fish/completions/dream.fish`.
    Completions(CompletionsArgs),
    /// Print the man page, or write one page per command into a folder.
    ///
    /// Without --out-dir, prints dream(1) on stdout, generated from this command line's own
    /// help. With --out-dir, writes dream.1 and one page per command (dream-run.1, ...) there,
    /// for example: `dream man --out-dir ~/.local/share/man/man1`.
    Man(ManArgs),
}

/// Print what an agent should load at session start, within a token budget.
///
/// Durable facts (persona, human, scratch) first, ranked by salience (block weight, the
/// protected bonus, recency) plus reinforcement (how many supporting events a fact cites);
/// then recent episodes, last seen first; then one line on what waits for you (review cards,
/// skill drafts). Lines are admitted in that order while the whole text stays within the
/// budget, counted as the token budget counts (half the bytes, more than any real
/// tokenizer), and the last lines say how many facts were left out. Each fact ends with its
/// id, so an agent can cite it or ask `dream explain` about it.
///
/// The first line carries the marker `dream:recalled`: when a transcript dream reads holds
/// this text (a hook's output, a file an agent read), it is stored as recalled and never
/// counts as support, so memory never reinforces itself. Read-only: no lock, safe while a
/// cycle runs. Each cycle also writes the same view to context.file (CONTEXT.md).
#[derive(Debug, Args)]
#[command(after_long_help = CONTEXT_HELP)]
pub struct ContextArgs {
    /// The most tokens to print (default: context.budget_tokens, 2000).
    #[arg(long, value_name = "TOKENS", conflicts_with = "all")]
    pub budget: Option<u64>,

    /// Rank facts relevant to this task first (its words, and the embedder's vectors).
    #[arg(long, value_name = "TEXT")]
    pub query: Option<String>,

    /// Every active fact, no budget.
    #[arg(long)]
    pub all: bool,

    /// Output format.
    #[arg(long, value_enum, default_value_t = ContextFormat::Markdown)]
    pub format: ContextFormat,

    /// Run as a harness's session-start hook: on any error print one line saying memory is
    /// unavailable, and exit 0, so a broken repository never stops a session. With
    /// claude-code, the JSON Claude Code writes on stdin (`cwd`, `session_id`, `source`)
    /// names the session's project; stdin that is not that JSON is ignored.
    #[arg(long, value_name = "HARNESS", value_parser = ["claude-code", "codex"])]
    pub hook: Option<String>,

    /// The session's project: a folder, whose git repository (every worktree of it the
    /// same) is the project. Global facts and this project's are shown, not other
    /// projects'. Default: the hook's `cwd`, else the current folder.
    #[arg(long, value_name = "PATH", conflicts_with = "every_project")]
    pub project: Option<String>,

    /// Every project's facts, not only the global ones and the current project's.
    #[arg(long)]
    pub every_project: bool,
}

const CONTEXT_HELP: &str = "\
Examples:
  dream context                              # Markdown, within context.budget_tokens
  dream context --budget 800 --query \"fix the flaky deploy test\"
  dream context --format json | jq '.facts[].id'
  dream context --all                        # every active fact
  dream context --project ~/src/shop         # global facts and the shop repository's";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ContextFormat {
    Markdown,
    Json,
}

/// Put dream's context into Claude Code or Codex for the current user, or take it out.
///
/// claude-code: by default a SessionStart hook in ~/.claude/settings.json (or
/// $CLAUDE_CONFIG_DIR) whose command is `dream --repo REPO context --hook claude-code`: it
/// runs at every start, resume, /clear and after every compaction, so the context is always
/// fresh and comes back after a compaction. `--method import` instead adds an `@` import of
/// the repository's CONTEXT.md (rewritten by each cycle) to ~/.claude/CLAUDE.md.
///
/// codex: a block between dream's markers in ~/.codex/AGENTS.md (or $CODEX_HOME), holding
/// the context; each cycle refreshes the block's contents. AGENTS.md is read by every Codex
/// version and surface without a trust prompt. `--method hook` instead adds a SessionStart
/// hook to ~/.codex/hooks.json (Codex versions with hooks; Codex asks you to trust it once).
///
/// gemini, opencode, copilot: the same managed block in the file each reads as your own
/// instructions at every session: ~/.gemini/GEMINI.md, ~/.config/opencode/AGENTS.md,
/// ~/.copilot/copilot-instructions.md.
///
/// Both also add the harness's transcripts as an [[inbox.sources]] entry of dream.toml, so
/// each cycle reads your sessions. Everything else in those files is left exactly as it
/// was; the first change keeps a backup beside the file (*.dream-backup); installing twice
/// changes nothing; `uninstall` takes out only what install added, and restores the file
/// byte for byte when nothing else changed it since. `--dry-run` prints the change.
#[derive(Debug, Args)]
#[command(after_long_help = HOOKS_HELP)]
pub struct HooksArgs {
    #[command(subcommand)]
    pub action: HooksAction,
}

const HOOKS_HELP: &str = "\
Examples:
  dream hooks install claude-code --repo ~/memory --dry-run
  dream hooks install claude-code --repo ~/memory
  dream hooks install claude-code --method import
  dream hooks install codex --repo ~/memory
  dream hooks install codex --method hook     a SessionStart hook instead of the block
  dream hooks install gemini                  (also opencode, copilot)
  dream hooks status
  dream hooks uninstall claude-code";

#[derive(Debug, Subcommand)]
pub enum HooksAction {
    /// Add dream's context to a harness (and its transcripts to the inbox sources).
    Install(HooksInstallArgs),
    /// Take out what install added.
    Uninstall(HooksTarget),
    /// Show what is installed, for each harness or the one named.
    Status(HooksStatusArgs),
}

/// The harnesses `dream hooks` knows, as clap reads them: the names and their help come from
/// the engine's [`Harness`], so a new harness is one variant there.
fn harness_value() -> impl TypedValueParser<Value = Harness> {
    let names = Harness::ALL.map(|h| {
        let value = PossibleValue::new(h.as_str());
        match h.about() {
            Some(about) => value.help(about),
            None => value,
        }
    });
    PossibleValuesParser::new(names).try_map(|s| s.parse::<Harness>())
}

/// The ways `dream hooks install` can put the context into a harness (the engine's
/// [`HookMethod`]).
fn hook_method_value() -> impl TypedValueParser<Value = HookMethod> {
    let names = HookMethod::ALL.map(|m| PossibleValue::new(m.as_str()).help(m.about()));
    PossibleValuesParser::new(names).try_map(|s| s.parse::<HookMethod>())
}

#[derive(Debug, Args)]
pub struct HooksTarget {
    /// The harness.
    #[arg(value_parser = harness_value())]
    pub harness: Harness,

    /// Print the change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct HooksInstallArgs {
    #[command(flatten)]
    pub target: HooksTarget,

    /// How the agent gets the context: Claude Code a SessionStart hook by default (or an
    /// import); the others a managed block by default; Codex also takes `hook`, a
    /// SessionStart hook in ~/.codex/hooks.json (Codex asks you to trust it once).
    #[arg(long, value_parser = hook_method_value())]
    pub method: Option<HookMethod>,
}

#[derive(Debug, Args)]
pub struct HooksStatusArgs {
    /// Only this harness.
    #[arg(value_parser = harness_value())]
    pub harness: Option<Harness>,

    /// One JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Serve recall, explain and remember to agents over MCP (stdio).
///
/// A Model Context Protocol server on standard input and output, for Claude Code, Codex or
/// any MCP client. Tools: `recall` (search facts and episodes by text: the words, plus the
/// embedder's vectors; ranked, with ids and dates), `explain` (a fact's, card's or
/// candidate's provenance, as `dream explain` prints it) and `remember` (append an event to
/// the inbox with trust `agent`: it never writes memory; the next cycle decides, under the
/// same gates as everything else). Read-only on the repository: it takes no lock and is
/// safe while a cycle runs. Facts `recall` returns are recorded as used in .dream/uses.jsonl
/// (see retention.unused_after_days).
///
/// Claude Code: `claude mcp add --scope user dream -- dream --repo ~/memory mcp`.
/// Codex (~/.codex/config.toml): `[mcp_servers.dream]` with `command = "dream"` and
/// `args = ["--repo", "/home/you/memory", "mcp"]`.
///
/// `recall` searches the global facts and the current project's (the git repository of the
/// folder the agent started the server in, or --project); its `scope` argument `all`
/// searches every project's.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The session's project (a folder; its git repository is the project). Default: the
    /// folder the server was started in.
    #[arg(long, value_name = "PATH")]
    pub project: Option<String>,
}

/// Create a memory repository: layout, commented dream.toml, .gitignore, first commit.
///
/// Creates it in DIR (default: the current folder), which must be new, empty, or an empty
/// git repository: memory/ (the blocks agents read), review/, archive/, skills/, digests/,
/// a dream.toml listing every key with its default, a .gitignore for events/ (the inbox)
/// and .dream/ (state and lock), and a first commit. On an existing dream repository this
/// says so and changes nothing.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to create the repository.
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Share the memory through this git remote (a bare repository over ssh, git://,
    /// https or file://), this machine the one that dreams it: the first push creates
    /// memory there. A remote that already holds a memory is refused: `dream join` it.
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
    /// This machine's name, as commits and the other machines see it (with --remote;
    /// default: the host name).
    #[arg(long, value_name = "NAME", requires = "remote")]
    pub machine: Option<String>,
}

/// Join a shared memory as a member: a local copy for reading, this machine's events shipped.
///
/// Clones the memory at URL into PATH (a new or empty folder) and makes this machine a
/// member: `dream sync` (from a timer, and bounded from the SessionStart hook) turns its
/// new inbox lines and agent transcripts into events here (the turn splitter and secret
/// redaction run on this machine, so a secret said here never leaves it), commits them to
/// its own branch at the remote, fetches memory and moves the local copy forward. Agents
/// on this machine load the local copy (`dream context --repo PATH`). A machine may join
/// several memories (a personal one and a team's), each in its own PATH, each with the
/// projects whose events it ships (--projects).
#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The memory's git remote, as its dreamer gave it to `dream init --remote`.
    #[arg(value_name = "URL")]
    pub url: String,
    /// Where the local copy goes.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// This machine's name (default: the host name); one machine, one name.
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// Whose events this machine ships (stamped on each as meta.person).
    #[arg(long, value_name = "NAME")]
    pub person: Option<String>,
    /// Ship only events of projects whose path holds this text (repeatable; default: all).
    #[arg(long = "projects", value_name = "FILTER")]
    pub projects: Vec<String>,
}

/// Ship what is new and fetch memory (a member), or fetch what members shipped (the dreamer).
///
/// On a member: new inbox and transcript lines become events here (turns split, secrets
/// redacted), are committed to this machine's branch and pushed; then memory is fetched
/// and the local copy moved forward. On the dreamer: the members' branches are fetched and
/// their events stored, a person's edits made at the remote are merged in, and memory is
/// pushed if this machine is ahead. Idempotent and safe from a timer: a remote that cannot
/// be reached leaves everything committed here for the next sync (exit 0, with a note).
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Spend at most this many seconds on the network (a session hook gives 2).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Print what the sync did as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Run one consolidation cycle (what the timer runs twice a day).
///
/// Takes the repository's lock, ingests new inbox lines, embeds them, clusters the rolling
/// window, reflects on every cluster with a new event, gates, judges and routes each
/// candidate, runs the maintenance passes, commits, advances the watermark, and prints a
/// report. Auto-promoted facts land in memory/*.md, doubtful ones become review cards under
/// review/, and every refusal is listed with its reason. A second run with nothing new
/// makes no commit.
///
/// While a model is called, progress goes to stderr: a bar on a terminal, plain lines
/// otherwise (a log, the journal under systemd); `dream status` shows the running cycle's
/// pid, start and stage. Clusters that could not be reflected (budget, a server down or
/// too slow, a reply that was cut off) stay pending for the next cycle; one whose call
/// failed the same way twice is held until its events, the model, llm.max_tokens or
/// llm.timeout_secs change, and the report says what to change.
///
/// The events only count inside the last cluster.window_days days before --now (the wall
/// clock by default): to try the shipped sample events, pass --now 2026-11-06T21:00:00Z.
#[derive(Debug, Args)]
#[command(after_long_help = EXIT_CODES)]
pub struct RunArgs {
    /// Which cycle: evening consolidates; morning ingests, embeds and writes a digest
    /// (profiles are set under [cycles] in dream.toml).
    #[arg(long, value_parser = cycle_kind(), default_value = "evening")]
    pub cycle: CycleKind,

    /// Run every step and print the report and the plan, but write nothing at all: no
    /// file, no commit, no state row, no watermark.
    #[arg(long)]
    pub dry_run: bool,

    /// Print the report as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,

    /// Override budget.tokens_per_cycle for this run. No model call starts that could
    /// cross it; clusters not reflected on wait for the next cycle.
    #[arg(long, value_name = "TOKENS")]
    pub budget: Option<u64>,

    /// Lift the loss guard for this run: the maintenance passes may archive more than
    /// retention.max_loss_share of the active facts, and protected or owner-written facts
    /// whose words the fact kept in their place lacks. Without it such archivals are
    /// refused, with the figures, and wait for a person. The pass commits of this run say
    /// `Dream-Loss-Guard: lifted`.
    #[arg(long)]
    pub allow_loss: bool,
}

/// Consolidate the history older than the window now, oldest first, window by window.
///
/// The evening cycle looks at the last cluster.window_days (14) of events; history older
/// than that (months of transcripts read on the first run, or events a budget stop left
/// behind) is consolidated by the backfill: one window of cluster.window_days at a time,
/// oldest first, each window its own commit (`dream: backfill 2026-05-01 to 2026-05-14:
/// ...`), under the same token budget, before the current window. `dream run` does this by
/// itself and goes on from where the last cycle stopped (a mark in the state); the
/// heartbeat's `unreflected` warning says when old events are still waiting.
///
/// `dream backfill` is that evening cycle, except that it starts again at the oldest event
/// no cycle has looked at, so windows whose calls failed are tried again. Progress goes to
/// stderr, one line per window. A cycle the budget stops is resumed by the next run or
/// backfill; a killed one is rolled back and done again. The report lists the first 2,000
/// candidates and counts the rest; `dream log` shows each from its window's commit. Exits
/// 10 when it finished with heartbeat warnings (for example older events still left).
#[derive(Debug, Args)]
pub struct BackfillArgs {
    /// Run every step and print the report, but write nothing at all.
    #[arg(long)]
    pub dry_run: bool,

    /// Print the report as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,

    /// Override budget.tokens_per_cycle for this run. No model call starts that could
    /// cross it; what is left waits for the next cycle.
    #[arg(long, value_name = "TOKENS")]
    pub budget: Option<u64>,
}

/// Validate events (JSON Lines, one object per line) and append them to the inbox.
///
/// Each line needs `ts` (RFC 3339), `kind` and `text`; see docs/sources.md for every field.
/// Secrets are redacted before anything is written. Valid lines are appended to
/// events/ingest-<date>.jsonl; invalid ones are listed with their line number and reason,
/// and the exit code is 1 when there were any.
///
/// With --format claude-code, codex, gemini, opencode or copilot, reads an agent's
/// transcripts instead (files, or folders searched for the files that format reads; any
/// other file there is named as not read), turns them into events as docs/sources.md
/// describes, and appends those. opencode's database is only ever opened read-only. To read them every cycle instead, add an [[inbox.sources]] entry to
/// dream.toml.
#[derive(Debug, Args)]
#[command(after_long_help = INGEST_EXAMPLES)]
pub struct IngestArgs {
    /// Files or folders to read; `-` or nothing reads standard input (jsonl only).
    #[arg(value_name = "PATH")]
    pub files: Vec<PathBuf>,

    /// What the input is: dream's own events, or one agent's sessions.
    #[arg(long, value_parser = format(), default_value = "jsonl")]
    pub format: Format,

    /// Read and check everything and print what would be appended, but write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

const INGEST_EXAMPLES: &str = "\
Examples:
  dream ingest events.jsonl                              dream's own events
  dream ingest --format claude-code ~/.claude/projects   every Claude Code session, once
  dream ingest --format codex --dry-run ~/.codex/sessions/2026/11
                                                         what would be read, writing nothing
  dream ingest --format gemini ~/.gemini/tmp             Gemini CLI (.json and .jsonl chats)
  dream ingest --format opencode ~/.local/share/opencode/opencode.db
  dream ingest --format copilot ~/.copilot/session-state

Every cycle instead, in dream.toml:
  [[inbox.sources]]
  format = \"claude-code\"
  path = \"~/.claude/projects\"";

/// Show pending events, inbox lag, review queue, quarantine, recent cycles and warnings.
///
/// Reads the repository and its state without changing anything: a cycle running now (its
/// pid, since when, and its stage), events not yet looked at by a cycle, inbox bytes not
/// yet read, pending review cards and skill proposals, quarantined lines (with file, line
/// and reason), the last cycles' counts (and errors), and the heartbeat's warnings: the
/// quiet failures of a job nobody watches (cycles that keep nothing, a gate refusing nearly
/// everything, a stage degraded cycle after cycle, a timer that stopped firing, a source
/// that stopped growing, a budget too small, the loss guard holding archivals back), each
/// with what to do. Thresholds: [heartbeat] in dream.toml.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,

    /// Exit 10 when the heartbeat warns (for a monitor or a cron job), else 0.
    #[arg(long)]
    pub check: bool,
}

/// Check the installation end to end: each check ok, warn or fail, with the fix.
///
/// In order: the repository and dream.toml; the lock (free, and on a file system that
/// honours it: NFS, SMB and FUSE mounts are warned about); the state database (schema
/// version, integrity); git (a branch, the identity commits use); the inbox and every
/// [[inbox.sources]] entry (there, readable); the schedule (a systemd or launchd timer
/// installed for this repository, enabled, running a binary that exists); the age of the
/// last cycle; the model endpoint (one tiny call in JSON mode; skipped with --offline or
/// the offline provider); the embedder (loads and embeds one text); disk space; and the
/// heartbeat's warnings (see `dream status`).
///
/// Changes nothing. Exits 1 when a check fails, else 0 (warnings included): run it after
/// installing, after changing dream.toml, or from a monitor.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print one JSON object on stdout: `checks` (name, status, detail, fix) and the counts.
    #[arg(long)]
    pub json: bool,

    /// Make no network call: the model endpoint (and a remote embedder) are skipped.
    #[arg(long)]
    pub offline: bool,
}

/// Run a whole cycle on the shipped sample events in a scratch repository.
///
/// Creates a repository (in a temporary folder, or --keep DIR), puts the sample events in
/// its inbox (five days of an agent's sessions, with noise, a pasted API key and malformed
/// lines), runs an evening cycle at the sample's last evening with the offline defaults,
/// and prints the report and where to look.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Create the demo repository here instead of a temporary folder (kept afterwards).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,

    /// Print the report as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `dream verify` (SPEC S12); its help text is on [`Command::Verify`].
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Print the result as one JSON object on stdout (`ok`, what was checked, `problems`).
    #[arg(long)]
    pub json: bool,
}

/// Ask memory questions only it can answer, and check that forgotten facts stay forgotten.
///
/// Each question is a cloze made from one fact: its other words are the question, and one
/// hidden name, number, date or specific word is the answer. It is asked through the read
/// path an agent uses, `recall` (what `dream mcp`'s recall tool returns, quiz.recall_limit
/// results), and scored by token overlap: the hidden word must be in a returned line, so an
/// answer that merely sounds right scores nothing. A question missed on the first try is
/// re-asked once in the fact's own words and counted as a second attempt. For a fact that
/// was forgotten (archived as stale, over capacity, expired, superseded), the right answer
/// is that memory does not recall it; a merged or deduplicated fact's words must still be
/// found in the fact that took its place.
///
/// `dream quiz` asks about the most recent archive entries, then protected and most-used
/// facts, then the other active facts, at most --max (default quiz.max_questions). Every
/// evening cycle runs the same quiz on what it changed (see `dream log`, `dream status`).
/// With --model (or quiz.model = true) and a model configured, the model answers from
/// `dream context` instead, under budget.tokens_per_cycle; a failed call falls back to recall.
///
/// Read-only: no lock, no use counted, nothing written. Exits 0 when every question passes,
/// 1 when any fails, each failure naming its fact and what was asked.
#[derive(Debug, Args)]
#[command(after_long_help = QUIZ_HELP)]
pub struct QuizArgs {
    /// The most questions to ask (default: quiz.max_questions).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=100000))]
    pub max: Option<u64>,

    /// Let the configured model answer from `dream context` (spends tokens).
    #[arg(long)]
    pub model: bool,

    /// Print the result as one JSON object on stdout (the score, `failures`, every question).
    #[arg(long)]
    pub json: bool,
}

const QUIZ_HELP: &str = "\
Examples:
  dream quiz                      # up to quiz.max_questions questions, answered by recall
  dream quiz --max 200            # more of memory
  dream quiz --json | jq '.failures[].question.fact'
  dream explain f_1a2b3c4d        # a fact's quiz questions, with the mutation that touched it";

/// Decide on queued review cards: one at a time on a terminal, or by subcommand
///
/// Cards are what a cycle would not promote on its own (review/<card-id>.md). On a
/// terminal, `dream review` shows one card at a time, best first, with how many are
/// left: the candidate fact, its block and category, why it was queued, the judge's
/// verdict, the fact it would supersede (for a contradiction), each supporting event (time,
/// session, excerpt) and every gate's measured value against its threshold. Keys:
///
///   a        accept: the fact goes into its block (origin `review`), one commit
///   r        reject: type an optional reason, Enter; the card moves to review/decided/
///   e        edit: reword the fact, Enter; the text is gated again against the card's
///            events (coverage, names and numbers, secrets) and becomes your own fact
///   s        skip to the next card (it stays pending)
///   q, Esc   quit (decisions already made are committed)
///   Up, Down, PgUp, PgDn   scroll a long card
///
/// Accepting a card that supersedes a contradicted fact ends the old fact's validity and
/// moves it to archive/facts.md. Every decision is one commit, made under the same lock as
/// a cycle: while a cycle runs, review exits 75 (or, at a keystroke, says so and waits
/// for you to try again). Rejected and undone texts are remembered: the same evidence never
/// brings them back, and new evidence only brings them back to review.
///
/// The queue holds at most review.max_new_cards cards: a cycle tops it up, best first,
/// and the rest wait for room (`dream review list --waiting`), nothing lost. Decide in
/// batches with filters (`dream review reject --below 0.5`, `--session S`, `--cluster ID`,
/// `--all`, with --dry-run first): one commit, undone whole by `dream undo --cycle`.
///
/// Without a terminal (scripts, pipes), use the subcommands below.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReviewArgs {
    #[command(subcommand)]
    pub action: Option<ReviewAction>,
}

#[derive(Debug, Subcommand)]
pub enum ReviewAction {
    /// List pending cards, best first (the most salient, then the oldest), and how many
    /// more wait for room in the queue.
    List {
        /// Print one JSON array of cards (id, text, block, category, reason,
        /// supportingEventIds, gates, ...).
        #[arg(long)]
        json: bool,
        /// List the cards waiting for room in the queue (review.max_new_cards) instead.
        #[arg(long)]
        waiting: bool,
    },
    /// Show one card in full.
    Show {
        /// The card id (c_1a2b3c4d, or just its 8 hex digits).
        #[arg(value_name = "ID")]
        id: String,
        /// Print the card as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Accept cards: each fact goes into its block; one commit.
    ///
    /// One card by its id, or a batch: several ids, or the filters below (a card is taken
    /// when it matches every one given). A batch is one commit and one review session,
    /// made under the lock like a single decision; `dream undo --cycle SESSION` takes it
    /// all back. Try it with --dry-run first.
    #[command(verbatim_doc_comment)]
    Accept {
        #[arg(value_name = "ID")]
        ids: Vec<String>,
        /// A note kept with the decision.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        #[command(flatten)]
        batch: BatchArgs,
    },
    /// Reject cards: each moves to review/decided/ with the reason; one commit.
    ///
    /// One card by its id, or a batch: several ids, or the filters below (a card is taken
    /// when it matches every one given), for example everything below a salience:
    ///
    ///   dream review reject --below 0.5 --dry-run     what it would take
    ///   dream review reject --below 0.5 --reason "small talk"
    ///   dream review reject --session 7f3a --waiting  a session's cards, waiting ones too
    ///   dream review reject --cluster c_1a2b3c4d      a card and the cards saying about the same
    ///
    /// A batch is one commit and one review session, made under the lock like a single
    /// decision; `dream undo --cycle SESSION` takes it all back. Rejected texts are
    /// remembered: the same evidence never brings them back.
    #[command(verbatim_doc_comment)]
    Reject {
        #[arg(value_name = "ID")]
        ids: Vec<String>,
        /// Why (kept on the card, in the commit, and shown if the fact comes back).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        #[command(flatten)]
        batch: BatchArgs,
    },
    /// Accept a card in your own words (gated again against the card's events).
    Edit {
        #[arg(value_name = "ID")]
        id: String,
        /// The fact as you would put it.
        #[arg(value_name = "TEXT")]
        text: String,
    },
}

/// Which cards a batch decision takes: a card is taken when it matches every filter.
#[derive(Debug, Args, Default)]
pub struct BatchArgs {
    /// Cards citing an event of this session (its id, or the start of it).
    #[arg(long, value_name = "SESSION")]
    pub session: Option<String>,
    /// Cards whose salience is below this (0 to 1; `dream review list` shows each card's).
    #[arg(long, value_name = "SALIENCE")]
    pub below: Option<f32>,
    /// This card's cluster: the cards linked to it through cards saying about the same
    /// thing (their meaning's vectors within the restatement distance).
    #[arg(long, value_name = "ID")]
    pub cluster: Option<String>,
    /// Every pending card.
    #[arg(long)]
    pub all: bool,
    /// The cards waiting for room in the queue too (review.max_new_cards).
    #[arg(long)]
    pub waiting: bool,
    /// Show which cards it would take, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

impl BatchArgs {
    /// Whether these arguments ask for a batch rather than one card's decision.
    pub fn any(&self) -> bool {
        self.session.is_some()
            || self.below.is_some()
            || self.cluster.is_some()
            || self.all
            || self.waiting
            || self.dry_run
    }
}

/// Show why a fact (f_...), a card (c_...) or a candidate (k_..., refused ones too) exists.
///
/// A fact, its card and its candidate share the same 8 hex digits, so any prefix (or
/// none) shows them all: the supporting events (time, session, excerpt), every measure and
/// gate with its value and threshold as recorded by each cycle, the route it took and
/// why, any rejection or undo, the gates measured again now, and every commit that touched
/// it.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The id, with any prefix or as its bare 8 hex digits.
    #[arg(value_name = "ID")]
    pub id: String,

    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Remove a leaked secret (any string) from memory, cards, the archive and all history
///
///   printf '%s' 'THE-SECRET' | dream purge --stdin          show what would change
///   printf '%s' 'THE-SECRET' | dream purge --stdin --yes    rewrite the history
///
/// Every commit of the branch is rebuilt with the string replaced by [purged] in every file
/// and commit message; the old history is kept under refs/dream/purge-backup/<time> until
/// you delete it; the state database is rewritten and compacted. Your uncommitted edits are
/// committed first. The inbox (events/) is the agents' own record and is never rewritten:
/// the report lists the files that still hold the string.
///
/// This rewrites history: commit ids change from the first commit that held the string. If
/// the repository was pushed or cloned, the secret is out: revoke it and make a new one,
/// then force-push. To drop the last copy here once you have checked the result:
///   git update-ref -d refs/dream/purge-backup/<time>
///   git reflog expire --expire=now --all && git gc --prune=now
/// Read the string from stdin (--stdin) so it does not land in your shell history.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct PurgeArgs {
    /// The string to remove (prefer --stdin).
    #[arg(
        value_name = "STRING",
        required_unless_present = "stdin",
        conflicts_with = "stdin"
    )]
    pub text: Option<String>,

    /// Read the string from standard input (one line; a trailing newline is dropped).
    #[arg(long)]
    pub stdin: bool,

    /// Rewrite the history; without it, only show what would change.
    #[arg(long)]
    pub yes: bool,

    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Rebuild a damaged state database from the inbox and the repository
///
/// .dream/state.sqlite is a cache of what the inbox and the repository hold: the events
/// (read again from the inbox files and [[inbox.sources]]), the embeddings (computed
/// again), and the vetoes (read again from the rejected cards under review/decided/ and the
/// undone facts in archive/facts.md). This moves the damaged file aside (to
/// .dream/state.sqlite.damaged-<time>), writes a new one with the vetoes, and leaves the
/// rest to the next `dream run`, which reads every inbox file from its start; facts and
/// cards already in memory are reinforced, not doubled. Cycle records, quarantine history
/// and watermarks start afresh.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct RebuildArgs {
    /// Rebuild even when the database opens and checks as sound.
    #[arg(long)]
    pub force: bool,
}

/// Take back a fact, a rejection or a whole cycle, as a new commit (itself undoable)
///
///   dream undo f_1a2b3c4d          take a fact out of memory (to archive/facts.md, why=undone);
///                                  if it had superseded a fact, that one is valid again
///   dream undo c_1a2b3c4d          put a rejected card back in the review queue
///   dream undo --cycle ID          revert everything a cycle, review session or undo did
///                                  (ids from `dream log`); a person's hand edits are kept
///
/// Every undo is itself a commit with its own id (`undo-...`), so `dream undo --cycle
/// undo-...` takes it back. Undone facts are remembered with their supporting events: the
/// next cycles do not promote them again from the same evidence, and new evidence brings
/// them to review, never straight into memory. The inbox watermark never moves back.
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct UndoArgs {
    /// The fact (f_...) or rejected card (c_...) to take back.
    #[arg(
        value_name = "ID",
        required_unless_present = "cycle",
        conflicts_with = "cycle"
    )]
    pub id: Option<String>,

    /// Revert every commit of this cycle, review session or undo.
    #[arg(long, value_name = "CYCLE_ID")]
    pub cycle: Option<String>,

    /// Why (kept in the archive entry and the commit).
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,

    /// Print what would be undone, and write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// The audit trail from git history: one block per cycle, review session or undo.
///
/// Newest first, commits grouped by their Dream-Cycle trailer, with what was applied, what
/// was refused and why, what the engine enforced on its own, tokens spent and degraded
/// stages. Cycles that changed nothing made no commit; they are listed from the state
/// database.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only this cycle (or review session, or undo).
    #[arg(long, value_name = "CYCLE_ID")]
    pub cycle: Option<String>,

    /// At most this many blocks (0: all).
    #[arg(short = 'n', long, default_value_t = 20)]
    pub limit: usize,

    /// Print one JSON array on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Evaluations of memory quality on public datasets, replayed the way a timer would run
/// dream.
#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Replay LoCoMo conversations (one evening cycle per session date, offline by default)
    /// and measure answer retention, memory size, evidence recall and traceability, and
    /// how often `recall` finds what memory holds.
    ///
    /// Each conversation becomes a stream of events (one per turn, id
    /// `<sample_id>:<dia_id>`, both speakers trusted as owners, image captions included)
    /// consolidated in its own temporary repository with the default configuration (or
    /// the keys of --config). Answer retention counts the questions of categories 1, 2 and
    /// 4 whose answer's content words all appear in one durable fact (and, beside it, in
    /// one fact or episode, and in one of those or a pending review card); memory size is
    /// the words of facts and episodes as a share of the transcript's; evidence recall is
    /// the share of the questions' evidence turns cited by memory (or a card), precision
    /// the share of cited events that are evidence turns, shown with the average number of
    /// events a fact cites; traceability is the share of facts and episodes whose every
    /// content word appears in the events they cite (it must be 100%: the command exits 1
    /// otherwise). Recall asks each of those questions through `recall` (limit 5, as
    /// `dream mcp` answers an agent): hit@5 is the share that got back a line holding the
    /// answer, shown against the share whose answer memory holds at all, with the median
    /// time of one recall; cited, the same counting only lines that also cite one of
    /// the question's evidence turns (a line that answers, not one that shares the answer's
    /// words, such as the day an episode opens with); and how many found it within 10 and 20.
    Locomo(EvalLocomoArgs),

    /// Measure how well the embedder tells a restatement from another fact on the same
    /// subject, on labelled sentence pairs.
    ///
    /// Each pair is a paraphrase (one fact in other words), a different fact on the same
    /// subject ("I live in Lisbon" / "I live in Porto") or unrelated. Printed: the share
    /// of pairs called right by the vectors alone at the best distance for the set, by the
    /// rule a cycle uses to let a candidate reinforce a fact (the S6 measures agree, and
    /// the texts share their content words, or share one at least and their vectors lie
    /// within the embedder's restatement distance), and by the S6 measures alone. Without PATH the shipped set
    /// is used (fixtures/pairs.tsv; --held-out: fixtures/pairs-heldout.tsv). The embedder
    /// is the default one, or that of --config, or --embedder: measure a local Ollama
    /// model with a --config that sets embed.provider = "openai".
    Pairs(EvalPairsArgs),

    /// Replay real Claude Code and Codex transcripts one evening cycle per day and show
    /// every line memory kept, with what it cites.
    ///
    /// The files (or the *.jsonl files under the folders) are played forward the way a
    /// timer reads a live transcript: each day's lines are appended to a copy that an
    /// `[[inbox.sources]]` entry of a fresh repository points at, and one evening cycle
    /// runs at that day's evening, with the default configuration or the keys of
    /// --config. Printed: the events stored by kind (the person's prose `message`, their
    /// `paste`s, harness-`injected` text, slash `command`s, the agent's and the tools'
    /// events), then each durable fact, episode and pending card with the kinds of event
    /// it cites. Exits 1 when a fact or episode cites no statement of the owner's, or is
    /// not a verbatim span of one (its words, letter case and identifiers as written).
    Sessions(EvalSessionsArgs),

    /// Replay labelled owner streams one evening cycle per day and report what a person
    /// notices: the things they said on several days held once each, and nothing of the
    /// small talk.
    ///
    /// A stream is dream's inbox format (one event a line) with a label in each event's
    /// `meta.label`: `F07` a statement of durable fact 7, `K` a single mention worth
    /// keeping, `N` one not worth keeping, `chatter`, `request`, `question`, `paste`,
    /// `agent` (`meta.lang` names the language); fixtures/streams/ holds hand-written ones.
    /// Each stream (a file, or the *.jsonl files of a folder) is replayed in its own
    /// temporary repository with the default configuration or the keys of --config, then
    /// every durable fact, episode, pending card and waiting card is mapped to labels
    /// through the owner's statements it cites. Printed per stream, per language and
    /// overall: the facts stated on two days or more held on exactly one line (durable,
    /// episode or card), split over several, merged with another fact on one line, or on
    /// none (absent, with every refusal's reason from the candidate records); the lines
    /// that hold only chatter, requests, questions or pastes; and the lines of single
    /// mentions, K against N (precision), with the share of K statements kept (recall).
    /// Exits 1 when a stream cannot be read (a bad line, a missing or unknown label).
    Streams(EvalStreamsArgs),

    /// Measure how well a person's turns are split into their own prose, what they
    /// pasted, what the harness injected and slash commands, on labelled turns.
    ///
    /// Only the prose may become memory in the person's voice, so its precision (of the
    /// lines taken for prose, the share that are) matters most. Without PATH the shipped
    /// dev sets are measured (fixtures/devsets/). A set is plain text: `=== id` opens a
    /// turn, then one `L| line` per line with L one of P (prose), S (pasted), I
    /// (injected), C (command), and `|` for a blank line.
    Turns(EvalTurnsArgs),
}

#[derive(Debug, Args)]
pub struct EvalTurnsArgs {
    /// Labelled dev sets in the text format above.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Also list every line given the wrong kind.
    #[arg(long)]
    pub wrong: bool,

    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct EvalSessionsArgs {
    /// Transcript files or folders of them (Claude Code session files, Codex rollouts).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// A dream.toml whose keys replace the defaults in the replay repository.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Keep the replay repository here to inspect it (the folder is replaced).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,

    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct EvalStreamsArgs {
    /// Labelled stream files (*.jsonl) or folders of them.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// A dream.toml whose keys replace the defaults in every replay repository.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Keep the replay repositories in this folder (one per stream) to inspect them.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,

    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct EvalPairsArgs {
    /// A labelled set: a header line, then `label<TAB>a<TAB>b` per line, the label one of
    /// paraphrase, different, unrelated.
    #[arg(value_name = "PATH")]
    pub path: Option<PathBuf>,

    /// Without PATH: the held-out shipped set instead of the main one.
    #[arg(long, conflicts_with = "path")]
    pub held_out: bool,

    /// A dream.toml whose keys replace the defaults (the embedder and promote keys).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// The embedder to measure (minilm, builtin, openai), over the config's.
    #[arg(long, value_name = "NAME")]
    pub embedder: Option<String>,

    /// Also list every pair the rule calls wrong.
    #[arg(long)]
    pub wrong: bool,

    /// Print one JSON object on stdout (with every pair measured).
    #[arg(long)]
    pub json: bool,
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

#[derive(Debug, Args)]
#[command(after_long_help = SCHEDULE_HELP)]
pub struct ScheduleArgs {
    #[command(subcommand)]
    pub action: ScheduleAction,
}

const SCHEDULE_HELP: &str = "\
Examples:
  dream schedule install --repo ~/memory                  # 07:00 and 22:00, local time
  dream schedule install --morning 06:30 --evening 23:00
  dream schedule install --repo ~/mem/ana --repo ~/mem/bob  # template units, 22:00 and 22:10
  dream schedule status
  dream schedule uninstall
  dream schedule uninstall --instance --repo ~/mem/bob";

#[derive(Debug, Subcommand)]
pub enum ScheduleAction {
    /// Write the units for the current user and enable them.
    ///
    /// systemd: dream-morning.service/.timer and dream-evening.service/.timer in
    /// ~/.config/systemd/user, then `systemctl --user daemon-reload` and `systemctl --user
    /// enable --now` of both timers. launchd: local.dream.morning.plist and
    /// local.dream.evening.plist in ~/Library/LaunchAgents, then `launchctl bootstrap`. Running
    /// it again replaces the units (new times, a new binary path).
    ///
    /// Many repositories on one machine (one per agent, project or person; each keeps its own
    /// single writer): `--repo A --repo B` (or `--instance` for one) installs the systemd
    /// template units dream-morning@.service/.timer and dream-evening@.service/.timer once,
    /// and for each repository the instance named after its path (`systemd-escape --path`),
    /// with its own start times in a drop-in (dream-evening@<instance>.timer.d/dream.conf):
    /// each repository takes the first time, from --morning and --evening on in steps of
    /// --stagger minutes, that no other installed repository has.
    Install(ScheduleInstallArgs),
    /// Stop and remove the units.
    ///
    /// Without --systemd or --launchd, removes whichever dream units are installed. With
    /// --instance, removes the template instances of the repositories given with --repo
    /// (default: the current one), and the templates once no instance is left.
    Uninstall(ScheduleUninstallArgs),
    /// Show the installed units and their next run times.
    ///
    /// The next run times are computed from the units' daily times (local time, or --now);
    /// where the service manager can be asked, its own view is shown too.
    Status(ScheduleStatusArgs),
}

/// Which scheduler to use (default: systemd on Linux, launchd on macOS), and whether to
/// run its commands.
#[derive(Debug, Args)]
pub struct ScheduleTarget {
    /// Use systemd user units (~/.config/systemd/user).
    #[arg(long, conflicts_with = "launchd")]
    pub systemd: bool,

    /// Use launchd agents (~/Library/LaunchAgents).
    #[arg(long)]
    pub launchd: bool,

    /// Only write or remove the files; print the systemctl/launchctl commands instead of
    /// running them.
    #[arg(long)]
    pub no_enable: bool,
}

/// Stop and remove the units.
#[derive(Debug, Args)]
pub struct ScheduleUninstallArgs {
    #[command(flatten)]
    pub target: ScheduleTarget,

    /// Remove the template instances (dream-evening@<repo>.timer ...) of the --repo
    /// repositories instead of the single-repository units.
    #[arg(long)]
    pub instance: bool,
}

/// Write the morning and evening units and enable them.
#[derive(Debug, Args)]
pub struct ScheduleInstallArgs {
    #[command(flatten)]
    pub target: ScheduleTarget,

    /// Use the systemd template units, one instance per repository, even for one
    /// repository (several --repo use them anyway).
    #[arg(long)]
    pub instance: bool,

    /// Minutes between the start times of this machine's repositories (template units).
    #[arg(long, value_name = "MINUTES", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=720))]
    pub stagger: u32,

    /// When the morning cycle runs (ingest, embed, digest), HH:MM local time.
    #[arg(long, value_name = "HH:MM", default_value_t = dream_engine::schedule::DEFAULT_MORNING, value_parser = parse_time_of_day)]
    pub morning: dream_engine::schedule::TimeOfDay,

    /// When the evening cycle runs (consolidation), HH:MM local time.
    #[arg(long, value_name = "HH:MM", default_value_t = dream_engine::schedule::DEFAULT_EVENING, value_parser = parse_time_of_day)]
    pub evening: dream_engine::schedule::TimeOfDay,
}

fn parse_time_of_day(s: &str) -> Result<dream_engine::schedule::TimeOfDay, String> {
    s.parse()
}

/// Show the installed units, what they run, and when each cycle runs next.
#[derive(Debug, Args)]
pub struct ScheduleStatusArgs {
    /// Only the systemd units (default: every scheduler with units installed, and the
    /// platform's own).
    #[arg(long, conflicts_with = "launchd")]
    pub systemd: bool,

    /// Only the launchd agents.
    #[arg(long)]
    pub launchd: bool,

    /// Print one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// Print a completion script for a shell on stdout.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Print the man page dream(1), or write every page into a folder.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write the pages into this folder.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_long_help = SKILLS_HELP)]
pub struct SkillsArgs {
    #[command(subcommand)]
    pub action: SkillsAction,
}

const SKILLS_HELP: &str = "\
Examples:
  dream skills list                          # drafts and proposals first, then the rest
  dream skills show cargo-fmt-test-git-commit
  dream skills promote cargo-fmt-test-git-commit
  dream skills discard deploy-staging --reason \"we deploy from CI now\"";

#[derive(Debug, Subcommand)]
pub enum SkillsAction {
    /// List drafts, proposals (review cards), active and discarded skills, and the skills in
    /// the installed folders (skills.installed).
    List(SkillsListArgs),
    /// Print a skill's SKILL.md (for a proposal, the SKILL.md its card proposes).
    Show(SkillsNameArgs),
    /// Activate a draft or a proposal: move it to skills/active/NAME/ in one commit, then
    /// copy it to skills.install_to when that is set.
    ///
    /// The SKILL.md must be valid (name equal to the folder, a description of at most 1024
    /// characters); if you edited it, promote checks it first. Promoting an active skill
    /// installs it again.
    Promote(SkillsNameArgs),
    /// Discard a draft, a proposal or an active skill: move it to skills/discarded/NAME/ in one
    /// commit, so the procedure is not drafted again.
    Discard(SkillsDiscardArgs),
}

#[derive(Debug, Args)]
pub struct SkillsListArgs {
    /// Print one JSON array on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SkillsNameArgs {
    /// The skill's name (its folder), as `dream skills list` shows it.
    #[arg(value_name = "NAME")]
    pub name: String,
}

#[derive(Debug, Args)]
pub struct SkillsDiscardArgs {
    /// The skill's name (its folder), as `dream skills list` shows it.
    #[arg(value_name = "NAME")]
    pub name: String,

    /// Why, for the commit message (and the card, for a proposal).
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub reason: String,
}

/// `--cycle`: the cycle kinds of `dream_core::schema::settings`, by name.
fn cycle_kind() -> impl TypedValueParser<Value = CycleKind> {
    PossibleValuesParser::new(CycleKind::ALL.map(|k| PossibleValue::new(k.as_str())))
        // Only listed names reach `map`, and every listed name parses.
        .map(|s| CycleKind::parse(&s).unwrap_or(CycleKind::Evening))
}

/// `--format`: the input formats of `dream_core::sources::adapters`, by name, with what each is.
fn format() -> impl TypedValueParser<Value = Format> {
    PossibleValuesParser::new(
        Format::ALL.map(|f| PossibleValue::new(f.as_str()).help(f.descriptor().about)),
    )
    // Only listed names reach `map`, and every listed name parses.
    .map(|s| Format::parse(&s).unwrap_or_default())
}
