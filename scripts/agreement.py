#!/usr/bin/env python3
"""Agreement across languages: the structural check two sentences must pass, beside their
embedding distance, to count as restatements of one fact (issue 44). Restatements in other
words are one fact; statements that differ in a name, a number, an identifier, a polarity
or a rare word are not joined, in any language. No word list decides but the negation
markers of crates/core/rules/negation.tsv.

Definitions (Rust must reproduce them exactly):

  words(s)     s lower-cased (Unicode: Python's str.lower, Rust's str::to_lowercase) with
               U+2019 read as ', cut into maximal runs of characters that are alphanumeric
               (`char::is_alphanumeric`) or an apostrophe ('), a run also cut where the
               script class (script() of the character; an apostrophe keeps the run's)
               changes; apostrophes are trimmed from a word's ends, and empty words dropped.
  script(c)    of a character: han (U+3400-4DBF, U+4E00-9FFF, U+F900-FAFF), hiragana
               (U+3040-309F), katakana (U+30A0-30FF, U+31F0-31FF, U+FF66-FF9F), hangul
               (U+AC00-D7AF, U+1100-11FF, U+3130-318F), digit (`char::is_numeric`), latin
               (below U+0250 or U+1E00-1EFF), cyrillic (U+0400-04FF), greek (U+0370-03FF),
               other; in that order. A word's script is its first character's.
  same(a, b)   a == b, or both of one script other than Han, kana and Hangul and their
               common prefix is at least 4 characters and at least 4/5 of the shorter
               (lisbon / lisboa, deploy / deploys; not tom / sam).
  has(s, w)    some word of s is same() as w.

  names(s)     the whitespace tokens of s (features_ml.tokens), each trimmed of ASCII
               punctuation and of “”‘’«»¡¿（）「」『』、。，！？：；, whose first character is
               uppercase (`char::is_uppercase`) and is not "I", and which do not open the
               sentence (not the first token, and the token before does not end in . ! ? :);
               a name is its first word (words()).
  numbers(s)   every maximal run of ASCII or full-width digits (U+FF10-FF19, read as
               ASCII), as an integer (leading zeros dropped). Spelled-out numbers are no
               numbers: they never conflict.
  idents(s)    whitespace tokens trimmed of ASCII punctuation at their ends that hold `@`,
               or one of `. / _ - :` with an ASCII alphanumeric on both sides; lower-cased.
  rare(s)      the words of s whose SentencePiece cost is at least RARE: the word alone,
               "▁" + word, cut by the embedder's own tokenizer (models/use-m-m2v-128,
               tokenizer.json), the cost the sum over its pieces of -score (the Unigram
               model's log-probability; an unknown piece costs the vocabulary's highest
               cost, 18.833). Digit words are never rare (numbers() reads them).
  negated(s, t) for each marker of negation.tsv found in s (match "word": a word equals it;
               "prefix": a word starts with it and is longer; "part": a word holds it),
               its scope is the
               three words after the word holding it ("after") or the three before and
               that word itself ("before"); s is negated with respect to t when a word in
               a scope is has(t, .), or, when s and t share no word at all (another
               language), when s holds any marker.

  A pair (a, b) conflicts, component by component, when:
    name     a has a name b does not have (has) and b has a name a does not have;
    number   a has a number b lacks and b has one a lacks;
    ident    a has an identifier not in b's lower-cased text and b one not in a's;
    polarity negated(a, b) != negated(b, a);
    rare     the two differ in one short stretch: of the words of a in a script b uses,
             one to SWAP (2) are not in b (has), and the same of b; and among a's such
             words one is rare, and among b's (a name typed in lower case, "lisbon" /
             "madrid", 由美 / 直子; a paraphrase says more in other words and is not read);
  and the pair is joined when no component conflicts and the distance between the unit
  vectors is at most DISTANCE.

Data: fixtures/pairs-multilingual.tsv (sections en es de fr pt ja ru, and xx-en with one
side English), split by CRC-32 of "a<TAB>b": even = design half (RARE and DISTANCE are
chosen on it, with fixtures/pairs.tsv, by the best accuracy of the joined rule, a grid of
1.0 for RARE, 0.01 for DISTANCE, and SWAP of 1, 2, 3), odd = report half; each half also pairs every
paraphrase's first sentence with the next paraphrase's second sentence of its section
(another fact: `other_facts`). fixtures/pairs-heldout.tsv is reported too and never used
to choose.

    /work/venvs/ml/bin/python scripts/agreement.py [--json out.json]
"""
from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import zlib  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "scripts" / "salience"))
from eval_multilingual import read_pairs  # noqa: E402
from features_ml import tokens as ws_tokens  # noqa: E402

