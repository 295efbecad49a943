//! The person's side (SPEC S9, S12): `oversight` sequences review decisions and undo
//! under the lock, `trail` assembles `explain` and `log`, `verify` re-audits the whole
//! repository, `skills` promotes and discards skill drafts, `purge` takes a leaked string
//! out of the repository, its history and the state, `rebuild` makes a new state database
//! from the inbox and the repository, `status` gathers what is waiting, at a glance,
//! `schedule` installs and reads back the timer units, `demo` runs a cycle on the shipped
//! sample in a scratch repository, `decisions` applies the review decisions members of a
//! shared memory made.

pub mod decisions;
pub mod demo;
pub mod oversight;
pub mod purge;
pub mod rebuild;
pub mod schedule;
pub mod skills;
pub mod status;
pub mod trail;
pub mod verify;
