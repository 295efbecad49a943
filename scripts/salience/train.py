#!/usr/bin/env python3
"""Train dream's salience model (crates/core/salience/) on the project's own labelled sets.

Salience: would a careful person keep this statement in an agent's memory about its
owner? Facts about the person, their work, plans, preferences, decisions and relations,
specific names, numbers, dates and places, yes; reactions, greetings, questions, the
present moment's status, passing opinions and vague remarks, no. The model is a logistic
regression over the statement's static embedding (the 128 values of dream's `minilm`
embedder, models/minilm-l6-v2-m2v-128, which Python's model2vec reads as dream's Rust code
does) and thirteen shape features (features.py, written again in
crates/core/src/selection/salience.rs). It is small (142 weights) and compiled into dream.

Deterministic, and from the repository alone: the default run rebuilds the committed files
byte for byte (compare the sha256 it prints with crates/core/salience/PROVENANCE.md).
Offline once the pinned packages are installed; under a minute on 2 cores:

    python3 -m venv /tmp/salience-venv
    /tmp/salience-venv/bin/pip install -r scripts/salience/requirements.txt
    cargo build -p dream-core --example phrase_rules
    /tmp/salience-venv/bin/python scripts/salience/train.py

Data: the project's own labelled sets, one sentence or message a line (see
docs/BENCHMARKS.md, "Salience"), every line cut into sentences and stripped of its lead-in
by dream's own phrase rules (the example `phrase_rules`); a line's sentences share its label.
  * fixtures/devsets/salience-agent.txt: the generated coding-agent sessions' owner
    sentences (crates/testkit/src/agent.rs labels).
  * fixtures/devsets/salience-coding.txt: real and hand-written coding-session prose,
    labelled by hand.
  * fixtures/devsets/salience-chat.txt: messaging-app chat between friends, written and
    labelled by hand for the project by the guideline at its top.
Nothing else is fitted on. LoCoMo (CC BY-NC 4.0) is never an input of the model, its
penalty or its thresholds: given its path (--locomo), the script only measures the shipped
model on it, held out (the model never saw it), and prints the figures (and writes them
with --report); they are not in the committed files.

Cross-validation: five folds; each set's groups (a template of the generator, a turn or
session of the coding set, a conversation of the chat set) are dealt to folds by a hash of
their name, so a group is never on both sides. Every figure called cross-validated is
measured on folds the model was not fitted on.

Choices, each by a rule on the cross-validated scores of the three sets:
  * the L2 penalty: of 0.1, 0.3, 1, 3, 10, 30, 100, the one with the best mean AUC over the sets;
  * KEEP (episodes and durable candidates): the lowest threshold, in steps of 0.01, at
    which precision is at least 0.85 on every set's candidates (sentences the phrase rules
    do not call chatter: what would reach a route);
  * SEND (what a model is shown): the highest threshold at which recall is at least 0.95
    of every set's events worth keeping (an event is a labelled line, a message: it scores
    as its best sentence), chatter included.

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
DEVSETS = ROOT / "fixtures" / "devsets"
AGENT = DEVSETS / "salience-agent.txt"
CODING = DEVSETS / "salience-coding.txt"
CHAT = DEVSETS / "salience-chat.txt"
SETS = ["agent", "coding", "chat"]  # what the model is fitted on, in this order
FOLDS = 5
L2_GRID = [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0]
NEWTON_STEPS = 30
PRECISION = 0.85
RECALL = 0.95
SIGNIFICANT = 6  # digits the weights are written with

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


def phrase_rules(binary: Path, items: list) -> list[list[dict]]:
    """dream's own sentences, lead-ins, chatter and specificity for each text."""
    stdin = "".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items)
    out = subprocess.run([str(binary)], input=stdin, capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    if len(rows) != len(items):
        sys.exit(f"{binary} answered {len(rows)} lines for {len(items)} texts")
    return rows


def fold_of(group: str) -> int:
    return zlib.crc32(group.encode()) % FOLDS


def labelled_rows(path: Path, name: str, binary: Path) -> list[dict]:
    """One of the project's labelled files (`L|kind|group|text`), each line cut by dream's
    phrase rules like any statement (a line's sentences share its label; the line is the
    event a model would be shown)."""
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
    for i, ((keep, kind, group, _), sentences) in enumerate(zip(lines, rules)):
        for s in sentences:
            rows.append(
                {
                    "set": name,
                    "text": s["body"],
                    "label": keep,
                    "fold": fold_of(group),
                    "candidate": s["chatter"] is None,
                    "specific": s["specific"],
                    "kind": kind,
                    "event": f"{name}:{i}",
                }
            )
    return rows


def project_rows(binary: Path) -> list[dict]:
    return (
        labelled_rows(AGENT, "agent", binary)
        + labelled_rows(CODING, "coding", binary)
        + labelled_rows(CHAT, "chat", binary)
    )


# LoCoMo: read for evaluation only (CC BY-NC 4.0, never copied into the repository, never
# fitted on).


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


def locomo_turns(path: Path) -> list[dict]:
    """Every turn of every conversation, with its label: worth keeping when the authors'
    observations or a question's evidence cite it."""
    turns = []
    for conv in json.loads(path.read_text()):
        cid = conv["sample_id"]
        c = conv["conversation"]
        cited = set()
        for _, by_speaker in sorted(conv.get("observation", {}).items()):
            for _, items in sorted(by_speaker.items()):
                for _, ev in items:
                    for e in ev if isinstance(ev, list) else [ev]:
                        cited.update(canonical(e))
        for q in conv.get("qa", []):
            for e in q.get("evidence", []):
                cited.update(canonical(e))
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
                        "label": ids[0] in cited,
                    }
                )
    return turns


