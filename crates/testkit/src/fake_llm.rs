//! A scripted fake OpenAI-compatible server on loopback: **test and benchmark support**,
//! not used by `dream` itself.
//!
//! dream's tests never touch the network (SPEC S7): they start a [`FakeLlm`] inside the
//! test process on an ephemeral port of 127.0.0.1 and point `dream run` at it with
//! `DREAM_LLM_PROVIDER=openai` and `DREAM_LLM_BASE_URL=<fake.base_url()>`. The fake
//! answers `POST /v1/chat/completions` and `POST /v1/embeddings` the way OpenAI does, and
//!
//! - is scripted per stage: it tells reflect, judge and later stages apart by the
//!   `X-Dream-Stage` header the provider sends, and calls the [`Handler`] set with
//!   [`FakeLlm::on`] for that stage, which sees the request (the stage's input is the user
//!   message, parsed as JSON) and returns an [`Answer`]; `/embeddings` answers with the
//!   builtin embedder's vectors unless a handler is set for stage `embed` (which answers
//!   with [`Answer::status`] or [`Answer::raw`]: a 500, per-token vectors, ...);
//! - injects every fault a real server shows: 5xx, 429 with `Retry-After`, slow replies and
//!   timeouts, garbled, truncated and wrong-schema JSON, missing `usage`, a refused
//!   `response_format`, a refused key; invented ids, names or numbers are just content a
//!   handler writes;
//! - counts tokens with its own tokenizer (a quarter of the characters, per message
//!   overhead, optionally scaled by [`FakeLlm::set_token_scale`] to play a tokenizer that
//!   counts more than dream estimates), honours `max_tokens` by cutting the reply off with
//!   `finish_reason: "length"`, and reports `usage`;
//! - records every request ([`Recorded`]) so tests can assert on usage sums, calls after
//!   the cap, retries and the concurrency it observed;
//! - with [`FakeLlm::set_prefix_cache`], plays a server that caches prompt prefixes (vLLM,
//!   llama.cpp, OpenAI): the leading messages of a request that an earlier request began
//!   with, word for word, are reported as `usage.prompt_tokens_details.cached_tokens`;
//! - answers `GET /fake/usage` with what it counted so far (calls and tokens, in total and
//!   per stage), for a benchmark that drives it from another process (`dream-bench
//!   fake-server`, and through it the mem0 comparison script).
//!
//! With [`FakeLlm::set_latency`] it adds latency to every chat call, for the concurrency
//! benchmark (`benches/concurrency.rs`). [`topic_events`] writes synthetic inbox lines
//! that cluster into a chosen number of distinct topics.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use dream_core::schema::classify;
use dream_core::selection::embed::Builtin;

/// Decides the answer to one call of a stage.
pub type Handler = Arc<dyn Fn(&Call) -> Answer + Send + Sync>;

/// One chat request as a handler sees it.
#[derive(Debug, Clone)]
pub struct Call {
    /// Position among all chat requests (0-based; retries count).
    pub n: usize,
    pub stage: String,
    /// Position among this stage's requests (0-based; retries count).
    pub stage_n: usize,
    /// The request body.
    pub body: Value,
    /// The user message parsed as JSON (the stage's input), or `Null` when it is not JSON
    /// (a reflect prompt's numbered lines: [`Call::clusters`]).
    pub input: Value,
    /// The user message as sent.
    pub user: String,
}

/// An event as a reflect call shows it: `id` is the number the prompt gives it, what a
/// model cites (the event's own id is never sent).
#[derive(Debug, Clone, PartialEq)]
pub struct SentEvent {
    pub id: String,
    pub text: String,
    /// Who wrote it, as shown (empty when the event names no one).
    pub actor: String,
    /// `owner` unless the line says another trust.
    pub trust: String,
    /// `message` unless the line says another kind.
    pub kind: String,
    /// Not marked as read before.
    pub new: bool,
    pub recalled: bool,
    /// The day the prompt shows it under (`Monday 8 May 2023`).
    pub day: String,
    /// The event's lines as sent.
    pub line: String,
}

/// A candidate as sent to the judge: its id, text and the ids of its neighbour facts.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeCandidate {
    pub id: String,
    pub text: String,
    pub neighbours: Vec<String>,
}

/// One cluster of a reflect call: its number in the prompt (from 1), whether it holds one
/// session's single mentions, what memory already holds from its earlier events
/// (`known`), and its events.
#[derive(Debug, Clone, PartialEq)]
pub struct SentCluster {
    pub cluster: u64,
    pub singles: bool,
    pub known: Vec<SentKnown>,
    pub events: Vec<SentEvent>,
}

