//! The loss guard: how much a cycle's maintenance passes may take out of durable memory.
//!
//! A consolidator that deletes too much at once is the failure a person notices last and
//! minds most (a day's run that removes a third of what an agent knew). Each pass gate
//! checks one mutation; this guard checks what the mutations add up to, and what a fact
//! may lose without a person:
//!
//! - **A share cap.** A cycle archives at most `retention.max_loss_share` of the facts that
//!   were active when its passes started, and at least one fact whenever the share is above
//!   0. Drops, facts merged away and forgets all count; a merged fact that stays does not.
//!   What is over the cap is refused with the figures, and qualifies again next cycle, so
//!   a large but deliberate reduction (a lower `max_active_facts`) still happens, a quarter
//!   per cycle, while a runaway (a clock jump that makes everything stale, a model that
//!   proposes dropping half of memory) loses at most that much before a person sees it.
//! - **Protected facts need a person.** A fact in a protected category, or written by the
//!   owner, leaves memory (or is rewritten by a merge) only when the fact that stays holds
//!   every one of its content words; otherwise a person decides: by hand, through review,
//!   or `dream run --allow-loss`. (The forget gate already never forgets such a fact.)
//!
//! `--allow-loss` lifts both for one run. Every pass commit says which it was
//! (`Dream-Loss-Guard: on` or `lifted`), and `dream verify` restates these rules against
//! every commit that says `on`.

use crate::schema::settings::Retention;
use crate::schema::{Fact, GateResult};
use crate::text::measures;

use super::gates::protection;

/// The trailer every pass commit carries (`Dream-Loss-Guard:`), with [`ON`] or [`LIFTED`].
pub const TRAILER: &str = "Loss-Guard";
pub const ON: &str = "on";
/// `dream run --allow-loss`.
pub const LIFTED: &str = "lifted";

/// The most facts a cycle may archive when `active` facts were active as its passes
/// started: `floor(share * active)`, at least 1 when the share is above 0, everything at
/// share 1.
pub fn allowance(active: usize, share: f64) -> usize {
    if share >= 1.0 {
        return usize::MAX;
    }
    if share <= 0.0 {
        return 0;
    }
    ((share * active as f64).floor() as usize).max(1)
}

/// The loss guard of one cycle: what its passes archived so far.
#[derive(Debug, Clone)]
pub struct LossGuard {
    /// Facts active when the passes started.
    pub active: usize,
    pub share: f64,
    /// `dream run --allow-loss`: nothing is held.
    pub lifted: bool,
    /// Facts archived so far by this cycle's passes.
    pub archived: usize,
}

impl LossGuard {
    pub fn new(active: usize, retention: &Retention, lifted: bool) -> LossGuard {
        LossGuard {
            active,
            share: retention.max_loss_share,
            lifted,
            archived: 0,
        }
    }

    pub fn allowance(&self) -> usize {
        allowance(self.active, self.share)
    }

    /// Check a mutation that archives `leaving` facts and leaves the text `stays` (the kept
    /// fact's, or the merged text; empty for a forget) in place of `rewritten`, the facts it
    /// takes out or rewrites. Returns the gate as measured and, when it holds the mutation
    /// back, the reason.
    pub fn check(
        &self,
        leaving: usize,
        rewritten: &[&Fact],
        stays: &str,
        retention: &Retention,
    ) -> (GateResult, Option<String>) {
        if self.lifted {
            return (gate("loss guard", "lifted", "--allow-loss", true), None);
        }
        for f in rewritten {
            let Some(why) = protection(f, retention) else {
                continue;
            };
            let cov = measures::coverage(&f.text, [stays]);
            if cov.value < 1.0 {
                let reason = format!(
                    "loss guard: {} is {why}, and the fact left in its place lacks its words {} (coverage {:.3} < 1.0); \
                     a person decides: edit memory by hand, or run `dream run --allow-loss`",
                    f.id,
                    cov.missing.join(", "),
                    cov.value
                );
                return (
                    gate(
                        "loss guard",
                        &format!("protected {} would lose words", f.id),
                        "a protected fact keeps every word",
                        false,
                    ),
                    Some(reason),
                );
            }
        }
        let allowed = self.allowance();
        let after = self.archived + leaving;
        let share = if self.active == 0 {
            0.0
        } else {
            after as f64 / self.active as f64
        };
        let value = format!("{after} of {} active ({share:.3})", self.active);
        let threshold = format!(
            "<= {} (retention.max_loss_share = {})",
            if allowed == usize::MAX {
                "all".to_string()
            } else {
                allowed.to_string()
            },
            self.share
        );
        if after > allowed {
            let reason = format!(
                "loss guard: this would make the cycle archive {after} of the {} facts active when its passes started \
                 (share {share:.3}), over retention.max_loss_share = {} (at most {allowed} per cycle); it waits for the \
                 next cycle, or run `dream run --allow-loss` if so much should go at once",
                self.active, self.share
            );
            return (gate("loss guard", &value, &threshold, false), Some(reason));
        }
        (gate("loss guard", &value, &threshold, true), None)
    }

