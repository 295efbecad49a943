//! Which language a statement is written in, as far as dream's rules need to know. The
//! phrase rules (`phrases`), the stop words and the salience model (trained on English
//! conversation and coding sessions) read English only: a statement in another language
//! ("mi hermana llega el 20 de diciembre desde Madrid", "aaj Mumbai mein bahut baarish ho
//! rahi hai") gets a score from its names, numbers and length alone, which says nothing of
//! its worth. Such a statement is not judged, so not kept, and the refusal says so.
//!
//! Two signals must agree, so an English sentence full of names is never taken for
//! another language: few of its words are English function words (a share below
//! [`ENGLISH_SHARE`]; English prose rarely falls under it), and `whatlang`'s trigram model
//! (a published, maintained detector) names another language for it, and is sure of it
//! against English alone. Four words or fewer tell too little to judge by, and a command, a log line or
//! code (fewer than seven in ten of its tokens words) is not prose in any language.

use crate::text::measures;

/// Below this share of English function words ("the", "my", "is", "to", ...), a statement
/// of five words or more may be in another language.
pub const ENGLISH_SHARE: f64 = 0.2;

/// English as chat spells it, beside the stop words: a line of it may hold no stop word
/// at all ("ur arms r getting big ngl").
const CHAT_ENGLISH: &[&str] = &[
    "u", "ur", "r", "n", "ya", "yea", "yeah", "yep", "nope", "gonna", "wanna", "gotta", "lol",
    "lmao", "omg", "ngl", "tbh", "idk", "imo", "btw", "rn", "tho", "cuz", "coz", "pls", "plz",
    "thx", "im", "ive", "dont", "cant", "wont", "didnt", "isnt", "thats", "whats", "ok", "okay",
];

/// The language a statement is written in when it is not English and both signals say so
/// (its English name, as `whatlang` gives it); `None` when it is English or too short to
/// tell.
pub fn not_english(statement: &str) -> Option<&'static str> {
    let normalized = measures::normalize(statement);
    let words: Vec<&str> = normalized
        .split_whitespace()
        .filter(|w| w.chars().all(char::is_alphabetic))
        .collect();
    if words.len() < 5 {
        return None;
    }
    let english = words
        .iter()
        .filter(|w| measures::is_stopword(w) || CHAT_ENGLISH.contains(w))
        .count();
    let share = english as f64 / words.len() as f64;
    if share >= ENGLISH_SHARE {
        return None;
    }
    // Prose, not a command, a log line or code: no brace, semicolon, equals sign, angle
    // bracket or backtick, and most of what stands between its spaces is a word.
    if statement.contains(['{', '}', ';', '=', '<', '>', '`']) {
        return None;
    }
    let tokens: Vec<&str> = statement.split_whitespace().collect();
    let prose = tokens
        .iter()
        .filter(|t| {
            let w = t.trim_matches(|c: char| !c.is_alphanumeric());
            !w.is_empty() && w.chars().all(char::is_alphabetic)
        })
        .count();
    if prose < 5 || prose * 10 < tokens.len() * 7 {
        return None;
    }
    let found = whatlang::detect_lang(statement)?;
    if found == whatlang::Lang::Eng {
        return None;
    }
    // What matters is "not English", not which language: the detector's confidence in its
    // best language against English alone (Spanish against Portuguese is a close call,
    // Spanish against English is not).
    let versus =
        whatlang::Detector::with_allowlist(vec![whatlang::Lang::Eng, found]).detect(statement)?;
    let sure = versus.is_reliable() || (english == 0 && prose >= 6);
    (versus.lang() == found && sure).then(|| found.eng_name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_language_is_told_and_english_full_of_names_is_not() {
        for s in [
            "mi hermana llega el 20 de diciembre desde Madrid",
            "tengo 2 exámenes esta semana, qué estrés",
            "aaj Mumbai mein bahut baarish ho rahi hai",
            "Ich ziehe im März mit meiner Freundin nach Hamburg",
            "je commence mon nouveau travail à Lyon lundi prochain",
            "mere papa ka birthday 12 ko hai yaar",
            "jajaja sí, mañana a las 8 en el café de siempre",
            "Me mudo a Porto en marzo con mi novia y nuestros dos gatos.",
        ] {
            assert!(not_english(s).is_some(), "{s}");
        }
        for s in [
            "I got placed at Infosys in Pune, joining on 15 July",
            "Emma Watson, she's a big supporter of gender equality.",
            "we use postgres 16 in prod, not mysql",
            "Jon: Lost my job as a banker yesterday, so I'm gonna start my own business.",
            "Arsenal vs Spurs",
            "60 g Plain Yogurt",
            "Tai Lung vs Goku, surely Goku would win",
            "dont mock the database in integration tests, use the docker compose postgres",
            "Brave by Sara Bareilles always gets me going",
            "ur arms r getting big ngl",
            "onUpdateTodo: (id: string, text: string) => void;",
            "drwxr-xr-x  7 kaito staff  224  9  3 09:58 components",
        ] {
            assert_eq!(not_english(s), None, "{s}");
        }
    }

    #[test]
    fn hostile_text_is_read_without_a_panic_and_english_stays_english() {
        let long = "I moved to Lisbon with my partner and two cats. ".repeat(5_000);
        for s in [
            "",
            "🎉🎉🎉 🙌 🥹",
            "\u{202e}I live in Lisbon\u{202c} with my partner and our cat",
            "I\u{200b} live\u{200b} in\u{200b} Lisbon\u{200b} with\u{200b} my partner",
            "\u{0}\u{1}\u{7f} \u{fffd}\u{fffd}",
            long.as_str(),
        ] {
            assert_eq!(
                not_english(s),
                None,
                "{:?}",
                s.chars().take(40).collect::<String>()
            );
        }
        // Another script, long and mixed with emoji, is still told.
        assert!(not_english("Я переезжаю в Москву в марте вместе с моей семьёй 🎉").is_some());
    }
}
