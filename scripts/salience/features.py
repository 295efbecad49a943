"""The shape features of one statement, as `crates/core/src/selection/salience.rs` computes them.

This file and the Rust module are two writings of one definition: a parity test
(`tests/salience.rs`) holds the scores the two compute for the same texts equal within
1e-5, so a change here is a change there. Every feature reads the shape of a sentence and
general English function words (pronouns, modal verbs, question words, the names of the
months and weekdays, greetings and interjections); none names a word of any dev set.

A word is a maximal run of letters, digits and apostrophes, apostrophes trimmed from its
ends; its bare form is lower case with the apostrophes left out ("I'm" -> "im").
"""
from __future__ import annotations

import math

FEATURES = [
    "log_words",      # ln(1 + words): a longer statement says more
    "question",       # a question mark anywhere
    "first_start",    # opens with I / my / we / our: about the speaker
    "first_share",    # share of first-person words
    "second_share",   # share of second-person words: about the listener
    "number",         # a digit anywhere
    "proper",         # ln(1 + capitalised words that do not open a sentence): names
    "date",           # a month, a weekday, yesterday, tomorrow, weeks, years ago, ...
    "future",         # will, 'll, gonna, shall, going, plan: a plan
    "present",        # now, currently, today, tonight, or "I'm ...ing": the present moment
    "interjection",   # opens with a greeting, thanks or an interjection
    "word_len",       # mean word length / 10, at most 1.5: specific words are long
    "request",        # please, or "can you", "could you", ...
]

FIRST = frozenset("i im ive id ill me my mine myself we weve wed us our ours ourselves".split())
FIRST_START = frozenset("i im ive id ill my we weve wed our".split())
SECOND = frozenset("you your youre yours youve youll youd yourself yourselves ya u".split())
DATE = frozenset(
    "january february march april june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday weekend weekends "
    "yesterday tomorrow tonight ago week weeks month months year years".split()
)
FUTURE = frozenset("will ill gonna shall going plan plans planning planned".split())
NOW = frozenset("now currently today tonight".split())
BE = frozenset("im am are were is".split())
INTERJECTIONS = frozenset(
    "hi hey hello hiya yo bye goodbye thanks thank thx cheers morning night seeya welcome "
    "alright anyway hmm hm "
    "wow woah whoa oh ah aw aww omg yay haha lol cool nice great awesome congrats "
    "congratulations sorry yes yeah yep yup no nope ok okay sure totally absolutely "
    "definitely exactly agreed same glad amazing".split()
)
ASKING = frozenset("can could would will".split())
I_FORMS = frozenset("i im ive id ill".split())
APOSTROPHES = "'\u2019"
SENTENCE_ENDS = ".!?:"


def words(text: str) -> list[tuple[int, str]]:
    """The words of a text with the index (in characters) each starts at."""
    out = []
    start = None
    for i, ch in enumerate(text + " "):
        if ch.isalnum() or ch in APOSTROPHES:
            if start is None:
                start = i
        elif start is not None:
            raw = text[start:i]
            lead = len(raw) - len(raw.lstrip(APOSTROPHES))
            word = raw.strip(APOSTROPHES)
            if word:
                out.append((start + lead, word))
            start = None
    return out


def bare(word: str) -> str:
    return "".join(c for c in word.lower() if c not in APOSTROPHES)


def opens_sentence(text: str, at: int) -> bool:
    """Whether the word starting at `at` opens a sentence: nothing but white space before
    it, or the last character before it that is not white space ends one."""
    for ch in reversed(text[:at]):
        if not ch.isspace():
            return ch in SENTENCE_ENDS
    return True


def features(text: str) -> list[float]:
    ws = words(text)
    n = len(ws)
    b = [bare(w) for _, w in ws]
    f = dict.fromkeys(FEATURES, 0.0)
    f["log_words"] = math.log1p(n)
    f["question"] = 1.0 if "?" in text else 0.0
    if n:
        f["first_start"] = 1.0 if b[0] in FIRST_START else 0.0
        f["first_share"] = sum(x in FIRST for x in b) / n
        f["second_share"] = sum(x in SECOND for x in b) / n
        f["interjection"] = 1.0 if b[0] in INTERJECTIONS else 0.0
        f["word_len"] = min(sum(len(w) for _, w in ws) / n / 10.0, 1.5)
    f["number"] = 1.0 if any("0" <= c <= "9" for c in text) else 0.0
    proper = sum(
        1
        for (at, w), x in zip(ws, b)
        if w[0].isupper() and x not in I_FORMS and not opens_sentence(text, at)
    )
    f["proper"] = math.log1p(proper)
    f["date"] = 1.0 if any(x in DATE for x in b) else 0.0
    f["future"] = 1.0 if any(x in FUTURE for x in b) else 0.0
    progressive = any(
        x in BE and any(len(y) > 4 and y.endswith("ing") for y in b[i + 1 : i + 3])
        for i, x in enumerate(b)
    )
    f["present"] = 1.0 if progressive or any(x in NOW for x in b) else 0.0
    f["request"] = 1.0 if "please" in b or (n > 1 and b[0] in ASKING and b[1] in ("you", "u")) else 0.0
    return [f[k] for k in FEATURES]
