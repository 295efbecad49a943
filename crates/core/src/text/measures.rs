//! The text measures of SPEC S6: small pure functions, each explainable in one sentence.
//!
//! Every gate in dream is built from these, and every refusal names the value one of them
//! measured beside the threshold it missed. They are deliberately simple (a bounded stemmer,
//! a fixed stopword list, set containment) so that a person can recompute any figure by
//! hand and `dream verify` can re-derive it independently. Nothing here does I/O.

use std::collections::{BTreeSet, HashSet};
use std::sync::LazyLock;

use regex::Regex;

/// English stopwords (the NLTK list plus apostrophe-free contractions). Negations are kept
/// in the list on purpose: S6 similarity is containment of content words, and polarity is
/// checked separately by [`negated`].
pub const STOPWORDS: &[&str] = &[
    "i",
    "me",
    "my",
    "myself",
    "we",
    "our",
    "ours",
    "ourselves",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "her",
    "hers",
    "herself",
    "it",
    "its",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "what",
    "which",
    "who",
    "whom",
    "this",
    "that",
    "these",
    "those",
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "a",
    "an",
    "the",
    "and",
    "but",
    "if",
    "or",
    "because",
    "as",
    "until",
    "while",
    "of",
    "at",
    "by",
    "for",
    "with",
    "about",
    "against",
    "between",
    "into",
    "through",
    "during",
    "before",
    "after",
    "above",
    "below",
    "to",
    "from",
    "up",
    "down",
    "in",
    "out",
    "on",
    "off",
    "over",
    "under",
    "again",
    "further",
    "then",
    "once",
    "here",
    "there",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "such",
    "no",
    "nor",
    "not",
    "only",
    "own",
    "same",
    "so",
    "than",
    "too",
    "very",
    "s",
    "t",
    "can",
    "will",
    "just",
    "don",
    "should",
    "now",
    "im",
    "ive",
    "youre",
    "youve",
    "youll",
    "hes",
    "shes",
    "theyre",
    "weve",
    "dont",
    "doesnt",
    "didnt",
    "isnt",
    "arent",
    "wasnt",
    "werent",
    "cant",
    "wont",
    "thats",
    "lets",
    "also",
    "would",
    "could",
    "shall",
    "may",
    "might",
    "must",
];

static STOPWORD_SET: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| STOPWORDS.iter().copied().collect());

/// Words that flip the meaning of a statement; two texts that differ in them are never
/// "the same fact", however similar their content words are.
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "nor", "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent",
    "cant", "wont", "cannot", "neither", "none", "nobody", "nothing", "anymore", "longer",
    "stopped", "quit",
];

pub fn is_stopword(token: &str) -> bool {
    STOPWORD_SET.contains(token)
}

/// Lower-case, delete apostrophes (user's -> users), and turn every other punctuation
/// character into a space; runs of white space collapse to one space.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last_space = true;
    for ch in text.chars() {
        if ch.is_ascii() {
            // The common case, without the Unicode tables (the same answer for ASCII).
            if ch.is_ascii_alphanumeric() {
                out.push(ch.to_ascii_lowercase());
                last_space = false;
            } else if ch != '\'' && !last_space {
                out.push(' ');
                last_space = true;
            }
            continue;
        }
        if ch == '\u{2019}' || ch == '\u{2018}' {
            continue;
        }
        if ch.is_alphanumeric() {
            for lower in ch.to_lowercase() {
                out.push(lower);
            }
            last_space = false;
        } else if !last_space {
            out.push(' ');
            last_space = true;
        }
    }
    if out.ends_with(' ') {
        out.pop();
    }
    out
}

/// Strip a possessive, then a trailing plural -s unless the word ends in -ss or -us or has
/// three characters or fewer. Deliberately bounded: not a real stemmer.
pub fn stem_token(token: &str) -> String {
    stem(token).to_string()
}

/// [`stem_token`] as a part of the token.
fn stem(token: &str) -> &str {
    let mut t = token;
    for suffix in ["'s", "\u{2019}s"] {
        if let Some(stripped) = t.strip_suffix(suffix) {
            t = stripped;
        }
    }
    if t.chars().nth(3).is_some() && t.ends_with('s') && !t.ends_with("ss") && !t.ends_with("us") {
        t = &t[..t.len() - 1];
    }
    t
}

/// The normalized tokens of a text, in order, stopwords included.
pub fn tokens(text: &str) -> Vec<String> {
    normalize(text)
        .split(' ')
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// Content tokens in order: normalized, stopword-free, stemmed.
pub fn content_token_seq(text: &str) -> Vec<String> {
    tokens(text)
        .into_iter()
        .filter(|t| !is_stopword(t))
        .map(|t| stem_token(&t))
        .collect()
}

/// The set of content tokens of a text.
pub fn content_tokens(text: &str) -> BTreeSet<String> {
    content_token_seq(text).into_iter().collect()
}

/// A set of normalized, stemmed tokens ([`vocabulary`]), hashed for speed (the gates build
/// one from every event a proposal cites).
pub type Vocabulary = HashSet<String, rustc_hash::FxBuildHasher>;

/// The vocabulary of some source texts: every normalized, stemmed token, stopwords kept.
pub fn vocabulary<'a>(sources: impl IntoIterator<Item = &'a str>) -> Vocabulary {
    let mut vocab = Vocabulary::default();
    for source in sources {
        for t in normalize(source).split(' ').filter(|t| !t.is_empty()) {
            let stemmed = stem(t);
            if !vocab.contains(stemmed) {
                vocab.insert(stemmed.to_string());
            }
        }
    }
    vocab
}

