//! `dream.toml` (SPEC S13): every key optional with a documented default, unknown keys
//! refused, `DREAM_<SECTION>_<KEY>` environment overrides, and cross-key checks at load.
//!
//! [`TEMPLATE`] is the commented file `dream init` writes; a test keeps it equal to
//! [`Config::default`], so the documentation of every default lives in one place.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `dream.toml`, or an environment override of it, is invalid: the file (or variable)
/// and a message that names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ConfigError {
    pub file: String,
    pub message: String,
}

type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// The config file name at the repository root.
pub const FILE: &str = "dream.toml";
/// git's ignore list of a memory repository, written by `dream init`.
pub const GITIGNORE: &str = ".gitignore";
/// The README `dream init` writes for people browsing a memory repository.
pub const README: &str = "README.md";
/// git's own folder.
pub const GIT_DIR: &str = ".git";
/// dream's local folder: the state database, the lock, the journal, the logs.
pub const LOCAL_DIR: &str = ".dream";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub inbox: Inbox,
    pub llm: Llm,
    pub embed: Embed,
    pub budget: Budget,
    pub cluster: Cluster,
    pub promote: Promote,
    pub retention: Retention,
    pub cycles: Cycles,
    pub digest: Digest,
    pub skills: Skills,
    pub context: Context,
    pub heartbeat: Heartbeat,
    pub episodes: Episodes,
    pub owner: Owner,
    pub quiz: Quiz,
    pub review: Review,
}

/// The recall quiz (see `quiz.rs`): after every evening cycle, questions about what the
/// cycle kept or changed and a standing sample of protected and most-used facts, asked
/// through the read path agents use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Quiz {
    /// Quiz at the end of every evening cycle (`dream quiz` runs either way).
    pub enabled: bool,
    /// The most questions one quiz asks. Each is one or two recalls (a few milliseconds
    /// each at a thousand facts), or one or two model calls with `model`; 20 covers what
    /// a typical evening changes and keeps the offline quiz's cost to a small share of a
    /// cycle.
    pub max_questions: usize,
    /// Of those, at most this many for the standing sample: protected facts, then the
    /// most used, which a cycle left alone.
    pub standing: usize,
    /// Recall results read per question (an agent's `recall` with this limit).
    pub recall_limit: usize,
    /// With a model configured (`llm.provider = "openai"`), the model answers from
    /// `dream context` instead of recall's lines, under the cycle's token budget.
    pub model: bool,
}

impl Default for Quiz {
    fn default() -> Self {
        Quiz {
            enabled: true,
            max_questions: 20,
            standing: 5,
            recall_limit: 5,
            model: false,
        }
    }
}

/// The episodic tier, `memory/episodes.md` (see `episodes.rs`): what was said once, or
/// happened, kept dated until it is said again or expires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Episodes {
    /// Keep single mentions and under-supported candidates as episodes; off, they go to
    /// review as cards (a person decides every one) and no single mention is reflected on.
    pub enabled: bool,
    /// An episode not said again for this many days expires to the archive.
    pub retention_days: u32,
    /// The most episodes the file holds; over it, the oldest (by last seen) expire first.
    pub max_facts: usize,
    /// The most new episodes one session adds, its most salient first (issue 28): memory
    /// grows with sessions, not with words.
    pub max_per_session: usize,
}

impl Default for Episodes {
    fn default() -> Self {
        Episodes {
            enabled: true,
            retention_days: 365,
            max_facts: 200,
            max_per_session: 8,
        }
    }
}

/// The review queue (`review/`): what a person is asked to decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Review {
    /// The most cards the queue holds, so the most a cycle adds: a cycle queues new ones,
    /// best first, only into the room a person's decisions left; the rest wait as
    /// candidates (nothing is lost). 20 by default: a sitting of a few minutes at the
    /// terminal review's pace, and about three evenings of a model's cards (6.4 a cycle on
    /// LoCoMo dev with the reference reflector), so a person who reviews every few days
    /// sees everything new and the budget bites only when the queue is left to grow.
    pub max_new_cards: usize,
}

impl Default for Review {
    fn default() -> Self {
        Review { max_new_cards: 20 }
    }
}

/// The person the memory belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Owner {
    /// Names the owner goes by ("Ada", "Ada Lovelace"): a fact may name the owner by any
    /// of them and still trace to the owner's own words (besides each event's actor).
    pub names: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Inbox {
    /// Folder of `*.jsonl` event files, relative to the repo.
    pub path: String,
    /// A line longer than this is quarantined.
    pub max_event_bytes: usize,
    /// Other agents' transcripts (Claude Code, Codex), read incrementally every cycle.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<Source>,
    /// Let `path` name a folder outside the repository and the home folder (never `/`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_outside: bool,
}

impl Default for Inbox {
    fn default() -> Self {
        Inbox {
            path: "events".into(),
            max_event_bytes: 1 << 20,
            sources: Vec::new(),
            allow_outside: false,
        }
    }
}

/// One `[[inbox.sources]]` entry: a folder (read recursively) or a file of transcripts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// `claude-code`, `codex`, or `jsonl` (dream's own events kept outside the inbox).
    pub format: crate::sources::adapters::Format,
    /// A folder or file; `~` is the home folder, a relative path is relative to the repo.
    pub path: String,
    /// Globs over paths relative to `path`: only matching files are read (default: all
    /// `*.jsonl` files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Globs over paths relative to `path`: matching files are never read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Llm {
    /// `none` (offline, extractive) or `openai` (any OpenAI-compatible server).
    pub provider: String,
    pub base_url: String,
    pub model: String,
    /// The environment variable that holds the API key (never the key itself).
    pub api_key_env: String,
    /// How many independent calls run at once.
    pub concurrency: usize,
    pub timeout_secs: u64,
    /// The most tokens a reply may use; reserved in full against the budget before a call.
    pub max_tokens: u64,
    /// The share of a cached prompt token's charge the budget waives: prompt tokens a
    /// server reports it took from its prompt cache (`usage.prompt_tokens_details.
    /// cached_tokens`) are charged `1 - cached_discount` of a token each. 0 (the default):
    /// charged in full, as every token. Reservations always assume no cache.
    pub cached_discount: f64,
    /// Retries of one call on 429 and 5xx, with backoff.
    pub max_retries: u32,
    /// First wait before a retry when the server sends no Retry-After; doubles each time.
    pub retry_backoff_ms: u64,
}

