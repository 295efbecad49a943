//! The swappable backends (SPEC S7), chosen by `dream.toml`: the model (`llm`: the offline
//! provider from `dream_core::llm::offline`, or [`openai`], any OpenAI-compatible server)
//! and the embedder ([`embed`]: the static model [`embed_minilm`] compiled into dream, the
//! builtin hashed bag of words, or [`embed_openai`]); and the [`salience`] scorer, which
//! embeds with the compiled-in model whatever the config says; and [`pieces`], the rarity of
//! a word under the multilingual embedder's own tokenizer, which the agreement rule reads.
//! Each is one small trait with a strict fake in the test kit; HTTP lives here and
//! nowhere else.

pub mod embed;
pub mod embed_minilm;
pub mod embed_openai;
pub mod openai;
pub mod pieces;
pub mod salience;

use dream_core::llm::offline::Offline;
use dream_core::llm::Llm;
use dream_core::schema::settings::Config;
use dream_core::selection::embed::Builtin;

use embed::Embedder;

use crate::error::{Error, Result};

/// The model provider the config asks for.
pub fn llm(config: &Config) -> Result<Box<dyn Llm>> {
    match config.llm.provider.as_str() {
        "none" => Ok(Box::new(Offline::new(config))),
        "openai" => Ok(Box::new(openai::OpenAi::from_config(config)?)),
        other => Err(Error::Config {
            file: dream_core::schema::settings::FILE.into(),
            message: format!("key `llm.provider`: {other:?} is not available in this build"),
        }),
    }
}

/// The embedder the config asks for.
pub fn embedder(config: &Config) -> Result<Box<dyn Embedder>> {
    match config.embed.provider.as_str() {
        "minilm" => Ok(Box::new(embed_minilm::MiniLm::new())),
        "builtin" => Ok(Box::new(Builtin::new(config.embed.dim))),
        "openai" => Ok(Box::new(embed_openai::OpenAiEmbedder::from_config(config)?)),
        other => Err(Error::Config {
            file: dream_core::schema::settings::FILE.into(),
            message: format!("key `embed.provider`: {other:?} is not available in this build"),
        }),
    }
}
