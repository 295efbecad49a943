//! Reverting a commit fact by fact (for `dream undo --cycle`), as a pure function over
//! file contents: the commit's parent, the commit, and the files as they are now.
//!
//! A textual `git revert` would delete fact lines outright and conflict as soon as a later
//! cycle reinforced a fact. This engine reverts at the level of what the files mean:
//!
//! - **Active facts** (rows of `memory/*.md`, by id) get a three-way merge: a fact the
//!   commit created is taken out to the archive as `undone` (and becomes a veto, so the
//!   same evidence does not bring it back); a fact the commit took out is put back in its
//!   block; a fact the commit changed gets each field back that has not changed since
//!   (supporting events: the ones it added are removed, the ones it removed come back).
//! - **Archive entries** (rows of `archive/facts.md`) are a multiset: entries the commit
//!   added are removed, entries it removed come back. An `undone` entry that leaves the
//!   archive clears its veto, so undoing an undo restores the fact for good.
//! - **Other files** (review cards, digests, drafts) are reverted whole when they are still
//!   as the commit left them; otherwise they are left as they are, and the undo says so.
//!   A rejected card that goes back to the queue clears its veto.
//!
//! Reverting several commits (a whole cycle) applies this newest first.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, NaiveDate, Utc};

use crate::memory::review::{archive_push, parse_archive};
use crate::schema::{self, excerpt, Archived, Block, BlockFile, Card, Fact, Memory};
use crate::selection::veto::Veto;

/// File contents by repo-relative path; `None` is an absent file.
pub type Files = BTreeMap<String, Option<String>>;

/// Who reverts, and why (written into archive entries and vetoes).
pub struct Ctx<'a> {
    pub now: DateTime<Utc>,
    /// The `Dream-Cycle` id of the undo.
    pub decision: &'a str,
    /// Why, in a sentence ("cycle X undone by a person").
    pub reason: &'a str,
}

/// What reverting did, accumulated over commits.
#[derive(Debug, Default)]
pub struct Reverted {
    /// One line per mutation, for the commit body.
    pub lines: Vec<String>,
    /// Facts taken out that become vetoes.
    pub vetoes: Vec<Veto>,
    /// Vetoes to forget (their decision was reverted).
    pub cleared: Vec<String>,
    /// How many changes were made and left as they are.
    pub changed: usize,
    pub left: usize,
}

/// The files that hold facts: every block, and the archive.
pub fn fact_paths() -> Vec<String> {
    let mut v: Vec<String> = Block::ALL.iter().map(|b| b.path()).collect();
    v.push(schema::ARCHIVE.to_string());
    v
}

