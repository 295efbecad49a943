#!/usr/bin/env python3
"""Train dream's multilingual salience scorer: a logistic regression over a statement's
vector from the multilingual static embedder (models/use-m-m2v-128, 128 values) and eight
language-independent shape features (features_ml.py: length, a question or exclamation
mark, a digit, the share of capitalised tokens, an identifier's or path's shape, an
acronym, an emoji; no word of any language is listed).

Data, every row a sentence labelled K (worth keeping) or N:
  * the public sets labelled by scripts/salience/public_data.py (its TSVs, outside the
    repository: Synthetic-Persona-Chat, CC BY 4.0, and XPersona in 7 languages, MIT), the
    validation files for fitting and cross-validation, the test files held out;
  * the project's own labelled sets (fixtures/devsets/salience-{agent,coding,chat}.txt),
    cut into sentences and stripped of lead-ins by dream's phrase rules exactly as
    scripts/salience/train.py does (it is imported).
Each distinct text is one row (its first occurrence): a persona sentence repeated over
many conversations weighs once, and no text is on both sides of a fold. A public source is
capped at --cap rows (whole conversations, chosen by a hash of their id) so the project's
sets are not drowned; every row weighs the same.

Cross-validation BY SOURCE: each public source (spc, xpersona-en, -fr, -it, -id, -ja, -ko,
-zh) is one fold of its own, and the project's sets' groups (a generator template, a coding
turn or session, a chat conversation) keep the five folds train.py deals them to by a hash
(folds 0-4 of these eight), so a dataset,
a language or a conversation is never on both sides: a public source's figures are those of
a model that never saw that source (nor, for a language other than English, that language).

Choices, by the rules train.py states, on the cross-validated scores:
  * the L2 penalty: the best mean AUC over the sets, of L2_GRID;
  * KEEP: the lowest threshold (steps of 0.01) with precision >= 0.85 on every set's
    candidates (for the public sets every sentence is a candidate: the phrase rules read
    English only); SEND: the highest with recall >= 0.95 of every set's events worth keeping
    (an event is a turn, scoring as its best sentence). A set on which no threshold reaches
    the precision is named, and left out of the KEEP rule, in the output.
  * a small MLP is measured beside the regression with the same folds (--mlp).

Outputs (--out, default /work/salience-ml): weights.json (schema in WEIGHTS_SCHEMA below),
parity.tsv (texts and the score Python gives each: Rust must agree within 1e-5), report.json.

    /work/venvs/ml/bin/python scripts/salience/public_data.py            # the labelled TSVs
    cargo build -p dream-core --example phrase_rules
    /work/venvs/ml/bin/python scripts/salience/train_multilingual.py [--mlp]
"""
from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import collections  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import zlib  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import features as features_en  # noqa: E402
import public_data  # noqa: E402
import train as train_en  # noqa: E402
from features_ml import FEATURES, features  # noqa: E402
from train import auc, fit, precision_recall, predict  # noqa: E402

ROOT = HERE.parents[1]
MODEL = ROOT / "models" / "use-m-m2v-128"
EMBEDDER_ID = "use-m-m2v-128-v1"
PUBLIC_SOURCES = ["spc", "xpersona-en", "xpersona-fr", "xpersona-it", "xpersona-id", "xpersona-ja", "xpersona-ko", "xpersona-zh"]
PROJECT_SETS = ["agent", "coding", "chat"]
L2_GRID = [0.3, 1.0, 3.0, 10.0, 30.0, 100.0]
PRECISION = 0.85
RECALL = 0.95
GRID = [round(0.01 * i, 2) for i in range(1, 100)]
SIGNIFICANT = 6

WEIGHTS_SCHEMA = """weights.json:
  model               what the model is (text)
  embedder            the embedder id whose vectors it reads (a vector of another length
                      counts as zeros)
  dim                 the vector's length (128)
  features            the shape features' names, in the order of feature_weights
  feature_definitions the exact definition of each (features_ml.py's docstring)
  embedding_weights   dim numbers; feature_weights: one per feature; bias: one number
  score               sigmoid(bias + embedding . embedding_weights + features . feature_weights),
                      the embedding unit length as the embedder gives it (all zeros for a
                      text with no known piece)
  l2                  the penalty chosen
  thresholds          {"keep": KEEP, "send": SEND}
  trained_on          rows per set
  cross_validation    per set and per language: AUC, precision and recall at KEEP and SEND
  held_out            the same on the public test files (model fitted on everything else)
"""


# ---------------------------------------------------------------- data


