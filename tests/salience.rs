//! The salience model as dream computes it equals the model as its training script
//! computes it: for the project-owned texts of `crates/core/salience/parity.tsv`, each
//! embedded by dream's compiled-in `minilm` model and scored by `dream_core::salience`,
//! the score is the one `scripts/salience/train.py` wrote (Python's model2vec reading the
//! same table, the shape features of `scripts/salience/features.py`) within 1e-5. A change
//! to the features on one side only, or weights the Rust side reads differently, fails
//! here.

use dream::providers::embed::Embedder;
use dream::providers::embed_minilm::MiniLm;
use dream_core::salience;

const PARITY: &str = include_str!("../crates/core/salience/parity.tsv");

#[test]
fn rust_scores_equal_the_training_scripts() {
    let rows: Vec<(String, f32)> = PARITY
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (text, score) = l.rsplit_once('\t').expect("text<TAB>score");
            let text: String = serde_json::from_str(text).expect("a JSON string");
            (text, score.parse().expect("a score"))
        })
        .collect();
    assert!(rows.len() >= 40, "{} parity texts", rows.len());
    let texts: Vec<&str> = rows.iter().map(|(t, _)| t.as_str()).collect();
    let vectors = MiniLm::new().embed(&texts).unwrap();
    let mut worst = (0.0f32, String::new());
    for ((text, want), v) in rows.iter().zip(&vectors) {
        assert_eq!(v.len(), salience::dim());
        let got = salience::score(text, v);
        let diff = (got - want).abs();
        if diff > worst.0 {
            worst = (diff, text.clone());
        }
    }
    assert!(
        worst.0 <= 1e-5,
        "largest difference {} for {:?}",
        worst.0,
        worst.1
    );
    // The texts span the scale: the model is not a constant.
    let lo = rows.iter().map(|r| r.1).fold(1.0f32, f32::min);
    let hi = rows.iter().map(|r| r.1).fold(0.0f32, f32::max);
    assert!(lo < 0.1 && hi > 0.9, "scores from {lo} to {hi}");
}

#[test]
fn a_fact_about_the_person_is_kept_and_chatter_is_not() {
    let m = MiniLm::new();
    let keep = [
        "My partner Ines and I live in Porto; I work remotely for a company in Berlin.",
        "We shipped version 2.3 of the scheduler yesterday.",
    ];
    let drop = ["What time is it?", "Good morning!", "hey, good morning!"];
    let kv = m.embed(&keep).unwrap();
    let dv = m.embed(&drop).unwrap();
    for (t, v) in keep.iter().zip(&kv) {
        assert!(salience::score(t, v) >= salience::KEEP, "{t}");
    }
    for (t, v) in drop.iter().zip(&dv) {
        assert!(salience::score(t, v) < salience::SEND, "{t}");
    }
}