def locomo_rows(path: Path, binary: Path) -> list[dict]:
    """Every sentence of every turn as dream's phrase rules cut it, with its turn's label
    (the measure uses the label as given; the turn is the event)."""
    turns = locomo_turns(path)
    rules = phrase_rules(binary, [{"text": t["text"], "day": t["day"]} for t in turns])
    rows = []
    for t, sentences in zip(turns, rules):
        for s in sentences:
            if s["chatter"] == "unusable":
                continue
            rows.append(
                {
                    "set": "locomo",
                    "text": s["body"],
                    "label": t["label"],
                    "candidate": s["chatter"] is None,
                    "specific": s["specific"],
                    "event": t["turn"],
                }
            )
    return rows


# ---------------------------------------------------------------- the model


def fit(x: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    """L2-penalised logistic regression (the bias unpenalised) by Newton's method: a fixed
    number of steps from zero, so the same data always gives the same weights. Every row
    weighs the same."""
    n, k = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    beta = np.zeros(k + 1)
    penalty = np.eye(k + 1) * l2
    penalty[-1, -1] = 0.0
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-(xb @ beta)))
        grad = xb.T @ (p - y) + penalty @ beta
        hess = (xb * (p * (1.0 - p))[:, None]).T @ xb + penalty
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


def labels(rows) -> np.ndarray:
    return np.array([1.0 if r["label"] else 0.0 for r in rows])


def cross_validate(x, rows, l2) -> np.ndarray:
    """Each row scored by the model fitted on the other folds."""
    y = labels(rows)
    fold = np.array([r["fold"] for r in rows])
    oof = np.zeros(len(rows))
    for f in range(FOLDS):
        beta = fit(x[fold != f], y[fold != f], l2)
        oof[fold == f] = predict(beta, x[fold == f])
    return oof


def per_set(rows, scores, name, candidates=False):
    """A set's sentences (or only its candidates): labels and scores."""
    m = np.array([r["set"] == name and (r["candidate"] or not candidates) for r in rows])
    return labels(rows)[m], scores[m]


def events(rows, scores, name):
    """A set's events (a labelled line, a LoCoMo turn): one is worth keeping when its
    label says so, and scores as its best sentence."""
    best: dict[str, list] = {}
    for r, s in zip(rows, scores):
        if r["set"] == name:
            b = best.setdefault(r["event"], [0.0, r["label"]])
            b[0] = max(b[0], s)
    y = np.array([1.0 if v[1] else 0.0 for v in best.values()])
    s = np.array([v[0] for v in best.values()])
    return y, s


GRID = [round(0.01 * i, 2) for i in range(1, 100)]


