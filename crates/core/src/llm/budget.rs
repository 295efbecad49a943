//! The hard token budget of SPEC S5.
//!
//! Before a call the engine reserves a conservative estimate (prompt plus the most the
//! reply may use); a reservation that could cross the cap is refused, so the call is never
//! started. Reservations are taken under one lock, so the cap holds however many calls run
//! at once: the sum of reservations in flight plus what is already spent never exceeds it.
//!
//! When the call returns, its reservation is replaced by what it cost, counted so that
//! dream's total is never below the server's:
//!
//! | the call                                             | charged              | a call? |
//! |------------------------------------------------------|----------------------|---------|
//! | answered with usage (whether or not the reply parsed) | the reported usage   | yes     |
//! | answered without usage, or timed out, or broke       | the estimate         | yes     |
//! | answered with an error status (5xx, 429, 4xx)        | nothing reported: 0  | yes     |
//! | never reached the server (connection refused)        | 0, reservation freed | no: `unanswered` |
//!
//! A timed-out call is charged its estimate because the server may still be working on it
//! (llama.cpp's server finishes an abandoned request) and may count it.

use std::sync::Mutex;

use serde::Serialize;

/// The token count dream charges for a text before any calibration: half its bytes,
/// rounded up. Any tokenizer whose tokens average two bytes or more counts no more than
/// this (English prose averages about four bytes a token; dream's JSON prompts about 2.4
/// under a small model's tokenizer such as SmolLM2's), so a text held under a budget by
/// this count is under it for any real model too. The provider's prompt estimate and
/// `dream context` both count with it.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(BYTES_PER_TOKEN)
}

/// The bytes [`estimate_tokens`] counts as one token.
pub const BYTES_PER_TOKEN: u64 = 2;

#[derive(Debug)]
pub struct Budget {
    cap: u64,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Spend {
    /// Tokens charged for finished calls.
    pub spent: u64,
    /// Tokens reserved by calls still in flight.
    pub reserved: u64,
    /// Calls the server answered (or may have: timeouts), each charged as above.
    pub calls: u64,
    /// Calls that never reached the server (connection refused): not charged, not calls.
    pub unanswered: u64,
    /// Calls not started because they could have crossed the cap.
    pub refused: u64,
    /// A server counted more tokens than estimated and the spend crossed the cap (the
    /// cycle logs it; later estimates are scaled up).
    pub overrun: bool,
}

#[derive(Debug, Default)]
struct Inner {
    spend: Spend,
}

/// Permission to make one call; settle it when the call returns.
#[derive(Debug)]
#[must_use = "settle the reservation with the usage the call reported"]
pub struct Reservation {
    amount: u64,
}

impl Reservation {
    pub fn amount(&self) -> u64 {
        self.amount
    }
}

impl Budget {
    pub fn new(cap: u64) -> Budget {
        Budget {
            cap,
            inner: Mutex::new(Inner::default()),
        }
    }

    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// Reserve `estimate` tokens, or `None` when that could cross the cap.
    pub fn reserve(&self, estimate: u64) -> Option<Reservation> {
        let mut inner = self.inner.lock().expect("budget lock");
        let s = &mut inner.spend;
        if s.spent + s.reserved + estimate > self.cap {
            s.refused += 1;
            return None;
        }
        s.reserved += estimate;
        Some(Reservation { amount: estimate })
    }

    /// Release a reservation and charge what the call used. A free call (the offline
    /// provider's) is not a model call and is not counted.
    pub fn settle(&self, r: Reservation, used: u64) {
        let mut inner = self.inner.lock().expect("budget lock");
        inner.spend.reserved -= r.amount;
        if r.amount > 0 || used > 0 {
            inner.spend.calls += 1;
        }
        let before = inner.spend.spent;
        inner.spend.spent += used;
        if before <= self.cap && inner.spend.spent > self.cap {
            inner.spend.overrun = true;
        }
    }

    /// Release the reservation of a call that never reached the server: nothing is
    /// charged, and it is counted as unanswered rather than as a call.
    pub fn release(&self, r: Reservation) {
        let mut inner = self.inner.lock().expect("budget lock");
        inner.spend.reserved -= r.amount;
        inner.spend.unanswered += 1;
    }

