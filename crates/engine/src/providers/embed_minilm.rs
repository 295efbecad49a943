//! The `minilm` embedder (SPEC S7), the default: a static (model2vec) embedding model
//! distilled from sentence-transformers/all-MiniLM-L6-v2, compiled into the binary.
//!
//! A builtin vector only knows which words two texts share; this one places texts by what
//! they mean, so "I live in Lisbon" and "My home is in Lisbon" land close together although
//! they share one content word. It is a table of one 128-value vector per WordPiece token:
//! a text is tokenised, its tokens' rows are averaged and the mean is scaled to unit
//! length, so embedding costs microseconds and needs no network, no model download and no
//! file beside the binary. The table and its provenance (teacher, hashes, the command that
//! distils it) are in `models/minilm-l6-v2-m2v-128/`; `scripts/distill_minilm.py` rebuilds
//! it byte for byte.
//!
//! The model is decoded on first use (about 30 ms), so commands that never embed (status,
//! review, an idle cycle) never pay for it. A text with no known token (a long run of
//! symbols, emoji only) gets an all-zero vector, which the cycle treats as "nothing to
//! cluster", as it does a builtin vector of a text with no content word.

use std::sync::OnceLock;

use model2vec_rs::model::StaticModel;

use super::embed::Embedder;
use crate::error::{Error, Result};

/// The folder the model is compiled from (relative to the crate root).
macro_rules! model_file {
    ($name:literal) => {
        include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../models/minilm-l6-v2-m2v-128/",
            $name
        ))
    };
}

static TOKENIZER: &[u8] = model_file!("tokenizer.json");
static TABLE: &[u8] = model_file!("model.safetensors");
static CONFIG: &[u8] = model_file!("config.json");

/// Names the model and its version; vectors are cached under this id, so a new table
/// (another distillation) must get a new id.
pub const ID: &str = "minilm-l6-v2-m2v-128-v1";
/// Vector size.
pub const DIM: usize = 128;
/// DBSCAN radius used when `cluster.eps` is unset (see docs/BENCHMARKS.md, "Embedders").
pub const EPS: f64 = 0.7;
/// Two texts this close (Euclidean distance between unit vectors) say the same thing when
/// the S6 measures agree (see `dream_core::selection::route::restates`).
pub const RESTATES: f64 = 0.8;
/// Texts longer than this many tokens are cut (the model's own limit).
const MAX_TOKENS: usize = 512;

/// The compiled-in static model, decoded on first use.
#[derive(Default)]
pub struct MiniLm {
    model: OnceLock<std::result::Result<StaticModel, String>>,
}

impl MiniLm {
    pub fn new() -> MiniLm {
        MiniLm::default()
    }

    fn model(&self) -> Result<&StaticModel> {
        self.model
            .get_or_init(|| {
                StaticModel::from_bytes(TOKENIZER, TABLE, CONFIG, Some(true))
                    .map_err(|e| format!("{e:#}"))
            })
            .as_ref()
            .map_err(|e| {
                Error::Other(format!(
                    "the compiled-in minilm model does not load ({e}); this build is broken: reinstall dream, or set embed.provider = \"builtin\""
                ))
            })
    }
}

impl Embedder for MiniLm {
    fn id(&self) -> String {
        ID.into()
    }

    fn eps(&self) -> f64 {
        EPS
    }

    fn restates(&self) -> Option<f64> {
        Some(RESTATES)
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let model = self.model()?;
        let owned: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        let vectors = model.encode_with_args(&owned, Some(MAX_TOKENS), owned.len());
        Ok(vectors
            .into_iter()
            .map(|mut v| {
                // The model scales to unit length; a text of unknown tokens only is all
                // zeros (the model's 1e-12 floor keeps it so), and any non-finite value
                // would poison the distance, so it is zeroed too.
                if v.iter().any(|x| !x.is_finite()) {
                    v.iter_mut().for_each(|x| *x = 0.0);
                }
                v
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn distance(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y) * (x - y))
            .sum::<f32>()
            .sqrt()
    }

    #[test]
    fn paraphrases_are_close_and_other_facts_are_not() {
        let m = MiniLm::new();
        let v = m
            .embed(&[
                "I prefer dark mode in every editor.",
                "I use dark mode in my editor.",
                "The build failed because the linker ran out of memory.",
                "",
                "🙂🙂🙂",
            ])
            .unwrap();
        assert!(v.iter().all(|x| x.len() == DIM));
        let norm = |x: &[f32]| x.iter().map(|a| a * a).sum::<f32>().sqrt();
        assert!((norm(&v[0]) - 1.0).abs() < 1e-5);
        assert!(
            distance(&v[0], &v[1]) < RESTATES as f32,
            "{}",
            distance(&v[0], &v[1])
        );
        assert!(distance(&v[0], &v[2]) > 1.0, "{}", distance(&v[0], &v[2]));
        // Nothing to embed: zero, never NaN.
        assert!(v[3].iter().all(|x| *x == 0.0));
        assert!(v[4].iter().all(|x| *x == 0.0));
        assert_eq!(
            m.embed(&["same text"]).unwrap(),
            m.embed(&["same text"]).unwrap()
        );
    }

    #[test]
    fn any_text_embeds_without_a_panic() {
        let m = MiniLm::new();
        let long = "word ".repeat(20_000);
        let odd = "\u{0}\u{feff}[UNK] [PAD] [CLS] ＡＢＣ İstanbul 東京 é\u{301} \t\r\n";
        let symbols = "#".repeat(300);
        for t in [long.as_str(), odd, symbols.as_str(), "a"] {
            let v = m.embed(&[t]).unwrap();
            assert_eq!(v[0].len(), DIM);
            assert!(v[0].iter().all(|x| x.is_finite()), "{t:.40}");
        }
    }
}
