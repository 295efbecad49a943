//! The digest page's pure half (SPEC S1, S3): what `digests/<date>-<cycle>.md` lists
//! and how it reads. [`dates_in`] reads dates out of a commitment's text,
//! [`due_commitments`] picks the near ones, [`Digest::render`] writes the page with no
//! clock time (an unchanged day renders the same bytes). `dream`'s digest stage gathers
//! the [`Digest`] from the repository and the state.

use std::fmt::Write as _;
use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc, Weekday};
use regex::Regex;
use serde_json::Value;

use crate::schema::{excerpt, Block, Card, Memory};

/// Folder of digests, relative to the repo root.
pub const DIR: &str = "digests";
/// Folder of inert skill drafts (SPEC S10), relative to the repo root.
pub use crate::skills::DRAFTS_DIR;
/// The category whose facts carry dates worth a reminder.
pub const COMMITMENTS: &str = "commitments";

/// Items listed per section at most; the rest are counted.
pub const MAX_CARDS: usize = 25;
pub const MAX_QUARANTINE: usize = 20;
const MAX_DECISIONS: usize = 10;
const MAX_LATER: usize = 5;

/// The digest's path for a day and a cycle kind.
pub fn path(day: NaiveDate, kind: &str) -> String {
    format!("{DIR}/{day}-{kind}.md")
}

/// One pending card as the digest shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CardLine {
    pub id: String,
    pub created: NaiveDate,
    pub text: String,
    pub place: String,
    pub reason: String,
    /// The fact it would supersede, and that fact's text.
    pub supersedes: Option<(String, String)>,
}

impl CardLine {
    pub fn from_card(c: &Card) -> CardLine {
        CardLine {
            id: c.id.clone(),
            created: c.created.date_naive(),
            text: c.text.clone(),
            place: format!("{}/{}", c.block.as_str(), c.category),
            reason: c.reason.clone(),
            supersedes: c
                .supersedes
                .clone()
                .map(|id| (id, c.supersedes_text.clone().unwrap_or_default())),
        }
    }
}

/// A commitment with the date read from its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Due {
    pub date: NaiveDate,
    /// Days from today (negative: passed).
    pub days: i64,
    pub fact_id: String,
    pub block: Block,
    pub text: String,
}

/// A skill draft awaiting `dream skills promote`.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    pub slug: String,
    pub description: String,
    pub path: String,
}

/// What a finished cycle did, read back from its stored report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CycleSummary {
    pub id: String,
    pub now: DateTime<Utc>,
    pub proposed: u64,
    pub promoted: u64,
    pub episodes: u64,
    pub queued: u64,
    pub reinforced: u64,
    pub refused: u64,
    pub tokens_spent: u64,
    pub tokens_cap: u64,
    pub calls: u64,
    pub calls_not_started: u64,
    pub pending_clusters: u64,
    pub commits: u64,
    /// (stage, reason)
    pub degraded: Vec<(String, String)>,
    /// (route, text, reason) of each decision.
    pub decisions: Vec<(String, String, String)>,
}

impl CycleSummary {
    /// Read a cycle report (`report::Report` as JSON); missing fields read as zero.
    pub fn from_report(id: &str, now: DateTime<Utc>, r: &Value) -> CycleSummary {
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
        CycleSummary {
            id: id.to_string(),
            now,
            proposed: n(&r["candidates"]["proposed"]),
            promoted: n(&r["candidates"]["promoted"]),
            queued: n(&r["candidates"]["queued"]),
            reinforced: n(&r["candidates"]["reinforced"]),
            episodes: n(&r["candidates"]["episodes"]),
            refused: n(&r["candidates"]["refused"]),
            tokens_spent: n(&r["tokens"]["spent"]),
            tokens_cap: n(&r["tokens"]["cap"]),
            calls: n(&r["tokens"]["calls"]),
            calls_not_started: n(&r["tokens"]["refused_calls"]),
            pending_clusters: n(&r["window"]["pending"]),
            commits: list(&r["commits"]).len() as u64,
            degraded: list(&r["degraded"])
                .iter()
                .map(|d| (s(&d["stage"]), s(&d["reason"])))
                .collect(),
            decisions: list(&r["decisions"])
                .iter()
                .map(|d| (s(&d["route"]), s(&d["text"]), s(&d["reason"])))
                .collect(),
        }
    }
}

/// A quarantined input line.
#[derive(Debug, Clone, PartialEq)]
pub struct QuarantineLine {
    pub file: String,
    pub line: u64,
    pub reason: String,
    pub excerpt: String,
    pub day: NaiveDate,
}

