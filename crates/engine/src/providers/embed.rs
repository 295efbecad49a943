//! Embedders: the swappable backend that turns event text into vectors (SPEC S7).
//!
//! `minilm` (the default, [`super::embed_minilm`]) is a static model compiled into the
//! binary that places texts by meaning; `builtin` is a deterministic hashed bag of words;
//! `openai` calls an `/embeddings` endpoint. None but `openai` needs a network. The cycle
//! caches vectors in the state database under [`Embedder::id`], so an event is embedded
//! once per model, and switching embedders embeds the window again under the new id
//! instead of mixing two models' vectors.
//!
//! Each model spreads texts differently, so each names its own DBSCAN radius
//! ([`Embedder::eps`], used while `cluster.eps` is unset) and, when it has been measured,
//! the distance at which two texts restate one another ([`Embedder::restates`]).

use dream_core::selection::embed::Builtin;

use crate::error::Result;

pub use dream_core::selection::embed::normalize;

/// Turns texts into vectors of one fixed size.
pub trait Embedder: Send + Sync {
    /// Names the model and its settings; vectors are cached under this id.
    fn id(&self) -> String;
    /// One vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// The DBSCAN radius (Euclidean distance between unit vectors) this model's vectors
    /// were measured at; `cluster.eps` overrides it.
    fn eps(&self) -> f64 {
        DEFAULT_EPS
    }
    /// The distance within which two texts say the same thing, when the S6 measures agree
    /// (see `dream_core::selection::route::restates`); `None` when it was never measured for the
    /// model, and then only S6 similarity decides.
    fn restates(&self) -> Option<f64> {
        None
    }
}

/// The radius of an embedder that names none: the one measured for `builtin`, whose
/// vectors are hashed words (0.8 joins texts with cosine >= 0.68).
pub const DEFAULT_EPS: f64 = 0.8;

/// The radius a cycle clusters at: `cluster.eps` when set, else the embedder's own.
pub fn eps(config: &dream_core::schema::settings::Config, embedder: &dyn Embedder) -> f64 {
    config.cluster.eps.unwrap_or_else(|| embedder.eps())
}

/// The builtin embedder (`dream_core::selection::embed`): pure, so it never fails.
impl Embedder for Builtin {
    fn id(&self) -> String {
        Builtin::id(self)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}
