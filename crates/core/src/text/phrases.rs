//! Plain phrase rules about a sentence, each explainable in one sentence: where one
//! sentence ends ([`sentences`]), what a sentence says without its lead-in ([`lead_in`]),
//! what is not a fact at all and why ([`chatter`]: questions, requests, greetings,
//! thinking aloud, reactions, a thing's passing status, sentences that lean on what was
//! said before), what is specific enough to keep when said only once ([`specific`]), and
//! which category a fact belongs to ([`category`]; `schema::classify` adds its block). The
//! offline reflector proposes with them, the cycle uses [`not_a_fact`] to choose which
//! single mentions a model is shown, and the gates use the category for the default block
//! of a candidate that names none. None of them counts anything: repetition is not durability.

use crate::text::measures;

/// Longest sentence the reflector will turn into a fact.
pub const MAX_FACT_CHARS: usize = 280;
/// Fewest content words a fact may have; a sentence about the speaker (it starts with I,
/// my, we or our: "I live in Porto.") may have one fewer.
pub const MIN_CONTENT_WORDS: usize = 3;

/// Split text into sentences at `.`, `!` or `?` followed by white space, and at newlines.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    // `cur`'s length in characters, kept as it grows: counting it at every line break
    // would cost the square of a long unbroken paragraph.
    let mut cur_chars = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            // A line break inside a sentence is not its end (a harness wraps long prompts):
            // the next line goes on the sentence when this one stops mid-clause.
            let next: String = chars.clone().take_while(|&n| n != '\n').collect();
            if continues(&cur, cur_chars, &next) {
                cur.push(' ');
                cur_chars += 1;
                continue;
            }
            push_sentence(&mut out, &mut cur);
            cur_chars = 0;
            continue;
        }
        cur.push(c);
        cur_chars += 1;
        if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) {
            push_sentence(&mut out, &mut cur);
            cur_chars = 0;
        }
    }
    push_sentence(&mut out, &mut cur);
    out
}

/// Words a sentence does not end on: a line that stops after one goes on on the next.
const GOES_ON: &[&str] = &[
    "and", "or", "but", "the", "a", "an", "to", "of", "in", "on", "for", "with", "that", "which",
    "who", "is", "are", "was", "were", "as", "at", "by", "from", "into", "than", "so", "because",
    "if", "when", "my", "our", "your", "their", "this", "these", "its",
];

/// Whether the line after `cur` (the sentence so far, `cur_chars` characters, its lines
/// joined by spaces) carries on its sentence: `cur` ends without a stop, on a word no
/// sentence ends on or after a long line (a wrapped one), and the next line is neither
/// blank nor a list item, a heading or a quote. Reads only the ends of the two.
fn continues(cur: &str, cur_chars: usize, next: &str) -> bool {
    let line = cur.trim_end();
    let next = next.trim();
    if line.is_empty() || next.is_empty() {
        return false;
    }
    if line.ends_with(['.', '!', '?', ':', ';']) {
        return false;
    }
    if next.starts_with(['-', '*', '•', '>', '#', '|'])
        || next.chars().next().is_some_and(|c| c.is_ascii_digit())
    {
        return false;
    }
    let last = line
        .rsplit(|c: char| !c.is_alphanumeric() && c != '\'')
        .next()
        .unwrap_or("")
        .to_lowercase();
    GOES_ON.contains(&last.as_str())
        || (cur_chars - cur[line.len()..].chars().count() >= 60
            && next.chars().next().is_some_and(char::is_lowercase))
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

/// Why a sentence is not a fact. Each kind is one rule, in the order they are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chatter {
    /// It carries a redacted secret's marker, starts with a bracketed marker or
    /// attachment ("[shared an image: ...]") rather than the speaker's words, or is longer
    /// than a fact may be.
    Unusable,
    /// It ends with a question mark or starts with a question word.
    Question,
    /// It starts with an imperative verb or asks "please".
    Request,
    /// It starts with a greeting, thanks or an announcement of what follows ("quick
    /// reminder", "heads up").
    Greeting,
    /// It thinks aloud: it starts with "hmm", "let me", "I wonder", "maybe", "might", ...
    Thought,
    /// It reacts to what was said ("wow", "that's great", "can't wait"), appraises what
    /// was shown or said ("That cake looks amazing!", "Family time is great!"), cheers
    /// someone on ("Way to go!", "Keep going!"), speaks about the listener ("you",
    /// "your") other than to instruct the assistant, or only says how the speaker feels or
    /// is right now ("I'm so tired", "I'm almost done").
    Reaction,
    /// Its subject is a bare pronoun ("it", "that", "they", ...): it leans on what was
    /// said before and cannot stand alone.
    Context,
    /// A thing's passing state, not a person's: "finished", "failed", "is running", "was
    /// slow", "took 40 seconds"; and the weather ("Rainy weather again today.", "Sunny
    /// and warm."), which passes by the day.
    Status,
    /// Fewer than three content words (two for a sentence about the speaker), or only
    /// small-talk words.
    TooShort,
}

impl Chatter {
    pub fn as_str(self) -> &'static str {
        match self {
            Chatter::Unusable => "unusable",
            Chatter::Question => "question",
            Chatter::Request => "request",
            Chatter::Greeting => "greeting",
            Chatter::Thought => "thought",
            Chatter::Reaction => "reaction",
            Chatter::Context => "context",
            Chatter::Status => "status",
            Chatter::TooShort => "too short",
        }
    }
}

/// Greetings, thanks, farewells and announcements of what follows, which a sentence may
/// start with.
const GREETING_STARTS: &[&str] = &[
    "quick reminder",
    "quick note",
    "quick question",
    "just a reminder",
    "reminder ",
    "heads up",
    "one more thing",
    "just so you know",
    "fyi ",
    "btw ",
    "hi ",
    "hello",
    "hey ",
    "hiya",
    "good morning",
    "good afternoon",
    "good evening",
    "good night",
    "morning ",
    "bye",
    "see you",
    "see ya",
    "talk soon",
    "talk to you",
    "thanks",
    "thank you",
    "thx",
    "cheers",
    "welcome back",
    "long time no",
    "nice to",
    "great to",
    "good to see",
    "good to hear",
    "ok ",
    "okay ",
    "sure ",
    "yes ",
    "no ",
    "great ",
    "cool ",
    "nice ",
    "awesome ",
    "perfect ",
];

/// How thinking aloud starts.
const THOUGHT_STARTS: &[&str] = &[
    "hmm",
    "hm ",
    "let me ",
    "lemme ",
    "i wonder",
    "wondering ",
    "i guess ",
    "i suppose ",
    "maybe ",
    "perhaps ",
    "not sure",
    "i m not sure",
    "im not sure",
    "i think ill ",
    "i think i ll ",
    "i think i will ",
    "i think i might ",
    "i might ",
    "we might ",
    "might ",
    "probably ",
];

/// How a reaction starts.
const REACTION_STARTS: &[&str] = &[
    "wow",
    "whoa",
    "woah",
    "aw ",
    "aww",
    "omg",
    "yay",
    "haha",
    "lol",
    "oh ",
    "ah ",
    "that s ",
    "thats ",
    "that is ",
    "that was ",
    "that sounds",
    "that ll ",
    "thatll ",
    "good ",
    "happy ",
    "love ",
    "loving ",
    "heres ",
    "here is ",
    "check out",
    "check this",
    "so glad",
    "so happy",
    "so proud",
    "so cool",
    "so sorry",
    "what a ",
    "what an ",
    "cant wait",
    "can t wait",
    "cannot wait",
    "congrat",
    "good luck",
    "well done",
    "great job",
    "nice job",
    "good job",
    "glad ",
    "happy for",
    "proud of",
    "sounds ",
    "looks ",
    "must be",
    "me too",
    "same here",
    "of course",
    "no way",
    "i bet ",
    "i hope ",
    "hope ",
    "i wish ",
    "wish ",
    "love that",
    "love it",
    "love this",
    "love your",
    "i love that",
    "i love it",
    "i love this",
    "i love how",
    "i agree",
    "agreed",
    "i know ",
    "i understand",
    "i can imagine",
    "i can tell",
    "i appreciate",
    "appreciate ",
    "keep it up",
    "keep up ",
    "keep going",
    "keep pushing",
    "keep chasing",
    "ill keep ",
    "i ll keep ",
    "i will keep ",
    "way to go",
    "hang in there",
    "stay motivated",
    "stay positive",
    "stay safe",
    "push through",
    "have fun",
    "have a great",
    "have a good",
    "take care",
    "exactly",
    "totally",
    "absolutely",
    "definitely",
    "true ",
    "sorry",
    "i m sorry",
    "im sorry",
    "anyway",
];