/// Everything the page shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Digest {
    pub date: NaiveDate,
    /// The kind of the cycle writing it (`morning`, `evening`).
    pub kind: String,
    pub contradictions: Vec<CardLine>,
    /// Other pending cards, best first (`keep::card_rank`: the most salient, then the
    /// oldest; at most [`MAX_CARDS`]).
    pub cards: Vec<CardLine>,
    /// Every pending card, contradictions included.
    pub cards_total: usize,
    /// Cards waiting for room in the review queue (`review.max_new_cards`): queued best
    /// first as decisions make room; nothing to do about them yet.
    pub cards_waiting: usize,
    /// Commitments dated within the horizon, soonest first (passed ones first).
    pub commitments: Vec<Due>,
    /// Commitments dated beyond the horizon (the first few).
    pub later: Vec<Due>,
    pub horizon_days: u32,
    pub drafts: Vec<Draft>,
    /// The last evening cycle (or this one, when this is an evening digest).
    pub last_evening: Option<CycleSummary>,
    pub quarantine: Vec<QuarantineLine>,
    pub quarantine_recent: u64,
    pub quarantine_total: u64,
    pub quarantine_days: u32,
    /// Events of the window that arrived after the last evening cycle and wait for the next
    /// one (zero in an evening digest).
    pub waiting_events: u64,
    /// The heartbeat's warnings on the digest's day (see `heartbeat`), listed first.
    pub warnings: Vec<crate::operations::heartbeat::Warning>,
    /// Inbox entries this cycle could not read (`path: why`): a symbolic link, a FIFO, a
    /// file it may not open. The other files were read.
    pub not_read: Vec<String>,
}

/// A `key: value` of a `---` front matter (quotes around the value removed).
pub fn front_matter_field(text: &str, key: &str) -> Option<String> {
    let mut lines = text.lines();
    if lines.next()?.trim() != "---" {
        return None;
    }
    for line in lines {
        if line.trim() == "---" {
            break;
        }
        if let Some(v) = line.strip_prefix(key).and_then(|r| r.strip_prefix(':')) {
            let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
            return Some(v.to_string());
        }
    }
    None
}

/// The rule, in the words the digest prints.
pub const DATE_RULE: &str = "Dates are read from the text of `commitments` facts: ISO dates \
(2026-12-03) and a month name with a day (December 3, Dec 3rd, 3 December 2026). A date without \
a year is its first occurrence on or after the day the fact was first seen; `today`, `tonight`, \
`tomorrow` and weekday names (`on Friday`, `next Friday`: the first Friday after that day) count \
from that day too. Numeric dates such as 12/03 are ambiguous and not read. A commitment is listed \
when its earliest date not long past falls within the horizon (`digest.horizon_days`) before or \
after today.";

const MONTHS: &str = r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?";

static ISO_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(\d{4})-(\d{2})-(\d{2})\b").expect("iso date pattern"));
static MONTH_DAY_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b({MONTHS})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}})\b)?"
    ))
    .expect("month-day pattern")
});
static DAY_MONTH_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({MONTHS})\b\.?(?:,?\s+(\d{{4}})\b)?"
    ))
    .expect("day-month pattern")
});
static RELATIVE_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(today|tonight|tomorrow|(?:on|this|next|by|until|before)\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
    )
    .expect("relative date pattern")
});

fn month_number(word: &str) -> Option<u32> {
    let w = word.to_ascii_lowercase();
    let names = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    names
        .iter()
        .position(|n| w.starts_with(n))
        .map(|i| i as u32 + 1)
}

fn weekday(word: &str) -> Option<Weekday> {
    word.to_ascii_lowercase().parse().ok()
}

/// The first `month`/`day` on or after `said` (within four years, for February 29).
fn next_occurrence(month: u32, day: u32, said: NaiveDate) -> Option<NaiveDate> {
    (said.year()..said.year() + 5)
        .filter_map(|y| NaiveDate::from_ymd_opt(y, month, day))
        .find(|d| *d >= said)
}

fn month_day(month: &str, day: &str, year: Option<&str>, said: NaiveDate) -> Option<NaiveDate> {
    // "may" is a verb far more often than a month unless it is written as a name.
    if month == "may" {
        return None;
    }
    let m = month_number(month)?;
    let d: u32 = day.parse().ok()?;
    match year.and_then(|y| y.parse::<i32>().ok()) {
        Some(y) => NaiveDate::from_ymd_opt(y, m, d),
        None => next_occurrence(m, d, said),
    }
}

