//! The audit trail read back from commit messages (for `dream log`, `explain`, `undo`):
//! pure parsing of what `cycle`, `review` and `undo` write into a commit (a subject, one
//! line per mutation, trailers `Dream-Cycle:`, `Dream-Stage:`, `Dream-Tokens:`,
//! `Dream-Degraded:`, `Dream-Undoes:`), and grouping of commits into cycles.
//!
//! A mutation line starts with a lower-case verb padded to a column (`promoted   f_...`).
//! `refused` lines are refusals; lines that say `engine-enforced` are mutations the engine
//! applied on its own (SPEC S4 step 9); `degraded` lines name a stage that fell back to its
//! conservative default; every other verb is a mutation that was applied.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Which commit, when, and what it says it is: the head that `log` and `explain` both
/// show of a commit.
#[derive(Debug, Clone, Serialize)]
pub struct CommitHead {
    pub id: String,
    pub short: String,
    pub time: DateTime<Utc>,
    pub subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
}

/// One commit of the memory repository, as read from git.
#[derive(Debug, Clone, Serialize)]
pub struct CommitNote {
    #[serde(flatten)]
    pub head: CommitHead,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undoes: Option<String>,
    pub mutations: Vec<Mutation>,
    /// The recall quiz's score (`Dream-Quiz:`), on a cycle's last commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quiz: Option<crate::recall::quiz::Summary>,
}

/// One line of a commit body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mutation {
    /// `applied`, `refused`, `engine` or `degraded`.
    pub kind: &'static str,
    pub verb: String,
    pub text: String,
}

impl Mutation {
    pub fn line(&self) -> String {
        format!("{:<10} {}", self.verb, self.text)
    }
}

/// Parse a commit message.
pub fn parse(id: &str, time: DateTime<Utc>, message: &str) -> CommitNote {
    let mut lines = message.lines();
    let subject = lines.next().unwrap_or_default().trim().to_string();
    let mut note = CommitNote {
        head: CommitHead {
            id: id.to_string(),
            short: id.chars().take(7).collect(),
            time,
            subject,
            cycle: None,
            stage: None,
        },
        tokens: None,
        degraded: Vec::new(),
        undoes: None,
        mutations: Vec::new(),
        quiz: None,
    };
    for line in lines {
        if let Some((key, value)) = trailer(line) {
            let value = value.to_string();
            match key {
                "Dream-Cycle" => note.head.cycle = Some(value),
                "Dream-Stage" => note.head.stage = Some(value),
                "Dream-Tokens" => note.tokens = value.parse().ok(),
                "Dream-Degraded" if !note.degraded.contains(&value) => note.degraded.push(value),
                "Dream-Undoes" => note.undoes = Some(value),
                "Dream-Quiz" => note.quiz = crate::recall::quiz::Summary::parse_trailer(&value),
                _ => {}
            }
            continue;
        }
        if let Some(m) = mutation(line) {
            note.mutations.push(m);
        }
    }
    note
}

fn trailer(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(": ")?;
    (k.starts_with("Dream-") && !k.contains(' ')).then_some((k, v.trim()))
}

fn mutation(line: &str) -> Option<Mutation> {
    let line = line.trim_end();
    let end = line.find(' ')?;
    let verb = &line[..end];
    if verb.is_empty() || !verb.chars().all(|c| c.is_ascii_lowercase() || c == '-') {
        return None;
    }
    let text = line[end..].trim_start().to_string();
    if text.is_empty() {
        return None;
    }
    let kind = if verb == "refused" {
        "refused"
    } else if verb == "degraded" {
        "degraded"
    } else if verb.starts_with("enforced") || text.contains("engine-enforced") {
        "engine"
    } else {
        "applied"
    };
    Some(Mutation {
        kind,
        verb: verb.to_string(),
        text,
    })
}

/// A cycle (or a review session, an undo, a person's own commit) and its commits.
#[derive(Debug, Clone, Serialize)]
pub struct CycleLog {
    /// The `Dream-Cycle` id; for a commit without one, its short id.
    pub cycle: String,
    /// `evening`, `morning`, `review`, `undo`, or `other` (not written by dream).
    pub kind: String,
    pub time: DateTime<Utc>,
    /// Tokens the cycle spent (the largest `Dream-Tokens` among its commits).
    pub tokens: u64,
    pub applied: usize,
    pub refused: usize,
    pub engine: usize,
    pub degraded: Vec<String>,
    /// The undo that reverted this cycle, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undone_by: Option<String>,
    /// True for a cycle that changed nothing, so made no commit (from the state database).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_commit: bool,
    /// For a cycle that made no commit: its refusals, from the state's cycle record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refusals: Vec<Mutation>,
    pub commits: Vec<CommitNote>,
    /// The cycle's recall quiz: its score (from the `Dream-Quiz:` trailer or the cycle
    /// record) and, from the cycle record, each failing question in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quiz: Option<crate::recall::quiz::Summary>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub quiz_failures: Vec<String>,
}

/// The kind of a cycle id.
pub fn kind_of(cycle: &str) -> &'static str {
    if cycle.starts_with("review-") {
        "review"
    } else if cycle.starts_with("undo-") {
        "undo"
    } else if cycle.ends_with("-evening") {
        "evening"
    } else if cycle.ends_with("-morning") {
        "morning"
    } else {
        "cycle"
    }
}

