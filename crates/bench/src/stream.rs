//! The `stream` scenario: a real conversation dataset as one person's event stream, on a
//! timer's schedule, against the fake server, beside one batch cycle over the same events.
//!
//! The dataset is LoCoMo (or any file in its shape), read from the path given with
//! `--stream` and never copied: every conversation's turns go into one repository, oldest
//! first, each turn trusted as the owner's (the conversion of `dream eval locomo`), with
//! every speaker among `owner.names`. Schedules (`--cycles-per-day`): `0` is one cycle
//! after the last event, which consolidates the history older than its window through the
//! backfill (window by window, oldest first) and then its own window, so it sees every
//! event; `1` an evening cycle at 23:00 every day from the first event's day to the last;
//! `2` a cycle at 11:00 and one at 23:00, both reflecting (the morning profile reflects
//! nothing by default, so this is the dearer case of a morning and evening schedule). A
//! cycle whose stretch of time holds no event is not run: it would find nothing new and
//! call no model. Against the fake server (`--fake-llm`), reflect is answered as
//! `--stream-reflect` says: `reference`, the dataset's own observations of the turns a call
//! shows, citing them (the reference reflector of `eval-locomo --reference`, a stand-in for
//! a good model), or `echo`, the tests' echo of each cluster's first owner line (a model
//! that keeps greetings too, so memory and every later prompt grow with them). Tokens are
//! what the fake server counted, split by stage and prompt part (`parts`); quality is
//! LoCoMo's answer retention over what memory holds at the end.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Duration, NaiveTime, Utc};

use dream_core::schema::Block;
use dream_core::sources::event::Event;
use dream_engine::error::{Context, Error, Result};
use dream_engine::eval::locomo;

use crate::bench::{
    new_repo, replay, round2, set_config, token_config, Figures, Options, Replayed, ScenarioResult,
    ScheduleRun, Target,
};

/// Tokens an event the daily schedules may spend.
pub const TOKENS_PER_EVENT: f64 = 60.0;
/// A daily schedule's tokens against one batch cycle's.
pub const SCHEDULE_RATIO: f64 = 1.5;

/// The cycle clocks of `per_day` cycles a day from the day of the first event to the day of
/// the last (evenly spaced, the last of each day at 23:00), and one more a minute after the
/// last event when it comes later. `per_day` 0: one cycle, a minute after the last event.
pub fn schedule(first: DateTime<Utc>, last: DateTime<Utc>, per_day: u32) -> Vec<DateTime<Utc>> {
    let after = last + Duration::minutes(1);
    if per_day == 0 {
        return vec![after];
    }
    let step = Duration::minutes(24 * 60 / i64::from(per_day));
    let eleven = NaiveTime::from_hms_opt(23, 0, 0).expect("a valid time");
    let mut out = Vec::new();
    let mut day = first.date_naive();
    while day <= last.date_naive() {
        let evening = day.and_time(eleven).and_utc();
        for k in (0..i64::from(per_day)).rev() {
            out.push(evening - step * k as i32);
        }
        match day.succ_opt() {
            Some(next) => day = next,
            None => break,
        }
    }
    if out.last().is_none_or(|t| *t < last) {
        out.push(after);
    }
    out
}

/// The stream: every conversation's events, oldest first, and every speaker.
pub(crate) fn load(path: &Path) -> Result<(Vec<locomo::Conversation>, Vec<Event>, Vec<String>)> {
    let text = std::fs::read_to_string(path).context(|| format!("reading {}", path.display()))?;
    let convs = locomo::parse(&text)
        .map_err(|e| Error::Input(format!("{} is not a LoCoMo file: {e}", path.display())))?;
    let mut events: Vec<Event> = convs.iter().flat_map(|c| c.events().cloned()).collect();
    events.sort_by(|a, b| a.ts.cmp(&b.ts).then_with(|| a.id.cmp(&b.id)));
    let mut speakers: Vec<String> = Vec::new();
    for c in &convs {
        for s in &c.speakers {
            if !speakers.contains(s) {
                speakers.push(s.clone());
            }
        }
    }
    Ok((convs, events, speakers))
}