/// Words about the listener.
const LISTENER: &[&str] = &[
    "you", "your", "youre", "yours", "yourself", "youve", "youll", "youd", "ya",
];

/// Phrases that instruct the assistant: "you" is then what the sentence is about.
const INSTRUCTIONS: &[&str] = &[
    "i want you to",
    "i d like you to",
    "id like you to",
    "i would like you to",
    "you should",
    "you must",
    "you are a ",
    "you are an ",
    "you are my ",
    "you are the ",
    "youre a ",
    "youre an ",
    "youre my ",
    "youre the ",
    "your name",
    "call yourself",
    "as my assistant",
    "always ",
    "never ",
    "dont ever",
    "do not ever",
];

/// Whether a normalised sentence (padded with a space at its end) instructs the agent:
/// "Always ..." and "Never ..." when they open it ("I'm always here for you" speaks to the
/// listener), "you should", "I want you to", ... anywhere; and what follows the phrase
/// reads as an instruction ([`instructed`]), not a reaction, a compliment, a guess about
/// the listener or an invitation, which open the same way in talk between people.
fn instructs(s: &str) -> bool {
    let forbids_a_way_of_working = ["dont ever ", "do not ever ", "dont ", "do not "]
        .iter()
        .any(|p| {
            s.strip_prefix(p)
                .and_then(|r| r.split_whitespace().next())
                .is_some_and(|w| WORK_VERBS.contains(&w))
        });
    forbids_a_way_of_working
        || INSTRUCTIONS
            .iter()
            .filter(|p| !matches!(**p, "dont ever" | "do not ever"))
            .any(|p| {
                let at = if s.starts_with(p) {
                    Some(0)
                } else if matches!(*p, "always " | "never ") {
                    None
                } else {
                    s.find(&format!(" {p}")).map(|i| i + 1)
                };
                at.is_some_and(|i| instructed(p, &s[i + p.len()..], s))
            })
}

/// Verbs of how work is done: "don't" or "do not" before one at a sentence's start forbids
/// a way of working ("Don't use semicolons in the TypeScript code", "do not touch the
/// migrations folder"), where before another it comforts or reminds ("don't worry",
/// "don't forget").
const WORK_VERBS: &[&str] = &[
    "use",
    "add",
    "commit",
    "push",
    "run",
    "touch",
    "change",
    "delete",
    "remove",
    "modify",
    "edit",
    "rename",
    "merge",
    "deploy",
    "install",
    "upgrade",
    "downgrade",
    "mock",
    "skip",
    "disable",
    "enable",
    "create",
    "write",
    "print",
    "log",
    "reformat",
    "rewrite",
    "refactor",
    "introduce",
    "import",
    "hardcode",
    "bump",
    "amend",
    "squash",
    "rebase",
    "ship",
    "format",
    "generate",
    "comment",
    "mix",
    "call",
    "rely",
    "depend",
    "expose",
    "store",
    "cache",
    "pin",
    "vendor",
    "force",
    "publish",
    "release",
    "upload",
    "wrap",
];

/// Words after which "Always" or "Never" opens a reaction or a description ("Always good
/// to hear!", "Always up for something sweet", "Never a dull moment", "never again"), not
/// an imperative: articles and determiners, prepositions and particles, adverbs of degree
/// and time, common past tenses ("Never saw this coming"), and the evaluative adjectives of
/// [`PRAISE`] and [`FEELINGS`].
const NOT_IMPERATIVE: &[&str] = &[
    "a", "an", "the", "this", "that", "these", "those", "my", "your", "our", "their", "his", "her",
    "its", "so", "such", "too", "very", "really", "quite", "up", "down", "here", "there", "on",
    "in", "out", "at", "for", "with", "about", "again", "been", "be", "is", "was", "more", "less",
    "enough", "ever", "since", "before", "after", "like", "fun", "nice", "had", "did", "saw",
    "thought", "knew", "felt", "got", "went", "came", "said", "mind",
];

/// Evaluative words: what follows "you're a", "you're the" or "always" in praise ("You're
/// the best", "You're a good son", "Always great to see you").
const PRAISE: &[&str] = &[
    "best",
    "greatest",
    "most",
    "good",
    "great",
    "amazing",
    "awesome",
    "wonderful",
    "fantastic",
    "incredible",
    "brilliant",
    "lovely",
    "sweet",
    "kind",
    "true",
    "real",
    "natural",
    "perfect",
    "cool",
    "such",
    "so",
    "total",
    "absolute",
    "saint",
    "angel",
    "star",
    "legend",
    "hero",
    "gem",
    "genius",
    "lifesaver",
    "rockstar",
    "champ",
    "inspiration",
];

/// What a persona instruction names the agent as ("You are a senior Rust engineer", "You're
/// my coding assistant"): a role. Compliments name no role ("you're an angel").
const ROLES: &[&str] = &[
    "assistant",
    "agent",
    "bot",
    "model",
    "ai",
    "expert",
    "engineer",
    "developer",
    "programmer",
    "reviewer",
    "tutor",
    "teacher",
    "editor",
    "translator",
    "writer",
    "coder",
    "architect",
    "consultant",
    "analyst",
    "specialist",
    "advisor",
    "helper",
    "copilot",
    "maintainer",
    "tester",
    "designer",
    "researcher",
    "coach",
    "instructor",
];

/// After "you should" or "you must": verbs of a guess about the listener or a feeling ("You
/// must love seeing how you've grown", "You should be proud", "you must have had fun") and
/// of a suggestion to a friend ("You should come down and join me", "you should totally
/// go"), not how an agent is to work.
const NOT_INSTRUCTED: &[&str] = &[
    "be",
    "have",
    "love",
    "feel",
    "know",
    "think",
    "see",
    "come",
    "go",
    "join",
    "visit",
    "totally",
    "definitely",
    "def",
    "really",
    "so",
    "too",
    "get",
    "meet",
    "watch",
    "read",
];

/// Whether the words `after` an instruction phrase `p` in sentence `s` instruct.
fn instructed(p: &str, after: &str, s: &str) -> bool {
    let words: Vec<&str> = after.split_whitespace().collect();
    let Some(first) = words.first() else {
        return false;
    };
    let invitation = [
        " sometime ",
        " some time ",
        " someday ",
        " join me ",
        " with me ",
    ]
    .iter()
    .any(|w| s.contains(w));
    match p {
        "always " | "never " => {
            words.len() >= 2
                && !NOT_IMPERATIVE.contains(first)
                && !PRAISE.contains(first)
                && !FEELINGS.contains(first)
                && !first.ends_with("ing")
        }
        "you should" | "you must" => {
            words.len() >= 2 && !NOT_INSTRUCTED.contains(first) && !invitation
        }
        _ if p.starts_with("you are ") || p.starts_with("youre ") => {
            !PRAISE.contains(first)
                && !FEELINGS.contains(first)
                && words.iter().take(4).any(|w| ROLES.contains(w))
        }
        _ => true,
    }
}

/// How often something recurs: the phrases that make a statement a habit.
static HABIT_FREQUENCY: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"\b(?:every|each) (?:day|morning|night|evening|week|weekend|month|year|summer|winter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|\b(?:daily|weekly|monthly|usually)\b|\b(?:once|twice|three times) a (?:day|week|month|year)\b",
    )
    .expect("a valid pattern")
});