/// Group commits (newest first) by their `Dream-Cycle` trailer; a commit without one is a
/// group of its own. Groups keep the order of their newest commit; commits within a group
/// are oldest first, the order they were made in.
pub fn group(commits: Vec<CommitNote>) -> Vec<CycleLog> {
    let mut out: Vec<CycleLog> = Vec::new();
    for c in commits {
        let key = c.head.cycle.clone();
        let existing = key.as_ref().and_then(|k| {
            out.iter_mut()
                .find(|g| g.commits[0].head.cycle.as_ref() == Some(k))
        });
        match existing {
            Some(g) => g.commits.push(c),
            None => out.push(CycleLog {
                cycle: key.clone().unwrap_or_else(|| c.head.short.clone()),
                kind: key.as_deref().map_or("other", kind_of).to_string(),
                time: c.head.time,
                tokens: 0,
                applied: 0,
                refused: 0,
                engine: 0,
                degraded: Vec::new(),
                undone_by: None,
                no_commit: false,
                refusals: Vec::new(),
                commits: vec![c],
                quiz: None,
                quiz_failures: Vec::new(),
            }),
        }
    }
    let undos: Vec<(String, String)> = out
        .iter()
        .flat_map(|g| {
            g.commits
                .iter()
                .filter_map(|c| c.undoes.clone().map(|u| (u, g.cycle.clone())))
        })
        .collect();
    for g in &mut out {
        g.commits.reverse();
        g.time = g.commits.first().map_or(g.time, |c| c.head.time);
        for c in &g.commits {
            // `Dream-Tokens:` is each stage's own spend: a cycle spent their sum.
            g.tokens += c.tokens.unwrap_or(0);
            if c.quiz.is_some() {
                g.quiz = c.quiz.clone();
            }
            for d in &c.degraded {
                if !g.degraded.contains(d) {
                    g.degraded.push(d.clone());
                }
            }
            for m in &c.mutations {
                match m.kind {
                    "refused" => g.refused += 1,
                    "engine" => g.engine += 1,
                    "applied" => g.applied += 1,
                    _ => {}
                }
            }
        }
        g.undone_by = undos
            .iter()
            .rev()
            .find(|(u, _)| *u == g.cycle)
            .map(|(_, by)| by.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSG: &str =
        "dream: evening cycle 2026-11-06: 1 promoted, 0 queued, 0 reinforced, 1 refused

promoted   f_1  [human/identity] I live in Lisbon.  (support 3, days 2, confidence 0.9)
refused    k_2  \"I live on Mars\"  -- invented name \"Mars\"
dropped    f_3  duplicate of f_1 (similarity 0.950, engine-enforced)
degraded   judge: network down

Dream-Cycle: 20261106T210000Z-evening
Dream-Stage: consolidate
Dream-Tokens: 1200
Dream-Degraded: judge
";

    #[test]
    fn a_cycle_commit_parses_into_mutations_and_trailers() {
        let n = parse("abcdef0123", "2026-11-06T21:00:00Z".parse().unwrap(), MSG);
        assert_eq!(n.head.cycle.as_deref(), Some("20261106T210000Z-evening"));
        assert_eq!(n.head.stage.as_deref(), Some("consolidate"));
        assert_eq!(n.tokens, Some(1200));
        assert_eq!(n.degraded, vec!["judge"]);
        let kinds: Vec<&str> = n.mutations.iter().map(|m| m.kind).collect();
        assert_eq!(kinds, vec!["applied", "refused", "engine", "degraded"]);
        assert_eq!(n.head.short, "abcdef0");
    }

    #[test]
    fn commits_group_by_cycle_and_undos_are_linked() {
        let t = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let undo = "dream: undo cycle X\n\nundone     f_1  [human/identity] I live in Lisbon.\n\nDream-Cycle: undo-1\nDream-Stage: undo\nDream-Tokens: 0\nDream-Undoes: 20261106T210000Z-evening\n";
        let commits = vec![
            parse("3", t("2026-11-07T10:00:00Z"), undo),
            parse("2", t("2026-11-06T21:00:01Z"), MSG),
            parse(
                "1",
                t("2026-11-06T21:00:00Z"),
                &MSG.replace("consolidate", "adopt")
                    .replace("Dream-Tokens: 1200", "Dream-Tokens: 300"),
            ),
            parse(
                "0",
                t("2026-11-01T00:00:00Z"),
                "dream: create memory repository\n",
            ),
        ];
        let g = group(commits);
        assert_eq!(g.len(), 3);
        assert_eq!(g[0].kind, "undo");
        assert_eq!(g[1].commits.len(), 2);
        assert_eq!(g[1].commits[0].head.id, "1", "oldest first within a cycle");
        assert_eq!(g[1].undone_by.as_deref(), Some("undo-1"));
        assert_eq!(
            (g[1].applied, g[1].refused, g[1].engine, g[1].tokens),
            (2, 2, 2, 1500),
            "the stages' own spends add up"
        );
        assert_eq!(g[2].kind, "other");
    }
}
