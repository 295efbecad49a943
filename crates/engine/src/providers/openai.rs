//! The `openai` provider (SPEC S7): any server that speaks OpenAI's `/chat/completions`
//! (OpenAI, Ollama, LM Studio, vLLM, llama.cpp's server, and proxies in front of them).
//!
//! The transport is [`Llm::chat_json`]: one chat completion whose reply must be a JSON
//! object. The stage methods build their prompts in [`super::prompts`] and parse the reply
//! there. What this file owns is talking to a real server:
//!
//! - the API key comes from the environment variable `llm.api_key_env` names; a missing key
//!   is a config error unless the server is on this machine (Ollama and friends need none);
//! - JSON mode is requested; a server that refuses `response_format` (or `max_tokens`, or
//!   `temperature`, as some models do) is remembered for the rest of the process and asked
//!   without it, and the report says so;
//! - 429 and 5xx are retried with exponential backoff, honouring `Retry-After` up to
//!   [`MAX_RETRY_AFTER`]; every attempt has the `llm.timeout_secs` timeout;
//! - errors say what a person must check: a 401 names the variable that held the refused
//!   key, a refused connection names the URL;
//! - a reply without `usage` is charged its estimate ([`Usage::reported`] false).
//!
//! Token estimates are conservative: half the prompt's bytes (real tokenizers give about a
//! quarter for English, and 2.4 bytes a token on dream's JSON prompts under a small model)
//! plus per-message overhead plus the whole `max_tokens`. Every reported usage calibrates
//! the estimate for this model: later estimates are the plain one times the largest ratio
//! of reported to plain prompt tokens seen, plus a margin ([`calibrated_scale`]); the cycle
//! keeps the ratio in its record, so the next cycle starts calibrated.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use dream_core::llm::{prompts, Llm};
use dream_core::schema::contract::{
    ChatCall, JudgeReply, JudgeRequest, LlmError, LlmErrorKind, ReflectPrompt, ReflectReply,
    ReflectRequest, Reply, Usage,
};
use dream_core::schema::settings::Config;

/// The longest `Retry-After` dream waits; a server asking for more fails the call.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// The longest backoff between two attempts when the server does not say.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The plain token count for a prompt of a system and a user message, before any
/// calibration: half their bytes, plus per-message overhead. Any tokenizer whose tokens
/// average two bytes or more counts no more than this: English prose averages about four
/// bytes a token, and dream's JSON prompts (ids, dates, quotes) about 2.4 under a small
/// model's tokenizer such as SmolLM2's.
pub fn prompt_estimate(system: &str, user: &str) -> u64 {
    let message = |s: &str| dream_core::llm::budget::estimate_tokens(s) + 4;
    message(system) + message(user) + 3
}

/// Headroom over the largest ratio a model has shown: later prompts differ a little.
pub const CALIBRATION_MARGIN: f64 = 1.1;

/// The factor on [`prompt_estimate`]: 1 for a model that has reported nothing yet, else the
/// largest ratio of reported to plain prompt tokens it showed, with [`CALIBRATION_MARGIN`].
/// A server whose tokenizer counts fewer tokens than the plain count (OpenAI's, about half)
/// so gets estimates near its own count, and one that counts more gets larger ones.
pub fn calibrated_scale(ratio: Option<f64>) -> f64 {
    match ratio {
        Some(r) if r.is_finite() && r > 0.0 => r * CALIBRATION_MARGIN,
        _ => 1.0,
    }
}

/// One OpenAI-compatible server: base URL, key, HTTP client, retry policy. Shared by the
/// chat provider and the `/embeddings` embedder.
pub struct Endpoint {
    base_url: String,
    key: Option<String>,
    key_env: String,
    client: reqwest::blocking::Client,
    timeout_secs: u64,
    max_retries: u32,
    backoff_ms: u64,
}

/// A reply with a status the caller must interpret (2xx, or a 4xx other than 401/403/429).
pub struct HttpReply {
    pub status: u16,
    pub body: String,
}

/// Make ring the process's TLS provider (reqwest is built without one; see the engine's
/// Cargo.toml). Idempotent: a provider already installed, by this or by anything else in
/// the process, stays.
pub fn install_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn config_error(message: String) -> Error {
    Error::Config {
        file: dream_core::schema::settings::FILE.into(),
        message,
    }
}

