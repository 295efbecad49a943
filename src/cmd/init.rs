//! `dream init [DIR]`: create a memory repository.

use std::path::Path;

use crate::cli::{Global, InitArgs};
use dream_engine::error::{Context, Result, EXIT_OK};

pub fn run(g: &Global, a: &InitArgs) -> Result<i32> {
    let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
    let dir = super::absolute(&cwd, a.dir.as_deref().unwrap_or(Path::new(".")));
    use dream_engine::edges::repo::Created;
    if let Some(url) = &a.remote {
        let machine = a
            .machine
            .clone()
            .unwrap_or_else(dream_engine::machines::default_machine);
        let (created, synced) =
            dream_engine::machines::init_remote(&dir, url, &machine, super::now(g)?)?;
        let what = match created {
            Created::New => "created a dream repository",
            Created::Finished | Created::Already => "took the dream repository",
        };
        println!(
            "{what} in {}, shared through {url}; this machine ({machine:?}) dreams it",
            dir.display()
        );
        if synced.pushed {
            println!(
                "memory is at the remote: other machines join it with `dream join {url} PATH`"
            );
        }
        for n in &synced.notes {
            eprintln!("dream: {n}");
        }
        return Ok(EXIT_OK);
    }
    match dream_engine::edges::repo::create_at(&dir, super::now(g)?)? {
        Created::New => println!("created a dream repository in {}\nnext: point your agent at {}/events/ and run `dream run`", dir.display(), dir.display()),
        Created::Finished => println!("{} was a dream repository not yet finished (an interrupted init, or a clone without its local state): its inbox folder and state are made now", dir.display()),
        Created::Already => println!("{} is already a dream repository; nothing changed", dir.display()),
    }
    Ok(EXIT_OK)
}