    /// Count facts a mutation the guard let through archived.
    pub fn archive(&mut self, n: usize) {
        self.archived += n;
    }
}

fn gate(name: &str, value: &str, threshold: &str, passed: bool) -> GateResult {
    GateResult::new(name, value, threshold, passed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Origin;
    use chrono::NaiveDate;

    fn fact(id: &str, category: &str, text: &str) -> Fact {
        let d = NaiveDate::from_ymd_opt(2026, 11, 1).unwrap();
        Fact::new(
            id.into(),
            text.into(),
            category.into(),
            Origin::Auto,
            vec![],
            d,
            d,
        )
    }

    #[test]
    fn the_allowance_is_a_share_of_the_active_facts_and_at_least_one() {
        assert_eq!(allowance(10, 0.25), 2);
        assert_eq!(allowance(200, 0.25), 50);
        assert_eq!(
            allowance(3, 0.25),
            1,
            "a small memory may still lose one fact"
        );
        assert_eq!(allowance(0, 0.25), 1);
        assert_eq!(allowance(10, 0.0), 0);
        assert_eq!(allowance(10, 1.0), usize::MAX);
    }

    #[test]
    fn archiving_past_the_share_is_held_with_the_figures() {
        let r = Retention::default();
        let mut g = LossGuard::new(10, &r, false);
        let f = fact("f_1", "knowledge", "The printer jams.");
        for _ in 0..2 {
            let (gate, held) = g.check(1, &[&f], "", &r);
            assert!(gate.passed && held.is_none());
            g.archive(1);
        }
        let (gate, held) = g.check(1, &[&f], "", &r);
        assert!(!gate.passed);
        assert_eq!(gate.value, "3 of 10 active (0.300)");
        let held = held.unwrap();
        assert!(
            held.contains("archive 3 of the 10 facts")
                && held.contains("retention.max_loss_share = 0.25 (at most 2 per cycle)")
                && held.contains("--allow-loss"),
            "{held}"
        );
        let lifted = LossGuard {
            lifted: true,
            ..g.clone()
        };
        assert!(lifted.check(5, &[&f], "", &r).1.is_none());
    }

    #[test]
    fn a_protected_fact_leaves_only_for_one_that_holds_all_its_words() {
        let r = Retention::default();
        let g = LossGuard::new(10, &r, false);
        let home = fact(
            "f_1",
            "identity",
            "I live in Lisbon and work best in the morning.",
        );
        let (_, held) = g.check(
            1,
            &[&home],
            "User lives in Lisbon and works best in the morning.",
            &r,
        );
        assert_eq!(held, None, "a restatement that keeps every word is no loss");
        let (gate, held) = g.check(1, &[&home], "I live in Lisbon.", &r);
        assert!(!gate.passed);
        let held = held.unwrap();
        assert!(
            held.contains("f_1 is in protected category identity") && held.contains("morning"),
            "{held}"
        );
        let mut owner = fact("f_2", "knowledge", "My printer is a Brother.");
        assert!(g.check(1, &[&owner], "printer", &r).1.is_none());
        owner.origin = Origin::Owner;
        assert!(g.check(1, &[&owner], "printer", &r).1.is_some());
    }
}
