//! Salience decides (issue 28): what is said in passing never becomes memory or a card
//! however often it is said, a session adds at most `episodes.max_per_session` episodes
//! (its most salient), the review queue holds at most `review.max_new_cards` cards with the
//! rest waiting for room, and a person decides cards in batches.

use std::collections::{BTreeMap, BTreeSet};

use crate::util::{event, stdout, Env};

/// One kind of thing people say that is not worth keeping, in general words.
struct Kind {
    name: &'static str,
    text: &'static str,
    /// Whether the phrase rules already pass it over (never proposed), rather than the
    /// salience gate refusing it.
    chatter: bool,
}

const KINDS: &[Kind] = &[
    Kind {
        name: "feeling",
        text: "I feel so relaxed after a long weekend.",
        chatter: false,
    },
    Kind {
        name: "status",
        text: "I'm at my desk going through emails right now.",
        chatter: false,
    },
    Kind {
        name: "reaction",
        text: "That sounds wonderful, congratulations on the news!",
        chatter: true,
    },
    Kind {
        name: "greeting",
        text: "Good morning, hope everyone slept well!",
        chatter: true,
    },
    Kind {
        name: "question",
        text: "What are you planning to cook for dinner tonight?",
        chatter: true,
    },
    Kind {
        name: "passing opinion",
        text: "I think the pasta at Luigi's was a bit salty.",
        chatter: false,
    },
    Kind {
        name: "hedged verdict",
        text: "I believe if it came to a race, the hare would surely win.",
        chatter: false,
    },
    // No phrase rule names it, and it scores between SEND and KEEP: before, said on five
    // days it became a durable fact, since repetition lowered the bar.
    Kind {
        name: "platitude",
        text: "We can all make things a little better.",
        chatter: false,
    },
    // Open like a standing instruction ("You should ...", "Always ...") in talk between
    // people, and are an invitation and a compliment.
    Kind {
        name: "invitation",
        text: "You should come along with us sometime!",
        chatter: true,
    },
    Kind {
        name: "compliment",
        text: "Always nice to hear from you!",
        chatter: true,
    },
    // A fact, in a language the phrase rules and the score do not read: its names and
    // numbers alone would have made it an episode, then a durable fact.
    Kind {
        name: "statement in another language",
        text: "Mi hermana llega el 20 de diciembre desde Madrid con sus dos hijos.",
        chatter: false,
    },
];

/// Said once, specific, about the person: an episode.
const SPECIFIC: &str = "My daughter Lena starts school at Riverside Elementary on 4 September.";

