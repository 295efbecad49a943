//! dream's test kit, for its tests and benchmarks only: never a dependency of the shipped
//! `dream` binary. `fake_llm` is a scripted fake OpenAI-compatible server on loopback (every
//! fault a real server shows, a record of every request); `synth` is a seeded synthetic
//! event stream (themes restated across sessions and days, noise, tool-call runs); `agent`
//! is a seeded, labelled dev set of coding-agent sessions (durable facts, episodes and the
//! noise no memory should keep).

pub mod agent;
pub mod fake_llm;
pub mod salience_set;
pub mod synth;
