//! Salience: would a careful person keep this statement in an agent's memory about its
//! owner? Memory that keeps every specific single mention fills with what nobody would
//! keep ("Alright seeya on 30 December 2023!", "60 g Plain Yogurt", "I'm doing my skin
//! care routine right now"): the phrase rules (`phrases::chatter`) catch the shapes they
//! name, and this score ranks what they let through. It is a small learned model, local
//! and compiled in: a logistic regression over the statement's `minilm` embedding (what it
//! is about) and thirteen shape features (how it is said: its length, a question mark,
//! first or second person, names, numbers and dates, a plan, the present moment, a
//! greeting or interjection, a request), trained by `scripts/salience/train.py` on the
//! project's own labelled sets (the generated agent sessions, the labelled coding
//! sessions, the hand-written chat of `fixtures/devsets/salience-chat.txt`) and measured
//! there by cross-validation, and on LoCoMo's dev half as held out (docs/BENCHMARKS.md,
//! "Salience"): nothing compiled in is fitted or chosen on LoCoMo, whose licence is
//! non-commercial. The weights, their provenance and the texts the parity test holds are
//! in `crates/core/salience/`.
//!
//! Pure: the caller embeds (the core does no I/O and holds no model), so [`score`] takes
//! the statement and its vector from dream's compiled-in `minilm` embedder (128 values,
//! as `dream::providers::embed_minilm` gives them). A vector of another length (another
//! embedder's) counts as all zeros, as a text with no known token embeds: the score then
//! rests on the shape features alone, which ranks worse (see the figures); embed with
//! `minilm` whatever `embed.provider` says, it costs microseconds.
//!
//! Score what the person said: the sentence with its lead-in left out
//! (`phrases::lead_in`), before the gates write a relative date's day beside it (an added
//! "[7 May 2023]" would count as a date and a number the person never said).

use std::sync::LazyLock;

use serde::Deserialize;

/// The shape features, in the order of [`features`] and of the weights.
pub const FEATURES: [&str; 13] = [
    "log_words",
    "question",
    "first_start",
    "first_share",
    "second_share",
    "number",
    "proper",
    "date",
    "future",
    "present",
    "interjection",
    "word_len",
    "request",
];

/// Statements scoring at least this are worth keeping: the lowest threshold (in steps of
/// 0.01) at which cross-validated precision is at least 0.85 on the candidates (what the
/// phrase rules let through) of every one of the project's labelled sets: the generated
/// agent sessions, the labelled coding sessions, the hand-written chat. Chosen by
/// `scripts/salience/train.py` on that dev data only (LoCoMo is not used: its label cites
/// pep talk and reactions a careful reader drops, and what it shows stays held out);
/// `weights.json` records it and a test holds the two equal. For an episode and a durable
/// candidate (phase 2 of issue 28).
pub const KEEP: f32 = 0.46;

/// Events scoring below this are not worth a model call: the highest threshold (in steps
/// of 0.01) at which cross-validated recall is at least 0.95 of every one of those sets'
/// events worth keeping (an event, a message, scores as its best sentence), chosen by the
/// same script on the same data. Lower than [`KEEP`]: a model may still find a fact in a
/// statement the score doubts, and what it is not shown is lost to it.
pub const SEND: f32 = 0.04;

/// The compiled-in model (`crates/core/salience/weights.json`).
pub const WEIGHTS_JSON: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/salience/weights.json"
));

#[derive(Debug, Deserialize)]
struct Weights {
    dim: usize,
    features: Vec<String>,
    embedding_weights: Vec<f64>,
    feature_weights: Vec<f64>,
    bias: f64,
    thresholds: Thresholds,
}

#[derive(Debug, Deserialize)]
struct Thresholds {
    keep: f64,
    send: f64,
}

/// The weights, parsed once. They are compiled in and a test parses them, so a broken
/// file is a broken build, found before any release.
static MODEL: LazyLock<Weights> = LazyLock::new(|| {
    let w: Weights =
        serde_json::from_str(WEIGHTS_JSON).expect("the compiled-in salience weights parse");
    assert!(
        w.embedding_weights.len() == w.dim
            && w.feature_weights.len() == FEATURES.len()
            && w.features.iter().map(String::as_str).eq(FEATURES),
        "the compiled-in salience weights match the features"
    );
    w
});

