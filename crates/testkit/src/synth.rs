//! A deterministic synthetic workload: the event stream of an agent's sessions, for the
//! benchmark (`dream bench`) and for tests. Same [`Spec`] in, same events out, on every
//! machine; nothing here touches the network, the clock or the disk.
//!
//! The stream has the shape the cycle is built for: `events` events over `days` days in
//! `sessions` sessions; `themes` durable facts the owner states and restates (verbatim,
//! with a lead-in, or as the agent's note) across sessions and days; a `noise` share of
//! chatter, questions and one-off task talk that nothing else restates; and a `tool_share`
//! of tool-call runs (a recurring procedure's `tool_call` / `tool_result` steps). Themes
//! come from [`Spec::seed`] alone and the draws of the stream from [`Spec::stream`], so a
//! history and a later batch of new events can restate the same themes.

use chrono::{DateTime, Duration, Utc};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use dream_core::sources::event::{default_trust, Event};

/// What to generate.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Seeds the themes (the durable facts of the person).
    pub seed: u64,
    /// Seeds the stream (which session, what is said when).
    pub stream: u64,
    pub events: usize,
    /// Events fall in `[start, start + days)`.
    pub start: DateTime<Utc>,
    pub days: u32,
    pub sessions: usize,
    pub themes: usize,
    /// Share of events that are chatter, questions and one-off talk.
    pub noise: f64,
    /// Share of events that belong to tool-call runs.
    pub tool_share: f64,
    /// Event ids are `<id_prefix><n>`.
    pub id_prefix: String,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec {
            seed: 7,
            stream: 1,
            events: 1000,
            start: DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
                .expect("a valid timestamp")
                .with_timezone(&Utc),
            days: 14,
            sessions: 100,
            themes: 40,
            noise: 0.3,
            tool_share: 0.1,
            id_prefix: "syn-".into(),
        }
    }
}

/// What an event is, for tests and figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// A statement (or restatement) of theme n.
    Theme(usize),
    Noise,
    /// A step of procedure n.
    Tool(usize),
}

/// The generated stream, oldest first, with a label per event and the durable facts.
#[derive(Debug, Clone)]
pub struct Workload {
    pub events: Vec<Event>,
    pub labels: Vec<Label>,
    /// The canonical sentence of each theme, as the owner first says it.
    pub themes: Vec<String>,
}

impl Workload {
    /// The stream as JSON Lines, one event per line.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::with_capacity(self.events.len() * 200);
        for e in &self.events {
            out.push_str(&e.to_line());
            out.push('\n');
        }
        out
    }
}

const CITIES: &[&str] = &[
    "Lisbon", "Porto", "Berlin", "Hamburg", "Oslo", "Bergen", "Madrid", "Seville", "Lyon",
    "Toulouse", "Dublin", "Cork", "Vienna", "Graz", "Prague", "Brno", "Krakow", "Gdansk",
    "Utrecht", "Leiden", "Ghent", "Bruges", "Turin", "Bologna", "Tallinn", "Riga",
];
const RELATIONS: &[&str] = &[
    "sister",
    "brother",
    "partner",
    "mother",
    "father",
    "cousin",
    "neighbour",
    "manager",
];
const JOBS: &[&str] = &[
    "nurse",
    "pilot",
    "carpenter",
    "teacher",
    "architect",
    "chemist",
    "librarian",
    "baker",
    "translator",
    "surveyor",
    "dentist",
    "welder",
    "florist",
    "plumber",
    "geologist",
    "editor",
];
const FOODS: &[&str] = &[
    "peanuts",
    "shellfish",
    "sesame",
    "kiwi",
    "gluten",
    "lactose",
    "mustard",
    "celery",
    "walnuts",
    "soy",
    "lupin",
    "buckwheat",
];
const DRINKS: &[&str] = &[
    "green tea",
    "black coffee",
    "oat milk lattes",
    "sparkling water",
    "rooibos",
    "espresso",
    "mate",
    "chai",
];
const LANGS: &[&str] = &[
    "Rust", "Go", "Python", "Kotlin", "Haskell", "Elixir", "Zig", "OCaml", "Swift", "Scala",
];
const WEEKDAYS: &[&str] = &["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"];
const MONTHS: &[&str] = &[
    "March",
    "April",
    "May",
    "June",
    "July",
    "September",
    "October",
    "November",
];
const HOBBIES: &[&str] = &[
    "bouldering",
    "sailing",
    "pottery",
    "chess",
    "cycling",
    "birdwatching",
    "baking sourdough",
    "playing cello",
    "trail running",
    "woodworking",
    "fencing",
    "rowing",
    "knitting",
    "archery",
];
const ARTIFACTS: &[&str] = &[
    "migration",
    "design review",
    "release notes",
    "load test",
    "audit",
    "roadmap",
    "budget",
    "postmortem",
];
const PLATFORMS: &[&str] = &[
    "Kubernetes",
    "Fly",
    "Hetzner",
    "Nomad",
    "Heroku",
    "Lambda",
    "Render",
    "Vercel",
];
const THINGS: &[&str] = &[
    "thunderstorms",
    "vacuum cleaners",
    "fireworks",
    "bicycles",
    "umbrellas",
    "balloons",
    "harbour",
    "cathedral",
    "river",
    "mountains",
    "lighthouse",
    "old market",
    "vineyard",
    "forest",
    "sailboat",
    "cabin",
    "campervan",
    "piano",
    "greenhouse",
    "workshop",
];