/// True when `url` points at this machine (such servers usually need no key).
pub fn is_local(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback() || ip.is_unspecified(),
        Err(_) => host == "localhost" || host.ends_with(".localhost"),
    }
}

impl Endpoint {
    /// `section` names the config keys in errors (`llm` or `embed`).
    pub fn new(
        section: &str,
        base_url: &str,
        api_key_env: &str,
        config: &Config,
    ) -> Result<Endpoint> {
        let base = base_url.trim().trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&base)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or_else(|| {
                config_error(format!(
                    "key `{section}.base_url`: {base_url:?} is not an http(s) URL (for example https://api.openai.com/v1 or http://localhost:11434/v1)"
                ))
            })?;
        let local = is_local(&parsed);
        let key_env = api_key_env.trim().to_string();
        let key = if key_env.is_empty() {
            None
        } else {
            match std::env::var(&key_env) {
                Ok(k) if !k.trim().is_empty() => Some(k.trim().to_string()),
                _ if local => None,
                _ => {
                    return Err(config_error(format!(
                        "key `{section}.api_key_env`: the environment variable {key_env} is not set, and {base} is not a server on this machine. \
                         Export your API key as {key_env}, or set {section}.api_key_env to the variable that holds it \
                         (or to \"\" for a server that needs no key)"
                    )))
                }
            }
        };
        let timeout = Duration::from_secs(config.llm.timeout_secs);
        install_tls();
        let mut builder = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("dream/", env!("CARGO_PKG_VERSION")));
        if local {
            // A proxy for a server on this machine is never what anyone means.
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| Error::Provider(format!("cannot set up the HTTP client: {e}")))?;
        Ok(Endpoint {
            base_url: base,
            key,
            key_env,
            client,
            timeout_secs: config.llm.timeout_secs,
            max_retries: config.llm.max_retries,
            backoff_ms: config.llm.retry_backoff_ms,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base_url, path.trim_start_matches('/'))
    }

    /// POST a JSON body. Retries 429, 5xx and broken connections with backoff; maps 401
    /// and 403 to an [`LlmErrorKind::Auth`] error naming the key's variable, and transport
    /// failures to errors naming the URL. Any other status is returned for the caller.
    pub fn post(&self, path: &str, stage: &str, body: &Value) -> Result<HttpReply, LlmError> {
        let url = self.url(path);
        let mut attempt: u32 = 0;
        loop {
            let mut request = self
                .client
                .post(&url)
                .header("X-Dream-Stage", stage)
                .json(body);
            if let Some(key) = &self.key {
                request = request.bearer_auth(key);
            }
            let (error, wait) = match request.send() {
                Err(e) => {
                    let retry = !e.is_timeout() && !e.is_connect();
                    let error = self.transport_error(&e, &url);
                    if !retry {
                        return Err(error);
                    }
                    (error, None)
                }
                Ok(response) => {
                    let status = response.status();
                    let wait = retry_after(response.headers());
                    let text = response
                        .text()
                        .map_err(|e| self.transport_error(&e, &url))?;
                    let code = status.as_u16();
                    match code {
                        200..=299 => {
                            return Ok(HttpReply {
                                status: code,
                                body: text,
                            })
                        }
                        401 | 403 => return Err(self.auth_error(status, &text)),
                        429 if text.contains("insufficient_quota") => {
                            return Err(LlmError {
                                kind: LlmErrorKind::RateLimited,
                                usage: None,
                                message: format!(
                                    "{url} says the quota is exhausted (429): {}",
                                    excerpt(&text)
                                ),
                            })
                        }
                        429 => (
                            LlmError {
                                kind: LlmErrorKind::RateLimited,
                                usage: None,
                                message: format!(
                                    "{url} is rate limiting (429 Too Many Requests): {}",
                                    excerpt(&text)
                                ),
                            },
                            wait,
                        ),
                        500..=599 => (
                            LlmError {
                                kind: LlmErrorKind::Server,
                                usage: None,
                                message: format!("{url} answered {status}: {}", excerpt(&text)),
                            },
                            wait,
                        ),
                        _ => {
                            return Ok(HttpReply {
                                status: code,
                                body: text,
                            })
                        }
                    }
                }
            };
            if attempt >= self.max_retries {
                let tries = attempt + 1;
                return Err(LlmError {
                    message: format!(
                        "{} (gave up after {tries} attempt{}; llm.max_retries = {})",
                        error.message,
                        if tries == 1 { "" } else { "s" },
                        self.max_retries
                    ),
                    ..error
                });
            }
            let delay = match wait {
                Some(w) if w > MAX_RETRY_AFTER => {
                    return Err(LlmError {
                        message: format!(
                            "{} (the server asked to wait {} s, longer than the {} s dream waits)",
                            error.message,
                            w.as_secs(),
                            MAX_RETRY_AFTER.as_secs()
                        ),
                        ..error
                    })
                }
                Some(w) => w,
                None => backoff(self.backoff_ms, attempt),
            };
            tracing::warn!(
                stage,
                attempt = attempt + 1,
                delay_ms = delay.as_millis() as u64,
                "retrying: {}",
                error.message
            );
            std::thread::sleep(delay);
            attempt += 1;
        }
    }

    fn transport_error(&self, e: &reqwest::Error, url: &str) -> LlmError {
        let cause = root_cause(e);
        if e.is_connect() {
            // Nothing reached the server (refused, or no answer to the connection itself).
            LlmError::new(
                LlmErrorKind::Unreachable,
                format!("cannot connect to {url} ({cause}): is the server running, and is the base_url right?"),
            )
        } else if e.is_timeout() {
            LlmError::new(
                LlmErrorKind::Timeout,
                format!(
                    "no reply from {url} within {} s (llm.timeout_secs); a model on a CPU can need minutes per call: raise llm.timeout_secs, or lower llm.max_tokens and cluster.max_events_per_prompt",
                    self.timeout_secs
                ),
            )
        } else {
            LlmError::new(
                LlmErrorKind::Network,
                format!("the connection to {url} failed: {cause}"),
            )
        }
    }

    fn auth_error(&self, status: reqwest::StatusCode, body: &str) -> LlmError {
        let message = if self.key.is_some() {
            format!(
                "{} refused the API key in the environment variable {} ({status}): check the key, or set api_key_env to the variable that holds the right one ({})",
                self.base_url,
                self.key_env,
                excerpt(body)
            )
        } else if self.key_env.is_empty() {
            format!(
                "{} wants an API key ({status}) and none was sent: set api_key_env to the environment variable that holds it ({})",
                self.base_url,
                excerpt(body)
            )
        } else {
            format!(
                "{} wants an API key ({status}) and the environment variable {} is not set: export the key as {} ({})",
                self.base_url,
                self.key_env,
                self.key_env,
                excerpt(body)
            )
        };
        LlmError {
            kind: LlmErrorKind::Auth,
            usage: None,
            message,
        }
    }
}

