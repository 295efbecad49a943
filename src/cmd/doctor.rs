//! `dream doctor`: check the installation end to end (see `doctor.rs`); exit 1 on a fail.

use crate::cli::{DoctorArgs, Global};
use dream_engine::doctor::{self, Options};
use dream_engine::error::{Result, EXIT_FAILURE, EXIT_OK};

pub fn run(g: &Global, a: &DoctorArgs) -> Result<i32> {
    let found = super::repo_root(g);
    let opts = Options {
        offline: a.offline,
        now: super::now(g)?,
    };
    let d = doctor::diagnose(found.as_deref(), &opts);
    if a.json {
        super::print_json(&d)?;
    } else {
        print!("{}", d.render());
    }
    Ok(if d.fail > 0 { EXIT_FAILURE } else { EXIT_OK })
}
