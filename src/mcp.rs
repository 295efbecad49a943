//! `dream mcp`: a Model Context Protocol server on standard input and output (the official
//! Rust SDK, `rmcp`), so an agent can search its memory mid-session instead of loading all
//! of it at the start.
//!
//! Tools:
//! - `recall`: facts and episodes relevant to a text, by the pure `dream_core::recall::context::
//!   recall` (the words, plus the configured embedder's cosine), with ids and dates; the
//!   facts returned are counted as used (`agents::uses`);
//! - `explain`: an id's provenance, as `dream explain --json` gives it;
//! - `remember`: one event appended to the inbox with trust `agent` (it never writes
//!   memory: the next cycle decides, through the same gates as every other event).
//!
//! Read-only on the repository: no lock (every file dream writes is replaced by a rename, so
//! a read sees a whole old or a whole new file), no state write (use counts go to their own
//! append-only file), safe while a cycle runs. Each call reads memory afresh, so what a cycle
//! just committed is what the next call sees; fact vectors are cached by text for the life
//! of the process, so an embedder that is a remote model is asked once per fact.
//!
//! The work of each tool is synchronous (file reads, perhaps a blocking HTTP call to the
//! embedder) and runs on tokio's blocking pool; the runtime is single-threaded and has only
//! what stdio needs.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::schemars::{self, JsonSchema};
use rmcp::{tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use serde::Deserialize;
use serde_json::{Map, Value};

use dream_core::recall::context;
use dream_core::schema::settings::Config;

use dream_engine::agents::context::VectorCache;
use dream_engine::agents::uses;
use dream_engine::edges::inbox;
use dream_engine::edges::store::Store;
use dream_engine::error::{Error, Result};
use dream_engine::providers::embed::Embedder;

/// The inbox file `remember` appends to.
pub const REMEMBER_FILE: &str = "mcp.jsonl";
/// Most results `recall` returns.
pub const MAX_LIMIT: usize = 50;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecallArgs {
    /// What to look for: a question, a task, a few words.
    pub query: String,
    /// How many results at most (default 10, at most 50). A number, or a numeral in a
    /// string (some clients send every field as text).
    #[serde(default, deserialize_with = "lenient_count")]
    pub limit: Option<usize>,
    /// `project` (default): the global facts and the current project's; `all`: every
    /// project's.
    #[serde(default)]
    pub scope: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExplainArgs {
    /// A fact id (f_...), card id (c_...) or candidate id (k_...), with or without prefix.
    pub id: String,
    /// The whole trail as JSON (every event's text, every gate of every cycle, every
    /// commit), as `dream explain --json` gives it; default: a compact summary.
    #[serde(default, deserialize_with = "lenient_flag")]
    pub full: Option<bool>,
}

/// A count given as a JSON number or as a string holding one (`"3"`), as some MCP clients
/// (the Inspector among them) send every argument; anything else is refused with what was
/// expected.
fn lenient_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    use serde::de::Error as _;
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .map(|n| Some(usize::try_from(n).unwrap_or(usize::MAX)))
            .ok_or_else(|| D::Error::custom(format!("expected a whole number >= 0, got {n}"))),
        Some(Value::String(s)) => s.trim().parse::<usize>().map(Some).map_err(|_| {
            D::Error::custom(format!(
                "expected a whole number >= 0, got the string {s:?}"
            ))
        }),
        Some(other) => Err(D::Error::custom(format!(
            "expected a whole number >= 0, got {other}"
        ))),
    }
}

/// A flag given as a JSON boolean or as the string `"true"` or `"false"`.
fn lenient_flag<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    use serde::de::Error as _;
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(Value::String(s)) => match s.trim() {
            "true" => Ok(Some(true)),
            "false" => Ok(Some(false)),
            _ => Err(D::Error::custom(format!(
                "expected true or false, got the string {s:?}"
            ))),
        },
        Some(other) => Err(D::Error::custom(format!(
            "expected true or false, got {other}"
        ))),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RememberArgs {
    /// What happened or what you learnt, in one or a few sentences.
    pub text: String,
    /// The event kind (default `observation`): a lower-case word such as message or
    /// session_summary.
    #[serde(default)]
    pub kind: Option<String>,
    /// The session this belongs to, when you know it.
    #[serde(default)]
    pub session: Option<String>,
}

