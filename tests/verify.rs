//! `dream verify` (SPEC S12) against repositories a person can break: it must pass on what
//! the cycle wrote, and fail with the exact problem (exit 1) when a fact gains a word its
//! events never said, when a fact is "dropped" as a duplicate of a dissimilar one (in a
//! forged pass commit or by hand in the working tree), when a fact leaves memory without
//! an archive entry, when a secret sits in memory, or when a cycle with the loss guard on
//! archived more than `retention.max_loss_share` of memory.

use std::path::Path;

use crate::passes::{placement, seed, NOW};
use crate::util::{stdout, Env};

/// Commit the whole working tree as `git commit -a` would, with this message.
fn commit_all(repo: &Path, message: &str) {
    let r = git2::Repository::open(repo).unwrap();
    let mut idx = r.index().unwrap();
    idx.add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    idx.update_all(["*"], None).unwrap();
    idx.write().unwrap();
    let tree = r.find_tree(idx.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("someone", "someone@localhost").unwrap();
    let head = r.head().unwrap().peel_to_commit().unwrap();
    r.commit(Some("HEAD"), &sig, &sig, message, &tree, &[&head])
        .unwrap();
}

/// A repo after one offline cycle over the seeded memory, with `dream verify` passing.
fn cycled() -> Env {
    let env = Env::new();
    seed(&env, 100);
    env.run_cycle(NOW);
    let out = env.dream(&["verify"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    env
}

fn verify_fails(env: &Env) -> String {
    let out = env.dream(&["verify"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    text
}

fn replace_in(env: &Env, rel: &str, from: &str, to: &str) {
    let text = env.read(rel);
    assert!(text.contains(from), "{rel} holds {from:?}");
    std::fs::write(env.repo.join(rel), text.replace(from, to)).unwrap();
}

/// Move the line of fact `id` from `block` to the archive as a duplicate of `kept`.
fn archive_as_duplicate(env: &Env, block: &str, id: &str, kept: &str) {
    let rel = format!("memory/{block}.md");
    let text = env.read(&rel);
    let line = text
        .lines()
        .find(|l| l.contains(&format!("id={id} ")))
        .unwrap()
        .to_string();
    std::fs::write(env.repo.join(&rel), text.replace(&format!("{line}\n"), "")).unwrap();
    let entry = line.replace(" -->", &format!(" archived=2026-11-06 block={block} policy={kept} reason=\"same thing\" why=duplicate -->"));
    let archive = env.read("archive/facts.md") + &entry + "\n";
    std::fs::write(env.repo.join("archive/facts.md"), archive).unwrap();
}

#[test]
fn verify_passes_on_what_cycles_wrote_and_reports_what_it_checked() {
    let env = cycled();
    let out = env.dream(&["verify", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["problems"].as_array().unwrap().len(), 0);
    assert!(
        v["mutations"].as_u64().unwrap() >= 3,
        "the engine's drop and moves were re-measured: {v}"
    );
    assert_eq!(v["active_facts"], 8);
    assert_eq!(v["traced"], 8, "every fact traced to its events: {v}");
    assert_eq!(v["cycle_reports"], 1);
}

#[test]
fn a_fact_with_an_invented_word_fails_verify_naming_the_word() {
    let env = cycled();
    replace_in(
        &env,
        "memory/human.md",
        "I live in Porto and work",
        "I live in Porto near the river and work",
    );
    let text = verify_fails(&env);
    assert!(
        text.contains("[trace] f_porto: f_porto (by=auto) has words absent from its supporting events: near, river (coverage 0.714 < 1)"),
        "{text}"
    );
    replace_in(
        &env,
        "memory/human.md",
        "Porto near the river",
        "Porto with Maria",
    );
    let text = verify_fails(&env);
    assert!(
        text.contains("f_porto names name \"Maria\", absent from its supporting events"),
        "{text}"
    );
}

#[test]
fn a_forged_drop_of_a_dissimilar_duplicate_fails_verify_with_the_measured_similarity() {
    let env = cycled();
    let kept = if placement(&env).contains_key("f_lis2") {
        "f_lis2"
    } else {
        "f_lis1"
    };
    archive_as_duplicate(&env, "human", "f_porto", kept);
    commit_all(
        &env.repo,
        &format!(
            "dream: dedupe pass 2026-11-06: 1 dropped (1 by the model, 0 engine-enforced), 0 refused\n\n\
             accepted drop    item=f_porto duplicate_of={kept} similarity=0.950 kept_coverage=1.000 reason=\"same\" text=\"I live in Porto and work best in the morning.\"\n\n\
             Dream-Cycle: 20261106T210000Z-evening\nDream-Stage: dedupe\nDream-Tokens: 0\n\
             Dream-Counts: proposed=1 accepted=1 refused=0 engine=0\n"
        ),
    );
    let text = verify_fails(&env);
    assert!(
        text.contains(&format!(
            "f_porto was dropped as a duplicate of {kept}, but their similarity is 0.800 (< 0.9)"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "the commit records similarity 0.950 for f_porto and {kept}; it measures 0.800"
        )),
        "{text}"
    );
}

#[test]
fn a_hand_archived_dissimilar_duplicate_fails_verify_before_it_is_committed() {
    let env = cycled();
    let kept = if placement(&env).contains_key("f_lis2") {
        "f_lis2"
    } else {
        "f_lis1"
    };
    archive_as_duplicate(&env, "human", "f_porto", kept);
    let text = verify_fails(&env);
    assert!(
        text.contains(&format!(
            "[archive] working tree f_porto: f_porto was archived as a duplicate of {kept}, but their similarity is 0.800 (< 0.9)"
        )),
        "{text}"
    );
}

#[test]
fn a_fact_deleted_outright_by_a_cycle_commit_and_a_secret_in_memory_fail_verify() {
    let env = cycled();
    replace_in(
        &env,
        "memory/human.md",
        "- I live in Porto and work best in the morning.",
        "- (gone)",
    );
    let human = env.read("memory/human.md");
    let kept: String = human
        .lines()
        .filter(|l| !l.contains("(gone)"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(env.repo.join("memory/human.md"), kept).unwrap();
    commit_all(
        &env.repo,
        "dream: forget pass 2026-11-06: 0 forgotten (0 by the model, 0 engine-enforced), 0 refused\n\n\
         Dream-Cycle: 20261106T210000Z-evening\nDream-Stage: forget\nDream-Tokens: 0\n\
         Dream-Counts: proposed=0 accepted=0 refused=0 engine=0\n",
    );
    let text = verify_fails(&env);
    assert!(
        text.contains("[deleted]")
            && text.contains("f_porto left memory in a forget commit without an archive entry"),
        "{text}"
    );

    let secret = "AKIAIOSFODNN7EXAMPLE";
    std::fs::write(
        env.repo.join("memory/persona.md"),
        format!("# Persona\n\n- The deploy key is {secret}\n"),
    )
    .unwrap();
    let text = verify_fails(&env);
    assert!(
        text.contains(
            "[secret] memory/persona.md line 3: a hand-written line contains a secret (aws-access-key)"
        ),
        "{text}"
    );
    assert!(
        !text.contains(secret),
        "verify never prints the secret: {text}"
    );
}

/// Move fact `id` from `block` to the archive as forgotten under `policy`.
fn archive_as_forgotten(env: &Env, block: &str, id: &str, policy: &str) {
    let rel = format!("memory/{block}.md");
    let text = env.read(&rel);
    let line = text
        .lines()
        .find(|l| l.contains(&format!("id={id} ")))
        .unwrap()
        .to_string();
    std::fs::write(env.repo.join(&rel), text.replace(&format!("{line}\n"), "")).unwrap();
    let entry = line.replace(
        " -->",
        &format!(" archived=2026-11-07 block={block} policy=\"{policy}\" reason=\"old\" why=forgotten -->"),
    );
    let archive = env.read("archive/facts.md") + &entry + "\n";
    std::fs::write(env.repo.join("archive/facts.md"), archive).unwrap();
}

#[test]
fn a_cycle_that_archived_past_the_loss_guard_fails_verify_unless_it_was_lifted() {
    let forge = |guard: &str| {
        let env = cycled();
        // Two stale facts forgotten in one cycle, each legitimately, but over a share of
        // 0.1 of the 8 active facts (at most 1), with the guard said to be on.
        replace_in(
            &env,
            "dream.toml",
            "max_loss_share = 0.25",
            "max_loss_share = 0.1",
        );
        archive_as_forgotten(&env, "scratch", "f_printer", "stale_after_days=60");
        archive_as_forgotten(&env, "scratch", "f_vpn", "stale_after_days=60");
        commit_all(
            &env.repo,
            &format!(
                "dream: forget pass 2026-11-07: 2 forgotten (2 by the model, 0 engine-enforced), 0 refused\n\n\
                 accepted forget  item=f_printer policy=stale_after_days=60 days_since_seen=98 claimed=stale reason=old\n\
                 accepted forget  item=f_vpn policy=stale_after_days=60 days_since_seen=115 claimed=stale reason=old\n\n\
                 Dream-Cycle: 20261107T210000Z-evening\nDream-Stage: forget\nDream-Tokens: 0\n\
                 Dream-Counts: proposed=2 accepted=2 refused=0 engine=0\nDream-Loss-Guard: {guard}\n"
            ),
        );
        env
    };
    let text = verify_fails(&forge("on"));
    assert!(
        text.contains("cycle 20261107T210000Z-evening archived 2 of the 8 facts active before its passes, over retention.max_loss_share = 0.1 (at most 1), with the loss guard on"),
        "{text}"
    );
    let out = forge("lifted").dream(&["verify"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "--allow-loss lifted it: {}",
        stdout(&out)
    );
}