/// Exponential backoff from `base_ms`, with up to a quarter of jitter, capped.
fn backoff(base_ms: u64, attempt: u32) -> Duration {
    let ms = base_ms.saturating_mul(1u64 << attempt.min(16));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64);
    let jitter = if ms >= 4 { nanos % (ms / 4) } else { 0 };
    Duration::from_millis(ms + jitter).min(MAX_BACKOFF)
}

/// How long the server asks to wait: `retry-after-ms`, or `Retry-After` in seconds or as
/// an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Some(Duration::from_millis(ms.max(0.0) as u64));
    }
    let v = get("retry-after")?;
    if let Ok(secs) = v.parse::<f64>() {
        return Some(Duration::from_millis((secs.max(0.0) * 1000.0) as u64));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let secs = (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
        .num_milliseconds()
        .max(0);
    Some(Duration::from_millis(secs as u64))
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// The message of an error body (`{"error":{"message":...}}` or `{"error":"..."}`), or
/// its first characters.
pub fn excerpt(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error"))
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let text = message.unwrap_or_else(|| body.trim().to_string());
    let short: String = text.chars().take(200).collect();
    if short.is_empty() {
        "empty body".into()
    } else if text.chars().count() > 200 {
        format!("{short}...")
    } else {
        short
    }
}

/// The prompt tokens a completion says its server took from its prompt cache: OpenAI's
/// (and vLLM's) `usage.prompt_tokens_details.cached_tokens`, else llama.cpp's
/// `timings.cache_n`, else its older `tokens_cached`; 0 when the server says nothing.
pub fn cached_tokens(completion: &Value) -> u64 {
    [
        "/usage/prompt_tokens_details/cached_tokens",
        "/timings/cache_n",
        "/tokens_cached",
    ]
    .iter()
    .find_map(|p| completion.pointer(p).and_then(Value::as_u64))
    .unwrap_or(0)
}

/// The `openai` chat provider.
pub struct OpenAi {
    endpoint: Endpoint,
    model: String,
    max_tokens: u64,
    /// False once the server refused `response_format`.
    json_mode: AtomicBool,
    /// True once the server asked for `max_completion_tokens` instead of `max_tokens`.
    completion_tokens_param: AtomicBool,
    /// False once the server refused `temperature`.
    temperature: AtomicBool,
    /// The largest ratio of reported to plain estimated prompt tokens seen for this model
    /// (this process's calls, and earlier cycles' through [`Llm::set_calibration`]); `None`
    /// until the model has reported any.
    calibration: Mutex<Option<f64>>,
    usage_missing: AtomicBool,
}

impl OpenAi {
    pub fn from_config(config: &Config) -> Result<OpenAi> {
        let c = &config.llm;
        if c.model.trim().is_empty() {
            return Err(config_error("key `llm.model`: name the model to call (for example gpt-4o-mini, or llama3.1:8b on Ollama)".into()));
        }
        Ok(OpenAi {
            endpoint: Endpoint::new("llm", &c.base_url, &c.api_key_env, config)?,
            model: c.model.trim().to_string(),
            max_tokens: c.max_tokens,
            json_mode: AtomicBool::new(true),
            completion_tokens_param: AtomicBool::new(false),
            temperature: AtomicBool::new(true),
            calibration: Mutex::new(None),
            usage_missing: AtomicBool::new(false),
        })
    }

    fn body(&self, call: &ChatCall) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": call.system},
                {"role": "user", "content": call.user},
            ],
        });
        let tokens_key = if self.completion_tokens_param.load(Ordering::Relaxed) {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[tokens_key] = json!(call.max_tokens);
        if self.temperature.load(Ordering::Relaxed) {
            body["temperature"] = json!(0);
        }
        if self.json_mode.load(Ordering::Relaxed) {
            body["response_format"] = json!({"type": "json_object"});
        }
        body
    }

    /// After a 400 or 422: drop or rename the parameter the server refused, remember it,
    /// and say whether the call is worth repeating.
    fn adapt(&self, status: u16, body: &str) -> bool {
        if !matches!(status, 400 | 422) {
            return false;
        }
        let lower = body.to_lowercase();
        if self.json_mode.load(Ordering::Relaxed)
            && (lower.contains("response_format")
                || lower.contains("json_object")
                || lower.contains("json mode"))
        {
            self.json_mode.store(false, Ordering::Relaxed);
            tracing::warn!(server = %self.endpoint.base_url, "json mode unsupported: asking without response_format from now on");
            return true;
        }
        if !self.completion_tokens_param.load(Ordering::Relaxed)
            && lower.contains("max_tokens")
            && lower.contains("max_completion_tokens")
        {
            self.completion_tokens_param.store(true, Ordering::Relaxed);
            tracing::info!("the server wants max_completion_tokens instead of max_tokens");
            return true;
        }
        if self.temperature.load(Ordering::Relaxed)
            && lower.contains("temperature")
            && (lower.contains("unsupported") || lower.contains("not support"))
        {
            self.temperature.store(false, Ordering::Relaxed);
            tracing::info!("the server refused temperature 0: using its default");
            return true;
        }
        false
    }

    /// Notes about how this provider had to talk to the server, for the report.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.json_mode.load(Ordering::Relaxed) {
            notes.push(format!(
                "json mode unsupported by {}: it refused response_format, so dream asked without it",
                self.endpoint.base_url
            ));
        }
        if self.usage_missing.load(Ordering::Relaxed) {
            notes.push(format!(
                "{} reported no token usage for some calls: each was charged its estimate",
                self.endpoint.base_url
            ));
        }
        notes
    }

    fn read_completion(&self, call: &ChatCall, body: &str) -> Result<Reply<Value>, LlmError> {
        let url = self.endpoint.url("/chat/completions");
        let parsed: Value = serde_json::from_str(body).map_err(|_| {
            LlmError::new(
                LlmErrorKind::Garbled,
                format!(
                    "{url} answered with something that is not a chat completion: {}",
                    excerpt(body)
                ),
            )
        })?;
        let usage = match (
            parsed
                .pointer("/usage/prompt_tokens")
                .and_then(Value::as_u64),
            parsed
                .pointer("/usage/completion_tokens")
                .and_then(Value::as_u64),
        ) {
            (Some(p), Some(c)) => {
                self.learn(p, prompt_estimate(&call.system, &call.user));
                Usage {
                    prompt_tokens: p,
                    completion_tokens: c,
                    cached_tokens: cached_tokens(&parsed).min(p),
                    reported: true,
                }
            }
            _ => {
                self.usage_missing.store(true, Ordering::Relaxed);
                Usage::default()
            }
        };
        let garbled =
            |message: String| LlmError::new(LlmErrorKind::Garbled, message).with_usage(usage);
        let choice = parsed.pointer("/choices/0");
        let finish = choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let message = choice.and_then(|c| c.get("message"));
        let content = message
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str);
        let Some(content) = content else {
            let why = message
                .and_then(|m| m.get("refusal"))
                .and_then(Value::as_str)
                .map(|r| format!("the model refused: {r}"))
                .unwrap_or_else(|| "the reply has no choices[0].message.content".into());
            return Err(garbled(format!("{url}: {why}")));
        };
        // A reply cut off at the token limit counts only if its first JSON value closed
        // before the cut: an inner object of a truncated reply is not the answer.
        let value = if finish == "length" {
            prompts::extract_first_json(content).map_err(|_| {
                LlmError::new(LlmErrorKind::Truncated, format!(
                    "the {} reply was cut off at the token limit (max_tokens {}) and is not complete JSON: raise llm.max_tokens, or use a model that answers more briefly",
                    call.stage, call.max_tokens
                )).with_usage(usage)
            })?
        } else {
            prompts::extract_json(content).map_err(|why| {
                garbled(format!(
                    "the {} reply from {}: {why}",
                    call.stage, self.model
                ))
            })?
        };
        Ok(Reply {
            value,
            usage,
            notes: self.notes(),
        })
    }

    /// Learn from a reported prompt count: the largest ratio of reported to plain
    /// estimated prompt tokens seen for this model scales every later estimate.
    fn learn(&self, reported: u64, plain: u64) {
        if plain == 0 {
            return;
        }
        let ratio = reported as f64 / plain as f64;
        let mut c = self.calibration.lock().expect("calibration lock");
        *c = Some(c.map_or(ratio, |r| r.max(ratio)));
    }
}