struct Inner {
    config: Config,
    embedder: Box<dyn Embedder>,
    cache: VectorCache,
}

/// The server: the repository, its clock, and the embedder with its cache.
#[derive(Clone)]
pub struct Mcp {
    root: PathBuf,
    /// `--now`, for reproducible tests; else the wall clock per call.
    now: Option<DateTime<Utc>>,
    /// The session's project: recall shows the global facts and this project's.
    project: Option<String>,
    inner: Arc<Mutex<Inner>>,
    tool_router: ToolRouter<Self>,
}

impl Mcp {
    pub fn new(root: &Path, now: Option<DateTime<Utc>>, project: Option<String>) -> Result<Mcp> {
        let config = dream_engine::config::load(root)?;
        let embedder = dream_engine::providers::embedder(&config)?;
        Ok(Mcp {
            root: root.to_path_buf(),
            now,
            project,
            inner: Arc::new(Mutex::new(Inner {
                config,
                embedder,
                cache: VectorCache::default(),
            })),
            tool_router: Self::tool_router(),
        })
    }

    fn now(&self) -> DateTime<Utc> {
        self.now.unwrap_or_else(Utc::now)
    }

    /// The recall tool's work: memory read afresh, ranked, the hits counted as used.
    pub fn recall_text(
        &self,
        query: &str,
        limit: Option<usize>,
        scope: Option<&str>,
    ) -> Result<String> {
        let every = match scope.map(str::trim) {
            None | Some("") | Some("project") => false,
            Some("all") => true,
            Some(other) => {
                return Err(Error::Usage(format!(
                    "scope must be \"project\" (the global facts and this project's) or \"all\" (every project's), not {other:?}"
                )))
            }
        };
        if query.trim().is_empty() {
            return Err(Error::Usage(
                "recall needs a query: a question or a few words".into(),
            ));
        }
        let now = self.now();
        let mut memory = Store::open(&self.root)?.load_memory(now.date_naive())?;
        if !every {
            dream_core::recall::scope::retain(&mut memory, self.project.as_deref());
        }
        let mut inner = self.inner.lock().expect("the MCP state lock");
        let Inner {
            config,
            embedder,
            cache,
        } = &mut *inner;
        let cosines = cache.cosines(embedder.as_ref(), &memory, query, config.embed.batch_size)?;
        let hits = context::recall(
            &memory,
            &config.retention,
            now.date_naive(),
            query,
            &cosines,
            limit.unwrap_or(10).clamp(1, MAX_LIMIT),
        );
        let ids: Vec<String> = hits.iter().map(|h| h.id.clone()).collect();
        if let Err(e) = uses::append(&self.root, &ids, "recall", now) {
            tracing::warn!("could not record the uses of a recall: {e}");
        }
        Ok(context::render_hits(query, &hits))
    }

    /// The explain tool's work: a compact summary of the id (`compact`), or, with `full`,
    /// the whole trail as `dream explain --json` prints it.
    pub fn explain_text(&self, id: &str, full: bool) -> Result<String> {
        let config = self
            .inner
            .lock()
            .expect("the MCP state lock")
            .config
            .clone();
        let ex =
            dream_engine::human::trail::explain(&self.root, &config, self.now().date_naive(), id)?;
        if !full {
            return Ok(format!("{}\n{}", context::marker_line(), compact(&ex)));
        }
        let json = serde_json::to_string_pretty(&ex)
            .map_err(|e| Error::Other(format!("encoding the explanation: {e}")))?;
        Ok(format!("{}\n{json}\n", context::marker_line()))
    }