/// Whether a sentence states a routine of its speaker: about the speaker, as a [`habit`],
/// with a stated frequency ("every morning", "twice a week", "usually"; not "always" or "often", which
/// praise and reassurance use as well: "I always knew you'd pull it off"). "I drink green
/// tea every morning" is short and plain, and the salience model, which learnt that names,
/// numbers and places matter, scores it like small talk; it is what an agent most needs to
/// know of a person's days. On the project's labelled sets 17 of the 18 sentences with such
/// a frequency are worth keeping.
pub fn routine(sentence: &str) -> bool {
    let s = measures::normalize(lead_in(sentence));
    opens_with_speaker(&s) && HABIT_FREQUENCY.is_match(&s)
}

/// Whether a sentence states a preference of its speaker (or their team) for one thing
/// over another: it opens with "I prefer", "I'd rather", "I would rather", "we prefer" or
/// "we'd rather", and a comparison ("over",
/// "than", "to", "instead of") has words worth keeping on both sides ("I prefer tabs over
/// spaces", "I'd rather have a failing test than a skipped one"). How the person likes
/// their work done, said plainly and naming nothing, is what the salience model scores
/// lowest among the statements worth keeping; "I prefer the second option" (no
/// comparison) and "I'd rather not" (nothing compared) are not preferences of this kind.
pub fn stated_preference(sentence: &str) -> bool {
    let s = measures::normalize(lead_in(sentence));
    let Some(rest) = PREFERENCE_OPENERS.iter().find_map(|o| s.strip_prefix(o)) else {
        return false;
    };
    let words: Vec<&str> = rest.split_whitespace().collect();
    words.iter().enumerate().any(|(i, w)| {
        let compares = match *w {
            "over" | "than" | "to" => true,
            "instead" => words.get(i + 1) == Some(&"of"),
            _ => false,
        };
        let skip = usize::from(*w == "instead") + 1;
        compares
            && words[..i].iter().any(|b| !measures::is_stopword(b))
            && words
                .get(i + skip..)
                .is_some_and(|a| a.iter().any(|b| !measures::is_stopword(b)))
    })
}

/// How a [`stated_preference`] opens, normalised (apostrophes dropped).
const PREFERENCE_OPENERS: &[&str] = &[
    "i prefer ",
    "i much prefer ",
    "i always prefer ",
    "id rather ",
    "i would rather ",
    "id much rather ",
    "we prefer ",
    "wed rather ",
    "we would rather ",
];

/// Whether a sentence is a standing instruction to the agent ("Always run the tests before
/// pushing", "Never force-push to main", "I want you to answer in French"): how the person
/// wants their work done, for as long as they do not say otherwise.
pub fn instruction(sentence: &str) -> bool {
    instructs_politely(&format!(
        "{} ",
        measures::normalize(lead_in(sentence).trim())
    ))
}

/// [`instructs`], with "please" or "pls" before it left out: "Please always ...", "please
/// don't ..." are the same instruction, asked politely.
fn instructs_politely(s: &str) -> bool {
    instructs(
        ["please ", "pls "]
            .iter()
            .find_map(|p| s.strip_prefix(p))
            .unwrap_or(s),
    )
}

/// How a sentence that only says how the speaker feels starts, and the feelings.
const FEELING_STARTS: &[&str] = &[
    "i m ",
    "im ",
    "i am ",
    "i feel ",
    "i was ",
    "i felt ",
    "feeling ",
    "i m feeling ",
];
const FEELINGS: &[&str] = &[
    "happy",
    "glad",
    "excited",
    "thrilled",
    "proud",
    "tired",
    "exhausted",
    "sad",
    "bored",
    "stressed",
    "nervous",
    "grateful",
    "thankful",
    "lucky",
    "blessed",
    "pumped",
    "stoked",
    "hungry",
    "sleepy",
    "overwhelmed",
    "relieved",
    "amazed",
    "inspired",
    "touched",
    "moved",
    "honored",
    "sorry",
    "fine",
    "good",
    "great",
    "okay",
    "ok",
    "well",
    "done",
    "back",
    "ready",
    "busy",
    "free",
    "here",
    "home",
    "late",
    "sick",
    "in",
    "out",
    "off",
    "on",
    "curious",
    "confused",
    "sure",
    "afraid",
    "worried",
];
const INTENSIFIERS: &[&str] = &[
    "so", "really", "very", "super", "totally", "pretty", "quite", "just", "a", "bit", "little",
    "also", "still", "feeling", "kinda", "kind", "of", "too", "almost", "nearly", "finally", "now",
    "all", "not",
];

/// Bare pronouns that cannot be a sentence's subject on its own.
const PRONOUN_SUBJECTS: &[&str] = &[
    "it", "its", "itll", "itd", "itve", "thats", "thatll", "theyre", "they", "theyve", "theyll",
    "theyd", "he", "hes", "hed", "hell", "she", "shes", "shed", "them",
];
/// Words that are a bare pronoun when a verb follows ("this is"), and name the subject
/// when a noun does ("this necklace").
const DEMONSTRATIVES: &[&str] = &["this", "that", "these", "those"];
const PRONOUN_VERBS: &[&str] = &[
    "is",
    "was",
    "are",
    "were",
    "has",
    "have",
    "had",
    "looks",
    "look",
    "sounds",
    "sound",
    "seems",
    "seem",
    "makes",
    "made",
    "means",
    "meant",
    "will",
    "would",
    "could",
    "can",
    "must",
    "might",
    "should",
    "does",
    "did",
    "do",
    "really",
    "so",
    "just",
    "all",
    "one",
    "too",
    "also",
    "reminds",
    "brings",
    "brought",
    "gives",
    "gave",
    "feels",
    "felt",
    "helps",
    "helped",
    "keeps",
    "kept",
    "got",
    "gets",
    "went",
    "goes",
    "sure",
    "totally",
    "definitely",
];

/// First words that make a person the subject (a person's progress is not a thing's
/// status).
const PERSON_SUBJECTS: &[&str] = &[
    "i", "im", "ive", "id", "ill", "me", "we", "weve", "wed", "were",
];

/// An appraisal of what was shown or said: "looks amazing", "sounds like a blast", or a
/// subject of a few words that is only judged ("Family time is great!", "Finding that
/// balance is key.").
static APPRAISAL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    let judged = "(?:great|awesome|amazing|cool|fun|nice|good|lovely|beautiful|incredible|fantastic|wonderful|perfect|special|interesting|exciting|delicious|tasty|intense|rewarding|epic|stunning|gorgeous|peaceful|relaxing|inspiring|important|key|crucial|essential|the best|well)";
    let so = "(?:(?:so|really|super|pretty|very|just|totally|truly|such)\\s+)*";
    regex::Regex::new(&format!(
        r"\b(?:looks?|looked|sounds?|sounded|seems?|seemed)\s+{so}(?:like\s+(?:a|an|so|such|fun|great|awesome|you)\b|{judged}\b)|^(?:\w+\s+){{1,3}}(?:is|are|was|were|s|has been|have been|are going|is going)\s+{so}{judged}(?:\s+(?:to|for)\s+(?:me|you|us|everyone))?\s*$"
    ))
    .expect("a valid pattern")
});

/// Verbs of a thing's passing state, and the weather's words.
static STATUS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"\b(?:finished|finishes|passed|passes|passing|failed|fails|failing|succeeded|completed|crashed|broke|timed out|took \d+|(?:is|are|was|were) (?:still )?(?:running|down|up|broken|green|red|slow|fast|terrible|awful|flaky|busy|crazy|done|ready|back|stuck|raining|hanging|loading|offline|online)|came back|went down|hung|stalled|weather|rainy|raining|drizzl\w*|sunny|snowy|snowing|cloudy|windy|foggy|stormy|overcast)\b",
    )
    .expect("a valid pattern")
});