/// Revert one commit onto `head` (which must hold every fact path and every path in
/// `changed`); `parent` and `commit` give a path's content before and after the commit.
pub fn revert_commit(
    parent: &Files,
    commit: &Files,
    changed: &[String],
    head: &mut Files,
    ctx: &Ctx<'_>,
    out: &mut Reverted,
) {
    let facts = fact_paths();
    let get = |f: &Files, p: &str| f.get(p).cloned().flatten();
    let mut requeued: BTreeSet<String> = BTreeSet::new();
    for path in changed.iter().filter(|p| !facts.contains(p)) {
        let (p, c, h) = (get(parent, path), get(commit, path), get(head, path));
        if h != c {
            out.left += 1;
            let why = if h.is_none() {
                "gone since (decided or removed)"
            } else {
                "changed since"
            };
            out.lines
                .push(format!("left       {path}  {why}; left as it is"));
            continue;
        }
        let card = |text: &Option<String>| text.as_deref().and_then(|t| Card::parse(t).ok());
        let decided = path.starts_with(schema::DECIDED_DIR);
        let line = match (&p, &c) {
            (None, Some(_)) => {
                let was = card(&c);
                if let Some(d) = was.as_ref().and_then(|k| k.decision.as_ref()) {
                    if let Some(f) = &d.fact_id {
                        requeued.insert(f.clone());
                    }
                    if d.verdict == "rejected" {
                        let id = was.as_ref().map(|k| k.id.clone()).unwrap_or_default();
                        out.cleared.push(base_id(&id).to_string());
                    }
                }
                match (was, decided) {
                    (Some(k), true) => format!(
                        "undecided  {}  the decision ({}) is withdrawn",
                        k.id,
                        verdict(&k)
                    ),
                    (Some(k), false) => format!("unqueued   {}  {}", k.id, excerpt(&k.text, 100)),
                    (None, _) => format!("removed    {path}"),
                }
            }
            (Some(_), None) => match card(&p) {
                Some(k) if !decided => format!("requeued   {}  {}", k.id, excerpt(&k.text, 100)),
                Some(k) => {
                    // A rejection coming back brings its veto back.
                    if let Some(d) = k.decision.as_ref().filter(|d| d.verdict == "rejected") {
                        out.vetoes.push(Veto {
                            id: base_id(&k.id).to_string(),
                            kind: "rejected".into(),
                            text: k.text.clone(),
                            events: k.supporting_event_ids.clone(),
                            reason: d.reason.clone(),
                            at: d.at,
                            decision: ctx.decision.into(),
                        });
                    }
                    format!(
                        "redecided  {}  the decision ({}) stands again",
                        k.id,
                        verdict(&k)
                    )
                }
                None => format!("restored   {path}"),
            },
            _ => format!("reverted   {path}"),
        };
        head.insert(path.clone(), p);
        out.changed += 1;
        out.lines.push(line);
    }
    if changed.iter().any(|p| facts.contains(p)) {
        revert_facts(parent, commit, head, &requeued, ctx, out);
    }
}

fn verdict(card: &Card) -> String {
    card.decision
        .as_ref()
        .map(|d| d.verdict.clone())
        .unwrap_or_default()
}

/// `c_1a2b3c4d-2` -> `c_1a2b3c4d`.
fn base_id(id: &str) -> &str {
    id.split('-').next().unwrap_or(id)
}

struct World {
    memory: Memory,
    archive: BlockFile,
}

fn world(files: &Files, today: NaiveDate) -> World {
    let blocks = Block::ALL
        .iter()
        .map(|b| match files.get(&b.path()).cloned().flatten() {
            Some(text) => BlockFile::parse(*b, &text, today),
            None => BlockFile::empty(*b),
        })
        .collect();
    World {
        memory: Memory::new(blocks),
        archive: parse_archive(files.get(schema::ARCHIVE).cloned().flatten().as_deref()),
    }
}

fn active(m: &Memory) -> BTreeMap<String, (Block, Fact)> {
    m.facts()
        .filter(|(_, f)| !f.id.is_empty())
        .map(|(b, f)| (f.id.clone(), (b, f.clone())))
        .collect()
}

fn entries(a: &BlockFile) -> Vec<String> {
    a.facts()
        .filter(|f| !f.id.is_empty())
        .map(Fact::render)
        .collect()
}

/// Multiset difference `a - b`.
fn minus(a: &[String], b: &[String]) -> Vec<String> {
    let mut rest: Vec<&String> = b.iter().collect();
    let mut out = Vec::new();
    for x in a {
        match rest.iter().position(|y| *y == x) {
            Some(i) => {
                rest.remove(i);
            }
            None => out.push(x.clone()),
        }
    }
    out
}