    fn remember_text(&self, a: &RememberArgs) -> Result<String> {
        let config = self
            .inner
            .lock()
            .expect("the MCP state lock")
            .config
            .clone();
        let mut obj = Map::new();
        obj.insert("ts".into(), Value::String(self.now().to_rfc3339()));
        obj.insert(
            "kind".into(),
            Value::String(a.kind.clone().unwrap_or_else(|| "observation".into())),
        );
        obj.insert("text".into(), Value::String(a.text.clone()));
        obj.insert("actor".into(), Value::String("assistant".into()));
        obj.insert("trust".into(), Value::String("agent".into()));
        obj.insert("source".into(), Value::String("mcp".into()));
        if let Some(s) = &a.session {
            obj.insert("session".into(), Value::String(s.clone()));
        }
        let parsed = dream_core::sources::event::from_object(obj).map_err(Error::Input)?;
        let path = self.root.join(&config.inbox.path).join(REMEMBER_FILE);
        inbox::append(&path, std::slice::from_ref(&parsed.event))?;
        Ok(format!(
            "Stored event {} in the inbox (trust agent). The next cycle decides whether it becomes a fact; nothing in memory changed.",
            parsed.event.id
        ))
    }
}

/// Supporting events a compact explanation quotes, and how much of each.
const COMPACT_EVENTS: usize = 3;
const COMPACT_CHARS: usize = 120;

/// A few lines about an id, a few hundred bytes: what it says, where it stands, the first
/// events behind it, the gates that failed, the last commit; and how to get the rest.
fn compact(ex: &dream_engine::human::trail::Explanation) -> String {
    use std::fmt::Write as _;
    let short = |t: &str| dream_core::schema::excerpt(t, COMPACT_CHARS);
    let mut o = String::new();
    let mut support = compact_items(ex, &mut o);
    if let Some(k) = ex.candidates.last() {
        let failed: Vec<String> = k
            .gates
            .iter()
            .filter(|g| !g.passed)
            .map(|g| format!("{} {} (needs {})", g.gate, g.value, g.threshold))
            .collect();
        let _ = writeln!(
            o,
            "  last decided: {} in cycle {}{}",
            k.route,
            k.cycle,
            if failed.is_empty() {
                "; every gate passed".to_string()
            } else {
                format!("; failed: {}", failed.join(", "))
            }
        );
    }
    support.sort();
    support.dedup();
    compact_support(ex, &support, &mut o);
    if !ex.vetoes.is_empty() {
        let _ = writeln!(
            o,
            "  {} rejections or undos say no to this",
            ex.vetoes.len()
        );
    }
    if let Some(c) = ex.commits.last() {
        let _ = writeln!(
            o,
            "  {} commits; the latest {} ({}): {}",
            ex.commits.len(),
            c.head.short,
            c.head.time.date_naive(),
            short(&c.head.subject)
        );
    }
    if o.is_empty() {
        let _ = writeln!(
            o,
            "nothing in memory, the review queue or the state has the id {}",
            ex.query
        );
    }
    let _ = writeln!(
        o,
        "The whole trail: call explain with full=true, or run `dream explain {}`.",
        ex.query
    );
    o
}

/// [`compact`]'s first lines: each fact and card the id names (else its last candidate),
/// written to `o`; returns the events they cite.
fn compact_items(ex: &dream_engine::human::trail::Explanation, o: &mut String) -> Vec<String> {
    use std::fmt::Write as _;
    let short = |t: &str| dream_core::schema::excerpt(t, COMPACT_CHARS);
    let mut support: Vec<String> = Vec::new();
    for f in &ex.facts {
        let _ = writeln!(
            o,
            "{} ({} fact, {}/{}, by {}; seen {} to {}): {}",
            f.id,
            f.status,
            f.block,
            f.category,
            f.origin,
            f.first_seen,
            f.last_seen,
            short(&f.text)
        );
        if let Some(a) = &f.archived {
            let _ = writeln!(o, "  archived {} ({}): {}", a.on, a.why, short(&a.reason));
        }
        support.extend(f.supporting_event_ids.iter().cloned());
    }
    for c in &ex.cards {
        let _ = writeln!(
            o,
            "{} (review card, {}/{}, confidence {:.2}): {}",
            c.id,
            c.block.as_str(),
            c.category,
            c.confidence,
            short(&c.text)
        );
        let _ = writeln!(o, "  queued because: {}", short(&c.reason));
        support.extend(c.supporting_event_ids.iter().cloned());
    }
    if ex.facts.is_empty() && ex.cards.is_empty() {
        if let Some(k) = ex.candidates.last() {
            let _ = writeln!(
                o,
                "{} (candidate, {} in cycle {}): {}",
                k.id,
                k.route,
                k.cycle,
                short(&k.text)
            );
            support.extend(k.supporting_event_ids.iter().cloned());
        }
    }
    support
}