/// Lead-ins that point back at an earlier statement or announce one.
const LEAD_INS: &[&str] = &[
    "as i said before",
    "as i said",
    "as i mentioned",
    "as mentioned",
    "as you know",
    "like i said before",
    "like i said",
    "like i told you",
    "for the record",
    "quick reminder",
    "reminder",
    "heads up",
    "just so you know",
    "i didn't tell you",
    "i didnt tell you",
    "i forgot to tell you",
    "did i tell you",
    "guess what",
    "big news",
    "news",
    "update",
    "oh my god",
    "omg",
    "wait",
    "fyi",
    "btw",
    "by the way",
    "sorry to repeat myself",
    "again",
    "also",
    "plus",
    "anyway",
    "so",
    "well",
    "yeah",
    "right",
    "yes",
    "yep",
    "yup",
    "oh",
    "ah",
    "wow",
    "haha",
    "lol",
    "ok",
    "okay",
    "hey",
    "hi",
    "hello",
];
/// Chat's discourse markers, written without a comma before the speaker's own words
/// ("btw my sister is getting married in March", "lol I fell asleep on the bus", "anyway
/// I'm vegetarian now"): a lead-in when a first-person word follows them (one of
/// [`SPEAKER_STARTS`] or [`PERSON_SUBJECTS`]). Without that word they may be the sentence's own
/// ("so much happened", "well done", "plus size").
const BARE_MARKERS: &[&str] = &[
    "by the way",
    "btw",
    "fyi",
    "anyway",
    "anyways",
    "also",
    "plus",
    "lol",
    "lmao",
    "haha",
    "hahaha",
    "omg",
    "ok",
    "okay",
    "yeah",
    "so",
    "well",
    "wait",
];

/// Lead-ins that need no punctuation after them.
const LEAD_INS_THAT: &[&str] = &[
    "don't forget that ",
    "dont forget that ",
    "remember that ",
    "note that ",
];

/// The sentence without its lead-in: a leading interjection, greeting or back-reference
/// ("Yeah,", "Hey Mel,", "As I said,", "Don't forget that") is left out, with a name it
/// addresses. What is left is the speaker's own words, so it still traces to them.
pub fn lead_in(sentence: &str) -> &str {
    // `p` is ASCII: a prefix of `s` that equals it ignoring case ends on a char boundary.
    fn after<'a>(s: &'a str, p: &str) -> Option<&'a str> {
        s.get(..p.len())
            .filter(|h| h.eq_ignore_ascii_case(p))
            .map(|_| &s[p.len()..])
    }
    let mut s = sentence.trim();
    loop {
        let before = s;
        for p in LEAD_INS_THAT {
            if let Some(rest) = after(s, p).filter(|r| !r.trim().is_empty()) {
                s = rest.trim_start();
            }
        }
        for p in LEAD_INS {
            let Some(rest) = after(s, p) else { continue };
            // A name it addresses ("Hey Mel,"), then the punctuation that closes the lead-in.
            let mut r = rest;
            let trimmed = r.trim_start();
            if let Some(word) = trimmed.split([',', '!', ':', ' ']).next() {
                let after_word = &trimmed[word.len()..];
                if word.chars().next().is_some_and(char::is_uppercase)
                    && word != "I"
                    && after_word.starts_with([',', '!', ':'])
                {
                    r = after_word;
                }
            }
            if let Some(rest) = r.strip_prefix([',', ':', ';', '!', '-', '\u{2013}', '\u{2014}']) {
                if !rest.trim().is_empty() {
                    s = rest.trim_start();
                    break;
                }
            }
        }
        for p in BARE_MARKERS {
            let Some(rest) = after(s, p).and_then(|r| r.strip_prefix(' ')) else {
                continue;
            };
            // Markers come in runs ("omg wait I ...", "ok so I ..."): past them, the
            // speaker's first-person word.
            let mut words = rest
                .split_whitespace()
                .map(|w| measures::normalize(w).trim().to_string())
                .skip_while(|w| BARE_MARKERS.contains(&w.as_str()));
            let next = words.next().unwrap_or_default();
            if (SPEAKER_STARTS.contains(&next.as_str()) || PERSON_SUBJECTS.contains(&next.as_str()))
                && words.next().is_some()
            {
                s = rest.trim_start();
                break;
            }
        }
        // A name it addresses ("Mel, that sounds great"): one capitalised word and a
        // comma, unless the word says when ("Yesterday, ...").
        if let Some((word, rest)) = s.split_once(", ") {
            let says_when = DATE_WORDS.contains(&word.to_ascii_lowercase().as_str());
            if !says_when
                && !word.contains(' ')
                && word.chars().next().is_some_and(char::is_uppercase)
                && word.chars().all(char::is_alphabetic)
                && word != "I"
                && !rest.trim().is_empty()
            {
                s = rest.trim_start();
            }
        }
        if s == before {
            return s;
        }
    }
}

/// Words that say when: a sentence that starts with one of them and a comma keeps it.
const DATE_WORDS: &[&str] = &[
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "recently",
    "lately",
    "later",
    "earlier",
    "then",
    "now",
    "weekends",
];

/// Whether a lowercased sentence opens with "we're" (with its apostrophe, or typed "were"
/// before what is not a question's subject, as chat writes it: "were hoping to visit my
/// family"): normalised, it reads as the question's "were", and it is not one.
fn we_are(raw: &str) -> bool {
    if raw.starts_with("we're ") {
        return true;
    }
    let mut words = raw.split_whitespace();
    words.next() == Some("were")
        && words.next().is_some_and(|w| {
            !matches!(
                w.trim_matches(|c: char| !c.is_alphanumeric()),
                "you"
                    | "they"
                    | "there"
                    | "we"
                    | "he"
                    | "she"
                    | "it"
                    | "i"
                    | "the"
                    | "your"
                    | "their"
                    | "his"
                    | "her"
                    | "those"
                    | "these"
                    | "any"
                    | "all"
                    | "both"
                    | "people"
                    | "a"
                    | "an"
                    | "ya"
                    | "u"
            )
        })
}

/// Why a sentence is not a fact (see [`Chatter`]), judged on the sentence without its
/// lead-in; `None` when it may be one.
pub fn chatter(sentence: &str) -> Option<Chatter> {
    let sentence = lead_in(sentence);
    let raw = lower(sentence.trim());
    if raw.contains("[redacted:")
        || raw.starts_with('[')
        || sentence.chars().count() > MAX_FACT_CHARS
    {
        return Some(Chatter::Unusable);
    }
    let s = format!("{} ", measures::normalize(&raw));
    let starts = |list: &[&str]| list.iter().any(|p| s.starts_with(p));
    if raw.ends_with('?') || (starts(QUESTION_STARTS) && !we_are(&raw) && !s.starts_with("do not "))
    {
        return Some(Chatter::Question);
    }
    if starts(GREETING_STARTS) {
        return Some(Chatter::Greeting);
    }
    // A request, unless it asks for a way of working that stands ("please never push to
    // main"): that is an instruction, asked politely.
    let instructs = instructs_politely(&s);
    if (starts(REQUEST_STARTS) || s.contains(" please ")) && !instructs {
        return Some(Chatter::Request);
    }
    if starts(THOUGHT_STARTS) || s.contains(" not sure ") {
        return Some(Chatter::Thought);
    }
    let words: Vec<&str> = s.split_whitespace().collect();
    // "I totally agree", "I 100% agree": the same reaction as "I agree".
    let plain = format!(
        "{} ",
        words
            .iter()
            .filter(|w| !INTENSIFIERS.contains(w) && !w.chars().all(|c| c.is_ascii_digit()))
            .copied()
            .collect::<Vec<_>>()
            .join(" ")
    );
    if starts(REACTION_STARTS) || REACTION_STARTS.iter().any(|p| plain.starts_with(p)) {
        return Some(Chatter::Reaction);
    }
    if !instructs && words.iter().any(|w| LISTENER.contains(w)) {
        return Some(Chatter::Reaction);
    }
    if starts(FEELING_STARTS) && !specific(sentence) {
        let rest = FEELING_STARTS
            .iter()
            .filter(|p| s.starts_with(*p))
            .map(|p| &s[p.len()..])
            .min_by_key(|r| r.len())
            .unwrap_or("");
        let mut after = rest
            .split_whitespace()
            .skip_while(|w| INTENSIFIERS.contains(w));
        let feeling = after.next();
        // Only how they feel: nothing said after the feeling but a word or two ("about
        // it", "for you"); "I'm thrilled to make a family for kids" says more.
        let said_after = after.filter(|w| !measures::is_stopword(w)).count();
        if feeling.is_some_and(|w| FEELINGS.contains(&w)) && said_after <= 1 {
            return Some(Chatter::Reaction);
        }
    }
    let pronoun = match (words.first(), words.get(1)) {
        // "This necklace is special" names its subject; "This is special" does not.
        (Some(w), next) if DEMONSTRATIVES.contains(w) => {
            next.is_none_or(|n| PRONOUN_VERBS.contains(n))
        }
        (Some(w), _) => PRONOUN_SUBJECTS.contains(w),
        _ => false,
    };
    if pronoun {
        return Some(Chatter::Context);
    }
    if !words.first().is_some_and(|w| PERSON_SUBJECTS.contains(w)) && STATUS.is_match(&s) {
        return Some(Chatter::Status);
    }
    if !words.first().is_some_and(|w| PERSON_SUBJECTS.contains(w))
        && APPRAISAL.is_match(s.trim_end())
    {
        return Some(Chatter::Reaction);
    }
    let content = measures::content_tokens(sentence);
    let about_speaker = words.first().is_some_and(|w| SPEAKER_STARTS.contains(w));
    let least = MIN_CONTENT_WORDS - usize::from(about_speaker);
    if content.len() < least || content.iter().all(|t| CHATTER.contains(&t.as_str())) {
        return Some(Chatter::TooShort);
    }
    None
}