impl Llm for OpenAi {
    fn name(&self) -> String {
        format!("openai:{}", self.model)
    }

    fn estimate_reflect(&self, req: &ReflectRequest) -> u64 {
        self.estimate_chat(&prompts::reflect_call(req, self.max_tokens))
    }

    fn reflect(&self, req: &ReflectRequest) -> Result<Reply<ReflectReply>, LlmError> {
        let prompt = ReflectPrompt::single(req);
        self.chat_json(&prompts::reflect_prompt_call(&prompt, self.max_tokens))?
            .parsed(|v| prompts::parse_reflect_prompt(&prompt, v))
    }

    fn estimate_reflect_prompt(&self, prompt: &ReflectPrompt) -> u64 {
        self.estimate_chat(&prompts::reflect_prompt_call(prompt, self.max_tokens))
    }

    /// One call for the whole prompt, however many clusters it holds.
    fn reflect_prompt(&self, prompt: &ReflectPrompt) -> Result<Reply<ReflectReply>, LlmError> {
        self.chat_json(&prompts::reflect_prompt_call(prompt, self.max_tokens))?
            .parsed(|v| prompts::parse_reflect_prompt(prompt, v))
    }

    fn estimate_judge(&self, req: &JudgeRequest) -> u64 {
        self.estimate_chat(&prompts::judge_call(req, self.max_tokens))
    }

