//! `dream mcp`: the MCP server on standard input and output.

use crate::cli::{Global, McpArgs};
use crate::error::{Result, EXIT_OK};

pub fn run(g: &Global, _a: &McpArgs) -> Result<i32> {
    let root = super::repo_root(g)?;
    crate::agents::mcp::serve_stdio(&root, g.now.clone())?;
    Ok(EXIT_OK)
}