/// The numbers a text states: its tokens that hold a digit (`17`, `2026`, `3rd`), as a
/// set.
pub fn numbers(text: &str) -> BTreeSet<String> {
    tokens(text)
        .into_iter()
        .filter(|t| t.chars().any(|c| c.is_ascii_digit()))
        .collect()
}

/// Whether two texts state the same numbers. However alike their other words, "Hand note
/// 17" and "Hand note 18", or "2 cats" and "3 cats", are never the same fact.
pub fn numbers_agree(a: &str, b: &str) -> bool {
    numbers(a) == numbers(b)
}

/// `|A & B| / min(|A|, |B|)` over content-token sets: a restatement that adds words is
/// still the same fact. Zero when either side has no content words.
pub fn similarity(a: &str, b: &str) -> f64 {
    set_similarity(&content_tokens(a), &content_tokens(b))
}

/// [`similarity`] over token sets already computed.
pub fn set_similarity(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let smaller = a.len().min(b.len());
    if smaller == 0 {
        return 0.0;
    }
    let shared = a.intersection(b).count();
    shared as f64 / smaller as f64
}

/// [`set_similarity`] over sorted lists without repeats (content words numbered, say):
/// the same figure, a merge instead of a tree walk.
pub fn sorted_similarity<T: Ord>(a: &[T], b: &[T]) -> f64 {
    let smaller = a.len().min(b.len());
    if smaller == 0 {
        return 0.0;
    }
    sorted_shared(a, b) as f64 / smaller as f64
}

/// How many elements two sorted lists share (with multiplicity), by one merge.
pub fn sorted_shared<T: Ord>(a: &[T], b: &[T]) -> usize {
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    shared
}

/// How much of a claim its sources account for.
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    /// Share of the claim's content tokens found in the sources' vocabulary (0.0 when the
    /// claim has no content token at all).
    pub value: f64,
    /// The claim's content tokens the sources do not contain, in claim order.
    pub missing: Vec<String>,
}

/// Fraction of the claim's content tokens present in the sources' vocabulary (sources keep
/// their stopwords).
pub fn coverage<'a>(claim: &str, sources: impl IntoIterator<Item = &'a str>) -> Coverage {
    let vocab = vocabulary(sources);
    coverage_in(claim, &vocab)
}

/// [`coverage`] against a vocabulary already built.
pub fn coverage_in(claim: &str, vocab: &Vocabulary) -> Coverage {
    let mut seen = BTreeSet::new();
    let mut total = 0usize;
    let mut missing = Vec::new();
    for token in content_token_seq(claim) {
        if !seen.insert(token.clone()) {
            continue;
        }
        total += 1;
        if !vocab.contains(&token) {
            missing.push(token);
        }
    }
    if total == 0 {
        return Coverage {
            value: 0.0,
            missing,
        };
    }
    Coverage {
        value: (total - missing.len()) as f64 / total as f64,
        missing,
    }
}

/// True when the text carries a negation word (not, never, no longer, ...).
pub fn negated(text: &str) -> bool {
    tokens(text).iter().any(|t| NEGATIONS.contains(&t.as_str()))
}

/// True when a negation word (not, never, no longer, ...) stands within three words before
/// one of the `shared` content words: "I don't live in Lisbon" negates "live", while
/// "Don't forget: I live in Lisbon" negates nothing the two texts share.
pub fn negates(text: &str, shared: &BTreeSet<String>) -> bool {
    negates_tokens(&tokens(text), shared)
}

/// [`negates`] over a text's tokens.
fn negates_tokens(toks: &[String], shared: &BTreeSet<String>) -> bool {
    toks.iter().enumerate().any(|(i, t)| {
        NEGATIONS.contains(&t.as_str())
            && toks[i + 1..]
                .iter()
                .take(3)
                .any(|next| shared.contains(&stem_token(next)))
    })
}

/// Whether two texts agree in polarity about what they share (see [`negates`]).
pub fn polarity_agrees(a: &str, b: &str) -> bool {
    polarity_agrees_prepared(&Prepared::new(a), &Prepared::new(b))
}

/// A text tokenised once for repeated comparisons (similarity, polarity): its tokens, its
/// content-token set, and whether it holds a negation word at all.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub tokens: Vec<String>,
    pub content: BTreeSet<String>,
    pub negation: bool,
}

impl Prepared {
    pub fn new(text: &str) -> Prepared {
        let tokens = tokens(text);
        let content = tokens
            .iter()
            .filter(|t| !is_stopword(t))
            .map(|t| stem_token(t))
            .collect();
        let negation = tokens.iter().any(|t| NEGATIONS.contains(&t.as_str()));
        Prepared {
            tokens,
            content,
            negation,
        }
    }
}

/// [`polarity_agrees`] over prepared texts. Two texts without a negation word always
/// agree, which is most pairs, so that case costs nothing.
pub fn polarity_agrees_prepared(a: &Prepared, b: &Prepared) -> bool {
    if !a.negation && !b.negation {
        return true;
    }
    let shared: BTreeSet<String> = a.content.intersection(&b.content).cloned().collect();
    negates_tokens(&a.tokens, &shared) == negates_tokens(&b.tokens, &shared)
}

