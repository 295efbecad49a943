//! `dream completions SHELL` and `dream man`: generated from the clap definitions in
//! `cli.rs`, so they always match the command line they describe.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use dream_engine::error::{Context, Result, EXIT_OK};

pub fn completions(a: &CompletionsArgs) -> Result<i32> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "dream", &mut out);
    print!("{}", String::from_utf8_lossy(&out));
    Ok(EXIT_OK)
}

pub fn man(a: &ManArgs) -> Result<i32> {
    let cmd = Cli::command();
    match &a.out_dir {
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut out)
                .context(|| "rendering the man page".into())?;
            print!("{}", String::from_utf8_lossy(&out));
        }
        Some(dir) => {
            let mut cmd = cmd.disable_help_subcommand(true);
            cmd.build();
            for p in write_pages(cmd, dir)? {
                println!("wrote {}", p.display());
            }
        }
    }
    Ok(EXIT_OK)
}

/// Write the page of `cmd` and of each visible subcommand, recursively (dream.1,
/// dream-run.1, dream-schedule-install.1, ...). `cmd` must be built, so that subcommands
/// carry their full display names.
fn write_pages(cmd: clap::Command, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
        written.extend(write_pages(sub, dir)?);
    }
    let man = clap_mangen::Man::new(cmd);
    let mut out = Vec::new();
    man.render(&mut out)
        .context(|| format!("rendering {}", man.get_filename()))?;
    let path = dir.join(man.get_filename());
    dream_engine::edges::fsutil::write_atomic(&path, &out)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
            .context(|| format!("setting the mode of {}", path.display()))?;
    }
    written.push(path);
    Ok(written)
}
