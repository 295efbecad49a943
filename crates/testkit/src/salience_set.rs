//! The generated coding-agent sessions ([`crate::agent`]) as a labelled set of owner
//! statements, for the salience model: each sentence the owner says, once, labelled `K`
//! (keep: a durable fact or an informative single mention) or `N` (noise: thinking aloud,
//! status, a reaction, a greeting, a question, a request, or the filler a fact was wrapped
//! in, "Quick reminder before we start."). The agent's own words, tool output, the pasted
//! secret and the injected web page are not the owner's statements and are left out, as
//! dream leaves them out of memory. `fixtures/devsets/salience-agent.txt` is this text.

use std::collections::BTreeSet;

use crate::agent::{generate, AgentSpec, Kind, Noise};

/// The header of the labelled file: what it is and its format.
const HEADER: &str = "\
# The generated coding-agent sessions' owner statements (crates/testkit/src/agent.rs), one
# sentence a line, labelled for salience: K (keep: a durable fact or an informative single
# mention), N (noise a careful person would not keep). Generated, never edited by hand:
#   cargo run -p dream-testkit --example salience_agent > fixtures/devsets/salience-agent.txt
# Format: `L|kind|seed|text`; kind is durable, episode, or the noise's kind (filler is what a
# fact was wrapped in). Each text once, under the first seed that says it. Same licence as
# the project.
";

/// Every distinct owner sentence of the sessions of `seeds` (10 working days each), with
/// its label, in the format of `fixtures/devsets/salience-agent.txt`.
pub fn salience_devset(seeds: &[u64]) -> String {
    let mut out = String::from(HEADER);
    let mut seen = BTreeSet::new();
    for &seed in seeds {
        let set = generate(&AgentSpec {
            seed,
            ..AgentSpec::default()
        });
        for day in &set.days {
            for e in &day.events {
                if e["actor"] != "user" || e["kind"] != "message" {
                    continue;
                }
                let id = e["id"].as_str().unwrap_or_default();
                let text = e["text"].as_str().unwrap_or_default();
                let Some(l) = set.labels.iter().find(|l| l.events.iter().any(|x| x == id)) else {
                    continue;
                };
                if matches!(l.kind, Kind::Noise(Noise::Secret | Noise::Injection)) {
                    continue;
                }
                for sentence in dream_core::text::phrases::sentences(text) {
                    let (label, kind) = match l.kind {
                        _ if sentence != l.text && !l.text.contains(&sentence) => ("N", "filler"),
                        Kind::Durable => ("K", "durable"),
                        Kind::Episode => ("K", "episode"),
                        Kind::Noise(n) => ("N", n.as_str()),
                    };
                    if seen.insert(sentence.clone()) {
                        out.push_str(&format!("{label}|{kind}|{seed}|{sentence}\n"));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed file is what the generator gives: regenerate it with the example
    /// when the sessions change.
    #[test]
    fn the_committed_devset_is_the_generated_one() {
        let committed = include_str!("../../../fixtures/devsets/salience-agent.txt");
        assert_eq!(
            committed,
            salience_devset(&[15, 16, 17, 18, 19]),
            "regenerate: cargo run -p dream-testkit --example salience_agent > fixtures/devsets/salience-agent.txt"
        );
    }

    #[test]
    fn facts_are_kept_and_noise_is_not() {
        let text = salience_devset(&[15]);
        let rows: Vec<Vec<&str>> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.splitn(4, '|').collect())
            .collect();
        assert!(rows.iter().all(|r| r.len() == 4));
        let label = |t: &str| rows.iter().find(|r| r[3] == t).map(|r| r[0]);
        assert_eq!(label("hmm let me think about lunch"), Some("N"));
        assert_eq!(label("The build finished in 3 minutes."), Some("N"));
        assert!(rows.iter().any(|r| r[0] == "K" && r[1] == "durable"));
        assert!(rows.iter().any(|r| r[0] == "K" && r[1] == "episode"));
        assert!(rows.iter().all(|r| !r[3].contains("ghp_")));
    }
}