/// Whether a sentence about its speaker names nothing and has a bare pronoun for its
/// object ("I had a blast there last month", "I love seeing them eat fruit", "I made it in
/// class yesterday"): what it is about was said before, and read alone weeks later it
/// tells nothing. A pronoun a verb follows opens a clause of its own ("it would be great
/// to have a new pup"), and a name, a number or a title says what the sentence is about.
///
/// Not [`chatter`]: a model that reads the events around it can say what the pronoun
/// stands for ("Melanie made a bowl in pottery class"), so it is the offline extractor,
/// which quotes sentences as they are, that leaves such a sentence out. (And the salience
/// model's thresholds are chosen over what [`chatter`] lets through, for both paths.)
pub fn leans_on_its_object(sentence: &str) -> bool {
    let sentence = lead_in(sentence);
    let s = measures::normalize(&lower(sentence.trim()));
    let words: Vec<&str> = s.split_whitespace().collect();
    if !words.first().is_some_and(|w| SPEAKER_STARTS.contains(w))
        || sentence.chars().any(|c| c.is_ascii_digit() || c == '"')
        || !measures::proper_nouns(sentence).is_empty()
    {
        return false;
    }
    // The main verb's object: at most two content words come before it ("I had a blast
    // there", "My brother wrote it"). Further on, the pronoun most often stands for what
    // the sentence itself named ("I've got a gaming tournament next month and I'm
    // feeling good about it").
    let mut before = 0;
    for (i, w) in words.iter().enumerate().skip(1) {
        if OBJECT_PRONOUNS.contains(w) {
            // After "so", "and", "because" it is a new clause's subject ("my mum has the
            // same allergy, so it probably runs in the family").
            return !CONJUNCTIONS.contains(&words[i - 1])
                && words.get(i + 1).is_none_or(|n| !PRONOUN_VERBS.contains(n));
        }
        // "this", "that": a pronoun when nothing it could point at follows ("I will
        // incorporate this into my routine", "I want them to learn that too"), a word
        // that points when a noun does ("I love that restaurant").
        if DEMONSTRATIVES.contains(w) {
            if words.get(i + 1).is_none_or(|n| AFTER_BARE.contains(n)) {
                return !CONJUNCTIONS.contains(&words[i - 1]);
            }
            continue;
        }
        if !measures::is_stopword(w) {
            before += 1;
            if before > MAX_BEFORE_OBJECT {
                return false;
            }
        }
    }
    false
}

/// Words after which "this" or "that" is a pronoun of its own: a preposition, an adverb
/// of time or degree.
const AFTER_BARE: &[&str] = &[
    "to",
    "into",
    "for",
    "with",
    "at",
    "in",
    "on",
    "about",
    "from",
    "too",
    "again",
    "now",
    "already",
    "today",
    "tonight",
    "yesterday",
    "tomorrow",
    "soon",
    "later",
    "before",
    "after",
    "up",
    "out",
    "off",
    "back",
    "over",
    "around",
    "once",
    "more",
    "so",
    "and",
    "but",
];

/// Words that open a clause of their own.
const CONJUNCTIONS: &[&str] = &[
    "and", "but", "so", "because", "cause", "since", "when", "while", "if", "or", "as", "though",
    "although", "until",
];

/// The most content words before a bare pronoun that [`leans_on_its_object`] reads as the
/// main verb's object.
const MAX_BEFORE_OBJECT: usize = 2;

/// Pronouns that stand for a thing or people said before when they are a verb's object.
const OBJECT_PRONOUNS: &[&str] = &["it", "them", "there"];

/// First words of a sentence about the speaker.
const SPEAKER_STARTS: &[&str] = &["i", "im", "ive", "my", "we", "were", "weve", "our"];

/// True for what is not a fact, however often it is repeated (see [`chatter`]).
pub fn not_a_fact(sentence: &str) -> bool {
    chatter(sentence).is_some()
}

/// Whether a sentence is specific enough to keep when it was said only once: it names
/// someone or something (a capitalised name, a number, a date or a relative date such as
/// "yesterday"), it states a habit of the speaker ([`habit`]), or one of the phrase rules
/// of [`category`] places it (a fact about the speaker, a preference, a plan or
/// commitment, an event, the project).
pub fn specific(sentence: &str) -> bool {
    let s = lead_in(sentence);
    if s.chars().any(|c| c.is_ascii_digit()) || !measures::proper_nouns(s).is_empty() {
        return true;
    }
    // What a coding session names: a path, a URL, an address, an identifier, a host. Two
    // words with a slash between them ("and/or", "advice/assistance") are no path.
    let named = measures::entities(s).iter().any(|e| match e.kind {
        measures::EntityKind::ProperNoun | measures::EntityKind::Number => false,
        measures::EntityKind::Path => {
            e.text.contains('.')
                || e.text.starts_with(['/', '~'])
                || e.text.matches('/').count() >= 2
        }
        _ => true,
    });
    if named || HOST.is_match(s) || instruction(s) {
        return true;
    }
    // Relative dates are read against any day: only whether there is one matters.
    let any_day = chrono::NaiveDate::from_ymd_opt(2001, 1, 10).expect("a valid date");
    if !crate::text::when::relatives(s, any_day).is_empty() {
        return true;
    }
    habit(s) || category(s) != "knowledge"
}

/// A host's name ("staging.acme.dev", "db.internal"): words joined by dots, ending in a
/// common top-level or private domain.
static HOST: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:dev|com|io|org|net|app|cloud|internal|local|lan|co|ai|sh|xyz|tech)\b",
    )
    .expect("a valid pattern")
});

/// Whether a sentence is about its speaker: it opens with "I", "my", "we" or "our" (after
/// any lead-in). Said again in other sessions, such a sentence is a fact about a person
/// even when it names nothing ("I am learning to play the cello").
pub fn about_speaker(sentence: &str) -> bool {
    opens_with_speaker(&measures::normalize(lead_in(sentence)))
}

/// Whether a sentence states a habit of its speaker: about the speaker, and it says how
/// often ("every morning", "usually", "on weekends"). "I drink green tea every morning"
/// names nothing, and is still specific enough to keep when said once.
pub fn habit(sentence: &str) -> bool {
    let s = measures::normalize(lead_in(sentence));
    opens_with_speaker(&s) && HOW_OFTEN.is_match(&s)
}

/// A normalised sentence's first word is one of [`SPEAKER_STARTS`].
fn opens_with_speaker(normalized: &str) -> bool {
    normalized
        .split_whitespace()
        .next()
        .is_some_and(|w| SPEAKER_STARTS.contains(&w))
}

/// Words that say how often something happens.
static HOW_OFTEN: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"\b(?:every|each|usually|always|often|daily|weekly|monthly|nightly|weekdays|weekends|mornings|evenings|nights|mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)\b",
    )
    .expect("a valid pattern")
});

/// Words for this very moment: what a sentence with one of them says of its speaker is
/// true now and gone by the next day.
const RIGHT_NOW: &[&str] = &[
    "right now",
    "at the moment",
    "just now",
    "today",
    "tonight",
    "this morning",
    "this afternoon",
    "this evening",
];

