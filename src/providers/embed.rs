//! Embedders: the swappable backend that turns event text into vectors (SPEC S7).
//!
//! `builtin` is a deterministic hashed bag of words that needs no network and is the
//! default; `openai` calls an `/embeddings` endpoint. The cycle caches vectors in the state
//! database under [`Embedder::id`], so an event is embedded once per model.

use dream_core::embed::Builtin;

use crate::error::Result;

pub use dream_core::embed::normalize;

/// Turns texts into vectors of one fixed size.
pub trait Embedder: Send + Sync {
    /// Names the model and its settings; vectors are cached under this id.
    fn id(&self) -> String;
    /// One vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
}

/// The builtin embedder (`dream_core::embed`): pure, so it never fails.
impl Embedder for Builtin {
    fn id(&self) -> String {
        Builtin::id(self)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}
