//! Plain phrase rules about a sentence, each explainable in one sentence: where one
//! sentence ends ([`sentences`]), what is not a fact at all (questions, requests,
//! greetings and other chatter: [`not_a_fact`]), and which block and category a fact
//! belongs to ([`classify`]). The offline reflector proposes with them; the gates use
//! [`classify`] for the default block of a candidate that names none.

use crate::measures;
use crate::memory::Block;

/// Longest sentence the reflector will turn into a fact.
pub const MAX_FACT_CHARS: usize = 280;
/// Fewest content words a fact may have.
pub const MIN_CONTENT_WORDS: usize = 3;

/// Split text into sentences at `.`, `!` or `?` followed by white space, and at newlines.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            push_sentence(&mut out, &mut cur);
            continue;
        }
        cur.push(c);
        if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) {
            push_sentence(&mut out, &mut cur);
        }
    }
    push_sentence(&mut out, &mut cur);
    out
}

fn push_sentence(out: &mut Vec<String>, cur: &mut String) {
    let s = cur
        .trim()
        .trim_start_matches(['-', '*', '•', '>'])
        .trim()
        .to_string();
    if !s.is_empty() {
        out.push(s);
    }
    cur.clear();
}

fn lower(s: &str) -> String {
    s.to_lowercase().replace(['\u{2019}', '\u{2018}'], "'")
}

const QUESTION_STARTS: &[&str] = &[
    "who ",
    "what ",
    "whats ",
    "when ",
    "where ",
    "why ",
    "how ",
    "which ",
    "whose ",
    "can ",
    "could ",
    "would ",
    "will ",
    "do ",
    "does ",
    "did ",
    "is ",
    "are ",
    "was ",
    "were ",
    "should ",
    "shall ",
    "may ",
    "have you ",
    "has ",
    "any idea",
];

const REQUEST_STARTS: &[&str] = &[
    "please ",
    "pls ",
    "can you",
    "could you",
    "would you",
    "will you",
    "let's ",
    "lets ",
    "help me",
    "show me",
    "tell me",
    "give me",
    "remind me",
    "make ",
    "fix ",
    "add ",
    "run ",
    "create ",
    "write ",
    "update ",
    "delete ",
    "remove ",
    "check ",
    "try ",
    "open ",
    "install ",
    "explain ",
    "summarize ",
    "summarise ",
    "list ",
    "find ",
    "build ",
    "deploy ",
    "refactor ",
    "rename ",
    "move ",
    "look ",
    "go ",
    "start ",
    "stop ",
    "send ",
    "book ",
    "search ",
    "read ",
    "review ",
    "change ",
    "set ",
    "get ",
    "generate ",
    "draft ",
    "translate ",
    "continue",
    "ok ",
    "okay ",
    "thanks",
    "thank you",
    "hi ",
    "hello",
    "hey ",
    "good morning",
    "good night",
    "sure ",
    "yes ",
    "no ",
    "lol",
    "haha",
    "great ",
    "cool ",
    "nice ",
    "awesome ",
];

/// Words of acknowledgement and small talk: a sentence made only of these is chatter.
const CHATTER: &[&str] = &[
    "ok",
    "okay",
    "thank",
    "thanks",
    "thx",
    "sound",
    "good",
    "great",
    "cool",
    "nice",
    "perfect",
    "awesome",
    "hmm",
    "hm",
    "let",
    "think",
    "sure",
    "yes",
    "yeah",
    "yep",
    "nope",
    "lol",
    "haha",
    "right",
    "alright",
    "fine",
    "got",
    "see",
    "agree",
    "done",
    "wow",
    "hi",
    "hello",
    "hey",
    "bye",
    "cheer",
    "cheers",
    "morning",
    "night",
    "lot",
    "much",
    "ah",
    "oh",
    "well",
    "wait",
    "indeed",
    "exactly",
    "true",
    "totally",
    "love",
    "amazing",
    "excellent",
    "noted",
];

