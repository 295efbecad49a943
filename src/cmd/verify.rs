//! `dream verify`: re-audit the repository; exit 1 naming each problem.

use crate::cli::{Global, VerifyArgs};
use dream_engine::error::{Result, EXIT_FAILURE, EXIT_OK};
use dream_engine::human::verify;

pub fn run(g: &Global, a: &VerifyArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let v = verify::verify(&root)?;
    if a.json {
        super::print_json(&v)?;
    } else {
        print!("{}", v.render());
    }
    Ok(if v.ok { EXIT_OK } else { EXIT_FAILURE })
}
