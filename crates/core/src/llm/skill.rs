//! Draft a skill (SPEC S10): the prompt that asks a model about one recurring procedure
//! (the request and reply are `schema::skill_contract`), the defensive parse of the reply,
//! and the offline provider's plain draft. The reply is a proposal; `skills::gate`
//! re-derives it from the instances before anything is written.

use serde_json::Value;

use crate::schema::contract::ChatCall;
use crate::schema::skill_contract::{SkillReply, SkillRequest, SkillStep, StepView};

const SYSTEM: &str = "You turn a procedure an AI agent carried out again and again into a skill in the \
Agent Skills format. You get the instances of the procedure (the tool calls that served one request \
each, with the request) and the normalised steps of the most typical instance. Answer with one JSON \
object and nothing else: {\"name\": string, \"description\": string, \"steps\": [{\"text\": string, \
\"tool\": string, \"command\": string}], \"confidence\": number, \"reason\": string}.\n\
Rules: name is 1-64 lower-case letters, digits and single hyphens, saying what the procedure does \
(for example run-checks-and-commit). description is at most 1024 characters, says what the skill \
does and when to use it (\"Use when ...\"), and names the commands it runs. steps follow the \
instances in order; each has a short imperative text, the tool exactly as the instances name it, \
and for a shell step the command. Use only tools, commands, flags, paths and names that appear in \
the instances; write a value that differs between instances as a placeholder in angle brackets \
(for example git commit -m <message>). Leave out steps most instances do not have (\"common\": false). confidence (0 to 1) \
is how sure you are that this is one repeatable procedure; reason says why in one sentence.";

/// The chat call that asks for a draft.
pub fn call(req: &SkillRequest) -> ChatCall {
    let user = serde_json::to_string(req).expect("requests serialize");
    ChatCall {
        stage: "skills".into(),
        system: SYSTEM.into(),
        user,
        max_tokens: req.max_tokens,
    }
}

fn string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// Read a reply as the contract says, forgiving what can be forgiven: the object may be
/// wrapped (`{"skill": {...}}`), steps may be plain strings, a step's text may be called
/// `description` or `instruction`, and confidence may be a string. A reply with neither a
/// name nor steps is garbled.
pub fn parse_reply(v: &Value) -> Result<SkillReply, String> {
    let obj = match v {
        Value::Object(o) if o.contains_key("name") || o.contains_key("steps") => o,
        Value::Object(o) => match o
            .values()
            .find(|x| x.get("name").is_some() || x.get("steps").is_some())
        {
            Some(Value::Object(inner)) => inner,
            _ => return Err("the reply has neither a name nor steps".into()),
        },
        _ => return Err("the reply is not a JSON object".into()),
    };
    let steps = match obj.get("steps") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|s| match s {
                Value::String(t) => Some(SkillStep {
                    text: t.trim().to_string(),
                    ..SkillStep::default()
                }),
                Value::Object(o) => Some(SkillStep {
                    text: string(
                        o.get("text")
                            .or(o.get("description"))
                            .or(o.get("instruction")),
                    ),
                    tool: string(o.get("tool")),
                    command: string(o.get("command").or(o.get("cmd"))),
                }),
                _ => None,
            })
            .filter(|s| !(s.text.is_empty() && s.command.is_empty()))
            .collect(),
        _ => Vec::new(),
    };
    let confidence = match obj.get("confidence") {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|c: &f64| c.is_finite());
    let reply = SkillReply {
        name: string(obj.get("name")),
        description: string(obj.get("description")),
        steps,
        confidence,
        reason: string(obj.get("reason")),
    };
    if reply.name.is_empty() && reply.steps.is_empty() {
        return Err("the reply has neither a name nor steps".into());
    }
    Ok(reply)
}