/// Capitalised words that do not start a sentence ("I" and its contractions excluded).
pub fn proper_nouns(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut sentence_start = true;
    for raw in text.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let starts = sentence_start;
        sentence_start = raw.ends_with(['.', '!', '?', ':', ';']) || raw.ends_with(".\"");
        if word.is_empty() {
            // A bullet or a dash keeps the sentence-start state.
            sentence_start = starts || matches!(raw, "-" | "*" | "•" | "—" | "–");
            continue;
        }
        if starts {
            continue;
        }
        let first = word.chars().next().unwrap_or(' ');
        if !first.is_uppercase() {
            continue;
        }
        let base = word.split(['\'', '\u{2019}']).next().unwrap_or(word);
        if base == "I" {
            continue;
        }
        if !out.iter().any(|w| w == word) {
            out.push(word.to_string());
        }
    }
    out
}

/// What kind of entity-like token a claim carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntityKind {
    ProperNoun,
    Number,
    Url,
    Email,
    Path,
    Identifier,
}

impl EntityKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntityKind::ProperNoun => "name",
            EntityKind::Number => "number",
            EntityKind::Url => "url",
            EntityKind::Email => "e-mail",
            EntityKind::Path => "path",
            EntityKind::Identifier => "identifier",
        }
    }
}

/// An entity-like token found in a claim.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entity {
    pub kind: EntityKind,
    pub text: String,
}

static URL_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?i)\b(?:https?|ftp|file)://[^\s<>"'`)\]]+"#).unwrap());
static EMAIL_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}\b").unwrap());
static NUMBER_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\d+(?:[.,:/-]\d+)*").unwrap());
static PATH_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}/?|(?:~|\.{1,2})/[\w.@+-]+|\b[\w-]+(?:/[\w.-]+)+|\b[\w-]+\.(?:rs|py|js|ts|tsx|jsx|go|java|rb|md|toml|json|jsonl|yaml|yml|txt|sh|c|h|cpp|hpp|sql|html|css|lock|cfg|ini|env|csv)\b")
        .unwrap()
});
static IDENT_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:[A-Za-z]+_[A-Za-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]*|[A-Za-z]+\d+[A-Za-z0-9]*|\d+[A-Za-z]+[A-Za-z0-9]*)\b")
        .unwrap()
});

/// Entity-like tokens of a claim: proper nouns, numbers and dates, URLs, e-mail addresses,
/// paths and identifiers. Each must appear in the supporting events (see [`entity_present`]).
pub fn entities(text: &str) -> Vec<Entity> {
    let mut out: BTreeSet<Entity> = BTreeSet::new();
    let mut push = |kind, s: &str| {
        out.insert(Entity {
            kind,
            text: s.trim_end_matches(['.', ',', ';', ':']).to_string(),
        });
    };
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (re, kind) in [
        (&*URL_RE, EntityKind::Url),
        (&*EMAIL_RE, EntityKind::Email),
        (&*PATH_RE, EntityKind::Path),
    ] {
        for m in re.find_iter(text) {
            if spans.iter().any(|&(s, e)| m.start() < e && s < m.end()) {
                continue;
            }
            spans.push((m.start(), m.end()));
            push(kind, m.as_str());
        }
    }
    let outside = |s: usize, e: usize| !spans.iter().any(|&(a, b)| s < b && a < e);
    for m in IDENT_RE.find_iter(text) {
        if outside(m.start(), m.end()) {
            push(EntityKind::Identifier, m.as_str());
        }
    }
    for m in NUMBER_RE.find_iter(text) {
        if outside(m.start(), m.end()) && !inside_word(text, m.start(), m.end()) {
            push(EntityKind::Number, m.as_str());
        }
    }
    for noun in proper_nouns(text) {
        if IDENT_RE.is_match(&noun) && noun.chars().any(|c| c.is_ascii_digit() || c == '_') {
            continue;
        }
        let inside_span = text
            .match_indices(noun.as_str())
            .all(|(s, _)| !outside(s, s + noun.len()));
        if !inside_span {
            push(EntityKind::ProperNoun, &noun);
        }
    }
    out.into_iter().collect()
}

fn inside_word(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    before.is_some_and(|c| c.is_alphabetic()) || after.is_some_and(|c| c.is_alphabetic())
}

/// Whether an entity of a claim appears in the sources: names by their normalized, stemmed
/// tokens; numbers as the same digit string; URLs, e-mails, paths and identifiers as the same
/// text (ignoring case).
pub fn entity_present(entity: &Entity, sources: &[&str], vocab: &Vocabulary) -> bool {
    match entity.kind {
        EntityKind::ProperNoun => {
            let toks = tokens(&entity.text);
            !toks.is_empty() && toks.iter().all(|t| vocab.contains(&stem_token(t)))
        }
        EntityKind::Number => sources.iter().any(|s| {
            NUMBER_RE
                .find_iter(s)
                .any(|m| m.as_str().trim_end_matches(['.', ',', ':']) == entity.text)
        }),
        _ => {
            let needle = entity.text.to_lowercase();
            sources.iter().any(|s| s.to_lowercase().contains(&needle))
        }
    }
}

