#!/usr/bin/env python3
"""What LoCoMo dev would measure if the salience score decided episodes (phase 2 of issue 28).

Cheap what-ifs, computed here rather than by a replay: grounded retention, memory size and
precision (as `dream eval locomo` measures them, crates/engine/src/eval/grounded.rs) of

  * memory: the lines a replay kept (`dream eval locomo PATH --keep DIR`), keeping only
    those scoring at least t, at most n per session (ranked by score; durable facts, which
    rest on the durable rule, are kept as they are);
  * candidates: every sentence of every turn that dream's phrase rules do not call
    chatter (what a reflector may propose from a single mention), optionally only those
    `phrases::specific` calls specific, dated and with relative dates written out as an
    episode is, kept when scoring at least t, at most n per session.

Scores are held out: the shipped model (crates/core/salience/weights.json, or --weights)
was fitted on the project's own labelled sets only, so it scores every LoCoMo line without
having seen it, and dream would compute the same scores (the weights as shipped).

    cargo build -p dream-core --example phrase_rules
    dream eval locomo ../shared/eval/locomo/locomo-dev.json --keep /tmp/replay
    /tmp/salience-venv/bin/python scripts/salience/whatif.py --locomo ../shared/eval/locomo/locomo-dev.json --replay /tmp/replay
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train  # noqa: E402  (sets the BLAS threads before numpy)

QUESTION_CATEGORIES = (1, 2, 4)
WEIGHTS = train.ROOT / "crates" / "core" / "salience" / "weights.json"


def words(text: str) -> int:
    return len([t for t in train.normalize(text).split(" ") if t])


def vocab(text: str) -> set[str]:
    return {train.stem(t) for t in train.normalize(text).split(" ") if t}


def questions(conv: dict) -> list[tuple[list[str], set[str]]]:
    c = conv["conversation"]
    names = set(train.content(c["speaker_a"]) + train.content(c["speaker_b"]))
    out = []
    for q in conv["qa"]:
        if q.get("category") not in QUESTION_CATEGORIES or "answer" not in q:
            continue
        answer = train.content(str(q["answer"]))
        if not answer:
            continue
        asked = {w for w in train.content(q["question"]) if w not in names and w not in answer}
        out.append((answer, asked))
    return out


def grounded(qs, texts: list[str]) -> int:
    vs = [vocab(t) for t in texts]
    return sum(1 for answer, asked in qs if any(all(w in v for w in answer) and asked & v for v in vs))


def memory_lines(replay: Path, cid: str) -> list[dict]:
    out = []
    for f in sorted((replay / cid / "memory").glob("*.md")):
        for line in f.read_text().splitlines():
            m = re.match(r"^- (.*?) <!--(.*)-->\s*$", line)
            if not m:
                continue
            ev = re.search(r"\bev=(\S+)", m.group(2))
            cites = ev.group(1).split(",") if ev else []
            body = re.sub(r"^\d{1,2} [A-Z][a-z]+ \d{4}(, [^:]{1,40})?: ", "", m.group(1))
            body = re.sub(r"^[A-Z][\w'-]*( [A-Z][\w'-]*){0,2}: ", "", body)
            out.append(
                {
                    "text": m.group(1),
                    "body": re.sub(r" \[[^\]]*\]", "", body),
                    "cites": cites,
                    "episode": f.name == "episodes.md",
                    "session": cites[0].rsplit(":", 1)[0] if cites else "",
                }
            )
    return out


def choose(items, t, n):
    by = defaultdict(list)
    for it in items:
        if it["score"] >= t:
            by[it["session"]].append(it)
    out = []
    for key in sorted(by):
        out += sorted(by[key], key=lambda i: -i["score"])[:n]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--locomo", required=True, type=Path)
    ap.add_argument("--replay", required=True, type=Path, help="the --keep folder of a `dream eval locomo` run")
    ap.add_argument("--rules", type=Path, default=train.ROOT / "target" / "debug" / "examples" / "phrase_rules")
    ap.add_argument("--weights", type=Path, default=WEIGHTS, help="the model to score with (default: the shipped one)")
    a = ap.parse_args()
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(str(train.MODEL))
    weights = json.loads(a.weights.read_text())
    beta = train.shipped_beta(weights)
    threshold = weights["thresholds"]["keep"]  # KEEP
    convs = json.loads(a.locomo.read_text())
    turns = train.locomo_turns(a.locomo)
    rules = train.phrase_rules(a.rules, [{"text": t["text"], "day": t["day"]} for t in turns])
    transcript_words = sum(
        words(t["text"] + (f"\n[shared an image: {t['blip_caption']}]" if t.get("blip_caption") else ""))
        for c in convs
        for k, v in c["conversation"].items()
        if re.fullmatch(r"session_\d+", k)
        for t in v
    )
    memory, candidates, qs, labelled = {}, {}, {}, {}
    for conv in convs:
        cid = conv["sample_id"]
        qs[cid] = questions(conv)
        labelled[cid] = {t["turn"] for t in turns if t["conv"] == cid and t["label"]}
        mem = memory_lines(a.replay, cid)
        cand = []
        for t, sentences in zip(turns, rules):
            if t["conv"] != cid:
                continue
            for s in sentences:
                if s["chatter"] is None:
                    day = train.datetime.strptime(t["day"], "%Y-%m-%d")
                    cand.append(
                        {
                            "text": f"{day.day} {day.strftime('%B %Y')}, {t['speaker']}: {s['dated']}",
                            "body": s["body"],
                            "cites": [t["turn"]],
                            "episode": True,
                            "specific": s["specific"],
                            "session": t["turn"].rsplit(":", 1)[0],
                        }
                    )
        for items in (mem, cand):
            if items:
                scores = train.predict(beta, train.design([{"text": i["body"]} for i in items], model))
                for i, s in zip(items, scores):
                    i["score"] = float(s)
        memory[cid], candidates[cid] = mem, cand

    nq = sum(len(v) for v in qs.values())

    def measure(pick) -> str:
        g = w = lines = precise = 0
        for cid in memory:
            kept = pick(cid)
            g += grounded(qs[cid], [i["text"] for i in kept])
            w += sum(words(i["text"]) for i in kept)
            lines += len(kept)
            precise += sum(1 for i in kept if any(c in labelled[cid] for c in i["cites"]))
        return (
            f"grounded {g / nq:.3f}  size {w / transcript_words:.3f}  "
            f"precision {precise / max(1, lines):.3f}  lines {lines}"
        )

    print(f"memory as replayed:                 {measure(lambda c: memory[c])}")
    for t in (0.3, 0.4, 0.5, threshold, 0.7):
        for n in (3, 5, 1000):
            pick = lambda c, t=t, n=n: [i for i in memory[c] if not i["episode"]] + choose(
                [i for i in memory[c] if i["episode"]], t, n
            )
            print(f"memory, episodes >= {t:.2f}, <= {n:>4}/session: {measure(pick)}")
    for name, keep in (("non-chatter", lambda i: True), ("specific", lambda i: i["specific"])):
        print(f"candidates {name}, all:            {measure(lambda c, k=keep: [i for i in candidates[c] if k(i)])}")
        for t in (0.5, threshold, 0.7):
            for n in (3, 5, 8, 1000):
                pick = lambda c, t=t, n=n, k=keep: choose([i for i in candidates[c] if k(i)], t, n)
                print(f"candidates {name}, >= {t:.2f}, <= {n:>4}/session: {measure(pick)}")
    # Specific sentences from a lower threshold, the others only from a high one.
    for ts, tn in ((0.5, 0.8), (threshold, 0.85), (0.6, 0.85)):
        for n in (6, 8, 1000):
            pick = lambda c, ts=ts, tn=tn, n=n: choose(
                [i for i in candidates[c] if i["score"] >= (ts if i["specific"] else tn)], 0.0, n
            )
            print(f"candidates specific >= {ts}, others >= {tn}, <= {n:>4}/session: {measure(pick)}")


if __name__ == "__main__":
    main()
