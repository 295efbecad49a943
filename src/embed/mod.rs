//! Embedders: the swappable backend that turns event text into vectors (SPEC S7).
//!
//! `builtin` is a deterministic hashed bag of words that needs no network and is the
//! default; `openai` calls an `/embeddings` endpoint. The cycle caches vectors in the state
//! database under [`Embedder::id`], so an event is embedded once per model.

pub mod builtin;
pub mod openai;

use crate::config::Config;
use crate::error::{Error, Result};

/// Turns texts into vectors of one fixed size.
pub trait Embedder: Send + Sync {
    /// Names the model and its settings; vectors are cached under this id.
    fn id(&self) -> String;
    /// One vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
}

/// The embedder the config asks for.
pub fn from_config(config: &Config) -> Result<Box<dyn Embedder>> {
    match config.embed.provider.as_str() {
        "builtin" => Ok(Box::new(builtin::Builtin::new(config.embed.dim))),
        "openai" => Ok(Box::new(openai::OpenAiEmbedder::from_config(config)?)),
        other => Err(Error::Config {
            file: crate::config::FILE.into(),
            message: format!("key `embed.provider`: {other:?} is not available in this build"),
        }),
    }
}

/// Scale a vector to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}
