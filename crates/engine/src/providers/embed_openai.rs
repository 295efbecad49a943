//! The `openai` embedder (SPEC S7): any OpenAI-compatible `/embeddings` endpoint (OpenAI,
//! Ollama, LM Studio, vLLM, llama.cpp's server).
//!
//! Texts go in batches of `embed.batch_size` (the cycle makes the batches); vectors come
//! back scaled to unit length, so DBSCAN's radius means the same thing whatever the model.
//! The id names the model, and the cycle caches vectors under it, so an event is embedded
//! once per model. The server, key and retry policy are those of the chat provider
//! ([`crate::providers::openai::Endpoint`]) unless `embed.base_url` / `embed.api_key_env` say
//! otherwise.

use serde_json::{json, Value};

use super::embed::Embedder;
use crate::error::{Error, Result};
use crate::providers::openai::{excerpt, Endpoint};
use dream_core::schema::settings::Config;

pub struct OpenAiEmbedder {
    endpoint: Endpoint,
    model: String,
}

impl OpenAiEmbedder {
    pub fn from_config(config: &Config) -> Result<OpenAiEmbedder> {
        let e = &config.embed;
        let base_url = if e.base_url.trim().is_empty() {
            &config.llm.base_url
        } else {
            &e.base_url
        };
        let key_env = if e.api_key_env.trim().is_empty() {
            &config.llm.api_key_env
        } else {
            &e.api_key_env
        };
        if e.model.trim().is_empty() {
            return Err(Error::Config {
                file: dream_core::schema::settings::FILE.into(),
                message: "key `embed.model`: name the embedding model (for example text-embedding-3-small, or nomic-embed-text on Ollama)".into(),
            });
        }
        Ok(OpenAiEmbedder {
            endpoint: Endpoint::new("embed", base_url, key_env, config)?,
            model: e.model.trim().to_string(),
        })
    }
}

impl Embedder for OpenAiEmbedder {
    fn id(&self) -> String {
        format!("openai:{}", self.model)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let fail =
            |why: String| Error::Provider(format!("embedding with {} failed: {why}", self.model));
        let body = json!({ "model": self.model, "input": texts });
        let reply = self
            .endpoint
            .post("/embeddings", "embed", &body)
            .map_err(|e| match e.kind {
                dream_core::schema::contract::LlmErrorKind::Auth => Error::Auth(e.message),
                _ => fail(format!("{}{}", e.message, hint(&e.message))),
            })?;
        if !(200..300).contains(&reply.status) {
            return Err(fail(format!(
                "{} answered {} ({}){}",
                self.endpoint.url("/embeddings"),
                reply.status,
                excerpt(&reply.body),
                hint(&reply.body)
            )));
        }
        parse_embeddings(&reply.body, texts.len()).map_err(fail)
    }
}

/// What to change when a server refuses embeddings because it was started without them
/// (llama-cpp-python: "model must be created with embedding=True"; llama.cpp's server:
/// "does not support embeddings").
fn hint(body: &str) -> &'static str {
    let lower = body.to_lowercase();
    if lower.contains("embedding=true")
        || lower.contains("--embedding")
        || lower.contains("not support embeddings")
    {
        ": the server was started without embeddings; start llama-cpp-python with `--embedding true`, or llama.cpp's llama-server with `--embeddings` (or set embed.provider = \"builtin\")"
    } else {
        ""
    }
}

/// Why per-token vectors cannot be used, and what to run instead.
const PER_TOKEN: &str = "the server returns one vector per token, not one per text (it does not pool a chat model's token vectors; llama-cpp-python's server cannot): serve an embedding model, or run llama.cpp's llama-server with `--embeddings --pooling mean` (or set embed.provider = \"builtin\")";

/// The vectors of an `/embeddings` reply, in input order, each scaled to unit length.
pub fn parse_embeddings(body: &str, n: usize) -> std::result::Result<Vec<Vec<f32>>, String> {
    let v: Value = serde_json::from_str(body)
        .map_err(|_| format!("the reply is not JSON: {}", excerpt(body)))?;
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| "the reply has no \"data\" array".to_string())?;
    if data.len() != n {
        return Err(format!(
            "the reply has {} vectors for {n} texts",
            data.len()
        ));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
    for (pos, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .map_or(pos, |i| i as usize);
        let values = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("item {pos} has no \"embedding\" array"))?;
        if values.first().is_some_and(Value::is_array) {
            return Err(format!(
                "item {pos} holds {} vectors: {PER_TOKEN}",
                values.len()
            ));
        }
        let vector: Vec<f32> = values
            .iter()
            .map(|x| {
                x.as_f64()
                    .map(|f| f as f32)
                    .ok_or_else(|| format!("item {pos} holds a value that is not a number"))
            })
            .collect::<std::result::Result<_, _>>()?;
        if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
            return Err(format!("item {pos} is empty or not finite"));
        }
        let slot = out
            .get_mut(index)
            .ok_or_else(|| format!("item {pos} has index {index}, beyond the {n} texts"))?;
        *slot = Some(vector);
    }
    let out: Vec<Vec<f32>> = out
        .into_iter()
        .enumerate()
        .map(|(i, v)| v.ok_or_else(|| format!("no vector for text {i}")))
        .collect::<std::result::Result<_, _>>()?;
    let dim = out[0].len();
    if out.iter().any(|v| v.len() != dim) {
        return Err("the vectors differ in length".into());
    }
    Ok(out
        .into_iter()
        .map(|mut v| {
            dream_core::selection::embed::normalize(&mut v);
            v
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_come_back_in_input_order_at_unit_length() {
        let body = r#"{"data":[{"index":1,"embedding":[0,3,4]},{"index":0,"embedding":[2,0,0]}],"usage":{"prompt_tokens":4}}"#;
        let v = parse_embeddings(body, 2).unwrap();
        assert_eq!(v[0], vec![1.0, 0.0, 0.0]);
        assert_eq!(v[1], vec![0.0, 0.6, 0.8]);
    }

    #[test]
    fn malformed_replies_say_what_is_wrong() {
        for (body, n, want) in [
            ("oops", 1, "not JSON"),
            (r#"{"object":"list"}"#, 1, "no \"data\" array"),
            (
                r#"{"data":[{"embedding":[1]}]}"#,
                2,
                "1 vectors for 2 texts",
            ),
            (
                r#"{"data":[{"embedding":[1,2]},{"embedding":[1]}]}"#,
                2,
                "differ in length",
            ),
            (r#"{"data":[{"embedding":["a"]}]}"#, 1, "not a number"),
            (
                r#"{"data":[{"embedding":[[0.1,0.2],[0.3,0.4],[0.5,0.6]]}]}"#,
                1,
                "item 0 holds 3 vectors: the server returns one vector per token",
            ),
            (
                r#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#,
                2,
                "no vector for text 1",
            ),
        ] {
            let err = parse_embeddings(body, n).unwrap_err();
            assert!(err.contains(want), "{body}: {err}");
        }
    }
}