    pub fn spend(&self) -> Spend {
        self.inner.lock().expect("budget lock").spend
    }

    /// True once some call was refused for lack of budget.
    pub fn exhausted(&self) -> bool {
        self.spend().refused > 0
    }
}

/// Why a budgeted call gave no reply.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// Not started: it could have crossed the cap.
    Budget,
    /// Started, and failed.
    Failed(super::LlmError),
    /// Not started: an earlier call of the cycle found the server unavailable (it could
    /// not be reached, or did not answer in time), so this one would wait or fail too.
    Skipped(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Budget => write!(f, "not started: the token budget could be crossed"),
            CallError::Failed(e) => write!(f, "{e}"),
            CallError::Skipped(why) => write!(
                f,
                "not started: an earlier call found the server unavailable ({why})"
            ),
        }
    }
}

impl Budget {
    /// Make one call under the budget: reserve `estimate`, call, and charge it as the
    /// module's table says.
    pub fn call<T>(
        &self,
        estimate: u64,
        f: impl FnOnce() -> Result<super::Reply<T>, super::LlmError>,
    ) -> Result<super::Reply<T>, CallError> {
        let reservation = self.reserve(estimate).ok_or(CallError::Budget)?;
        match f() {
            Ok(reply) => {
                let used = if reply.usage.reported {
                    reply.usage.total()
                } else {
                    estimate
                };
                self.settle(reservation, used);
                Ok(reply)
            }
            Err(e) if e.kind == super::LlmErrorKind::Unreachable => {
                self.release(reservation);
                Err(CallError::Failed(e))
            }
            Err(e) => {
                self.settle(reservation, e.charge(estimate));
                Err(CallError::Failed(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{LlmError, LlmErrorKind, Reply, Usage};

    #[test]
    fn a_call_that_could_cross_the_cap_is_not_started() {
        let b = Budget::new(1000);
        let r1 = b.reserve(600).unwrap();
        assert!(b.reserve(500).is_none(), "600 reserved + 500 > 1000");
        b.settle(r1, 300);
        let r2 = b.reserve(500).unwrap();
        b.settle(r2, 450);
        assert_eq!(
            b.spend(),
            Spend {
                spent: 750,
                reserved: 0,
                calls: 2,
                unanswered: 0,
                refused: 1,
                overrun: false,
            }
        );
        assert!(b.exhausted());
        let free = b.reserve(0).expect("free calls always fit");
        b.settle(free, 0);
        assert_eq!(b.spend().calls, 2, "and are not counted as model calls");
    }

    fn failing(
        kind: LlmErrorKind,
        usage: Option<Usage>,
    ) -> impl FnOnce() -> Result<Reply<()>, LlmError> {
        move || {
            Err(LlmError {
                kind,
                message: "x".into(),
                usage,
            })
        }
    }

    #[test]
    fn failed_calls_are_charged_what_the_server_counted() {
        let b = Budget::new(10_000);
        let reported = Usage {
            prompt_tokens: 700,
            completion_tokens: 300,
            reported: true,
        };
        // A reply that did not parse, with usage: the usage, even above the estimate.
        assert!(b
            .call(800, failing(LlmErrorKind::Garbled, Some(reported)))
            .is_err());
        assert_eq!(b.spend().spent, 1000);
        // Without usage: the estimate.
        assert!(b.call(800, failing(LlmErrorKind::Garbled, None)).is_err());
        assert_eq!(b.spend().spent, 1800);
        // A timeout: the estimate (the server may finish it).
        assert!(b.call(500, failing(LlmErrorKind::Timeout, None)).is_err());
        assert_eq!(b.spend().spent, 2300);
        // An error status: nothing was reported, nothing charged.
        assert!(b.call(500, failing(LlmErrorKind::Server, None)).is_err());
        assert_eq!(b.spend().spent, 2300);
        assert_eq!(b.spend().calls, 4);
        // Nothing reached the server: no charge, and not a call.
        assert!(b
            .call(500, failing(LlmErrorKind::Unreachable, None))
            .is_err());
        let s = b.spend();
        assert_eq!(
            (s.spent, s.calls, s.unanswered, s.reserved),
            (2300, 4, 1, 0)
        );
    }
}