/// How a person feels, beyond the reactions [`chatter`] knows (a word after "I'm" or "I
/// feel").
const MOODS: &[&str] = &[
    "relaxed",
    "grumpy",
    "anxious",
    "upset",
    "annoyed",
    "frustrated",
    "cold",
    "warm",
    "lonely",
    "calm",
    "drained",
    "sore",
    "cranky",
    "down",
    "low",
    "better",
    "worse",
    "meh",
    "content",
    "energized",
    "restless",
    "stuffed",
    "full",
    "awake",
    "chill",
    "fed",
];

/// Whether a sentence names no one and nothing: no digit and no capitalised name after
/// its first word.
fn names_nothing(s: &str) -> bool {
    !s.chars().any(|c| c.is_ascii_digit()) && measures::proper_nouns(s).is_empty()
}

/// The words of a normalised sentence after "i'm", "i am", "i feel", "i'm feeling" or
/// "feeling" at its start, intensifiers skipped; `None` when it opens otherwise.
fn after_i_am(normalized: &str) -> Option<Vec<&str>> {
    let words: Vec<&str> = normalized.split_whitespace().collect();
    let skip = match words.as_slice() {
        ["i", "am", "feeling", ..] => 3,
        ["im", "feeling", ..] | ["i", "feel", ..] | ["i", "am", ..] | ["we", "feel", ..] => 2,
        ["im", ..] | ["feeling", ..] => 1,
        _ => return None,
    };
    Some(
        words[skip..]
            .iter()
            .copied()
            .skip_while(|w| INTENSIFIERS.contains(w))
            .collect(),
    )
}

/// Whether a sentence only says how its speaker feels ("I'm so tired", "I feel so relaxed
/// after a long weekend", "Feeling a bit grumpy this evening"): a feeling right after "I'm"
/// or "I feel", no name, number or date beside it (but a word for now), and no intention
/// after it ("I'm thrilled to announce..." says more). True of a moment, gone the next.
pub fn feeling(sentence: &str) -> bool {
    let s = lead_in(sentence);
    let n = measures::normalize(s);
    let Some(rest) = after_i_am(&n) else {
        return false;
    };
    let Some(first) = rest.first() else {
        return false;
    };
    if !(FEELINGS.contains(first) || MOODS.contains(first)) || rest.get(1) == Some(&"to") {
        return false;
    }
    let padded = format!(" {n} ");
    let now_words = RIGHT_NOW
        .iter()
        .fold(padded, |t, w| t.replace(&format!(" {w} "), " "));
    let any_day = chrono::NaiveDate::from_ymd_opt(2001, 1, 10).expect("a valid date");
    names_nothing(s) && crate::text::when::relatives(&now_words, any_day).is_empty()
}

/// A stretch of this very day: "for 6 hours", "for an hour", "for 40 mins", "all
/// morning". Group 1 is a rate after it ("for 5 hours a week"), which makes it a habit.
static TODAY_SPAN: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"\b(?:for (?:(?:like|about|around|almost|nearly|over|literally) )?(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve|a few|a couple|a couple of|several) (?:hours?|hrs?|minutes?|mins?)|all (?:day|morning|afternoon|evening|night))\b( (?:a|an|per|each|every) \w+)?",
    )
    .expect("a valid pattern")
});

/// Whether a sentence says what its speaker is or does at this moment ("I'm at my desk
/// going through emails right now", "I'm working from home today", "I've been cutting
/// balsa wood for 6 hours"): it opens with "I'm" or "I've been" and holds a word for now
/// ([`RIGHT_NOW`]) or a stretch of the day ("for 6 hours", "all morning"; not "for 5
/// hours a week", a habit), and it names no one and nothing besides, so "I'm at the
/// Lisbon office today" stays an event.
pub fn right_now(sentence: &str) -> bool {
    let s = lead_in(sentence);
    let n = measures::normalize(s);
    let opens = matches!(
        n.split_whitespace().take(3).collect::<Vec<_>>().as_slice(),
        ["im", ..] | ["i", "am", ..] | ["ive", "been", ..] | ["i", "have", "been"]
    );
    if !opens {
        return false;
    }
    let padded = format!(" {n} ");
    if RIGHT_NOW.iter().any(|w| padded.contains(&format!(" {w} "))) {
        return names_nothing(s);
    }
    // A stretch of the day: its number is the only one the sentence may hold.
    TODAY_SPAN.captures(&n).is_some_and(|c| {
        let span = c.get(0).expect("the whole match");
        let rest = format!("{} {}", &n[..span.start()], &n[span.end()..]);
        c.get(1).is_none()
            && !rest.chars().any(|ch| ch.is_ascii_digit())
            && measures::proper_nouns(s).is_empty()
    })
}

/// Words that hedge a judgement: at its start ("I think the pasta was salty") or its end
/// ("The film was long, I guess").
const HEDGES: &[&str] = &[
    "i think",
    "i guess",
    "i reckon",
    "i suppose",
    "i believe",
    "i bet",
    "i suspect",
    "i imagine",
    "i assume",
    "id say",
    "i feel like",
    "i find",
    "i found it",
    "i found them",
    "in my opinion",
    "imo",
    "honestly",
    "personally",
    "to be honest",
];

/// Whether a sentence is a passing opinion: a judgement hedged with "I think", "I guess",
/// "I reckon", "I suppose", "in my opinion", "honestly" (at its start or its end) of
/// something other than the speaker, with no number or date ("I think the pasta at
/// Luigi's was a bit salty"). What someone thinks of a film or a dish in passing is not
/// who they are; "I think I'll move to Berlin" (about the speaker) is not one.
pub fn passing_opinion(sentence: &str) -> bool {
    let n = measures::normalize(sentence);
    let n = n.trim();
    let mut rest: Option<&str> = None;
    for h in HEDGES {
        if let Some(r) = n.strip_prefix(&format!("{h} ")) {
            rest = Some(r);
            break;
        }
        if let Some(r) = n.strip_suffix(&format!(" {h}")) {
            rest = Some(r);
            break;
        }
    }
    let Some(rest) = rest else {
        return false;
    };
    // "I believe in second chances" says what the speaker holds to, not what they think
    // of something in passing; "I find out on Friday" is no judgement.
    if rest.starts_with("in ") || rest.starts_with("out ") {
        return false;
    }
    let rest = rest.strip_prefix("that ").unwrap_or(rest);
    let any_day = chrono::NaiveDate::from_ymd_opt(2001, 1, 10).expect("a valid date");
    let about_the_speaker = rest.split_whitespace().next().is_some_and(|w| {
        SPEAKER_STARTS.contains(&w) || matches!(w, "ill" | "id" | "me" | "us" | "myself")
    });
    // A day pins what is said to a happening ("I think the concert was on 3 May"); the
    // period it is said in does not ("I reckon they win the league this year").
    let pins_a_day = crate::text::when::relatives(sentence, any_day)
        .iter()
        .any(|r| !r.key.starts_with("this ") && !matches!(r.key.as_str(), "today" | "tonight"));
    !about_the_speaker
        && !rest.is_empty()
        && !sentence.chars().any(|c| c.is_ascii_digit())
        && !pins_a_day
}

/// What the offline reflector keeps from a sentence said once: a fact that is specific.
pub fn worth_keeping_once(sentence: &str) -> bool {
    !not_a_fact(sentence) && specific(sentence)
}

/// What a person is, in body or diet, that whoever cooks, plans or books for them needs
/// to know: the first word after "I'm", "I am" or "I'm a" ("I'm lactose intolerant", "I'm
/// a vegetarian", "I am diabetic").
const CONDITIONS: &[&str] = &[
    "vegetarian",
    "vegan",
    "pescatarian",
    "lactose",
    "gluten",
    "coeliac",
    "celiac",
    "diabetic",
    "allergic",
    "intolerant",
    "asthmatic",
    "epileptic",
    "pregnant",
    "deaf",
    "colorblind",
    "colourblind",
    "dyslexic",
    "teetotal",
    "kosher",
    "halal",
];

/// Whether a sentence says what its speaker is in body or diet ([`CONDITIONS`]).
fn condition(text: &str) -> bool {
    after_i_am(&measures::normalize(lead_in(text)))
        .and_then(|rest| rest.first().copied())
        .is_some_and(|w| CONDITIONS.contains(&w))
}

