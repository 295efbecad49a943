//! A commit message as a value (SPEC S4 step 10): a subject a person can scan, one line
//! per mutation, and the trailers `dream log`, `explain`, `undo` and `verify` read back
//! (`audit::parse` is the inverse). Every stage, review decision and undo builds one
//! [`Message`] and renders it once, when it is committed, so nothing is spliced into a
//! finished text.
//!
//! `Dream-Tokens:` is always the stage's own spend; a cycle's total is the sum over its
//! commits (and, for cycles that committed nothing, the state's cycle record).

use crate::operations::report::Degraded;
use crate::schema::Stage;

/// One commit message, before it is rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub subject: String,
    /// One line per mutation (accepted, refused, engine-enforced), already formatted.
    pub lines: Vec<String>,
    /// The `Dream-Cycle:` id: a cycle, a review session, an undo.
    pub cycle: String,
    pub stage: Stage,
    /// Tokens this stage spent (not the cycle's running total).
    pub tokens: u64,
    /// Stages of the cycle that fell back to a conservative default.
    pub degraded: Vec<Degraded>,
    /// Further trailers in order (`Dream-Counts:`, `Dream-Undoes:`), without the prefix
    /// `Dream-`: `("Undoes", id)` renders as `Dream-Undoes: id`.
    pub trailers: Vec<(&'static str, String)>,
}

impl Message {
    pub fn new(
        subject: impl Into<String>,
        lines: Vec<String>,
        cycle: &str,
        stage: Stage,
    ) -> Message {
        Message {
            subject: subject.into(),
            lines,
            cycle: cycle.to_string(),
            stage,
            tokens: 0,
            degraded: Vec::new(),
            trailers: Vec::new(),
        }
    }

    pub fn tokens(mut self, tokens: u64) -> Message {
        self.tokens = tokens;
        self
    }

    pub fn trailer(mut self, key: &'static str, value: impl Into<String>) -> Message {
        self.trailers.push((key, value.into()));
        self
    }

    /// The subject line.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The text git stores: the subject, the mutation lines, the degraded stages and the
    /// trailers, each group after a blank line.
    pub fn render(&self) -> String {
        let mut m = format!("{}\n\n", self.subject);
        for l in &self.lines {
            m.push_str(l);
            m.push('\n');
        }
        if !self.lines.is_empty() {
            m.push('\n');
        }
        if !self.degraded.is_empty() {
            for d in &self.degraded {
                m.push_str(&format!("degraded   {}: {}\n", d.stage, d.reason));
            }
            m.push('\n');
        }
        m.push_str(&format!(
            "Dream-Cycle: {}\nDream-Stage: {}\nDream-Tokens: {}\n",
            self.cycle, self.stage, self.tokens
        ));
        for d in &self.degraded {
            m.push_str(&format!("Dream-Degraded: {}\n", d.stage));
        }
        for (k, v) in &self.trailers {
            m.push_str(&format!("Dream-{k}: {v}\n"));
        }
        m
    }
}

/// The commit of a person's hand edits found in the tree, committed as they are.
pub fn hand_edits(paths: &[String], cycle: &str) -> Message {
    let lines = paths.iter().map(|p| format!("edited     {p}")).collect();
    Message::new("dream: record hand edits", lines, cycle, Stage::Manual)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_renders_subject_lines_degraded_and_trailers_and_parses_back() {
        let mut m = Message::new(
            "dream: evening cycle 2026-11-06: 1 promoted",
            vec!["promoted   f_1  [human/identity] I live in Lisbon.".into()],
            "20261106T210000Z-evening",
            Stage::Consolidate,
        )
        .tokens(1200);
        m.degraded.push(Degraded {
            stage: "judge".into(),
            reason: "timeout".into(),
        });
        let text = m.render();
        assert_eq!(
            text,
            "dream: evening cycle 2026-11-06: 1 promoted\n\n\
             promoted   f_1  [human/identity] I live in Lisbon.\n\n\
             degraded   judge: timeout\n\n\
             Dream-Cycle: 20261106T210000Z-evening\nDream-Stage: consolidate\nDream-Tokens: 1200\n\
             Dream-Degraded: judge\n"
        );
        let note = crate::operations::audit::parse("abc", chrono::DateTime::UNIX_EPOCH, &text);
        assert_eq!(note.head.stage.as_deref(), Some("consolidate"));
        assert_eq!(note.tokens, Some(1200));
        assert_eq!(note.degraded, ["judge"]);
        assert_eq!(note.mutations.len(), 2);
    }

    #[test]
    fn a_message_without_lines_has_one_blank_line_before_its_trailers() {
        let text = Message::new("dream: record hand edits", vec![], "c", Stage::Manual)
            .trailer("Undoes", "x")
            .render();
        assert_eq!(
            text,
            "dream: record hand edits\n\nDream-Cycle: c\nDream-Stage: manual\nDream-Tokens: 0\nDream-Undoes: x\n"
        );
    }

    #[test]
    fn every_stage_name_parses_back() {
        for s in [Stage::Manual, Stage::Forget, Stage::Undo, Stage::Skills] {
            assert_eq!(Stage::parse(s.as_str()), Some(s));
        }
        assert_eq!(Stage::parse("nonsense"), None);
    }
}
