//! When two sentences, in any language, may be joined as restatements of one fact (issue
//! 44): restatements in other words are one fact, and statements that differ in a name, a
//! number, an identifier, a polarity or a rare word are not joined, whatever their
//! embedding distance says. A multilingual static embedder places "I work from Lisbon" and
//! "I work from Madrid" close together, since the two sentences mean nearly the same; this
//! check reads what the vector blurs: the components a fact hangs on.
//!
//! The rule is `scripts/agreement.py`'s, word for word (its definitions are quoted in
//! `crates/core/rules/AGREEMENT.md`); its constants come from `rules/agreement.json` and its
//! negation markers, per language, from `rules/negation.tsv`, both compiled in and parsed
//! once. No word list decides but those markers. How rare a word is comes from outside:
//! the embedder's own SentencePiece model prices it ([`PieceCost`]), so the core needs no
//! tokenizer and touches no file.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use serde::Deserialize;

/// The rule's constants (`crates/core/rules/agreement.json`, written by
/// `scripts/agreement.py`).
const AGREEMENT_JSON: &str = include_str!("../../rules/agreement.json");
/// Negation markers per language (`crates/core/rules/negation.tsv`).
const NEGATION_TSV: &str = include_str!("../../rules/negation.tsv");

#[derive(Debug, Deserialize)]
struct Constants {
    distance: f64,
    rare_cost: f64,
    swap: usize,
    scope: usize,
    unknown_piece_cost: f64,
}

/// How a negation marker is found among a sentence's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Match {
    /// A word equals the marker.
    Word,
    /// A word starts with the marker and is longer (French n'est).
    Prefix,
    /// A word holds the marker (scripts written without spaces).
    Part,
}

/// Which words a marker negates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The words after the marker's word.
    After,
    /// The words before it, and its own word (Japanese, Korean).
    Before,
}

#[derive(Debug)]
struct Marker {
    marker: String,
    found: Match,
    scope: Scope,
}

/// The constants, parsed once. The file is compiled in and a test parses it, so a broken
/// file is a broken build, found before any release.
static CONSTANTS: LazyLock<Constants> = LazyLock::new(|| {
    serde_json::from_str(AGREEMENT_JSON).expect("the compiled-in agreement.json parses")
});

/// The negation markers, parsed once (compiled in; a test parses them).
static MARKERS: LazyLock<Vec<Marker>> =
    LazyLock::new(|| parse_negation(NEGATION_TSV).expect("the compiled-in negation.tsv parses"));

/// The markers of a negation table: `lang marker match scope` rows, tab-separated, after
/// `#` comments and a header line. The language column documents; every marker applies to
/// every sentence.
fn parse_negation(tsv: &str) -> Result<Vec<Marker>, String> {
    let mut out = Vec::new();
    for (n, line) in tsv.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') || line.starts_with("lang\t") {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let [_lang, marker, found, scope] = fields[..] else {
            return Err(format!("line {}: expected 4 tab-separated fields", n + 1));
        };
        let found = match found {
            "word" => Match::Word,
            "prefix" => Match::Prefix,
            "part" => Match::Part,
            other => return Err(format!("line {}: unknown match {other:?}", n + 1)),
        };
        let scope = match scope {
            "after" => Scope::After,
            "before" => Scope::Before,
            other => return Err(format!("line {}: unknown scope {other:?}", n + 1)),
        };
        if marker.is_empty() || marker != marker.to_lowercase() {
            return Err(format!("line {}: a marker is one lower-case word", n + 1));
        }
        out.push(Marker {
            marker: marker.to_string(),
            found,
            scope,
        });
    }
    Ok(out)
}

/// The largest distance (Euclidean, between the `use-m-m2v-128` unit vectors) at which two
/// sentences with no conflicting component are one fact (`agreement.json`'s `distance`).
pub fn distance_limit() -> f64 {
    CONSTANTS.distance
}

/// What a piece the embedder's tokenizer does not know costs (`agreement.json`'s
/// `unknown_piece_cost`: the vocabulary's highest cost). An implementation of
/// [`PieceCost`] charges it for the unknown piece.
pub fn unknown_piece_cost() -> f64 {
    CONSTANTS.unknown_piece_cost
}

/// The rarity cost of one word (the sum of -score of its SentencePiece pieces), given by
/// the embedder.
pub trait PieceCost {
    fn cost(&self, word: &str) -> f64;
}