/// The offline provider's plain draft: the steps of the most typical instance that most
/// instances share, as they ran (a command that ran differently each time with its
/// one-off values as `<arg>`), a name
/// from the commands it runs, and a description that names them and quotes the request.
pub fn offline_draft(req: &SkillRequest) -> SkillReply {
    let mut steps = Vec::new();
    let mut heads: Vec<String> = Vec::new();
    let common: Vec<&StepView> = req.steps.iter().filter(|s| s.common).collect();
    let chosen: Vec<&StepView> = if common.is_empty() {
        req.steps.iter().collect()
    } else {
        common
    };
    for s in chosen {
        if is_command(s) {
            let command = if s.stable {
                s.example.clone()
            } else {
                s.shown.clone()
            };
            let head = crate::skills::procedure::command_head(&s.shown);
            if !heads.contains(&head) {
                heads.push(head);
            }
            steps.push(SkillStep {
                text: String::new(),
                tool: s.tool.clone(),
                command,
            });
        } else if !s.shown.is_empty() {
            steps.push(SkillStep {
                text: format!("`{}` a `{}` file.", s.tool, s.shown),
                tool: s.tool.clone(),
                command: String::new(),
            });
        } else {
            steps.push(SkillStep {
                text: format!("Use `{}`.", s.tool),
                tool: s.tool.clone(),
                command: String::new(),
            });
        }
    }
    let name = name_from(&heads);
    let runs = match heads.as_slice() {
        [] => "Repeats a procedure".to_string(),
        [one] => format!("Runs `{one}`"),
        [init @ .., last] => format!(
            "Runs {} and `{last}`",
            init.iter()
                .map(|h| format!("`{h}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let request = req
        .instances
        .first()
        .and_then(|i| i.request.as_deref())
        .map(|r| crate::schema::excerpt(r, 160));
    let when = match request {
        Some(r) => format!("Use when a request like this comes up again: \"{r}\""),
        None => "Use when this procedure comes up again.".to_string(),
    };
    SkillReply {
        name,
        description: format!(
            "{runs}, in that order, as the agent did {} times on {} days. {when}",
            req.total_instances, req.days
        ),
        steps,
        confidence: None,
        reason: format!(
            "the most typical of {} instances on {} days in {} sessions",
            req.total_instances, req.days, req.sessions
        ),
    }
}

fn is_command(s: &StepView) -> bool {
    crate::skills::procedure::is_shell_tool(&s.tool)
}

/// A name from the commands' verbs and subcommands, each word once, at most six words:
/// `cargo fmt`, `cargo test`, `git commit` give `cargo-fmt-test-git-commit`.
fn name_from(heads: &[String]) -> String {
    let mut words: Vec<String> = Vec::new();
    for h in heads {
        for w in h.split_whitespace() {
            let w = w.rsplit('/').next().unwrap_or(w);
            let w = crate::skills::skillmd::slug(w.split('.').next().unwrap_or(w));
            if !w.is_empty() && !words.contains(&w) {
                words.push(w);
            }
        }
    }
    words.truncate(6);
    let name = crate::skills::skillmd::slug(&words.join("-"));
    if name.is_empty() {
        "repeated-procedure".into()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Llm;
    use crate::schema::contract::{
        JudgeReply, JudgeRequest, LlmError, LlmErrorKind, ReflectReply, ReflectRequest, Reply,
    };
    use crate::schema::skill_contract::{CallView, InstanceView};
    use std::sync::Mutex;

    fn req() -> SkillRequest {
        SkillRequest {
            procedure: "s_1".into(),
            instances: vec![InstanceView {
                session: "s1".into(),
                day: "2026-11-02".into(),
                request: Some("please run the checks and commit".into()),
                calls: vec![CallView {
                    event_id: "e1".into(),
                    tool: "Bash".into(),
                    input: "cargo fmt --all".into(),
                }],
            }],
            steps: vec![
                StepView {
                    tool: "Bash".into(),
                    shown: "cargo fmt --all".into(),
                    example: "cargo fmt --all".into(),
                    stable: true,
                    common: true,
                },
                StepView {
                    tool: "Edit".into(),
                    shown: "*.rs".into(),
                    example: String::new(),
                    stable: false,
                    common: true,
                },
                StepView {
                    tool: "Bash".into(),
                    shown: "git commit -m <arg>".into(),
                    example: "git commit -m \"fix the parser\"".into(),
                    stable: false,
                    common: true,
                },
            ],
            total_instances: 4,
            days: 3,
            sessions: 4,
            max_tokens: 512,
        }
    }

    #[test]
    fn the_offline_draft_follows_the_typical_instance() {
        let mut r = req();
        r.steps.push(StepView {
            tool: "Bash".into(),
            shown: "curl -s <arg>".into(),
            example: "curl -s https://example.com".into(),
            stable: false,
            common: false,
        });
        let d = offline_draft(&r);
        assert_eq!(d.steps.len(), 3, "a step most instances lack is left out");
        assert_eq!(d.name, "cargo-fmt-git-commit");
        assert_eq!(
            d.steps[0].command, "cargo fmt --all",
            "a stable command as it ran"
        );
        assert_eq!(d.steps[1].text, "`Edit` a `*.rs` file.");
        assert_eq!(
            d.steps[2].command, "git commit -m <arg>",
            "a varying value as a placeholder"
        );
        assert!(
            d.description
                .starts_with("Runs `cargo fmt` and `git commit`, in that order"),
            "{}",
            d.description
        );
        assert!(d.description.contains(
            "Use when a request like this comes up again: \"please run the checks and commit\""
        ));
    }

    #[test]
    fn replies_are_parsed_defensively() {
        let v = serde_json::json!({"skill": {"name": "x", "steps": ["Run it.", {"description": "Do y", "tool": "Bash", "cmd": "make"}, 3], "confidence": "0.7"}});
        let r = parse_reply(&v).unwrap();
        assert_eq!(r.name, "x");
        assert_eq!(r.steps.len(), 2);
        assert_eq!(r.steps[1].command, "make");
        assert_eq!(r.confidence, Some(0.7));
        assert!(parse_reply(&serde_json::json!({"foo": 1})).is_err());
        assert!(parse_reply(&serde_json::json!([1])).is_err());
    }

    /// A provider that only carries chat calls, answering from a script.
    struct Scripted {
        answer: Value,
        seen: Mutex<Vec<ChatCall>>,
    }

    impl Llm for Scripted {
        fn name(&self) -> String {
            "scripted".into()
        }
        fn reflect(&self, _: &ReflectRequest) -> Result<Reply<ReflectReply>, LlmError> {
            unreachable!()
        }
        fn judge(&self, _: &JudgeRequest) -> Result<Reply<JudgeReply>, LlmError> {
            unreachable!()
        }
        fn chat_json(&self, call: &ChatCall) -> Result<Reply<Value>, LlmError> {
            self.seen.lock().unwrap().push(call.clone());
            Ok(Reply::free(self.answer.clone()))
        }
    }

    #[test]
    fn the_default_draft_goes_through_chat_json() {
        let llm = Scripted {
            answer: serde_json::json!({"name": "Run Checks", "description": "Runs checks. Use when asked.", "steps": [{"text": "Format.", "tool": "Bash", "command": "cargo fmt --all"}], "confidence": 0.9, "reason": "same steps"}),
            seen: Mutex::new(Vec::new()),
        };
        let r = llm.draft_skill(&req()).unwrap().value;
        assert_eq!(r.name, "Run Checks");
        assert_eq!(r.steps[0].command, "cargo fmt --all");
        let seen = llm.seen.lock().unwrap();
        assert_eq!(seen[0].stage, "skills");
        assert_eq!(seen[0].max_tokens, 512);
        assert!(seen[0].user.contains("please run the checks and commit"));
        let garbled = Scripted {
            answer: serde_json::json!({"verdicts": []}),
            seen: Mutex::new(Vec::new()),
        };
        assert_eq!(
            garbled.draft_skill(&req()).unwrap_err().kind,
            LlmErrorKind::Garbled
        );
        // The offline provider drafts without a prompt (`offline::Offline::draft_skill`).
        assert_eq!(offline_draft(&req()).name, "cargo-fmt-git-commit");
    }
}
