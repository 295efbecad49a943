"""The multilingual salience scorer's shape features: how a statement is written, in any
language, read from its characters alone (no word of any language is listed). Rust must
compute the same numbers (crates/core/src/selection/salience.rs, when the multilingual
weights are integrated); every definition below is exact, with the code points named.

  whitespace   the Unicode White_Space characters: U+0009-U+000D, U+0020, U+0085,
               U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000
               (Rust's `char::is_whitespace`).
  tokens       the text split on whitespace, empty pieces dropped.
  wide         a character in U+3040-U+30FF (kana), U+3400-U+4DBF, U+4E00-U+9FFF or
               U+F900-U+FAFF (CJK ideographs): scripts written without spaces.
  units        the tokens holding at least one character that is not wide, plus half the
               number of wide characters (a Japanese or Chinese word is about two).

  log_units    ln(1 + units)
  question     1 if the last non-whitespace character is ? (U+003F), ？ (U+FF1F) or ؟ (U+061F)
  exclaim      1 if it is ! (U+0021) or ！ (U+FF01)
  digit        1 if any character is 0-9 or a full-width digit U+FF10-U+FF19
  cap_share    of the tokens after the first, the share whose first character is
               uppercase (Rust's `char::is_uppercase`, Python's `str.isupper` on that one
               character); 0 with fewer than two tokens. Languages without case give 0.
  ident        1 if a token holds an identifier's or a path's shape: any of the characters
               / \\ _ @ # ` = < > { } [ ] $ ~ |, or a `.` with an ASCII letter or digit on
               both sides and an ASCII letter on at least one (file.rs, v2.x, not 3.11),
               or a lowercase letter followed by an uppercase one (camelCase; Rust's
               `is_lowercase`/`is_uppercase`, Python's `islower`/`isupper`)
  acronym      1 if a token, its ASCII punctuation trimmed from both ends, is two or more
               characters all ASCII uppercase letters or digits with at least two letters
               (API, CI, K8S)
  emoji        1 if any character is in U+1F000-U+1FAFF or U+2600-U+27BF
"""
from __future__ import annotations

import math

FEATURES = ["log_units", "question", "exclaim", "digit", "cap_share", "ident", "acronym", "emoji"]

WHITESPACE = frozenset(
    [chr(c) for c in range(0x09, 0x0E)]
    + ["\u0020", "\u0085", "\u00a0", "\u1680"]
    + [chr(c) for c in range(0x2000, 0x200B)]
    + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
)
IDENT_CHARS = frozenset("/\\_@#`=<>{}[]$~|")
ASCII_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def wide(ch: str) -> bool:
    o = ord(ch)
    return 0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF


def tokens(text: str) -> list[str]:
    out, cur = [], []
    for ch in text:
        if ch in WHITESPACE:
            if cur:
                out.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
    if cur:
        out.append("".join(cur))
    return out


def is_ascii_alnum(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def is_ascii_alpha(ch: str) -> bool:
    return ch.isascii() and ch.isalpha()


def ident(tok: str) -> bool:
    if any(ch in IDENT_CHARS for ch in tok):
        return True
    for k in range(1, len(tok) - 1):
        if tok[k] == "." and is_ascii_alnum(tok[k - 1]) and is_ascii_alnum(tok[k + 1]) and (
            is_ascii_alpha(tok[k - 1]) or is_ascii_alpha(tok[k + 1])
        ):
            return True
    for k in range(len(tok) - 1):
        if tok[k].islower() and tok[k + 1].isupper():
            return True
    return False


def acronym(tok: str) -> bool:
    t = tok.strip(ASCII_PUNCT)
    if len(t) < 2:
        return False
    if not all(("A" <= ch <= "Z") or ("0" <= ch <= "9") for ch in t):
        return False
    return sum("A" <= ch <= "Z" for ch in t) >= 2


def features(text: str) -> list[float]:
    toks = tokens(text)
    n_wide = sum(1 for ch in text if wide(ch))
    units = sum(1 for t in toks if any(not wide(ch) for ch in t)) + 0.5 * n_wide
    stripped = "".join(toks)
    last = stripped[-1] if stripped else ""
    rest = toks[1:]
    cap = sum(1 for t in rest if t[0].isupper()) / len(rest) if rest else 0.0
    return [
        math.log1p(units),
        1.0 if last in ("?", "\uff1f", "\u061f") else 0.0,
        1.0 if last in ("!", "\uff01") else 0.0,
        1.0 if any(("0" <= ch <= "9") or ("\uff10" <= ch <= "\uff19") for ch in text) else 0.0,
        cap,
        1.0 if any(ident(t) for t in toks) else 0.0,
        1.0 if any(acronym(t) for t in toks) else 0.0,
        1.0 if any((0x1F000 <= ord(ch) <= 0x1FAFF) or (0x2600 <= ord(ch) <= 0x27BF) for ch in text) else 0.0,
    ]
