//! The generated coding-agent sessions' owner statements with their labels, one a line, for
//! the salience model's training script (`scripts/salience/train.py`) and its
//! cross-validation: the labels `agent.rs` writes are what a careful person keeps (durable
//! facts, informative single mentions) and what they do not (thinking aloud, status,
//! reactions, greetings, questions, requests). The committed copy is
//! `fixtures/devsets/salience-agent.txt`; a test of this crate holds it equal to what the
//! generator gives, so the file never drifts from the sessions `dream-bench eval-agent`
//! replays.
//!
//! Usage: `cargo run -p dream-testkit --example salience_agent > fixtures/devsets/salience-agent.txt`

fn main() {
    print!(
        "{}",
        dream_testkit::salience_set::salience_devset(&[15, 16, 17, 18, 19])
    );
}
