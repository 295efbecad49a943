//! `recall` as an agent sees it through `dream mcp`: what a line says decides how close it
//! is to a question, not the day it was said on or who said it.

use dream::mcp::Mcp;

use crate::util::Env;

/// What people said, each an episode of its own (invented for this test).
const SAID: &[(&str, &str)] = &[
    ("Ana", "I started a pottery class on Thursday evenings."),
    ("Ben", "My sister is moving to Lisbon in the autumn."),
    ("Ana", "I finally fixed the leaking kitchen tap myself."),
    ("Ben", "We booked a cabin in the mountains for August."),
    ("Ana", "I'm learning to play the cello, slowly."),
    ("Ben", "The new job starts with a week of training."),
    ("Ana", "Our book club is reading a novel about whales."),
    ("Ben", "I repainted the spare bedroom a pale green."),
    ("Ana", "My neighbour lent me a ladder for the gutters."),
    ("Ben", "I ran my first half marathon yesterday [DAY]."),
    ("Ana", "We adopted a little tabby cat from the shelter."),
    ("Ben", "I joined a tennis club near the river."),
    ("Ana", "Thanks so much!"),
    ("Ben", "Sounds good, see you then."),
    ("Ana", "That's so sweet of you."),
    ("Ben", "Haha, totally."),
    ("Ana", "I work as a nurse on the night shift."),
    ("Ben", "Jazz records are always playing in my kitchen."),
];

/// A repository whose episodes open with `day` (and write it beside "yesterday"), every
/// other field the same.
fn repo_with_days(day: &str) -> Env {
    let env = Env::new();
    env.init();
    let mut file = String::from("# episodes\n\n");
    for (i, (speaker, text)) in SAID.iter().enumerate() {
        let text = text.replace("DAY", day);
        file.push_str(&format!(
            "- {day}, {speaker}: {text} <!-- id=f_{i:08x} cat=event by=auto first=2026-05-03 last=2026-05-03 ev=e_{i} -->\n"
        ));
    }
    std::fs::write(env.repo.join("memory/episodes.md"), file).unwrap();
    env
}

/// Each line recall returned, as (id, score).
fn hits(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| l.starts_with("- "))
        .map(|l| {
            let id = l.rsplit_once(" [").unwrap().1.split(']').next().unwrap();
            let score = l.rsplit_once("score ").unwrap().1.trim_end_matches(')');
            (id.to_string(), score.to_string())
        })
        .collect()
}

#[test]
fn the_day_a_line_was_said_does_not_move_it_in_recall() {
    let now = "2026-05-04T12:00:00Z".parse().unwrap();
    let may = repo_with_days("3 May 2026");
    let september = repo_with_days("17 September 2025");
    for question in [
        "Which instrument is Ana practising?",
        "What pet does Ana have?",
        "Who is moving abroad?",
        "What did Ben do for exercise?",
    ] {
        let ask = |env: &Env| {
            Mcp::new(&env.repo, Some(now), None)
                .unwrap()
                .recall_text(question, Some(5), None)
                .unwrap()
        };
        let (a, b) = (ask(&may), ask(&september));
        assert!(!hits(&a).is_empty(), "{question}: {a}");
        // The same lines, in the same order, with the same scores: the days are not part
        // of what the lines say (the question names none).
        assert_eq!(hits(&a), hits(&b), "{question}:\n{a}\n{b}");
    }
}

#[test]
fn a_statement_and_the_same_words_as_a_named_speakers_episode_score_alike() {
    // What Ana said, once as a plain durable fact and once as her dated episode: a
    // question that names neither her nor a day finds both equally close.
    let env = Env::new();
    env.init();
    std::fs::write(
        env.repo.join("memory/human.md"),
        "# human\n\n- We adopted a little tabby cat from the shelter. <!-- id=f_00000001 cat=knowledge by=auto first=2026-05-03 last=2026-05-03 ev=e_1 -->\n",
    )
    .unwrap();
    std::fs::write(
        env.repo.join("memory/episodes.md"),
        "# episodes\n\n- 3 May 2026, Ana: We adopted a little tabby cat from the shelter. <!-- id=f_00000002 cat=event by=auto first=2026-05-03 last=2026-05-03 ev=e_2 -->\n",
    )
    .unwrap();
    let now = "2026-05-04T12:00:00Z".parse().unwrap();
    let text = Mcp::new(&env.repo, Some(now), None)
        .unwrap()
        .recall_text("which animal lives with them now?", Some(5), None)
        .unwrap();
    let found = hits(&text);
    assert_eq!(found.len(), 2, "{text}");
    assert_eq!(found[0].1, found[1].1, "{text}");
}
