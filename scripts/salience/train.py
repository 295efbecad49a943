#!/usr/bin/env python3
"""Train dream's salience model (crates/core/salience/) and measure it by cross-validation.

Salience: would a careful person keep this statement in an agent's memory about its
owner? Facts about the person, their work, plans, preferences, decisions and relations,
specific names, numbers, dates and places, yes; reactions, greetings, questions, the
present moment's status, passing opinions and vague remarks, no. The model is a logistic
regression over the statement's static embedding (the 128 values of dream's `minilm`
embedder, models/minilm-l6-v2-m2v-128, which Python's model2vec reads as dream's Rust code
does) and thirteen shape features (features.py, written again in
crates/core/src/selection/salience.rs). It is small (142 weights) and compiled into dream.

Deterministic: the default run rebuilds the committed files byte for byte (compare the
sha256 it prints with crates/core/salience/PROVENANCE.md). Offline once the pinned packages
are installed; about a minute on 2 cores:

    python3 -m venv /tmp/salience-venv
    /tmp/salience-venv/bin/pip install -r scripts/salience/requirements.txt
    cargo build -p dream-core --example phrase_rules
    /tmp/salience-venv/bin/python scripts/salience/train.py --locomo ../shared/eval/locomo/locomo-dev.json

Data (the three labelled dev sets; see docs/BENCHMARKS.md, "Salience"):
  * LoCoMo's development half (CC BY-NC 4.0: read from its path, never copied into the
    repository). Every sentence of every turn, cut and stripped of its lead-in by dream's
    own phrase rules (the example `phrase_rules`). A turn is worth keeping when the
    authors' observations or a question's evidence cite it. Training takes a sentence of
    such a turn as positive only when it shares content words with what cites it (two, or
    one for a sentence of three content words or fewer): "Hey Mel!" in a cited turn is not
    what was cited. Sentences of turns nothing cites are negative. Measures use the turn's
    label as given.
  * fixtures/devsets/salience-agent.txt: the generated coding-agent sessions' owner
    sentences (crates/testkit/src/agent.rs labels).
  * fixtures/devsets/salience-coding.txt: real and hand-written coding-session prose,
    labelled by hand.

Cross-validation: five folds. LoCoMo's five conversations are the five folds (leave one
conversation out); the other two sets' groups (a template of the generator, a turn or
session of the coding set) are dealt to folds by a hash of their name, so a group is never
on both sides. Every figure printed is measured on folds the model was not fitted on.

Choices, each by a rule on the cross-validated scores of the dev sets:
  * the L2 penalty: of 1, 3, 10, 30, the one with the best mean AUC over the three sets;
  * KEEP (episodes and durable candidates): the lowest threshold, in steps of 0.01, at
    which precision is at least 0.85 on every set's candidates (sentences the phrase rules
    do not call chatter: what would reach a route);
  * SEND (what a model is shown): the highest threshold at which recall is at least 0.95
    on every set's events (a LoCoMo turn scores as its best sentence; the other sets'
    statements are events of one sentence), chatter included.

Outputs (in --out, default crates/core/salience/): weights.json (the model, thresholds,
cross-validated figures), parity.tsv (project-owned texts and the score Python gives each,
which dream's Rust must match), PROVENANCE.md.
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import zlib  # noqa: E402
from datetime import datetime  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from features import FEATURES, features  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "minilm-l6-v2-m2v-128"
AGENT = ROOT / "fixtures" / "devsets" / "salience-agent.txt"
CODING = ROOT / "fixtures" / "devsets" / "salience-coding.txt"
FOLDS = 5
L2_GRID = [1.0, 3.0, 10.0, 30.0]
SMALL_SET_WEIGHT = 5.0  # a row of the two coding sets weighs 5 LoCoMo rows (they are 2% of the rows)
NEWTON_STEPS = 30
PRECISION = 0.85
RECALL = 0.95
SIGNIFICANT = 6  # digits the weights are written with
SETS = ["locomo", "agent", "coding"]

# ---------------------------------------------------------------- S6 words (measures.rs)

STOPWORDS = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will
    just don should now im ive youre youve youll hes shes theyre weve dont doesnt didnt isnt
    arent wasnt werent cant wont thats lets also would could shall may might must""".split()
)


