//! The hard token budget of SPEC S5.
//!
//! Before a call the engine reserves a conservative estimate (prompt plus the most the
//! reply may use); a reservation that could cross the cap is refused, so the call is never
//! started. After the call the reservation is settled with the usage the server reported
//! (or the estimate when it reported none). Reservations are taken under one lock, so the
//! cap holds however many calls run at once: the sum of reservations in flight plus what is
//! already spent never exceeds it.

use std::sync::Mutex;

use serde::Serialize;

/// The token count dream charges for a text: a third of its bytes, rounded up. Any
/// tokenizer whose tokens average three bytes or more (English averages about four)
/// counts no more than this, so a text held under a budget by this count is under it for
/// any real model too. The provider's prompt estimate and `dream context` both count with
/// it.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(3)
}

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
    /// Calls that were started.
    pub calls: u64,
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
        // A free call (the offline provider's) is not a model call and is not counted.
        if estimate > 0 {
            s.calls += 1;
        }
        Some(Reservation { amount: estimate })
    }

    /// Release a reservation and charge what the call used.
    pub fn settle(&self, r: Reservation, used: u64) {
        let mut inner = self.inner.lock().expect("budget lock");
        inner.spend.reserved -= r.amount;
        let before = inner.spend.spent;
        inner.spend.spent += used;
        if before <= self.cap && inner.spend.spent > self.cap {
            inner.spend.overrun = true;
        }
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
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Budget => write!(f, "not started: the token budget could be crossed"),
            CallError::Failed(e) => write!(f, "{e}"),
        }
    }
}

impl Budget {
    /// Make one call under the budget: reserve `estimate`, call, and charge the reported
    /// usage (or the estimate when the server reported none, or the call failed).
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
            Err(e) => {
                self.settle(reservation, estimate);
                Err(CallError::Failed(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                refused: 1,
                overrun: false,
            }
        );
        assert!(b.exhausted());
        assert!(b.reserve(0).is_some(), "free calls always fit");
        assert_eq!(b.spend().calls, 2, "and are not counted as model calls");
    }
}