/// Chat's contractions typed without their apostrophe ("im a nurse", "ive been", "dont"),
/// written with it, so the phrase lists read them; only forms that are no other word
/// ("ill", "were", "its" and "id" are).
fn with_apostrophes(padded: &str) -> String {
    const FORMS: &[(&str, &str)] = &[
        (" im ", " i'm "),
        (" ive ", " i've "),
        (" dont ", " don't "),
        (" didnt ", " didn't "),
        (" doesnt ", " doesn't "),
        (" cant ", " can't "),
        (" isnt ", " isn't "),
        (" arent ", " aren't "),
        (" wasnt ", " wasn't "),
        (" havent ", " haven't "),
        (" youre ", " you're "),
        (" theyre ", " they're "),
        (" weve ", " we've "),
    ];
    let mut out = padded.to_string();
    for (bare, with) in FORMS {
        // Twice: a replaced form's closing space is the next one's opening space.
        out = out.replace(bare, with).replace(bare, with);
    }
    out
}

/// The category of a fact, by phrase rules checked in this order: persona, commitments,
/// preferences, identity, events, project; anything else is `knowledge`. Which block a
/// category belongs in is `schema::block_of_category` (`schema::classify` gives both).
pub fn category(text: &str) -> &'static str {
    let s = with_apostrophes(&format!(" {} ", lower(text)));
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
        return "persona";
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
        return "commitments";
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
        return "preferences";
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
        " i work ",
        " i study ",
        " i teach ",
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
        " i don't eat ",
        " i dont eat ",
        " i do not eat ",
        " i don't drink ",
        " i dont drink ",
        " i do not drink ",
    ]) || condition(text)
    {
        return "identity";
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
        return "event";
    }
    if has(&PROJECT_PHRASES) {
        return "project";
    }
    "knowledge"
}

/// The phrases that make a fact about a project (a codebase, its stack, its team).
const PROJECT_PHRASES: [&str; 11] = [
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
];