/// [`entity_present`] for many entities against many texts, in one pass over each text:
/// searching a long event once for every entity of every one of its sentences costs the
/// square of its size (issue 46: one event of 200 KB held the lock for minutes). The
/// finder is built once from every entity to look for ([`EntityFinder::new`]); each text
/// is read once ([`EntityFinder::scan`]), for its numbers and for every other entity at
/// once (an Aho-Corasick automaton over the lowercased texts); then each question is a
/// lookup ([`EntityFinder::present`]). The answers are [`entity_present`]'s.
pub struct EntityFinder {
    /// Lowercased texts of the URLs, e-mails, paths and identifiers, each once.
    needles: std::collections::HashMap<String, usize>,
    automaton: Option<aho_corasick::AhoCorasick>,
}

/// What one text holds of an [`EntityFinder`]'s entities.
pub struct Found {
    numbers: HashSet<String>,
    needles: Vec<bool>,
}

impl EntityFinder {
    pub fn new<'a>(entities: impl IntoIterator<Item = &'a Entity>) -> EntityFinder {
        let mut needles = std::collections::HashMap::new();
        let mut patterns = Vec::new();
        for e in entities {
            if matches!(e.kind, EntityKind::ProperNoun | EntityKind::Number) {
                continue;
            }
            let needle = e.text.to_lowercase();
            if !needle.is_empty() && !needles.contains_key(&needle) {
                needles.insert(needle.clone(), patterns.len());
                patterns.push(needle);
            }
        }
        // Fails only past the automaton's size limits; then every needle is searched
        // one by one ([`Self::scan`]), as [`entity_present`] does.
        let automaton = aho_corasick::AhoCorasick::new(&patterns).ok();
        EntityFinder { needles, automaton }
    }

    /// Read `text` once: its numbers, and which of the finder's needles it holds.
    pub fn scan(&self, text: &str) -> Found {
        let numbers = NUMBER_RE
            .find_iter(text)
            .map(|m| m.as_str().trim_end_matches(['.', ',', ':']).to_string())
            .collect();
        let mut needles = vec![false; self.needles.len()];
        if !needles.is_empty() {
            let lower = text.to_lowercase();
            match &self.automaton {
                Some(ac) => {
                    for m in ac.find_overlapping_iter(&lower) {
                        needles[m.pattern().as_usize()] = true;
                    }
                }
                None => {
                    for (needle, &i) in &self.needles {
                        needles[i] = lower.contains(needle.as_str());
                    }
                }
            }
        }
        Found { numbers, needles }
    }

    /// Whether the text `found` was scanned from holds `entity` ([`entity_present`]);
    /// `vocab` is that text's vocabulary. An entity the finder was not built with is
    /// looked up in no text: it is reported absent.
    pub fn present(&self, entity: &Entity, found: &Found, vocab: &Vocabulary) -> bool {
        match entity.kind {
            EntityKind::ProperNoun => entity_present(entity, &[], vocab),
            EntityKind::Number => found.numbers.contains(&entity.text),
            _ => {
                let needle = entity.text.to_lowercase();
                needle.is_empty() || self.needles.get(&needle).is_some_and(|&i| found.needles[i])
            }
        }
    }
}

/// Names and numbers of a text, normalized and stemmed ("Tuesdays" and "Tuesday" are one
/// name): what tells two facts on one subject apart ("I live in Lisbon" / "I live in
/// Porto").
pub fn names_and_numbers(text: &str) -> BTreeSet<String> {
    entities(text)
        .into_iter()
        .filter(|e| matches!(e.kind, EntityKind::ProperNoun | EntityKind::Number))
        .map(|e| entity_key(&e))
        .collect()
}

/// One thing given two values: the two texts begin alike and read word for word the same
/// but for one later stretch, the words around it hold a content word, and the two
/// stretches share no content word ("I prefer dark mode" / "I prefer light mode", "My
/// daughter is allergic to dairy" / "... to eggs"). A different beginning is a rewording
/// ("I live in Lisbon" / "My home is in Lisbon"), not a swap. Returns the stretches'
/// content words.
pub fn swapped(a: &Prepared, b: &Prepared) -> Option<(BTreeSet<String>, BTreeSet<String>)> {
    let (x, y) = (&a.tokens, &b.tokens);
    let shortest = x.len().min(y.len());
    let head = x.iter().zip(y).take_while(|(p, q)| p == q).count();
    let tail = x
        .iter()
        .rev()
        .zip(y.iter().rev())
        .take(shortest - head)
        .take_while(|(p, q)| p == q)
        .count();
    let content = |t: &[String]| -> BTreeSet<String> {
        t.iter()
            .filter(|w| !is_stopword(w))
            .map(|w| stem_token(w))
            .collect()
    };
    let (sx, sy) = (
        content(&x[head..x.len() - tail]),
        content(&y[head..y.len() - tail]),
    );
    let around = head > 0
        && x[..head]
            .iter()
            .chain(&x[x.len() - tail..])
            .any(|w| !is_stopword(w));
    (around && !sx.is_empty() && !sy.is_empty() && sx.is_disjoint(&sy)).then_some((sx, sy))
}

