//! `dream skills list|show|promote|discard`: the skills drafted from recurring procedures.

use crate::cli::{Global, SkillsAction, SkillsArgs};
use dream_core::schema::excerpt;
use dream_core::schema::settings::Config;
use dream_engine::error::{Error, Result, EXIT_OK};
use dream_engine::human::skills::{self as manage, Decided};
use dream_engine::stages::skills::{self, Skill, Status};

pub fn run(g: &Global, a: &SkillsArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let config = dream_engine::config::load(&root)?;
    match &a.action {
        SkillsAction::List(l) => {
            let mut all = skills::list(&root, &config, true)?;
            all.sort_by(|x, y| x.status.cmp(&y.status).then(x.name.cmp(&y.name)));
            if l.json {
                super::print_json(&all)?;
            } else {
                print!("{}", table(&all));
            }
        }
        SkillsAction::Show(s) => {
            let skill = find(&root, &config, &s.name)?;
            print!("{}", skill.document);
            if skill.status == Status::Proposed {
                eprintln!(
                    "(proposed by {}; decide with `dream skills promote {}` or `dream skills discard {}`)",
                    skill.path, skill.name, skill.name
                );
            }
            for p in &skill.problems {
                eprintln!("warning: {}: {p}", skill.path);
            }
        }
        SkillsAction::Promote(s) => {
            let d = manage::promote(&root, &config, &s.name, super::now(g)?)?;
            print_decided("promoted", &d);
            match &d.installed {
                Some(dir) => println!("installed: {}", dir.display()),
                None => println!(
                    "not installed anywhere: set skills.install_to in dream.toml (for example \"~/.claude/skills\") to copy active skills where your agent reads them"
                ),
            }
        }
        SkillsAction::Discard(s) => {
            let d = manage::discard(&root, &config, &s.name, &s.reason, super::now(g)?)?;
            print_decided("discarded", &d);
        }
    }
    Ok(EXIT_OK)
}

fn print_decided(verb: &str, d: &Decided) {
    for n in &d.notes {
        println!("note: {n}");
    }
    match &d.commit {
        Some(c) => println!(
            "{verb} {} ({}): {} (commit {})",
            d.name,
            d.from,
            d.path,
            &c[..c.len().min(10)]
        ),
        None => println!(
            "{}: {} (no commit: nothing in the repository changed)",
            d.name, d.path
        ),
    }
}

/// The skill called `name`: the repository's first (draft, proposal, active, discarded),
/// else an installed one.
fn find(root: &std::path::Path, config: &Config, name: &str) -> Result<Skill> {
    let mut all = skills::list(root, config, true)?;
    all.sort_by_key(|s| s.status);
    let names: Vec<String> = all.iter().map(|s| s.name.clone()).collect();
    all.into_iter().find(|s| s.name == name).ok_or_else(|| {
        Error::Usage(if names.is_empty() {
            format!("no skill named {name:?}: there are no skills yet")
        } else {
            format!(
                "no skill named {name:?}; known skills: {}",
                names.join(", ")
            )
        })
    })
}

fn table(all: &[Skill]) -> String {
    if all.is_empty() {
        return "no skills yet: an evening cycle drafts one when the same procedure recurs on several days \
                across sessions (see docs/skills.md)\n"
            .into();
    }
    let width = all.iter().map(|s| s.name.len()).max().unwrap_or(4).max(4);
    let mut o = format!("{:<10} {:<width$}  description\n", "status", "name");
    for s in all {
        let mut desc = excerpt(&s.description, 90);
        let m = &s.metadata;
        if let (Some(n), Some(days), Some(c)) = (
            m.get("dream-instances"),
            m.get("dream-days"),
            m.get("dream-confidence"),
        ) {
            desc.push_str(&format!(" ({n} instances, {days} days, confidence {c})"));
        }
        if !s.problems.is_empty() {
            desc.push_str(&format!(" [invalid: {}]", s.problems.join("; ")));
        }
        o.push_str(&format!(
            "{:<10} {:<width$}  {desc}\n",
            s.status.as_str(),
            s.name
        ));
    }
    let waiting = all
        .iter()
        .filter(|s| matches!(s.status, Status::Draft | Status::Proposed))
        .count();
    if waiting > 0 {
        o.push_str(&format!(
            "\n{waiting} awaiting a decision: `dream skills show NAME`, then `dream skills promote NAME` or `dream skills discard NAME --reason TEXT`\n"
        ));
    }
    o
}
