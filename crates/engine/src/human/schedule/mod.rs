//! `dream schedule`: the timer units of this user account, installed, removed and read
//! back. `install` writes and removes the units and runs systemctl or launchctl, telling
//! each change as it is made and returning what is left to say; `inspect` reads what is
//! installed into one value. The units themselves are rendered by the pure `schedule`
//! module and reach the disk and the service manager through `edges::units`; this is the
//! order of it all, on the person's side because a person runs it (the cycle never does).

pub mod inspect;
pub mod install;
