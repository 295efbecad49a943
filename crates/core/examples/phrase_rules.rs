//! What the phrase rules say of each sentence of some texts, for the salience model's
//! measurements (`scripts/salience/whatif.py`): whether a rule decides better than the
//! learned score is a question of data, and this lets a script ask it. Reads one JSON value
//! a line on stdin, a turn's text or `{"text": ..., "day": "2023-05-08"}`; prints one JSON
//! array a line: each sentence as `phrases::sentences` cuts it, with what is left after its
//! lead-in (and, given the day it was said, with its relative dates written out as the
//! gates write them), why it is chatter (or null), whether it is specific enough to keep
//! when said once, and whether the offline extractor leaves it out for leaning on what was
//! said before (`leans`), and the language it is in when the rules cannot read it
//! (`language`, null for English).
//!
//! `cargo run -p dream-core --example phrase_rules < texts.jsonl`

// A maintainer's tool beside the core: it reads texts on stdin and prints what the phrase
// rules say of them; the core library itself does neither.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    clippy::disallowed_macros
)]

use std::io::{BufRead, Write};

use dream_core::text::{language, phrases, when};

fn main() {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let value: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        let (text, day) = match &value {
            serde_json::Value::String(s) => (s.as_str(), None),
            v => (
                v["text"].as_str().unwrap_or_default(),
                v["day"]
                    .as_str()
                    .and_then(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok()),
            ),
        };
        let rows: Vec<serde_json::Value> = phrases::sentences(text)
            .iter()
            .map(|s| {
                serde_json::json!({
                    "text": s,
                    "body": phrases::lead_in(s),
                    "dated": day.map(|d| when::rewrite(phrases::lead_in(s), d)),
                    "chatter": phrases::chatter(s).map(|c| c.as_str()),
                    "specific": phrases::specific(s),
                    "leans": phrases::leans_on_its_object(s),
                    "language": language::not_english(phrases::lead_in(s)),
                })
            })
            .collect();
        if writeln!(out, "{}", serde_json::Value::Array(rows)).is_err() {
            break;
        }
    }
}
