//! `dream sync`: ship what is new and fetch memory (a member), or fetch and take in what
//! the members shipped and push memory (the dreamer). Exit 0 when the remote could not be
//! reached: everything waits here, committed, and a note says so on stderr.

use std::time::Duration;

use crate::cli::{Global, SyncArgs};
use dream_engine::error::{Error, Result, EXIT_OK};
use dream_engine::machines::{self, Synced};

pub fn run(g: &Global, a: &SyncArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let bound = match a.timeout {
        None => None,
        Some(t) if t.is_finite() && t > 0.0 && t <= 86_400.0 => Some(Duration::from_secs_f64(t)),
        Some(t) => {
            return Err(Error::Usage(format!(
                "--timeout {t} is not a number of seconds between 0 and 86400"
            )))
        }
    };
    let now = super::now(g)?;
    let s = machines::sync(&root, now, bound)?;
    if a.json {
        super::print_json(&s)?;
    } else {
        print!("{}", render(&s));
    }
    for n in &s.notes {
        eprintln!("dream: {n}");
    }
    if s.role == "dreamer" && apply_decisions(&root, now, !a.json)? {
        // The decisions' commits go out now rather than at the next sync.
        if let Some(s) = machines::after_cycle(&root, now)? {
            for n in &s.notes {
                eprintln!("dream: {n}");
            }
        }
    }
    Ok(EXIT_OK)
}

/// On the dreamer: apply the review decisions members made (stored by the ingest), saying
/// what became of each; whether any was applied.
pub fn apply_decisions(
    root: &std::path::Path,
    now: chrono::DateTime<chrono::Utc>,
    show: bool,
) -> Result<bool> {
    let config = dream_engine::config::load(root)?;
    let done = dream_engine::human::decisions::apply(root, &config, now)?;
    for o in &done {
        let d = &o.decision;
        let who = d.person.as_deref().unwrap_or("someone");
        let line = if o.applied {
            format!(
                "  decision         {} {} by {who} on {}: applied ({})",
                d.verb,
                d.card,
                d.machine,
                &o.note[..o.note.len().min(10)]
            )
        } else {
            format!(
                "  decision         {} {} by {who} on {}: not applied: {}",
                d.verb, d.card, d.machine, o.note
            )
        };
        if show {
            println!("{line}");
        } else {
            eprintln!("dream:{line}");
        }
    }
    Ok(done.iter().any(|o| o.applied))
}

/// What the sync did, one line each.
pub fn render(s: &Synced) -> String {
    let mut out = format!("synced with {} as {} {:?}\n", s.remote, s.role, s.machine);
    if s.role == "member" {
        out.push_str(&format!(
            "  shipped          {} new events{}\n",
            s.shipped,
            if s.pushed {
                ""
            } else {
                " (committed here; pushed at the next sync)"
            }
        ));
        out.push_str(&match (&s.updated, s.fetched) {
            (Some(c), _) => format!("  memory           updated to {}\n", &c[..c.len().min(10)]),
            (None, true) => "  memory           up to date\n".to_string(),
            (None, false) => {
                "  memory           not fetched: the local copy is what it was\n".to_string()
            }
        });
    } else {
        out.push_str(&format!(
            "  members' events  {} new stored{}\n",
            s.ingested,
            if s.fetched { "" } else { " (not fetched)" }
        ));
        if let Some(c) = &s.took_in {
            out.push_str(&format!(
                "  remote edits     taken in ({})\n",
                &c[..c.len().min(10)]
            ));
        }
        out.push_str(if s.pushed {
            "  memory           at the remote\n"
        } else {
            "  memory           committed here, not pushed yet\n"
        });
    }
    out
}
