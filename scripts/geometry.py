#!/usr/bin/env python3
"""The clustering radius (DBSCAN eps, Euclidean between unit vectors) for the
`use-m-m2v-128` embedder, carried over from minilm's by a stated rule on the pair sets
(never on LoCoMo or the dev streams).

minilm's eps, 0.7, was read off LoCoMo's development half where recall and retention stop
rising and only the clusters keep growing (docs/BENCHMARKS.md, "The clustering radius").
What a radius does to restatements is how many of them it puts within reach of each other;
so the new table's radius is the distance within which it holds the same share of
restatements as minilm holds within 0.7, on the English pair sets both embedders can read
(fixtures/pairs.tsv and fixtures/pairs-heldout.tsv, paraphrase pairs). The shares of other
facts on the same subject ("different") and of unrelated pairs within each radius are
printed beside it, as the chaining risk; and the share of each language's paraphrases of
fixtures/pairs-multilingual.tsv within it, as what the new radius buys.

    /work/venvs/ml/bin/python scripts/geometry.py
"""
from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MINILM_EPS = 0.7

sys.path.insert(0, str(ROOT / "scripts"))
from eval_multilingual import pairs_with_kind  # noqa: E402




def distances(model_dir: Path, pairs) -> np.ndarray:
    from model2vec import StaticModel

    m = StaticModel.from_pretrained(str(model_dir))
    texts = sorted({t for p in pairs for t in p[2:]})
    v = np.asarray(m.encode(texts), dtype=np.float64)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    idx = {t: i for i, t in enumerate(texts)}
    return np.array([float(np.linalg.norm(v[idx[a]] - v[idx[b]])) for *_, a, b in pairs])


def main() -> None:
    en = pairs_with_kind(ROOT / "fixtures" / "pairs.tsv") + pairs_with_kind(ROOT / "fixtures" / "pairs-heldout.tsv")
    ml = pairs_with_kind(ROOT / "fixtures" / "pairs-multilingual.tsv")
    kinds = sorted({k for _, k, *_ in en})
    d_min = distances(ROOT / "models" / "minilm-l6-v2-m2v-128", en)
    d_use = distances(ROOT / "models" / "use-m-m2v-128", en)
    d_use_ml = distances(ROOT / "models" / "use-m-m2v-128", ml)
    para = np.array([k == "paraphrase" for _, k, *_ in en])
    share = float((d_min[para] <= MINILM_EPS).mean())
    grid = np.round(np.arange(0.30, 1.41, 0.01), 2)
    eps = min(grid, key=lambda t: (abs(float((d_use[para] <= t).mean()) - share), t))
    out = {"minilm eps": MINILM_EPS, "paraphrases within it (minilm)": round(share, 3), "use-m eps": float(eps)}
    print(f"minilm holds {share:.3f} of the English paraphrase pairs within {MINILM_EPS}; "
          f"use-m-m2v-128 holds the nearest share within {eps:.2f}")
    for name, d, t in (("minilm", d_min, MINILM_EPS), ("use-m-m2v-128", d_use, float(eps))):
        row = {k: round(float((d[np.array([kk == k for _, kk, *_ in en])] <= t).mean()), 3) for k in kinds}
        out[f"{name} within {t}"] = row
        print(f"  {name:<14} within {t:.2f}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()))
        med = {k: round(float(np.median(d[np.array([kk == k for _, kk, *_ in en])])), 3) for k in kinds}
        out[f"{name} median distance"] = med
        print(f"  {name:<14} median distance: " + ", ".join(f"{k} {v:.3f}" for k, v in med.items()))
    secs = sorted({s for s, *_ in ml})
    row = {}
    for s in secs:
        m = np.array([ss == s and k == "paraphrase" for ss, k, *_ in ml])
        row[s] = round(float((d_use_ml[m] <= eps).mean()), 3)
    out["pairs-multilingual paraphrases within use-m eps"] = row
    print("  pairs-multilingual paraphrases within it: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()))
    json.dump(out, sys.stdout if len(sys.argv) < 2 else open(sys.argv[1], "w"), indent=1)
    print()


if __name__ == "__main__":
    main()