def lowest_precise(rows, scores, names) -> float:
    return next(
        (t for t in GRID if all(precision_recall(*per_set(rows, scores, n, True), t)[0] >= PRECISION for n in names)),
        GRID[-1],
    )


def highest_recalling(rows, scores, names) -> float:
    return max(
        (t for t in GRID if all(precision_recall(*events(rows, scores, n), t)[1] >= RECALL for n in names)),
        default=GRID[0],
    )


def thresholds(rows, scores, names) -> tuple[float, float]:
    for n in names:
        print(f"  {n}: precision >= {PRECISION} on candidates from {lowest_precise(rows, scores, [n])}, "
              f"recall >= {RECALL} of events up to {highest_recalling(rows, scores, [n])}")
    return lowest_precise(rows, scores, names), highest_recalling(rows, scores, names)


def none_if_nan(x: float):
    """An AUC where a set has one class only is undefined: null in JSON (NaN is not JSON)."""
    return None if x != x else x


def measured(y, s, keep, send) -> dict:
    pk, rk, nk = precision_recall(y, s, keep)
    ps, rs, ns = precision_recall(y, s, send)
    return {
        "statements": int(len(y)),
        "worth_keeping": int(y.sum()),
        "auc": none_if_nan(round(auc(y, s), 3)),
        "keep": {"precision": round(pk, 3), "recall": round(rk, 3), "kept": nk},
        "send": {"precision": round(ps, 3), "recall": round(rs, 3), "kept": ns},
    }


def figures(rows, scores, names, keep, send, unit="lines") -> dict:
    """Per set: every sentence, the candidate sentences, and the events."""
    out = {}
    for n in names:
        out[n] = measured(*per_set(rows, scores, n), keep, send)
        out[f"{n} candidates"] = measured(*per_set(rows, scores, n, True), keep, send)
        out[f"{n} {unit}"] = measured(*events(rows, scores, n), keep, send)
    return out


def show(figs: dict) -> None:
    for name, f in figs.items():
        shown = "-" if f["auc"] is None else f"{f['auc']:.3f}"
        line = f"  {name:<18} n {f['statements']:>5} keep-worthy {f['worth_keeping']:>5}  AUC {shown:>5}"
        line += f"  at KEEP: precision {f['keep']['precision']:.3f} recall {f['keep']['recall']:.3f}"
        line += f"  at SEND: recall {f['send']['recall']:.3f} ({f['send']['kept']} of {f['statements']} sent)"
        print(line)


def g(x: float) -> float:
    return float(f"{x:.{SIGNIFICANT}g}")