def public_rows(path: Path, split: str, cap: int | None) -> list[dict]:
    rows = []
    for r in public_data.read_tsv(path):
        if r["label"] not in ("K", "N"):
            continue
        rows.append({"set": r["source"], "lang": r["lang"], "text": r["text"], "label": r["label"] == "K",
                     "group": r["group"], "candidate": True, "event": f"{r['group']}:{r['speaker']}:{r.get('turn', '')}:{r['text'] if r['kind'] == 'persona' else ''}",
                     "split": split})
    if cap:
        by_set = collections.defaultdict(list)
        for r in rows:
            by_set[r["set"]].append(r)
        rows = []
        for s, rs in by_set.items():
            groups = sorted({r["group"] for r in rs}, key=lambda g: (zlib.crc32(g.encode()), g))
            chosen, n = set(), 0
            count = collections.Counter(r["group"] for r in rs)
            for g in groups:
                if n >= cap:
                    break
                chosen.add(g)
                n += count[g]
            rows += [r for r in rs if r["group"] in chosen]
    return rows


def project_rows(binary: Path) -> list[dict]:
    rows = train_en.project_rows(binary)
    out = []
    for r in rows:
        out.append({"set": r["set"], "lang": "en", "text": r["text"], "label": bool(r["label"]),
                    "group": f"{r['set']}:{r['fold']}:{r['event']}", "candidate": r["candidate"], "event": r["event"],
                    "project_fold": r["fold"], "split": "valid"})
    return out


def dedupe(rows: list[dict], seen: set | None = None) -> list[dict]:
    seen = set() if seen is None else seen
    out = []
    for r in rows:
        if r["text"] in seen:
            continue
        seen.add(r["text"])
        out.append(r)
    return out


def design(rows, model) -> np.ndarray:
    texts = [r["text"] for r in rows]
    emb = np.asarray(model.encode(texts), dtype=np.float64) if texts else np.zeros((0, 128))
    feats = np.array([features(t) for t in texts], dtype=np.float64).reshape(len(texts), len(FEATURES))
    return np.hstack([emb, feats])


def labels(rows) -> np.ndarray:
    return np.array([1.0 if r["label"] else 0.0 for r in rows])


# ---------------------------------------------------------------- measures


def subset(rows, scores, key, value, candidates=False):
    m = np.array([r[key] == value and (r["candidate"] or not candidates) for r in rows])
    return labels(rows)[m], scores[m]


def events(rows, scores, key, value):
    best: dict[str, list] = {}
    for r, s in zip(rows, scores):
        if r[key] == value:
            b = best.setdefault(r["event"], [0.0, False])
            b[0] = max(b[0], s)
            b[1] = b[1] or r["label"]
    return np.array([1.0 if v[1] else 0.0 for v in best.values()]), np.array([v[0] for v in best.values()])


def safe_auc(y, s):
    if len(y) == 0 or y.min() == y.max():
        return None
    return round(auc(y, s), 3)


def measured(y, s, keep, send) -> dict:
    pk, rk, nk = precision_recall(y, s, keep)
    ps, rs, ns = precision_recall(y, s, send)
    return {"n": int(len(y)), "keep_worthy": int(y.sum()), "auc": safe_auc(y, s),
            "keep": {"precision": round(pk, 3), "recall": round(rk, 3), "kept": nk},
            "send": {"recall": round(rs, 3), "sent": ns}}


def figures(rows, scores, keep, send) -> dict:
    out = {"by set": {}, "by language": {}}
    for s in sorted({r["set"] for r in rows}):
        out["by set"][s] = measured(*subset(rows, scores, "set", s), keep, send)
        if any(not r["candidate"] for r in rows if r["set"] == s):
            out["by set"][f"{s} candidates"] = measured(*subset(rows, scores, "set", s, True), keep, send)
    for lang in sorted({r["lang"] for r in rows}):
        out["by language"][lang] = measured(*subset(rows, scores, "lang", lang), keep, send)
    return out


def show(figs: dict) -> None:
    for part in ("by set", "by language"):
        for name, f in figs[part].items():
            a = "-" if f["auc"] is None else f"{f['auc']:.3f}"
            print(f"  {name:<20} n {f['n']:>6} K {f['keep_worthy']:>6} AUC {a:>5}  KEEP: P {f['keep']['precision']:.3f} "
                  f"R {f['keep']['recall']:.3f}  SEND: R {f['send']['recall']:.3f} ({f['send']['sent']} sent)")


def lowest_precise(rows, scores, sets):
    out = {}
    for s in sets:
        y, sc = subset(rows, scores, "set", s, True)
        out[s] = next((t for t in GRID if precision_recall(y, sc, t)[0] >= PRECISION), None)
    return out


def highest_recalling(rows, scores, sets):
    out = {}
    for s in sets:
        y, sc = events(rows, scores, "set", s)
        out[s] = max((t for t in GRID if precision_recall(y, sc, t)[1] >= RECALL), default=GRID[0])
    return out