/// LoCoMo's quality measures over what the stream's repository holds: answer retention per
/// conversation (a fact counts for the conversations its events are of), summed; memory's
/// size and traceability over the whole stream (a fact may cite turns of several
/// conversations, which clusters of small talk join).
fn quality(
    repo: &Path,
    convs: &[locomo::Conversation],
    owners: &[String],
    today: chrono::NaiveDate,
) -> Result<locomo::Counts> {
    let store = dream_engine::edges::store::Store::open(repo)?;
    let memory = store.load_memory(today)?;
    let (cards, _) = store.pending_cards()?;
    let of = |support: &[String], id: &str| support.iter().any(|s| s.split(':').next() == Some(id));
    let mut all = locomo::Counts::default();
    for conv in convs {
        let facts: Vec<locomo::Item> = memory
            .facts()
            .filter(|(_, f)| of(&f.support, &conv.sample_id))
            .map(|(b, f)| locomo::Item {
                text: f.text.clone(),
                support: f.support.clone(),
                episode: b == Block::Episodes,
            })
            .collect();
        let cards: Vec<locomo::Item> = cards
            .iter()
            .filter(|c| of(&c.supporting_event_ids, &conv.sample_id))
            .map(|c| locomo::Item {
                text: c.text.clone(),
                support: c.supporting_event_ids.clone(),
                episode: false,
            })
            .collect();
        all.add(&locomo::measure(conv, &facts, &cards, owners));
    }
    let whole = locomo::Conversation {
        sample_id: String::new(),
        speakers: owners.to_vec(),
        sessions: convs.iter().flat_map(|c| c.sessions.clone()).collect(),
        qa: Vec::new(),
        skipped: Vec::new(),
        observations: Vec::new(),
        summaries: Vec::new(),
    };
    let items: Vec<locomo::Item> = memory
        .facts()
        .map(|(b, f)| locomo::Item {
            text: f.text.clone(),
            support: f.support.clone(),
            episode: b == Block::Episodes,
        })
        .collect();
    let w = locomo::measure(&whole, &items, &[], owners);
    all.facts = w.facts;
    all.episodes = w.episodes;
    all.traceable_facts = w.traceable_facts;
    all.cards = cards.len();
    Ok(all)
}