/// A known item of a reflect call's cluster: `id` is its label (`k1`), which a model
/// cites for the earlier events it stands for.
#[derive(Debug, Clone, PartialEq)]
pub struct SentKnown {
    pub id: String,
    pub text: String,
    pub pending: bool,
    /// Its line as sent.
    pub line: String,
}

/// A reflect prompt's user message read back into its clusters, as a model reads it: a
/// `Cluster <n>` line opens a cluster (`: single mentions` after it for one session's
/// single mentions), `k<n>: text` (or `k<n> (pending): text`) is a known item,
/// `<n> (qualifiers) writer: text` an event, a line indented by two spaces continues the
/// event before it, and any other line names the day of the events below it.
pub fn parse_lines(user: &str) -> Vec<SentCluster> {
    let mut out: Vec<SentCluster> = Vec::new();
    let mut day = String::new();
    for line in user.lines() {
        if let Some(rest) = line.strip_prefix("Cluster ") {
            let (n, singles) = match rest.split_once(':') {
                Some((n, what)) => (n, what.trim() == "single mentions"),
                None => (rest, false),
            };
            out.push(SentCluster {
                cluster: n.trim().parse().unwrap_or_default(),
                singles,
                known: Vec::new(),
                events: Vec::new(),
            });
            day.clear();
            continue;
        }
        let Some(part) = out.last_mut() else {
            continue;
        };
        if let Some(more) = line.strip_prefix("  ") {
            if let Some(e) = part.events.last_mut() {
                e.text.push('\n');
                e.text.push_str(more);
                e.line.push('\n');
                e.line.push_str(line);
            }
            continue;
        }
        let digits = line.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            let id = line[..digits].to_string();
            let mut rest = &line[digits..];
            let mut qualifiers: Vec<String> = Vec::new();
            if let Some(q) = rest.strip_prefix(" (") {
                if let Some((inside, after)) = q.split_once(')') {
                    qualifiers = inside.split(", ").map(String::from).collect();
                    rest = after;
                }
            }
            let (actor, text) = match rest.split_once(": ") {
                Some((a, t)) => (a.trim().to_string(), t.to_string()),
                None => (
                    String::new(),
                    rest.trim_start_matches(':').trim().to_string(),
                ),
            };
            let trust = qualifiers
                .iter()
                .find_map(|q| q.strip_prefix("trust "))
                .unwrap_or("owner")
                .to_string();
            let kind = qualifiers
                .iter()
                .find(|q| !q.starts_with("trust ") && *q != "recalled" && *q != "seen")
                .cloned()
                .unwrap_or_else(|| "message".into());
            part.events.push(SentEvent {
                id,
                text,
                actor,
                trust,
                kind,
                new: !qualifiers.iter().any(|q| q == "seen"),
                recalled: qualifiers.iter().any(|q| q == "recalled"),
                day: day.clone(),
                line: line.to_string(),
            });
            continue;
        }
        if let Some((label, text)) = line.split_once(": ").filter(|(l, _)| {
            l.strip_prefix('k')
                .map(|n| n.trim_end_matches(" (pending)"))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        }) {
            part.known.push(SentKnown {
                id: label.trim_end_matches(" (pending)").to_string(),
                text: text.to_string(),
                pending: label.ends_with(" (pending)"),
                line: line.to_string(),
            });
            continue;
        }
        if !line.trim().is_empty() {
            day = line.trim().to_string();
        }
    }
    out
}

impl Call {
    /// The clusters of a reflect call (its numbered lines: [`parse_lines`]).
    pub fn clusters(&self) -> Vec<SentCluster> {
        parse_lines(&self.user)
    }

    /// The events a reflect call shows in full, over all its clusters.
    pub fn events(&self) -> Vec<SentEvent> {
        self.clusters().into_iter().flat_map(|c| c.events).collect()
    }

    /// The candidates of a judge call: each `Candidate <id>: <text>` line, with the ids of
    /// the indented neighbour lines `  <id>: <text>` after it.
    pub fn candidates(&self) -> Vec<JudgeCandidate> {
        let mut out: Vec<JudgeCandidate> = Vec::new();
        for line in self.user.lines() {
            if let Some(rest) = line.strip_prefix("Candidate ") {
                let (id, text) = rest.split_once(": ").unwrap_or((rest, ""));
                out.push(JudgeCandidate {
                    id: id.to_string(),
                    text: text.to_string(),
                    neighbours: Vec::new(),
                });
            } else if let (Some(rest), Some(c)) = (line.strip_prefix("  "), out.last_mut()) {
                if let Some((id, _)) = rest.split_once(": ") {
                    c.neighbours.push(id.to_string());
                }
            }
        }
        out
    }
}

