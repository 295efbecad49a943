//! Every sentence of a LoCoMo file as the pipeline sees it, one JSON object a line, for
//! what-if measures of what memory could keep (issue 28, phase 2): the sentence, its
//! statement (lead-in left out), whether the phrase rules call it chatter or specific, its
//! salience, the words of the dated line it would make (as `dream eval locomo` counts
//! them), and each question's answer and question words.
//!
//!     cargo run -p dream-engine --example locomo_sentences -- locomo.json > sentences.jsonl

use std::collections::BTreeSet;

use dream_core::memory::episodes;
use dream_core::selection::keep;
use dream_core::text::{measures, phrases, when};
use dream_engine::eval::{grounded, locomo};
use dream_engine::providers::salience::scorer;
use serde_json::json;

fn main() {
    let path = std::env::args().nth(1).expect("a LoCoMo file");
    let text = std::fs::read_to_string(&path).expect("readable");
    let convs = locomo::parse(&text).expect("a LoCoMo file");
    let s = scorer();
    for c in &convs {
        let labelled = grounded::worth_keeping(c);
        let qs = grounded::questions(c);
        let words: usize = c.events().map(|e| measures::tokens(&e.text).len()).sum();
        println!(
            "{}",
            json!({
                "kind": "conv", "conv": c.sample_id, "transcript_words": words,
                "questions": qs.iter().map(|q| json!({
                    "answer": measures::content_token_seq(&q.answer).into_iter().collect::<BTreeSet<_>>(),
                    "asked": q.asked,
                })).collect::<Vec<_>>(),
            })
        );
        for o in &c.observations {
            let score = s.score(&keep::statement(&o.text)).unwrap_or(-1.0);
            println!(
                "{}",
                json!({"kind": "obs", "conv": c.sample_id, "text": o.text, "score": score})
            );
        }
        for sess in &c.sessions {
            let day = sess.start.date_naive();
            for (turn, e) in sess.events.iter().enumerate() {
                let speaker = e.actor.clone().unwrap_or_default();
                let prefix = episodes::text(day, &format!("{speaker}: x"));
                let prefix = prefix.trim_end_matches('x').trim_end();
                for (k, raw) in phrases::sentences(&e.text).iter().enumerate() {
                    let said = phrases::lead_in(raw).to_string();
                    let found = when::relatives(&said, day);
                    let anchored = when::rewrite_with(&said, &found);
                    let score = s.score(&keep::statement(&said)).unwrap_or(-1.0);
                    let chatter = phrases::chatter(raw).map(|c| format!("{c:?}"));
                    let body_vocab: BTreeSet<String> = measures::vocabulary([anchored.as_str()])
                        .into_iter()
                        .collect();
                    println!(
                        "{}",
                        json!({
                            "kind": "sentence", "conv": c.sample_id, "session": sess.number,
                            "day": day.to_string(), "turn": turn, "k": k, "event": e.id,
                            "speaker": speaker, "raw": raw, "said": said, "anchored": anchored,
                            "chatter": chatter, "specific": phrases::worth_keeping_once(&said),
                            "not_a_fact": phrases::not_a_fact(&said),
                            "score": score, "labelled": labelled.contains(&e.id),
                            "prefix_tokens": measures::tokens(prefix).len(),
                            "prefix_vocab": measures::vocabulary([prefix]).into_iter().collect::<BTreeSet<_>>(),
                            "body_tokens": measures::tokens(&anchored).len(),
                            "body_vocab": body_vocab,
                        })
                    );
                }
            }
        }
    }
}