MODEL = ROOT / "models" / "use-m-m2v-128"
NEGATION = ROOT / "crates" / "core" / "rules" / "negation.tsv"
COMPONENTS = ["name", "number", "ident", "polarity", "rare"]
ASCII_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
WIDE_PUNCT = "“”‘’«»¡¿（）「」『』、。，！？：；"
SCOPE = 3
SWAP = 2  # the rare component reads only pairs that differ in at most this many words a side (chosen of SWAP_GRID)
SWAP_GRID = [1, 2, 3]


def script(ch: str) -> str:
    o = ord(ch)
    if 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF:
        return "han"
    if 0x3040 <= o <= 0x309F:
        return "hiragana"
    if 0x30A0 <= o <= 0x30FF or 0x31F0 <= o <= 0x31FF or 0xFF66 <= o <= 0xFF9F:
        return "katakana"
    if 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF or 0x3130 <= o <= 0x318F:
        return "hangul"
    if ch.isnumeric():
        return "digit"
    if o < 0x250 or 0x1E00 <= o <= 0x1EFF:
        return "latin"
    if 0x400 <= o <= 0x4FF:
        return "cyrillic"
    if 0x370 <= o <= 0x3FF:
        return "greek"
    return "other"


WIDE_SCRIPTS = {"han", "hiragana", "katakana", "hangul"}


def words(s: str) -> list[str]:
    out, cur, cls = [], [], None
    for ch in s.lower().replace("\u2019", "'"):
        if ch.isalnum() or ch == "'":
            c = script(ch) if ch != "'" else cls
            if c != cls and cur and ch != "'":
                out.append("".join(cur))
                cur = []
            cur.append(ch)
            cls = c if ch != "'" else cls
        else:
            if cur:
                out.append("".join(cur))
            cur, cls = [], None
    if cur:
        out.append("".join(cur))
    return [w.strip("'") for w in out if w.strip("'")]


def same(a: str, b: str) -> bool:
    if a == b:
        return True
    sa, sb = script(a[0]), script(b[0])
    if sa != sb or sa in WIDE_SCRIPTS:
        return False
    k = 0
    for x, y in zip(a, b):
        if x != y:
            break
        k += 1
    return k >= 4 and k >= 0.8 * min(len(a), len(b))


def has(ws: list[str], w: str) -> bool:
    return any(same(w, x) for x in ws)


def names(s: str) -> list[str]:
    toks = ws_tokens(s)
    out = []
    for i, t in enumerate(toks):
        core = t.strip(ASCII_PUNCT + WIDE_PUNCT)
        if not core or not core[0].isupper() or core == "I":
            continue
        if i == 0 or toks[i - 1].rstrip()[-1:] in (".", "!", "?", ":"):
            continue
        w = words(core)
        if w:
            out.append(w[0])
    return out


def numbers(s: str) -> set[int]:
    out, cur = set(), ""
    for ch in s + " ":
        if "0" <= ch <= "9":
            cur += ch
        elif "\uff10" <= ch <= "\uff19":
            cur += chr(ord(ch) - 0xFF10 + 0x30)
        else:
            if cur:
                out.add(int(cur))
            cur = ""
    return out


def idents(s: str) -> set[str]:
    out = set()
    for t in ws_tokens(s):
        core = t.strip(ASCII_PUNCT)
        ok = "@" in core
        for k in range(1, len(core) - 1):
            if core[k] in "./_-:" and core[k - 1].isascii() and core[k - 1].isalnum() and core[k + 1].isascii() and core[k + 1].isalnum():
                ok = True
        if ok:
            out.add(core.lower())
    return out


class Rarity:
    """A word's SentencePiece cost under the embedder's own Unigram model."""

    def __init__(self, model_dir: Path):
        from tokenizers import Tokenizer

        self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        vocab = json.loads((model_dir / "tokenizer.json").read_text())["model"]["vocab"]
        self.cost = np.array([-s for _, s in vocab])
        self.unk = float(self.cost.max())
        self.cost[0] = self.unk
        self.cache: dict[str, float] = {}

    def __call__(self, w: str) -> float:
        if w not in self.cache:
            ids = self.tok.encode(w, add_special_tokens=False).ids
            self.cache[w] = float(sum(self.cost[i] for i in ids if True))
        return self.cache[w]