    fn judge(&self, req: &JudgeRequest) -> Result<Reply<JudgeReply>, LlmError> {
        self.chat_json(&prompts::judge_call(req, self.max_tokens))?
            .parsed(prompts::parse_judge)
    }

    fn estimate_chat(&self, call: &ChatCall) -> u64 {
        let scale = calibrated_scale(*self.calibration.lock().expect("calibration lock"));
        (prompt_estimate(&call.system, &call.user) as f64 * scale).ceil() as u64 + call.max_tokens
    }

    fn tokenizer_key(&self) -> Option<String> {
        Some(format!("{}@{}", self.name(), self.endpoint.base_url))
    }

    fn calibration(&self) -> Option<f64> {
        *self.calibration.lock().expect("calibration lock")
    }

    fn set_calibration(&self, ratio: f64) {
        if ratio.is_finite() && ratio > 0.0 {
            let mut c = self.calibration.lock().expect("calibration lock");
            *c = Some(c.map_or(ratio, |r| r.max(ratio)));
        }
    }

    fn chat_json(&self, call: &ChatCall) -> Result<Reply<Value>, LlmError> {
        let mut adaptations = 0;
        loop {
            let reply = self
                .endpoint
                .post("/chat/completions", &call.stage, &self.body(call))?;
            if (200..300).contains(&reply.status) {
                return self.read_completion(call, &reply.body);
            }
            if adaptations < 3 && self.adapt(reply.status, &reply.body) {
                adaptations += 1;
                continue;
            }
            let hint = if reply.status == 404 {
                format!(": check llm.base_url (OpenAI-compatible servers usually end in /v1) and that the model {} exists", self.model)
            } else {
                String::new()
            };
            return Err(LlmError {
                kind: LlmErrorKind::Server,
                usage: None,
                message: format!(
                    "{} answered {} ({}){hint}",
                    self.endpoint.url("/chat/completions"),
                    reply.status,
                    excerpt(&reply.body)
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_are_conservative_for_english() {
        let text = "I live in Lisbon and work best in the morning. ".repeat(20);
        // About four characters per token for English: the estimate must be above that.
        assert!(prompt_estimate("", &text) > text.len() as u64 / 4);
        assert!(prompt_estimate("", "") > 0);
    }

    #[test]
    fn cached_tokens_are_read_as_openai_and_llama_cpp_report_them() {
        let openai = json!({"usage": {"prompt_tokens": 2000, "completion_tokens": 9,
            "prompt_tokens_details": {"cached_tokens": 1920}}});
        assert_eq!(cached_tokens(&openai), 1920);
        let llama = json!({"usage": {"prompt_tokens": 700, "completion_tokens": 9},
            "timings": {"cache_n": 412, "prompt_n": 288}});
        assert_eq!(cached_tokens(&llama), 412);
        assert_eq!(cached_tokens(&json!({"tokens_cached": 33})), 33);
        assert_eq!(cached_tokens(&json!({"usage": {"prompt_tokens": 5}})), 0);
    }

    #[test]
    fn retry_after_is_read_in_seconds_milliseconds_and_dates() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = reqwest::header::HeaderMap::new();
        h.insert(
            "retry-after",
            "Sun, 06 Nov 1994 08:49:37 GMT".parse().unwrap(),
        );
        assert_eq!(
            retry_after(&h),
            Some(Duration::ZERO),
            "a date in the past: retry now"
        );
        assert_eq!(retry_after(&reqwest::header::HeaderMap::new()), None);
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(100, 0) >= Duration::from_millis(100));
        assert!(backoff(100, 3) >= Duration::from_millis(800));
        assert_eq!(backoff(1000, 30), MAX_BACKOFF);
        assert_eq!(backoff(0, 2), Duration::ZERO);
    }

    #[test]
    fn error_bodies_are_shown_by_their_message() {
        assert_eq!(
            excerpt(r#"{"error":{"message":"Invalid model","type":"x"}}"#),
            "Invalid model"
        );
        assert_eq!(
            excerpt(r#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(excerpt("  "), "empty body");
        assert!(excerpt(&"x".repeat(500)).ends_with("..."));
    }

    #[test]
    fn a_missing_key_is_a_config_error_except_for_local_servers() {
        let mut config = Config::default();
        config.llm.api_key_env = "DREAM_TEST_SURELY_UNSET_KEY".into();
        let err = Endpoint::new(
            "llm",
            "https://api.example.invalid/v1",
            &config.llm.api_key_env,
            &config,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("DREAM_TEST_SURELY_UNSET_KEY is not set"),
            "{err}"
        );
        assert!(Endpoint::new(
            "llm",
            "http://localhost:11434/v1",
            &config.llm.api_key_env,
            &config
        )
        .is_ok());
        assert!(Endpoint::new("llm", "http://127.0.0.1:8080/v1/", "", &config).is_ok());
        let err = Endpoint::new("llm", "localhost:11434", "", &config)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("is not an http(s) URL"), "{err}");
    }
}
