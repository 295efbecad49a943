//! `dream mcp`: a Model Context Protocol server on standard input and output (the official
//! Rust SDK, `rmcp`), so an agent can search its memory mid-session instead of loading all
//! of it at the start.
//!
//! Tools:
//! - `recall`: facts and episodes relevant to a text, by the pure `dream_core::context::
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

use dream_core::config::Config;
use dream_core::context;

use crate::agents::context::VectorCache;
use crate::agents::uses;
use crate::edges::inbox;
use crate::edges::store::Store;
use crate::error::{Error, Result};
use crate::providers::embed::Embedder;

/// The inbox file `remember` appends to.
pub const REMEMBER_FILE: &str = "mcp.jsonl";
/// Most results `recall` returns.
pub const MAX_LIMIT: usize = 50;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecallArgs {
    /// What to look for: a question, a task, a few words.
    pub query: String,
    /// How many results at most (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExplainArgs {
    /// A fact id (f_...), card id (c_...) or candidate id (k_...), with or without prefix.
    pub id: String,
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
    inner: Arc<Mutex<Inner>>,
    tool_router: ToolRouter<Self>,
}

impl Mcp {
    pub fn new(root: &Path, now: Option<DateTime<Utc>>) -> Result<Mcp> {
        let config = crate::config::load(root)?;
        let embedder = crate::providers::embedder(&config)?;
        Ok(Mcp {
            root: root.to_path_buf(),
            now,
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
    pub fn recall_text(&self, query: &str, limit: Option<usize>) -> Result<String> {
        if query.trim().is_empty() {
            return Err(Error::Usage(
                "recall needs a query: a question or a few words".into(),
            ));
        }
        let now = self.now();
        let memory = Store::open(&self.root)?.load_memory(now.date_naive())?;
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

    fn explain_text(&self, id: &str) -> Result<String> {
        let config = self
            .inner
            .lock()
            .expect("the MCP state lock")
            .config
            .clone();
        let ex = crate::human::trail::explain(&self.root, &config, self.now().date_naive(), id)?;
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
        let parsed = dream_core::event::from_object(obj).map_err(Error::Input)?;
        let path = self.root.join(&config.inbox.path).join(REMEMBER_FILE);
        inbox::append(&path, std::slice::from_ref(&parsed.event))?;
        Ok(format!(
            "Stored event {} in the inbox (trust agent). The next cycle decides whether it becomes a fact; nothing in memory changed.",
            parsed.event.id
        ))
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
        description = "Search the user's long-term memory (dream): facts and episodes relevant to a query, most relevant first, each with its id, block, category and last-seen date. Use it before asking the user something they may have told you before."
    )]
    async fn recall(&self, Parameters(a): Parameters<RecallArgs>) -> Result<String, String> {
        let me = self.clone();
        blocking(move || me.recall_text(&a.query, a.limit)).await
    }

    /// Where a fact came from.
    #[tool(
        name = "explain",
        description = "Explain an id from memory (f_... fact, c_... review card, k_... candidate): its supporting events, every gate's measured value, the route it took, and the commits that touched it."
    )]
    async fn explain(&self, Parameters(a): Parameters<ExplainArgs>) -> Result<String, String> {
        let me = self.clone();
        blocking(move || me.explain_text(&a.id)).await
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
pub fn serve_stdio(root: &Path, now: Option<String>) -> Result<()> {
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
    let server = Mcp::new(root, now)?;
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