def normalize(text: str) -> str:
    out, last = [], True
    for ch in text:
        if ord(ch) < 128:
            if ch.isalnum():
                out.append(ch.lower())
                last = False
            elif ch != "'" and not last:
                out.append(" ")
                last = True
            continue
        if ch in "\u2019\u2018":
            continue
        if ch.isalnum():
            out.append(ch.lower())
            last = False
        elif not last:
            out.append(" ")
            last = True
    return "".join(out).rstrip(" ")


def stem(t: str) -> str:
    for suffix in ("'s", "\u2019s"):
        if t.endswith(suffix):
            t = t[: -len(suffix)]
    if len(t) > 3 and t.endswith("s") and not t.endswith("ss") and not t.endswith("us"):
        t = t[:-1]
    return t


def content(text: str) -> list[str]:
    """Content words in first-seen order (a list, so no set order leaks into the output)."""
    seen = []
    for t in normalize(text).split(" "):
        if t and t not in STOPWORDS:
            s = stem(t)
            if s not in seen:
                seen.append(s)
    return seen


# ---------------------------------------------------------------- data


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def canonical(raw: str) -> list[str]:
    out = []
    for p in re.split(r"[;, ]", raw):
        m = re.match(r"^D:?0*(\d+):0*(\d+)$", p.strip())
        if m:
            out.append(f"D{m.group(1)}:{m.group(2)}")
    return out


def session_day(raw: str) -> str:
    m = re.match(r"\s*\d{1,2}:\d{2}\s*(?:am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", raw)
    return datetime.strptime(f"{m.group(1)} {m.group(2)} {m.group(3)}", "%d %B %Y").strftime("%Y-%m-%d")


def phrase_rules(binary: Path, items: list[dict]) -> list[list[dict]]:
    """dream's own sentences, lead-ins, chatter and specificity for each text."""
    stdin = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)
    out = subprocess.run([str(binary)], input=stdin, capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    if len(rows) != len(items):
        sys.exit(f"{binary} answered {len(rows)} lines for {len(items)} texts")
    return rows


def locomo_turns(path: Path) -> list[dict]:
    """Every turn of every conversation, with its label and what cites it."""
    turns = []
    for conv in json.loads(path.read_text()):
        cid = conv["sample_id"]
        c = conv["conversation"]
        speakers = [c["speaker_a"].lower(), c["speaker_b"].lower()]
        cites: dict[str, list[str]] = {}
        for _, by_speaker in sorted(conv.get("observation", {}).items()):
            for _, items in sorted(by_speaker.items()):
                for text, ev in items:
                    for e in ev if isinstance(ev, list) else [ev]:
                        for i in canonical(e):
                            cites.setdefault(i, []).append(text)
        for q in conv.get("qa", []):
            for e in q.get("evidence", []):
                for i in canonical(e):
                    cites.setdefault(i, []).append(f"{q.get('answer', '')} {q['question']}")
        sessions = sorted(int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k))
        for n in sessions:
            day = session_day(c[f"session_{n}_date_time"])
            for t in c[f"session_{n}"]:
                ids = canonical(t.get("dia_id", ""))
                if not ids or not t.get("text", "").strip():
                    continue
                turns.append(
                    {
                        "conv": cid,
                        "session": n,
                        "turn": f"{cid}:{ids[0]}",
                        "speaker": t["speaker"],
                        "text": t["text"],
                        "day": day,
                        "label": ids[0] in cites,
                        "cites": cites.get(ids[0], []),
                        "speakers": speakers,
                    }
                )
    return turns


def locomo_rows(path: Path, binary: Path) -> list[dict]:
    turns = locomo_turns(path)
    rules = phrase_rules(binary, [{"text": t["text"], "day": t["day"]} for t in turns])
    convs = sorted({t["conv"] for t in turns})
    rows = []
    for t, sentences in zip(turns, rules):
        for s in sentences:
            if s["chatter"] == "unusable":
                continue
            words = [w for w in content(s["body"]) if w not in t["speakers"]]
            best = 0
            for cite in t["cites"]:
                cw = content(cite)
                best = max(best, sum(1 for w in words if w in cw))
            cited = t["label"] and (best >= 2 or (best >= 1 and len(words) <= 3))
            rows.append(
                {
                    "set": "locomo",
                    "text": s["body"],
                    "label": t["label"],
                    # training target: 1, 0, or None (a sentence of a cited turn that is
                    # not what was cited: left out of training)
                    "target": 1.0 if cited else (0.0 if not t["label"] else None),
                    "fold": convs.index(t["conv"]) % FOLDS,
                    "candidate": s["chatter"] is None,
                    "specific": s["specific"],
                    "turn": t["turn"],
                }
            )
    return rows


