//! The salience scorer (issue 28): a statement embedded with the compiled-in `minilm`
//! model and scored by `dream_core::selection::salience`. The model was trained on minilm
//! vectors, so it is minilm whatever `embed.provider` says: it costs microseconds, needs no
//! network, and the same text scores the same on every machine (which `dream verify`
//! relies on to re-derive a recorded score).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use dream_core::selection::keep::Scorer;
use dream_core::selection::salience;

use super::embed::Embedder;
use super::embed_minilm::MiniLm;
use crate::error::{Error, Result};

/// Statements remembered with their score before the memo starts over (a cycle scores a
/// few hundred; a replay of a whole benchmark a few tens of thousands).
const MEMO: usize = 100_000;

/// The scorer: the compiled-in embedder and the scores already made.
pub struct Salience {
    minilm: MiniLm,
    memo: Mutex<HashMap<String, f32>>,
}

static SHARED: LazyLock<Salience> = LazyLock::new(|| Salience {
    minilm: MiniLm::new(),
    memo: Mutex::new(HashMap::new()),
});

/// The process's scorer (the model is decoded once, on first use).
pub fn scorer() -> &'static Salience {
    &SHARED
}

impl Salience {
    /// The statement's `minilm` vector.
    pub fn embedding(&self, statement: &str) -> Result<Vec<f32>> {
        self.minilm
            .embed(&[statement])?
            .pop()
            .ok_or_else(|| Error::Other("the minilm embedder returned no vector".into()))
    }

    /// How salient a statement is (`dream_core::selection::keep::statement` gives the
    /// statement of a line).
    pub fn score(&self, statement: &str) -> Result<f32> {
        if let Some(s) = self
            .memo
            .lock()
            .ok()
            .and_then(|m| m.get(statement).copied())
        {
            return Ok(s);
        }
        let s = salience::score(statement, &self.embedding(statement)?);
        if let Ok(mut m) = self.memo.lock() {
            if m.len() >= MEMO {
                m.clear();
            }
            m.insert(statement.to_string(), s);
        }
        Ok(s)
    }

    /// The score with its parts (`dream explain`).
    pub fn explain(&self, statement: &str) -> Result<salience::Explained> {
        Ok(salience::explain(statement, &self.embedding(statement)?))
    }
}

impl Scorer for Salience {
    fn score(&self, statement: &str) -> Option<f32> {
        Salience::score(self, statement).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dream_core::selection::keep::{self, KEEP};

    #[test]
    fn a_statement_about_the_person_keeps_and_small_talk_does_not() {
        let s = scorer();
        let fact = s
            .score(&keep::statement(
                "I moved to Porto in March 2021 with my sister Ana.",
            ))
            .unwrap();
        assert!(fact >= KEEP, "{fact}");
        for chatter in ["Good morning!", "What time is it?", "That looks delicious!"] {
            let v = s.score(chatter).unwrap();
            assert!(v < KEEP, "{chatter}: {v}");
        }
        // The memo gives the same score again.
        assert_eq!(
            s.score("Good morning!").unwrap(),
            s.score("Good morning!").unwrap()
        );
    }
}