/// Whether `candidate` takes back what `fact` says, and how: it swaps the two sides of a
/// preference ("I prefer spaces over tabs" against "I prefer tabs over spaces": the
/// content words next to "over", "than" or "instead" exchanged), or it says the fact's
/// words no longer hold ("I no longer live in Porto" against "I live in Porto with my
/// partner": every content word after "no longer", or between a negation and "anymore",
/// is the fact's, and the fact itself is not negated). Pure word positions, no model.
pub fn retracts(candidate: &Prepared, fact: &Prepared) -> Option<&'static str> {
    const COMPARATORS: &[&str] = &["over", "than", "instead"];
    let sides = |t: &[String]| -> Option<(String, String)> {
        let c = t.iter().position(|w| COMPARATORS.contains(&w.as_str()))?;
        let before = t[..c].iter().rev().find(|w| !is_stopword(w))?;
        let after = t[c + 1..]
            .iter()
            .find(|w| !is_stopword(w) && w.as_str() != "of")?;
        Some((stem_token(before), stem_token(after)))
    };
    if let (Some((a1, b1)), Some((a2, b2))) = (sides(&candidate.tokens), sides(&fact.tokens)) {
        if a1 != b1 && a1 == b2 && b1 == a2 {
            return Some("it swaps the two sides of the preference the fact states");
        }
    }
    if fact.negation {
        return None;
    }
    let t = &candidate.tokens;
    let clause: Vec<String> =
        if let Some(i) = t.windows(2).position(|w| w[0] == "no" && w[1] == "longer") {
            t[i + 2..]
                .iter()
                .filter(|w| !is_stopword(w))
                .take(3)
                .map(|w| stem_token(w))
                .collect()
        } else if let Some(end) = t.iter().position(|w| w == "anymore") {
            let start = t[..end]
                .iter()
                .rposition(|w| NEGATIONS.contains(&w.as_str()) && w != "anymore")
                .map_or(end, |s| s + 1);
            t[start..end]
                .iter()
                .filter(|w| !is_stopword(w))
                .map(|w| stem_token(w))
                .collect()
        } else {
            Vec::new()
        };
    (!clause.is_empty() && clause.iter().all(|w| fact.content.contains(w)))
        .then_some("it says what the fact states no longer holds")
}

/// Every entity-like token of a text (names, numbers, paths, identifiers, URLs, e-mail
/// addresses) as a comparable key, and the number words from one to twenty and the tens
/// as their digits ("thirty days" and "30 days" name the same number): the entities two
/// restatements of a fact must not disagree on.
pub fn entity_keys(text: &str) -> BTreeSet<String> {
    let mut keys: BTreeSet<String> = entities(text).iter().map(entity_key).collect();
    keys.extend(
        tokens(text)
            .iter()
            .filter_map(|t| number_word(t))
            .map(|n| n.to_string()),
    );
    keys
}

fn entity_key(e: &Entity) -> String {
    match e.kind {
        EntityKind::ProperNoun => tokens(&e.text)
            .iter()
            .map(|t| stem_token(t))
            .collect::<Vec<_>>()
            .join(" "),
        EntityKind::Number => e.text.clone(),
        _ => e.text.to_lowercase(),
    }
}

