//! One memory across machines (issue 45): the pure half of the protocol. Exactly one
//! machine dreams (writes memory's branch, fast-forward only, each commit naming it in a
//! `Dream-Machine:` trailer); every other machine is a member that ships its events on a
//! branch of its own (`dream/events/<machine>`, one writer per branch) and reads memory.
//!
//! Here are the decisions that need no git and no disk, so they are tested as data: the
//! membership a memory's local config holds and its text form, the names a machine may
//! take, the trailers, which of a member's commits are new given the dreamer's watermark,
//! whether a refused push met a second dreamer or a person's edits on the git host, which
//! projects' events a membership ships, and how old a copy reads. The engine's
//! `edges::remote` runs git, `machines` orders the steps.

use serde::{Deserialize, Serialize};

/// The trailer every commit of the dreamer carries: which machine dreamed it.
pub const MACHINE_TRAILER: &str = "Dream-Machine";
/// The trailer of a member's commit: the last state sequence number it ships (the
/// member's own watermark: the branch is its commit point).
pub const THROUGH_TRAILER: &str = "Dream-Events-Through";
/// The branch memory lives on at the remote.
pub const MEMORY_BRANCH: &str = "main";
/// A member's branch at the remote: `refs/heads/dream/events/<machine>`.
pub const EVENTS_PREFIX: &str = "dream/events/";
/// Where a fetch keeps the members' branches (remote-tracking refs: nothing of dream's or
/// a person's ever commits there).
pub const FETCHED_PREFIX: &str = "refs/remotes/origin/dream/events/";
/// Where a machine keeps what it fetched of memory's branch.
pub const FETCHED_MEMORY: &str = "refs/remotes/origin/main";
/// The membership file inside `.dream/` (local: never committed).
pub const FILE: &str = "remote.toml";

/// What this machine is to a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Runs the cycles and writes memory's branch.
    Dreamer,
    /// Ships its events and reads memory.
    Member,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Dreamer => "dreamer",
            Role::Member => "member",
        }
    }
}

/// A memory's membership, as `.dream/remote.toml` holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Membership {
    pub role: Role,
    /// The git remote: any URL or path `git` takes (ssh, https, git://, file://).
    pub remote: String,
    /// This machine's name, as the other machines and the commits see it.
    pub machine: String,
    /// Whose events this machine ships (a member's events carry it in `meta.person`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// Only events of projects whose path holds one of these is shipped (empty: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<String>,
    /// Longest a fetch or push may take before it is stopped, in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

fn default_timeout() -> u64 {
    60
}

impl Membership {
    pub fn new(role: Role, remote: &str, machine: &str) -> Membership {
        Membership {
            role,
            remote: remote.to_string(),
            machine: machine.to_string(),
            person: None,
            projects: Vec::new(),
            timeout_secs: default_timeout(),
        }
    }

    /// Read the file's text; `file` names it in the error.
    pub fn parse(text: &str, file: &str) -> Result<Membership, String> {
        let m: Membership =
            toml::from_str(text).map_err(|e| format!("{file}: {}", e.message().trim()))?;
        check_name("machine", &m.machine).map_err(|e| format!("{file}: {e}"))?;
        if m.remote.trim().is_empty() {
            return Err(format!(
                "{file}: `remote` is empty; give the memory's git URL"
            ));
        }
        if m.timeout_secs == 0 {
            return Err(format!("{file}: `timeout_secs` must be at least 1"));
        }
        Ok(m)
    }

    pub fn render(&self) -> String {
        let body = toml::to_string(self).unwrap_or_default();
        format!(
            "# dream: this machine's part in a shared memory (local, never committed).\n\
             # role = \"dreamer\" runs the cycles; \"member\" ships its events and reads memory.\n{body}"
        )
    }

    /// The member branch this machine writes.
    pub fn branch(&self) -> String {
        format!("{EVENTS_PREFIX}{}", self.machine)
    }

    /// Whether an event said in `project` (its repository's path, if known) is shipped.
    pub fn ships(&self, project: Option<&str>) -> bool {
        self.projects.is_empty()
            || project.is_some_and(|p| self.projects.iter().any(|f| p.contains(f.as_str())))
    }
}

/// A machine's (or person's) name: what a git branch and a trailer can carry, readable.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && !name.contains("..")
        && !name.ends_with(".lock")
        && !name.ends_with('.');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} name {name:?} is not usable: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit (for example laptop-ana)"
        ))
    }
}

/// A host name made into a machine name (what cannot be in one becomes '-').
pub fn machine_from_host(host: &str) -> String {
    let cleaned: String = host
        .split('.')
        .next()
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    let cleaned = cleaned.trim_matches('-').to_string();
    if check_name("machine", &cleaned).is_ok() {
        cleaned
    } else {
        "machine".into()
    }
}

/// The value of a trailer in a commit message (the last line that carries it).
pub fn trailer<'a>(message: &'a str, key: &str) -> Option<&'a str> {
    message.lines().rev().find_map(|l| {
        l.strip_prefix(key)
            .and_then(|r| r.strip_prefix(':'))
            .map(str::trim)
    })
}