fn revert_facts(
    parent: &Files,
    commit: &Files,
    head: &mut Files,
    requeued: &BTreeSet<String>,
    ctx: &Ctx<'_>,
    out: &mut Reverted,
) {
    let today = ctx.now.date_naive();
    let p = world(parent, today);
    let c = world(commit, today);
    let mut h = world(head, today);

    // Archive entries: the commit's additions leave, its removals come back.
    let (pe, ce) = (entries(&p.archive), entries(&c.archive));
    let mut returning: BTreeSet<String> = BTreeSet::new();
    for line in minus(&ce, &pe) {
        match h.archive.remove_where(|f| f.render() == line) {
            Some(f) => {
                if f.extra.get("why").map(String::as_str) == Some("undone") {
                    out.cleared.push(f.id.clone());
                }
            }
            None => {
                out.left += 1;
                let id = Fact::parse(&line, today).map(|f| f.id).unwrap_or_default();
                out.lines.push(format!(
                    "left       {id}  its archive entry is gone already"
                ));
            }
        }
    }
    for line in minus(&pe, &ce) {
        let fact = Fact::parse(&line, today).expect("archive lines parse");
        if !entries(&h.archive).contains(&line) {
            returning.insert(fact.id.clone());
            // An undone fact going back to the archive brings its veto back.
            if fact.extra.get("why").map(String::as_str) == Some("undone") {
                out.vetoes.push(Veto {
                    id: fact.id.clone(),
                    kind: "undone".into(),
                    text: fact.text.clone(),
                    events: fact.support.clone(),
                    reason: fact.extra.get("reason").cloned().unwrap_or_default(),
                    at: ctx.now,
                    decision: ctx.decision.into(),
                });
            }
            h.archive.push(fact);
        }
    }

    // Active facts, by id.
    let (pa, ca, ha) = (active(&p.memory), active(&c.memory), active(&h.memory));
    let ids: BTreeSet<&String> = pa.keys().chain(ca.keys()).collect();
    for id in ids {
        let (pf, cf) = (pa.get(id), ca.get(id));
        if pf == cf {
            continue;
        }
        let hf = ha.get(id);
        match (pf, cf, hf) {
            (None, Some(_), Some((hb, hfact))) => {
                h.memory.remove(id);
                out.changed += 1;
                if returning.contains(id) {
                    out.lines.push(format!(
                        "archived   {id}  back to the archive, as before  {}",
                        excerpt(&hfact.text, 80)
                    ));
                    continue;
                }
                out.lines.push(format!(
                    "undone     {id}  [{}/{}] {}",
                    hb.as_str(),
                    hfact.category,
                    hfact.text
                ));
                archive_push(
                    &mut h.archive,
                    &Archived {
                        fact: hfact.clone(),
                        block: *hb,
                        archived: today,
                        why: "undone".into(),
                        reason: ctx.reason.into(),
                        policy: String::new(),
                    },
                );
                if !requeued.contains(id) {
                    out.vetoes.push(Veto {
                        id: id.clone(),
                        kind: "undone".into(),
                        text: hfact.text.clone(),
                        events: hfact.support.clone(),
                        reason: ctx.reason.into(),
                        at: ctx.now,
                        decision: ctx.decision.into(),
                    });
                }
            }
            (None, Some(_), None) => {
                out.left += 1;
                out.lines.push(format!(
                    "left       {id}  no longer active; nothing to undo"
                ));
            }
            (Some((pb, pfact)), None, None) => {
                h.memory.block_mut(*pb).push(pfact.clone());
                out.changed += 1;
                out.cleared.push(id.clone());
                out.lines.push(format!(
                    "restored   {id}  [{}/{}] {}",
                    pb.as_str(),
                    pfact.category,
                    pfact.text
                ));
            }
            (Some(_), None, Some(_)) => {
                out.left += 1;
                out.lines.push(format!(
                    "left       {id}  active again since; left as it is"
                ));
            }
            (Some(pv), Some(cv), Some(hv)) => {
                let (merged, fields) = merge_fact(pv, cv, hv);
                if fields.is_empty() {
                    out.left += 1;
                    out.lines
                        .push(format!("left       {id}  changed since; left as it is"));
                    continue;
                }
                h.memory.remove(id);
                h.memory.block_mut(merged.0).push(merged.1);
                out.changed += 1;
                out.lines
                    .push(format!("reverted   {id}  {}", fields.join(", ")));
            }
            (Some(_), Some(_), None) => {
                out.left += 1;
                out.lines
                    .push(format!("left       {id}  no longer active; left as it is"));
            }
            (None, None, _) => {}
        }
    }

    for b in Block::ALL {
        let new = h.memory.block(b).render();
        let path = b.path();
        let had = head.get(&path).cloned().flatten();
        if had.as_deref() != Some(new.as_str())
            && !(had.is_none() && new == BlockFile::empty(b).render())
        {
            head.insert(path, Some(new));
        }
    }
    let new = h.archive.render();
    let had = head.get(schema::ARCHIVE).cloned().flatten();
    if had.as_deref() != Some(new.as_str()) && !(had.is_none() && new == schema::archive_header()) {
        head.insert(schema::ARCHIVE.to_string(), Some(new));
    }
}

