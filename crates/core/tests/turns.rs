//! The turn splitter measured on the labelled dev sets in `fixtures/devsets/`: the owner's
//! prose must be found (recall) and nothing else taken for it (precision). The figures are
//! in docs/BENCHMARKS.md (`dream eval turns`); these floors hold them.

// A test binary reports its figures on stderr (the core library itself prints nothing).
#![allow(clippy::disallowed_macros)]
use dream_core::sources::turn::devset;

const HANDWRITTEN: &str = include_str!("../../../fixtures/devsets/turns-handwritten.txt");
const COMPOSED: &str = include_str!("../../../fixtures/devsets/turns-composed.txt");

fn scores(name: &str, text: &str) -> devset::Scores {
    let turns = devset::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(turns.len() >= 40, "{name}: {} turns", turns.len());
    let s = devset::score(&turns);
    for (id, want, got, line) in &s.wrong {
        eprintln!("{name} {id}: {want} taken for {got}: {line}");
    }
    s
}

#[test]
fn the_owners_prose_is_found_and_nothing_else_is_taken_for_it() {
    for (name, text) in [("handwritten", HANDWRITTEN), ("composed", COMPOSED)] {
        let s = scores(name, text);
        let prose = &s.by_kind["prose"];
        eprintln!(
            "{name}: prose precision {:.3} recall {:.3} over {} lines",
            prose.precision(),
            prose.recall(),
            s.lines
        );
        let (min_precision, min_recall) = if name == "handwritten" {
            (0.95, 0.95)
        } else {
            (0.85, 0.90)
        };
        assert!(
            prose.precision() >= min_precision,
            "{name}: prose precision {:.3}",
            prose.precision()
        );
        assert!(
            prose.recall() >= min_recall,
            "{name}: prose recall {:.3}",
            prose.recall()
        );
    }
}

#[test]
fn harness_text_and_commands_are_never_prose() {
    let s = scores("handwritten", HANDWRITTEN);
    for kind in ["injected", "command"] {
        let k = &s.by_kind[kind];
        assert_eq!(k.correct, k.truth, "{kind}: {k:?}");
    }
}
