//! The wording of a memory line: a proposed text made to fit on one fact line, an excerpt
//! for a report or a card, an episode's text without the day it opens with, a speaker's
//! name before what they said, and whether a line is a verbatim span of the statements it
//! cites.

static EPISODE_DAY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"^\d{1,2} [A-Z][a-z]+ \d{4}(?:: |, )").expect("a valid pattern")
});

/// An episode's text without the day it starts with ("8 May 2023: I sold my bike." is "I
/// sold my bike."; "8 May 2023, Ana: I sold my bike." is "Ana: I sold my bike."). Any other
/// text is itself. Restatements are compared by what they say, not by when.
pub fn episode_body(text: &str) -> &str {
    if !text.starts_with(|c: char| c.is_ascii_digit()) {
        return text;
    }
    match EPISODE_DAY.find(text) {
        Some(m) => &text[m.end()..],
        None => text,
    }
}

/// Whether the words before a line's first `": "` name its speaker ("Ana: I sold my
/// bike."): one to three capitalised words of letters (a hyphen or an apostrophe inside).
/// Episodes write a speaker so (`memory::episodes::text`), and what reads a line's words
/// (`recall::context::vector_text`, `selection::keep::statement`) leaves one out.
pub fn is_speaker_name(s: &str) -> bool {
    let words: Vec<&str> = s.split(' ').collect();
    (1..=3).contains(&words.len())
        && words.iter().all(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && w.chars()
                    .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
        })
}

/// Whether a memory line is a verbatim span of one of `sources` (the owner's statements
/// it cites): its words, letter case, identifiers and punctuation exactly as written, once
/// the day an episode opens with, a speaker's name (`Caroline: `), the days written beside
/// relative dates (`yesterday [7 May 2023]`) and runs of white space (a wrapped line) are
/// set aside. What the offline path writes must pass; a model's paraphrase need not.
pub fn is_verbatim(line: &str, speaker: Option<&str>, sources: &[&str]) -> bool {
    static BRACKETED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r" \[[^\[\]]*\d{4}[^\[\]]*\]").expect("a valid pattern")
    });
    let body = episode_body(line);
    let body = match speaker {
        Some(s) if !s.is_empty() => body.strip_prefix(&format!("{s}: ")).unwrap_or(body),
        _ => body,
    };
    let body = BRACKETED.replace_all(body, "");
    let squeeze = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let want = squeeze(&body);
    !want.is_empty() && sources.iter().any(|s| squeeze(s).contains(&want))
}

/// Make a proposed text fit on one fact line: white space collapsed, no comment markers.
pub fn one_line(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.replace("<!--", "<! --").replace("-->", "-- >")
}

/// A single-line excerpt of at most `max` characters.
pub fn excerpt(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}