/// `message` with a `Dream-Machine:` trailer naming `machine` (replacing one it had):
/// appended to its trailer block when its last paragraph is one, else as a new paragraph.
pub fn with_machine(message: &str, machine: &str) -> String {
    let kept: Vec<&str> = message
        .trim_end()
        .lines()
        .filter(|l| trailer(l, MACHINE_TRAILER).is_none())
        .collect();
    let body = kept.join("\n");
    let last = body.rsplit("\n\n").next().unwrap_or_default();
    let in_block = body.contains("\n\n")
        && !last.is_empty()
        && last.lines().all(|l| {
            l.split_once(": ")
                .is_some_and(|(k, _)| !k.is_empty() && !k.contains(' '))
        });
    let sep = if in_block { "\n" } else { "\n\n" };
    format!("{body}{sep}{MACHINE_TRAILER}: {machine}\n")
}

/// What moved memory's branch at the remote beyond what this dreamer has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Moved {
    /// Nothing: the remote's branch is in this machine's history.
    Nothing,
    /// A person's edits on the git host (no commit names a dreaming machine): taken in.
    HandEdits,
    /// Cycles of another dreaming machine (named), or of a copy of this one: stop.
    Dreamer(String),
}

/// Decide from the trailers of the remote's commits that this machine lacks (`None`: a
/// commit without one).
pub fn classify(trailers: &[Option<String>]) -> Moved {
    if trailers.is_empty() {
        return Moved::Nothing;
    }
    match trailers.iter().flatten().next() {
        Some(m) => Moved::Dreamer(m.clone()),
        None => Moved::HandEdits,
    }
}

/// What a dreamer tells a person when another machine's cycles are at the remote.
pub fn second_dreamer(own: &str, other: &str, remote: &str) -> String {
    let who = if own == other {
        format!("another machine also named {other:?} (a copy of this repository?)")
    } else {
        format!("machine {other:?}")
    };
    format!(
        "memory at {remote} holds cycles dreamed by {who}, while this machine ({own:?}) dreams too: \
         only one machine may dream a memory. Nothing was pushed and nothing is lost: this \
         machine's commits stay here, the remote's stay there. Decide which machine dreams; on \
         the other, stop its timers (`dream schedule uninstall`) and make it a member with \
         `dream join {remote} NEW_PATH` (its events are shipped from there)"
    )
}

/// Where a member's decisions on review cards travel: files under this folder of its
/// branch (everything else there is events).
pub const DECISIONS_DIR: &str = "decisions/";

/// A person's decision on a review card made on a member: it travels on the member's
/// branch, and the dreamer applies it (the first decision on a card wins; a later one is
/// reported, not applied).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub id: String,
    pub card: String,
    /// `accept`, `reject` or `edit`.
    pub verb: String,
    #[serde(default)]
    pub reason: String,
    /// The new text of an `edit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    pub machine: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// When it was decided (RFC 3339).
    pub at: String,
}

impl Decision {
    /// A decision, its id a hash of what it says.
    pub fn new(
        card: &str,
        verb: &str,
        reason: &str,
        text: Option<&str>,
        m: &Membership,
        at: &str,
    ) -> Result<Decision, String> {
        if !matches!(verb, "accept" | "reject" | "edit") {
            return Err(format!(
                "{verb:?} is not a decision (accept, reject or edit)"
            ));
        }
        use sha2::{Digest, Sha256};
        let said = format!("{card}\n{verb}\n{reason}\n{text:?}\n{}\n{at}", m.machine);
        let hash = crate::sources::event::hex(&Sha256::digest(said.as_bytes()));
        Ok(Decision {
            id: format!("d_{}", &hash[..12]),
            card: card.to_string(),
            verb: verb.to_string(),
            reason: reason.to_string(),
            text: text.map(str::to_string),
            machine: m.machine.clone(),
            person: m.person.clone(),
            at: at.to_string(),
        })
    }

    /// The reason the dreamer commits it with: the person's own, and who decided where.
    pub fn signed_reason(&self) -> String {
        let who = match &self.person {
            Some(p) => format!("decided by {p} on {}", self.machine),
            None => format!("decided on {}", self.machine),
        };
        if self.reason.trim().is_empty() {
            who
        } else {
            format!("{} ({who})", self.reason.trim())
        }
    }
}