def shipped_beta(weights: dict) -> np.ndarray:
    return np.array(weights["embedding_weights"] + weights["feature_weights"] + [weights["bias"]])


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
    ap.add_argument("--out", type=Path, default=ROOT / "crates" / "core" / "salience")
    ap.add_argument(
        "--rules",
        type=Path,
        default=ROOT / "target" / "debug" / "examples" / "phrase_rules",
        help="the phrase_rules example (cargo build -p dream-core --example phrase_rules)",
    )
    ap.add_argument(
        "--locomo",
        type=Path,
        help="LoCoMo's dev half (locomo-dev.json): measure the shipped model on it, held out; "
        "never fitted on, and nothing of it is written into --out",
    )
    ap.add_argument("--report", type=Path, help="write the held-out LoCoMo figures here (JSON)")
    ap.add_argument(
        "--baseline",
        type=Path,
        help="another weights.json (the phase-1 model, say) to measure beside the new one on the same statements",
    )
    ap.add_argument(
        "--ablation",
        action="store_true",
        help="also measure the shape features alone, the embedding alone, and the phrase rule it would replace",
    )
    ap.add_argument(
        "--scores",
        type=Path,
        help="also write every statement's score here (JSON lines): cross-validated for the "
        "project's sets, the shipped model's for LoCoMo",
    )
    a = ap.parse_args()
    if not a.rules.exists():
        sys.exit(f"{a.rules} is missing: cargo build -p dream-core --example phrase_rules")
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(str(MODEL))
    rows = project_rows(a.rules)
    x = design(rows, model)
    print(f"{len(rows)} statements: " + ", ".join(f"{n} {sum(r['set'] == n for r in rows)}" for n in SETS))

    # The penalty: the best mean cross-validated AUC over the sets.
    best = None
    for l2 in L2_GRID:
        oof = cross_validate(x, rows, l2)
        aucs = [auc(*per_set(rows, oof, n)) for n in SETS]
        print(f"l2 {l2:>5}: AUC " + ", ".join(f"{n} {v:.3f}" for n, v in zip(SETS, aucs)))
        if best is None or np.mean(aucs) > best[0] + 1e-12:
            best = (float(np.mean(aucs)), l2, oof)
    _, l2, oof = best
    keep, send = thresholds(rows, oof, SETS)
    cv = figures(rows, oof, SETS, keep, send)
    print(f"chosen: l2 {l2}, KEEP {keep}, SEND {send} (cross-validated figures:)")
    show(cv)

    # The shipped model: fitted on every statement of the three sets.
    beta = fit(x, labels(rows), l2)
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
        "trained_on": {n: sum(r["set"] == n for r in rows) for n in SETS},
        "cross_validation": cv,
    }
    shipped = shipped_beta(weights)

    if a.ablation:
        print("ablation (cross-validated AUC, all sentences and candidates):")
        for name, cols in (("shape features alone", slice(dim, None)), ("embedding alone", slice(0, dim))):
            o = cross_validate(x[:, cols], rows, l2)
            print(f"  {name}: " + ", ".join(
                f"{n} {auc(*per_set(rows, o, n)):.3f} ({auc(*per_set(rows, o, n, True)):.3f})" for n in SETS))
        for n in SETS:
            m = [r for r in rows if r["set"] == n and r["candidate"]]
            rule = np.array([1.0 if r["specific"] else 0.0 for r in m])
            p, r_, k = precision_recall(labels(m), rule, 0.5)
            print(f"  the phrase rule `specific` on {n} candidates: precision {p:.3f} recall {r_:.3f} ({k} kept)")

    baseline = json.loads(a.baseline.read_text()) if a.baseline else None
    if baseline:
        b = baseline["thresholds"]
        print(f"the baseline {a.baseline} (KEEP {b['keep']}, SEND {b['send']}) on the same statements "
              "(held out only where it was not fitted):")
        show(figures(rows, predict(shipped_beta(baseline), x), SETS, b["keep"], b["send"]))

    locomo, lx, held = [], None, None
    if a.locomo:
        # Held out: the shipped model never saw LoCoMo, so no fold is needed.
        locomo = locomo_rows(a.locomo, a.rules)
        lx = design(locomo, model)
        held = predict(shipped, lx)
        report = {
            "locomo": str(a.locomo.name),
            "sha256": sha256(a.locomo),
            "keep": keep,
            "send": send,
            "held_out": figures(locomo, held, ["locomo"], keep, send, unit="turns"),
        }
        print(f"LoCoMo dev, held out ({len(locomo)} sentences; the model was fitted on the project's sets only):")
        show(report["held_out"])
        only = thresholds(locomo, held, ["locomo"])
        print(f"  (LoCoMo alone would choose KEEP {only[0]}, SEND {only[1]}; not used)")
        if a.ablation:
            for name, cols in (("shape features alone", slice(dim, None)), ("embedding alone", slice(0, dim))):
                bpart = fit(x[:, cols], labels(rows), l2)
                s = predict(bpart, lx[:, cols])
                print(f"  {name}, held out: AUC sentences {auc(*per_set(locomo, s, 'locomo')):.3f}, "
                      f"candidates {auc(*per_set(locomo, s, 'locomo', True)):.3f}, "
                      f"turns {auc(*events(locomo, s, 'locomo')):.3f}")
            m = [r for r in locomo if r["candidate"]]
            rule = np.array([1.0 if r["specific"] else 0.0 for r in m])
            p, r_, k = precision_recall(labels(m), rule, 0.5)
            print(f"  the phrase rule `specific` on locomo candidates: precision {p:.3f} recall {r_:.3f} ({k} kept)")
        if baseline:
            b = baseline["thresholds"]
            report["baseline"] = figures(
                locomo, predict(shipped_beta(baseline), lx), ["locomo"], b["keep"], b["send"], unit="turns"
            )
            print(f"the baseline on LoCoMo dev (KEEP {b['keep']}, SEND {b['send']}; not held out if it was fitted on it):")
            show(report["baseline"])
        if a.report:
            a.report.write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")

    if a.scores:
        with open(a.scores, "w") as out:
            for rs, ss in ((rows, oof), (locomo, held)):
                for r, s in zip(rs, ss if ss is not None else []):
                    out.write(json.dumps({k: r[k] for k in ("set", "text", "label", "candidate")}
                                         | {"score": round(float(s), 4)}, ensure_ascii=False) + "\n")

    a.out.mkdir(parents=True, exist_ok=True)
    wpath = a.out / "weights.json"
    wpath.write_text(json.dumps(weights, indent=1, allow_nan=False) + "\n")

    # Parity: what the shipped weights give for project-owned texts, as Python computes it.
    texts = PARITY + [r["text"] for r in rows][::7]
    scores = predict(shipped, design([{"text": t} for t in texts], model))
    with open(a.out / "parity.tsv", "w") as out:
        out.write("# text (JSON string)\tscore by scripts/salience/train.py (Rust must agree within 1e-5)\n")
        for t, s in zip(texts, scores):
            out.write(f"{json.dumps(t, ensure_ascii=False)}\t{s:.9f}\n")

    inputs = {
        "fixtures/devsets/salience-agent.txt": sha256(AGENT),
        "fixtures/devsets/salience-coding.txt": sha256(CODING),
        "fixtures/devsets/salience-chat.txt": sha256(CHAT),
        "models/minilm-l6-v2-m2v-128/model.safetensors": sha256(MODEL / "model.safetensors"),
        "scripts/salience/features.py": sha256(Path(__file__).parent / "features.py"),
        "scripts/salience/train.py": sha256(Path(__file__)),
    }
    provenance = PROVENANCE.format(
        inputs="\n".join(f"| {k} | `{v}` |" for k, v in inputs.items()),
        weights=sha256(wpath),
        parity=sha256(a.out / "parity.tsv"),
        l2=l2,
        grid=", ".join(f"{v:g}" for v in L2_GRID),
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
and 13 shape features, with the thresholds chosen on the project's dev sets and the
cross-validated figures they were chosen from. `parity.tsv` holds project-owned texts and
the score the training script gives each; `tests/salience.rs` holds dream's Rust to them
within 1e-5. Written by `scripts/salience/train.py`; do not edit by hand.

## Data and licences

- Fitted on the project's own labelled sets only, each under the project's licence
  (MIT OR Apache-2.0): `fixtures/devsets/salience-agent.txt` (the generated coding-agent
  sessions), `salience-coding.txt` (coding-session prose labelled by hand; the few real
  owner lines it quotes carry the licences its header names, MIT and Apache-2.0) and
  `salience-chat.txt` (messaging-app chat between friends, written and labelled by hand
  for the project). The weights, the L2 penalty and both thresholds are chosen on these
  sets alone.
- Over the embedding of dream's `minilm` table (Apache-2.0, see
  `models/minilm-l6-v2-m2v-128/README.md`).
- No parameter here is derived from LoCoMo (CC BY-NC 4.0): it is not an input of the
  fit, of the penalty or of the thresholds, and nothing of it is in these files. Given its
  path (`--locomo`), the script only measures the shipped model on LoCoMo's development
  half, held out, and prints the figures (docs/BENCHMARKS.md, "Salience").

## How it was made

```sh
python3 -m venv /tmp/salience-venv
/tmp/salience-venv/bin/pip install -r scripts/salience/requirements.txt
cargo build -p dream-core --example phrase_rules
/tmp/salience-venv/bin/python scripts/salience/train.py
```

Deterministic, from the repository alone: the same inputs give these files byte for byte
(one BLAS thread, a fixed number of Newton steps from zero, weights written with 6
significant digits).

- Statements: {rows} ({n}), every one weighing the same.
- L2 penalty {l2} (the best mean cross-validated AUC over the three sets of {grid}).
- KEEP = {keep}: the lowest threshold at which cross-validated precision is at least 0.85
  on every set's candidates. SEND = {send}: the highest at which cross-validated recall is
  at least 0.95 of every set's events worth keeping.

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
