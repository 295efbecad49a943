//! Evidence knows when: relative dates ("yesterday", "last week", "next month") read
//! against the day an event was written, and written out as absolute ones ("on 7 May
//! 2023", "the week before 8 May 2023", "in June 2023"), so that memory never says
//! "yesterday" and a date in a fact can be traced to the event that implied it.
//!
//! The rule, phrase by phrase (`d` is the day the event was written):
//!
//! | phrase | written as |
//! |---|---|
//! | today, tonight, this morning/afternoon/evening | on `d` |
//! | yesterday, last night | on `d - 1` |
//! | the day before yesterday | on `d - 2` |
//! | tomorrow | on `d + 1` |
//! | N days ago (N a number or a word up to twelve) | on `d - N` |
//! | last / next Monday..Sunday | on that weekday, the last one before `d` / the first after |
//! | last week, this past week | the week before `d` |
//! | this week, next week | the week of `d`, the week after `d` |
//! | last weekend, this past weekend, this weekend, next weekend | the weekend before / of / after `d` |
//! | N weeks ago | the week of `d - 7N` |
//! | last month, this month, next month, N months ago | in that month and year |
//! | last year, this year, next year, N years ago | in that year |
//!
//! Vague words ("recently", "the other day", "soon") are not dates and stay as they are.
//! A day is written `7 May 2023`, the form [`day`] gives. Pure functions, no clock.

use std::sync::LazyLock;

use chrono::{Datelike, Duration, NaiveDate, Weekday};
use regex::Regex;

/// A day as memory writes it: `7 May 2023`.
pub fn day(d: NaiveDate) -> String {
    d.format("%-d %B %Y").to_string()
}

const NUMBER_WORDS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
];

fn number(word: &str) -> Option<i64> {
    let w = word.to_ascii_lowercase();
    if w == "a" || w == "an" {
        return Some(1);
    }
    if let Some(i) = NUMBER_WORDS.iter().position(|n| *n == w) {
        return Some(i as i64);
    }
    w.parse::<i64>().ok().filter(|n| (1..=100).contains(n))
}

fn weekday(word: &str) -> Option<Weekday> {
    // chrono reads full names and three-letter ones; "tues", "thur", "thurs" too.
    let w = word.to_ascii_lowercase();
    w.get(..3).unwrap_or(&w).parse().ok()
}

static PHRASE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)\b(?:
            (?P<dbefore>the\ day\ before\ yesterday)
          | (?P<yesterday>yesterday|last\ night)
          | (?P<today>today|tonight|this\ (?:morning|afternoon|evening))
          | (?P<tomorrow>tomorrow)
          | (?P<n>\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\ (?P<unit>days?|weeks?|months?|years?)\ ago
          | (?P<wdrel>last|next)\ (?P<wd>mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|urday|rsday)?
          | (?P<weekend>last|this\ past|this|next)\ weekend
          | (?P<week>last|this\ past|this|next)\ week
          | (?P<period>last|this|next)\ (?P<punit>month|year)
        )\b",
    )
    .expect("a valid pattern")
});

/// A relative date found in a text: where it is, and how it is written out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relative {
    pub start: usize,
    pub end: usize,
    /// The phrase in a canonical form ("last friday" for "last Fri"), to tell whether two
    /// texts say the same relative date.
    pub key: String,
    /// The absolute form, with its preposition: "on 7 May 2023", "the week before 8 May
    /// 2023", "in June 2023".
    pub absolute: String,
}

fn month(y: i32, m: i64) -> String {
    // m counts from 0 = January of year y, and may run past either end.
    let total = y as i64 * 12 + m;
    let (yy, mm) = (total.div_euclid(12), total.rem_euclid(12) as u32 + 1);
    let d = NaiveDate::from_ymd_opt(yy as i32, mm, 1).unwrap_or(NaiveDate::MIN);
    format!("in {}", d.format("%B %Y"))
}

