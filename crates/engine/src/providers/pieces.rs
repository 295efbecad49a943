//! How rare a word is, priced by the multilingual embedder's own tokenizer: the
//! agreement rule (`dream_core::text::agreement`) refuses to join two sentences that differ
//! only in one rare word a side ("i work from lisbon" / "i work from madrid": a name typed
//! in lower case), and rarity must be read in every language without a word list. The
//! `use-m-m2v-128` tokenizer is a SentencePiece Unigram model: each piece has a score, its
//! log-probability, so a word's cost is the sum of minus the scores of the pieces it is
//! cut into (a common word is one cheap piece, a name several dear ones). The core holds
//! the rule and this provider the model, so the core stays free of tokenizers and files.
//!
//! The tokenizer is compiled in from `models/use-m-m2v-128/tokenizer.json` (licence and
//! provenance there) and decoded on first use (a 2 MB JSON file), so a command that never
//! compares two sentences never pays for it.

use std::sync::OnceLock;

use dream_core::text::agreement::{self, PieceCost};
use tokenizers::models::ModelWrapper;
use tokenizers::Tokenizer;

use crate::error::{Error, Result};

/// The `use-m-m2v-128` tokenizer, compiled in.
pub static TOKENIZER: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../models/use-m-m2v-128/tokenizer.json"
));

/// A word's rarity cost under the `use-m-m2v-128` Unigram model.
pub struct Pieces {
    tokenizer: Tokenizer,
    /// Minus the score of each piece, by id; the unknown piece (id 0) costs
    /// `agreement.json`'s `unknown_piece_cost`.
    costs: Vec<f64>,
}

static USE_M: OnceLock<std::result::Result<Pieces, String>> = OnceLock::new();

impl Pieces {
    /// The compiled-in model's pieces, decoded on first use.
    pub fn use_m() -> Result<&'static Pieces> {
        USE_M
            .get_or_init(|| Pieces::from_bytes(TOKENIZER))
            .as_ref()
            .map_err(|e| {
                Error::Other(format!(
                    "the compiled-in use-m tokenizer does not load ({e}); this build is broken: reinstall dream"
                ))
            })
    }

    /// Pieces from a `tokenizer.json` holding a Unigram model.
    fn from_bytes(bytes: &[u8]) -> std::result::Result<Pieces, String> {
        let tokenizer = Tokenizer::from_bytes(bytes).map_err(|e| e.to_string())?;
        let ModelWrapper::Unigram(model) = tokenizer.get_model() else {
            return Err("its model is not a Unigram model, so its pieces have no scores".into());
        };
        let mut costs: Vec<f64> = model.iter().map(|(_, score)| -score).collect();
        match costs.first_mut() {
            Some(unknown) => *unknown = agreement::unknown_piece_cost(),
            None => return Err("its vocabulary is empty".into()),
        }
        Ok(Pieces { tokenizer, costs })
    }
}

impl PieceCost for Pieces {
    /// The sum, over the pieces of the word alone (the tokenizer's `▁` + word), of minus
    /// each piece's score. A word the tokenizer cannot encode costs one unknown piece: it
    /// counts as rare, so it keeps two sentences apart rather than joining them.
    fn cost(&self, word: &str) -> f64 {
        let unknown = agreement::unknown_piece_cost();
        match self.tokenizer.encode(word, false) {
            Ok(encoding) => encoding
                .get_ids()
                .iter()
                .map(|&id| self.costs.get(id as usize).copied().unwrap_or(unknown))
                .sum(),
            Err(_) => unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dream_core::text::agreement::{conflicts, joined, Conflicts};

    fn pieces() -> &'static Pieces {
        Pieces::use_m().expect("the compiled-in tokenizer loads")
    }

    #[test]
    fn the_unknown_piece_costs_the_vocabularys_highest_cost() {
        let p = pieces();
        let highest = p.costs[1..].iter().copied().fold(f64::MIN, f64::max);
        // agreement.json rounds it to six decimals.
        assert!(
            (highest - agreement::unknown_piece_cost()).abs() < 1e-6,
            "highest {highest}, recorded {}",
            agreement::unknown_piece_cost()
        );
        assert_eq!(p.costs[0], agreement::unknown_piece_cost());
    }

    #[test]
    fn common_words_are_cheap_and_made_up_or_unknown_ones_dear() {
        let p = pieces();
        // One piece, "▁the", of score -4.880092.
        assert!((p.cost("the") - 4.880092144012451).abs() < 1e-9);
        assert!(p.cost("the") < p.cost("lisbon"));
        assert!(p.cost("xqzvkjw") > 40.0);
        // "▁" then a piece the vocabulary lacks.
        let crab = p.cost("🦀");
        assert!((crab - (p.costs[1] + agreement::unknown_piece_cost())).abs() < 1e-9);
        assert_eq!(p.cost(""), 0.0);
    }

    #[test]
    fn a_swapped_name_in_lower_case_is_not_joined() {
        let p = pieces();
        let c = conflicts("i work from lisbon", "i work from madrid", p);
        assert_eq!(
            c,
            Conflicts {
                rare: true,
                ..Conflicts::default()
            }
        );
        assert!(!joined("i work from lisbon", "i work from madrid", 0.1, p));
    }

    /// `crates/core/rules/agreement-parity.tsv`: every project-owned pair with what
    /// `scripts/agreement.py` says of each component, the use-m distance and joined.
    const PARITY: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../core/rules/agreement-parity.tsv"
    ));

    /// Every pair gets the same verdict, component by component, as the Python reference;
    /// `joined` is checked with the file's own distance (this tree's embedder is not
    /// use-m, so the distance itself is not recomputed here).
    #[test]
    fn every_component_agrees_with_the_python_reference() {
        let p = pieces();
        let mut rows = 0;
        let mut wrong = Vec::new();
        for (n, line) in PARITY.lines().enumerate() {
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 9, "line {}: {line}", n + 1);
            let a: String = serde_json::from_str(f[0]).expect("a is a JSON string");
            let b: String = serde_json::from_str(f[1]).expect("b is a JSON string");
            let flag = |s: &str| match s {
                "0" => false,
                "1" => true,
                other => panic!("line {}: {other:?} is no verdict", n + 1),
            };
            let want = Conflicts {
                name: flag(f[2]),
                number: flag(f[3]),
                ident: flag(f[4]),
                polarity: flag(f[5]),
                rare: flag(f[6]),
            };
            let distance: f64 = f[7].parse().expect("a distance");
            let want_joined = flag(f[8]);
            let got = conflicts(&a, &b, p);
            let got_joined = joined(&a, &b, distance, p);
            rows += 1;
            if got != want || got_joined != want_joined {
                wrong.push(format!(
                    "line {}: {a:?} / {b:?}\n  python {want:?} joined {want_joined}\n  rust   {got:?} joined {got_joined}",
                    n + 1
                ));
            }
        }
        assert!(rows > 500, "{rows} rows read");
        assert!(
            wrong.is_empty(),
            "{} of {rows} rows disagree:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}