/// Three-way merge of one fact: each field the commit changed and nobody changed since
/// goes back to the parent's value. Returns the merged fact and the fields reverted.
fn merge_fact(
    p: &(Block, Fact),
    c: &(Block, Fact),
    h: &(Block, Fact),
) -> ((Block, Fact), Vec<String>) {
    let mut fields = Vec::new();
    let mut block = h.0;
    if p.0 != c.0 && h.0 == c.0 {
        block = p.0;
        fields.push(format!("moved back to {}", p.0.as_str()));
    }
    let (pf, cf, hf) = (&p.1, &c.1, &h.1);
    let mut f = hf.clone();
    macro_rules! field {
        ($name:ident, $label:expr) => {
            if pf.$name != cf.$name && hf.$name == cf.$name {
                f.$name = pf.$name.clone();
                fields.push($label.to_string());
            }
        };
    }
    field!(text, "text");
    field!(category, "category");
    field!(origin, "origin");
    field!(first_seen, "first seen");
    field!(last_seen, format!("last seen back to {}", pf.last_seen));
    field!(valid_from, "valid from");
    field!(valid_to, "valid to");
    field!(extra, "metadata");
    let added: Vec<&String> = cf
        .support
        .iter()
        .filter(|e| !pf.support.contains(e))
        .collect();
    let removed: Vec<&String> = pf
        .support
        .iter()
        .filter(|e| !cf.support.contains(e))
        .collect();
    let before = f.support.len();
    f.support.retain(|e| !added.contains(&e));
    let dropped = before - f.support.len();
    let mut back = 0;
    for e in removed {
        if !f.support.contains(e) {
            f.support.push(e.clone());
            back += 1;
        }
    }
    if dropped > 0 {
        fields.push(format!("-{dropped} supporting events"));
    }
    if back > 0 {
        fields.push(format!("+{back} supporting events back"));
    }
    ((block, f), fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(pairs: &[(&str, &str)]) -> Files {
        pairs
            .iter()
            .map(|(p, t)| (p.to_string(), Some(t.to_string())))
            .collect()
    }

    fn human(lines: &[&str]) -> String {
        let mut s = Block::Human.empty_file();
        for l in lines {
            s.push_str(l);
            s.push('\n');
        }
        s
    }

    const A: &str = "- I live in Lisbon. <!-- id=f_a cat=identity by=auto first=2026-11-01 last=2026-11-02 ev=e1,e2,e3 -->";
    const A_REINFORCED: &str = "- I live in Lisbon. <!-- id=f_a cat=identity by=auto first=2026-11-01 last=2026-11-05 ev=e1,e2,e3,e4 -->";

    fn ctx() -> Ctx<'static> {
        Ctx {
            now: "2026-11-09T10:00:00Z".parse().unwrap(),
            decision: "undo-1",
            reason: "cycle c1 undone by a person",
        }
    }

    #[test]
    fn a_created_fact_is_archived_as_undone_even_after_later_reinforcement() {
        let parent = files(&[("memory/human.md", &human(&[]))]);
        let commit = files(&[("memory/human.md", &human(&[A]))]);
        let mut head = files(&[("memory/human.md", &human(&[A_REINFORCED]))]);
        let mut out = Reverted::default();
        revert_commit(
            &parent,
            &commit,
            &["memory/human.md".into()],
            &mut head,
            &ctx(),
            &mut out,
        );
        let h = head["memory/human.md"].clone().unwrap();
        assert!(!h.contains("id=f_a"), "{h}");
        let a = head["archive/facts.md"].clone().unwrap();
        assert!(a.contains("id=f_a") && a.contains("why=undone"), "{a}");
        assert_eq!(out.vetoes.len(), 1);
        assert_eq!(out.vetoes[0].events, vec!["e1", "e2", "e3", "e4"]);
    }

    #[test]
    fn a_reinforcement_is_reverted_field_by_field() {
        let parent = files(&[("memory/human.md", &human(&[A]))]);
        let commit = files(&[("memory/human.md", &human(&[A_REINFORCED]))]);
        let mut head = commit.clone();
        let mut out = Reverted::default();
        revert_commit(
            &parent,
            &commit,
            &["memory/human.md".into()],
            &mut head,
            &ctx(),
            &mut out,
        );
        assert_eq!(head["memory/human.md"].clone().unwrap(), human(&[A]));
        assert!(
            out.lines[0].contains("-1 supporting events"),
            "{:?}",
            out.lines
        );
        assert!(out.vetoes.is_empty());
    }

    #[test]
    fn undoing_an_undo_restores_the_fact_and_clears_its_veto() {
        let parent = files(&[("memory/human.md", &human(&[A]))]);
        let mut after_undo = parent.clone();
        let mut out = Reverted::default();
        // The undo itself, as the first revert.
        let creation = files(&[("memory/human.md", &human(&[]))]);
        revert_commit(
            &creation,
            &parent,
            &["memory/human.md".into()],
            &mut after_undo,
            &ctx(),
            &mut out,
        );
        assert!(after_undo["archive/facts.md"].is_some());
        // Now revert the undo commit.
        let mut head = after_undo.clone();
        let mut out2 = Reverted::default();
        let changed = vec![
            "memory/human.md".to_string(),
            "archive/facts.md".to_string(),
        ];
        revert_commit(&parent, &after_undo, &changed, &mut head, &ctx(), &mut out2);
        assert_eq!(head["memory/human.md"].clone().unwrap(), human(&[A]));
        assert!(!head["archive/facts.md"].clone().unwrap().contains("id=f_a"));
        assert!(
            out2.cleared.contains(&"f_a".to_string()),
            "{:?}",
            out2.cleared
        );
        assert!(out2.vetoes.is_empty());
    }

    #[test]
    fn undoing_the_undo_of_an_undo_brings_the_veto_back() {
        let parent = files(&[("memory/human.md", &human(&[A]))]);
        let creation = files(&[("memory/human.md", &human(&[]))]);
        let changed = vec![
            "memory/human.md".to_string(),
            "archive/facts.md".to_string(),
        ];
        // U1 undoes the fact; U2 undoes U1; U3 undoes U2.
        let mut u1 = parent.clone();
        revert_commit(
            &creation,
            &parent,
            &changed[..1],
            &mut u1,
            &ctx(),
            &mut Reverted::default(),
        );
        let mut u2 = u1.clone();
        let mut out2 = Reverted::default();
        revert_commit(&parent, &u1, &changed, &mut u2, &ctx(), &mut out2);
        assert!(
            out2.vetoes.is_empty() && out2.cleared == vec!["f_a".to_string(), "f_a".to_string()]
        );
        let mut u3 = u2.clone();
        let mut out3 = Reverted::default();
        revert_commit(&u1, &u2, &changed, &mut u3, &ctx(), &mut out3);
        assert_eq!(u3["memory/human.md"].clone().unwrap(), human(&[]));
        assert_eq!(out3.vetoes.len(), 1, "{:?}", out3.lines);
        assert_eq!(out3.vetoes[0].id, "f_a");
        let archive = u3["archive/facts.md"].clone().unwrap();
        assert_eq!(archive.matches("id=f_a ").count(), 1, "{archive}");
    }

    #[test]
    fn a_file_changed_since_is_left_as_it_is() {
        let parent = Files::new();
        let commit = files(&[("review/c_1.md", "v1")]);
        let mut head = files(&[("review/c_1.md", "v2")]);
        let mut out = Reverted::default();
        revert_commit(
            &parent,
            &commit,
            &["review/c_1.md".into()],
            &mut head,
            &ctx(),
            &mut out,
        );
        assert_eq!(head["review/c_1.md"].as_deref(), Some("v2"));
        assert_eq!(out.left, 1);
    }
}