#[derive(Debug, Clone)]
enum Kind {
    Content {
        text: String,
        finish: &'static str,
    },
    Status {
        code: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
}

/// What the fake answers to one request.
#[derive(Debug, Clone)]
pub struct Answer {
    kind: Kind,
    delay: Duration,
    usage: bool,
}

impl Answer {
    fn content(text: String, finish: &'static str) -> Answer {
        Answer {
            kind: Kind::Content { text, finish },
            delay: Duration::ZERO,
            usage: true,
        }
    }

    /// A completion whose content is this JSON value.
    pub fn json(v: Value) -> Answer {
        Answer::content(v.to_string(), "stop")
    }

    /// A completion whose content is this text, verbatim.
    pub fn text(s: impl Into<String>) -> Answer {
        Answer::content(s.into(), "stop")
    }

    /// A completion whose content is prose, not JSON.
    pub fn garbled() -> Answer {
        Answer::text("Sure! Here are the durable facts I found: the user lives somewhere sunny.")
    }

    /// A completion cut off half way through this JSON value (`finish_reason: "length"`).
    pub fn truncated(v: Value) -> Answer {
        let s = v.to_string();
        let half: String = s.chars().take(s.chars().count() / 2).collect();
        Answer::content(half, "length")
    }

    /// Valid JSON in the wrong schema.
    pub fn wrong_schema() -> Answer {
        Answer::json(json!({"facts": [{"fact": "The user lives in Lisbon.", "sources": [1, 2]}]}))
    }

    /// An error status with an OpenAI-style error body.
    pub fn status(code: u16, message: &str) -> Answer {
        Answer {
            kind: Kind::Status {
                code,
                body: json!({"error": {"message": message, "type": "fake_error"}}).to_string(),
                headers: Vec::new(),
            },
            delay: Duration::ZERO,
            usage: false,
        }
    }

    /// This status with this JSON body, verbatim (for `/embeddings` replies of any shape).
    pub fn raw(code: u16, body: Value) -> Answer {
        Answer {
            kind: Kind::Status {
                code,
                body: body.to_string(),
                headers: Vec::new(),
            },
            delay: Duration::ZERO,
            usage: false,
        }
    }

    /// 500 Internal Server Error.
    pub fn server_error() -> Answer {
        Answer::status(
            500,
            "The server had an error while processing your request.",
        )
    }

    /// 429 Too Many Requests with `Retry-After: secs`.
    pub fn rate_limited(retry_after_secs: u64) -> Answer {
        let mut a = Answer::status(429, "Rate limit reached. Please try again later.");
        if let Kind::Status { headers, .. } = &mut a.kind {
            headers.push(("Retry-After".into(), retry_after_secs.to_string()));
        }
        a
    }

    /// Answer only after this long (longer than the client's timeout: a timeout).
    pub fn delayed(mut self, d: Duration) -> Answer {
        self.delay = d;
        self
    }

    /// Leave `usage` out of the reply.
    pub fn without_usage(mut self) -> Answer {
        self.usage = false;
        self
    }
}

/// One request as the fake saw and answered it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub n: usize,
    pub path: String,
    pub stage: String,
    /// When it arrived and when the answer was written, since the fake started
    /// (`Duration::MAX` while it is still being answered).
    pub arrived: Duration,
    pub finished: Duration,
    /// The status answered; 0 while it is still being answered.
    pub status: u16,
    /// `response_format` was in the request.
    pub json_mode: bool,
    pub max_tokens: u64,
    /// Tokens the fake counted (and reported, when `usage_reported`).
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of the prompt tokens, those a prefix cache held (see [`FakeLlm::set_prefix_cache`]).
    pub cached_tokens: u64,
    pub usage_reported: bool,
    pub authorization: Option<String>,
    pub body: Value,
}

impl Recorded {
    /// Tokens this request used, as the fake counts them (0 for an error status).
    pub fn tokens(&self) -> u64 {
        if self.status == 200 {
            self.prompt_tokens + self.completion_tokens
        } else {
            0
        }
    }
}

#[derive(Debug, Clone)]
struct Settings {
    latency: Duration,
    refuse_json_mode: bool,
    api_key: Option<String>,
    token_scale: f64,
    prefix_cache: bool,
}

struct Shared {
    handlers: Mutex<HashMap<String, Handler>>,
    settings: Mutex<Settings>,
    log: Mutex<Vec<Recorded>>,
    seq: Mutex<(usize, HashMap<String, usize>)>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    epoch: Instant,
    embedder: Builtin,
    /// Hashes of the message prefixes seen so far (for the prefix cache).
    prefixes: Mutex<std::collections::HashSet<u64>>,
}