/// Every relative date in `text`, read against `said`, in order.
pub fn relatives(text: &str, said: NaiveDate) -> Vec<Relative> {
    let on = |d: Option<NaiveDate>| d.map(|d| format!("on {}", day(d)));
    let mut out = Vec::new();
    for c in PHRASE.captures_iter(text) {
        let m = c.get(0).expect("a match");
        if idiom(text, m.start(), m.as_str()) {
            continue;
        }
        let absolute = if c.name("dbefore").is_some() {
            on(said.checked_sub_signed(Duration::days(2)))
        } else if c.name("yesterday").is_some() {
            on(said.pred_opt())
        } else if c.name("today").is_some() {
            on(Some(said))
        } else if c.name("tomorrow").is_some() {
            on(said.succ_opt())
        } else if let (Some(n), Some(unit)) = (c.name("n"), c.name("unit")) {
            number(n.as_str()).and_then(|n| {
                let u = unit.as_str().to_ascii_lowercase();
                if u.starts_with("day") {
                    on(said.checked_sub_signed(Duration::days(n)))
                } else if u.starts_with("week") {
                    said.checked_sub_signed(Duration::days(7 * n))
                        .map(|d| format!("the week of {}", day(d)))
                } else if u.starts_with("month") {
                    Some(month(said.year(), said.month0() as i64 - n))
                } else {
                    Some(format!("in {}", said.year() as i64 - n))
                }
            })
        } else if let (Some(rel), Some(wd)) = (c.name("wdrel"), c.name("wd")) {
            weekday(wd.as_str()).map(|wd| {
                let today = said.weekday().num_days_from_monday() as i64;
                let target = wd.num_days_from_monday() as i64;
                let d = if rel.as_str().eq_ignore_ascii_case("last") {
                    let back = (today - target).rem_euclid(7);
                    said - Duration::days(if back == 0 { 7 } else { back })
                } else {
                    let ahead = (target - today).rem_euclid(7);
                    said + Duration::days(if ahead == 0 { 7 } else { ahead })
                };
                format!("on {} {}", wd_name(wd), day(d))
            })
        } else if let Some(which) = c.name("weekend") {
            Some(format!(
                "the weekend {} {}",
                side(which.as_str()),
                day(said)
            ))
        } else if let Some(which) = c.name("week") {
            Some(format!("the week {} {}", side(which.as_str()), day(said)))
        } else if let (Some(which), Some(unit)) = (c.name("period"), c.name("punit")) {
            let shift = match which.as_str().to_ascii_lowercase().as_str() {
                "last" => -1,
                "next" => 1,
                _ => 0,
            };
            if unit.as_str().eq_ignore_ascii_case("month") {
                Some(month(said.year(), said.month0() as i64 + shift))
            } else {
                Some(format!("in {}", said.year() as i64 + shift))
            }
        } else {
            None
        };
        if let Some(absolute) = absolute {
            out.push(Relative {
                start: m.start(),
                end: m.end(),
                key: key_of(&c),
                absolute,
            });
        }
    }
    out
}

/// The canonical form of a matched phrase: lower case, a weekday by its full name, "last
/// night" as "yesterday", "this past" as "last".
fn key_of(c: &regex::Captures<'_>) -> String {
    if let (Some(rel), Some(wd)) = (c.name("wdrel"), c.name("wd")) {
        if let Some(w) = weekday(wd.as_str()) {
            return format!(
                "{} {}",
                rel.as_str().to_ascii_lowercase(),
                wd_name(w).to_ascii_lowercase()
            );
        }
    }
    let k = c[0]
        .to_ascii_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match k.as_str() {
        "last night" => "yesterday".into(),
        _ => k.replace("this past", "last"),
    }
}

fn side(which: &str) -> &'static str {
    match which.to_ascii_lowercase().as_str() {
        "last" | "this past" => "before",
        "next" => "after",
        _ => "of",
    }
}

fn wd_name(wd: Weekday) -> &'static str {
    match wd {
        Weekday::Mon => "Monday",
        Weekday::Tue => "Tuesday",
        Weekday::Wed => "Wednesday",
        Weekday::Thu => "Thursday",
        Weekday::Fri => "Friday",
        Weekday::Sat => "Saturday",
        Weekday::Sun => "Sunday",
    }
}

/// `text` with the day each relative date names written beside it, in brackets:
/// "I went there yesterday [7 May 2023]". The person's words stay as they were.
pub fn rewrite(text: &str, said: NaiveDate) -> String {
    rewrite_with(text, &relatives(text, said))
}