def load_negation(path: Path = NEGATION) -> list[tuple[str, str, str]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#") or line.startswith("lang\t"):
            continue
        _lang, marker, match, scope = line.split("\t")
        out.append((marker, match, scope))
    return out


def negated(ws: list[str], other: list[str], markers) -> bool:
    shared_any = any(has(other, w) for w in ws)
    for i, w in enumerate(ws):
        for marker, match, scope in markers:
            hit = (match == "word" and w == marker) or (match == "prefix" and w.startswith(marker) and w != marker) or (
                match == "part" and marker in w)
            if not hit:
                continue
            if not shared_any:
                return True
            span = ws[i + 1:i + 1 + SCOPE] if scope == "after" else ws[max(0, i - SCOPE):i + 1]
            if any(has(other, x) for x in span):
                return True
    return False


def conflicts(a: str, b: str, rarity: Rarity, rare_cost: float, markers, swap: int | None = None) -> dict[str, bool]:
    swap = SWAP if swap is None else swap
    wa, wb = words(a), words(b)
    na, nb = names(a), names(b)
    out = {"name": any(not has(wb, n) for n in na) and any(not has(wa, n) for n in nb)}
    xa, xb = numbers(a), numbers(b)
    out["number"] = bool(xa - xb) and bool(xb - xa)
    ia, ib = idents(a), idents(b)
    out["ident"] = any(i not in b.lower() for i in ia) and any(i not in a.lower() for i in ib)
    out["polarity"] = negated(wa, wb, markers) != negated(wb, wa, markers)
    sa, sb = {script(w[0]) for w in wa}, {script(w[0]) for w in wb}

    def missing(x, y, sy):
        return [w for w in x if script(w[0]) != "digit" and script(w[0]) in sy and not has(y, w)]

    ma, mb = missing(wa, wb, sb), missing(wb, wa, sa)
    out["rare"] = (0 < len(ma) <= swap and 0 < len(mb) <= swap and any(rarity(w) >= rare_cost for w in ma)
                   and any(rarity(w) >= rare_cost for w in mb))
    return out


def embed(texts: list[str]) -> dict[str, np.ndarray]:
    from model2vec import StaticModel

    m = StaticModel.from_pretrained(str(MODEL))
    v = np.asarray(m.encode(texts), dtype=np.float64)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return dict(zip(texts, v))


def design_half(a: str, b: str) -> bool:
    return zlib.crc32(f"{a}\t{b}".encode("utf-8")) % 2 == 0


def figures(pairs, dist, conf, distance, use) -> dict:
    """Per section: paraphrases joined, near-misses refused (and accuracy)."""
    out = {}
    for sec in sorted({p[0] for p in pairs}) + ["all"]:
        rows = [i for i, p in enumerate(pairs) if sec == "all" or p[0] == sec]
        para = [i for i in rows if pairs[i][1] == 1]
        diff = [i for i in rows if pairs[i][1] == 0]

        def joined(i):
            return dist[i] <= distance and not any(conf[i][c] for c in use)

        out[sec] = {"paraphrases joined": f"{sum(joined(i) for i in para)}/{len(para)}",
                    "near-misses refused": f"{sum(not joined(i) for i in diff)}/{len(diff)}",
                    "accuracy": round(sum(joined(i) == (pairs[i][1] == 1) for i in rows) / max(1, len(rows)), 3)}
    return out


def other_facts(pairs):
    """For each paraphrase pair of a section, its first sentence beside the second sentence
    of the section's next paraphrase pair (in file order, cyclic): another fact in the same
    language, which must not be joined. These give DISTANCE its work (a near-miss is close
    by construction)."""
    out = []
    for sec in sorted({p[0] for p in pairs}):
        para = [p for p in pairs if p[0] == sec and p[1] == 1]
        for i, p in enumerate(para):
            q = para[(i + 1) % len(para)]
            if q is not p:
                out.append((f"{sec} other facts", 0, p[2], q[3]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument("--out", type=Path, help="write agreement.json (the rule's constants) and agreement-parity.tsv here")
    a = ap.parse_args()
    ml = read_pairs(ROOT / "fixtures" / "pairs-multilingual.tsv")
    en = [("pairs.tsv", y, x, z) for _, y, x, z in read_pairs(ROOT / "fixtures" / "pairs.tsv")]
    en_held = [("pairs-heldout.tsv", y, x, z) for _, y, x, z in read_pairs(ROOT / "fixtures" / "pairs-heldout.tsv")]
    design = [p for p in ml if design_half(p[2], p[3])]
    design = design + other_facts(design) + en
    report = [p for p in ml if not design_half(p[2], p[3])]
    report = report + other_facts(report)
    texts = sorted({t for p in ml + en + en_held for t in p[2:]})
    vec = embed(texts)
    rarity = Rarity(MODEL)
    markers = load_negation()

    def prepare(pairs, rare_cost, swap=None):
        d = np.array([float(np.linalg.norm(vec[p[2]] - vec[p[3]])) for p in pairs])
        c = [conflicts(p[2], p[3], rarity, rare_cost, markers, swap) for p in pairs]
        return d, c

    rare_grid = [round(x, 1) for x in np.arange(0.0, 30.01, 1.0)]
    dist_grid = [round(x, 2) for x in np.arange(0.40, 1.21, 0.01)]
    best = None
    for sw in SWAP_GRID:
        for r in rare_grid:
            d, c = prepare(design, r, sw)
            y = np.array([p[1] for p in design])
            ok = np.array([not any(ci.values()) for ci in c])
            for t in dist_grid:
                acc = float((((d <= t) & ok) == (y == 1)).mean())
                if best is None or acc > best[0] + 1e-12:
                    best = (acc, r, t, sw)
    acc, rare_cost, distance, swap = best
    global SWAP
    SWAP = swap
    print(f"SWAP {SWAP}")
    print(f"chosen on the design half + pairs.tsv: RARE {rare_cost}, DISTANCE {distance} (accuracy {acc:.3f})")
    result = {"rare_cost": rare_cost, "distance": distance, "design accuracy": round(acc, 3)}
    for name, pairs in (("design half + pairs.tsv", design), ("report half", report), ("pairs-heldout.tsv", en_held)):
        d, c = prepare(pairs, rare_cost)
        result[name] = {}
        for label, use in [("distance alone", [])] + [(f"distance + {x}", [x]) for x in COMPONENTS] + [("combined", COMPONENTS)]:
            result[name][label] = figures(pairs, d, c, distance, use)
        print(f"\n{name} (DISTANCE {distance}, RARE {rare_cost}): paraphrases joined / near-misses refused")
        secs = list(result[name]["combined"].keys())
        print(f"  {'':<22}" + "".join(f"{s:>16}" for s in secs))
        for label, f in result[name].items():
            print(f"  {label:<22}" + "".join(f"{f[s]['paraphrases joined']:>8} {f[s]['near-misses refused']:>7}" for s in secs))
        if name == "report half":
            result[name]["wrong"] = [
                {"section": p[0], "label": p[1], "a": p[2], "b": p[3], "distance": round(float(d[i]), 3),
                 "conflicts": [k for k, v in c[i].items() if v]}
                for i, p in enumerate(pairs)
                if (d[i] <= distance and not any(c[i].values())) != (p[1] == 1)]
    if a.json:
        a.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    if a.out:
        write_out(a.out, ml + en + en_held, vec, rarity, markers, rare_cost, distance, result)


def write_out(out: Path, pairs, vec, rarity, markers, rare_cost, distance, result) -> None:
    """The rule's constants and, for every project-owned pair (the three pair files), what
    each component says and the distance, for Rust to reproduce."""
    import hashlib

    out.mkdir(parents=True, exist_ok=True)
    consts = {"rule": "joined when no component conflicts and distance <= distance (see scripts/agreement.py)",
              "embedder": "use-m-m2v-128-v1", "distance": distance, "rare_cost": rare_cost, "swap": SWAP, "scope": SCOPE,
              "unknown_piece_cost": round(rarity.unk, 6), "negation": "crates/core/rules/negation.tsv",
              "negation_sha256": hashlib.sha256(NEGATION.read_bytes()).hexdigest(),
              "figures": {k: result[k] for k in ("design half + pairs.tsv", "report half", "pairs-heldout.tsv")}}
    for k in consts["figures"].values():
        k.pop("wrong", None)
    (out / "agreement.json").write_text(json.dumps(consts, indent=1, ensure_ascii=False) + "\n")
    with open(out / "agreement-parity.tsv", "w", encoding="utf-8") as f:
        f.write("# a (JSON)\tb (JSON)\t" + "\t".join(COMPONENTS) + "\tdistance\tjoined  (scripts/agreement.py; Rust must agree on every"
                " component and on the distance within 1e-5)\n")
        for _, _, x, y in pairs:
            c = conflicts(x, y, rarity, rare_cost, markers)
            d = float(np.linalg.norm(vec[x] - vec[y]))
            joined = d <= distance and not any(c.values())
            f.write(f"{json.dumps(x, ensure_ascii=False)}\t{json.dumps(y, ensure_ascii=False)}\t"
                    + "\t".join(str(int(c[k])) for k in COMPONENTS) + f"\t{d:.9f}\t{int(joined)}\n")


if __name__ == "__main__":
    main()