/// Whether a sentence is about a codebase (its stack, repository, team, deployment) by the
/// same phrases [`category`] files under `project`: a preference that is stays with its
/// project (`scope`).
pub fn about_a_codebase(text: &str) -> bool {
    let words: String = lower(text)
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '\'' {
                c
            } else {
                ' '
            }
        })
        .collect();
    let s = format!(
        " {} ",
        words.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    PROJECT_PHRASES.iter().any(|p| s.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stated_preference_compares_two_things() {
        for s in [
            "I prefer tabs over spaces.",
            "I'd rather have a failing test than a skipped one.",
            "I prefer Python over Perl for new services.",
            "btw I prefer trains to planes",
            "I would rather use Postgres instead of MySQL here.",
            "We prefer squash merges over merge commits.",
        ] {
            assert!(stated_preference(s), "{s}");
        }
        for s in [
            "I prefer the second option.",
            "I prefer to work alone.",
            "I'd rather not talk about it.",
            "I'd rather not.",
            "I love tabs more than spaces",
            "I prefer over",
            "",
        ] {
            assert!(!stated_preference(s), "{s}");
        }
    }

    #[test]
    fn a_routine_is_the_speaker_and_a_stated_frequency() {
        for s in [
            "I drink green tea every morning.",
            "We deploy the billing service every Thursday afternoon.",
            "I usually work from 9 to 5 Lisbon time.",
            "I go climbing twice a week.",
        ] {
            assert!(routine(s), "{s}");
        }
        for s in [
            "every night, my head is full",
            "The staging database is reset every Sunday.",
            "I love the ocean.",
            "Good morning!",
            "I always knew you'd pull it off",
        ] {
            assert!(!routine(s), "{s}");
        }
    }

    #[test]
    fn an_instruction_reads_as_one_and_talk_between_people_that_opens_alike_does_not() {
        for s in [
            "Always run the tests before pushing.",
            "Never force-push to main.",
            "always ask before deleting files",
            "You should answer in Dutch when I write in Dutch.",
            "You must run cargo fmt before committing.",
            "I want you to answer in French.",
            "You are a senior Rust engineer.",
            "You're my coding assistant for this repo.",
            "Don't ever touch the prod database.",
        ] {
            assert!(instruction(s), "{s}");
        }
        for s in [
            "Always good to hear!",
            "Always up for something sweet.",
            "Always happy to share them with you.",
            "Never saw this coming.",
            "never again",
            "always",
            "You must love seeing how you've grown as an artist.",
            "You should be proud of yourself.",
            "you should come down and join me on the trails sometime!",
            "You should go to a writing convention or something sometime!",
            "you should, honestly",
            "You're the best for supporting me in my writing journey.",
            "you're an angel",
            "You're a good son",
            "You're a great teacher.",
        ] {
            assert!(!instruction(s), "{s}");
        }
    }

    #[test]
    fn each_kind_of_chatter_is_named_by_its_rule() {
        let table = [
            ("Where do I live?", Chatter::Question),
            (
                "What does this borrow checker error mean",
                Chatter::Question,
            ),
            (
                "Please rename the helper to parse_amount.",
                Chatter::Request,
            ),
            ("Run the tests again.", Chatter::Request),
            ("hey, good morning!", Chatter::Greeting),
            ("Thanks, see you tomorrow", Chatter::Greeting),
            ("Quick reminder before we start.", Chatter::Greeting),
            ("hmm let me think about lunch", Chatter::Thought),
            ("I wonder if the cache is warm already.", Chatter::Thought),
            (
                "We might try a new retro format next sprint, not sure yet.",
                Chatter::Thought,
            ),
            ("Wow, that was fast", Chatter::Reaction),
            ("Can't wait to see you perform.", Chatter::Reaction),
            ("I totally agree, Melanie.", Chatter::Reaction),
            (
                "You're doing an awesome job looking after your family!",
                Chatter::Reaction,
            ),
            ("I'll keep you posted.", Chatter::Reaction),
            ("I'm so excited!", Chatter::Reaction),
            ("I'm almost done.", Chatter::Reaction),
            ("They really are a lot of fun.", Chatter::Context),
            ("It means a lot to share this with you.", Chatter::Reaction),
            ("It was so powerful.", Chatter::Context),
            ("This is really special to me.", Chatter::Context),
            ("The build finished in 3 minutes.", Chatter::Status),
            ("Tests passed on the second try.", Chatter::Status),
            ("The deploy is still running.", Chatter::Status),
            (
                "The coffee machine on the third floor is broken again.",
                Chatter::Status,
            ),
            ("The migration took 40 seconds.", Chatter::Status),
            ("Rainy weather again today.", Chatter::Status),
            ("That lighthouse photo looks stunning!", Chatter::Reaction),
            ("The new bakery sounds like a treat.", Chatter::Reaction),
            ("Weekend hikes are the best!", Chatter::Reaction),
            ("Way to go, Priya!", Chatter::Reaction),
            ("I'm always here for you, Sam!", Chatter::Reaction),
            ("I'll keep trying and stay hopeful.", Chatter::Reaction),
            ("Keep going with the marathon training!", Chatter::Reaction),
            ("Sunny and warm in Lisbon this afternoon.", Chatter::Status),
            ("[shared an image: a photo of a lake]", Chatter::Unusable),
            ("Here is the key: [redacted:openai-key]", Chatter::Unusable),
            ("Big deal.", Chatter::TooShort),
        ];
        for (s, want) in table {
            assert_eq!(chatter(s), Some(want), "{s}");
        }
    }

    #[test]
    fn facts_are_not_chatter_whoever_they_are_about() {
        for s in [
            "I live in Porto.",
            "I am allergic to sesame.",
            "I live in Lisbon and work best in the morning.",
            "You should answer in Portuguese when I write in Portuguese.",
            "You are a careful reviewer of Rust code.",
            "Always squash commits before merging.",
            "We finished the migration to Postgres 16.",
            "This necklace is a gift from my grandma in Sweden.",
            "I'm thrilled to make a family for kids who need one.",
            "My laptop was replaced by a 14 inch model two days ago.",
            "Ines from the platform team joined our standup today.",
        ] {
            assert_eq!(chatter(s), None, "{s}");
        }
    }

    #[test]
    fn odd_text_never_trips_the_leaning_rule() {
        // The pronoun right after the first word, alone, at the very end; marks, emoji,
        // right-to-left text, control characters and a long run of words.
        let long = format!("I {} it", "very ".repeat(10_000));
        for (s, leans) in [
            ("", false),
            ("I it", true),
            ("it", false),
            ("I", false),
            ("We ...it", true),
            ("I ❤️ it 🎉", true),
            ("אני אוהב את זה", false),
            ("I \u{0}\u{7} it\r\n", true),
            ("I'm’ there", true),
            (long.as_str(), true),
        ] {
            assert_eq!(leans_on_its_object(s), leans, "{s:?}");
        }
    }

    #[test]
    fn a_bare_pronoun_for_an_object_leans_on_what_was_said_before() {
        for s in [
            "I had a blast there last weekend.",
            "My cousin painted it for me.",
            "I love watching them play in the garden.",
            "Anyway, we gave it everything at practice.",
            "My colleague sent me this yesterday.",
        ] {
            assert!(leans_on_its_object(s), "{s}");
        }
        for s in [
            // The pronoun stands for what the sentence names, or opens a clause.
            "I bought a used cello last month and I practise on it every evening.",
            "My sister has a peanut allergy, so it probably runs in the family.",
            "I moved to the coast and I love it there.",
            "I love my new job, it is the best one I've had.",
            // A name, a number or a title says what it is about.
            "I took it to Lisbon last week.",
            "We watched it 3 times.",
            "I finally read it: \"Dune\".",
            // "that" points at what follows it.
            "I love that bakery near the station.",
            // Not about the speaker: the subject rules of `chatter` decide.
            "It was so powerful.",
        ] {
            assert!(!leans_on_its_object(s), "{s}");
        }
    }

    #[test]
    fn a_lead_in_is_left_out_and_a_sentence_said_once_must_be_specific() {
        assert_eq!(lead_in("As I said, I live in Lisbon."), "I live in Lisbon.");
        assert_eq!(lead_in("Hey Mel! Yeah, I went there."), "I went there.");
        assert_eq!(
            lead_in("Don't forget that I present on Friday."),
            "I present on Friday."
        );
        assert_eq!(lead_in("Mel, that sounds great"), "that sounds great");
        assert_eq!(
            lead_in("Yesterday, I went there."),
            "Yesterday, I went there."
        );
        assert_eq!(lead_in("Reminder,"), "Reminder,");
        // Chat's markers without a comma, before the speaker's own words.
        assert_eq!(
            lead_in("btw my sister Priya is getting married in March"),
            "my sister Priya is getting married in March"
        );
        assert_eq!(
            lead_in("lol I fell asleep on the bus"),
            "I fell asleep on the bus"
        );
        assert_eq!(lead_in("Anyway I'm vegetarian now"), "I'm vegetarian now");
        assert_eq!(lead_in("So much has happened"), "So much has happened");
        assert_eq!(lead_in("well done"), "well done");
        assert_eq!(lead_in("also I"), "also I");
        // Runs of markers, and the words that announce news.
        assert_eq!(
            lead_in("omg wait I didn't tell you, I got into the masters program at Edinburgh!!"),
            "I got into the masters program at Edinburgh!!"
        );
        assert_eq!(lead_in("ok so I moved to Leeds"), "I moved to Leeds");
        assert_eq!(lead_in("Guess what! We got the flat"), "We got the flat");
        assert_eq!(lead_in("so well done"), "so well done");
        assert_eq!(lead_in("wait for me"), "wait for me");
        // "we're" is not the question's "were".
        assert_eq!(
            chatter("we're hoping to visit my family in Taipei over Lunar New Year"),
            None
        );
        assert_eq!(chatter("were hoping to visit my family in Taipei"), None);
        assert_eq!(chatter("were you at the match"), Some(Chatter::Question));
        assert_eq!(
            chatter("do not add new dependencies without checking with me"),
            None
        );
        assert_eq!(
            chatter("do you know a good mechanic"),
            Some(Chatter::Question)
        );
        for s in [
            "I sold my old bike to Marta.",
            "We shipped version 2.4 yesterday.",
            "I prefer tabs over spaces.",
            "I will send the report by Friday.",
        ] {
            assert!(worth_keeping_once(s), "{s}");
        }
        for s in [
            "I had a long meeting that went nowhere.",
            "The staging database was slow this afternoon.",
            "hmm let me think about lunch",
        ] {
            assert!(!worth_keeping_once(s), "{s}");
        }
    }

    #[test]
    fn a_habit_of_the_speaker_is_specific_and_a_vague_remark_is_not() {
        for (s, want) in [
            ("I drink green tea every morning.", true),
            ("As I said, we usually walk the dog after lunch.", true),
            ("I'm gonna make it happen!", false),
            ("That tree pic looks awesome every time!", false),
            ("We can all make a difference!", false),
        ] {
            assert_eq!(habit(s), want, "{s}");
        }
        assert!(specific("I drink green tea every morning."));
        assert!(about_speaker("I am learning to play the cello."));
        assert!(!about_speaker("That tree pic looks awesome!"));
    }

    #[test]
    fn what_someone_works_at_or_is_in_body_or_diet_names_nothing_and_is_specific() {
        for s in [
            "i work night shifts at the hospital pharmacy so my sleep is all over the place",
            "I work from home most of the time.",
            "I teach maths at the local secondary school.",
            "I'm lactose intolerant so no cheese for me sadly",
            "I'm a vegetarian.",
            "Anyway I am diabetic, so no dessert",
            "i dont eat pork btw so i used chicken stock",
            "im the only backend dev here, maria does the design",
            "im a nurse in the icu",
        ] {
            assert!(specific(s), "{s}");
            assert_eq!(category(s), "identity", "{s}");
        }
        for s in [
            "I'm so tired of this.",
            "I'm intolerable before coffee.",
            "we work well together",
        ] {
            assert!(!specific(s), "{s}");
        }
    }

    #[test]
    fn what_a_coding_session_names_is_specific_and_dont_use_is_an_instruction() {
        for s in [
            "our staging server is staging.acme.dev and deploys go through github actions",
            "the config lives in src/config.rs",
            "we name the db columns in snake_case, like created_at",
            "dont use semicolons in the typescript code, we follow standard style",
            "Do not touch the migrations folder.",
            "Don't ever force push to main.",
            "the fixtures are under tests/data/golden",
        ] {
            assert!(specific(s), "{s}");
        }
        assert!(instruction("don't use semicolons in the typescript code"));
        for s in [
            "please always run the linter before you push",
            "Please never push to main on a Friday.",
            "pls dont add new dependencies without asking",
        ] {
            assert!(instruction(s), "{s}");
            assert_eq!(chatter(s), None, "{s}");
        }
        for s in ["please run the tests again", "please don't worry about it"] {
            assert!(!instruction(s), "{s}");
            assert_eq!(chatter(s), Some(Chatter::Request), "{s}");
        }
        for s in [
            "don't worry about it",
            "dont forget the milk",
            "do not know what happened there",
            "You got this, and don't ever forget that you have people cheering you on.",
            "I got lots of help from this adoption advice/assistance group.",
            "e.g. the one we talked about",
        ] {
            assert!(!instruction(s), "{s}");
            assert!(!specific(s), "{s}");
        }
        assert!(!instruction("Don't ever give up on your dreams!"));
    }

    #[test]
    fn a_stretch_of_the_day_is_the_moment_and_a_weekly_one_is_a_habit() {
        for s in [
            "I've been cutting balsa wood for 6 hours",
            "I've been on hold with the bank for 40 mins",
            "I'm stuck in traffic for like an hour",
            "I have been cleaning the flat all morning",
        ] {
            assert!(right_now(s), "{s}");
        }
        for s in [
            "I've been volunteering at the shelter for 5 hours a week",
            "I've been at the Lisbon office all day",
            "I've been learning Japanese for 3 years",
            "I've been on 2 calls for an hour",
            "I ran for 2 hours",
        ] {
            assert!(!right_now(s), "{s}");
        }
    }
}