/// The length of the embedding the model reads (`minilm`'s 128).
pub fn dim() -> usize {
    MODEL.dim
}

/// The thresholds `weights.json` records (the constants [`KEEP`] and [`SEND`] must equal
/// them; a test holds it).
pub fn recorded_thresholds() -> (f64, f64) {
    (MODEL.thresholds.keep, MODEL.thresholds.send)
}

/// How salient a statement is, from 0 (nobody would keep it) to 1, given its `minilm`
/// embedding. Never panics: any text, any vector (a wrong length or a non-finite value
/// counts as zero).
pub fn score(text: &str, embedding: &[f32]) -> f32 {
    explain(text, embedding).score
}

/// A score with what made it: the embedding's part and each feature's value and part (its
/// weight times its value), so a person can see why (`dream explain` may show it).
#[derive(Debug, Clone, PartialEq)]
pub struct Explained {
    pub score: f32,
    /// The embedding's contribution to the log-odds.
    pub meaning: f64,
    /// Each feature: name, value, contribution to the log-odds.
    pub features: Vec<(&'static str, f64, f64)>,
    pub bias: f64,
}

/// [`score`], with its parts.
pub fn explain(text: &str, embedding: &[f32]) -> Explained {
    let m = &*MODEL;
    let meaning: f64 = if embedding.len() == m.dim {
        embedding
            .iter()
            .zip(&m.embedding_weights)
            .map(|(x, w)| {
                if x.is_finite() {
                    f64::from(*x) * w
                } else {
                    0.0
                }
            })
            .sum()
    } else {
        0.0
    };
    let values = features(text);
    let parts: Vec<(&'static str, f64, f64)> = FEATURES
        .iter()
        .zip(values)
        .zip(&m.feature_weights)
        .map(|((name, v), w)| (*name, v, v * w))
        .collect();
    let logit = m.bias + meaning + parts.iter().map(|p| p.2).sum::<f64>();
    Explained {
        score: (1.0 / (1.0 + (-logit).exp())) as f32,
        meaning,
        features: parts,
        bias: m.bias,
    }
}

const FIRST: &[&str] = &[
    "i",
    "im",
    "ive",
    "id",
    "ill",
    "me",
    "my",
    "mine",
    "myself",
    "we",
    "weve",
    "wed",
    "us",
    "our",
    "ours",
    "ourselves",
];
const FIRST_START: &[&str] = &[
    "i", "im", "ive", "id", "ill", "my", "we", "weve", "wed", "our",
];
const SECOND: &[&str] = &[
    "you",
    "your",
    "youre",
    "yours",
    "youve",
    "youll",
    "youd",
    "yourself",
    "yourselves",
    "ya",
    "u",
];
const DATE: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "weekend",
    "weekends",
    "yesterday",
    "tomorrow",
    "tonight",
    "ago",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
];
const FUTURE: &[&str] = &[
    "will", "ill", "gonna", "shall", "going", "plan", "plans", "planning", "planned",
];
const NOW: &[&str] = &["now", "currently", "today", "tonight"];
const BE: &[&str] = &["im", "am", "are", "were", "is"];
const INTERJECTIONS: &[&str] = &[
    "hi",
    "hey",
    "hello",
    "hiya",
    "yo",
    "bye",
    "goodbye",
    "thanks",
    "thank",
    "thx",
    "cheers",
    "morning",
    "night",
    "seeya",
    "welcome",
    "alright",
    "anyway",
    "hmm",
    "hm",
    "wow",
    "woah",
    "whoa",
    "oh",
    "ah",
    "aw",
    "aww",
    "omg",
    "yay",
    "haha",
    "lol",
    "cool",
    "nice",
    "great",
    "awesome",
    "congrats",
    "congratulations",
    "sorry",
    "yes",
    "yeah",
    "yep",
    "yup",
    "no",
    "nope",
    "ok",
    "okay",
    "sure",
    "totally",
    "absolutely",
    "definitely",
    "exactly",
    "agreed",
    "same",
    "glad",
    "amazing",
];
const ASKING: &[&str] = &["can", "could", "would", "will"];
const I_FORMS: &[&str] = &["i", "im", "ive", "id", "ill"];

fn apostrophe(c: char) -> bool {
    c == '\'' || c == '\u{2019}'
}

/// The words of a text with the byte offset each starts at: maximal runs of letters,
/// digits and apostrophes, apostrophes trimmed from their ends.
fn words(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    let mut push = |from: usize, to: usize| {
        let raw = &text[from..to];
        let word = raw.trim_matches(apostrophe);
        if !word.is_empty() {
            let lead = raw.len() - raw.trim_start_matches(apostrophe).len();
            out.push((from + lead, word));
        }
    };
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() || apostrophe(c) {
            start.get_or_insert(i);
        } else if let Some(s) = start.take() {
            push(s, i);
        }
    }
    if let Some(s) = start {
        push(s, text.len());
    }
    out
}