impl Default for Llm {
    fn default() -> Self {
        Llm {
            provider: "none".into(),
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4o-mini".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            concurrency: 4,
            timeout_secs: 120,
            max_tokens: 1024,
            cached_discount: 0.0,
            max_retries: 3,
            retry_backoff_ms: 500,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Embed {
    /// `minilm` (a static model compiled into dream: meaning-level, offline), `builtin`
    /// (hashed bag of words, offline) or `openai` (`/embeddings`).
    pub provider: String,
    pub model: String,
    /// Vector size of the builtin embedder.
    pub dim: usize,
    /// Texts per `/embeddings` request.
    pub batch_size: usize,
    /// Server of the `openai` embedder; empty: the same as `llm.base_url`.
    pub base_url: String,
    /// Variable holding its API key; empty: the same as `llm.api_key_env`.
    pub api_key_env: String,
}

impl Default for Embed {
    fn default() -> Self {
        Embed {
            provider: "minilm".into(),
            model: "text-embedding-3-small".into(),
            dim: 256,
            batch_size: 64,
            base_url: String::new(),
            api_key_env: String::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Budget {
    /// Hard cap on LLM tokens (prompt + completion) per cycle.
    pub tokens_per_cycle: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            tokens_per_cycle: 200_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Cluster {
    /// The rolling window: events of the last N days are clustered.
    pub window_days: u32,
    /// The cluster floor: DBSCAN's minimum points (the event itself included).
    pub min_points: usize,
    /// DBSCAN radius as a Euclidean distance between unit vectors (sqrt(2 - 2 cos)).
    /// Unset: the radius measured for the embedder in use (minilm 0.7, builtin and
    /// openai 0.8); a set value wins whatever the embedder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eps: Option<f64>,
    /// Events of one cluster shown to the reflector at most (new events first).
    pub max_events_per_prompt: usize,
    /// A window's proposals are gated, judged and routed in parts, each ending once its
    /// proposals showed this many distinct events: it bounds a cycle's memory whatever the window (a
    /// first run's backfill of a year). A window that shows fewer is routed whole.
    pub route_part_events: usize,
}

impl Default for Cluster {
    fn default() -> Self {
        Cluster {
            window_days: 14,
            min_points: 2,
            eps: None,
            max_events_per_prompt: 40,
            route_part_events: 4096,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Promote {
    pub min_confidence: f64,
    /// Distinct supporting events needed to auto-promote.
    pub min_support: usize,
    /// Distinct days of support needed to auto-promote.
    pub min_days: usize,
    /// Below this coverage a candidate is refused; between it and 1.0 it is queued.
    pub min_coverage: f64,
    /// A candidate at least this similar to an active fact reinforces it.
    pub reinforce_similarity: f64,
}

impl Default for Promote {
    fn default() -> Self {
        Promote {
            min_confidence: 0.8,
            min_support: 3,
            min_days: 2,
            min_coverage: 0.5,
            reinforce_similarity: 0.9,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Retention {
    /// Days since a fact was last seen (reinforcement refreshes it) before it may be
    /// forgotten.
    pub stale_after_days: u32,
    /// Above this many active facts, the lowest-salience ones are forgotten.
    pub max_active_facts: usize,
    /// Categories never forgotten.
    pub protected: Vec<String>,
    /// Salience added to a protected fact (or one the owner wrote).
    pub protected_bonus: f64,
    /// Salience of a fact by the block it sits in.
    pub block_weights: BlockWeights,
    /// Retire a fact no agent used (returned by `recall`, cited by id) and no event
    /// restated for this many days; unset (the default): never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unused_after_days: Option<u32>,
    /// The loss guard: a cycle archives at most this share of the facts active when its
    /// maintenance passes start (at least one fact when above 0; 1 lifts the cap), unless
    /// `dream run --allow-loss`.
    pub max_loss_share: f64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            stale_after_days: 60,
            max_active_facts: 200,
            protected: vec![
                "identity".into(),
                "preferences".into(),
                "commitments".into(),
            ],
            protected_bonus: 1.0,
            block_weights: BlockWeights::default(),
            unused_after_days: None,
            max_loss_share: 0.25,
        }
    }
}

/// Salience weights per block: `salience = block weight + protected bonus + recency`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BlockWeights {
    pub persona: f64,
    pub human: f64,
    pub episodes: f64,
    pub scratch: f64,
}

impl Default for BlockWeights {
    fn default() -> Self {
        BlockWeights {
            persona: 1.0,
            human: 1.0,
            episodes: 0.5,
            scratch: 0.25,
        }
    }
}

/// What a cycle of each kind does. Profiles are config, not code paths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Cycles {
    pub evening: Profile,
    pub morning: Profile,
}

impl Default for Cycles {
    fn default() -> Self {
        Cycles {
            evening: Profile {
                reflect: true,
                passes: true,
                digest: false,
            },
            morning: Profile {
                reflect: false,
                passes: false,
                digest: true,
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Profile {
    /// Cluster, reflect, score, judge and route new events.
    pub reflect: bool,
    /// Run the maintenance passes over durable memory.
    pub passes: bool,
    /// Write a digest of what needs attention.
    pub digest: bool,
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            reflect: true,
            passes: true,
            digest: false,
        }
    }
}

/// The digest a cycle writes when its profile says `digest = true` (see `digest.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Digest {
    /// Commitments whose date falls within this many days after today are listed as
    /// coming up; within this many days before today, as passed (done, or still open?).
    pub horizon_days: u32,
    /// Quarantined input lines recorded in the last N days are listed.
    pub quarantine_days: u32,
}

impl Default for Digest {
    fn default() -> Self {
        Digest {
            horizon_days: 14,
            quarantine_days: 7,
        }
    }
}

/// Skill drafting (SPEC S10, see `skills/`): when a recurring procedure becomes a draft.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Skills {
    /// Look for recurring procedures in cycles whose profile reflects (the evening).
    pub enabled: bool,
    /// A procedure needs this many instances (runs of tool use serving one request),
    pub min_instances: usize,
    /// on this many distinct days,
    pub min_days: usize,
    /// in this many distinct sessions.
    pub min_sessions: usize,
    /// An instance needs this many distinct steps, one of them a shell command (runs of two
    /// steps recur by chance too often to be worth a skill).
    pub min_steps: usize,
    /// Two instances are the same procedure when the longest common subsequence of their
    /// steps covers at least this fraction of the longer one.
    pub same_procedure: f64,
    /// An existing skill covers a procedure when it names at least this fraction of the
    /// procedure's distinct steps.
    pub covered: f64,
    /// At or above this confidence a draft is written; below it a review card proposes it.
    pub min_confidence: f64,
    /// Most drafts asked of the model per cycle (the largest procedures first).
    pub max_per_cycle: usize,
    /// Skill folders already installed for agents (`~` is the home folder); a procedure one
    /// of their skills covers is not drafted again.
    pub installed: Vec<String>,
    /// Where `dream skills promote` also copies an activated skill (none when unset).
    pub install_to: Option<String>,
}

impl Default for Skills {
    fn default() -> Self {
        Skills {
            enabled: true,
            min_instances: 3,
            min_days: 2,
            min_sessions: 2,
            min_steps: 3,
            same_procedure: 0.7,
            covered: 0.8,
            min_confidence: 0.8,
            max_per_cycle: 5,
            installed: vec!["~/.claude/skills".into(), "~/.codex/skills".into()],
            install_to: None,
        }
    }
}

/// What agents load at session start (`dream context`, and the file each cycle writes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Context {
    /// The most tokens `dream context` prints (counted as the token budget counts: a
    /// third of the bytes), unless `--budget` says otherwise.
    pub budget_tokens: u64,
    /// The file each cycle writes the same view to, relative to the repo, for harnesses
    /// that import a file by path; empty: none.
    pub file: String,
}

/// The smallest context budget: the header, the left-out line and the line on what
/// waits for the person need about this much.
pub const MIN_CONTEXT_BUDGET: u64 = 300;

impl Default for Context {
    fn default() -> Self {
        Context {
            budget_tokens: 2000,
            file: "CONTEXT.md".into(),
        }
    }
}

/// The heartbeat (see `heartbeat.rs`): when the record of recent cycles shows a quiet
/// failure, `dream status`, the digest and `dream run`'s exit code say so. A count or a
/// number of days set to 0 turns its warning off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Heartbeat {
    /// How many cycles in a row make a pattern: new events but nothing kept, a stage
    /// degraded, the token budget stopping calls; and how many recent reflecting cycles the
    /// gate warning adds up.
    pub cycles: u32,
    /// Cycles that kept nothing warn once they read at least this many new events in all
    /// (a trickle too thin to form a fact is not a failure).
    pub quiet_min_events: u32,
    /// One gate refusing at least this share of those cycles' candidates warns...
    pub gate_refusal_share: f64,
    /// ...once they proposed at least this many.
    pub gate_min_candidates: u32,
    /// Each cycle kind is expected this often (the timers run each daily); no cycle of a
    /// kind for two periods warns that the timer is not firing.
    pub period_hours: u32,
    /// The inbox or an `[[inbox.sources]]` entry that has not grown in this many days warns.
    pub source_idle_days: u32,
}

impl Default for Heartbeat {
    fn default() -> Self {
        Heartbeat {
            cycles: 3,
            quiet_min_events: 20,
            gate_refusal_share: 0.9,
            gate_min_candidates: 10,
            period_hours: 24,
            source_idle_days: 7,
        }
    }
}

/// The file `dream init` writes: every key with its default and what it means.
pub const TEMPLATE: &str = r#"# dream.toml: configuration of this memory repository.
# Every key is optional; the values below are the defaults. Unknown keys are refused.
# Any key can be overridden by an environment variable DREAM_<SECTION>_<KEY>
# (for example DREAM_BUDGET_TOKENS_PER_CYCLE=50000), and some by command-line flags.
# Secrets never live here: API keys are read from the variable that api_key_env names.

[inbox]
path = "events"                 # folder of *.jsonl event files, relative to the repo
max_event_bytes = 1048576       # a longer line is quarantined (transcript lines are streamed)
allow_outside = false           # true: path may be a folder outside the repository and your home
# Other agents' transcripts, read incrementally every cycle (see docs/sources.md):
# [[inbox.sources]]
# format = "claude-code"        # claude-code | codex | gemini | opencode | copilot | jsonl
# path = "~/.claude/projects"   # a folder (read recursively) or a file; ~ is your home
# exclude = ["*/subagents/*"]   # optional globs over paths relative to `path` (also: include)
# [[inbox.sources]]
# format = "codex"
# path = "~/.codex/sessions"

[llm]
provider = "none"               # none (offline, extractive) | openai (any OpenAI-compatible server)
base_url = "https://api.openai.com/v1"
model = "gpt-4o-mini"
api_key_env = "OPENAI_API_KEY"  # name of the environment variable holding the key
concurrency = 4                 # independent calls in flight at once
timeout_secs = 120              # per call; a model on a CPU may need 600
max_tokens = 1024               # longest reply; reserved in full against the budget
cached_discount = 0.0           # share waived of a prompt token the server says it cached
                                # (0: charged in full; 0.5: half; reservations assume none)
max_retries = 3                 # on 429 and 5xx, with backoff (Retry-After honoured)
retry_backoff_ms = 500          # first wait before a retry when the server names none; doubles

[embed]
provider = "minilm"             # minilm (static model inside dream: meaning-level, offline)
                                # | builtin (hashed bag of words, offline) | openai (/embeddings:
                                # OpenAI, or a local server: Ollama, llama.cpp; docs/models.md)
model = "text-embedding-3-small"   # the openai embedder's model (Ollama: nomic-embed-text)
dim = 256                       # vector size of the builtin embedder
batch_size = 64                 # texts per /embeddings request
base_url = ""                   # openai embedder's server; "" = the same as llm.base_url
api_key_env = ""                # variable holding its key; "" = the same as llm.api_key_env

[budget]
tokens_per_cycle = 200000       # hard cap on LLM tokens per cycle

[cluster]
window_days = 14                # cluster the events of the last N days
min_points = 2                  # the cluster floor; must not exceed promote.min_support
# eps = 0.7                     # DBSCAN radius between unit vectors; unset = the embedder's
                                # own: minilm 0.7 (cosine 0.755), builtin and openai 0.8 (0.68)
max_events_per_prompt = 40      # most events in one reflect prompt; a larger cluster takes several
route_part_events = 4096        # proposals gated and routed together until they showed this many
                                # distinct events (a year's backfill in parts); lower it on a small machine

[promote]
min_confidence = 0.8            # auto-promote needs at least this confidence,
min_support = 3                 # this many distinct supporting events,
min_days = 2                    # on this many distinct days, and full traceability
min_coverage = 0.5              # below this coverage refused; between it and 1.0 a review card
reinforce_similarity = 0.9      # this similar to an active fact: reinforce it instead

[retention]
stale_after_days = 60           # days since last seen before a fact may be forgotten
max_active_facts = 200          # above this, lowest-salience facts are forgotten
protected = ["identity", "preferences", "commitments"]   # never forgotten
# salience = block weight + protected bonus (protected or owner-written facts)
#          + recency, which falls from 1 (seen today) to 0 at stale_after_days
protected_bonus = 1.0
block_weights = { persona = 1.0, human = 1.0, episodes = 0.5, scratch = 0.25 }
# unused_after_days = 90        # retire facts no agent used (recall, cited id) nor any event
#                               # restated in this many days; unset: never (the default)
# The loss guard: a cycle archives at most this share of the active facts (at least one;
# 1 = no cap), and never a protected or owner-written fact whose words the fact kept in
# its place lacks. `dream run --allow-loss` lifts both for one run.
max_loss_share = 0.25

[cycles.evening]                # dream run --cycle evening (the default)
reflect = true                  # cluster, reflect, judge and route new events
passes = true                   # dedupe, merge, promote, forget over durable memory
digest = false                  # write digests/<date>-evening.md

[cycles.morning]                # dream run --cycle morning
reflect = false
passes = false
digest = true

[digest]                        # digests/<date>-<cycle>.md: what needs attention
horizon_days = 14               # commitments dated within this many days ahead (or passed)
quarantine_days = 7             # list input quarantined in the last N days

[skills]                        # recurring procedures become inert skill drafts (skills/drafts/)
enabled = true                  # look for them in cycles that reflect (the evening)
min_instances = 3               # a procedure seen at least this many times,
min_days = 2                    # on this many distinct days,
min_sessions = 2                # in this many distinct sessions
min_steps = 3                   # an instance needs this many distinct steps, one a shell command
same_procedure = 0.7            # same procedure: shared steps in order / steps of the longer one
covered = 0.8                   # an existing skill naming this share of the steps covers it
min_confidence = 0.8            # below this a review card proposes the skill instead of a draft
max_per_cycle = 5               # drafts asked of the model per cycle, largest procedures first
installed = ["~/.claude/skills", "~/.codex/skills"]   # skills agents already have
# install_to = "~/.claude/skills"   # where `dream skills promote` also copies a skill

[episodes]                      # memory/episodes.md: what was said once or happened, dated
enabled = true                  # false: single mentions are not kept; under-supported candidates go to review
retention_days = 365            # an episode not said again for this many days expires
max_facts = 200                 # the most episodes kept (agents load them); oldest go first
max_per_session = 8             # the most new episodes one session adds, its most salient first

[owner]                         # the person this memory belongs to
names = []                      # names they go by, traceable like each event's author

[context]                       # what agents load at session start (`dream context`, hooks)
budget_tokens = 2000            # most tokens printed (half the bytes, as the budget counts)
file = "CONTEXT.md"             # each cycle writes the same view here; "" = no file
[heartbeat]                     # quiet failures, raised by `dream status`, the digest and exit code 10
cycles = 3                      # this many cycles in a row with new events but nothing kept, a stage
                                # degraded, or the budget stopping calls, warns (0 turns these off)
quiet_min_events = 20           # ... nothing kept warns once those cycles read this many new events
gate_refusal_share = 0.9        # one gate refusing this share of the last `cycles` reflecting cycles'
gate_min_candidates = 10        # candidates warns, once they proposed at least this many
period_hours = 24               # each cycle kind runs this often; none for two periods warns (0 = off)
source_idle_days = 7            # the inbox or a source not grown in this many days warns (0 = off)

[review]                        # review/: what a person is asked to decide
max_new_cards = 20              # the most cards queued at once; a cycle tops the queue up, best
                                # first, and the rest wait (dream status counts them)

[quiz]                          # after every evening cycle: does memory still answer what it held?
enabled = true                  # false: no quiz after cycles (`dream quiz` still runs)
max_questions = 20              # questions per quiz at most (each one or two recalls)
standing = 5                    # of those, for protected and most-used facts the cycle left alone
recall_limit = 5                # recall results read per question, as an agent's recall
model = false                   # true, with llm.provider = "openai": the model answers from `dream context`
"#;

impl Config {
    /// Parse config text with the given environment (pure, for tests).
    pub fn parse(text: &str, file: &str, env: &BTreeMap<String, String>) -> Result<Config> {
        let err = |message: String| ConfigError {
            file: file.to_string(),
            message,
        };
        let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            err(format!("not valid TOML: {}", e.to_string().trim_end()))
        })?;
        let from_env = apply_env(&mut table, env).map_err(err)?;
        let config: Config =
            serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
                let key = e.path().to_string();
                let inner = e.into_inner().message().to_string();
                let origin = from_env
                    .get(&key)
                    .map(|var| format!(" (set by environment variable {var})"))
                    .unwrap_or_default();
                if inner.starts_with("unknown field") {
                    err(format!("unknown key `{key}`{origin}: {inner}"))
                } else {
                    err(format!("key `{key}`{origin}: {inner}"))
                }
            })?;
        config.validate().map_err(err)?;
        config
            .validate_inbox_path(env.get("HOME").map(String::as_str))
            .map_err(err)?;
        Ok(config)
    }

    /// Cross-key rules that types cannot express.
    pub fn validate(&self) -> std::result::Result<(), String> {
        self.validate_providers()?;
        self.validate_cluster_floor()?;
        self.validate_shares()?;
        self.validate_lower_bounds()?;
        self.validate_weights()?;
        self.validate_episode_and_review_caps()?;
        self.validate_quiz()?;
        self.validate_owner_names()?;
        self.validate_context()?;
        self.validate_loss_and_heartbeat()?;
        self.validate_upper_bounds()?;
        self.validate_inbox()?;
        Ok(())
    }

    /// The providers step: `llm.provider` and `embed.provider` name one dream knows.
    fn validate_providers(&self) -> std::result::Result<(), String> {
        let c = self;
        if !matches!(c.llm.provider.as_str(), "none" | "openai") {
            return Err(format!(
                "key `llm.provider`: must be \"none\" or \"openai\", not {:?}",
                c.llm.provider
            ));
        }
        if !matches!(c.embed.provider.as_str(), "minilm" | "builtin" | "openai") {
            return Err(format!(
                "key `embed.provider`: must be \"minilm\", \"builtin\" or \"openai\", not {:?}",
                c.embed.provider
            ));
        }
        Ok(())
    }

    /// The cluster floor step: `cluster.min_points` is at least 2 and no higher than `promote.min_support`.
    fn validate_cluster_floor(&self) -> std::result::Result<(), String> {
        let c = self;
        if c.cluster.min_points < 2 {
            return Err(format!(
                "key `cluster.min_points`: must be at least 2 (a cluster is an event and a neighbour), not {}",
                c.cluster.min_points
            ));
        }
        if c.cluster.min_points > c.promote.min_support {
            return Err(format!(
                "key `cluster.min_points`: the cluster floor ({}) is above the score floor promote.min_support ({}); \
                 facts with {} supporting events could never form. Set cluster.min_points <= promote.min_support",
                c.cluster.min_points, c.promote.min_support, c.promote.min_support
            ));
        }
        Ok(())
    }

    /// The shares step: the keys that are a number between 0 and 1, then `cluster.eps`.
    fn validate_shares(&self) -> std::result::Result<(), String> {
        let c = self;
        for (key, v) in [
            ("promote.min_confidence", c.promote.min_confidence),
            ("promote.min_coverage", c.promote.min_coverage),
            ("skills.same_procedure", c.skills.same_procedure),
            ("skills.covered", c.skills.covered),
            ("skills.min_confidence", c.skills.min_confidence),
            ("llm.cached_discount", c.llm.cached_discount),
            (
                "promote.reinforce_similarity",
                c.promote.reinforce_similarity,
            ),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("key `{key}`: must be between 0 and 1, not {v}"));
            }
        }
        if let Some(eps) = c.cluster.eps {
            if !(eps > 0.0 && eps <= 2.0) {
                return Err(format!(
                    "key `cluster.eps`: must be in (0, 2] (a distance between unit vectors), not {eps}"
                ));
            }
        }
        Ok(())
    }

    /// The lower bounds step: the counts that must be at least 1.
    fn validate_lower_bounds(&self) -> std::result::Result<(), String> {
        let c = self;
        for (key, v) in [
            ("cluster.window_days", c.cluster.window_days as u64),
            ("llm.concurrency", c.llm.concurrency as u64),
            ("llm.timeout_secs", c.llm.timeout_secs),
            ("llm.max_tokens", c.llm.max_tokens),
            ("embed.dim", c.embed.dim as u64),
            ("embed.batch_size", c.embed.batch_size as u64),
            ("inbox.max_event_bytes", c.inbox.max_event_bytes as u64),
            ("promote.min_support", c.promote.min_support as u64),
            ("skills.min_instances", c.skills.min_instances as u64),
            ("skills.min_days", c.skills.min_days as u64),
            ("skills.min_sessions", c.skills.min_sessions as u64),
            ("skills.min_steps", c.skills.min_steps as u64),
            ("episodes.retention_days", c.episodes.retention_days as u64),
            ("episodes.max_facts", c.episodes.max_facts as u64),
            (
                "episodes.max_per_session",
                c.episodes.max_per_session as u64,
            ),
            ("review.max_new_cards", c.review.max_new_cards as u64),
            (
                "retention.unused_after_days",
                c.retention.unused_after_days.map_or(1, u64::from),
            ),
            (
                "cluster.max_events_per_prompt",
                c.cluster.max_events_per_prompt as u64,
            ),
            (
                "cluster.route_part_events",
                c.cluster.route_part_events as u64,
            ),
        ] {
            if v == 0 {
                return Err(format!("key `{key}`: must be at least 1"));
            }
        }
        for (key, v) in [
            (
                "retention.stale_after_days",
                c.retention.stale_after_days as u64,
            ),
            (
                "retention.max_active_facts",
                c.retention.max_active_facts as u64,
            ),
        ] {
            if v == 0 {
                return Err(format!("key `{key}`: must be at least 1"));
            }
        }
        Ok(())
    }

    /// The weights step: `retention.protected_bonus` and the block weights are numbers >= 0.
    fn validate_weights(&self) -> std::result::Result<(), String> {
        let c = self;
        let w = &c.retention.block_weights;
        for (key, v) in [
            ("retention.protected_bonus", c.retention.protected_bonus),
            ("retention.block_weights.persona", w.persona),
            ("retention.block_weights.human", w.human),
            ("retention.block_weights.episodes", w.episodes),
            ("retention.block_weights.scratch", w.scratch),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("key `{key}`: must be a number >= 0, not {v}"));
            }
        }
        Ok(())
    }

    /// The caps step: the episodes' and review's upper limits.
    fn validate_episode_and_review_caps(&self) -> std::result::Result<(), String> {
        let c = self;
        if c.episodes.retention_days > 3650 {
            return Err(format!(
                "key `episodes.retention_days`: must be at most 3650 (ten years), not {}",
                c.episodes.retention_days
            ));
        }
        if c.episodes.max_facts > 10_000 {
            return Err(format!(
                "key `episodes.max_facts`: must be at most 10000 (agents load the file), not {}",
                c.episodes.max_facts
            ));
        }
        if c.episodes.max_per_session > 10_000 {
            return Err(format!(
                "key `episodes.max_per_session`: must be at most 10000, not {}",
                c.episodes.max_per_session
            ));
        }
        if c.review.max_new_cards > 1000 {
            return Err(format!(
                "key `review.max_new_cards`: must be at most 1000 (nobody reviews more at once), not {}",
                c.review.max_new_cards
            ));
        }
        Ok(())
    }

    /// The quiz step: `quiz.max_questions`, `quiz.standing` and `quiz.recall_limit`.
    fn validate_quiz(&self) -> std::result::Result<(), String> {
        let c = self;
        let q = &c.quiz;
        if !(1..=500).contains(&q.max_questions) {
            return Err(format!(
                "key `quiz.max_questions`: must be between 1 and 500, not {}",
                q.max_questions
            ));
        }
        if q.standing > q.max_questions {
            return Err(format!(
                "key `quiz.standing`: must be at most quiz.max_questions ({}), not {}",
                q.max_questions, q.standing
            ));
        }
        if !(1..=50).contains(&q.recall_limit) {
            return Err(format!(
                "key `quiz.recall_limit`: must be between 1 and 50 (recall's most results), not {}",
                q.recall_limit
            ));
        }
        Ok(())
    }

    /// The owner step: each of `owner.names` is a name of 1 to 80 characters.
    fn validate_owner_names(&self) -> std::result::Result<(), String> {
        let c = self;
        for (i, n) in c.owner.names.iter().enumerate() {
            if n.trim().is_empty() || n.chars().count() > 80 {
                return Err(format!(
                    "key `owner.names[{i}]`: must be a name of 1 to 80 characters, not {n:?}"
                ));
            }
        }
        Ok(())
    }

    /// The context step: `context.budget_tokens` and `context.file`.
    fn validate_context(&self) -> std::result::Result<(), String> {
        let c = self;
        if c.context.budget_tokens < MIN_CONTEXT_BUDGET {
            return Err(format!(
                "key `context.budget_tokens`: must be at least {MIN_CONTEXT_BUDGET} (the header and the left-out line need that much), not {}",
                c.context.budget_tokens
            ));
        }
        if c.context.file.contains("..") || c.context.file.starts_with('/') {
            return Err(format!(
                "key `context.file`: must be a path inside the repository such as \"CONTEXT.md\", not {:?}",
                c.context.file
            ));
        }
        if memory_block_path(&c.context.file) {
            return Err(format!(
                "key `context.file`: {:?} is a memory block; pick another name such as \"CONTEXT.md\"",
                c.context.file
            ));
        }
        if c.context.file.is_empty() {
            return Ok(());
        }
        let file = components(&c.context.file);
        if file.is_empty() {
            return Err(format!(
                "key `context.file`: {:?} names no file; pick a name such as \"CONTEXT.md\"",
                c.context.file
            ));
        }
        let same = |a: &[&str], b: &[&str]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.eq_ignore_ascii_case(y))
        };
        for (path, folder, owner) in self.owned() {
            let owned = components(&path);
            if owned.is_empty() {
                continue;
            }
            let clash = if folder {
                file.len() >= owned.len() && same(&file[..owned.len()], &owned)
            } else {
                same(&file, &owned)
            };
            if clash {
                return Err(format!(
                    "key `context.file`: {:?} is {} {owner}; each cycle would write the context view over it. Pick a file of its own such as \"CONTEXT.md\"",
                    c.context.file,
                    if folder {
                        format!("inside {path}/, which holds")
                    } else {
                        format!("{path}, which is")
                    },
                ));
            }
        }
        Ok(())
    }

    /// The files and folders of a memory repository that dream or git own, each with what
    /// it holds (`true`: a folder, owned with all it holds): no path a config names for
    /// dream to write may be one of them. Built from the layout's own constants.
    pub fn owned(&self) -> Vec<(String, bool, &'static str)> {
        let parent = |p: &str| p.rsplit_once('/').map_or(p, |(d, _)| d).to_string();
        let mut owned = vec![
            (FILE.to_string(), false, "dream's configuration"),
            (GITIGNORE.to_string(), false, "git's ignore list"),
            (README.to_string(), false, "the repository's README"),
            (GIT_DIR.to_string(), true, "git's history"),
            (
                LOCAL_DIR.to_string(),
                true,
                "dream's state, lock and journal",
            ),
            (parent(crate::schema::ARCHIVE), true, "the archive of facts"),
            (
                crate::schema::REVIEW_DIR.to_string(),
                true,
                "the review cards",
            ),
            (parent(crate::skills::DRAFTS_DIR), true, "the skills"),
            (
                crate::operations::digest::DIR.to_string(),
                true,
                "the digests",
            ),
            (self.inbox.path.clone(), true, "the inbox's events"),
        ];
        for b in crate::schema::Block::ALL {
            let dir = parent(&b.path());
            if !owned.iter().any(|(p, _, _)| *p == dir) {
                owned.push((dir, true, "the memory blocks"));
            }
        }
        owned
    }

    /// `inbox.path` is read whole every cycle (every `*.jsonl` under it): never `/`, and
    /// not a folder outside the repository and the home folder (`home`) unless
    /// `inbox.allow_outside` says so. A relative path that climbs out of the repository
    /// ("../../etc") is outside it.
    fn validate_inbox_path(&self, home: Option<&str>) -> std::result::Result<(), String> {
        let path = self.inbox.path.trim();
        let parts = components(path);
        if path.starts_with('/') && parts.is_empty() {
            return Err(
                "key `inbox.path`: \"/\" would read every *.jsonl file on the machine; name the inbox folder, such as \"events\""
                    .into(),
            );
        }
        if self.inbox.allow_outside {
            return Ok(());
        }
        let mut depth: i64 = 0;
        let mut climbs = false;
        for p in &parts {
            depth += if *p == ".." { -1 } else { 1 };
            climbs |= depth < 0;
        }
        let outside = if path.starts_with('/') {
            let home = home.map(components).unwrap_or_default();
            let under_home = !home.is_empty()
                && parts.len() >= home.len()
                && parts[..home.len()] == home[..]
                && !parts.contains(&"..");
            !under_home
        } else {
            climbs
        };
        if outside {
            return Err(format!(
                "key `inbox.path`: {:?} is outside the repository and your home folder; every *.jsonl under it would be read as your events. Name a folder inside them, or set `inbox.allow_outside = true` if you mean it",
                self.inbox.path
            ));
        }
        Ok(())
    }

    /// The loss and heartbeat step: `retention.max_loss_share`, then the heartbeat's share and upper limits.
    fn validate_loss_and_heartbeat(&self) -> std::result::Result<(), String> {
        let c = self;
        let r = &c.retention;
        if !(r.max_loss_share.is_finite() && (0.0..=1.0).contains(&r.max_loss_share)) {
            return Err(format!(
                "key `retention.max_loss_share`: must be between 0 and 1 (a share of the active facts), not {}",
                r.max_loss_share
            ));
        }
        let h = &c.heartbeat;
        if !(h.gate_refusal_share > 0.0 && h.gate_refusal_share <= 1.0) {
            return Err(format!(
                "key `heartbeat.gate_refusal_share`: must be in (0, 1], not {}",
                h.gate_refusal_share
            ));
        }
        for (key, v, max) in [
            ("heartbeat.cycles", h.cycles, 1000),
            (
                "heartbeat.quiet_min_events",
                h.quiet_min_events,
                1_000_000_000,
            ),
            (
                "heartbeat.gate_min_candidates",
                h.gate_min_candidates,
                1_000_000,
            ),
            ("heartbeat.period_hours", h.period_hours, 24 * 366),
            ("heartbeat.source_idle_days", h.source_idle_days, 3660),
        ] {
            if v > max {
                return Err(format!("key `{key}`: must be at most {max}, not {v}"));
            }
        }
        Ok(())
    }

    /// The upper bounds step: the keys past whose limit a value is a typo.
    fn validate_upper_bounds(&self) -> std::result::Result<(), String> {
        let c = self;
        // Upper bounds: a value past them is a typo, and would make dream allocate, loop or
        // compute dates without end (a window of 100 million days, a 100-million-wide vector).
        for (key, v, max) in [
            ("cluster.window_days", c.cluster.window_days as u64, 3650),
            (
                "cluster.max_events_per_prompt",
                c.cluster.max_events_per_prompt as u64,
                10_000,
            ),
            (
                "cluster.route_part_events",
                c.cluster.route_part_events as u64,
                100_000_000,
            ),
            (
                "digest.quarantine_days",
                c.digest.quarantine_days as u64,
                3650,
            ),
            ("digest.horizon_days", c.digest.horizon_days as u64, 3650),
            (
                "retention.stale_after_days",
                c.retention.stale_after_days as u64,
                36_500,
            ),
            (
                "retention.max_active_facts",
                c.retention.max_active_facts as u64,
                1_000_000,
            ),
            ("embed.dim", c.embed.dim as u64, 8192),
            ("embed.batch_size", c.embed.batch_size as u64, 2048),
            (
                "inbox.max_event_bytes",
                c.inbox.max_event_bytes as u64,
                64 << 20,
            ),
            ("llm.concurrency", c.llm.concurrency as u64, 64),
            ("llm.timeout_secs", c.llm.timeout_secs, 3600),
            ("llm.max_tokens", c.llm.max_tokens, 1_000_000),
            ("llm.max_retries", c.llm.max_retries as u64, 20),
            ("llm.retry_backoff_ms", c.llm.retry_backoff_ms, 600_000),
            ("skills.max_per_cycle", c.skills.max_per_cycle as u64, 1000),
        ] {
            if v > max {
                return Err(format!("key `{key}`: must be at most {max}, not {v}"));
            }
        }
        Ok(())
    }

    /// The inbox step: `heartbeat.gate_min_candidates` is at least 1, then the inbox folder and its sources.
    fn validate_inbox(&self) -> std::result::Result<(), String> {
        let c = self;
        let h = &self.heartbeat;
        if h.gate_min_candidates == 0 {
            return Err("key `heartbeat.gate_min_candidates`: must be at least 1".into());
        }
        if c.inbox.path.trim().is_empty() {
            return Err("key `inbox.path`: must name a folder".into());
        }
        for (i, s) in c.inbox.sources.iter().enumerate() {
            if s.path.trim().is_empty() {
                return Err(format!(
                    "key `inbox.sources[{i}].path`: must name a folder or file, for example \"~/.claude/projects\""
                ));
            }
            for (key, globs) in [("include", &s.include), ("exclude", &s.exclude)] {
                for g in globs.iter() {
                    if let Err(e) = glob::Pattern::new(g) {
                        return Err(format!(
                            "key `inbox.sources[{i}].{key}`: {g:?} is not a valid glob ({e})"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The profile of a cycle kind.
    pub fn profile(&self, cycle: CycleKind) -> &Profile {
        match cycle {
            CycleKind::Evening => &self.cycles.evening,
            CycleKind::Morning => &self.cycles.morning,
        }
    }
}

/// A path's parts, without empty ones and `.`: `./a//b/` is `a`, `b`.
fn components(path: &str) -> Vec<&str> {
    path.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect()
}

fn memory_block_path(path: &str) -> bool {
    crate::schema::Block::ALL
        .iter()
        .any(|b| b.path() == path.trim_start_matches("./"))
}

/// Which scheduled cycle is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CycleKind {
    Morning,
    Evening,
}

impl CycleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CycleKind::Morning => "morning",
            CycleKind::Evening => "evening",
        }
    }

    pub const ALL: [CycleKind; 2] = [CycleKind::Morning, CycleKind::Evening];

    /// The kind a name (`morning`, `evening`) says.
    pub fn parse(s: &str) -> Option<CycleKind> {
        CycleKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

const SECTIONS: &[&str] = &[
    "cycles",
    "inbox",
    "llm",
    "embed",
    "budget",
    "cluster",
    "promote",
    "retention",
    "digest",
    "skills",
    "context",
    "heartbeat",
    "episodes",
    "owner",
    "quiz",
    "review",
];

/// Whether an environment variable's name sets a `dream.toml` key (`DREAM_<SECTION>_...`).
pub fn is_config_var(name: &str) -> bool {
    name.strip_prefix("DREAM_").is_some_and(|rest| {
        let lower = rest.to_ascii_lowercase();
        SECTIONS.iter().any(|s| lower.starts_with(&format!("{s}_")))
    })
}

/// Apply `DREAM_<SECTION>_<KEY>` variables to the table; returns which keys they set.
fn apply_env(
    table: &mut toml::Table,
    env: &BTreeMap<String, String>,
) -> std::result::Result<BTreeMap<String, String>, String> {
    let mut set = BTreeMap::new();
    for (var, raw) in env {
        let Some(rest) = var.strip_prefix("DREAM_") else {
            continue;
        };
        let lower = rest.to_ascii_lowercase();
        let Some(section) = SECTIONS
            .iter()
            .find(|s| lower.starts_with(&format!("{s}_")))
        else {
            continue;
        };
        let key = lower[section.len() + 1..].to_string();
        // Keys of the tables inside a section: `DREAM_CYCLES_EVENING_REFLECT`,
        // `DREAM_RETENTION_BLOCK_WEIGHTS_PERSONA`.
        let (path, key) = match (*section, key.as_str()) {
            ("cycles", k) => match k.split_once('_') {
                Some((kind, rest)) if CycleKind::parse(kind).is_some() => {
                    (vec![section.to_string(), kind.to_string()], rest.to_string())
                }
                _ => {
                    return Err(format!(
                        "environment variable {var}: name a cycle and a key, such as DREAM_CYCLES_EVENING_DIGEST or DREAM_CYCLES_MORNING_REFLECT"
                    ))
                }
            },
            ("retention", k) if k.starts_with("block_weights_") => (
                vec![section.to_string(), "block_weights".to_string()],
                k["block_weights_".len()..].to_string(),
            ),
            _ => (vec![section.to_string()], key),
        };
        let value = parse_env_value(raw);
        let mut at = &mut *table;
        for name in &path {
            let entry = at
                .entry(name.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let Some(t) = entry.as_table_mut() else {
                return Err(format!("`{}` must be a table", path.join(".")));
            };
            at = t;
        }
        at.insert(key.clone(), value);
        set.insert(format!("{}.{key}", path.join(".")), var.clone());
    }
    Ok(set)
}

/// An environment value as TOML when it parses as a TOML value (numbers, booleans,
/// arrays), otherwise as a plain string.
fn parse_env_value(raw: &str) -> toml::Value {
    let doc = format!("v = {raw}");
    match doc.parse::<toml::Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.into())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config> {
        Config::parse(text, "dream.toml", &BTreeMap::new())
    }

    /// Issue 46: `context.file = "dream.toml"` was accepted, and the first cycle wrote the
    /// context view over the configuration (every later command failed); the same trick
    /// overwrote .gitignore, README.md, the archive or a card. The class: every file and
    /// folder the layout owns ([`Config::owned`]) is refused, however it is spelled, with
    /// the key and the reason.
    #[test]
    fn the_context_file_is_never_a_file_dream_or_git_owns() {
        let refused = |file: &str| {
            let e = parse(&format!("[context]\nfile = {file:?}\n"))
                .expect_err(file)
                .to_string();
            assert!(e.contains("key `context.file`"), "{file}: {e}");
            e
        };
        let e = refused("dream.toml");
        assert!(e.contains("dream's configuration"), "{e}");
        for f in [
            "./dream.toml",
            "DREAM.toml",
            ".gitignore",
            "README.md",
            "archive/facts.md",
            "review/decided/c_1.md",
            "skills/active/deploy/SKILL.md",
            ".git/config",
            ".dream/state.sqlite",
            "events/context.jsonl",
            "digests/today.md",
            "memory/notes.md",
            "memory//human.md",
        ] {
            refused(f);
        }
        for (path, folder, _) in Config::default().owned() {
            refused(&path);
            if folder {
                refused(&format!("{path}/CONTEXT.md"));
            }
        }
        for ok in ["CONTEXT.md", "docs/CONTEXT.md", "agents/context.md", ""] {
            parse(&format!("[context]\nfile = {ok:?}\n")).expect(ok);
        }
    }

    /// Issue 46: `inbox.path = "/"` read every *.jsonl on the machine, and
    /// "../../../../etc" was read. `/` is refused always; a folder outside the repository
    /// and the home folder needs `inbox.allow_outside`.
    #[test]
    fn the_inbox_stays_inside_the_repository_or_the_home_folder() {
        let env: BTreeMap<String, String> = [("HOME".to_string(), "/home/ana".to_string())].into();
        let load = |path: &str, allow: bool| {
            Config::parse(
                &format!("[inbox]\npath = {path:?}\nallow_outside = {allow}\n"),
                "dream.toml",
                &env,
            )
        };
        for path in ["/", "//", "/./"] {
            for allow in [false, true] {
                let e = load(path, allow).expect_err(path).to_string();
                assert!(
                    e.contains("key `inbox.path`") && e.contains("every *.jsonl"),
                    "{e}"
                );
            }
        }
        for path in [
            "../../../../etc",
            "/etc",
            "events/../..",
            "/home/ana/../bob",
            "/home/anabel",
        ] {
            let e = load(path, false).expect_err(path).to_string();
            assert!(
                e.contains("key `inbox.path`") && e.contains("inbox.allow_outside = true"),
                "{path}: {e}"
            );
            load(path, true).expect(path);
        }
        for path in [
            "events",
            "./inbox/",
            "a/../events",
            "/home/ana/agent-events",
        ] {
            load(path, false).expect(path);
        }
    }

    #[test]
    fn the_template_is_the_default() {
        assert_eq!(parse(TEMPLATE).unwrap(), Config::default());
        assert_eq!(parse("").unwrap(), Config::default());
    }

    #[test]
    fn unknown_keys_are_refused_by_name() {
        let err = parse("[cluster]\nwindow_dayz = 3\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown key `cluster.window_dayz`"), "{err}");
        let err = parse("[nonsense]\nx = 1\n").unwrap_err().to_string();
        assert!(err.contains("unknown key `nonsense`"), "{err}");
    }

    #[test]
    fn wrong_types_name_the_key() {
        let err = parse("[budget]\ntokens_per_cycle = \"lots\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("dream.toml: key `budget.tokens_per_cycle`"),
            "{err}"
        );
    }

    #[test]
    fn the_cached_discount_is_a_share_and_charges_in_full_by_default() {
        assert_eq!(Config::default().llm.cached_discount, 0.0);
        let c = parse("[llm]\ncached_discount = 0.5\n").unwrap();
        assert_eq!(c.llm.cached_discount, 0.5);
        for bad in ["1.5", "-0.1", "nan", "inf", "\"half\""] {
            let err = parse(&format!("[llm]\ncached_discount = {bad}\n"))
                .unwrap_err()
                .to_string();
            assert!(err.contains("llm.cached_discount"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_cluster_floor_above_the_score_floor_is_refused() {
        let err = parse("[cluster]\nmin_points = 4\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("cluster.min_points"), "{err}");
        assert!(err.contains("promote.min_support (3)"), "{err}");
    }

    #[test]
    fn episodes_and_owner_keys_are_range_checked() {
        let c =
            parse("[episodes]\nretention_days = 30\nmax_facts = 50\n[owner]\nnames = [\"Ada\"]\n")
                .unwrap();
        assert_eq!((c.episodes.retention_days, c.episodes.max_facts), (30, 50));
        let budgets =
            parse("[episodes]\nmax_per_session = 3\n[review]\nmax_new_cards = 4\n").unwrap();
        assert_eq!(
            (
                budgets.episodes.max_per_session,
                budgets.review.max_new_cards
            ),
            (3, 4)
        );
        assert_eq!(c.owner.names, vec!["Ada"]);
        for (bad, key) in [
            (
                "[episodes]\nretention_days = 0\n",
                "episodes.retention_days",
            ),
            (
                "[episodes]\nretention_days = 99999\n",
                "episodes.retention_days",
            ),
            ("[episodes]\nmax_facts = 0\n", "episodes.max_facts"),
            ("[episodes]\nmax_facts = 20000\n", "episodes.max_facts"),
            ("[owner]\nnames = [\" \"]\n", "owner.names[0]"),
            ("[episodes]\nkeep = 3\n", "episodes.keep"),
            (
                "[episodes]\nmax_per_session = 0\n",
                "episodes.max_per_session",
            ),
            (
                "[episodes]\nmax_per_session = 20000\n",
                "episodes.max_per_session",
            ),
            ("[review]\nmax_new_cards = 0\n", "review.max_new_cards"),
            ("[review]\nmax_new_cards = 5000\n", "review.max_new_cards"),
            (
                "[review]\nmax_new_cards = \"ten\"\n",
                "review.max_new_cards",
            ),
            ("[review]\nmax_cards = 3\n", "review.max_cards"),
            ("[quiz]\nmax_questions = 0\n", "quiz.max_questions"),
            ("[quiz]\nmax_questions = 501\n", "quiz.max_questions"),
            ("[quiz]\nmax_questions = 4\nstanding = 5\n", "quiz.standing"),
            ("[quiz]\nrecall_limit = 0\n", "quiz.recall_limit"),
            ("[quiz]\nrecall_limit = 51\n", "quiz.recall_limit"),
            ("[quiz]\nmax_questions = -1\n", "quiz.max_questions"),
            ("[quiz]\nquestions = 3\n", "quiz.questions"),
        ] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains(key), "{bad}: {err}");
        }
    }

    #[test]
    fn the_loss_share_and_heartbeat_thresholds_are_range_checked() {
        for (text, key) in [
            (
                "[retention]\nmax_loss_share = 1.5\n",
                "retention.max_loss_share",
            ),
            (
                "[retention]\nmax_loss_share = -0.1\n",
                "retention.max_loss_share",
            ),
            (
                "[heartbeat]\ngate_refusal_share = 0\n",
                "heartbeat.gate_refusal_share",
            ),
            (
                "[heartbeat]\ngate_min_candidates = 0\n",
                "heartbeat.gate_min_candidates",
            ),
            ("[heartbeat]\ncycles = 5000\n", "heartbeat.cycles"),
            (
                "[heartbeat]\nperiod_hours = 100000\n",
                "heartbeat.period_hours",
            ),
            (
                "[heartbeat]\nsource_idle_days = -1\n",
                "heartbeat.source_idle_days",
            ),
            ("[heartbeat]\nperiod = 24\n", "heartbeat.period"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(&format!("`{key}`")), "{text}: {err}");
        }
        let c =
            parse("[heartbeat]\ncycles = 0\nperiod_hours = 0\n[retention]\nmax_loss_share = 1\n")
                .unwrap();
        assert_eq!(
            (c.heartbeat.cycles, c.heartbeat.period_hours),
            (0, 0),
            "0 turns a warning off"
        );
        let mut env = BTreeMap::new();
        env.insert("DREAM_HEARTBEAT_CYCLES".to_string(), "5".to_string());
        assert_eq!(
            Config::parse("", "dream.toml", &env)
                .unwrap()
                .heartbeat
                .cycles,
            5
        );
    }

    #[test]
    fn sources_are_read_and_checked() {
        let c = parse("[[inbox.sources]]\nformat = \"claude-code\"\npath = \"~/.claude/projects\"\nexclude = [\"*/subagents/*\"]\n").unwrap();
        assert_eq!(c.inbox.sources.len(), 1);
        assert_eq!(
            c.inbox.sources[0].format,
            crate::sources::adapters::Format::ClaudeCode
        );
        let err = parse("[[inbox.sources]]\nformat = \"claude\"\npath = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("inbox.sources[0].format") && err.contains("claude-code"),
            "{err}"
        );
        let err =
            parse("[[inbox.sources]]\nformat = \"codex\"\npath = \"x\"\ninclude = [\"a[\"]\n")
                .unwrap_err()
                .to_string();
        assert!(err.contains("inbox.sources[0].include"), "{err}");
        let err = parse("[[inbox.sources]]\nformat = \"codex\"\npath = \"x\"\nfolder = 1\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown key") && err.contains("folder"),
            "{err}"
        );
    }

    #[test]
    fn values_out_of_range_are_refused_by_name() {
        for (text, key) in [
            (
                "[cluster]\nwindow_days = 100000000\n",
                "cluster.window_days",
            ),
            (
                "[digest]\nquarantine_days = 4294967295\n",
                "digest.quarantine_days",
            ),
            ("[embed]\ndim = 100000000\n", "embed.dim"),
            ("[llm]\nconcurrency = 100000\n", "llm.concurrency"),
            (
                "[cluster]\nroute_part_events = 200000000\n",
                "cluster.route_part_events",
            ),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(
                err.contains(&format!("key `{key}`: must be at most")),
                "{err}"
            );
        }
        // A part of no events would route nothing: refused by name, not read as one.
        let err = parse("[cluster]\nroute_part_events = 0\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("key `cluster.route_part_events`: must be at least 1"),
            "{err}"
        );
    }

    #[test]
    fn cycle_profiles_and_block_weights_can_be_set_from_the_environment() {
        let mut env = BTreeMap::new();
        env.insert(
            "DREAM_CYCLES_EVENING_DIGEST".to_string(),
            "true".to_string(),
        );
        env.insert(
            "DREAM_CYCLES_MORNING_REFLECT".to_string(),
            "true".to_string(),
        );
        env.insert(
            "DREAM_RETENTION_BLOCK_WEIGHTS_SCRATCH".to_string(),
            "0.5".to_string(),
        );
        let c = Config::parse("", "dream.toml", &env).unwrap();
        assert!(c.cycles.evening.digest && c.cycles.morning.reflect);
        assert!(
            c.cycles.evening.reflect,
            "the other keys keep their defaults"
        );
        assert_eq!(c.retention.block_weights.scratch, 0.5);
        let mut env = BTreeMap::new();
        env.insert("DREAM_CYCLES_NIGHT_DIGEST".to_string(), "true".to_string());
        let err = Config::parse("", "dream.toml", &env)
            .unwrap_err()
            .to_string();
        assert!(err.contains("DREAM_CYCLES_NIGHT_DIGEST"), "{err}");
        let mut env = BTreeMap::new();
        env.insert(
            "DREAM_CYCLES_EVENING_DIGESTS".to_string(),
            "true".to_string(),
        );
        let err = Config::parse("", "dream.toml", &env)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("cycles.evening.digests") && err.contains("DREAM_CYCLES_EVENING_DIGESTS"),
            "{err}"
        );
    }

    #[test]
    fn environment_overrides_the_file_and_is_named_in_errors() {
        let mut env = BTreeMap::new();
        env.insert(
            "DREAM_BUDGET_TOKENS_PER_CYCLE".to_string(),
            "500".to_string(),
        );
        env.insert("DREAM_LLM_MODEL".to_string(), "llama3.1:8b".to_string());
        env.insert("DREAM_REPO".to_string(), "/somewhere".to_string());
        let c = Config::parse("[budget]\ntokens_per_cycle = 9\n", "dream.toml", &env).unwrap();
        assert_eq!(c.budget.tokens_per_cycle, 500);
        assert_eq!(c.llm.model, "llama3.1:8b");
        env.insert("DREAM_LLM_FOO".to_string(), "1".to_string());
        let err = Config::parse("", "dream.toml", &env)
            .unwrap_err()
            .to_string();
        assert!(err.contains("DREAM_LLM_FOO"), "{err}");
    }
}