def fold_of(group: str) -> int:
    return zlib.crc32(group.encode()) % FOLDS


def labelled_rows(path: Path, name: str, binary: Path) -> list[dict]:
    """One of the project's labelled files (`L|kind|group|text`), each line cut by dream's
    phrase rules like any statement (a line's sentences share its label)."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, kind, group, text = line.split("|", 3)
        if name == "agent":  # a generator template is the group: names and numbers masked
            group = re.sub(r"\b[A-Z][a-z]+\b|\d+(?:\.\d+)?", "X", text)
        lines.append((label == "K", kind, group, text))
    rules = phrase_rules(binary, [t for *_, t in lines])
    rows = []
    for (keep, kind, group, _), sentences in zip(lines, rules):
        for s in sentences:
            rows.append(
                {
                    "set": name,
                    "text": s["body"],
                    "label": keep,
                    "target": 1.0 if keep else 0.0,
                    "fold": fold_of(group),
                    "candidate": s["chatter"] is None,
                    "specific": s["specific"],
                    "kind": kind,
                }
            )
    return rows


# ---------------------------------------------------------------- the model


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float) -> np.ndarray:
    """L2-penalised logistic regression (the bias unpenalised) by Newton's method: a fixed
    number of steps from zero, so the same data always gives the same weights."""
    n, k = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    beta = np.zeros(k + 1)
    penalty = np.eye(k + 1) * l2
    penalty[-1, -1] = 0.0
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-(xb @ beta)))
        grad = xb.T @ (w * (p - y)) + penalty @ beta
        hess = (xb * (w * p * (1.0 - p))[:, None]).T @ xb + penalty
        beta = beta - np.linalg.solve(hess, grad)
    return beta


def predict(beta: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(x @ beta[:-1] + beta[-1])))


def auc(y: np.ndarray, s: np.ndarray) -> float:
    """Area under the ROC curve (ties count half)."""
    pos, neg = s[y == 1], s[y == 0]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    greater = sum(int((p > neg).sum()) for p in pos)
    ties = sum(int((p == neg).sum()) for p in pos)
    return (greater + 0.5 * ties) / (len(pos) * len(neg))


def precision_recall(y: np.ndarray, s: np.ndarray, t: float) -> tuple[float, float, int]:
    kept = s >= t
    tp = int((kept & (y == 1)).sum())
    return (tp / kept.sum() if kept.any() else 1.0), (tp / max(1, int((y == 1).sum()))), int(kept.sum())


def design(rows: list[dict], model) -> np.ndarray:
    texts = [r["text"] for r in rows]
    emb = np.asarray(model.encode(texts), dtype=np.float64)
    feats = np.array([features(t) for t in texts], dtype=np.float64)
    return np.hstack([emb, feats])


def cross_validate(x, rows, l2) -> np.ndarray:
    target = np.array([r["target"] if r["target"] is not None else -1.0 for r in rows])
    trainable = target >= 0
    weight = np.array([1.0 if r["set"] == "locomo" else SMALL_SET_WEIGHT for r in rows])
    fold = np.array([r["fold"] for r in rows])
    oof = np.zeros(len(rows))
    for f in range(FOLDS):
        train = (fold != f) & trainable
        beta = fit(x[train], target[train], weight[train], l2)
        oof[fold == f] = predict(beta, x[fold == f])
    return oof


def per_set(rows, oof, name, candidates=False):
    m = np.array([r["set"] == name and (r["candidate"] or not candidates) for r in rows])
    y = np.array([1.0 if r["label"] else 0.0 for r in rows])[m]
    return y, oof[m]


def turn_level(rows, oof):
    """LoCoMo as the issue labels it: a turn is kept when one of its sentences is; its
    score is its best sentence's."""
    best: dict[str, list] = {}
    for r, s in zip(rows, oof):
        if r["set"] == "locomo":
            b = best.setdefault(r["turn"], [0.0, r["label"]])
            b[0] = max(b[0], s)
    y = np.array([1.0 if v[1] else 0.0 for v in best.values()])
    s = np.array([v[0] for v in best.values()])
    return y, s


def sent_units(rows, oof, name):
    """What a model is shown is an event: for LoCoMo a turn (its best sentence's score),
    for the other two sets the labelled statement."""
    if name == "locomo":
        return turn_level(rows, oof)
    return per_set(rows, oof, name)