/// Which components conflict between two sentences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Conflicts {
    /// Each has a name the other lacks.
    pub name: bool,
    /// Each has a number the other lacks.
    pub number: bool,
    /// Each has an identifier (an address, a path, a host) the other lacks.
    pub ident: bool,
    /// One is negated where the other is not.
    pub polarity: bool,
    /// The two differ in one short stretch, a rare word on each side.
    pub rare: bool,
}

impl Conflicts {
    /// Whether any component conflicts.
    pub fn any(&self) -> bool {
        self.name || self.number || self.ident || self.polarity || self.rare
    }

    /// What differs, for a gate row: e.g. "a name differs", "a name and a number differ";
    /// `None` when nothing does.
    pub fn describe(&self) -> Option<String> {
        let parts: Vec<&str> = [
            (self.name, "a name"),
            (self.number, "a number"),
            (self.ident, "an identifier"),
            (self.polarity, "a negation"),
            (self.rare, "a rare word"),
        ]
        .into_iter()
        .filter_map(|(on, what)| on.then_some(what))
        .collect();
        match parts.as_slice() {
            [] => None,
            [one] => Some(format!("{one} differs")),
            [init @ .., last] => Some(format!("{} and {last} differ", init.join(", "))),
        }
    }
}

/// Which components conflict between `a` and `b` (symmetric), the rare words priced by
/// `rarity`.
pub fn conflicts(a: &str, b: &str, rarity: &dyn PieceCost) -> Conflicts {
    let (wa, wb) = (words(a), words(b));
    let (na, nb) = (names(a), names(b));
    let name = na.iter().any(|n| !has(&wb, n)) && nb.iter().any(|n| !has(&wa, n));
    let (xa, xb) = (numbers(a), numbers(b));
    let number = xa.difference(&xb).next().is_some() && xb.difference(&xa).next().is_some();
    let (ia, ib) = (idents(a), idents(b));
    let (la, lb) = (a.to_lowercase(), b.to_lowercase());
    let ident =
        ia.iter().any(|i| !lb.contains(i.as_str())) && ib.iter().any(|i| !la.contains(i.as_str()));
    let polarity = negated(&wa, &wb) != negated(&wb, &wa);
    let rare = rare(&wa, &wb, rarity);
    Conflicts {
        name,
        number,
        ident,
        polarity,
        rare,
    }
}

/// Joined: no conflict and distance <= DISTANCE ([`distance_limit`]). A distance that is
/// no number (NaN) joins nothing.
pub fn joined(a: &str, b: &str, distance: f64, rarity: &dyn PieceCost) -> bool {
    distance <= distance_limit() && !conflicts(a, b, rarity).any()
}

/// The script class of a character, as the rule reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Script {
    Han,
    Hiragana,
    Katakana,
    Hangul,
    Digit,
    Latin,
    Cyrillic,
    Greek,
    Other,
}

impl Script {
    /// Scripts written without spaces, where a shared prefix says nothing.
    fn wide(self) -> bool {
        matches!(
            self,
            Script::Han | Script::Hiragana | Script::Katakana | Script::Hangul
        )
    }
}

fn script(c: char) -> Script {
    let o = u32::from(c);
    match o {
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF => Script::Han,
        0x3040..=0x309F => Script::Hiragana,
        0x30A0..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F => Script::Katakana,
        0xAC00..=0xD7AF | 0x1100..=0x11FF | 0x3130..=0x318F => Script::Hangul,
        _ if c.is_numeric() => Script::Digit,
        0..=0x24F | 0x1E00..=0x1EFF => Script::Latin,
        0x400..=0x4FF => Script::Cyrillic,
        0x370..=0x3FF => Script::Greek,
        _ => Script::Other,
    }
}

/// A word's script: its first character's.
fn word_script(w: &str) -> Script {
    w.chars().next().map_or(Script::Other, script)
}