/// Lower case, apostrophes left out: "I'm" -> "im".
fn bare(word: &str) -> String {
    word.to_lowercase()
        .chars()
        .filter(|c| !apostrophe(*c))
        .collect()
}

/// Whether the word at byte `at` opens a sentence: nothing but white space before it, or
/// the last character before it that is not white space ends one.
fn opens_sentence(text: &str, at: usize) -> bool {
    text[..at]
        .chars()
        .rev()
        .find(|c| !c.is_whitespace())
        .is_none_or(|c| matches!(c, '.' | '!' | '?' | ':'))
}

/// The shape features of a statement, in the order of [`FEATURES`]: the same definition as
/// `scripts/salience/features.py` (the parity test holds the two to one another).
pub fn features(text: &str) -> [f64; 13] {
    let ws = words(text);
    let n = ws.len();
    let b: Vec<String> = ws.iter().map(|(_, w)| bare(w)).collect();
    let has = |list: &[&str], w: &str| list.contains(&w);
    let share = |list: &[&str]| {
        if n == 0 {
            0.0
        } else {
            b.iter().filter(|w| has(list, w)).count() as f64 / n as f64
        }
    };
    let first = b.first().map(String::as_str).unwrap_or("");
    let flag = |x: bool| if x { 1.0 } else { 0.0 };
    let proper = ws
        .iter()
        .zip(&b)
        .filter(|((at, w), x)| {
            w.chars().next().is_some_and(char::is_uppercase)
                && !has(I_FORMS, x)
                && !opens_sentence(text, *at)
        })
        .count();
    let progressive = b.iter().enumerate().any(|(i, x)| {
        has(BE, x)
            && b.iter()
                .skip(i + 1)
                .take(2)
                .any(|y| y.chars().count() > 4 && y.ends_with("ing"))
    });
    let word_len = if n == 0 {
        0.0
    } else {
        let chars: usize = ws.iter().map(|(_, w)| w.chars().count()).sum();
        (chars as f64 / n as f64 / 10.0).min(1.5)
    };
    [
        (n as f64).ln_1p(),
        flag(text.contains('?')),
        flag(n > 0 && has(FIRST_START, first)),
        share(FIRST),
        share(SECOND),
        flag(text.bytes().any(|c| c.is_ascii_digit())),
        (proper as f64).ln_1p(),
        flag(b.iter().any(|x| has(DATE, x))),
        flag(b.iter().any(|x| has(FUTURE, x))),
        flag(progressive || b.iter().any(|x| has(NOW, x))),
        flag(n > 0 && has(INTERJECTIONS, first)),
        word_len,
        flag(
            b.iter().any(|x| x == "please")
                || (n > 1 && has(ASKING, first) && matches!(b[1].as_str(), "you" | "u")),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feature(text: &str, name: &str) -> f64 {
        let i = FEATURES.iter().position(|f| *f == name).unwrap();
        features(text)[i]
    }

    #[test]
    fn the_weights_parse_and_the_thresholds_are_the_recorded_ones() {
        assert_eq!(dim(), 128);
        let (keep, send) = recorded_thresholds();
        assert!(
            (f64::from(KEEP) - keep).abs() < 1e-6,
            "KEEP {KEEP} vs {keep}"
        );
        assert!(
            (f64::from(SEND) - send).abs() < 1e-6,
            "SEND {SEND} vs {send}"
        );
        const { assert!(SEND < KEEP) };
    }

    #[test]
    fn words_are_runs_of_letters_digits_and_apostrophes() {
        let w: Vec<&str> = words("'Hi' I'm Ana—I've 2 cats’")
            .iter()
            .map(|x| x.1)
            .collect();
        assert_eq!(w, ["Hi", "I'm", "Ana", "I've", "2", "cats"]);
        assert_eq!(bare("I\u{2019}m"), "im");
        // Offsets are where each word starts, after a leading apostrophe.
        assert_eq!(words("'Hi'")[0].0, 1);
    }

    #[test]
    fn each_feature_reads_the_shape_it_names() {
        assert_eq!(feature("", "log_words"), 0.0);
        assert!((feature("one two three", "log_words") - 4f64.ln()).abs() < 1e-12);
        assert_eq!(feature("Is it raining?", "question"), 1.0);
        assert_eq!(feature("I'm a nurse.", "first_start"), 1.0);
        assert_eq!(feature("The nurse is me.", "first_start"), 0.0);
        assert_eq!(feature("you and your dog", "second_share"), 0.5);
        assert_eq!(feature("Room 12", "number"), 1.0);
        // Names: capitalised words that do not open a sentence, "I" not one of them.
        assert_eq!(feature("I met Ana in Lisbon.", "proper"), 2f64.ln_1p());
        assert_eq!(feature("Great. Fine! I am. I'm ok", "proper"), 0.0);
        assert_eq!(feature("See you next Friday", "date"), 1.0);
        assert_eq!(feature("I may go", "date"), 0.0);
        assert_eq!(feature("I'll call her", "future"), 1.0);
        assert_eq!(feature("I'm doing my skin care routine", "present"), 1.0);
        assert_eq!(feature("I sing", "present"), 0.0);
        assert_eq!(feature("Wow, that's great", "interjection"), 1.0);
        assert_eq!(feature("Could you check it", "request"), 1.0);
        assert_eq!(feature("aaaaaaaaaaaaaaaaaaaa", "word_len"), 1.5);
    }

    #[test]
    fn statements_about_the_person_outrank_chatter() {
        // The minilm vector is not available in the core; with none, the shape alone.
        let none: [f32; 0] = [];
        let fact = score("My sister Ana is visiting from Lisbon this weekend.", &none);
        for chatter in [
            "What time is it?",
            "Good morning!",
            "Wow, that's great!",
            "Can you help me with this?",
        ] {
            assert!(score(chatter, &none) < fact, "{chatter}");
            assert!(score(chatter, &none) < KEEP, "{chatter}");
        }
    }

    #[test]
    fn any_input_scores_between_zero_and_one() {
        let odd = [
            String::new(),
            "\u{0}\u{1f}\u{2028}".into(),
            "’’’".into(),
            "🙂".repeat(1000),
            "x".repeat(100_000),
            "İstanbul ǅ ß ﬁ".into(),
        ];
        let vectors: [Vec<f32>; 4] = [
            vec![],
            vec![1.0; 128],
            vec![f32::NAN; 128],
            vec![f32::INFINITY; 7],
        ];
        for t in &odd {
            for v in &vectors {
                let s = score(t, v);
                assert!((0.0..=1.0).contains(&s), "{t:?} {s}");
                assert!(features(t).iter().all(|f| f.is_finite()));
            }
        }
    }

    #[test]
    fn explain_adds_up_to_the_score() {
        let v = vec![0.05; 128];
        let e = explain("I moved to Porto in 2021.", &v);
        let logit = e.bias + e.meaning + e.features.iter().map(|f| f.2).sum::<f64>();
        assert!((1.0 / (1.0 + (-logit).exp()) - f64::from(e.score)).abs() < 1e-6);
        assert_eq!(e.features.len(), FEATURES.len());
    }
}