/// The value of an English number word (one to twenty, the tens to ninety).
fn number_word(token: &str) -> Option<u32> {
    const WORDS: [&str; 20] = [
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    const TENS: [&str; 7] = [
        "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    ];
    if let Some(i) = WORDS.iter().position(|w| *w == token) {
        return Some(i as u32 + 1);
    }
    TENS.iter()
        .position(|w| *w == token)
        .map(|i| (i as u32 + 3) * 10)
}

/// Two texts disagree in names or numbers when each names something the other does not
/// (a text that names nothing, or only what the other names, disagrees with nothing).
pub fn names_differ(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    a.difference(b).next().is_some() && b.difference(a).next().is_some()
}

/// The entities of `claim` that no source contains.
pub fn invented_entities(claim: &str, sources: &[&str]) -> Vec<Entity> {
    let vocab = vocabulary(sources.iter().copied());
    entities(claim)
        .into_iter()
        .filter(|e| !entity_present(e, sources, &vocab))
        .collect()
}

/// Round to three decimals for display and for storing measured values.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// One supporting event, as [`cited`] weighs it: its text and its day (any day number).
#[derive(Debug, Clone, Copy)]
pub struct Citation<'a> {
    pub text: &'a str,
    pub day: i64,
}

/// Which of a fact's supporting events it keeps citing when more than `keep` support it
/// (indices into `events`, in their order, which is oldest first). A fact restated every
/// day would otherwise carry hundreds of ids, and its metadata must not get in the way of
/// reading the file (SPEC S3). Kept, in this order:
///
/// 1. events that still trace the fact: every content word and entity the whole set
///    contains is in them (greedily the event that traces the most of what is left, the
///    earliest on a tie); when that takes more than `keep`, every event is kept;
/// 2. the most recent event of each day not cited yet, newest first;
/// 3. the most recent of the rest.
///
/// So `dream verify` finds the fact exactly as traceable as before, and the cited days
/// stay spread. Its first and last seen dates are kept apart from the ids.
pub fn cited(claim: &str, events: &[Citation<'_>], keep: usize) -> Vec<usize> {
    if events.len() <= keep {
        return (0..events.len()).collect();
    }
    let keep = keep.max(1);
    // What tracing asks for, split so that a set of events traces an item exactly when one
    // of them does: each content word, each word of a proper noun, each other entity.
    let mut words: Vec<String> = Vec::new();
    for t in content_token_seq(claim) {
        if !words.contains(&t) {
            words.push(t);
        }
    }
    let mut others: Vec<Entity> = Vec::new();
    for e in entities(claim) {
        match e.kind {
            EntityKind::ProperNoun => {
                for t in tokens(&e.text) {
                    let t = stem_token(&t);
                    if !words.contains(&t) {
                        words.push(t);
                    }
                }
            }
            _ => others.push(e),
        }
    }
    let traces: Vec<Vec<bool>> = events
        .iter()
        .map(|c| {
            let vocab = vocabulary([c.text]);
            words
                .iter()
                .map(|w| vocab.contains(w))
                .chain(others.iter().map(|e| entity_present(e, &[c.text], &vocab)))
                .collect()
        })
        .collect();
    let items = words.len() + others.len();
    let reachable: Vec<bool> = (0..items).map(|k| traces.iter().any(|t| t[k])).collect();
    // Greedily the event that traces the most of what is still untraced; the earliest wins
    // a tie, so the event a fact was taken from (usually among the first) is kept.
    let mut open = reachable;
    let mut chosen: Vec<usize> = Vec::new();
    while open.iter().any(|&o| o) && chosen.len() < keep {
        let gain = |i: usize| (0..items).filter(|&k| open[k] && traces[i][k]).count();
        let best = (0..events.len())
            .filter(|i| !chosen.contains(i))
            .map(|i| (gain(i), std::cmp::Reverse(i)))
            .max();
        match best {
            Some((g, std::cmp::Reverse(i))) if g > 0 => {
                for k in 0..items {
                    if traces[i][k] {
                        open[k] = false;
                    }
                }
                chosen.push(i);
            }
            _ => break,
        }
    }
    if open.iter().any(|&o| o) {
        // More than `keep` events are needed to trace it: cite them all rather than less.
        return (0..events.len()).collect();
    }
    let mut days: HashSet<i64> = chosen.iter().map(|&i| events[i].day).collect();
    for i in (0..events.len()).rev() {
        if chosen.len() >= keep {
            break;
        }
        if !chosen.contains(&i) && days.insert(events[i].day) {
            chosen.push(i);
        }
    }
    for i in (0..events.len()).rev() {
        if chosen.len() >= keep {
            break;
        }
        if !chosen.contains(&i) {
            chosen.push(i);
        }
    }
    chosen.sort_unstable();
    chosen
}

#[cfg(test)]
mod tests {
    /// The finder answers what [`super::entity_present`] answers, for every entity of
    /// every text against every text: names, numbers (with their trailing stops), URLs,
    /// e-mails, paths and identifiers, in other letter cases and inside longer words.
    #[test]
    fn the_entity_finder_answers_as_entity_present() {
        use super::*;
        let texts = [
            "Ask Ana at ana@example.com about src/main.rs by 3 May 2026, 10:30.",
            "The build_cache flag lives in SRC/MAIN.RS; see https://example.com/a?b=1.",
            "I moved to Lisbon in 2019. Mr Élan Überlin said 4.5, then 4,5 and 12/05.",
            "myBuild_cache2 and ~/notes/todo.md and 42",
            "",
        ];
        let all: Vec<Entity> = texts.iter().flat_map(|t| entities(t)).collect();
        assert!(all.len() > 12, "{all:?}");
        let finder = EntityFinder::new(&all);
        for t in texts {
            let found = finder.scan(t);
            let vocab = vocabulary([t]);
            for e in &all {
                assert_eq!(
                    finder.present(e, &found, &vocab),
                    entity_present(e, &[t], &vocab),
                    "{e:?} in {t:?}"
                );
            }
        }
    }

    #[test]
    fn sorted_similarity_is_set_similarity() {
        let texts = [
            "I live in Lisbon with my partner.",
            "My home is in Lisbon, with my partner.",
            "I live in Porto.",
            "the and of",
            "",
            "Lisbon Lisbon lisbon partner partners",
        ];
        let mut numbers: std::collections::HashMap<String, usize> = Default::default();
        let sets: Vec<BTreeSet<String>> = texts.iter().map(|t| content_tokens(t)).collect();
        let lists: Vec<Vec<usize>> = sets
            .iter()
            .map(|set| {
                let mut l: Vec<usize> = set
                    .iter()
                    .map(|w| {
                        let next = numbers.len();
                        *numbers.entry(w.clone()).or_insert(next)
                    })
                    .collect();
                l.sort_unstable();
                l
            })
            .collect();
        for a in 0..texts.len() {
            for b in 0..texts.len() {
                assert_eq!(
                    sorted_similarity(&lists[a], &lists[b]),
                    set_similarity(&sets[a], &sets[b]),
                    "{:?} / {:?}",
                    texts[a],
                    texts[b]
                );
            }
        }
    }

    use super::*;

    #[test]
    fn a_swapped_preference_and_a_no_longer_take_a_fact_back() {
        let p = Prepared::new;
        let why = |a: &str, b: &str| retracts(&p(a), &p(b));
        assert!(why(
            "I prefer spaces over tabs in Rust.",
            "I prefer tabs over spaces in Rust."
        )
        .is_some());
        assert!(why(
            "I moved to Lisbon, I no longer live in Porto.",
            "I live in Porto with Ines."
        )
        .is_some());
        assert!(why(
            "I don't drink coffee anymore.",
            "I drink coffee every morning."
        )
        .is_some());
        // The same side, another subject, or a fact that is itself negated: not a retraction.
        assert!(why(
            "I prefer tabs over spaces in Go.",
            "I prefer tabs over spaces in Rust."
        )
        .is_none());
        assert!(why("I no longer live in Braga.", "I live in Porto with Ines.").is_none());
        assert!(why("I no longer live in Porto.", "I do not live in Porto.").is_none());
    }

    #[test]
    fn normalize_reads_ascii_and_other_text_alike() {
        // The rule without its ASCII fast path.
        let reference = |text: &str| {
            let mut out = String::new();
            let mut last_space = true;
            for ch in text.chars() {
                if ch == '\'' || ch == '\u{2019}' || ch == '\u{2018}' {
                    continue;
                }
                if ch.is_alphanumeric() {
                    out.extend(ch.to_lowercase());
                    last_space = false;
                } else if !last_space {
                    out.push(' ');
                    last_space = true;
                }
            }
            out.trim_end().to_string()
        };
        for text in [
            "The user's DB is Postgres 16, isn't it?",
            "  Ünïcödé — São Paulo’s café; ÉCOLE d'été  ",
            "tabs\tand\nnewlines\r\n--dashes__under_scores",
            "ΣΊΣΥΦΟΣ ΚΑΙ ΔΟΚΙΜΉ: 東京 2023年 ‘quoted’",
            "'''",
            "",
        ] {
            assert_eq!(normalize(text), reference(text), "{text:?}");
        }
    }

    #[test]
    fn normalize_lowercases_strips_punctuation_and_deletes_apostrophes() {
        assert_eq!(
            normalize("The user's  CAT, (really)!"),
            "the users cat really"
        );
        assert_eq!(normalize("don\u{2019}t"), "dont");
        assert_eq!(normalize("..."), "");
    }

    #[test]
    fn stem_token_is_bounded() {
        let table = [
            ("works", "work"),
            ("lives", "live"),
            ("users", "user"),
            ("user's", "user"),
            ("class", "class"),
            ("status", "status"),
            ("bus", "bus"),
            ("gas", "gas"),
            ("running", "running"),
        ];
        for (input, want) in table {
            assert_eq!(stem_token(input), want, "stem_token({input:?})");
        }
    }

    #[test]
    fn similarity_matches_the_seed_figures() {
        let lisbon = "I live in Lisbon and work best in the morning.";
        let table = [
            (
                lisbon,
                "User lives in Lisbon and works best in the morning.",
                1.0,
            ),
            (lisbon, "I live in Porto and work best in the morning.", 0.8),
            (
                "My stack is Airflow and Postgres.",
                "My stack is Airflow and Kubernetes.",
                0.667,
            ),
            ("hello", "", 0.0),
        ];
        for (a, b, want) in table {
            assert_eq!(round3(similarity(a, b)), want, "similarity({a:?}, {b:?})");
            assert_eq!(round3(similarity(b, a)), want, "similarity is symmetric");
        }
    }

    #[test]
    fn a_swapped_stretch_gives_one_thing_two_values() {
        let sw = |a: &str, b: &str| swapped(&Prepared::new(a), &Prepared::new(b));
        let (x, y) = sw(
            "I prefer dark mode in every editor.",
            "I prefer light mode in every editor.",
        )
        .unwrap();
        assert_eq!((x.len(), y.len()), (1, 1));
        assert!(x.contains("dark") && y.contains("light"));
        assert!(sw(
            "My daughter is allergic to dairy.",
            "My daughter is allergic to eggs."
        )
        .is_some());
        // Only stopwords around the stretch: nothing says it is the same thing.
        assert!(sw(
            "My sister is a software engineer.",
            "My brother is a lawyer."
        )
        .is_none());
        // A different beginning, a shared word inside the stretch, nothing around it.
        assert!(sw("I live in Lisbon.", "My home is in Lisbon.").is_none());
        assert!(sw("The cat's name is Luna.", "Our cat is called Luna.").is_none());
        assert!(sw("I live in Lisbon.", "I live in Lisbon now.").is_none());
        assert!(sw("Dark mode.", "Light theme.").is_none());
        assert!(sw("same", "same").is_none());
    }

    #[test]
    fn entity_keys_read_number_words_and_stem_names() {
        let k = entity_keys("We meet on Tuesdays for thirty minutes at 9:30.");
        assert!(
            k.contains("tuesday") && k.contains("30") && k.contains("9:30"),
            "{k:?}"
        );
        assert_eq!(
            entity_keys("Logs are kept for 30 days."),
            entity_keys("Logs are kept for thirty days.")
        );
        assert!(names_differ(
            &entity_keys("I live in Lisbon."),
            &entity_keys("I live in Porto.")
        ));
        assert!(!names_differ(
            &entity_keys("I live in Lisbon."),
            &entity_keys("My home is in Lisbon.")
        ));
        assert!(!names_differ(
            &entity_keys("The CI takes twenty minutes."),
            &entity_keys("CI is slow.")
        ));
    }

    #[test]
    fn coverage_names_the_untraceable_words() {
        let c = coverage("User lives in Lisbon near the river.", ["I live in Lisbon"]);
        assert_eq!(c.missing, vec!["user", "near", "river"]);
        assert_eq!(round3(c.value), 0.4);
        let full = coverage("I live in Lisbon.", ["i LIVE in lisbon, yes"]);
        assert_eq!(full.value, 1.0);
        assert!(full.missing.is_empty());
        assert_eq!(coverage("the and of", ["x"]).value, 0.0);
    }

    #[test]
    fn proper_nouns_skip_sentence_starts_and_i() {
        assert_eq!(
            proper_nouns("I moved to Lisbon. Then I met Ana at the Kitchen."),
            vec!["Lisbon", "Ana", "Kitchen"]
        );
        assert_eq!(proper_nouns("I'm sure Bob's cat is fine"), vec!["Bob's"]);
        assert!(proper_nouns("Hello there").is_empty());
    }

    #[test]
    fn entities_find_numbers_paths_urls_emails_identifiers() {
        let e = entities(
            "Deploy by 2026-03-03 from ~/work/api using deploy_prod.sh, see https://x.io/a or mail ana@ex.com; call useState 3 times",
        );
        let kinds: Vec<(EntityKind, &str)> = e.iter().map(|e| (e.kind, e.text.as_str())).collect();
        assert!(
            kinds.contains(&(EntityKind::Number, "2026-03-03")),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&(EntityKind::Path, "~/work/api")),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&(EntityKind::Path, "deploy_prod.sh")),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&(EntityKind::Url, "https://x.io/a")),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&(EntityKind::Email, "ana@ex.com")),
            "{kinds:?}"
        );
        assert!(
            kinds.contains(&(EntityKind::Identifier, "useState")),
            "{kinds:?}"
        );
        assert!(kinds.contains(&(EntityKind::Number, "3")), "{kinds:?}");
    }

    #[test]
    fn invented_entities_are_those_absent_from_sources() {
        let sources = ["I live in Lisbon and have 2 cats"];
        let invented = invented_entities("User lives in Porto with 2 cats", &sources);
        assert_eq!(invented.len(), 1);
        assert_eq!(invented[0].text, "Porto");
        let invented = invented_entities("User has 3 cats in Lisbon", &sources);
        assert_eq!(invented[0].text, "3");
        assert!(invented_entities("User lives in Lisbon", &sources).is_empty());
    }

    #[test]
    fn polarity_looks_at_what_is_negated() {
        let fact = "I live in Lisbon";
        assert!(!polarity_agrees(fact, "I don't live in Lisbon anymore"));
        assert!(!polarity_agrees(fact, "I no longer live in Lisbon"));
        assert!(polarity_agrees(fact, "Don't forget that I live in Lisbon"));
        assert!(polarity_agrees(
            "Always run the tests",
            "Always run the tests, no exceptions."
        ));
        assert!(polarity_agrees(
            "I never eat meat",
            "I never eat meat at all"
        ));
    }

    #[test]
    fn negation_is_detected() {
        assert!(negated("I don't live in Lisbon anymore"));
        assert!(negated("I no longer drink coffee"));
        assert!(!negated("I live in Lisbon"));
    }

    #[test]
    fn a_fact_keeps_citing_what_traces_it_then_recent_days() {
        let c = |text, day| Citation { text, day };
        let mut events = vec![c("I moved to Lisbon in March.", 1)];
        events.extend((2..40).map(|d| c("as I said, moved to Lisbon", d)));
        events.push(c("unrelated small talk", 40));
        let kept = cited("I moved to Lisbon in March.", &events, 5);
        assert_eq!(kept.len(), 5);
        // The only event that names March stays, whatever its age.
        assert!(kept.contains(&0), "{kept:?}");
        // Then the newest days.
        assert_eq!(&kept[1..], &[36, 37, 38, 39]);
        // Under the limit, nothing changes.
        assert_eq!(cited("x", &events[..3], 5), vec![0, 1, 2]);
    }

    #[test]
    fn a_fact_that_needs_more_events_than_the_limit_to_trace_keeps_them_all() {
        let c = |text, day| Citation { text, day };
        let events = [
            c("alpha", 1),
            c("bravo", 2),
            c("charlie", 3),
            c("delta", 4),
            c("nothing", 5),
        ];
        assert_eq!(
            cited("alpha bravo charlie delta", &events, 3),
            vec![0, 1, 2, 3, 4]
        );
        assert_eq!(cited("alpha bravo", &events, 3), vec![0, 1, 4]);
    }

    #[test]
    fn citing_fewer_events_never_loses_a_word_the_whole_set_traces() {
        let c = |text, day| Citation { text, day };
        let mut events: Vec<Citation> = (0..30).map(|d| c("filler words only", d)).collect();
        events[3] = c("the deploy runs on Fridays", 3);
        events[17] = c("deploy goes through Jenkins", 17);
        let claim = "The deploy runs through Jenkins on Fridays.";
        let kept = cited(claim, &events, 4);
        assert!(kept.contains(&3) && kept.contains(&17), "{kept:?}");
        let texts: Vec<&str> = kept.iter().map(|&i| events[i].text).collect();
        let all: Vec<&str> = events.iter().map(|e| e.text).collect();
        assert_eq!(
            coverage(claim, texts.iter().copied()).value,
            coverage(claim, all.iter().copied()).value
        );
        assert!(invented_entities(claim, &texts).is_empty());
    }
}