fn count_waiting(env: &Env) -> u64 {
    let out = env.dream(&["status", "--json"]);
    assert!(out.status.success(), "{}", stdout(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["review_waiting"]
        .as_u64()
        .expect("status --json counts the waiting cards")
}

#[test]
fn what_is_said_in_passing_is_never_kept_however_often_and_a_specific_statement_is() {
    let env = Env::new();
    env.init();
    let mut refused_by_salience: BTreeSet<String> = BTreeSet::new();
    for day in 2..=6u32 {
        let mut lines = String::new();
        for (i, k) in KINDS.iter().enumerate() {
            lines += &event(
                &format!("2026-11-{day:02}T{:02}:00:00Z", 9 + i),
                &format!("s{day}"),
                k.text,
            );
        }
        if day == 4 {
            lines += &event("2026-11-04T16:00:00Z", "s4", SPECIFIC);
        }
        env.write_inbox(&format!("d{day}.jsonl"), &lines);
        let report = env.run_cycle(&format!("2026-11-{day:02}T21:00:00Z"));
        for d in report["decisions"].as_array().unwrap() {
            if d["route"] == "refused" && d["gate"] == "salience" {
                refused_by_salience.insert(d["text"].as_str().unwrap().to_string());
            }
        }
    }
    let facts = env.facts();
    let cards = env.cards();
    for k in KINDS {
        assert!(
            !facts.iter().any(|f| f.contains(k.text)),
            "a {} said on five days in five sessions is kept: {facts:#?}",
            k.name
        );
        assert!(
            !cards.iter().any(|c| c.contains(k.text)),
            "a {} is a card: {cards:#?}",
            k.name
        );
        // What the phrase rules let through, salience refused, with its reason.
        if !k.chatter {
            assert!(
                refused_by_salience.contains(k.text),
                "the {} was not refused by its salience: {refused_by_salience:#?}",
                k.name
            );
        }
    }
    assert_eq!(count_waiting(&env), 0, "nothing waits for review either");
    let episodes = env.read("memory/episodes.md");
    assert!(
        episodes.contains(SPECIFIC),
        "the specific statement said once is an episode:\n{episodes}"
    );
    for b in ["persona", "human", "scratch"] {
        let text = env.read(&format!("memory/{b}.md"));
        assert!(
            !text.lines().any(|l| l.starts_with("- ")),
            "no durable fact in {b}:\n{text}"
        );
    }
    // The refusal shows its reason and the gate's row in `dream explain`.
    let feeling = KINDS[0].text;
    let id = dream_core::schema::text_id("k", feeling);
    let out = env.dream(&["explain", &id, "--json"]);
    assert!(out.status.success(), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("salience") && text.contains("said in passing"),
        "{text}"
    );
    // verify re-derives every kept line's salience.
    let out = env.dream(&["verify", "--json"]);
    assert!(out.status.success(), "{}", stdout(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["salience_checked"].as_u64().unwrap() >= 1, "{v}");
}

/// One kind said on five days, each in its own session (and alone in it), beside a specific
/// statement said once: the kind is never a line or a card, the statement is an episode,
/// and a kind the phrase rules let through is refused by its salience, which `dream
/// explain` shows.
fn never_kept(name: &str) {
    let k = KINDS.iter().find(|k| k.name == name).expect("a kind");
    let env = Env::new();
    env.init();
    let mut refused = Vec::new();
    for day in 2..=6u32 {
        let mut lines = event(
            &format!("2026-11-{day:02}T10:00:00Z"),
            &format!("s{day}"),
            k.text,
        );
        if day == 4 {
            lines += &event("2026-11-04T16:00:00Z", "s4", SPECIFIC);
        }
        env.write_inbox(&format!("d{day}.jsonl"), &lines);
        let report = env.run_cycle(&format!("2026-11-{day:02}T21:00:00Z"));
        for d in report["decisions"].as_array().unwrap() {
            if d["text"] == k.text {
                assert_eq!(d["route"], "refused", "a {name}: {d:#}");
                refused.push(d["reason"].as_str().unwrap().to_string());
            }
        }
    }
    let lines: Vec<String> = env.facts();
    assert!(
        !lines.iter().any(|l| l.contains(k.text)),
        "a {name} said on five days in five sessions is kept: {lines:#?}"
    );
    assert!(
        !env.cards().iter().any(|c| c.contains(k.text)),
        "a {name} is a card"
    );
    assert_eq!(count_waiting(&env), 0, "nor does it wait for review");
    let episodes = env.read("memory/episodes.md");
    assert!(!episodes.contains(k.text), "{episodes}");
    assert!(episodes.contains(SPECIFIC), "{episodes}");
    if !k.chatter {
        assert!(
            !refused.is_empty(),
            "the {name} was never refused by its salience"
        );
        let out = env.dream(&[
            "explain",
            &dream_core::schema::text_id("k", k.text),
            "--json",
        ]);
        assert!(out.status.success(), "{}", stdout(&out));
        let text = stdout(&out);
        assert!(text.contains("\"salience\""), "{text}");
    }
    assert!(env.dream(&["verify"]).status.success());
}

#[test]
fn a_feeling_said_on_five_days_is_never_kept() {
    never_kept("feeling");
}

#[test]
fn a_status_said_on_five_days_is_never_kept() {
    never_kept("status");
}

#[test]
fn a_reaction_said_on_five_days_is_never_kept() {
    never_kept("reaction");
}

#[test]
fn a_greeting_said_on_five_days_is_never_kept() {
    never_kept("greeting");
}

#[test]
fn a_question_said_on_five_days_is_never_kept() {
    never_kept("question");
}

#[test]
fn a_passing_opinion_said_on_five_days_is_never_kept() {
    never_kept("passing opinion");
}

#[test]
fn a_platitude_said_on_five_days_is_never_kept() {
    never_kept("platitude");
}

#[test]
fn an_invitation_said_on_five_days_is_never_kept() {
    never_kept("invitation");
}

#[test]
fn a_compliment_said_on_five_days_is_never_kept() {
    never_kept("compliment");
}

/// The salience a consolidation commit records for each kept line and each line its
/// session's cap refused.
fn scores(message: &str, verb: &str) -> Vec<f32> {
    let re = regex::Regex::new(r"(?:salience|scores) (\d\.\d{3})").unwrap();
    message
        .lines()
        .filter(|l| l.starts_with(verb))
        .filter_map(|l| re.captures(l).map(|c| c[1].parse().unwrap()))
        .collect()
}

#[test]
fn a_session_adds_at_most_its_cap_of_episodes_the_most_salient_first() {
    let env = Env::new();
    env.init();
    env.set_var("DREAM_EPISODES_MAX_PER_SESSION", "2");
    let said = [
        "I moved to Porto in March 2021 with my sister Ana.",
        "I work as a nurse at the children's hospital in Leeds.",
        "I'm allergic to peanuts and shellfish.",
        "My daughter Lena starts school at Riverside Elementary on 4 September.",
    ];
    let lines: String = said
        .iter()
        .enumerate()
        .map(|(i, t)| event(&format!("2026-11-02T{:02}:00:00Z", 9 + i), "s1", t))
        .collect();
    env.write_inbox("d2.jsonl", &lines);
    let report = env.run_cycle("2026-11-02T21:00:00Z");
    assert_eq!(report["candidates"]["episodes"], 2, "{report:#}");
    let capped: Vec<&serde_json::Value> = report["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            d["route"] == "refused" && d["reason"].as_str().unwrap().contains("max_per_session")
        })
        .collect();
    assert_eq!(capped.len(), 2, "{report:#}");
    assert!(capped.iter().all(|d| d["gate"] == "salience"));
    // The two kept are the session's most salient.
    let (_, message) = env
        .commits()
        .into_iter()
        .find(|(s, _)| s.contains("2 episodes"))
        .expect("the consolidation commit");
    let kept = scores(&message, "episode");
    let refused = scores(&message, "refused");
    assert_eq!((kept.len(), refused.len()), (2, 2), "{message}");
    let lowest_kept = kept.iter().copied().fold(f32::INFINITY, f32::min);
    assert!(
        refused.iter().all(|r| *r <= lowest_kept),
        "kept {kept:?}, refused {refused:?}"
    );
    // The same session resumed the next day adds nothing more; another session does.
    env.write_inbox(
        "d3.jsonl",
        &(event(
            "2026-11-03T09:00:00Z",
            "s1",
            "I ran the Berlin marathon in 2019 in under four hours.",
        ) + &event(
            "2026-11-03T10:00:00Z",
            "s2",
            "My brother Tom is getting married in Lisbon on 12 June.",
        )),
    );
    let report = env.run_cycle("2026-11-03T21:00:00Z");
    assert_eq!(report["candidates"]["episodes"], 1, "{report:#}");
    let episodes = env.read("memory/episodes.md");
    assert!(episodes.contains("Tom is getting married"), "{episodes}");
    assert!(!episodes.contains("Berlin marathon"), "{episodes}");
    assert!(env.dream(&["verify"]).status.success());
}

/// Five specific statements about the person.
const FIVE: [&str; 5] = [
    "I moved to Porto in March 2021 with my sister Ana.",
    "I work as a nurse at the children's hospital in Leeds.",
    "I'm allergic to peanuts and shellfish.",
    "My daughter Lena starts school at Riverside Elementary on 4 September.",
    "I adopted a grey cat named Pixel from the shelter in 2024.",
];

/// Each of `said` said on 2 and 3 November, in the sessions given (a session on each day),
/// and an evening cycle each day: said twice, short of the durable rule, each is a card.
fn said_twice(env: &Env, said: &[(&str, &str, &str)]) {
    for (day, which) in [(2u32, 0usize), (3, 1)] {
        let lines: String = said
            .iter()
            .enumerate()
            .map(|(i, (t, a, b))| {
                event(
                    &format!("2026-11-{day:02}T{:02}:00:00Z", 9 + i),
                    if which == 0 { a } else { b },
                    t,
                )
            })
            .collect();
        env.write_inbox(&format!("d{day}.jsonl"), &lines);
        env.run_cycle(&format!("2026-11-{day:02}T21:00:00Z"));
    }
}

#[test]
fn the_queue_holds_its_budget_the_rest_wait_and_are_offered_as_it_drains() {
    let env = Env::new();
    env.init();
    env.set_var("DREAM_REVIEW_MAX_NEW_CARDS", "2");
    env.write_inbox(
        "d2.jsonl",
        &FIVE
            .iter()
            .enumerate()
            .map(|(i, t)| event(&format!("2026-11-02T{:02}:00:00Z", 9 + i), "s1", t))
            .collect::<String>(),
    );
    env.run_cycle("2026-11-02T21:00:00Z");
    // Said again the next day: five cards for a person, two fit.
    env.write_inbox(
        "d3.jsonl",
        &FIVE
            .iter()
            .enumerate()
            .map(|(i, t)| event(&format!("2026-11-03T{:02}:00:00Z", 9 + i), "s2", t))
            .collect::<String>(),
    );
    let report = env.run_cycle("2026-11-03T21:00:00Z");
    assert_eq!(report["candidates"]["queued"], 5, "{report:#}");
    let q = &report["review"];
    assert_eq!(
        (q["new_cards"].as_u64(), q["waiting"].as_u64()),
        (Some(2), Some(3)),
        "{q}"
    );
    let first = env.pending();
    assert_eq!(first.len(), 2);
    assert_eq!(count_waiting(&env), 3);
    // The queued are the best: none waiting scores above a queued one.
    let out = env.dream(&["review", "list", "--waiting", "--json"]);
    let waiting: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(waiting.len(), 3);
    let score = |gates: &serde_json::Value| -> f32 {
        gates
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["gate"] == "salience")
            .map(|g| g["value"].as_str().unwrap().parse().unwrap())
            .expect("a salience row")
    };
    let worst_queued = first
        .iter()
        .map(|c| dream_core::selection::keep::recorded(&c.gates).unwrap())
        .fold(f32::INFINITY, f32::min);
    assert!(waiting.iter().all(|c| score(&c["gates"]) <= worst_queued));
    // Nothing lost, and said so where a person looks.
    let list = stdout(&env.dream(&["review", "list"]));
    assert!(list.contains("and 3 more waiting for room"), "{list}");
    let status = stdout(&env.dream(&["status"]));
    assert!(status.contains("3 more waiting for room"), "{status}");
    // A full queue takes nothing more, though an evening passes.
    let report = env.run_cycle("2026-11-04T21:00:00Z");
    assert_eq!(report["review"]["new_cards"], 0);
    assert_eq!(env.pending().len(), 2);
    // A decision makes room: the next evening queues the best waiting card.
    let rejected = first[0].id.clone();
    assert!(env
        .dream(&["review", "reject", &rejected, "--reason", "not now"])
        .status
        .success());
    let report = env.run_cycle("2026-11-05T21:00:00Z");
    assert_eq!(report["review"]["new_cards"], 1, "{report:#}");
    assert_eq!(env.pending().len(), 2);
    assert_eq!(count_waiting(&env), 2);
    let (subject, message) = env.commits().into_iter().next().unwrap();
    assert!(subject.contains("1 waiting cards queued"), "{subject}");
    assert!(message.contains("offered    "), "{message}");
    // The morning digest says how many wait.
    let out = env.dream(&["run", "--cycle", "morning", "--now", "2026-11-06T07:00:00Z"]);
    assert!(out.status.success(), "{}", stdout(&out));
    let digest = env.read("digests/2026-11-06-morning.md");
    assert!(digest.contains("2 more cards waiting for room"), "{digest}");
    assert!(env.dream(&["verify"]).status.success());
}

#[test]
fn a_person_decides_cards_in_batches_and_takes_a_batch_back_in_one_undo() {
    let env = Env::new();
    env.init();
    let mut said: Vec<(&str, &str, &str)> = FIVE.iter().map(|t| (*t, "s-a", "s-b")).collect();
    said.push((
        "My brother Tom is getting married in Lisbon on 12 June.",
        "s-c",
        "s-d",
    ));
    said_twice(&env, &said);
    let cards = env.pending();
    assert_eq!(cards.len(), 6);
    let scores: Vec<f32> = cards
        .iter()
        .map(|c| dream_core::selection::keep::recorded(&c.gates).unwrap())
        .collect();
    // A threshold between the lowest and the highest score takes some, not all.
    let mut sorted = scores.clone();
    sorted.sort_by(f32::total_cmp);
    let below = (sorted[0] + sorted[5]) / 2.0;
    let want = scores.iter().filter(|s| **s < below).count();
    assert!(want > 0 && want < 6, "{scores:?}");

    // A dry run says which and changes nothing.
    let before = env.snapshot();
    let b = below.to_string();
    let out = env.dream(&["review", "reject", "--below", &b, "--dry-run"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!("Would reject {want} card")),
        "{}",
        stdout(&out)
    );
    assert_eq!(before, env.snapshot(), "a dry run writes nothing");

    // For real: one commit, the cards decided, the rest pending.
    let out = env.dream(&[
        "review",
        "reject",
        "--below",
        &b,
        "--reason",
        "not worth it",
    ]);
    assert!(out.status.success(), "{}", stdout(&out));
    let said = stdout(&out);
    let session = said
        .split("dream undo --cycle ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("the batch names its session")
        .trim_matches('`')
        .to_string();
    assert_eq!(env.pending().len(), 6 - want);
    let (subject, _) = env.commits().into_iter().next().unwrap();
    assert!(
        subject.starts_with(&format!("dream: review: rejected {want} cards")),
        "{subject}"
    );
    let decided = std::fs::read_dir(env.repo.join("review/decided"))
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            cards
                .iter()
                .any(|c| name.to_string_lossy() == format!("{}.md", c.id))
        })
        .count();
    assert_eq!(decided, want);

    // A session's cards.
    let out = env.dream(&["review", "accept", "--session", "s-d"]);
    assert!(out.status.success(), "{}", stdout(&out));
    let human = env.read("memory/human.md");
    assert!(human.contains("Tom is getting married"), "{human}");
    assert_eq!(env.pending().len(), 6 - want - 1);

    // The rejection batch comes back whole in one undo.
    let out = env.dream(&["undo", "--cycle", &session]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert_eq!(
        env.pending().len(),
        6 - 1,
        "the rejected cards are pending again"
    );

    // Bad selections are usage errors, and nothing is written.
    let before = env.snapshot();
    for args in [
        vec!["review", "reject", "--below", "2"],
        vec!["review", "reject"],
        vec!["review", "reject", "--session", ""],
    ] {
        let out = env.dream(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stdout(&out));
    }
    let out = env.dream(&["review", "reject", "--cluster", "c_00000000"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(before, env.snapshot());
    assert!(env.dream(&["verify"]).status.success());
}

#[test]
fn a_batch_takes_a_card_and_the_cards_saying_about_the_same() {
    let env = Env::new();
    env.init();
    said_twice(
        &env,
        &[
            ("I'm a vegetarian and never eat meat.", "s1", "s2"),
            ("I stopped eating meat and fish in 2019.", "s1", "s2"),
            (
                "I work as a nurse at the children's hospital in Leeds.",
                "s1",
                "s2",
            ),
        ],
    );
    let cards = env.pending();
    let meat = cards
        .iter()
        .find(|c| c.text.starts_with("I'm a vegetarian"))
        .expect("a card about what the person eats");
    let out = env.dream(&["review", "reject", "--cluster", &meat.id, "--dry-run"]);
    assert!(out.status.success(), "{}", stdout(&out));
    let said = stdout(&out);
    assert!(
        said.contains("stopped eating meat"),
        "the card saying about the same is taken: {said}"
    );
    assert!(
        !said.contains("nurse"),
        "a card about something else is not: {said}"
    );
}

#[test]
fn with_a_model_only_what_scores_send_is_sent_and_the_rest_costs_nothing() {
    use crate::llm::{ev, lisbon, run, setup};
    // Said in passing, in words a model would be paid to read: a request repeated on three
    // days (a cluster) and two remarks said once that look like facts (single mentions).
    let junk = [
        "ok run it again",
        "The build took forever again.",
        "The meeting ran late.",
    ];
    let events = lisbon()
        + &ev("j-1", 3, "s1", junk[0])
        + &ev("j-2", 4, "s2", junk[0])
        + &ev("j-3", 5, "s3", junk[0])
        + &ev("j-4", 5, "s4", junk[1])
        + &ev("j-5", 5, "s5", junk[2])
        + &ev("l-1", 5, "s6", SPECIFIC);
    let (env, fake) = setup(&events);
    fake.on("reflect", dream_testkit::fake_llm::echo_reflect);
    let report = run(&env, &fake, &[]);
    let sent: String = fake
        .calls("reflect")
        .iter()
        .map(|c| c.body.to_string())
        .collect();
    for j in junk {
        assert!(!sent.contains(j), "{j:?} was sent to the model:\n{sent}");
    }
    assert!(sent.contains("I live in Lisbon with two cats."), "{sent}");
    assert!(sent.contains("Riverside Elementary"), "{sent}");
    assert!(
        report["window"]["below_send"].as_u64().unwrap() >= 5,
        "{:#}",
        report["window"]
    );
    let text = serde_json::to_string(&report["notes"]).unwrap();
    assert!(text.contains("not sent to the model"), "{text}");
    // Looked at, so never sent later either.
    let again = run(&env, &fake, &[]);
    assert_eq!(again["window"]["below_send"], 0, "{:#}", again["window"]);
    let episodes = env.read("memory/episodes.md");
    assert!(episodes.contains("Riverside Elementary"), "{episodes}");
    for j in junk {
        assert!(!episodes.contains(j), "{episodes}");
    }
}

#[test]
fn an_undo_gives_back_what_waited_and_takes_back_what_a_cycle_set_waiting() {
    let env = Env::new();
    env.init();
    env.set_var("DREAM_REVIEW_MAX_NEW_CARDS", "2");
    for (day, session) in [(2u32, "s1"), (3, "s2")] {
        env.write_inbox(
            &format!("d{day}.jsonl"),
            &FIVE
                .iter()
                .enumerate()
                .map(|(i, t)| event(&format!("2026-11-{day:02}T{:02}:00:00Z", 9 + i), session, t))
                .collect::<String>(),
        );
        env.run_cycle(&format!("2026-11-{day:02}T21:00:00Z"));
    }
    assert_eq!((env.pending().len(), count_waiting(&env)), (2, 3));

    // A batch takes the waiting cards too; undone, they wait again, undecided.
    let out = env.dream(&[
        "review",
        "reject",
        "--all",
        "--waiting",
        "--reason",
        "later",
    ]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert_eq!((env.pending().len(), count_waiting(&env)), (0, 0));
    let session = stdout(&out)
        .split("dream undo --cycle ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("the batch names its session")
        .trim_matches('`')
        .to_string();
    let out = env.dream(&["undo", "--cycle", &session]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).contains("rewaits"), "{}", stdout(&out));
    assert_eq!((env.pending().len(), count_waiting(&env)), (2, 3));
    let out = env.dream(&["review", "list", "--waiting", "--json"]);
    let waiting: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        waiting.iter().all(|c| c["decision"].is_null()),
        "{waiting:#?}"
    );

    // Undoing the cycle that made the cards takes its waiting ones back with its queued ones.
    let cycle = env
        .commits()
        .into_iter()
        .filter(|(_, m)| m.contains("Dream-Stage: consolidate"))
        .find_map(|(_, m)| {
            m.lines()
                .find_map(|l| l.strip_prefix("Dream-Cycle: "))
                .filter(|c| c.starts_with("20261103"))
                .map(str::to_string)
        })
        .expect("the second evening's consolidation");
    let out = env.dream(&["undo", "--cycle", &cycle]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert_eq!(
        (env.pending().len(), count_waiting(&env)),
        (0, 0),
        "{}",
        stdout(&out)
    );
    assert!(env.dream(&["verify"]).status.success());
}

#[test]
fn a_hedged_verdict_said_on_five_days_is_never_kept() {
    never_kept("hedged verdict");
}

/// A statement in a language dream does not read is not judged, and the refusal says so
/// rather than giving a score that rests on its names and numbers alone.
#[test]
fn a_statement_in_another_language_is_refused_for_that_and_said_so() {
    never_kept("statement in another language");
    let env = Env::new();
    env.init();
    let text = KINDS
        .iter()
        .find(|k| k.name == "statement in another language")
        .unwrap()
        .text;
    env.write_inbox("d2.jsonl", &event("2026-11-02T10:00:00Z", "s2", text));
    let report = env.run_cycle("2026-11-02T21:00:00Z");
    let reason = report["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["text"] == text)
        .and_then(|d| d["reason"].as_str())
        .expect("a decision about the statement")
        .to_string();
    assert!(
        reason.contains("not written in English") && reason.contains("Spanish"),
        "{reason}"
    );
    let out = env.dream(&["explain", &dream_core::schema::text_id("k", text)]);
    assert!(
        stdout(&out).contains("not written in English"),
        "{}",
        stdout(&out)
    );
}

/// Hand-written chat between friends and colleagues, and an owner's messages in coding
/// sessions, every message labelled (`fixtures/probes/`): replayed one evening cycle a day,
/// memory holds only messages a careful person would keep (probe-1, probe-2 and the coding
/// sessions every line, the later chats at least 85% of their lines), and most of those,
/// as written. The people in a chat are both owners, as in an export of a group chat.
#[test]
fn a_chat_between_friends_keeps_only_what_a_careful_person_would() {
    let probe = [
        include_str!("../fixtures/probes/chat-friends.txt"),
        include_str!("../fixtures/probes/coding-owner.txt"),
    ]
    .concat();
    let mut rows: BTreeMap<&str, Vec<(u32, &str, bool, &str)>> = BTreeMap::new();
    for line in probe
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let f: Vec<&str> = line.splitn(5, '|').collect();
        rows.entry(f[0])
            .or_default()
            .push((f[1].parse().unwrap(), f[2], f[3] == "K", f[4]));
    }
    let mut report = Vec::new();
    for (conversation, messages) in &rows {
        let env = Env::new();
        env.init();
        let days: BTreeSet<u32> = messages.iter().map(|m| m.0).collect();
        for day in days {
            let mut lines = String::new();
            for (i, (_, speaker, _, text)) in messages.iter().enumerate().filter(|m| m.1 .0 == day)
            {
                lines += &(serde_json::json!({
                    "ts": format!("2026-11-{:02}T18:{:02}:00Z", day + 1, i % 60),
                    "kind": "message",
                    "actor": speaker,
                    "trust": "owner",
                    "session": format!("{conversation}-{day}"),
                    "text": text,
                })
                .to_string()
                    + "\n");
            }
            env.write_inbox(&format!("day{day}.jsonl"), &lines);
            env.run_cycle(&format!("2026-11-{:02}T22:00:00Z", day + 1));
        }
        let kept: Vec<String> = env.facts().into_iter().chain(env.cards()).collect();
        let mut found = BTreeSet::new();
        let mut junk = Vec::new();
        for line in &kept {
            let text = line.trim_start_matches("- ");
            let text = text.split(" <!--").next().unwrap();
            // The words as said: without the day, the speaker's name, a relative date's
            // day written beside them, or a lead-in.
            let words = dream_core::selection::keep::statement(text);
            let said = messages
                .iter()
                .find(|m| m.3.contains(words.as_str()))
                .unwrap_or_else(|| panic!("{conversation}: {words:?} is no message's words"));
            if said.2 {
                found.insert(said.3);
            } else {
                junk.push(text.to_string());
            }
        }
        // probe-1, probe-2 and the coding sessions keep no line not worth keeping; each
        // later chat keeps one, left as found (the fixture's header), and is held to
        // precision 0.85.
        let allowed = if matches!(
            *conversation,
            "probe-1" | "probe-2" | "coding-1" | "coding-2"
        ) {
            0
        } else {
            kept.len() * 15 / 100
        };
        assert!(
            junk.len() <= allowed,
            "{conversation}: memory keeps messages labelled not worth keeping: {junk:#?}"
        );
        let worth = messages.iter().filter(|m| m.2).count();
        report.push(format!(
            "{conversation}: {} lines, {} of them worth keeping; {} of {worth} messages worth keeping",
            kept.len(),
            kept.len() - junk.len(),
            found.len()
        ));
        assert!(
            found.len() * 10 >= worth * 6,
            "{conversation}: only {} of {worth} messages worth keeping are kept: {kept:#?}",
            found.len()
        );
    }
    println!("{}", report.join("\n"));
}

/// How the person likes their work done, said plainly and naming nothing, is what the
/// salience model scores lowest among what is worth keeping: a stated preference of one
/// thing over another is kept whatever its score, said in three sessions it is durable,
/// and `dream explain` and `dream verify` say why.
#[test]
fn a_stated_preference_is_kept_whatever_its_score() {
    let said = "I prefer tabs over spaces.";
    let env = Env::new();
    env.init();
    for day in 2..=4u32 {
        env.write_inbox(
            &format!("d{day}.jsonl"),
            &event(
                &format!("2026-11-{day:02}T10:00:00Z"),
                &format!("s{day}"),
                said,
            ),
        );
        env.run_cycle(&format!("2026-11-{day:02}T21:00:00Z"));
    }
    let human = env.read("memory/human.md");
    assert!(
        human.lines().any(|l| l.starts_with(&format!("- {said}"))),
        "a preference said in three sessions is not a durable fact:\n{human}"
    );
    let id = env
        .facts()
        .iter()
        .find(|l| l.contains(said))
        .and_then(|l| l.split("id=").nth(1))
        .map(|r| r.split_whitespace().next().unwrap().to_string())
        .expect("the fact's id");
    let out = env.dream(&["explain", &id]);
    let text = stdout(&out);
    assert!(
        out.status.success() && text.contains("a stated preference"),
        "{text}"
    );
    assert!(env.dream(&["verify"]).status.success());
}
