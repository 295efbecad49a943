//! The salience model as dream computes it equals the model as its training script
//! computes it: for the project-owned texts of `crates/core/salience/parity.tsv`, each
//! embedded by dream's compiled-in `minilm` model and scored by `dream_core::selection::salience`,
//! the score is the one `scripts/salience/train.py` wrote (Python's model2vec reading the
//! same table, the shape features of `scripts/salience/features.py`) within 1e-5. A change
//! to the features on one side only, or weights the Rust side reads differently, fails
//! here.

use dream_core::selection::salience;
use dream_engine::providers::embed::Embedder;
use dream_engine::providers::embed_minilm::MiniLm;

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

/// A LoCoMo-shaped file with the authors' observations and session summaries: a fact
/// said on three dates, small talk, a question only the small talk's day could "answer".
const LOCOMO_WITH_ANCHORS: &str = r#"[
 {"sample_id": "conv-a",
  "conversation": {
    "speaker_a": "Ana", "speaker_b": "Ben",
    "session_1_date_time": "10:00 am on 1 May, 2023",
    "session_1": [
      {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel."},
      {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats!"}
    ],
    "session_2_date_time": "6:30 pm on 3 May, 2023",
    "session_2": [
      {"speaker": "Ana", "dia_id": "D2:1", "text": "Remember, I adopted a grey cat named Pixel."}
    ],
    "session_3_date_time": "9:45 pm on 6 May, 2023",
    "session_3": [
      {"speaker": "Ana", "dia_id": "D3:1", "text": "Like I said, I adopted a grey cat named Pixel."},
      {"speaker": "Ben", "dia_id": "D3:2", "text": "Hi again!"}
    ]
  },
  "observation": {
    "session_1_observation": {"Ana": [["Ana adopted a grey cat named Pixel.", "D1:1"]]}
  },
  "session_summary": {
    "session_1_summary": "Ana and Ben talked on 1 May 2023 about her new cat."
  },
  "qa": [
    {"question": "What is the name of Ana's cat?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
    {"question": "What colour is the cat?", "answer": "grey", "evidence": ["D1:1; D2:1"], "category": 1},
    {"question": "When did Ben say hi again?", "answer": "6 May 2023", "evidence": [], "category": 2}
  ]}
]"#;

#[test]
fn eval_locomo_shows_memory_beside_its_anchors() {
    let env = crate::util::Env::new();
    let path = env.root.join("locomo.json");
    std::fs::write(&path, LOCOMO_WITH_ANCHORS).unwrap();
    let out = env
        .cmd()
        .args(["eval", "locomo"])
        .arg(&path)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", crate::util::stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = r["precision"]["figures"].as_array().unwrap();
    let sources: Vec<&str> = rows.iter().map(|x| x["source"].as_str().unwrap()).collect();
    assert_eq!(
        sources,
        ["dream", "session summaries", "observations", "transcript"]
    );
    let row = |name: &str| rows.iter().find(|x| x["source"] == name).unwrap();
    // Memory holds the promoted fact: both questions about the cat are grounded in it.
    // The third is "answered" by a date alone in any dated line, and grounded only where
    // the line also says "hi": the transcript's.
    assert_eq!(row("dream")["grounded_retention"], 0.667, "{r}");
    assert_eq!(row("transcript")["grounded_retention"], 1.0, "{r}");
    assert_eq!(row("transcript")["retention"], 1.0, "{r}");
    // The summary is dated 1 May: it holds no answer, and cites no turn.
    assert_eq!(row("session summaries")["grounded_retention"], 0.0, "{r}");
    assert!(row("session summaries")["precision"].is_null());
    // Precision: turns the observations or the evidence cite (D1:1, D2:1) among the five.
    assert_eq!(row("transcript")["precision"], 0.4, "{r}");
    assert_eq!(row("observations")["precision"], 1.0, "{r}");
    assert_eq!(row("dream")["precision"], 1.0, "{r}");
    assert!(row("dream")["cards_per_cycle"].is_number());
    assert!(row("observations")["cards_per_cycle"].is_null());
    let size = row("transcript")["size"].as_f64().unwrap();
    assert!(
        size > 1.0,
        "a dated transcript is longer than the transcript: {size}"
    );

    let table = env
        .cmd()
        .args(["eval", "locomo"])
        .arg(&path)
        .output()
        .unwrap();
    let text = crate::util::stdout(&table);
    for needle in [
        "grounded",
        "session summaries",
        "observations",
        "transcript",
        "cards/cycle",
    ] {
        assert!(text.contains(needle), "{needle} in {text}");
    }
}