/// `text` with the given relative dates (found in it) annotated: each phrase is kept and
/// followed by its absolute form in brackets, without the preposition ("on", "in") the
/// absolute form carries, since the phrase already places it.
pub fn rewrite_with(text: &str, found: &[Relative]) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut at = 0;
    for r in found {
        if r.start < at {
            continue;
        }
        // The bracket goes after the whole word: "Tomorrow's" stays one word.
        let mut end = r.end;
        for clitic in ["'s", "\u{2019}s", "'ll", "\u{2019}ll"] {
            if text[end..].starts_with(clitic) {
                end += clitic.len();
                break;
            }
        }
        out.push_str(&text[at..end]);
        let mut absolute = r.absolute.as_str();
        for p in ["on ", "in "] {
            if let Some(rest) = absolute.strip_prefix(p) {
                absolute = rest;
            }
        }
        out.push_str(" [");
        out.push_str(absolute);
        out.push(']');
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// Words before "today", "tomorrow" or "yesterday" that make it a noun rather than a
/// day ("like there's no tomorrow", "a better tomorrow", "the today show").
const NOT_A_DAY_BEFORE: &[&str] = &[
    "no", "a", "an", "the", "every", "any", "another", "each", "better", "brighter", "bright",
];

/// Whether the phrase at `start` is used as a noun, not as a day.
fn idiom(text: &str, start: usize, phrase: &str) -> bool {
    let p = phrase.to_ascii_lowercase();
    if !matches!(p.as_str(), "today" | "tomorrow" | "yesterday") {
        return false;
    }
    let before = text[..start]
        .trim_end()
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '\''))
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    NOT_A_DAY_BEFORE.contains(&before.as_str())
}

/// The words that say when an event was written and which days its relative dates name:
/// its day in the forms a fact may use (`Monday 8 May 2023`, `May 8, 2023`, `2023-05-08`),
/// then the absolute form of each relative date in its text. A fact citing the event may
/// use any of them.
pub fn words(text: &str, said: NaiveDate) -> String {
    let mut out = format!(
        "{} {} {} {}",
        wd_name(said.weekday()),
        day(said),
        said.format("%B %-d, %Y"),
        said.format("%Y-%m-%d")
    );
    for r in relatives(text, said) {
        out.push_str(". ");
        out.push_str(&r.absolute);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn relative_dates_are_annotated_beside_the_words_that_say_them() {
        // 8 May 2023 was a Monday.
        let said = d("2023-05-08");
        let table = [
            (
                "I went to a support group yesterday.",
                "I went to a support group yesterday [7 May 2023].",
            ),
            (
                "Last week, my grandma passed away.",
                "Last week [the week before 8 May 2023], my grandma passed away.",
            ),
            (
                "I ran a charity race last Saturday.",
                "I ran a charity race last Saturday [Saturday 6 May 2023].",
            ),
            (
                "I'm hoping to attend a conference next month.",
                "I'm hoping to attend a conference next month [June 2023].",
            ),
            (
                "A friend made it for my 18th birthday ten years ago.",
                "A friend made it for my 18th birthday ten years ago [2013].",
            ),
            (
                "I'll be busy until tomorrow.",
                "I'll be busy until tomorrow [9 May 2023].",
            ),
            ("I recently joined.", "I recently joined."),
            (
                "Tomorrow's gonna be an awesome night.",
                "Tomorrow's [9 May 2023] gonna be an awesome night.",
            ),
            // Not a day: an idiom keeps its words, with nothing added.
            (
                "id be drinking like theres no tomorrow",
                "id be drinking like theres no tomorrow",
            ),
            (
                "we all want a better tomorrow",
                "we all want a better tomorrow",
            ),
        ];
        for (input, want) in table {
            assert_eq!(rewrite(input, said), want, "{input}");
        }
        // January minus a month is December of the year before.
        assert_eq!(
            rewrite("Last month was hard.", d("2023-01-10")),
            "Last month [December 2022] was hard."
        );
    }

    #[test]
    fn the_words_of_a_day_hold_every_form_a_fact_may_use() {
        let w = words("I went there yesterday.", d("2023-05-08"));
        for needle in [
            "Monday",
            "8 May 2023",
            "May 8, 2023",
            "2023-05-08",
            "on 7 May 2023",
        ] {
            assert!(w.contains(needle), "{needle} in {w}");
        }
    }
}