/// True for questions, requests and chatter: things said that are not facts, however
/// often they are repeated.
pub fn not_a_fact(sentence: &str) -> bool {
    let raw = lower(sentence.trim());
    let s = format!("{} ", measures::normalize(&raw));
    if raw.ends_with('?') || QUESTION_STARTS.iter().any(|p| s.starts_with(p)) {
        return true;
    }
    if REQUEST_STARTS.iter().any(|p| s.starts_with(p)) || s.contains(" please ") {
        return true;
    }
    if raw.contains("[redacted:") || sentence.chars().count() > MAX_FACT_CHARS {
        return true;
    }
    let content = measures::content_tokens(sentence);
    content.len() < MIN_CONTENT_WORDS || content.iter().all(|t| CHATTER.contains(&t.as_str()))
}

/// The block a fact of this category belongs in, for the categories that name one:
/// identity, preferences and commitments in human, event in episodes, persona in persona.
pub fn block_of_category(category: &str) -> Option<Block> {
    match category {
        "identity" | "preferences" | "commitments" => Some(Block::Human),
        "event" => Some(Block::Episodes),
        "persona" => Some(Block::Persona),
        _ => None,
    }
}

/// Category and block of a fact, by phrase rules checked in this order: persona,
/// commitments, preferences, identity, events, project; anything else is `knowledge` in
/// scratch.
pub fn classify(text: &str) -> (&'static str, Block) {
    let s = format!(" {} ", lower(text));
    let has = |phrases: &[&str]| phrases.iter().any(|p| s.contains(p));
    let starts = |phrases: &[&str]| phrases.iter().any(|p| s.trim_start().starts_with(p));
    if starts(&[
        "you are ",
        "you're ",
        "your name ",
        "you should ",
        "you must ",
        "as my assistant",
        "call yourself",
    ]) {
        return ("persona", Block::Persona);
    }
    if has(&[
        " i will ",
        " i'll ",
        " i'm going to ",
        " i am going to ",
        " i promised ",
        " i have to ",
        " i need to ",
        " i must ",
        " deadline",
        " due ",
        " appointment",
        " i plan to ",
        " my plan is ",
        " i'm planning ",
        " i am planning ",
        " scheduled ",
        " i committed ",
    ]) {
        return ("commitments", Block::Human);
    }
    if has(&[
        " i prefer ",
        " i like ",
        " i love ",
        " i enjoy ",
        " i hate ",
        " i dislike ",
        " i don't like ",
        " i do not like ",
        " my favorite ",
        " my favourite ",
        " work best ",
        " works best ",
        " i always ",
        " i never ",
        " i usually ",
        " i'd rather ",
        " i would rather ",
        " i want you to ",
        " i'd like you to ",
    ]) || starts(&["always ", "never ", "don't ever ", "do not ever "])
    {
        return ("preferences", Block::Human);
    }
    if has(&[
        " my name is ",
        " i am a ",
        " i'm a ",
        " i am an ",
        " i'm an ",
        " i live ",
        " i'm from ",
        " i am from ",
        " i'm based ",
        " i am based ",
        " i work at ",
        " i work as ",
        " i work for ",
        " i work on ",
        " my job ",
        " my role ",
        " my pronouns ",
        " i was born ",
        " years old",
        " my wife ",
        " my husband ",
        " my partner ",
        " my son ",
        " my daughter ",
        " my kids ",
        " my children ",
        " my dog ",
        " my cat ",
        " my birthday ",
        " i have a ",
        " i have two ",
        " i have three ",
        " my team ",
        " my company ",
        " my mother ",
        " my father ",
        " my mom ",
        " my dad ",
        " my sister ",
        " my brother ",
        " i lead ",
        " i manage ",
        " i run the ",
        " i am the ",
        " i'm the ",
        " allergic to ",
    ]) {
        return ("identity", Block::Human);
    }
    if has(&[
        " yesterday",
        " last week",
        " last month",
        " last year",
        " last night",
        " today",
        " this morning",
        " tonight",
        " ago ",
        " ago.",
        " on monday",
        " on tuesday",
        " on wednesday",
        " on thursday",
        " on friday",
        " on saturday",
        " on sunday",
        " went to ",
        " visited ",
        " moved to ",
        " attended ",
        " graduated ",
    ]) {
        return ("event", Block::Episodes);
    }
    if has(&[
        " my stack ",
        " our stack ",
        " we use ",
        " our project ",
        " the project ",
        " our repo ",
        " the repo ",
        " our team ",
        " our codebase ",
        " we deploy ",
        " in production ",
    ]) {
        return ("project", Block::Scratch);
    }
    ("knowledge", Block::Scratch)
}
