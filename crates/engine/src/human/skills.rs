//! `dream skills promote|discard`: a person's decision on a skill, one commit each, under
//! the single-writer lock.
//!
//! Promote moves a draft's folder from `skills/drafts/<name>/` to `skills/active/<name>/`
//! (or writes a proposal card's `SKILL.md` there and decides the card), then, when
//! `skills.install_to` is set, copies the folder there. Discard moves a draft (or an active
//! skill) to `skills/discarded/<name>/`, or writes a proposal's `SKILL.md` there and
//! decides its card; a discarded skill still covers its procedure, so it is not drafted
//! again. The repository changes through `store`; the copy outside it is the only other
//! write.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::edges::fsutil::write_atomic;
use crate::edges::guard;
use crate::edges::store::{Change, Store};
use crate::error::{Context, Error, Result};
use dream_core::schema::settings::Config;
use dream_core::schema::Decision;

use crate::stages::skills::{
    expand_home, proposals, ACTIVE_DIR, DISCARDED_DIR, DRAFTS_DIR, SKILL_FILE,
};
use dream_core::skills::card::SkillCard;
use dream_core::skills::skillmd;

/// What a decision did.
#[derive(Debug, Clone, Serialize)]
pub struct Decided {
    pub name: String,
    /// `draft`, `proposed` or `active`: where the skill was.
    pub from: String,
    /// Its `SKILL.md` now, relative to the repository.
    pub path: String,
    /// The commit, or none when nothing changed.
    pub commit: Option<String>,
    /// Where it was copied (promote with `skills.install_to`).
    pub installed: Option<PathBuf>,
    pub notes: Vec<String>,
}

