//! Reading `dream.toml` (SPEC S13): the file at the repository root and the process
//! environment's `DREAM_<SECTION>_<KEY>` overrides, handed to the pure parser in
//! `dream_core::schema::settings`, which knows every key, default and cross-key rule.

use std::collections::BTreeMap;
use std::path::Path;

use dream_core::schema::settings::{Config, ConfigError, FILE};

use crate::error::{Error, Result};

/// Load `dream.toml` from a repo root, apply environment overrides and check the result.
pub fn load(root: &Path) -> Result<Config> {
    let path = root.join(FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Config {
        file: path.display().to_string(),
        message: format!("cannot read: {e}"),
    })?;
    // An editor's UTF-8 byte order mark is not part of the TOML.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    Ok(Config::parse(
        text,
        &path.display().to_string(),
        &environment()?,
    )?)
}

/// The process environment as the config parser reads it. `vars_os`, not `vars`: a
/// variable that is not UTF-8 (even an unrelated one) must not stop dream, so it is
/// skipped, unless it is a `DREAM_<SECTION>_<KEY>` variable, which is refused by name (it
/// was meant to set a key).
pub fn environment() -> Result<BTreeMap<String, String>> {
    let mut env = BTreeMap::new();
    for (k, v) in std::env::vars_os() {
        let Ok(k) = k.into_string() else { continue };
        match v.into_string() {
            Ok(v) => {
                env.insert(k, v);
            }
            Err(_) if dream_core::schema::settings::is_config_var(&k) => {
                return Err(Error::Config {
                    file: format!("environment variable {k}"),
                    message: "its value is not valid UTF-8".into(),
                })
            }
            Err(_) => {}
        }
    }
    Ok(env)
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Error {
        Error::Config {
            file: e.file,
            message: e.message,
        }
    }
}
