//! The recall quiz end to end: a cycle whose merge drops a name, or whose forget pass
//! archives a fact an agent still asks for, shows a failing question naming the fact and
//! the mutation, in the report, the commit trailer, `dream log`, `dream explain` and the
//! heartbeat; `dream quiz` on the demo repository passes every question and a forgotten
//! fact is not recalled; with a model, the model answers from `dream context` (against the
//! test kit's fake server), a miss is re-asked once and recorded as a second attempt, and
//! a failed model call is reported without failing anything.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use dream_core::llm::Llm;
use dream_core::schema::contract::{
    ChatCall, JudgeReply, JudgeRequest, LlmError, ReflectReply, ReflectRequest, Reply, Usage,
};
use dream_core::schema::settings::CycleKind;
use dream_engine::cycle::{self, Options};
use dream_testkit::fake_llm::{Answer, FakeLlm};

use crate::passes::{seed, NOW};
use crate::util::{stdout, Env};

/// A model behind the transport seam that answers each pass from a script.
struct Scripted {
    replies: BTreeMap<&'static str, serde_json::Value>,
}

impl Llm for Scripted {
    fn name(&self) -> String {
        "scripted".into()
    }

    fn reflect(&self, _req: &ReflectRequest) -> Result<Reply<ReflectReply>, LlmError> {
        Ok(Reply::free(ReflectReply::default()))
    }

    fn judge(&self, _req: &JudgeRequest) -> Result<Reply<JudgeReply>, LlmError> {
        Ok(Reply::free(JudgeReply::default()))
    }

    fn estimate_chat(&self, call: &ChatCall) -> u64 {
        (call.system.len() + call.user.len()) as u64 / 3 + call.max_tokens
    }

    fn chat_json(&self, call: &ChatCall) -> Result<Reply<serde_json::Value>, LlmError> {
        let value = self
            .replies
            .get(call.stage.as_str())
            .cloned()
            .unwrap_or(serde_json::json!({}));
        Ok(Reply {
            value,
            usage: Usage {
                prompt_tokens: 100,
                completion_tokens: 20,
                cached_tokens: 0,
                reported: true,
            },
            notes: vec![],
        })
    }
}

fn run_scripted(
    env: &Env,
    replies: BTreeMap<&'static str, serde_json::Value>,
    now: &str,
) -> serde_json::Value {
    let config = dream_engine::config::load(&env.repo).unwrap();
    let embedder = dream_engine::providers::embedder(&config).unwrap();
    let opts = Options {
        kind: CycleKind::Evening,
        dry_run: false,
        allow_loss: false,
        now: now.parse().unwrap(),
    };
    let report = cycle::run_cycle(
        &env.repo,
        &config,
        &Scripted { replies },
        embedder.as_ref(),
        &opts,
    )
    .unwrap();
    serde_json::to_value(&report).unwrap()
}