GRID = [round(0.01 * i, 2) for i in range(1, 100)]


def lowest_precise(rows, oof, names) -> float:
    return next(
        (t for t in GRID if all(precision_recall(*per_set(rows, oof, n, True), t)[0] >= PRECISION for n in names)),
        GRID[-1],
    )


def highest_recalling(rows, oof, names) -> float:
    return max(
        (t for t in GRID if all(precision_recall(*sent_units(rows, oof, n), t)[1] >= RECALL for n in names)),
        default=GRID[0],
    )


def thresholds(rows, oof) -> tuple[float, float]:
    for n in SETS:
        print(f"  {n}: precision >= {PRECISION} on candidates from {lowest_precise(rows, oof, [n])}, "
              f"recall >= {RECALL} of what is sent up to {highest_recalling(rows, oof, [n])}")
    return lowest_precise(rows, oof, SETS), highest_recalling(rows, oof, SETS)


def figures(rows, oof, keep, send) -> dict:
    out = {}
    for n in SETS:
        for cand in (False, True):
            y, s = per_set(rows, oof, n, cand)
            pk, rk, nk = precision_recall(y, s, keep)
            ps, rs, ns = precision_recall(y, s, send)
            out[f"{n}{' candidates' if cand else ''}"] = {
                "statements": int(len(y)),
                "worth_keeping": int(y.sum()),
                "auc": none_if_nan(round(auc(y, s), 3)),
                "keep": {"precision": round(pk, 3), "recall": round(rk, 3), "kept": nk},
                "send": {"precision": round(ps, 3), "recall": round(rs, 3), "kept": ns},
            }
    y, s = turn_level(rows, oof)
    pk, rk, nk = precision_recall(y, s, keep)
    ps, rs, ns = precision_recall(y, s, send)
    out["locomo turns"] = {
        "statements": int(len(y)),
        "worth_keeping": int(y.sum()),
        "auc": round(auc(y, s), 3),
        "keep": {"precision": round(pk, 3), "recall": round(rk, 3), "kept": nk},
        "send": {"precision": round(ps, 3), "recall": round(rs, 3), "kept": ns},
    }
    return out


def none_if_nan(x: float):
    """An AUC where a set has one class only is undefined: null in JSON (NaN is not JSON)."""
    return None if x != x else x


def g(x: float) -> float:
    return float(f"{x:.{SIGNIFICANT}g}")


# ---------------------------------------------------------------- parity texts

