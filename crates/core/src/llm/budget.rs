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
//!
//! Every charge is also booked to the stage that made the call ([`Budget::stages`]), with
//! the prompt, completion and cached tokens the server reported, so a report can say where
//! a cycle's tokens went.
//!
//! Cached prompt tokens (those a server reports it took from its prompt cache) are charged
//! in full, like any token, unless `llm.cached_discount` says otherwise
//! ([`Budget::with_cached_discount`]): then each is charged `1 - discount` of a token, the
//! share waived rounded down, and the waived tokens are counted apart ([`Spend::waived`]).
//! A reservation never counts on a cache (the server may not hold the prefix), so the cap
//! holds whatever the server caches.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;

use crate::schema::contract::Usage;

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
    /// The share of a cached prompt token's charge that is waived (`llm.cached_discount`).
    cached_discount: f64,
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
    /// Prompt tokens the servers reported as cached (charged in full unless waived).
    pub cached: u64,
    /// Of the cached tokens, the share `llm.cached_discount` waived: not charged.
    pub waived: u64,
}

/// What one stage's calls were charged.
#[derive(Debug, Default, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct StageSpend {
    /// Calls the server answered (or may have), as [`Spend::calls`].
    pub calls: u64,
    /// Tokens charged.
    pub spent: u64,
    /// Of them, as the server reported them: prompt, completion, and the prompt tokens it
    /// took from its cache (calls charged their estimate report none).
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
    /// Of the cached tokens, those not charged (`llm.cached_discount`).
    pub waived: u64,
}

#[derive(Debug, Default)]
struct Inner {
    spend: Spend,
    stages: BTreeMap<String, StageSpend>,
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
            cached_discount: 0.0,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The same budget, charging each cached prompt token `1 - discount` of a token
    /// (`llm.cached_discount`, a share from 0 to 1; anything else charges in full).
    pub fn with_cached_discount(mut self, discount: f64) -> Budget {
        self.cached_discount = if (0.0..=1.0).contains(&discount) {
            discount
        } else {
            0.0
        };
        self
    }

    /// The tokens of a reported usage the discount waives: the cached prompt tokens times
    /// the discount, rounded down.
    fn waived(&self, usage: &Usage) -> u64 {
        let cached = usage.cached_tokens.min(usage.prompt_tokens);
        (cached as f64 * self.cached_discount).floor() as u64
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
        self.settle_for("", r, used, None);
    }

    /// [`Budget::settle`], booked to `stage` with the usage the server reported (if any).
    /// `used` is what the call is charged before the cached discount: the reported usage's
    /// total when `usage` is given, else the estimate (or nothing).
    pub fn settle_for(&self, stage: &str, r: Reservation, used: u64, usage: Option<&Usage>) {
        let waived = usage.map_or(0, |u| self.waived(u)).min(used);
        let used = used - waived;
        let mut inner = self.inner.lock().expect("budget lock");
        inner.spend.reserved -= r.amount;
        let counted = r.amount > 0 || used > 0;
        if counted {
            inner.spend.calls += 1;
        }
        let before = inner.spend.spent;
        inner.spend.spent += used;
        if before <= self.cap && inner.spend.spent > self.cap {
            inner.spend.overrun = true;
        }
        let cached = usage.map_or(0, |u| u.cached_tokens.min(u.prompt_tokens));
        inner.spend.cached += cached;
        inner.spend.waived += waived;
        if counted {
            let s = inner.stages.entry(stage.to_string()).or_default();
            s.calls += 1;
            s.spent += used;
            if let Some(u) = usage {
                s.prompt += u.prompt_tokens;
                s.completion += u.completion_tokens;
                s.cached += cached;
                s.waived += waived;
            }
        }
    }