/// The scenario (see the module).
pub fn run_stream(
    opts: &Options,
    fake: Option<&dream_testkit::fake_llm::FakeLlm>,
    dir: &Path,
) -> Result<ScenarioResult> {
    let Some(path) = &opts.stream else {
        return Err(Error::Usage(
            "the stream scenario reads a LoCoMo file: give its path with --stream PATH".into(),
        ));
    };
    let (convs, events, speakers) = load(path)?;
    // The model the fake server plays: the dataset's own observations of the turns in each
    // call (a stand-in for a good model), or the tests' echo of the first owner line of
    // each cluster.
    let reference = match (fake, opts.stream_reflect.as_str()) {
        (Some(_), "reference") => {
            Some(std::fs::read_to_string(path).context(|| format!("reading {}", path.display()))?)
        }
        _ => None,
    };
    let (Some(first), Some(last)) = (events.first(), events.last()) else {
        return Err(Error::Input(format!("{} holds no turn", path.display())));
    };
    let (first, last) = (first.ts, last.ts);
    let description = format!(
        "{} turns of {} conversations as one stream ({} to {}), every turn the owner's: tokens per event on each schedule, against one batch cycle that sees them all",
        events.len(),
        convs.len(),
        first.date_naive(),
        last.date_naive()
    );
    let mut keys = token_config(opts);
    keys.push((
        "owner.names",
        toml::Value::Array(
            speakers
                .iter()
                .map(|s| toml::Value::String(s.clone()))
                .collect(),
        ),
    ));
    let mut schedules = Vec::new();
    let mut batch: Option<Figures> = None;
    let mut notes = Vec::new();
    let mut extra = BTreeMap::new();
    for &per_day in &opts.cycles_per_day {
        let repo = dir.join(format!("c{per_day}"));
        new_repo(&repo)?;
        set_config(&repo, &keys)?;
        let times = schedule(first, last, per_day);
        // Each schedule's model serves each observation once, from the start.
        if let (Some(f), Some(text)) = (fake, &reference) {
            let r = std::sync::Arc::new(crate::quality::Reference::parse(text)?);
            f.on("reflect", move |call| r.reflect(call));
        }
        let Replayed {
            reports,
            per_cycle,
            stages,
            child,
            idle,
        } = replay(opts, fake, &repo, &events, &times, per_day == 0, true)?;
        if child.is_some() {
            batch = child;
        }
        let n = |r: &serde_json::Value, p: &str| r.pointer(p).and_then(|v| v.as_u64()).unwrap_or(0);
        let sum = |p: &str| reports.iter().map(|r| n(r, p)).sum::<u64>();
        let windows = sum("/backfill/windows");
        let pending = sum("/window/pending") + sum("/backfill/pending");
        if pending > 0 {
            notes.push(format!(
                "{}: {pending} prompts left pending by a failed call (see the cycles' degraded stages)",
                per_day
            ));
        }
        if per_day == 0 {
            notes.push(format!(
                "one cycle: the backfill consolidated {windows} older windows before the cycle's own; {} events left unreflected",
                sum("/backfill/left")
            ));
        }
        let today = times.last().copied().unwrap_or(last).date_naive();
        let q = quality(&repo, &convs, &speakers, today)?;
        let fig = q.figures();
        let tokens = sum("/tokens/spent");
        let k = format!("c{per_day}");
        extra.insert(format!("{k}_answer_retention"), fig.answer_retention);
        extra.insert(
            format!("{k}_answer_retention_with_episodes"),
            fig.answer_retention_with_episodes,
        );
        extra.insert(format!("{k}_traceability"), fig.traceability);
        extra.insert(format!("{k}_tokens"), tokens as f64);
        extra.insert(
            format!("{k}_tokens_per_event"),
            round2(tokens as f64 / events.len().max(1) as f64),
        );
        let store = dream_engine::edges::store::Store::open(&repo)?;
        let memory = store.load_memory(today)?;
        schedules.push(ScheduleRun {
            schedule: match per_day {
                0 => "one cycle".into(),
                1 => "1 cycle a day".into(),
                k => format!("{k} cycles a day"),
            },
            cycles_per_day: per_day,
            cycles: per_cycle.len(),
            idle_cycles: idle,
            events: events.len(),
            tokens,
            calls: sum("/tokens/calls"),
            cached: sum("/tokens/cached"),
            tokens_per_event: round2(tokens as f64 / events.len().max(1) as f64),
            stages,
            per_cycle,
            facts: memory
                .facts()
                .filter(|(b, _)| *b != Block::Episodes)
                .count(),
            episodes: memory
                .facts()
                .filter(|(b, _)| *b == Block::Episodes)
                .count(),
            themes: 0,
            themes_stated: 0,
            cards: q.cards,
            themes_only_in_cards: 0,
            promoted: sum("/candidates/promoted"),
            reinforced: sum("/candidates/reinforced"),
            queued: sum("/candidates/queued"),
            refused: sum("/candidates/refused"),
        });
    }
    if let Some(f) = fake {
        f.on("reflect", dream_testkit::fake_llm::echo_reflect);
    }
    let mut targets = Vec::new();
    let one = schedules.iter().find(|s| s.cycles_per_day == 0).cloned();
    for s in schedules.iter().filter(|s| s.cycles_per_day > 0) {
        targets.push(Target::at_most(
            &format!("tokens per event, {}", s.schedule),
            s.tokens_per_event,
            TOKENS_PER_EVENT,
            "tokens",
        ));
        if let Some(one) = &one {
            targets.push(Target::at_most(
                &format!("tokens per event, {} / one cycle", s.schedule),
                s.tokens_per_event / one.tokens_per_event.max(f64::MIN_POSITIVE),
                SCHEDULE_RATIO,
                "x",
            ));
        }
    }
    notes.push("cycles whose stretch of time holds no event are not run (counted as idle): they find nothing new and call no model".into());
    notes.push("answer retention: LoCoMo questions of categories 1, 2 and 4 whose answer's content words are all in one durable fact (with episodes: or one episode), each conversation against the facts citing its turns".into());
    if fake.is_none() {
        notes.push("not the in-process fake server: stage figures are the cycles' reports (prompt and completion), without the split of the prompt".into());
    }
    Ok(ScenarioResult {
        name: "stream".into(),
        description,
        params: serde_json::json!({
            "events": events.len(),
            "conversations": convs.len(),
            "speakers": speakers.len(),
            "cycles_per_day": opts.cycles_per_day,
            "reflect": if fake.is_some() { opts.stream_reflect.as_str() } else { "the server's" },
            "llm_url": opts.llm_url,
            "model": opts.llm_model,
        }),
        median: batch.clone().unwrap_or_default(),
        runs: batch.into_iter().collect(),
        targets,
        notes,
        extra,
        schedules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_covers_every_day_and_ends_after_the_last_event() {
        let t = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let (first, last) = (t("2023-05-08T13:56:00Z"), t("2023-05-10T23:30:00Z"));
        let two = schedule(first, last, 2);
        assert_eq!(two.first(), Some(&t("2023-05-08T11:00:00Z")));
        assert_eq!(two.len(), 7, "{two:?}");
        assert_eq!(two.last(), Some(&t("2023-05-10T23:31:00Z")));
        assert!(two.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(schedule(first, last, 0), vec![t("2023-05-10T23:31:00Z")]);
        let one = schedule(first, t("2023-05-09T20:00:00Z"), 1);
        assert_eq!(
            one,
            vec![t("2023-05-08T23:00:00Z"), t("2023-05-09T23:00:00Z")]
        );
    }
}