/// How old a copy is, as a person says it: `just now`, `12 min`, `3 h`, `2 days`.
pub fn age(seconds: i64) -> String {
    match seconds.max(0) {
        0..=59 => "just now".into(),
        s @ 60..=3599 => format!("{} min ago", s / 60),
        s @ 3600..=172_799 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}

/// Add who said an event to its `meta`: the machine it was said on and, when the
/// membership names one, the person. What was there under those keys is replaced.
pub fn stamp(
    meta: Option<serde_json::Value>,
    machine: &str,
    person: Option<&str>,
) -> serde_json::Value {
    let mut m = match meta {
        Some(serde_json::Value::Object(m)) => m,
        Some(other) => {
            let mut m = serde_json::Map::new();
            m.insert("value".into(), other);
            m
        }
        None => serde_json::Map::new(),
    };
    m.insert("machine".into(), machine.into());
    if let Some(p) = person {
        m.insert("person".into(), p.into());
    }
    serde_json::Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_membership_reads_back_what_it_wrote_and_refuses_bad_names() {
        let mut m = Membership::new(Role::Member, "ssh://host/memory.git", "laptop");
        m.person = Some("ana".into());
        m.projects = vec!["work/".into()];
        let back = Membership::parse(&m.render(), "remote.toml").unwrap();
        assert_eq!(back, m);
        let bad = m.render().replace("\"laptop\"", "\"my laptop\"");
        let e = Membership::parse(&bad, "remote.toml").unwrap_err();
        assert!(e.contains("remote.toml") && e.contains("my laptop"), "{e}");
        let e = Membership::parse("role = \"boss\"\n", "f").unwrap_err();
        assert!(e.starts_with("f:"), "{e}");
    }

    #[test]
    fn names_are_what_a_branch_and_a_trailer_can_carry() {
        for ok in ["laptop", "ana-desktop", "ci.runner_2"] {
            assert!(check_name("machine", ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "../x", "x.lock", "-x", "a/b", "é"] {
            assert!(check_name("machine", bad).is_err(), "{bad:?}");
        }
        assert_eq!(machine_from_host("ana's box.local"), "ana-s-box");
        assert_eq!(machine_from_host(""), "machine");
    }

    #[test]
    fn the_machine_trailer_joins_the_trailer_block_once() {
        let m = "dream: consolidate\n\npromoted f_1\n\nDream-Cycle: c\nDream-Stage: consolidate\n";
        let out = with_machine(m, "desk");
        assert!(
            out.ends_with("Dream-Stage: consolidate\nDream-Machine: desk\n"),
            "{out}"
        );
        assert_eq!(with_machine(&out, "desk"), out, "idempotent");
        let plain = with_machine("dream: create memory repository\n\nLayout.\n", "desk");
        assert!(
            plain.ends_with("Layout.\n\nDream-Machine: desk\n"),
            "{plain}"
        );
        assert_eq!(trailer(&out, MACHINE_TRAILER), Some("desk"));
        assert_eq!(trailer("subject only", MACHINE_TRAILER), None);
    }

    #[test]
    fn a_refused_push_is_a_second_dreamer_only_when_a_commit_names_a_machine() {
        assert_eq!(classify(&[]), Moved::Nothing);
        assert_eq!(classify(&[None, None]), Moved::HandEdits);
        assert_eq!(
            classify(&[None, Some("desk".into())]),
            Moved::Dreamer("desk".into())
        );
        let e = second_dreamer("laptop", "desk", "file:///m.git");
        assert!(e.contains("\"laptop\"") && e.contains("\"desk\"") && e.contains("dream join"));
        assert!(second_dreamer("desk", "desk", "u").contains("a copy of this repository"));
    }

    #[test]
    fn the_project_filter_ships_matching_projects_only() {
        let mut m = Membership::new(Role::Member, "u", "laptop");
        assert!(m.ships(None) && m.ships(Some("/home/a/x")));
        m.projects = vec!["/work/".into()];
        assert!(m.ships(Some("/home/a/work/api")) && !m.ships(Some("/home/a/private")));
        assert!(
            !m.ships(None),
            "an event of no known project is not a filtered project's"
        );
    }

    #[test]
    fn a_decision_names_who_made_it_where_and_only_the_three_verbs_are_decisions() {
        let mut m = Membership::new(Role::Member, "u", "laptop");
        m.person = Some("ana".into());
        let d = Decision::new("c_1", "accept", "", None, &m, "2026-11-04T10:00:00Z").unwrap();
        assert!(d.id.starts_with("d_") && d.id.len() == 14, "{}", d.id);
        assert_eq!(d.signed_reason(), "decided by ana on laptop");
        let e = Decision::new("c_1", "reject", "small talk", None, &m, "t").unwrap();
        assert_eq!(e.signed_reason(), "small talk (decided by ana on laptop)");
        assert_ne!(d.id, e.id);
        assert!(Decision::new("c_1", "undo", "", None, &m, "t").is_err());
    }

    #[test]
    fn stamping_keeps_the_meta_and_names_machine_and_person() {
        let v = stamp(
            Some(serde_json::json!({"cwd": "/p"})),
            "laptop",
            Some("ana"),
        );
        assert_eq!(
            v,
            serde_json::json!({"cwd": "/p", "machine": "laptop", "person": "ana"})
        );
        assert_eq!(stamp(None, "m", None), serde_json::json!({"machine": "m"}));
        assert_eq!(age(30), "just now");
        assert_eq!(age(600), "10 min ago");
        assert_eq!(age(7200), "2 h ago");
        assert_eq!(age(3 * 86_400), "3 days ago");
    }
}