/// Every date written in `text`, read relative to `said` (the day the text was first said),
/// in order of appearance, without repeats. See [`DATE_RULE`].
pub fn dates_in(text: &str, said: NaiveDate) -> Vec<(usize, NaiveDate)> {
    let mut found: Vec<(usize, NaiveDate)> = Vec::new();
    for c in ISO_RE.captures_iter(text) {
        let n = |i: usize| c[i].parse::<u32>().ok();
        if let (Ok(y), Some(m), Some(d)) = (c[1].parse::<i32>(), n(2), n(3)) {
            if let Some(date) = NaiveDate::from_ymd_opt(y, m, d) {
                found.push((c.get(0).map_or(0, |m| m.start()), date));
            }
        }
    }
    for c in MONTH_DAY_RE.captures_iter(text) {
        if let Some(date) = month_day(&c[1], &c[2], c.get(3).map(|m| m.as_str()), said) {
            found.push((c.get(0).map_or(0, |m| m.start()), date));
        }
    }
    for c in DAY_MONTH_RE.captures_iter(text) {
        if let Some(date) = month_day(&c[2], &c[1], c.get(3).map(|m| m.as_str()), said) {
            found.push((c.get(0).map_or(0, |m| m.start()), date));
        }
    }
    for c in RELATIVE_RE.captures_iter(text) {
        let at = c.get(0).map_or(0, |m| m.start());
        let date = match c[1].to_ascii_lowercase().as_str() {
            "today" | "tonight" => Some(said),
            "tomorrow" => said.succ_opt(),
            _ => c.get(2).and_then(|w| weekday(w.as_str())).map(|wd| {
                let ahead = (7 + wd.num_days_from_monday() as i64
                    - said.weekday().num_days_from_monday() as i64)
                    % 7;
                said + Duration::days(if ahead == 0 { 7 } else { ahead })
            }),
        };
        if let Some(d) = date {
            found.push((at, d));
        }
    }
    found.sort();
    let mut seen = Vec::new();
    found.retain(|(_, d)| {
        if seen.contains(d) {
            false
        } else {
            seen.push(*d);
            true
        }
    });
    found
}