# ---------------------------------------------------------------- the model


def cross_validate(x, y, fold, k, l2, kind="lr") -> np.ndarray:
    oof = np.zeros(len(y))
    for f in range(k):
        tr, te = fold != f, fold == f
        if not te.any():
            continue
        if kind == "lr":
            oof[te] = predict(fit(x[tr], y[tr], l2), x[te])
        else:
            oof[te] = mlp(x[tr], y[tr], x[te], l2)
    return oof


def mlp(xtr, ytr, xte, l2):
    from sklearn.neural_network import MLPClassifier

    m = MLPClassifier(hidden_layer_sizes=(32,), alpha=l2 / len(xtr), max_iter=200, random_state=0)
    m.fit(xtr, ytr)
    return m.predict_proba(xte)[:, 1]


def g(x: float) -> float:
    return float(f"{x:.{SIGNIFICANT}g}")


PARITY_EXTRA = [
    "Trabajo desde Lisboa y despliego la API con Nomad.",
    "¿Qué tal el fin de semana?",
    "Meine Frau Julia holt die Kinder donnerstags ab.",
    "Danke, bis morgen!",
    "Je travaille depuis Lisbonne.",
    "Salut ! Ça va ?",
    "O meu portátil corre Fedora 40.",
    "ノートパソコンではFedoraを使っています。",
    "今日はいい天気ですね！",
    "Я работаю из Лиссабона.",
    "Привет! Как дела?",
    "我住在东京。",
    "나는 서울에 살아요.",
    "deploys go through `nomad job run api.nomad`, never by hand",
    "The API runs on k8s-prod-01 behind nginx.",
    "camelCase and snake_case and C:\\path\\file.txt",
    "lol 😂😂",
]


def write_parity(out: Path, model, project: list[dict]) -> None:
    """Project-owned texts only (no public sentence is copied into the repository): the
    English parity texts of train.py, a few in other languages, every seventh project
    sentence and every sentence of fixtures/pairs-multilingual.tsv."""
    weights = json.loads((out / "weights.json").read_text())
    shipped = np.array(weights["embedding_weights"] + weights["feature_weights"] + [weights["bias"]])
    pairs = []
    for line in (ROOT / "fixtures" / "pairs-multilingual.tsv").read_text().splitlines()[1:]:
        if line and not line.startswith("#"):
            pairs += line.split("\t")[1:]
    texts = train_en.PARITY + PARITY_EXTRA + [r["text"] for r in project][::7] + pairs
    scores = predict(shipped, design([{"text": t} for t in texts], model))
    with open(out / "parity.tsv", "w") as f:
        f.write("# text (JSON string)\tscore by scripts/salience/train_multilingual.py (Rust must agree within 1e-5)\n")
        for t, s in zip(texts, scores):
            f.write(f"{json.dumps(t, ensure_ascii=False)}\t{s:.9f}\n")


