//! `dream eval turns`: the turn splitter (`dream_core::sources::turn`) measured on labelled owner
//! turns: for each kind (the person's prose, pastes, harness text, slash commands), the
//! share of lines it gave that kind that are of it (precision) and the share of that
//! kind's lines it found (recall). The shipped dev sets are compiled in, so a user's
//! build measures the same lines the tests hold.

use dream_core::sources::turn::devset::{self, Scores};

/// The shipped dev sets: written by hand, and real pasted material from public MIT
/// sessions between owner prose (`scripts/devsets/make_turns.py`).
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "fixtures/devsets/turns-handwritten.txt",
        include_str!("../../../../fixtures/devsets/turns-handwritten.txt"),
    ),
    (
        "fixtures/devsets/turns-composed.txt",
        include_str!("../../../../fixtures/devsets/turns-composed.txt"),
    ),
];

/// Score one dev set's text.
pub fn measure(text: &str) -> Result<Scores, String> {
    Ok(devset::score(&devset::parse(text)?))
}

/// The scores as a table, and with `wrong` every line given the wrong kind.
pub fn render(name: &str, s: &Scores, wrong: bool) -> String {
    let mut out = format!("{name}: {} turns, {} lines\n", s.turns, s.lines);
    out.push_str("  kind       lines  given  right  precision  recall\n");
    for (kind, k) in &s.by_kind {
        out.push_str(&format!(
            "  {kind:<9} {:>6} {:>6} {:>6}      {:.3}   {:.3}\n",
            k.truth,
            k.predicted,
            k.correct,
            k.precision(),
            k.recall()
        ));
    }
    if wrong {
        for (id, want, got, line) in &s.wrong {
            out.push_str(&format!("  {id}: {want} taken for {got}: {line}\n"));
        }
    }
    out
}
