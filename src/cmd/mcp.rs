//! `dream mcp`: the MCP server on standard input and output.

use crate::cli::{Global, McpArgs};
use dream_engine::error::{Result, EXIT_OK};

pub fn run(g: &Global, a: &McpArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    let folder = match &a.project {
        Some(p) => std::path::Path::new(p).to_path_buf(),
        None => std::env::current_dir().unwrap_or_default(),
    };
    let project = Some(dream_engine::edges::project::resolve(
        &folder.display().to_string(),
    ))
    .filter(|p| !p.is_empty());
    crate::mcp::serve_stdio(&root, g.now.clone(), project)?;
    Ok(EXIT_OK)
}