def old_model_scores(rows) -> np.ndarray:
    """The shipped English model (crates/core/salience/weights.json over minilm)."""
    from model2vec import StaticModel

    weights = json.loads((ROOT / "crates" / "core" / "salience" / "weights.json").read_text())
    model = StaticModel.from_pretrained(str(ROOT / "models" / "minilm-l6-v2-m2v-128"))
    texts = [r["text"] for r in rows]
    x = np.hstack([np.asarray(model.encode(texts), dtype=np.float64),
                   np.array([features_en.features(t) for t in texts], dtype=np.float64)])
    return predict(train_en.shipped_beta(weights), x), weights["thresholds"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--public", type=Path, default=Path("/work/salience-public"))
    ap.add_argument("--out", type=Path, default=Path("/work/salience-ml"))
    ap.add_argument("--model", type=Path, default=MODEL)
    ap.add_argument("--rules", type=Path, default=ROOT / "target" / "debug" / "examples" / "phrase_rules")
    ap.add_argument("--cap", type=int, default=4000)
    ap.add_argument("--mlp", action="store_true")
    ap.add_argument("--no-old", action="store_true")
    ap.add_argument("--parity-only", action="store_true", help="only write parity.tsv from --out's weights.json")
    a = ap.parse_args()
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(str(a.model))
    if a.parity_only:
        write_parity(a.out, model, project_rows(a.rules))
        return
    k = len(PUBLIC_SOURCES)
    proj = project_rows(a.rules)
    pub = public_rows(a.public / "public-valid.tsv", "valid", a.cap)
    rows = dedupe(proj + pub)
    for r in rows:  # a public source is a fold; a project set's groups keep train.py's folds (0-4)
        r["fold"] = PUBLIC_SOURCES.index(r["set"]) if r["set"] in PUBLIC_SOURCES else r["project_fold"]
    held = dedupe(public_rows(a.public / "public-test.tsv", "test", None), {r["text"] for r in rows})
    sets = PROJECT_SETS + PUBLIC_SOURCES
    print(f"{len(rows)} rows: " + ", ".join(f"{s} {sum(r['set'] == s for r in rows)}" for s in sets), flush=True)
    x = design(rows, model)
    y = labels(rows)
    fold = np.array([r["fold"] for r in rows])

    best = None
    grid_report = {}
    for l2 in L2_GRID:
        oof = cross_validate(x, y, fold, k, l2)
        aucs = [auc(*subset(rows, oof, "set", s)) for s in sets]
        grid_report[str(l2)] = {s: round(v, 4) for s, v in zip(sets, aucs)}
        print(f"l2 {l2:>5}: mean AUC {np.mean(aucs):.4f}  " + " ".join(f"{s} {v:.3f}" for s, v in zip(sets, aucs)), flush=True)
        if best is None or np.mean(aucs) > best[0] + 1e-12:
            best = (float(np.mean(aucs)), l2, oof)
    _, l2, oof = best
    precise = lowest_precise(rows, oof, sets)
    recalling = highest_recalling(rows, oof, sets)
    reachable = [s for s in sets if precise[s] is not None]
    keep = max(precise[s] for s in reachable)
    send = min(recalling[s] for s in sets)
    print(f"precision >= {PRECISION} from: {precise}")
    print(f"recall >= {RECALL} up to: {recalling}")
    print(f"chosen: l2 {l2}, KEEP {keep} (sets that never reach the precision: {[s for s in sets if precise[s] is None]}), SEND {send}")
    cv = figures(rows, oof, keep, send)
    print("cross-validated:")
    show(cv)

    report = {"l2 grid": grid_report, "precise_from": precise, "recall_up_to": recalling}
    if a.mlp:
        for h_l2 in (1.0, 10.0):
            o = cross_validate(x, y, fold, k, h_l2, kind="mlp")
            aucs = {s: auc(*subset(rows, o, "set", s)) for s in sets}
            report[f"mlp l2={h_l2}"] = {s: round(v, 4) for s, v in aucs.items()}
            print(f"MLP(32) alpha~{h_l2}: mean AUC {np.mean(list(aucs.values())):.4f} " + " ".join(f"{s} {v:.3f}" for s, v in aucs.items()), flush=True)
    # ablation: the shape features alone, the embedding alone
    dim = x.shape[1] - len(FEATURES)
    for name, cols in (("features alone", slice(dim, None)), ("embedding alone", slice(0, dim))):
        o = cross_validate(x[:, cols], y, fold, k, l2)
        aucs = {s: round(auc(*subset(rows, o, "set", s)), 3) for s in sets}
        report[name] = aucs
        print(f"{name}: " + " ".join(f"{s} {v:.3f}" for s, v in aucs.items()))

    beta = fit(x, y, l2)
    hx = design(held, model)
    hs = predict(beta, hx)
    ho = figures(held, hs, keep, send)
    print(f"held out (public test files, {len(held)} rows not in training):")
    show(ho)
    if not a.no_old:
        old, t = old_model_scores(rows)
        report["old model, same folds"] = figures(rows, old, t["keep"], t["send"])
        print(f"the shipped English model (KEEP {t['keep']}, SEND {t['send']}) on the same rows (held out for the public sets only):")
        show(report["old model, same folds"])
        old_h, _ = old_model_scores(held)
        report["old model, held out"] = figures(held, old_h, t["keep"], t["send"])
        print("the shipped English model on the public test files:")
        show(report["old model, held out"])

    weights = {
        "model": "logistic regression over the use-m-m2v-128 embedding and language-independent shape features",
        "embedder": EMBEDDER_ID,
        "dim": dim,
        "features": FEATURES,
        "feature_definitions": sys.modules["features_ml"].__doc__,
        "embedding_weights": [g(v) for v in beta[:dim]],
        "feature_weights": [g(v) for v in beta[dim:-1]],
        "bias": g(beta[-1]),
        "l2": l2,
        "thresholds": {"keep": keep, "send": send},
        "trained_on": {s: sum(r["set"] == s for r in rows) for s in sets},
        "cross_validation": cv,
        "held_out": ho,
    }
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "weights.json").write_text(json.dumps(weights, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    write_parity(a.out, model, [r for r in rows if r["set"] in PROJECT_SETS])
    (a.out / "report.json").write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    for f in ("weights.json", "parity.tsv"):
        print(f"{f} sha256 {hashlib.sha256((a.out / f).read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main()