PARITY = [
    "",
    "   ",
    "I live in Porto with my partner Ines.",
    "I prefer Rust over Go for new services.",
    "We shipped version 2.3 of the scheduler yesterday.",
    "I'm flying to Tallinn next Friday for the customer visit.",
    "hmm let me think about lunch",
    "The build finished in 3 minutes.",
    "nice, that worked!",
    "hey, good morning!",
    "Why is the linter complaining about line 40?",
    "Can you open a pull request for this?",
    "Please rename the helper to parse_amount.",
    "Use pnpm, never npm, in this monorepo.",
    "the deadline for the beta is 14 May, we promised it to the design partners",
    "I'm doing the dishes right now.",
    "I'm currently reading a book about compilers.",
    "We're moving to Berlin in March.",
    "You'll love it, I promise!",
    "Thanks so much, see you tomorrow!",
    "That's awesome.",
    "It was so much fun.",
    "My sister Ana is visiting from Lisbon this weekend.",
    "I've been a nurse for 12 years.",
    "I'm gonna start a pottery class next month.",
    "I can't eat gluten, so no bread for me.",
    "Note: the staging database is reset every Sunday night.",
    "ok",
    "???",
    "!!!",
    "I",
    "I'm",
    "'quoted' words and ''double'' apostrophes",
    "Café au lait in Zürich costs 5 francs.",
    "\u00c9milie and Ren\u00e9 met at \u00c9cole Polytechnique in 2019.",
    "\u6211\u4f4f\u5728\u4e1c\u4eac\u3002",
    "Emoji only \U0001F600\U0001F600 and words",
    "I\u2019m allergic to cats \u2014 and I\u2019ve told you so.",
    "A line\nbroken in two: Name here.",
    "x" * 600,
    "Mr. Smith met Dr. Jones. They talked? Yes: About Paris!",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--locomo", required=True, type=Path, help="LoCoMo's dev half (locomo-dev.json)")
    ap.add_argument("--out", type=Path, default=ROOT / "crates" / "core" / "salience")
    ap.add_argument(
        "--rules",
        type=Path,
        default=ROOT / "target" / "debug" / "examples" / "phrase_rules",
        help="the phrase_rules example (cargo build -p dream-core --example phrase_rules)",
    )
    ap.add_argument(
        "--ablation",
        action="store_true",
        help="also measure the shape features alone, the embedding alone, and the phrase rule it would replace",
    )
    ap.add_argument("--scores", type=Path, help="also write every dev statement's cross-validated score here (JSON lines)")
    a = ap.parse_args()
    if not a.rules.exists():
        sys.exit(f"{a.rules} is missing: cargo build -p dream-core --example phrase_rules")
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(str(MODEL))
    rows = locomo_rows(a.locomo, a.rules) + labelled_rows(AGENT, "agent", a.rules) + labelled_rows(
        CODING, "coding", a.rules
    )
    x = design(rows, model)
    print(f"{len(rows)} statements: " + ", ".join(f"{n} {sum(r['set'] == n for r in rows)}" for n in SETS))

    # The penalty: the best mean cross-validated AUC over the three sets.
    best = None
    for l2 in L2_GRID:
        oof = cross_validate(x, rows, l2)
        aucs = [auc(*per_set(rows, oof, n)) for n in SETS]
        print(f"l2 {l2:>4}: AUC " + ", ".join(f"{n} {v:.3f}" for n, v in zip(SETS, aucs)))
        if best is None or np.mean(aucs) > best[0] + 1e-12:
            best = (float(np.mean(aucs)), l2, oof)
    _, l2, oof = best
    keep, send = thresholds(rows, oof)
    cv = figures(rows, oof, keep, send)
    print(f"chosen: l2 {l2}, KEEP {keep}, SEND {send}")
    for name, f in cv.items():
        shown = "-" if f["auc"] is None else f"{f['auc']:.3f}"
        line = f"  {name:<18} n {f['statements']:>5} keep-worthy {f['worth_keeping']:>5}  AUC {shown:>5}"
        line += f"  at KEEP: precision {f['keep']['precision']:.3f} recall {f['keep']['recall']:.3f}"
        if "send" in f:
            line += f"  at SEND: recall {f['send']['recall']:.3f} ({f['send']['kept']} of {f['statements']} sent)"
        print(line)
    if a.ablation:
        dim = x.shape[1] - len(FEATURES)
        for name, part in (("shape features alone", x[:, dim:]), ("embedding alone", x[:, :dim])):
            o = cross_validate(part, rows, l2)
            print(f"  {name}: AUC " + ", ".join(
                f"{n} {auc(*per_set(rows, o, n)):.3f} (candidates {auc(*per_set(rows, o, n, True)):.3f})"
                for n in SETS))
        for n in SETS:
            m = [r for r in rows if r["set"] == n and r["candidate"]]
            y = np.array([1.0 if r["label"] else 0.0 for r in m])
            rule = np.array([1.0 if r["specific"] else 0.0 for r in m])
            p, r_, k = precision_recall(y, rule, 0.5)
            print(f"  the phrase rule `specific` on {n} candidates: precision {p:.3f} recall {r_:.3f} ({k} kept)")
    if a.scores:
        with open(a.scores, "w") as out:
            for r, s in zip(rows, oof):
                out.write(json.dumps({k: r[k] for k in ("set", "text", "label", "candidate")} | {"score": round(float(s), 4)}) + "\n")

    # The shipped model: fitted on every statement that has a training target.
    target = np.array([r["target"] if r["target"] is not None else -1.0 for r in rows])
    trainable = target >= 0
    weight = np.array([1.0 if r["set"] == "locomo" else SMALL_SET_WEIGHT for r in rows])
    beta = fit(x[trainable], target[trainable], weight[trainable], l2)
    dim = x.shape[1] - len(FEATURES)
    weights = {
        "model": "logistic regression over the minilm embedding and shape features",
        "embedder": "minilm-l6-v2-m2v-128-v1",
        "dim": dim,
        "features": FEATURES,
        "embedding_weights": [g(v) for v in beta[:dim]],
        "feature_weights": [g(v) for v in beta[dim:-1]],
        "bias": g(beta[-1]),
        "l2": l2,
        "thresholds": {"keep": keep, "send": send},
        "cross_validation": cv,
    }
    a.out.mkdir(parents=True, exist_ok=True)
    wpath = a.out / "weights.json"
    wpath.write_text(json.dumps(weights, indent=1, allow_nan=False) + "\n")

    # Parity: what the shipped weights give for project-owned texts, as Python computes it.
    shipped = np.array(weights["embedding_weights"] + weights["feature_weights"] + [weights["bias"]])
    texts = PARITY + [r["text"] for r in rows if r["set"] != "locomo"][::7]
    px = design([{"text": t} for t in texts], model)
    scores = predict(shipped, px)
    with open(a.out / "parity.tsv", "w") as out:
        out.write("# text (JSON string)\tscore by scripts/salience/train.py (Rust must agree within 1e-5)\n")
        for t, s in zip(texts, scores):
            out.write(f"{json.dumps(t, ensure_ascii=False)}\t{s:.9f}\n")

    inputs = {
        "LoCoMo dev half (path given, not in the repository)": sha256(a.locomo),
        "fixtures/devsets/salience-agent.txt": sha256(AGENT),
        "fixtures/devsets/salience-coding.txt": sha256(CODING),
        "models/minilm-l6-v2-m2v-128/model.safetensors": sha256(MODEL / "model.safetensors"),
        "scripts/salience/features.py": sha256(Path(__file__).parent / "features.py"),
        "scripts/salience/train.py": sha256(Path(__file__)),
    }
    provenance = PROVENANCE.format(
        inputs="\n".join(f"| {k} | `{v}` |" for k, v in inputs.items()),
        weights=sha256(wpath),
        parity=sha256(a.out / "parity.tsv"),
        l2=l2,
        keep=keep,
        send=send,
        rows=len(rows),
        n=", ".join(f"{n} {sum(r['set'] == n for r in rows)}" for n in SETS),
    )
    (a.out / "PROVENANCE.md").write_text(provenance)
    print(f"weights.json sha256 {sha256(wpath)}")
    print(f"parity.tsv sha256 {sha256(a.out / 'parity.tsv')}")


PROVENANCE = """# The salience model: provenance

`weights.json` is dream's salience model (`crates/core/src/selection/salience.rs` compiles it in with
`include_str!`): a logistic regression over a statement's `minilm` embedding (128 values)
and 13 shape features, with the thresholds chosen on the dev sets and the
cross-validated figures they were chosen from. `parity.tsv` holds project-owned texts and
the score the training script gives each; `tests/salience.rs` holds dream's Rust to them
within 1e-5. Written by `scripts/salience/train.py`; do not edit by hand.

## Licences

- Learned from: LoCoMo's development half (snap-research/locomo, `data/locomo10.json`,
  conversations conv-26, conv-30, conv-41, conv-42, conv-43; CC BY-NC 4.0), read from its
  path at training time: no text of it is in the repository or in these files, which hold
  142 numbers, two thresholds and figures; and the project's own labelled sets
  (`fixtures/devsets/salience-agent.txt`, `salience-coding.txt`; their quoted lines carry
  the licences their header names, MIT and Apache-2.0).
- Over the embedding of dream's `minilm` table (Apache-2.0, see
  `models/minilm-l6-v2-m2v-128/README.md`).
- LoCoMo's licence is non-commercial: whether weights fitted on it may ship in a
  commercial build is for the project to decide (docs/BENCHMARKS.md, "Salience", says what
  each set contributes).

## How it was made

```sh
python3 -m venv /tmp/salience-venv
/tmp/salience-venv/bin/pip install -r scripts/salience/requirements.txt
cargo build -p dream-core --example phrase_rules
/tmp/salience-venv/bin/python scripts/salience/train.py --locomo ../shared/eval/locomo/locomo-dev.json
```

Deterministic: the same inputs give these files byte for byte (one BLAS thread, a fixed
number of Newton steps from zero, weights written with 6 significant digits).

- Statements: {rows} ({n}).
- L2 penalty {l2} (the best mean cross-validated AUC of 1, 3, 10, 30).
- KEEP = {keep}: the lowest threshold at which cross-validated precision is at least 0.85
  on every set's candidates. SEND = {send}: the highest at which cross-validated recall is
  at least 0.95 of every set's events.

## Inputs and outputs (sha256)

| input | sha256 |
|---|---|
{inputs}

| output | sha256 |
|---|---|
| weights.json | `{weights}` |
| parity.tsv | `{parity}` |
"""

if __name__ == "__main__":
    main()