/// Syllables for made-up names and one-off words: an open vocabulary, as real streams
/// have (people, places and projects keep turning up), so themes rarely share words.
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "te", "ru", "sa", "no", "vi", "pe", "da", "zu", "fo", "ri", "ba", "ne", "tu",
    "go", "li", "me", "ko", "ha", "se", "wa", "yo", "bi", "cu", "dre", "fla", "gri", "plo", "mar",
    "ten", "vol", "sik", "ur", "an", "el", "is", "or", "ben",
];

/// A made-up proper noun (a person, place or project nobody else in the stream has).
fn proper(rng: &mut Xoshiro256PlusPlus) -> String {
    let w = one_off_word(rng);
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// Lead-ins an owner uses when saying something again.
const LEAD_INS: &[&str] = &[
    "As I said,",
    "Just a reminder:",
    "Remember that",
    "For context,",
    "Like I mentioned before,",
    "Quick note:",
    "By the way,",
    "Again,",
];

/// Sentences that carry nothing durable (the reflector must not propose them), said over
/// and over as real small talk is.
const CHATTER: &[&str] = &[
    "Thanks, that helps.",
    "Ok, sounds good.",
    "Can you check the build again?",
    "What time is it in Tokyo?",
    "Please summarise the last thread.",
    "Hmm, let me think.",
    "Could you open the logs?",
    "Great, thanks a lot!",
    "Why is this test flaky?",
    "Let's continue tomorrow.",
    "Good morning!",
    "Can you rerun that?",
    "What does this error mean?",
    "Show me the diff.",
    "Perfect, ship it.",
    "Wait, what happened there?",
    "Try again with verbose output.",
    "Is the deploy finished?",
    "Nice catch.",
    "Let me check my calendar.",
    "How long will this take?",
    "Any news from the team?",
    "Please draft a reply to that email.",
    "Which branch are we on?",
    "That looks wrong to me.",
    "Could you explain the second step?",
    "Remind me what we decided yesterday.",
    "Where did we put the config file?",
    "Ok, go ahead.",
    "Sorry, I was in a meeting.",
];

/// Recurring procedures: each a list of tool calls with the shape of their output.
const PROCEDURES: &[&[(&str, &str)]] = &[
    &[
        ("cargo fmt --all", "formatted {n} files"),
        (
            "cargo clippy --all-targets -- -D warnings",
            "Finished dev profile in {t}s, no warnings",
        ),
        (
            "cargo test --workspace",
            "test result: ok. {n} passed; 0 failed; finished in {t}s",
        ),
    ],
    &[
        (
            "git fetch origin",
            "From github.com:acme/app, {n} new commits on main",
        ),
        (
            "git rebase origin/main",
            "Successfully rebased and updated refs/heads/feature-{n}",
        ),
        (
            "git push --force-with-lease",
            "To github.com:acme/app.git, feature-{n} forced update",
        ),
    ],
    &[
        ("docker compose pull", "Pulled {n} images"),
        ("docker compose up -d", "Container web-{n} started"),
        (
            "docker compose logs --tail 50 web",
            "GET /health 200 in {t}ms",
        ),
    ],
    &[
        ("terraform fmt", "main.tf variables.tf"),
        (
            "terraform plan -out plan.bin",
            "Plan: {n} to add, 0 to change, 0 to destroy",
        ),
        (
            "terraform apply plan.bin",
            "Apply complete! Resources: {n} added",
        ),
    ],
    &[
        ("pg_dump -Fc app > app.dump", "dump of {n} MB written"),
        (
            "aws s3 cp app.dump s3://backups/app.dump",
            "upload: app.dump to s3://backups/app.dump ({t}s)",
        ),
        ("rm app.dump", "removed app.dump"),
    ],
    &[
        ("npm ci", "added {n} packages in {t}s"),
        ("npm run lint", "eslint: 0 problems in {n} files"),
        ("npm test -- --coverage", "Tests: {n} passed, coverage {t}%"),
    ],
];

/// Who a theme is about; `{name}`, `{place}`, `{project}`, `{relation}` are filled in.
const SUBJECTS: &[&str] = &[
    "I",
    "My {relation} {name}",
    "{name} from the {project} team",
    "My partner {name}",
    "Our {project} service",
    "The {project} project",
    "My neighbour {name} in {place}",
    "My dog {name}",
    "My manager {name}",
    "My flat in {place}",
    "My daughter {name}",
    "The {place} office",
    "My tutor {name}",
    "Our {project} database",
    "My cousin {name} from {place}",
    "My team in {place}",
];

/// What is said about the subject, as (third person, first person); `{job}`, `{city}`,
/// `{platform}`, `{weekday}`, `{month}`, `{day}`, `{thing}`, `{lang}`, `{n}`, `{drink}`,
/// `{food}`, `{hobby}`, `{artifact}`, `{other}`, `{place2}` are filled in.
const PREDICATES: &[(&str, &str)] = &[
    ("works as a {job} in {city}", "work as a {job} in {city}"),
    (
        "deploys to {platform} every {weekday}",
        "deploy to {platform} every {weekday}",
    ),
    (
        "has a birthday on {month} {day}",
        "have a birthday on {month} {day}",
    ),
    ("is afraid of {thing}", "am afraid of {thing}"),
    (
        "reviews pull requests on {weekday} mornings",
        "review pull requests on {weekday} mornings",
    ),
    (
        "runs on {lang} since {month}",
        "run on {lang} since {month}",
    ),
    (
        "moved to {place2} last spring",
        "moved to {place2} last spring",
    ),
    (
        "takes the {n} train to {place2}",
        "take the {n} train to {place2}",
    ),
    (
        "is saving for a {thing} near {place2}",
        "am saving for a {thing} near {place2}",
    ),
    (
        "starts every day with {drink}",
        "start every day with {drink}",
    ),
    (
        "meets {other} every {weekday}",
        "meet {other} every {weekday}",
    ),
    (
        "keeps {n} {thing} in the garden",
        "keep {n} {thing} in the garden",
    ),
    ("is allergic to {food}", "am allergic to {food}"),
    ("plays {hobby} with {other}", "play {hobby} with {other}"),
    (
        "finishes the {artifact} by {month} {day}",
        "will finish the {artifact} by {month} {day}",
    ),
    ("speaks {lang} with {other}", "speak {lang} with {other}"),
];

/// The canonical sentence of theme `n` (all from the theme seed): a subject and a
/// predicate (256 shapes) with made-up names, places and projects, so that two themes
/// rarely share more than a word or two.
fn theme_sentence(rng: &mut Xoshiro256PlusPlus, n: usize) -> String {
    fn p(rng: &mut Xoshiro256PlusPlus, list: &[&'static str]) -> &'static str {
        list.choose(rng).expect("non-empty list")
    }
    let subject = SUBJECTS[n % SUBJECTS.len()];
    let (third, first) = PREDICATES[(n / SUBJECTS.len() + n) % PREDICATES.len()];
    let predicate = if subject == "I" { first } else { third };
    let mut text = format!("{subject} {predicate}.");
    let fills: Vec<(&str, String)> = vec![
        ("{relation}", p(rng, RELATIONS).into()),
        ("{name}", proper(rng)),
        ("{place}", proper(rng)),
        ("{place2}", proper(rng)),
        ("{project}", proper(rng)),
        ("{other}", proper(rng)),
        ("{job}", p(rng, JOBS).into()),
        ("{city}", p(rng, CITIES).into()),
        ("{platform}", p(rng, PLATFORMS).into()),
        ("{weekday}", p(rng, WEEKDAYS).into()),
        ("{month}", p(rng, MONTHS).into()),
        ("{day}", rng.gen_range(1..29).to_string()),
        ("{thing}", p(rng, THINGS).into()),
        ("{lang}", p(rng, LANGS).into()),
        ("{n}", rng.gen_range(2..12).to_string()),
        ("{drink}", p(rng, DRINKS).into()),
        ("{food}", p(rng, FOODS).into()),
        ("{hobby}", p(rng, HOBBIES).into()),
        ("{artifact}", p(rng, ARTIFACTS).into()),
    ];
    for (slot, value) in fills {
        text = text.replace(slot, &value);
    }
    text
}

/// A one-off word made of syllables.
fn one_off_word(rng: &mut Xoshiro256PlusPlus) -> String {
    let n = rng.gen_range(2..4);
    (0..n)
        .map(|_| *SYLLABLES.choose(rng).expect("syllables"))
        .collect()
}

/// A sentence of one-off task talk.
fn one_off_sentence(rng: &mut Xoshiro256PlusPlus) -> String {
    let w: Vec<String> = (0..5).map(|_| one_off_word(rng)).collect();
    match rng.gen_range(0..4) {
        0 => format!(
            "I think the {} {} should {} the {} before {}.",
            w[0], w[1], w[2], w[3], w[4]
        ),
        1 => format!(
            "The {} and the {} {} again near the {} {}.",
            w[0], w[1], w[2], w[3], w[4]
        ),
        2 => format!(
            "Maybe {} {} the {} when {} {}.",
            w[0], w[1], w[2], w[3], w[4]
        ),
        _ => format!(
            "We looked at {} {} {} and {} {} today.",
            w[0], w[1], w[2], w[3], w[4]
        ),
    }
}

/// A restatement of a theme: verbatim, with a lead-in, wrapped in chatter, or (by the
/// agent) as a note.
fn restate(rng: &mut Xoshiro256PlusPlus, canonical: &str) -> (String, &'static str) {
    match rng.gen_range(0..10) {
        0..=3 => (canonical.to_string(), "user"),
        4..=6 => {
            let lead = LEAD_INS.choose(rng).expect("lead-ins");
            let mut chars = canonical.chars();
            let first = chars.next().map(|c| {
                // "I" stays capital; other sentence starts go lower-case after a lead-in.
                if canonical.starts_with("I ") || canonical.starts_with("I'") {
                    c.to_string()
                } else {
                    c.to_lowercase().to_string()
                }
            });
            (
                format!("{lead} {}{}", first.unwrap_or_default(), chars.as_str()),
                "user",
            )
        }
        7 => {
            let chat = CHATTER.choose(rng).expect("chatter");
            (format!("{chat} {canonical}"), "user")
        }
        _ => (format!("Noted for later: {canonical}"), "assistant"),
    }
}

/// Generate the workload a spec describes.
pub fn generate(spec: &Spec) -> Workload {
    let mut theme_rng = Xoshiro256PlusPlus::seed_from_u64(spec.seed);
    let mut themes = Vec::with_capacity(spec.themes);
    let mut n = 0;
    while themes.len() < spec.themes {
        let s = theme_sentence(&mut theme_rng, n);
        n += 1;
        if !themes.contains(&s) {
            themes.push(s);
        }
    }

    let mut rng = Xoshiro256PlusPlus::seed_from_u64(spec.stream ^ spec.seed.rotate_left(32));
    let sessions = spec.sessions.max(1);
    let days = i64::from(spec.days.max(1));
    // Each session: a day, a start between 08:00 and 20:00, and its share of the events.
    let mut starts: Vec<DateTime<Utc>> = (0..sessions)
        .map(|_| {
            spec.start
                + Duration::days(rng.gen_range(0..days))
                + Duration::seconds(rng.gen_range(8 * 3600..20 * 3600))
        })
        .collect();
    starts.sort();
    let mut per_session = vec![spec.events / sessions; sessions];
    for slot in per_session.iter_mut().take(spec.events % sessions) {
        *slot += 1;
    }

    // A tool run emits a call and a result per step, so runs start rarely enough that
    // their events make up `tool_share` of the stream; noise is a share of the rest.
    let run_len =
        PROCEDURES.iter().map(|p| 2 * p.len()).sum::<usize>() as f64 / PROCEDURES.len() as f64;
    let t = spec.tool_share.clamp(0.0, 0.99);
    let p_run = t / (run_len - (run_len - 1.0) * t);
    let p_noise = (spec.noise / (1.0 - t)).clamp(0.0, 1.0);
    let mut events = Vec::with_capacity(spec.events);
    let mut labels = Vec::with_capacity(spec.events);
    let mut seq = 0usize;
    for (s, (&start, &count)) in starts.iter().zip(&per_session).enumerate() {
        let session = format!("{}s{s}", spec.id_prefix);
        let step = (3600 / count.max(1) as i64).clamp(1, 40);
        let mut ts = start;
        let mut left = count;
        while left > 0 {
            let run: bool = rng.gen_bool(p_run);
            let noise: bool = rng.gen_bool(p_noise);
            let mut emit =
                |text: String, kind: &str, actor: &str, label: Label, ts: DateTime<Utc>| {
                    events.push(Event {
                        id: format!("{}{seq:07}", spec.id_prefix),
                        ts,
                        kind: kind.into(),
                        text,
                        session: Some(session.clone()),
                        actor: Some(actor.into()),
                        source: Some("synth".into()),
                        trust: default_trust(kind, Some(actor)),
                        recalled: false,
                        meta: None,
                    });
                    labels.push(label);
                    seq += 1;
                };
            if run && left >= 2 {
                // A run of the procedure: call, result, call, result, ... as far as it fits.
                let p = rng.gen_range(0..PROCEDURES.len());
                for (call, output) in PROCEDURES[p] {
                    if left < 2 {
                        break;
                    }
                    emit(
                        format!("run: {call}"),
                        "tool_call",
                        "assistant",
                        Label::Tool(p),
                        ts,
                    );
                    ts += Duration::seconds(step);
                    let result = output
                        .replace("{n}", &rng.gen_range(2..400).to_string())
                        .replace("{t}", &rng.gen_range(1..90).to_string());
                    emit(result, "tool_result", "tool", Label::Tool(p), ts);
                    ts += Duration::seconds(step);
                    left -= 2;
                }
                continue;
            }
            if noise || themes.is_empty() {
                let text = if rng.gen_bool(0.2) {
                    CHATTER.choose(&mut rng).expect("chatter").to_string()
                } else {
                    one_off_sentence(&mut rng)
                };
                let actor = if rng.gen_bool(0.7) {
                    "user"
                } else {
                    "assistant"
                };
                emit(text, "message", actor, Label::Noise, ts);
            } else {
                let t = rng.gen_range(0..themes.len());
                let (text, actor) = restate(&mut rng, &themes[t]);
                emit(text, "message", actor, Label::Theme(t), ts);
            }
            ts += Duration::seconds(step);
            left -= 1;
        }
    }
    // Sessions are sorted by start and never overlap in ids; sort by time for a stream.
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| (events[i].ts, i));
    let events_sorted = order.iter().map(|&i| events[i].clone()).collect();
    let labels_sorted = order.iter().map(|&i| labels[i]).collect();
    Workload {
        events: events_sorted,
        labels: labels_sorted,
        themes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn spec() -> Spec {
        Spec {
            events: 600,
            sessions: 30,
            days: 6,
            themes: 12,
            ..Spec::default()
        }
    }

    #[test]
    fn the_same_spec_gives_the_same_stream() {
        let a = generate(&spec());
        let b = generate(&spec());
        assert_eq!(a.to_jsonl(), b.to_jsonl());
        let c = generate(&Spec {
            stream: 2,
            ..spec()
        });
        assert_ne!(a.to_jsonl(), c.to_jsonl());
        assert_eq!(a.themes, c.themes, "themes depend on the seed alone");
    }

    #[test]
    fn the_stream_has_the_requested_shape() {
        let s = spec();
        let w = generate(&s);
        assert_eq!(w.events.len(), s.events);
        assert_eq!(w.themes.len(), s.themes);
        let ids: HashSet<&str> = w.events.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids.len(), s.events, "ids are unique");
        assert!(
            w.events.windows(2).all(|p| p[0].ts <= p[1].ts),
            "oldest first"
        );
        let end = s.start + Duration::days(i64::from(s.days));
        assert!(w.events.iter().all(|e| e.ts >= s.start && e.ts < end));
        let noise =
            w.labels.iter().filter(|l| **l == Label::Noise).count() as f64 / s.events as f64;
        let tools = w
            .labels
            .iter()
            .filter(|l| matches!(l, Label::Tool(_)))
            .count() as f64
            / s.events as f64;
        assert!((0.2..0.4).contains(&noise), "noise share {noise}");
        assert!((0.05..0.25).contains(&tools), "tool share {tools}");
        // Every theme is restated in several sessions on several days.
        for t in 0..s.themes {
            let mine: Vec<&Event> = w
                .events
                .iter()
                .zip(&w.labels)
                .filter(|(_, l)| **l == Label::Theme(t))
                .map(|(e, _)| e)
                .collect();
            let sessions: HashSet<&Option<String>> = mine.iter().map(|e| &e.session).collect();
            let days: HashSet<_> = mine.iter().map(|e| e.ts.date_naive()).collect();
            assert!(
                sessions.len() >= 3 && days.len() >= 2,
                "theme {t}: {} sessions, {} days",
                sessions.len(),
                days.len()
            );
        }
        // Every line is an event dream accepts.
        for line in w.to_jsonl().lines() {
            dream_core::sources::event::parse_line(line.as_bytes(), 1 << 20)
                .expect("a valid event");
        }
    }
}