    /// What each stage's calls were charged so far (stages with no charged call absent).
    pub fn stages(&self) -> BTreeMap<String, StageSpend> {
        self.inner.lock().expect("budget lock").stages.clone()
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
    /// Make one call of `stage` under the budget: reserve `estimate`, call, and charge it
    /// as the module's table says.
    pub fn call<T>(
        &self,
        stage: &str,
        estimate: u64,
        f: impl FnOnce() -> Result<super::Reply<T>, super::LlmError>,
    ) -> Result<super::Reply<T>, CallError> {
        let reservation = self.reserve(estimate).ok_or(CallError::Budget)?;
        match f() {
            Ok(reply) => {
                let (used, usage) = if reply.usage.reported {
                    (reply.usage.total(), Some(&reply.usage))
                } else {
                    (estimate, None)
                };
                self.settle_for(stage, reservation, used, usage);
                Ok(reply)
            }
            Err(e) if e.kind == super::LlmErrorKind::Unreachable => {
                self.release(reservation);
                Err(CallError::Failed(e))
            }
            Err(e) => {
                self.settle_for(stage, reservation, e.charge(estimate), e.usage.as_ref());
                Err(CallError::Failed(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::contract::{LlmError, LlmErrorKind, Reply};

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
                cached: 0,
                waived: 0,
            }
        );
        assert!(b.exhausted());
        let free = b.reserve(0).expect("free calls always fit");
        b.settle(free, 0);
        assert_eq!(b.spend().calls, 2, "and are not counted as model calls");
    }

    #[test]
    fn cached_tokens_are_charged_in_full_unless_a_discount_waives_a_share() {
        let usage = |prompt, cached| Usage {
            prompt_tokens: prompt,
            completion_tokens: 100,
            cached_tokens: cached,
            reported: true,
        };
        let ok = |u: Usage| {
            move || {
                Ok(Reply {
                    value: (),
                    usage: u,
                    notes: vec![],
                })
            }
        };
        // The default: every reported token charged.
        let full = Budget::new(10_000);
        assert!(full.call("reflect", 2_000, ok(usage(1_000, 600))).is_ok());
        assert_eq!(
            (full.spend().spent, full.spend().cached, full.spend().waived),
            (1_100, 600, 0)
        );
        // Half off cached tokens: 600 cached, 300 waived.
        let half = Budget::new(10_000).with_cached_discount(0.5);
        assert!(half.call("reflect", 2_000, ok(usage(1_000, 601))).is_ok());
        let s = half.spend();
        assert_eq!((s.spent, s.cached, s.waived), (1_100 - 300, 601, 300));
        assert_eq!(half.stages()["reflect"].waived, 300);
        assert_eq!(half.stages()["reflect"].spent, 800);
        // A server that reports more cached than prompt tokens is held to the prompt.
        let all = Budget::new(10_000).with_cached_discount(1.0);
        assert!(all.call("judge", 2_000, ok(usage(500, 9_999))).is_ok());
        assert_eq!((all.spend().spent, all.spend().waived), (100, 500));
        // A failed call with usage gets the same discount; one charged its estimate none.
        let failed = Budget::new(10_000).with_cached_discount(0.5);
        let _ = failed.call(
            "reflect",
            800,
            failing(LlmErrorKind::Garbled, Some(usage(400, 200))),
        );
        let _ = failed.call("reflect", 800, failing(LlmErrorKind::Garbled, None));
        assert_eq!(failed.spend().spent, (500 - 100) + 800);
        // The reservation never counts on the cache: a call whose estimate could cross the
        // cap is refused whatever the discount.
        let tight = Budget::new(1_000).with_cached_discount(1.0);
        assert!(matches!(
            tight.call("reflect", 1_001, ok(usage(10, 10))),
            Err(CallError::Budget)
        ));
        // Out of range: charged in full.
        for d in [-0.5, 1.5, f64::NAN] {
            let b = Budget::new(10_000).with_cached_discount(d);
            assert!(b.call("reflect", 2_000, ok(usage(1_000, 600))).is_ok());
            assert_eq!(b.spend().spent, 1_100, "{d}");
        }
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
            cached_tokens: 200,
            reported: true,
        };
        // A reply that did not parse, with usage: the usage, even above the estimate.
        assert!(b
            .call(
                "reflect",
                800,
                failing(LlmErrorKind::Garbled, Some(reported))
            )
            .is_err());
        assert_eq!(b.spend().spent, 1000);
        // Without usage: the estimate.
        assert!(b
            .call("reflect", 800, failing(LlmErrorKind::Garbled, None))
            .is_err());
        assert_eq!(b.spend().spent, 1800);
        // A timeout: the estimate (the server may finish it).
        assert!(b
            .call("judge", 500, failing(LlmErrorKind::Timeout, None))
            .is_err());
        assert_eq!(b.spend().spent, 2300);
        // An error status: nothing was reported, nothing charged.
        assert!(b
            .call("judge", 500, failing(LlmErrorKind::Server, None))
            .is_err());
        assert_eq!(b.spend().spent, 2300);
        assert_eq!(b.spend().calls, 4);
        // Nothing reached the server: no charge, and not a call.
        assert!(b
            .call("judge", 500, failing(LlmErrorKind::Unreachable, None))
            .is_err());
        let s = b.spend();
        assert_eq!(
            (s.spent, s.calls, s.unanswered, s.reserved),
            (2300, 4, 1, 0)
        );
        // Booked per stage, with what the server reported (cached tokens among the prompt's).
        assert_eq!(s.cached, 200);
        let stages = b.stages();
        assert_eq!(
            stages["reflect"],
            StageSpend {
                calls: 2,
                spent: 1800,
                prompt: 700,
                completion: 300,
                cached: 200,
                waived: 0,
            }
        );
        assert_eq!((stages["judge"].calls, stages["judge"].spent), (2, 500));
        assert_eq!(stages.len(), 2, "an unanswered call is no stage's call");
    }
}
