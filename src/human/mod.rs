//! The person's side (SPEC S9, S12): `oversight` sequences review decisions and undo
//! under the lock, `trail` assembles `explain` and `log`, `verify` re-audits the whole
//! repository, `skills` promotes and discards skill drafts.

pub mod oversight;
pub mod skills;
pub mod trail;
pub mod verify;