/// The running fake server. Dropping it stops it.
pub struct FakeLlm {
    addr: SocketAddr,
    server: Arc<tiny_http::Server>,
    shared: Arc<Shared>,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeLlm {
    /// Start on an ephemeral port of 127.0.0.1, with the default handlers:
    /// [`echo_reflect`] for reflect, [`agreeable_judge`] for judge, `{}` for other stages.
    pub fn start() -> FakeLlm {
        FakeLlm::start_on(0).expect("the fake LLM server binds to loopback")
    }

    /// [`FakeLlm::start`] on this port of 127.0.0.1 (0: an ephemeral one), or why it could
    /// not bind.
    pub fn start_on(port: u16) -> Result<FakeLlm, String> {
        let server = Arc::new(
            tiny_http::Server::http(("127.0.0.1", port))
                .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?,
        );
        let addr = server.server_addr().to_ip().expect("an IP address");
        let mut handlers: HashMap<String, Handler> = HashMap::new();
        handlers.insert("reflect".into(), Arc::new(echo_reflect));
        handlers.insert("judge".into(), Arc::new(agreeable_judge));
        let shared = Arc::new(Shared {
            handlers: Mutex::new(handlers),
            settings: Mutex::new(Settings {
                latency: Duration::ZERO,
                refuse_json_mode: false,
                api_key: None,
                token_scale: 1.0,
                prefix_cache: false,
            }),
            log: Mutex::new(Vec::new()),
            seq: Mutex::new((0, HashMap::new())),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            epoch: Instant::now(),
            embedder: Builtin::new(64),
            prefixes: Mutex::new(std::collections::HashSet::new()),
        });
        let stopping = Arc::new(AtomicBool::new(false));
        let thread = {
            let (server, shared, stopping) = (server.clone(), shared.clone(), stopping.clone());
            std::thread::spawn(move || loop {
                match server.recv() {
                    Ok(request) => {
                        let shared = shared.clone();
                        std::thread::spawn(move || handle(&shared, request));
                    }
                    Err(_) if stopping.load(Ordering::SeqCst) => break,
                    Err(_) => continue,
                }
            })
        };
        Ok(FakeLlm {
            addr,
            server,
            shared,
            stopping,
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT/v1`, for `llm.base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Answer calls of `stage` with `handler` from now on.
    pub fn on(&self, stage: &str, handler: impl Fn(&Call) -> Answer + Send + Sync + 'static) {
        self.shared
            .handlers
            .lock()
            .unwrap()
            .insert(stage.into(), Arc::new(handler));
    }

    /// Add this latency to every chat reply.
    pub fn set_latency(&self, d: Duration) {
        self.shared.settings.lock().unwrap().latency = d;
    }

    /// Answer 400 to any request that asks for `response_format`, as LM Studio does.
    pub fn refuse_json_mode(&self) {
        self.shared.settings.lock().unwrap().refuse_json_mode = true;
    }

    /// Answer 401 unless the request carries `Authorization: Bearer <key>`.
    pub fn require_key(&self, key: &str) {
        self.shared.settings.lock().unwrap().api_key = Some(key.into());
    }

    /// Count this many times more prompt tokens than the plain count (a tokenizer that
    /// counts more than dream estimates).
    pub fn set_token_scale(&self, scale: f64) {
        self.shared.settings.lock().unwrap().token_scale = scale;
    }

    /// Report the leading messages of a prompt that an earlier request began with, word for
    /// word, as cached (`usage.prompt_tokens_details.cached_tokens`), as a server with a
    /// prefix cache does. The fake caches whole messages only, and any length of them
    /// (OpenAI caches only prompts of 1,024 tokens or more; vLLM and llama.cpp any).
    pub fn set_prefix_cache(&self, on: bool) {
        self.shared.settings.lock().unwrap().prefix_cache = on;
    }

    /// Forget every prefix the cache holds, as a server started afresh (a benchmark that
    /// replays one workload on several schedules against one fake gives each a cold cache).
    pub fn clear_prefix_cache(&self) {
        self.shared.prefixes.lock().unwrap().clear();
    }

    /// Every request so far (answered or not yet), in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        let mut log = self.shared.log.lock().unwrap().clone();
        log.sort_by_key(|r| r.n);
        log
    }

    /// The chat requests of one stage, in arrival order.
    pub fn calls(&self, stage: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/chat/completions") && r.stage == stage)
            .collect()
    }

    /// Tokens of every chat request, as the fake counted them.
    pub fn tokens_used(&self) -> u64 {
        self.requests()
            .iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .map(Recorded::tokens)
            .sum()
    }

    /// The most chat requests the fake was handling at once.
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The fake's tokenizer: a quarter of the characters, rounded up.
pub fn count_tokens(s: &str) -> u64 {
    (s.chars().count() as u64).div_ceil(4)
}

fn header(request: &tiny_http::Request, name: &'static str) -> Option<String> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str().to_string())
}

fn respond(request: tiny_http::Request, code: u16, body: String, headers: &[(String, String)]) {
    let mut response = tiny_http::Response::from_string(body)
        .with_status_code(code)
        .with_header(
            tiny_http::Header::from_bytes("Content-Type", "application/json").expect("a header"),
        );
    for (k, v) in headers {
        response.add_header(
            tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()).expect("a header"),
        );
    }
    // The client may have given up (a timeout): nothing to do then.
    let _ = request.respond(response);
}

fn handle(shared: &Shared, mut request: tiny_http::Request) {
    let arrived = shared.epoch.elapsed();
    let path = request.url().to_string();
    let stage = header(&request, "X-Dream-Stage").unwrap_or_default();
    let authorization = header(&request, "Authorization");
    let mut raw = String::new();
    let _ = request.as_reader().read_to_string(&mut raw);
    let body: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
    let settings = shared.settings.lock().unwrap().clone();
    let mut rec = Recorded {
        n: 0,
        path: path.clone(),
        stage: stage.clone(),
        arrived,
        finished: arrived,
        status: 200,
        json_mode: body.get("response_format").is_some(),
        max_tokens: body
            .get("max_tokens")
            .or_else(|| body.get("max_completion_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(u64::MAX),
        prompt_tokens: 0,
        completion_tokens: 0,
        cached_tokens: 0,
        usage_reported: false,
        authorization: authorization.clone(),
        body: body.clone(),
    };
    let (n, stage_n) = {
        let mut seq = shared.seq.lock().unwrap();
        let n = seq.0;
        seq.0 += 1;
        let s = seq.1.entry(stage.clone()).or_insert(0);
        let stage_n = *s;
        *s += 1;
        (n, stage_n)
    };
    rec.n = n;
    rec.status = 0;
    rec.finished = Duration::MAX;
    shared.log.lock().unwrap().push(rec.clone());
    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.max_in_flight.fetch_max(now, Ordering::SeqCst);

    let (code, out, headers) = answer(
        shared,
        &settings,
        &path,
        &stage,
        stage_n,
        &body,
        authorization,
        &mut rec,
    );
    rec.status = code;
    rec.finished = shared.epoch.elapsed();
    shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    if let Some(slot) = shared.log.lock().unwrap().iter_mut().find(|r| r.n == rec.n) {
        *slot = rec;
    }
    respond(request, code, out, &headers);
}

#[allow(clippy::too_many_arguments)]
fn answer(
    shared: &Shared,
    settings: &Settings,
    path: &str,
    stage: &str,
    stage_n: usize,
    body: &Value,
    authorization: Option<String>,
    rec: &mut Recorded,
) -> (u16, String, Vec<(String, String)>) {
    let error = |code: u16, message: &str| {
        (
            code,
            json!({"error": {"message": message}}).to_string(),
            Vec::new(),
        )
    };
    if let Some(key) = &settings.api_key {
        if authorization.as_deref() != Some(format!("Bearer {key}").as_str()) {
            return error(401, "Incorrect API key provided.");
        }
    }
    if path.ends_with("/embeddings") {
        // A handler set for stage "embed" decides; otherwise the builtin vectors below.
        let handler = shared.handlers.lock().unwrap().get(stage).cloned();
        if let Some(h) = handler.filter(|_| stage == "embed") {
            let call = Call {
                n: rec.n,
                stage: stage.into(),
                stage_n,
                body: body.clone(),
                input: body["input"].clone(),
                user: String::new(),
            };
            if let Kind::Status {
                code,
                body,
                headers,
            } = h(&call).kind
            {
                return (code, body, headers);
            }
        }
        let inputs: Vec<String> = match &body["input"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect(),
            _ => return error(400, "'input' is required"),
        };
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                // Unnormalized on purpose: the client must scale vectors itself.
                let v: Vec<f32> = shared.embedder.vector(t).iter().map(|x| x * 3.0).collect();
                json!({"object": "embedding", "index": i, "embedding": v})
            })
            .collect();
        let tokens: u64 = inputs.iter().map(|t| count_tokens(t)).sum();
        rec.prompt_tokens = tokens;
        return (
            200,
            json!({"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}).to_string(),
            Vec::new(),
        );
    }
    if path.ends_with("/fake/usage") {
        return (
            200,
            usage_summary(&shared.log.lock().unwrap()).to_string(),
            Vec::new(),
        );
    }
    if !path.ends_with("/chat/completions") {
        return error(404, &format!("no route for {path}"));
    }
    if settings.refuse_json_mode && rec.json_mode {
        return error(
            400,
            "'response_format.type' must be 'json_schema' or 'text'",
        );
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let call = Call {
        n: rec.n,
        stage: stage.into(),
        stage_n,
        body: body.clone(),
        input: serde_json::from_str(user).unwrap_or(Value::Null),
        user: user.to_string(),
    };
    let handler = shared.handlers.lock().unwrap().get(stage).cloned();
    let a = match handler {
        Some(h) => h(&call),
        None => Answer::json(json!({})),
    };
    std::thread::sleep(settings.latency + a.delay);
    match a.kind {
        Kind::Status {
            code,
            body,
            headers,
        } => (code, body, headers),
        Kind::Content { text, finish } => {
            let per_message: Vec<u64> = messages
                .iter()
                .map(|m| count_tokens(m["content"].as_str().unwrap_or_default()) + 4)
                .collect();
            let plain: u64 = per_message.iter().sum::<u64>() + 3;
            let prompt = (plain as f64 * settings.token_scale).ceil() as u64;
            let cached = if settings.prefix_cache {
                let held = cached_messages(shared, &messages);
                let plain: u64 = per_message[..held].iter().sum();
                ((plain as f64 * settings.token_scale).floor() as u64).min(prompt)
            } else {
                0
            };
            let (text, finish) = if count_tokens(&text) > rec.max_tokens {
                let keep = (rec.max_tokens as usize).saturating_mul(4);
                (text.chars().take(keep).collect::<String>(), "length")
            } else {
                (text, finish)
            };
            let completion = count_tokens(&text);
            rec.prompt_tokens = prompt;
            rec.completion_tokens = completion;
            rec.cached_tokens = cached;
            rec.usage_reported = a.usage;
            let mut reply = json!({
                "id": format!("chatcmpl-fake-{}", rec.n),
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
            });
            if a.usage {
                reply["usage"] = json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion});
                if settings.prefix_cache {
                    reply["usage"]["prompt_tokens_details"] = json!({"cached_tokens": cached});
                }
            }
            (200, reply.to_string(), Vec::new())
        }
    }
}

/// How many leading messages of this prompt an earlier request began with, word for word;
/// then remembers this prompt's prefixes.
fn cached_messages(shared: &Shared, messages: &[Value]) -> usize {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut hashes = Vec::with_capacity(messages.len());
    for m in messages {
        m["role"].as_str().unwrap_or_default().hash(&mut hasher);
        m["content"].as_str().unwrap_or_default().hash(&mut hasher);
        hashes.push(hasher.finish());
    }
    let mut seen = shared.prefixes.lock().unwrap();
    let held = hashes.iter().take_while(|h| seen.contains(h)).count();
    seen.extend(hashes);
    held
}

/// What `GET /fake/usage` answers: the chat calls answered so far and their tokens, in
/// total and per stage (an empty stage: a client that sends no `X-Dream-Stage`).
fn usage_summary(log: &[Recorded]) -> Value {
    let mut stages: std::collections::BTreeMap<String, [u64; 4]> = Default::default();
    for r in log
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions") && r.status == 200)
    {
        let s = stages.entry(r.stage.clone()).or_default();
        s[0] += 1;
        s[1] += r.prompt_tokens;
        s[2] += r.completion_tokens;
        s[3] += r.cached_tokens;
    }
    let row = |s: &[u64; 4]| json!({"calls": s[0], "prompt_tokens": s[1], "completion_tokens": s[2], "cached_tokens": s[3], "total_tokens": s[1] + s[2]});
    let mut total = [0u64; 4];
    for s in stages.values() {
        for (t, v) in total.iter_mut().zip(s) {
            *t += v;
        }
    }
    let embeddings: Vec<&Recorded> = log
        .iter()
        .filter(|r| r.path.ends_with("/embeddings") && r.status == 200)
        .collect();
    json!({
        "total": row(&total),
        "stages": stages.iter().map(|(k, v)| (k.clone(), row(v))).collect::<serde_json::Map<_, _>>(),
        "embeddings": {
            "requests": embeddings.len(),
            "tokens": embeddings.iter().map(|r| r.prompt_tokens).sum::<u64>(),
        },
    })
}

/// A handler for another memory tool's extraction call (mem0 2.x's additive extraction,
/// for the comparison benchmark): each `user:` line of the prompt's `## New Messages`
/// section becomes one memory, as [`echo_reflect`] proposes the owner's sentence. The
/// reply is `{"memory": [{"id", "text"}]}`; a prompt without that section gets none.
pub fn mem0_extract(call: &Call) -> Answer {
    let messages = call.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    let section = user
        .split_once("## New Messages")
        .map(|(_, rest)| rest.split("\n## ").next().unwrap_or_default())
        .unwrap_or_default();
    let memory: Vec<Value> = section
        .lines()
        .filter_map(|l| l.strip_prefix("user: "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .enumerate()
        .map(|(i, t)| json!({"id": i.to_string(), "text": t}))
        .collect();
    Answer::json(json!({ "memory": memory }))
}

/// The default reflect handler: for each cluster with a new owner event, propose that
/// event's text verbatim, citing every event of the cluster by its number and every known
/// item by its label (the earlier events it stands for), with confidence 0.9 and block and
/// category from the offline phrase rules. Nothing for a cluster without one.
pub fn echo_reflect(call: &Call) -> Answer {
    let mut candidates = Vec::new();
    for c in call.clusters() {
        let Some(first) = c.events.iter().find(|e| e.new && e.trust == "owner") else {
            continue;
        };
        let (category, block) = classify(&first.text);
        candidates.push(json!({
            "text": first.text,
            "category": category,
            "block": block.as_str(),
            "ids": cite(&c),
            "confidence": 0.9,
            "reason": "stated by the user and restated",
        }));
    }
    Answer::json(json!({ "candidates": candidates }))
}

/// Every event of a cluster by its number, then every known item by its label, as a model
/// cites them.
pub fn cite(c: &SentCluster) -> Vec<Value> {
    c.events
        .iter()
        .map(|e| {
            e.id.parse::<u64>()
                .map_or_else(|_| json!(e.id), |n| json!(n))
        })
        .chain(c.known.iter().map(|k| json!(k.id)))
        .collect()
}

/// The default judge handler: no contradiction, no duplicate, for every candidate.
pub fn agreeable_judge(call: &Call) -> Answer {
    let verdicts: Vec<Value> = call
        .candidates()
        .iter()
        .map(|c| json!({"candidateId": c.id, "contradicts": null, "duplicateOf": null, "reason": "no conflict"}))
        .collect();
    Answer::json(json!({ "verdicts": verdicts }))
}

/// A made-up word, distinct for every `n` below 8000.
fn word(n: usize) -> String {
    const SYL: [&str; 20] = [
        "ba", "ko", "ri", "mu", "te", "lo", "zen", "pa", "qui", "dor", "fel", "gi", "ha", "jun",
        "ny", "vo", "wex", "sy", "tar", "um",
    ];
    format!(
        "{}{}{}",
        SYL[n % 20],
        SYL[(n / 20) % 20],
        SYL[(n / 400) % 20]
    )
}

/// Inbox lines for `clusters` distinct topics, each stated by the user `per_cluster`
/// times on consecutive days from `start` (one session per day), so that the builtin
/// embedder puts each topic in its own cluster and a restated topic has support on
/// several days.
pub fn topic_events(clusters: usize, per_cluster: usize, start: DateTime<Utc>) -> String {
    let mut out = String::new();
    for k in 0..clusters {
        let w: Vec<String> = (0..5).map(|j| word(k * 5 + j)).collect();
        let base = format!(
            "I keep {} {} with {} {} and {}.",
            w[0], w[1], w[2], w[3], w[4]
        );
        for j in 0..per_cluster {
            let ts = start + chrono::Duration::days(j as i64) + chrono::Duration::minutes(k as i64);
            let text = match j {
                0 => base.clone(),
                1 => format!("As I said, {}", base.replacen("I keep", "i keep", 1)),
                _ => format!("Reminder {j}: {}", base.replacen("I keep", "i keep", 1)),
            };
            let line = json!({
                "ts": ts.to_rfc3339(),
                "kind": "message",
                "actor": "user",
                "session": format!("s-day{j}"),
                "text": text,
            });
            out.push_str(&line.to_string());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(url: &str, stage: &str, body: &Value) -> (u16, Value) {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::blocking::Client::builder()
            .no_proxy()
            .build()
            .unwrap();
        let r = client
            .post(url)
            .header("X-Dream-Stage", stage)
            .json(body)
            .send()
            .unwrap();
        let code = r.status().as_u16();
        (
            code,
            serde_json::from_str(&r.text().unwrap()).unwrap_or(Value::Null),
        )
    }

    #[test]
    fn it_answers_scripts_counts_tokens_and_records() {
        let fake = FakeLlm::start();
        let url = format!("{}/chat/completions", fake.base_url());
        let body = json!({"model": "m", "max_tokens": 5, "messages": [
            {"role": "system", "content": "x".repeat(40)},
            {"role": "user", "content": "{\"events\": []}"}
        ]});
        fake.on("reflect", |call| {
            if call.stage_n == 0 {
                Answer::server_error()
            } else {
                Answer::json(json!({"candidates": [], "pad": "y".repeat(100)}))
            }
        });
        assert_eq!(post(&url, "reflect", &body).0, 500);
        let (code, reply) = post(&url, "reflect", &body);
        assert_eq!(code, 200);
        assert_eq!(
            reply["choices"][0]["finish_reason"], "length",
            "cut off at max_tokens"
        );
        assert_eq!(reply["usage"]["completion_tokens"], 5);
        assert_eq!(reply["usage"]["prompt_tokens"], (10 + 4) + (4 + 4) + 3);
        let log = fake.requests();
        assert_eq!(log.len(), 2);
        assert_eq!((log[0].status, log[1].status), (500, 200));
        assert_eq!(fake.tokens_used(), 25 + 5);

        let (code, reply) = post(
            &format!("{}/embeddings", fake.base_url()),
            "embed",
            &json!({"input": ["a cat", "a dog"]}),
        );
        assert_eq!(code, 200);
        assert_eq!(reply["data"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_reflect_prompt_reads_back_as_a_model_sees_it_and_echo_cites_its_labels() {
        use dream_core::llm::prompts;
        use dream_core::schema::contract::{EventView, Known, ReflectPart, ReflectPrompt};
        let e = |id: &str,
                 ts: &str,
                 actor: &str,
                 text: &str,
                 trust: dream_core::sources::event::Trust| {
            EventView {
                id: id.into(),
                ts: ts.parse().unwrap(),
                session: "s".into(),
                kind: "message".into(),
                trust,
                recalled: false,
                new: true,
                text: text.into(),
                actor: actor.into(),
            }
        };
        use dream_core::sources::event::Trust::{Agent, Owner};
        let prompt = ReflectPrompt {
            parts: vec![
                ReflectPart {
                    cluster: 3,
                    known: vec![Known {
                        id: "f_1".into(),
                        text: "I keep bees.".into(),
                        pending: true,
                        events: vec![e("old", "2026-11-01T09:00:00Z", "user", "x", Owner)],
                    }],
                    events: vec![
                        e(
                            "a",
                            "2026-11-02T09:00:00Z",
                            "assistant",
                            "Noted: bees.",
                            Agent,
                        ),
                        e(
                            "b",
                            "2026-11-02T09:05:00Z",
                            "user",
                            "I keep bees\n  on the roof.",
                            Owner,
                        ),
                    ],
                    singles: false,
                },
                ReflectPart {
                    cluster: 8,
                    known: Vec::new(),
                    events: vec![e(
                        "c",
                        "2026-11-03T09:00:00Z",
                        "user",
                        "I sold my bike.",
                        Owner,
                    )],
                    singles: true,
                },
            ],
        };
        let user = prompts::reflect_prompt_call(&prompt, 100).user;
        let parts = parse_lines(&user);
        assert_eq!(parts.len(), 2);
        assert_eq!((parts[0].cluster, parts[0].singles), (1, false));
        assert_eq!((parts[1].cluster, parts[1].singles), (2, true));
        assert_eq!(parts[0].known[0].id, "k1");
        assert!(parts[0].known[0].pending);
        let ev = &parts[0].events;
        assert_eq!(
            (
                ev[0].id.as_str(),
                ev[0].trust.as_str(),
                ev[0].actor.as_str()
            ),
            ("1", "agent", "assistant")
        );
        assert_eq!((ev[1].id.as_str(), ev[1].trust.as_str()), ("2", "owner"));
        assert_eq!(
            ev[1].text, "I keep bees\n  on the roof.",
            "continuation lines rejoined"
        );
        assert_eq!(ev[1].day, "Monday 2 November 2026");
        assert_eq!(parts[1].events[0].text, "I sold my bike.");
        // The echo cites the cluster's events by number and its known item by label, which
        // the parser maps back to the events' ids.
        let call = Call {
            n: 0,
            stage: "reflect".into(),
            stage_n: 0,
            body: Value::Null,
            input: Value::Null,
            user,
        };
        let Kind::Content { text, .. } = echo_reflect(&call).kind else {
            panic!("a completion")
        };
        let reply =
            prompts::parse_reflect_prompt(&prompt, &serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(reply.candidates.len(), 2);
        assert_eq!(
            reply.candidates[0].supporting_event_ids,
            vec!["a", "b", "old"]
        );
        assert_eq!(reply.candidates[1].supporting_event_ids, vec!["c"]);
    }

    #[test]
    fn topics_are_distinct_and_restated() {
        let start = "2026-11-01T09:00:00Z".parse().unwrap();
        let text = topic_events(3, 2, start);
        assert_eq!(text.lines().count(), 6);
        let words: std::collections::BTreeSet<String> = (0..8000).map(word).collect();
        assert_eq!(words.len(), 8000);
    }
}
