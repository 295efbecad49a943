//! `dream init [DIR]`: create a memory repository.

use std::path::Path;

use crate::cli::{Global, InitArgs};
use crate::error::{Context, Result, EXIT_OK};

pub fn run(g: &Global, a: &InitArgs) -> Result<i32> {
    let cwd = std::env::current_dir().context(|| "reading the current folder".into())?;
    let dir = super::absolute(&cwd, a.dir.as_deref().unwrap_or(Path::new(".")));
    let _ = g;
    match crate::edges::repo::create(&dir)? {
        true => println!("created a dream repository in {}\nnext: point your agent at {}/events/ and run `dream run`", dir.display(), dir.display()),
        false => println!("{} is already a dream repository; nothing changed", dir.display()),
    }
    Ok(EXIT_OK)
}
