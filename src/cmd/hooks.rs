//! `dream hooks install|uninstall|status claude-code|codex`.

use crate::cli::{Global, Harness, HooksAction, HooksArgs};
use dream_engine::agents::context::{self, Options};
use dream_engine::agents::hooks::{self, Home, Outcome};
use dream_engine::error::{Context as _, Result, EXIT_OK};

pub fn run(g: &Global, a: &HooksArgs) -> Result<i32> {
    let home = Home::from_env()?;
    match &a.action {
        HooksAction::Install(i) => {
            let root = super::repo_root(g)?;
            let config = dream_engine::config::load(&root)?;
            let exe = std::env::current_exe().context(|| "finding this program's path".into())?;
            let exe = exe.canonicalize().unwrap_or(exe);
            let root = root.canonicalize().unwrap_or(root);
            let builtin = dream_core::selection::embed::Builtin::new(config.embed.dim);
            let today = super::now(g)?.date_naive();
            let text = context::build(&root, &config, &builtin, today, &Options::default())?
                .render_markdown();
            let out = hooks::install(
                i.target.harness,
                hooks::method(i.target.harness, i.method)?,
                &root,
                &home,
                &exe,
                &text,
                i.target.dry_run,
                super::now(g)?,
            )?;
            print_outcome(&out, i.target.dry_run);
        }
        HooksAction::Uninstall(t) => {
            let root = super::repo_root(g)?;
            let root = root.canonicalize().unwrap_or(root);
            let out = hooks::uninstall(t.harness, &root, &home, t.dry_run, super::now(g)?)?;
            print_outcome(&out, t.dry_run);
        }
        HooksAction::Status(s) => {
            let root = super::repo_root(g).ok();
            let harnesses = match s.harness {
                Some(h) => vec![h],
                None => Harness::ALL.to_vec(),
            };
            let mut all = Vec::new();
            for h in harnesses {
                all.push(hooks::status(h, root.as_deref(), &home)?);
            }
            if s.json {
                super::print_json(&all)?;
            } else {
                for st in &all {
                    if st.installed {
                        println!("{}: installed ({})", st.harness, st.methods.join("; "));
                        for r in &st.repos {
                            println!("  context from {r}");
                        }
                    } else {
                        println!(
                            "{}: not installed (dream hooks install {})",
                            st.harness, st.harness
                        );
                    }
                    match (&root, st.source) {
                        (Some(_), true) => println!("  this repository reads its transcripts"),
                        (Some(_), false) => println!(
                            "  this repository does not read its transcripts ([[inbox.sources]])"
                        ),
                        (None, _) => {}
                    }
                    for b in &st.backups {
                        println!("  backup: {}", b.display());
                    }
                }
            }
        }
    }
    Ok(EXIT_OK)
}

fn print_outcome(out: &Outcome, dry_run: bool) {
    for f in &out.files {
        let verb = if dry_run { "would change" } else { "changed" };
        if f.changed() {
            println!("{}: {verb}: {}", f.path.display(), f.what);
            if dry_run {
                print!("{}", f.diff());
            }
        } else {
            println!("{}: unchanged: {}", f.path.display(), f.what);
        }
    }
    for n in &out.notes {
        println!("{n}");
    }
    let _ = out.harness;
}