/// Active `commitments` facts with a date near `today` (within `horizon` days before or
/// after, soonest first) and those dated later (soonest first, the first few). A fact's
/// date is the earliest date in its text that is not more than `horizon` days past.
pub fn due_commitments(memory: &Memory, today: NaiveDate, horizon: u32) -> (Vec<Due>, Vec<Due>) {
    let horizon = i64::from(horizon);
    let mut near = Vec::new();
    let mut later = Vec::new();
    for (block, f) in memory.facts() {
        if f.category != COMMITMENTS || f.id.is_empty() || f.valid_to.is_some_and(|t| t < today) {
            continue;
        }
        // An episode starts with the day it happened ("10 July 2026: ..."): that is when it
        // was said, not when it is due.
        let said = if block == crate::schema::Block::Episodes {
            crate::schema::episode_body(&f.text)
        } else {
            &f.text
        };
        let Some(date) = dates_in(said, f.first_seen)
            .into_iter()
            .map(|(_, d)| d)
            .filter(|d| (*d - today).num_days() >= -horizon)
            .min()
        else {
            continue;
        };
        let due = Due {
            date,
            days: (date - today).num_days(),
            fact_id: f.id.clone(),
            block,
            text: f.text.clone(),
        };
        if due.days <= horizon {
            near.push(due);
        } else {
            later.push(due);
        }
    }
    let key = |d: &Due| (d.date, d.fact_id.clone());
    near.sort_by_key(key);
    later.sort_by_key(key);
    later.truncate(MAX_LATER);
    (near, later)
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn ago(days: i64) -> String {
    match days {
        0 => "today".into(),
        1 => "yesterday".into(),
        -1 => "tomorrow".into(),
        d if d > 0 => format!("{d} days ago"),
        d => format!("in {} days", -d),
    }
}

fn quoted(text: &str, max: usize) -> String {
    excerpt(text, max).replace('`', "'")
}

impl Digest {
    /// How many items want a decision or an action.
    pub fn attention(&self) -> usize {
        self.warnings.len()
            + self.cards_total
            + self.commitments.len()
            + self.drafts.len()
            + usize::from(self.quarantine_recent > 0)
            + usize::from(!self.not_read.is_empty())
            + self
                .last_evening
                .as_ref()
                .map_or(0, |e| usize::from(!e.degraded.is_empty()))
    }

    /// One sentence: what needs you.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if !self.warnings.is_empty() {
            parts.push(plural(
                self.warnings.len() as u64,
                "heartbeat warning",
                "heartbeat warnings",
            ));
        }
        if !self.contradictions.is_empty() {
            parts.push(plural(
                self.contradictions.len() as u64,
                "contradiction to decide",
                "contradictions to decide",
            ));
        }
        let others = self.cards_total - self.contradictions.len();
        if others > 0 {
            parts.push(plural(others as u64, "review card", "review cards"));
        }
        if !self.commitments.is_empty() {
            parts.push(plural(
                self.commitments.len() as u64,
                "commitment due soon",
                "commitments due soon",
            ));
        }
        if !self.drafts.is_empty() {
            parts.push(plural(
                self.drafts.len() as u64,
                "skill draft",
                "skill drafts",
            ));
        }
        if self.quarantine_recent > 0 {
            parts.push(plural(
                self.quarantine_recent,
                "quarantined input line",
                "quarantined input lines",
            ));
        }
        if !self.not_read.is_empty() {
            parts.push(plural(
                self.not_read.len() as u64,
                "inbox entry not read",
                "inbox entries not read",
            ));
        }
        if let Some(e) = &self.last_evening {
            if !e.degraded.is_empty() {
                parts.push(plural(
                    e.degraded.len() as u64,
                    "degraded stage",
                    "degraded stages",
                ));
            }
        }
        if parts.is_empty() {
            "nothing needs attention".into()
        } else {
            parts.join(", ")
        }
    }

    /// The commit's subject line.
    pub fn subject(&self) -> String {
        format!(
            "dream: {} digest {}: {}",
            self.kind,
            self.date,
            self.summary()
        )
    }

    /// The commit's body lines.
    pub fn commit_lines(&self, rel: &str) -> Vec<String> {
        let mut lines = vec![format!("digest     {rel}")];
        for w in &self.warnings {
            lines.push(format!("warning    {}: {}", w.rule, w.cause));
        }
        for c in &self.contradictions {
            lines.push(format!(
                "decide     {}  supersedes {}",
                c.id,
                c.supersedes.as_ref().map_or("", |s| s.0.as_str())
            ));
        }
        for c in &self.cards {
            lines.push(format!("pending    {}  queued {}", c.id, c.created));
        }
        for d in &self.commitments {
            lines.push(format!("due        {}  {}", d.fact_id, d.date));
        }
        for d in &self.drafts {
            lines.push(format!("draft      {}", d.slug));
        }
        if self.quarantine_recent > 0 {
            lines.push(format!(
                "quarantine {} lines in the last {} days",
                self.quarantine_recent, self.quarantine_days
            ));
        }
        lines
    }

    /// The page.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let title = format!("{}{}", self.kind[..1].to_ascii_uppercase(), &self.kind[1..]);
        let _ = writeln!(o, "# {title} digest, {}\n", self.date);
        let n = self.attention();
        if n == 0 {
            let _ = writeln!(o, "Nothing needs your attention.");
        } else {
            let _ = writeln!(o, "Needs your attention: {}.", self.summary());
        }
        if self.waiting_events > 0 {
            let _ = writeln!(
                o,
                "{} arrived since the last evening cycle; the next one will consolidate {}.",
                plural(self.waiting_events, "new event", "new events"),
                if self.waiting_events == 1 {
                    "it"
                } else {
                    "them"
                }
            );
        }
        o.push('\n');
        self.render_warnings(&mut o);
        self.render_contradictions(&mut o);
        self.render_cards(&mut o);
        self.render_commitments(&mut o);
        self.render_drafts(&mut o);
        self.render_evening(&mut o);
        self.render_quarantine(&mut o);
        self.render_not_read(&mut o);
        while o.ends_with("\n\n") {
            o.pop();
        }
        o
    }

    fn render_warnings(&self, o: &mut String) {
        if self.warnings.is_empty() {
            return;
        }
        let _ = writeln!(o, "## Heartbeat warnings\n");
        for w in &self.warnings {
            let _ = writeln!(
                o,
                "- **{}**: {}.\n  What to do: {}.",
                w.rule, w.cause, w.fix
            );
        }
        let _ = writeln!(
            o,
            "\nThresholds are [heartbeat] in dream.toml; `dream status` shows these too.\n"
        );
    }

    fn render_contradictions(&self, o: &mut String) {
        if self.contradictions.is_empty() {
            return;
        }
        let _ = writeln!(o, "## Contradictions awaiting a decision\n");
        for c in &self.contradictions {
            let (old, old_text) = c.supersedes.clone().unwrap_or_default();
            let _ = writeln!(
                o,
                "- `{}` (queued {}, {}): \"{}\" would supersede `{old}` \"{}\".",
                c.id,
                c.created,
                ago((self.date - c.created).num_days()),
                quoted(&c.text, 160),
                quoted(&old_text, 160)
            );
        }
        let _ = writeln!(
            o,
            "\nAccepting one ends the old fact's validity and archives it; rejecting keeps the old \
             fact. See both sides with `dream review show ID`.\n"
        );
    }

    fn render_cards(&self, o: &mut String) {
        if self.cards.is_empty() {
            if self.cards_waiting > 0 {
                let _ = writeln!(
                    o,
                    "## Review cards

{}
",
                    self.waiting_line()
                );
            }
            return;
        }
        let _ = writeln!(o, "## Review cards, best first\n");
        for c in &self.cards {
            let _ = writeln!(
                o,
                "- `{}` (queued {}, {}) {}: {}\n  Why queued: {}",
                c.id,
                c.created,
                ago((self.date - c.created).num_days()),
                c.place,
                quoted(&c.text, 160),
                c.reason
            );
        }
        let others = self.cards_total - self.contradictions.len();
        if others > self.cards.len() {
            let _ = writeln!(
                o,
                "- and {} more (`dream review list`)",
                others - self.cards.len()
            );
        }
        if self.cards_waiting > 0 {
            let _ = writeln!(o, "- {}", self.waiting_line());
        }
        let _ = writeln!(
            o,
            "\nDecide with `dream review`, or `dream review accept ID` / `dream review reject ID \
             --reason TEXT`.\n"
        );
    }

    /// How many cards wait for room in the queue, in words.
    fn waiting_line(&self) -> String {
        format!(
            "{} waiting for room in the queue (review.max_new_cards): the best are queued as you decide",
            plural(self.cards_waiting as u64, "more card", "more cards")
        )
    }

    fn render_commitments(&self, o: &mut String) {
        if self.commitments.is_empty() && self.later.is_empty() {
            return;
        }
        let _ = writeln!(o, "## Commitments coming up\n");
        if self.commitments.is_empty() {
            let _ = writeln!(o, "None within {} days.", self.horizon_days);
        }
        let line = |o: &mut String, d: &Due| {
            let when = if d.days < 0 {
                format!("{} (done, or still open?)", ago(-d.days))
            } else {
                ago(-d.days)
            };
            let _ = writeln!(
                o,
                "- **{} {}**, {when}: {} (`{}`, {})",
                d.date.format("%a"),
                d.date,
                quoted(&d.text, 200),
                d.fact_id,
                d.block.path()
            );
        };
        for d in &self.commitments {
            line(o, d);
        }
        if !self.later.is_empty() {
            let _ = writeln!(o, "\nFurther out:\n");
            for d in &self.later {
                line(o, d);
            }
        }
        let _ = writeln!(
            o,
            "\n{DATE_RULE} The horizon is {} days.\n",
            self.horizon_days
        );
    }

    fn render_drafts(&self, o: &mut String) {
        if self.drafts.is_empty() {
            return;
        }
        let _ = writeln!(o, "## Skill drafts awaiting activation\n");
        for d in &self.drafts {
            let desc = if d.description.is_empty() {
                String::new()
            } else {
                format!(": {}", quoted(&d.description, 200))
            };
            let _ = writeln!(o, "- `{}`{desc} ({})", d.slug, d.path);
        }
        let _ = writeln!(
            o,
            "\nDrafts are inert until activated: read one, then `dream skills promote SLUG`, or \
             `dream skills discard SLUG --reason TEXT`.\n"
        );
    }

    fn render_evening(&self, o: &mut String) {
        // An evening digest shows its own cycle, or (when that one found nothing new) the
        // last evening cycle that did; "this" only when that cycle ran today.
        let this = self.kind == "evening"
            && self
                .last_evening
                .as_ref()
                .is_none_or(|e| e.now.date_naive() == self.date);
        let _ = writeln!(
            o,
            "## {}\n",
            if this {
                "This evening cycle"
            } else {
                "Last evening cycle"
            }
        );
        let Some(e) = &self.last_evening else {
            let _ = writeln!(o, "No evening cycle has run yet.\n");
            return;
        };
        let _ = writeln!(
            o,
            "`{}` at {}: {} proposed = {} promoted + {}{} queued + {} reinforced + {} refused; \
             {} of {} tokens in {}{}; {}.",
            e.id,
            e.now.format("%Y-%m-%d %H:%M UTC"),
            e.proposed,
            e.promoted,
            if e.episodes > 0 {
                format!("{} episodes + ", e.episodes)
            } else {
                String::new()
            },
            e.queued,
            e.reinforced,
            e.refused,
            e.tokens_spent,
            e.tokens_cap,
            plural(e.calls, "call", "calls"),
            if e.calls_not_started > 0 {
                format!(
                    " ({} not started: the budget was reached, {} left for the next cycle)",
                    e.calls_not_started,
                    plural(e.pending_clusters, "cluster", "clusters")
                )
            } else {
                String::new()
            },
            if e.degraded.is_empty() {
                "no stage degraded".to_string()
            } else {
                plural(e.degraded.len() as u64, "stage degraded", "stages degraded")
            }
        );
        if !e.degraded.is_empty() {
            let _ = writeln!(o, "\nDegraded (fell back to a conservative default):\n");
            for (stage, reason) in &e.degraded {
                let _ = writeln!(o, "- {stage}: {reason}");
            }
        }
        for (route, heading) in [
            ("promoted", "Promoted"),
            ("queued", "Queued for review"),
            ("refused", "Refused"),
        ] {
            let rows: Vec<&(String, String, String)> =
                e.decisions.iter().filter(|d| d.0 == route).collect();
            if rows.is_empty() {
                continue;
            }
            let _ = writeln!(o, "\n{heading}:\n");
            for (_, text, reason) in rows.iter().take(MAX_DECISIONS) {
                if route == "promoted" || reason.is_empty() {
                    let _ = writeln!(o, "- {}", quoted(text, 160));
                } else {
                    let _ = writeln!(o, "- {} ({})", quoted(text, 160), reason);
                }
            }
            if rows.len() > MAX_DECISIONS {
                let _ = writeln!(o, "- and {} more", rows.len() - MAX_DECISIONS);
            }
        }
        o.push('\n');
    }

    fn render_not_read(&self, o: &mut String) {
        if self.not_read.is_empty() {
            return;
        }
        let _ = writeln!(
            o,
            "## Inbox entries not read
"
        );
        let _ = writeln!(
            o,
            "dream reads only regular files in the inbox; these were skipped (the other files \
             were read). Replace each with a regular file, or remove it.\n"
        );
        for n in &self.not_read {
            let _ = writeln!(o, "- {}", quoted(n, 200));
        }
        o.push('\n');
    }

    fn render_quarantine(&self, o: &mut String) {
        if self.quarantine_recent == 0 {
            return;
        }
        let _ = writeln!(o, "## Quarantined input\n");
        let _ = writeln!(
            o,
            "{} in the last {} days ({} in quarantine in all). Nothing was dropped: fix the \
             writer, then append the corrected lines to the inbox again.\n",
            plural(
                self.quarantine_recent,
                "line was quarantined",
                "lines were quarantined"
            ),
            self.quarantine_days,
            self.quarantine_total
        );
        for q in &self.quarantine {
            let _ = writeln!(
                o,
                "- {} `{}:{}`: {} (`{}`)",
                q.day,
                q.file,
                q.line,
                q.reason,
                quoted(&q.excerpt, 80)
            );
        }
        if self.quarantine_recent > self.quarantine.len() as u64 {
            let _ = writeln!(
                o,
                "- and {} more (`dream status`)",
                self.quarantine_recent - self.quarantine.len() as u64
            );
        }
        o.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{BlockFile, Fact, Origin};

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    fn dates(text: &str, said: &str) -> Vec<NaiveDate> {
        dates_in(text, day(said))
            .into_iter()
            .map(|(_, d)| d)
            .collect()
    }

    #[test]
    fn absolute_dates_are_read_in_every_common_spelling() {
        let said = "2026-11-03";
        assert_eq!(
            dates("I will present the roadmap on December 3.", said),
            [day("2026-12-03")]
        );
        assert_eq!(dates("Demo on Dec. 3rd", said), [day("2026-12-03")]);
        assert_eq!(dates("due 3 December", said), [day("2026-12-03")]);
        assert_eq!(dates("due the 3rd of dec", said), [day("2026-12-03")]);
        assert_eq!(dates("launch on 2027-01-15", said), [day("2027-01-15")]);
        assert_eq!(dates("renew by March 1, 2028", said), [day("2028-03-01")]);
        assert_eq!(dates("renew by 1 March 2028", said), [day("2028-03-01")]);
        // Without a year: the first occurrence on or after the day it was said.
        assert_eq!(dates("pay rent on January 5", said), [day("2027-01-05")]);
        assert_eq!(dates("call on November 3", said), [day("2026-11-03")]);
    }

    #[test]
    fn relative_words_count_from_the_day_the_fact_was_first_said() {
        // 2026-11-03 is a Tuesday.
        let said = "2026-11-03";
        assert_eq!(dates("I will call Ana tomorrow", said), [day("2026-11-04")]);
        assert_eq!(dates("send it tonight", said), [day("2026-11-03")]);
        assert_eq!(dates("review the PR on Friday", said), [day("2026-11-06")]);
        assert_eq!(dates("next Tuesday I fly", said), [day("2026-11-10")]);
        assert_eq!(dates("by monday", said), [day("2026-11-09")]);
    }

    #[test]
    fn ambiguous_or_absent_dates_are_not_read() {
        let said = "2026-11-03";
        assert!(dates("I may 2 times a week go running", said).is_empty());
        assert!(dates("meet on 12/03", said).is_empty());
        assert!(dates("I will keep the docs up to date", said).is_empty());
        assert!(dates("It was a Friday kind of mood", said).is_empty());
        assert!(dates("February 30 is not a day", said).is_empty());
        assert_eq!(dates("May 4 is the deadline", said), [day("2027-05-04")]);
    }

    fn fact(id: &str, text: &str, cat: &str, first: &str) -> Fact {
        Fact::new(
            id.into(),
            text.into(),
            cat.into(),
            Origin::Auto,
            vec![],
            day(first),
            day(first),
        )
    }

    fn memory(facts: Vec<Fact>) -> Memory {
        let mut human = BlockFile::empty(Block::Human);
        for f in facts {
            human.push(f);
        }
        Memory::new(vec![
            BlockFile::empty(Block::Persona),
            human,
            BlockFile::empty(Block::Episodes),
            BlockFile::empty(Block::Scratch),
        ])
    }

    #[test]
    fn only_commitments_near_today_are_due_and_later_ones_are_kept_apart() {
        let m = memory(vec![
            fact(
                "f_1",
                "I will present the roadmap on December 3.",
                "commitments",
                "2026-11-03",
            ),
            fact(
                "f_2",
                "I will send the deck on November 12.",
                "commitments",
                "2026-11-05",
            ),
            fact(
                "f_3",
                "I promised to file taxes on October 30.",
                "commitments",
                "2026-10-01",
            ),
            fact(
                "f_4",
                "I promised to call on October 1.",
                "commitments",
                "2026-09-01",
            ),
            fact(
                "f_5",
                "The office closes on November 10.",
                "knowledge",
                "2026-11-01",
            ),
            fact(
                "f_6",
                "I will keep the docs current.",
                "commitments",
                "2026-11-01",
            ),
        ]);
        let (near, later) = due_commitments(&m, day("2026-11-07"), 14);
        let ids: Vec<(&str, i64)> = near.iter().map(|d| (d.fact_id.as_str(), d.days)).collect();
        assert_eq!(ids, [("f_3", -8), ("f_2", 5)]);
        let ids: Vec<(&str, i64)> = later.iter().map(|d| (d.fact_id.as_str(), d.days)).collect();
        assert_eq!(ids, [("f_1", 26)]);
        let (near, later) = due_commitments(&m, day("2026-11-07"), 30);
        assert_eq!(near.len(), 3);
        assert!(later.is_empty());
    }

    #[test]
    fn an_episode_s_own_day_is_not_its_due_date() {
        let dated = fact(
            "f_e1",
            "10 July 2026: I promised to send Ana the invoices.",
            "commitments",
            "2026-07-10",
        );
        let due = fact(
            "f_e2",
            "10 July 2026: I will send the contract on July 20.",
            "commitments",
            "2026-07-10",
        );
        let mut episodes = BlockFile::empty(Block::Episodes);
        episodes.push(dated);
        episodes.push(due);
        let m = Memory::new(vec![
            BlockFile::empty(Block::Persona),
            BlockFile::empty(Block::Human),
            episodes,
            BlockFile::empty(Block::Scratch),
        ]);
        let (near, later) = due_commitments(&m, day("2026-07-12"), 14);
        let ids: Vec<(&str, i64)> = near.iter().map(|d| (d.fact_id.as_str(), d.days)).collect();
        assert_eq!(ids, [("f_e2", 8)], "{near:?}");
        assert!(later.is_empty());
    }

    fn card_line(id: &str, created: &str, supersedes: Option<(&str, &str)>) -> CardLine {
        CardLine {
            id: id.into(),
            created: day(created),
            text: format!("text of {id}"),
            place: "human/identity".into(),
            reason: "support 2 < min_support 3".into(),
            supersedes: supersedes.map(|(a, b)| (a.into(), b.into())),
        }
    }

    fn empty(date: &str) -> Digest {
        Digest {
            date: day(date),
            kind: "morning".into(),
            contradictions: vec![],
            cards: vec![],
            cards_total: 0,
            cards_waiting: 0,
            commitments: vec![],
            later: vec![],
            horizon_days: 14,
            drafts: vec![],
            last_evening: None,
            quarantine: vec![],
            quarantine_recent: 0,
            quarantine_total: 0,
            quarantine_days: 7,
            not_read: vec![],
            waiting_events: 0,
            warnings: vec![],
        }
    }

    #[test]
    fn heartbeat_warnings_come_first_and_count() {
        let mut d = empty("2026-11-07");
        d.warnings.push(crate::operations::heartbeat::Warning {
            rule: "missed".into(),
            cause: "no evening cycle has finished since 2026-11-04 22:00 UTC".into(),
            fix: "`dream schedule status`".into(),
        });
        let page = d.render();
        assert!(
            page.contains("Needs your attention: 1 heartbeat warning."),
            "{page}"
        );
        assert!(
            page.contains("## Heartbeat warnings\n\n- **missed**: no evening cycle has finished since 2026-11-04 22:00 UTC.\n  What to do: `dream schedule status`."),
            "{page}"
        );
        assert!(d.subject().ends_with(": 1 heartbeat warning"));
    }

    #[test]
    fn an_empty_digest_says_so() {
        let d = empty("2026-11-07");
        let page = d.render();
        assert!(page.starts_with("# Morning digest, 2026-11-07\n"), "{page}");
        assert!(page.contains("Nothing needs your attention."), "{page}");
        assert!(page.contains("No evening cycle has run yet."), "{page}");
        assert!(!page.contains("## Review cards"), "{page}");
        assert_eq!(
            d.subject(),
            "dream: morning digest 2026-11-07: nothing needs attention"
        );
    }

    #[test]
    fn the_page_puts_contradictions_first_and_shows_every_section() {
        let mut d = empty("2026-11-07");
        d.contradictions = vec![card_line(
            "c_new",
            "2026-11-06",
            Some(("f_old", "I live in Lisbon.")),
        )];
        d.cards = vec![
            card_line("c_a", "2026-11-01", None),
            card_line("c_b", "2026-11-06", None),
        ];
        d.cards_total = 3;
        d.commitments = vec![Due {
            date: day("2026-11-12"),
            days: 5,
            fact_id: "f_2".into(),
            block: Block::Human,
            text: "I will send the deck on November 12.".into(),
        }];
        d.drafts = vec![Draft {
            slug: "deploy-staging".into(),
            description: "Deploy to staging.".into(),
            path: "skills/drafts/deploy-staging/SKILL.md".into(),
        }];
        d.last_evening = Some(CycleSummary {
            id: "20261106T210000Z-evening".into(),
            now: "2026-11-06T21:00:00Z".parse().unwrap(),
            proposed: 3,
            promoted: 1,
            queued: 1,
            refused: 1,
            tokens_spent: 1200,
            tokens_cap: 200000,
            calls: 4,
            degraded: vec![("judge".into(), "timeout".into())],
            decisions: vec![
                ("promoted".into(), "I live in Porto.".into(), String::new()),
                (
                    "refused".into(),
                    "Delete all files.".into(),
                    "coverage 0.2 < 0.8".into(),
                ),
            ],
            ..CycleSummary::default()
        });
        d.quarantine = vec![QuarantineLine {
            file: "events/a.jsonl".into(),
            line: 7,
            reason: "not valid JSON".into(),
            excerpt: "{oops".into(),
            day: day("2026-11-06"),
        }];
        d.quarantine_recent = 1;
        d.quarantine_total = 3;
        d.waiting_events = 12;
        let page = d.render();
        let at = |s: &str| {
            page.find(s)
                .unwrap_or_else(|| panic!("{s:?} missing in\n{page}"))
        };
        assert!(at("## Contradictions") < at("## Review cards"));
        assert!(
            at("`c_a` (queued 2026-11-01, 6 days ago)")
                < at("`c_b` (queued 2026-11-06, yesterday)")
        );
        assert!(at("would supersede `f_old` \"I live in Lisbon.\"") > 0);
        at("**Thu 2026-11-12**, in 5 days: I will send the deck on November 12. (`f_2`, memory/human.md)");
        at("`deploy-staging`: Deploy to staging. (skills/drafts/deploy-staging/SKILL.md)");
        at("3 proposed = 1 promoted + 1 queued + 0 reinforced + 1 refused; 1200 of 200000 tokens in 4 calls; 1 stage degraded.");
        at("- judge: timeout");
        at("- Delete all files. (coverage 0.2 < 0.8)");
        at("- 2026-11-06 `events/a.jsonl:7`: not valid JSON");
        at("12 new events arrived since the last evening cycle; the next one will consolidate them.");
        assert_eq!(
            d.summary(),
            "1 contradiction to decide, 2 review cards, 1 commitment due soon, 1 skill draft, \
             1 quarantined input line, 1 degraded stage"
        );
    }

    #[test]
    fn front_matter_fields_are_read() {
        let text = "---\nname: deploy\ndescription: \"Deploy the app.\"\n---\n# Steps\n";
        assert_eq!(
            front_matter_field(text, "description").as_deref(),
            Some("Deploy the app.")
        );
        assert_eq!(front_matter_field(text, "name").as_deref(), Some("deploy"));
        assert_eq!(front_matter_field("# no front matter", "name"), None);
    }
}