/// Every file under a folder of the repository, as (path relative to the repository, text).
fn files_under(root: &Path, dir: &str) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_string()];
    while let Some(rel) = stack.pop() {
        let abs = root.join(&rel);
        let entries = std::fs::read_dir(&abs).context(|| format!("listing {}", abs.display()))?;
        for entry in entries {
            let entry = entry.context(|| format!("listing {}", abs.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = format!("{rel}/{name}");
            if entry.path().is_dir() {
                stack.push(child);
            } else {
                let bytes = std::fs::read(entry.path())
                    .context(|| format!("reading {}", entry.path().display()))?;
                let text = String::from_utf8(bytes).map_err(|_| {
                    Error::Input(format!("{child} is not a text file; dream moves skills as text, so move this folder by hand"))
                })?;
                out.push((child, text));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A skill name given on the command line, checked before it becomes a path.
fn check(name: &str) -> Result<()> {
    skillmd::check_name(name)
        .map_err(|e| Error::Usage(format!("{e}; see `dream skills list` for the names")))
}

fn message(subject: &str, lines: &[String], command: &str) -> String {
    let mut m = format!("{subject}\n\n");
    for l in lines {
        m.push_str(l);
        m.push('\n');
    }
    m.push_str(&format!("\nDream-Command: skills {command}\n"));
    m
}

fn not_found(root: &Path, name: &str, verb: &str) -> Error {
    let mut names: Vec<String> = crate::stages::skills::drafts(root)
        .unwrap_or_default()
        .into_iter()
        .map(|s| s.name)
        .collect();
    names.extend(
        proposals(root)
            .map(|p| p.0)
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.name),
    );
    let hint = if names.is_empty() {
        "there are no drafts or proposals".to_string()
    } else {
        format!("drafts and proposals: {}", names.join(", "))
    };
    Error::Usage(format!(
        "no skill draft or proposal named {name:?} to {verb} ({hint})"
    ))
}

/// Copy the skill's files into `<dir>/<name>/`.
fn install(files: &[(String, String)], from: &str, dir: &Path, name: &str) -> Result<PathBuf> {
    let target = dir.join(name);
    for (rel, text) in files {
        let sub = rel
            .strip_prefix(from)
            .unwrap_or(rel)
            .trim_start_matches('/');
        let path = target.join(sub);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).context(|| format!("creating {}", parent.display()))?;
        }
        write_atomic(&path, text.as_bytes())?;
    }
    Ok(target)
}

/// Refuse to install over a different skill of the same name.
fn check_install_target(
    files: &[(String, String)],
    from: &str,
    dir: &Path,
    name: &str,
) -> Result<()> {
    let target = dir.join(name);
    if !target.exists() {
        return Ok(());
    }
    for (rel, text) in files {
        let sub = rel
            .strip_prefix(from)
            .unwrap_or(rel)
            .trim_start_matches('/');
        if std::fs::read_to_string(target.join(sub)).ok().as_deref() != Some(text.as_str()) {
            return Err(Error::Input(format!(
                "{} already holds a different skill named {name}; remove it, or set skills.install_to to another folder (nothing was changed)",
                target.display()
            )));
        }
    }
    Ok(())
}

/// `dream skills promote NAME` of a skill already active: nothing to commit; its copy in
/// `install_dir` (when one is configured) is written again.
fn reinstall(
    root: &Path,
    name: &str,
    active: &str,
    active_file: String,
    install_dir: Option<PathBuf>,
) -> Result<Decided> {
    let files = files_under(root, active)?;
    let mut d = Decided {
        name: name.into(),
        from: "active".into(),
        path: active_file,
        commit: None,
        installed: None,
        notes: vec![format!("{name} is already active")],
    };
    if let Some(dir) = install_dir {
        check_install_target(&files, active, &dir, name).or_else(|_| {
            d.notes.push(format!(
                "replacing the copy in {}",
                dir.join(name).display()
            ));
            Ok::<(), Error>(())
        })?;
        d.installed = Some(install(&files, active, &dir, name)?);
    }
    Ok(d)
}

/// What `promote` makes active: (path in the repository, text) of each file, the folder
/// they are in, and the proposal card they come from.
type ToPromote = (Vec<(String, String)>, String, Option<SkillCard>);

/// The files of the skill `promote` makes active, the folder they are in, and the proposal
/// card they come from: the draft folder's, else a pending proposal's document.
fn to_promote(root: &Path, name: &str, draft: &str) -> Result<ToPromote> {
    if root.join(draft).join(SKILL_FILE).is_file() {
        return Ok((files_under(root, draft)?, draft.to_string(), None));
    }
    let card = proposals(root)?
        .0
        .into_iter()
        .find(|c| c.name == name && c.decision.is_none());
    match card {
        Some(c) => Ok((
            vec![(format!("{draft}/{SKILL_FILE}"), c.document.clone())],
            draft.to_string(),
            Some(c),
        )),
        None => Err(not_found(root, name, "promote")),
    }
}

/// `dream skills promote NAME`.
pub fn promote(root: &Path, config: &Config, name: &str, now: DateTime<Utc>) -> Result<Decided> {
    check(name)?;
    let _writer = guard::begin(root, Utc::now(), Some(&config.inbox.path))?;
    let store = Store::open(root)?;
    let install_dir = config
        .skills
        .install_to
        .as_deref()
        .filter(|d| !d.trim().is_empty())
        .map(|d| expand_home(d.trim()));
    let active = format!("{ACTIVE_DIR}/{name}");
    let draft = format!("{DRAFTS_DIR}/{name}");
    let active_file = format!("{active}/{SKILL_FILE}");

    if root.join(&active_file).is_file() {
        return reinstall(root, name, &active, active_file, install_dir);
    }
    let (files, from, card) = to_promote(root, name, &draft)?;
    let doc = files
        .iter()
        .find(|(rel, _)| *rel == format!("{from}/{SKILL_FILE}"))
        .map(|(_, t)| t.clone())
        .unwrap_or_default();
    let problems = skillmd::validate(&doc, name, false);
    if !problems.is_empty() {
        return Err(Error::Input(format!(
            "{from}/{SKILL_FILE} is not a valid skill: {}; fix it and promote again (nothing was changed)",
            problems.join("; ")
        )));
    }
    if let Some(dir) = &install_dir {
        check_install_target(&files, &from, dir, name)?;
    }

    let mut change = Change::default();
    let mut lines = Vec::new();
    for (rel, text) in &files {
        let to = format!("{active}{}", &rel[from.len()..]);
        change.write(to, text.clone());
        if card.is_none() {
            change.delete(rel.clone());
        }
    }
    let was = match card {
        Some(mut c) => {
            lines.push(format!(
                "promoted   proposal {} -> {active}/ (confidence {:.3})",
                c.id, c.confidence
            ));
            decide(
                &mut change,
                &mut c,
                "accepted",
                "promoted to an active skill",
                now,
            );
            "proposed"
        }
        None => {
            lines.push(format!("promoted   {from}/ -> {active}/"));
            "draft"
        }
    };
    if let Some(dir) = &install_dir {
        lines.push(format!("installing {}", dir.join(name).display()));
    }
    change.message = message(&format!("dream: promote skill {name}"), &lines, "promote");
    crate::agents::context::refresh_file(&store.root, &mut change)?;
    let commit = store.apply(&change)?.map(|o| o.to_string());
    let installed = match &install_dir {
        Some(dir) => Some(
            install(&files, &from, dir, name).map_err(Error::partial(format!(
                "the skill {name} was promoted in the repository{}, but not yet copied into {}",
                commit
                    .as_deref()
                    .map(|c| format!(" (commit {})", &c[..10.min(c.len())]))
                    .unwrap_or_default(),
                dir.display()
            )))?,
        ),
        None => None,
    };
    Ok(Decided {
        name: name.into(),
        from: was.into(),
        path: active_file,
        commit,
        installed,
        notes: Vec::new(),
    })
}

fn decide(
    change: &mut Change,
    card: &mut SkillCard,
    verdict: &str,
    reason: &str,
    now: DateTime<Utc>,
) {
    change.delete(card.path());
    card.decision = Some(Decision {
        verdict: verdict.into(),
        at: now,
        reason: reason.into(),
        fact_id: None,
    });
    card.updated = now;
    change.write(card.path(), card.render());
}

/// `dream skills discard NAME [--reason TEXT]`.
pub fn discard(
    root: &Path,
    config: &Config,
    name: &str,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<Decided> {
    check(name)?;
    let _writer = guard::begin(root, Utc::now(), Some(&config.inbox.path))?;
    let store = Store::open(root)?;
    let to = format!("{DISCARDED_DIR}/{name}");
    let draft = format!("{DRAFTS_DIR}/{name}");
    let active = format!("{ACTIVE_DIR}/{name}");
    let reason = reason.trim();
    let why = if reason.is_empty() {
        String::new()
    } else {
        format!(" -- {reason}")
    };
    let mut change = Change::default();
    let mut lines = Vec::new();
    let mut notes = Vec::new();
    let from = if root.join(&draft).join(SKILL_FILE).is_file() {
        Some((draft, "draft"))
    } else if root.join(&active).join(SKILL_FILE).is_file() {
        Some((active, "active"))
    } else {
        None
    };
    let was = match from {
        Some((dir, was)) => {
            if root.join(&to).exists() {
                return Err(Error::Usage(format!(
                    "{to} already exists; remove it first if this skill should replace it"
                )));
            }
            for (rel, text) in files_under(root, &dir)? {
                change.write(format!("{to}{}", &rel[dir.len()..]), text);
                change.delete(rel);
            }
            lines.push(format!("discarded  {dir}/ -> {to}/{why}"));
            if was == "active" {
                if let Some(d) = config
                    .skills
                    .install_to
                    .as_deref()
                    .filter(|d| !d.trim().is_empty())
                {
                    let d = expand_home(d.trim());
                    notes.push(format!(
                        "a copy installed in {} is left as it is",
                        d.join(name).display()
                    ));
                }
            }
            was
        }
        None => {
            let card = proposals(root)?
                .0
                .into_iter()
                .find(|c| c.name == name && c.decision.is_none());
            let Some(mut c) = card else {
                return Err(not_found(root, name, "discard"));
            };
            change.write(format!("{to}/{SKILL_FILE}"), c.document.clone());
            lines.push(format!("discarded  proposal {} -> {to}/{why}", c.id));
            decide(
                &mut change,
                &mut c,
                "rejected",
                if reason.is_empty() {
                    "discarded"
                } else {
                    reason
                },
                now,
            );
            "proposed"
        }
    };
    change.message = message(&format!("dream: discard skill {name}"), &lines, "discard");
    crate::agents::context::refresh_file(&store.root, &mut change)?;
    let commit = store.apply(&change)?.map(|o| o.to_string());
    Ok(Decided {
        name: name.into(),
        from: was.into(),
        path: format!("{to}/{SKILL_FILE}"),
        commit,
        installed: None,
        notes,
    })
}