/// [`compact`]'s supporting events: how many, and the first [`COMPACT_EVENTS`] of them.
fn compact_support(
    ex: &dream_engine::human::trail::Explanation,
    support: &[String],
    o: &mut String,
) {
    use std::fmt::Write as _;
    if support.is_empty() {
        return;
    }
    let short = |t: &str| dream_core::schema::excerpt(t, COMPACT_CHARS);
    let _ = writeln!(o, "  supported by {} events:", support.len());
    for e in ex
        .events
        .iter()
        .filter(|e| support.contains(&e.id))
        .take(COMPACT_EVENTS)
    {
        let who = if e.actor.is_empty() {
            &e.trust
        } else {
            &e.actor
        };
        let _ = writeln!(
            o,
            "    {} {} ({}): {}",
            e.ts.date_naive(),
            e.id,
            who,
            short(&e.text)
        );
    }
    if support.len() > COMPACT_EVENTS {
        let _ = writeln!(o, "    ... and {} more", support.len() - COMPACT_EVENTS);
    }
}

/// Run blocking work off the runtime thread, as a tool result (text, or an error result).
async fn blocking(f: impl FnOnce() -> Result<String> + Send + 'static) -> Result<String, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(e)) => Err(match e.hint() {
            Some(h) => format!("{e} ({h})"),
            None => e.to_string(),
        }),
        Err(e) => Err(format!("the tool stopped: {e}")),
    }
}

#[tool_router(router = tool_router)]
impl Mcp {
    /// Search memory: durable facts and episodes relevant to a query, most relevant first,
    /// each with its id, block, category and the day it was last seen.
    #[tool(
        name = "recall",
        description = "Search the user's long-term memory (dream): facts and episodes relevant to a query, most relevant first, each with its id, block, category and last-seen date. Searches the global facts and the current project's; pass scope=\"all\" for every project's. Use it before asking the user something they may have told you before."
    )]
    async fn recall(&self, Parameters(a): Parameters<RecallArgs>) -> Result<String, String> {
        let me = self.clone();
        blocking(move || me.recall_text(&a.query, a.limit, a.scope.as_deref())).await
    }

    /// Where a fact came from.
    #[tool(
        name = "explain",
        description = "Explain an id from memory (f_... fact, c_... review card, k_... candidate): a short summary of what it says, its status, the first supporting events, the gates that failed and the last commit. Pass full=true for the whole trail as JSON (every event, gate and commit)."
    )]
    async fn explain(&self, Parameters(a): Parameters<ExplainArgs>) -> Result<String, String> {
        let me = self.clone();
        blocking(move || me.explain_text(&a.id, a.full.unwrap_or(false))).await
    }

    /// Append an event to the inbox.
    #[tool(
        name = "remember",
        description = "Note something worth remembering (a decision, a preference the user stated, an outcome). It is appended to dream's inbox as an event with trust `agent`; it never writes memory directly: the next consolidation cycle decides, and needs the user's own words to support a fact."
    )]
    async fn remember(&self, Parameters(a): Parameters<RememberArgs>) -> Result<String, String> {
        let me = self.clone();
        blocking(move || me.remember_text(&a)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Mcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("dream", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "dream is the user's long-term memory. Call `recall` with a question or task to find what they told you in earlier sessions; cite a fact's id when you use it. `remember` notes an event for the next consolidation cycle; it never writes memory directly.",
            )
    }
}

/// Serve on stdin/stdout until the client closes the connection.
pub fn serve_stdio(root: &Path, now: Option<String>, project: Option<String>) -> Result<()> {
    let now = match now {
        Some(s) => Some(
            DateTime::parse_from_rfc3339(&s)
                .map_err(|e| {
                    Error::Usage(format!("--now {s:?} is not an RFC 3339 timestamp ({e})"))
                })?
                .with_timezone(&Utc),
        ),
        None => None,
    };
    let server = Mcp::new(root, now, project)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Other(format!("starting the MCP server: {e}")))?;
    rt.block_on(async move {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::Other(format!("MCP initialization failed: {e}")))?;
        service
            .waiting()
            .await
            .map_err(|e| Error::Other(format!("the MCP server stopped: {e}")))?;
        Ok(())
    })
}