/// The words of a sentence: lower-cased, U+2019 read as an apostrophe, cut into runs of
/// alphanumeric characters and apostrophes, a run also cut where the script changes (an
/// apostrophe keeps the run's), apostrophes trimmed from the ends, empty words dropped.
fn words(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut class: Option<Script> = None;
    for c in s.to_lowercase().chars() {
        let c = if c == '\u{2019}' { '\'' } else { c };
        if c == '\'' {
            cur.push(c);
        } else if c.is_alphanumeric() {
            let here = Some(script(c));
            if here != class && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            cur.push(c);
            class = here;
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            class = None;
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out.into_iter()
        .map(|w| w.trim_matches('\'').to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Two words are one: equal, or of one script written with spaces and sharing a prefix of
/// at least 4 characters and 4/5 of the shorter (lisbon / lisboa, deploy / deploys).
fn same(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (sa, sb) = (word_script(a), word_script(b));
    if sa != sb || sa.wide() {
        return false;
    }
    let k = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let shorter = a.chars().count().min(b.chars().count());
    k >= 4 && k as f64 >= 0.8 * shorter as f64
}

/// Some word of `ws` is [`same`] as `w`.
fn has(ws: &[String], w: &str) -> bool {
    ws.iter().any(|x| same(w, x))
}

/// Punctuation trimmed from a token's ends before it is read as a name.
fn name_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || "“”‘’«»¡¿（）「」『』、。，！？：；".contains(c)
}

/// The names of a sentence: tokens that start upper-case (not "I") and do not open the
/// sentence, each as its first word.
fn names(s: &str) -> Vec<String> {
    let tokens: Vec<&str> = s.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let core = t.trim_matches(name_punctuation);
        if !core.chars().next().is_some_and(char::is_uppercase) || core == "I" {
            continue;
        }
        if i == 0 || tokens[i - 1].ends_with(['.', '!', '?', ':']) {
            continue;
        }
        if let Some(w) = words(core).into_iter().next() {
            out.push(w);
        }
    }
    out
}

/// Every run of ASCII or full-width digits, leading zeros dropped (kept as text: a run
/// may be longer than any integer type).
fn numbers(s: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut cur = String::new();
    for c in s.chars().chain([' ']) {
        match c {
            '0'..='9' => cur.push(c),
            '\u{FF10}'..='\u{FF19}' => {
                cur.push(char::from(b'0' + (u32::from(c) - 0xFF10) as u8));
            }
            _ if !cur.is_empty() => {
                let n = cur.trim_start_matches('0');
                out.insert(if n.is_empty() { "0" } else { n }.to_string());
                cur.clear();
            }
            _ => {}
        }
    }
    out
}

/// Tokens, trimmed of ASCII punctuation, that hold `@` or one of `. / _ - :` between two
/// ASCII alphanumerics; lower-cased.
fn idents(s: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for t in s.split_whitespace() {
        let core = t.trim_matches(|c: char| c.is_ascii_punctuation());
        let chars: Vec<char> = core.chars().collect();
        let joined = chars.windows(3).any(|w| {
            "./_-:".contains(w[1]) && w[0].is_ascii_alphanumeric() && w[2].is_ascii_alphanumeric()
        });
        if core.contains('@') || joined {
            out.insert(core.to_lowercase());
        }
    }
    out
}

/// Whether `ws` is negated with respect to `other`: a marker's scope holds a word `other`
/// has too, or, when the two share no word at all (another language), `ws` holds any
/// marker.
fn negated(ws: &[String], other: &[String]) -> bool {
    let scope = CONSTANTS.scope;
    let shared_any = ws.iter().any(|w| has(other, w));
    for (i, w) in ws.iter().enumerate() {
        for m in MARKERS.iter() {
            let hit = match m.found {
                Match::Word => *w == m.marker,
                Match::Prefix => w.starts_with(m.marker.as_str()) && *w != m.marker,
                Match::Part => w.contains(m.marker.as_str()),
            };
            if !hit {
                continue;
            }
            if !shared_any {
                return true;
            }
            let span = match m.scope {
                Scope::After => &ws[(i + 1).min(ws.len())..(i + 1 + scope).min(ws.len())],
                Scope::Before => &ws[i.saturating_sub(scope)..=i],
            };
            if span.iter().any(|x| has(other, x)) {
                return true;
            }
        }
    }
    false
}

/// The two differ in one short stretch (at most SWAP words a side, of the scripts the
/// other side uses) and that stretch holds a rare word on each side: a name typed in lower
/// case ("lisbon" / "madrid"). Digit words are never rare (numbers read them).
fn rare(wa: &[String], wb: &[String], rarity: &dyn PieceCost) -> bool {
    let swap = CONSTANTS.swap;
    let rare_cost = CONSTANTS.rare_cost;
    let scripts = |ws: &[String]| ws.iter().map(|w| word_script(w)).collect::<BTreeSet<_>>();
    let (sa, sb) = (scripts(wa), scripts(wb));
    let missing = |x: &[String], y: &[String], sy: &BTreeSet<Script>| -> Vec<String> {
        x.iter()
            .filter(|w| {
                let s = word_script(w);
                s != Script::Digit && sy.contains(&s) && !has(y, w)
            })
            .cloned()
            .collect()
    };
    let (ma, mb) = (missing(wa, wb, &sb), missing(wb, wa, &sa));
    (1..=swap).contains(&ma.len())
        && (1..=swap).contains(&mb.len())
        && ma.iter().any(|w| rarity.cost(w) >= rare_cost)
        && mb.iter().any(|w| rarity.cost(w) >= rare_cost)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A strict fake: the cost of each word a test names; any other word panics, so a test
    /// cannot pass by pricing a word it never meant to.
    struct Costs(HashMap<&'static str, f64>);

    impl Costs {
        fn new(pairs: &[(&'static str, f64)]) -> Costs {
            Costs(pairs.iter().copied().collect())
        }
    }

    impl PieceCost for Costs {
        fn cost(&self, word: &str) -> f64 {
            *self
                .0
                .get(word)
                .unwrap_or_else(|| panic!("the test priced no word {word:?}"))
        }
    }

    fn none() -> Costs {
        Costs::new(&[])
    }

    #[test]
    fn the_compiled_in_rules_parse_and_carry_the_documented_constants() {
        assert_eq!(distance_limit(), 1.08);
        assert_eq!(CONSTANTS.rare_cost, 7.0);
        assert_eq!(CONSTANTS.swap, 2);
        assert_eq!(CONSTANTS.scope, 3);
        assert!((unknown_piece_cost() - 18.833036).abs() < 1e-9);
        assert!(MARKERS.len() > 50, "{} markers", MARKERS.len());
        assert!(MARKERS
            .iter()
            .any(|m| m.marker == "not" && m.found == Match::Word && m.scope == Scope::After));
        assert!(MARKERS.iter().any(|m| m.found == Match::Prefix));
        assert!(MARKERS
            .iter()
            .any(|m| m.found == Match::Part && m.scope == Scope::Before));
    }

    #[test]
    fn a_broken_negation_table_is_refused_with_its_line() {
        let err = parse_negation("lang\tmarker\tmatch\tscope\nen\tnot\tword\n").unwrap_err();
        assert!(err.contains("line 2"), "{err}");
        let err = parse_negation("en\tnot\tglob\tafter\n").unwrap_err();
        assert!(err.contains("glob"), "{err}");
        let err = parse_negation("en\tnot\tword\taround\n").unwrap_err();
        assert!(err.contains("around"), "{err}");
        let err = parse_negation("en\tNot\tword\tafter\n").unwrap_err();
        assert!(err.contains("lower-case"), "{err}");
    }

    #[test]
    fn words_cut_at_punctuation_and_script_changes_and_keep_apostrophes_inside() {
        assert_eq!(
            words("I’m based in Lisbon."),
            ["i'm", "based", "in", "lisbon"]
        );
        assert_eq!(words("'quoted' l'été"), ["quoted", "l'été"]);
        assert_eq!(
            words("東京に住んでいます"),
            ["東京", "に", "住", "んでいます"]
        );
        assert_eq!(words("v2 release"), ["v", "2", "release"]);
        assert_eq!(words("ПРИВЕТ мир"), ["привет", "мир"]);
        assert!(words(" ... ").is_empty());
    }

    #[test]
    fn words_of_one_stem_are_one_but_short_or_other_script_words_are_not() {
        assert!(same("lisbon", "lisboa"));
        assert!(same("deploy", "deploys"));
        assert!(!same("tom", "sam"));
        assert!(!same("lisbon", "lis"));
        assert!(!same("東京都", "東京駅"), "Han shares no prefix meaning");
    }

    #[test]
    fn names_skip_the_sentence_opener_and_i() {
        assert_eq!(names("I work from Lisbon."), ["lisbon"]);
        assert_eq!(
            names("Lisbon is home. Madrid is not."),
            Vec::<String>::new()
        );
        assert_eq!(names("we met «Ana» and “Rui”"), ["ana", "rui"]);
    }

    #[test]
    fn numbers_read_ascii_and_full_width_digits_without_leading_zeros() {
        let n = numbers("port 0080, room ４２ and 99999999999999999999999");
        assert_eq!(
            n.into_iter().collect::<Vec<_>>(),
            ["42", "80", "99999999999999999999999"]
        );
    }

    #[test]
    fn identifiers_are_addresses_paths_and_dotted_names() {
        let i = idents("mail ana@example.org, host db-01.internal; path /etc/hosts. a - b");
        assert_eq!(
            i.into_iter().collect::<Vec<_>>(),
            ["ana@example.org", "db-01.internal", "etc/hosts"]
        );
    }

    #[test]
    fn a_different_name_number_or_identifier_conflicts() {
        let cities = Costs::new(&[("lisbon", 12.0), ("madrid", 11.0)]);
        let c = conflicts("I work from Lisbon.", "I work from Madrid.", &cities);
        assert!(c.name && c.rare && !c.number && !c.polarity, "{c:?}");
        let c = conflicts(
            "The meeting is at 10 on Friday.",
            "The meeting is at 11 on Friday.",
            &none(),
        );
        assert!(c.number && !c.name, "{c:?}");
        let c = conflicts(
            "Deploy goes to db-01.internal now.",
            "Deploy goes to db-02.internal now.",
            &none(),
        );
        assert!(c.ident && c.number, "{c:?}");
        assert_eq!(
            c.describe().as_deref(),
            Some("a number and an identifier differ")
        );
    }

    #[test]
    fn one_side_saying_more_is_no_conflict() {
        let c = conflicts(
            "I work from Lisbon.",
            "I work from Lisbon with Ana.",
            &none(),
        );
        assert_eq!(c, Conflicts::default(), "only b has a name a lacks");
        assert_eq!(c.describe(), None);
    }

    #[test]
    fn a_negation_near_a_shared_word_flips_polarity() {
        let c = conflicts("I drink coffee.", "I do not drink coffee.", &none());
        assert!(c.polarity, "{c:?}");
        let rarity = Costs::new(&[("don't", 5.0), ("never", 4.0)]);
        let c = conflicts("I don't drink coffee.", "I never drink coffee.", &rarity);
        assert!(!c.polarity, "both negated: {c:?}");
        // Another language: no shared word, so any marker negates.
        let c = conflicts("I drink coffee.", "No bebo café.", &none());
        assert!(c.polarity, "{c:?}");
        assert_eq!(c.describe().as_deref(), Some("a negation differs"));
    }

    #[test]
    fn a_swapped_rare_word_conflicts_and_a_common_one_does_not() {
        let rarity = Costs::new(&[("lisbon", 12.0), ("madrid", 11.0)]);
        let c = conflicts("i work from lisbon", "i work from madrid", &rarity);
        assert!(c.rare && !c.name, "{c:?}");
        assert_eq!(c.describe().as_deref(), Some("a rare word differs"));
        let rarity = Costs::new(&[("home", 3.0), ("office", 4.0)]);
        let c = conflicts("i work from home", "i work from office", &rarity);
        assert!(!c.rare, "{c:?}");
        // More than SWAP words differ a side: a paraphrase, not read (and not priced).
        let c = conflicts("i work from lisbon", "my job is done in madrid", &none());
        assert!(!c.rare, "{c:?}");
    }

    #[test]
    fn joined_needs_no_conflict_and_a_near_distance() {
        let rarity = Costs::new(&[("lisbon", 12.0), ("madrid", 11.0)]);
        let (a, b) = ("I work from Lisbon.", "I'm based in Lisbon.");
        assert!(!conflicts(a, b, &rarity).any());
        assert!(joined(a, b, 0.63, &rarity));
        assert!(!joined(a, b, 1.2, &rarity));
        assert!(!joined(a, b, f64::NAN, &rarity));
        assert!(!joined(
            "I work from Lisbon.",
            "I work from Madrid.",
            0.2,
            &rarity
        ));
    }

    #[test]
    fn describe_lists_every_component_that_differs() {
        let all = Conflicts {
            name: true,
            number: true,
            ident: true,
            polarity: true,
            rare: true,
        };
        assert!(all.any());
        assert_eq!(
            all.describe().as_deref(),
            Some("a name, a number, an identifier, a negation and a rare word differ")
        );
        assert!(!Conflicts::default().any());
    }
}
