//! Reading `dream.toml` (SPEC S13): the file at the repository root and the process
//! environment's `DREAM_<SECTION>_<KEY>` overrides, handed to the pure parser in
//! `dream_core::config`, which knows every key, default and cross-key rule.

use std::collections::BTreeMap;
use std::path::Path;

use dream_core::config::{Config, ConfigError, FILE};

use crate::error::{Error, Result};

/// Load `dream.toml` from a repo root, apply environment overrides and check the result.
pub fn load(root: &Path) -> Result<Config> {
    let path = root.join(FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Config {
        file: path.display().to_string(),
        message: format!("cannot read: {e}"),
    })?;
    // `vars_os`, not `vars`: a variable that is not UTF-8 (even an unrelated one) must not
    // stop dream; such a variable cannot name a dream key, so it is skipped.
    let env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    Ok(Config::parse(&text, &path.display().to_string(), &env)?)
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Error {
        Error::Config {
            file: e.file,
            message: e.message,
        }
    }
}