/// The failing questions of a report's quiz, as (fact, expect, mutation, line).
fn failures(report: &serde_json::Value) -> Vec<(String, String, String)> {
    report["quiz"]["failures"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|f| {
            let q = &f["question"];
            (
                q["fact"].as_str().unwrap_or_default().to_string(),
                q["expect"].as_str().unwrap_or_default().to_string(),
                q["mutation"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Let a cycle archive up to half of memory (the engine's own dedupe takes one of the nine
/// seeded facts): these tests are about what the quiz sees, not the loss guard.
fn loose_guard(env: &Env) {
    let toml = env
        .read("dream.toml")
        .replace("max_loss_share = 0.25", "max_loss_share = 0.5");
    std::fs::write(env.repo.join("dream.toml"), toml).unwrap();
}

fn quiz_trailer(env: &Env) -> Option<String> {
    env.commits().into_iter().find_map(|(_, m)| {
        m.lines()
            .find(|l| l.starts_with("Dream-Quiz: "))
            .map(str::to_string)
    })
}

#[test]
fn a_merge_that_drops_a_name_fails_a_question_naming_the_fact_and_the_edit_everywhere() {
    let env = Env::new();
    seed(&env, 100);
    loose_guard(&env);
    // A first evening: the standing sample answers, the baseline the heartbeat compares
    // with.
    let quiet = run_scripted(&env, BTreeMap::new(), "2026-11-05T21:00:00Z");
    assert_eq!(
        quiet["quiz"]["asked"], quiet["quiz"]["answered"],
        "{}",
        quiet["quiz"]
    );
    assert!(quiet["quiz"]["asked"].as_u64().unwrap() > 0);

    // A model's merge that loses a name never gets past the merge gate, so the lossy
    // merge comes by hand: f_air rewritten into words that drop "Airflow".
    let scratch = env.read("memory/scratch.md");
    assert!(scratch.contains("My stack is Airflow."));
    std::fs::write(
        env.repo.join("memory/scratch.md"),
        scratch.replace("My stack is Airflow.", "My stack is an orchestrator."),
    )
    .unwrap();
    let report = run_scripted(&env, BTreeMap::new(), NOW);
    let failed = failures(&report);
    assert_eq!(failed.len(), 1, "{}", report["quiz"]);
    let (fact, expect, mutation) = &failed[0];
    assert_eq!(fact, "f_air");
    assert_eq!(expect, "recalled");
    assert!(mutation.contains("a hand edit of its words"), "{mutation}");
    let q = &report["quiz"]["failures"][0];
    assert_eq!(
        q["question"]["answer"], "Airflow",
        "asked in the fact's old words"
    );
    assert_eq!(
        q["attempts"].as_array().unwrap().len(),
        2,
        "re-asked once in its own words"
    );
    assert_eq!(
        report["quiz"]["answered"].as_u64().unwrap() + 1,
        report["quiz"]["asked"].as_u64().unwrap()
    );

    // The trailer, the log, explain and the heartbeat say so.
    let trailer = quiz_trailer(&env).expect("the cycle's last commit carries the score");
    assert!(
        trailer.contains("second=0") && trailer.contains("via=recall"),
        "{trailer}"
    );
    let log = env.dream(&["log", "--limit", "1"]);
    let log = stdout(&log);
    assert!(log.contains("quiz: "), "{log}");
    assert!(
        log.contains("failed: f_air not answered")
            && log.contains("Airflow")
            && log.contains("hand edit"),
        "{log}"
    );
    let explain = env.dream(&["explain", "f_air"]);
    assert!(explain.status.success());
    let explain = stdout(&explain);
    assert!(explain.contains("Recall quiz"), "{explain}");
    assert!(
        explain.contains("FAILED") && explain.contains("hand edit"),
        "{explain}"
    );
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["rule"].as_str())
        .collect();
    assert!(warnings.contains(&"recall"), "{warnings:?}");
    let status = stdout(&env.dream(&["status"]));
    assert!(
        status.contains("[recall]") && status.contains("quiz: "),
        "{status}"
    );
}

#[test]
fn a_forget_pass_that_archives_a_fact_still_asked_for_fails_and_a_stale_one_is_not_recalled() {
    let env = Env::new();
    seed(&env, 100);
    // Agents recalled the printer fact on many days this summer (before it was last
    // said, so the forget gate still finds it stale): it is among the most used.
    let mut uses = String::new();
    for day in 10..=31 {
        uses.push_str(&format!(
            "{{\"ts\":\"2026-07-{day:02}T10:00:00Z\",\"fact\":\"f_printer\",\"via\":\"recall\"}}\n"
        ));
    }
    std::fs::create_dir_all(env.repo.join(".dream")).unwrap();
    std::fs::write(env.repo.join(".dream/uses.jsonl"), uses).unwrap();
    loose_guard(&env);
    let report = run_scripted(
        &env,
        BTreeMap::from([(
            "forget",
            serde_json::json!({"forget": [
                {"itemId": "f_printer", "reason": "not mentioned for months", "policy": "stale"},
                {"itemId": "f_vpn", "reason": "not mentioned for months", "policy": "stale"}
            ]}),
        )]),
        NOW,
    );
    let archive = env.read("archive/facts.md");
    assert!(
        archive.contains("id=f_printer") && archive.contains("id=f_vpn"),
        "{archive}"
    );
    let failed = failures(&report);
    assert_eq!(failed.len(), 1, "{}", report["quiz"]);
    let (fact, expect, mutation) = &failed[0];
    assert_eq!((fact.as_str(), expect.as_str()), ("f_printer", "recalled"));
    assert!(mutation.contains("forget pass"), "{mutation}");
    let why = report["quiz"]["failures"][0]["question"]["why"]
        .as_str()
        .unwrap();
    assert!(why.contains("still asked for (used 22 times)"), "{why}");
    // The unused stale fact is forgotten, and memory does not recall it.
    assert_eq!(report["quiz"]["forgotten"], 1, "{}", report["quiz"]);
    assert_eq!(report["quiz"]["not_recalled"], 1);
    let explain = stdout(&env.dream(&["explain", "f_printer"]));
    assert!(
        explain.contains("FAILED") && explain.contains("forget pass"),
        "{explain}"
    );
    let explain = stdout(&env.dream(&["explain", "f_vpn"]));
    assert!(explain.contains("forgotten and not recalled"), "{explain}");
}

#[test]
fn dream_quiz_on_the_demo_passes_every_question_and_an_undone_fact_is_not_recalled() {
    let env = Env::new();
    let dir = env.root.join("demo");
    let out = env
        .cmd()
        .args(["demo", "--keep"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let demo = |args: &[&str]| {
        env.cmd()
            .arg("--repo")
            .arg(&dir)
            .args(["--now", "2026-11-06T22:00:00Z"])
            .args(args)
            .output()
            .unwrap()
    };
    let quiz = demo(&["quiz", "--json"]);
    assert!(quiz.status.success(), "{}", stdout(&quiz));
    let v: serde_json::Value = serde_json::from_slice(&quiz.stdout).unwrap();
    let facts = std::fs::read_to_string(dir.join("memory/human.md")).unwrap();
    let active = facts.matches("id=f_").count();
    assert!(active >= 3, "{facts}");
    assert_eq!(v["ok"], true);
    assert_eq!(v["asked"], v["answered"], "{v}");
    assert!(
        v["asked"].as_u64().unwrap() as usize >= active.min(20),
        "every fact is asked about: {v}"
    );

    // A person undoes a fact: forgotten, and memory does not recall it any more.
    let id = facts
        .split("id=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_string();
    let undo = demo(&["undo", &id]);
    assert!(
        undo.status.success(),
        "{}",
        String::from_utf8_lossy(&undo.stderr)
    );
    let quiz = demo(&["quiz"]);
    let text = stdout(&quiz);
    assert!(quiz.status.success(), "{text}");
    assert!(
        text.contains(&format!("{id} forgotten and not recalled")),
        "{text}"
    );
    assert!(
        text.contains("1 of 1 forgotten facts not recalled"),
        "{text}"
    );

    // Put it back by hand, as if the undo had not forgotten it: the quiz fails, exit 1.
    let human = std::fs::read_to_string(dir.join("memory/human.md")).unwrap();
    let archived = std::fs::read_to_string(dir.join("archive/facts.md")).unwrap();
    let line = archived
        .lines()
        .find(|l| l.contains(&format!("id={id} ")))
        .unwrap();
    let text_of = line.trim_start_matches("- ").split(" <!--").next().unwrap();
    std::fs::write(
        dir.join("memory/human.md"),
        format!("{human}- {text_of} <!-- id=f_0badc0de cat=knowledge by=auto first=2026-11-06 last=2026-11-06 ev=e_1 -->\n"),
    )
    .unwrap();
    let quiz = demo(&["quiz"]);
    assert_eq!(quiz.status.code(), Some(1), "{}", stdout(&quiz));
    assert!(
        stdout(&quiz).contains("forgotten but still recalled"),
        "{}",
        stdout(&quiz)
    );
}

/// `dream` pointed at the fake server, the builtin embedder, no retries.
fn model_env(env: &Env, fake: &FakeLlm) {
    for (k, v) in [
        ("DREAM_EMBED_PROVIDER", "builtin".to_string()),
        ("DREAM_LLM_PROVIDER", "openai".into()),
        ("DREAM_LLM_BASE_URL", fake.base_url()),
        ("DREAM_LLM_MODEL", "fake-model".into()),
        ("DREAM_LLM_RETRY_BACKOFF_MS", "1".into()),
        ("DREAM_LLM_MAX_RETRIES", "0".into()),
        ("DREAM_LLM_TIMEOUT_SECS", "5".into()),
        ("DREAM_QUIZ_MODEL", "true".into()),
    ] {
        env.set_var(k, &v);
    }
}

/// A quiz-taker that reads the memory it is shown: the words of the line holding every
/// word of the question, minus those words; but it answers each question wrong the first
/// time it sees it.
fn reader(
    asked: Arc<Mutex<Vec<String>>>,
) -> impl Fn(&dream_testkit::fake_llm::Call) -> Answer + Send + Sync + 'static {
    move |call| {
        let question = call.input["question"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let memory = call.input["memory"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            !memory.contains("Ranked for"),
            "the question's own wording is never shown beside memory"
        );
        let mut seen = asked.lock().unwrap();
        let first = !seen.contains(&question);
        seen.push(question.clone());
        if first {
            return Answer::json(serde_json::json!({"answer": "something confident"}));
        }
        let words = |s: &str| -> Vec<String> {
            s.split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect()
        };
        let q = words(&question);
        let answer = memory
            .lines()
            .find(|l| {
                let lw = words(l);
                q.iter().all(|w| lw.contains(w))
            })
            .map(|l| {
                let (before, after) = question.split_once("____").unwrap_or((&question, ""));
                let body = l.trim_start_matches("- ");
                let body = body
                    .strip_prefix(before.trim())
                    .unwrap_or(body)
                    .trim_start();
                let end = body
                    .find(after.trim())
                    .filter(|_| !after.trim().is_empty())
                    .unwrap_or(body.len());
                body[..end].trim().to_string()
            })
            .unwrap_or_else(|| "not recalled".into());
        Answer::json(serde_json::json!({"answer": answer}))
    }
}

#[test]
fn with_a_model_it_answers_from_the_context_a_miss_is_reasked_once_and_a_failure_is_reported() {
    let fake = FakeLlm::start();
    let env = Env::new();
    seed(&env, 100);
    model_env(&env, &fake);
    let asked = Arc::new(Mutex::new(Vec::new()));
    fake.on("quiz", reader(asked.clone()));
    let out = env.dream(&["--now", NOW, "quiz", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["via"], "openai:fake-model", "{v}");
    let n = v["asked"].as_u64().unwrap();
    assert!(n >= 9, "{v}");
    assert_eq!(v["answered"], n);
    assert_eq!(
        v["second_attempts"], n,
        "every first answer was confident nonsense: {v}"
    );
    let calls = fake.calls("quiz");
    assert_eq!(calls.len() as u64, 2 * n, "one re-ask per miss, no more");
    assert!(
        v["tokens"].as_u64().unwrap() > 0,
        "the model's calls are charged: {v}"
    );
    let first = &v["questions"][0]["attempts"];
    assert_eq!(first[0]["via"], "model");
    assert!(
        first[0]["note"]
            .as_str()
            .unwrap()
            .contains("something confident"),
        "{first}"
    );
    assert_eq!(first[0]["score"], 0.0, "confident nonsense scores nothing");
    // The second attempt is ranked by the fact's own wording.
    assert_eq!(first[1]["query"], v["questions"][0]["question"]["text"]);

    // A server that fails: the cycle finishes, the quiz is answered by recall, and the
    // failure is reported.
    fake.on("quiz", |_| Answer::server_error());
    let out = env.dream(&["run", "--now", NOW, "--json"]);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(matches!(out.status.code(), Some(0) | Some(10)), "{r}");
    let degraded: Vec<&serde_json::Value> = r["degraded"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["stage"] == "quiz")
        .collect();
    assert_eq!(degraded.len(), 1, "{}", r["degraded"]);
    assert!(degraded[0]["reason"]
        .as_str()
        .unwrap()
        .contains("answered by recall"));
    assert_eq!(r["quiz"]["via"], "recall");
    assert_eq!(r["quiz"]["asked"], r["quiz"]["answered"], "{}", r["quiz"]);
    assert_eq!(
        fake.calls("quiz").len(),
        2 * n as usize + 1,
        "no call after the first failure"
    );
}

#[test]
fn a_cycle_whose_reflect_finds_the_server_unavailable_asks_the_quiz_no_model() {
    let fake = FakeLlm::start();
    let env = Env::new();
    seed(&env, 100);
    model_env(&env, &fake);
    // New events on topics no fact says, so reflect asks the model; its first call outlasts
    // the timeout: the server is unavailable for the rest of the cycle, the quiz included.
    env.write_inbox(
        "topics.jsonl",
        &dream_testkit::fake_llm::topic_events(3, 2, "2026-11-03T09:00:00Z".parse().unwrap()),
    );
    env.set_var("DREAM_LLM_TIMEOUT_SECS", "1");
    env.set_var("DREAM_LLM_CONCURRENCY", "1");
    fake.on("reflect", |c| {
        dream_testkit::fake_llm::echo_reflect(c).delayed(std::time::Duration::from_millis(2500))
    });
    fake.on("quiz", |_| {
        Answer::json(serde_json::json!({"answer": "anything"}))
    });
    let out = env.dream(&["run", "--now", NOW, "--json"]);
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(matches!(out.status.code(), Some(0) | Some(10)), "{r}");
    assert_eq!(fake.calls("reflect").len(), 1, "{r}");
    assert!(r["quiz"]["asked"].as_u64().unwrap() > 0, "{}", r["quiz"]);
    assert_eq!(
        fake.calls("quiz").len(),
        0,
        "no quiz call after reflect found the server unavailable: {}",
        r["quiz"]
    );
    assert_eq!(r["quiz"]["via"], "recall", "{}", r["quiz"]);
    let quiz: Vec<&serde_json::Value> = r["degraded"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["stage"] == "quiz")
        .collect();
    assert_eq!(quiz.len(), 1, "{}", r["degraded"]);
    assert!(
        quiz[0]["reason"]
            .as_str()
            .unwrap()
            .contains("an earlier call found the server unavailable"),
        "{}",
        quiz[0]
    );
}
