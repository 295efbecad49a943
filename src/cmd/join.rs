//! `dream join URL PATH`: this machine becomes a member of a shared memory (issue 45).

use crate::cli::{Global, JoinArgs};
use dream_engine::error::{Context, Result, EXIT_OK};
use dream_engine::machines::{self, Joining};

pub fn run(g: &Global, a: &JoinArgs) -> Result<i32> {
    let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
    let root = super::absolute(&cwd, &a.path);
    let j = Joining {
        machine: a.machine.clone().unwrap_or_else(machines::default_machine),
        person: a.person.clone(),
        projects: a.projects.clone(),
    };
    let m = machines::join(&a.url, &root, &j, super::now(g)?)?;
    println!(
        "joined the memory at {} as machine {:?}{}: a local copy is in {}",
        m.remote,
        m.machine,
        m.person
            .as_deref()
            .map(|p| format!(" (person {p:?})"))
            .unwrap_or_default(),
        root.display()
    );
    if !m.projects.is_empty() {
        println!(
            "  ships only events of projects matching: {}",
            m.projects.join(", ")
        );
    }
    println!(
        "next: `dream --repo {0} sync` ships this machine's events and updates the copy; \
         `dream --repo {0} schedule install` runs it from a timer",
        root.display()
    );
    Ok(EXIT_OK)
}
