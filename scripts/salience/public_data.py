#!/usr/bin/env python3
"""Public training data for dream's multilingual salience scorer, and the readers the
multilingual embedder's distillation shares (scripts/distill_multilingual.py).

Reads the public persona-chat sets from their read-only mirrors (git bare repositories,
each file through `git show HEAD:<path>`, refused unless its sha256 is the one pinned in
FILES), cuts every persona sentence and turn into sentences, labels them K (a durable,
informative statement about the speaker or their world, worth keeping in memory) or N
(chatter: greetings, questions, reactions, acknowledgements, small talk of the moment,
requests) by the labelling functions of `label` (no list of words of any language: a
persona sentence is K, a question mark makes N, and the teacher embedding's distance to
the speakers' own persona sentences decides the rest, or discards it), and writes
  <out>/public-valid.tsv, <out>/public-test.tsv   one row a sentence: label (K, N, or empty
      when discarded), lang, source, split, group (the conversation), kind (persona or
      turn), speaker, turn, why (the rule that decided), own, any (the cosines), text
  <out>/report.json   counts, thresholds, the input files' sha256, hand agreement
outside the repository (default /work/salience-public): derived copies of CC BY data are
not committed; this script regenerates them from the named files.

    /work/venvs/ml/bin/pip install -r scripts/requirements-multilingual.txt
    nice -n 10 /work/venvs/ml/bin/python scripts/salience/public_data.py [--out DIR]

Splits stay apart: validation files for fitting and cross-validation, test files held out
(Synthetic-Persona-Chat's personas are PersonaChat's, shared within a split). Each source
gives a split its first conversations in file order (CAP: 150 for valid, 100 for test), so
the teacher pass stays near 10 minutes on 2 busy cores.

Agreement with a hand-labelled sample (fixtures/devsets/salience-public-handlabels.tsv:
200 validation sentences, 50 each of Synthetic-Persona-Chat and XPersona English, French
and Italian, labelled by hand before the comparison): 184 of 200 agree (92.0%), Cohen's
kappa 0.84; by source spc 49/50, xpersona-en 44/50, xpersona-fr 47/50, xpersona-it 44/50;
by rule: persona sentence 63/64, question 52/54, far from every known persona 43/46, near
its own persona 26/36 (the weakest: "i am ok wish my allergy medicine would kick in", "c'est
cher de voyager avec des enfants" sit near a persona about allergies or children and are
the moment's talk). The rules were fixed before the hand labels and not changed after.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MIRROR = Path("/work/.mirror")
XPERSONA_GIT = MIRROR / "HLTCHKUST+Xpersona" / "repo"
SPC_GIT = MIRROR / "google-research-datasets+Synthetic-Persona-Chat" / "repo"

# Every input file, read with `git -C <repo> show HEAD:<path>` from the bare mirrors, and
# refused unless its sha256 is the one pinned here. XPersona: MIT (its LICENSE, sha256
# 60670289c800f9e3fa97fd2d41f3f8fbb39afa737c4a5761b1a78286e4131128), commit
# 1da049a1bbf3b01548f98cc23ba75ef871416e50. Synthetic-Persona-Chat: CC BY 4.0 (its README),
# commit 1f367a0f05d388ca96ebbbc9e5752ab19ac76510.
XPERSONA_LANGS = ["En", "Fr", "It", "Id", "Jp", "Ko", "Zh"]
ISO = {"En": "en", "Fr": "fr", "It": "it", "Id": "id", "Jp": "ja", "Ko": "ko", "Zh": "zh"}
FILES = {
    ("xpersona", "En", "valid"): ("dataset/En_persona_valid.json", "08ed3d41c5b0681c2d125a5312b43d926a8a5aa1d10a5df655d17f4c56dab635"),
    ("xpersona", "En", "test"): ("dataset/En_persona_test.json", "8baa09a8064a22967544f501821aa114393a59339c0559da8afa160966ba87c9"),
    ("xpersona", "Fr", "valid"): ("dataset/Fr_persona_split_valid_human_annotated.json", "8ad86b05aabfadedba7863828b1cc4fdff0926ebf476121268089ac7ed9af149"),
    ("xpersona", "Fr", "test"): ("dataset/Fr_persona_split_test_human_annotated.json", "0783fcf01bdf4c27ec28120a9b23bf4f0248e97ae476e03cd7e759cb2667ab23"),
    ("xpersona", "It", "valid"): ("dataset/It_persona_split_valid_human_annotated.json", "720dc91d3f9bc6a56ac229c6800cde63c71677a3db8d0ace7a59a7f94d89df3d"),
    ("xpersona", "It", "test"): ("dataset/It_persona_split_test_human_annotated.json", "690103031791fd5c6763176a074cdb65e249adc784e2d577110c2d9430a02a87"),
    ("xpersona", "Jp", "valid"): ("dataset/Jp_persona_split_valid_human_annotated.json", "a86bb811364d100bc77ddc8038265df1e01bbc3be095e56c6ec8f179e6365d75"),
    ("xpersona", "Jp", "test"): ("dataset/Jp_persona_split_test_human_annotated.json", "682fed16148517097437942088d225bd728cb7b41aa390559681ae73e5e6848f"),
    ("xpersona", "Ko", "valid"): ("dataset/Ko_persona_split_valid_human_annotated.json", "188470f863f639946bc8248a9f6aa1e589b41ec61792b88b81e7a95c72deeae0"),
    ("xpersona", "Ko", "test"): ("dataset/Ko_persona_split_test_human_annotated.json", "f7ac6bd2aec7014a28d34bb34dceed653b389ce25d21ca770e77142578dc70a6"),
    ("xpersona", "Zh", "valid"): ("dataset/Zh_persona_split_valid_human_annotated.json", "cfa90117d73fe294a1b776b2d1c7b53711bfcd724f5833204726c910dad5482d"),
    ("xpersona", "Zh", "test"): ("dataset/Zh_persona_split_test_human_annotated.json", "0767a4a27c765277792597502f57ea8bb80bf7be94613b0d833107f66a7d3512"),
    ("xpersona", "Id", "valid"): ("dataset/Id_persona_split_valid_human_annotated.json", "8f70cab662f082ae3ee2abce9e9cac619ebc632a2820d93414a59005dbf75d7e"),
    ("xpersona", "Id", "test"): ("dataset/Id_persona_split_test_human_annotated.json", "e0bcd3c02f318f4381c42798a2ce6e0a10237b6998793076fbf97f633a9f2563"),
    ("spc", "En", "valid"): ("data/Synthetic-Persona-Chat_valid.csv", "e8128d2b7b0eed8064715cb1d71cdd241a3fa28ddf6fb80ece5c8156c1fd819d"),
    ("spc", "En", "test"): ("data/Synthetic-Persona-Chat_test.csv", "531356d642b426ef8fc4d65446330cb34c7b473a4cf482ad12a8cf7838fe52a8"),
}


def read_pinned(source: str, lang: str, split: str) -> bytes:
    path, want = FILES[(source, lang, split)]
    repo = XPERSONA_GIT if source == "xpersona" else SPC_GIT
    data = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True, check=True).stdout
    got = hashlib.sha256(data).hexdigest()
    if got != want:
        sys.exit(f"{repo}:{path} has sha256 {got}, not the pinned {want}: refusing to read it")
    return data


def clean(text: str) -> str:
    return " ".join(text.split())


def xpersona(lang: str, split: str) -> list[dict]:
    """Dialogues as {"id", "persona": [...], "turns": [(speaker, text), ...]}. XPersona's
    persona belongs to the responder (the second text of each pair, speaker "B"); the
    other side's ("A") is not given. `__SILENCE__` (an empty opening) is dropped."""
    out = []
    for i, d in enumerate(json.loads(read_pinned("xpersona", lang, split))):
        turns = []
        for pair in d["dialogue"]:
            for speaker, text in zip("AB", pair):
                text = clean(text)
                if text and text != "__SILENCE__":
                    turns.append((speaker, text))
        out.append({"id": f"xpersona-{lang}-{split}-{i}", "persona": {"B": [clean(p) for p in d["persona"] if clean(p)], "A": None}, "turns": turns})
    return out


def spc(split: str) -> list[dict]:
    """Synthetic-Persona-Chat conversations: both speakers' personas, turns as "User 1:" /
    "User 2:" lines (speakers "A" and "B")."""
    rows = list(csv.reader(io.StringIO(read_pinned("spc", "En", split).decode("utf-8"))))
    out = []
    for i, r in enumerate(rows[1:]):
        p1 = [clean(x) for x in r[0].split("\n") if clean(x)]
        p2 = [clean(x) for x in r[1].split("\n") if clean(x)]
        turns = []
        for line in r[2].split("\n"):
            line = line.strip()
            for tag, speaker in (("User 1:", "A"), ("User 2:", "B")):
                if line.startswith(tag):
                    text = clean(line[len(tag):])
                    if text:
                        turns.append((speaker, text))
        out.append({"id": f"spc-{split}-{i}", "persona": {"A": p1, "B": p2}, "turns": turns})
    return out


def corpus_texts(split: str = "valid") -> list[tuple[str, str, str]]:
    """(language, text, dialogue id) of every persona sentence and turn of the named split,
    in file order, each distinct text once (with the dialogue it is first met in): the
    embedder's distillation corpus (valid only; the test files stay for held-out measures)."""
    seen, out = set(), []
    for lang in XPERSONA_LANGS:
        for d in xpersona(lang, split):
            for t in d["persona"]["B"] + [t for _, t in d["turns"]]:
                if t not in seen:
                    seen.add(t)
                    out.append((ISO[lang], t, d["id"]))
    for d in spc(split):
        for t in d["persona"]["A"] + d["persona"]["B"] + [t for _, t in d["turns"]]:
            if t not in seen:
                seen.add(t)
                out.append(("en", t, d["id"]))
    return out


# ---------------------------------------------------------------- sentences and labels

STOPS = ".!?"
WIDE_STOPS = "\u3002\uff01\uff1f"  # 。！？ end a sentence with no space after them
QUESTION = ("?", "\uff1f", "\u061f")


def sentences(text: str) -> list[str]:
    """A turn cut into sentences: after `.`, `!` or `?` followed by a space or the end (as
    dream's `phrases::sentences` cuts), and after the full-width stops 。！？ (which need no
    space). Runs of stops stay with their sentence."""
    out, cur = [], ""
    for k, ch in enumerate(text):
        cur += ch
        nxt = text[k + 1] if k + 1 < len(text) else ""
        if (ch in STOPS and (nxt == "" or nxt.isspace())) or (ch in WIDE_STOPS and nxt not in WIDE_STOPS + STOPS):
            if cur.strip():
                out.append(cur.strip())
            cur = ""
    if cur.strip():
        out.append(cur.strip())
    return out


def is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith(QUESTION)


def rows_of(source: str, lang: str, split: str, dialogues: list[dict]) -> list[dict]:
    """Every persona sentence and every sentence of every turn, unlabelled."""
    rows = []
    for d in dialogues:
        for speaker in "AB":
            for p in d["persona"][speaker] or []:
                rows.append({"source": source, "lang": lang, "split": split, "group": d["id"], "speaker": speaker,
                             "kind": "persona", "text": p})
        for turn, (speaker, text) in enumerate(d["turns"]):
            for s in sentences(text):
                rows.append({"source": source, "lang": lang, "split": split, "group": d["id"], "speaker": speaker,
                             "kind": "turn", "turn": turn, "text": s})
    return rows


CAP = {"valid": 150, "test": 100}  # conversations a source gives a split (its first ones, in file order)


def all_rows(split: str, cap: int | None = None) -> list[dict]:
    rows = []
    for lang in XPERSONA_LANGS:
        rows += rows_of(f"xpersona-{ISO[lang]}", ISO[lang], split, xpersona(lang, split)[:cap])
    rows += rows_of("spc", "en", split, spc(split)[:cap])
    return rows


def teacher_vectors(texts: list[str], cache: Path):
    """USE-m's vector of each text (the distillation's teacher), cached by text."""
    import numpy as np

    known: dict[str, int] = {}
    vecs = np.zeros((0, 512), dtype=np.float32)
    if cache.with_suffix(".json").exists() and cache.with_suffix(".npy").exists():
        known = {t: i for i, t in enumerate(json.loads(cache.with_suffix(".json").read_text()))}
        vecs = np.load(cache.with_suffix(".npy"))
    todo = sorted({t for t in texts if t not in known})
    if todo:
        sys.path.insert(0, str(ROOT / "scripts"))
        from distill_multilingual import FastTeacher

        use = FastTeacher()
        differ = use.check(todo[::max(1, len(todo) // 2000)])
        print(f"teacher: tokenisation differs from the wheel's on {differ:.2%} of a sample", file=sys.stderr, flush=True)
        if differ > 0.01:
            sys.exit("the fast tokenisation does not reproduce the teacher's: refusing to label with it")
        new = np.empty((len(todo), 512), dtype=np.float32)
        for k in range(0, len(todo), 4096):
            new[k:k + 4096] = use.encode(todo[k:k + 4096])
            print(f"teacher: {k + len(new[k:k + 4096])}/{len(todo)}", file=sys.stderr, flush=True)
        order = list(known) + todo
        vecs = np.vstack([vecs, new])
        known = {t: i for i, t in enumerate(order)}
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.with_suffix(".json").write_text(json.dumps(order, ensure_ascii=False))
        np.save(cache.with_suffix(".npy"), vecs)
    return vecs[[known[t] for t in texts]].astype("float64")


NULL_HIGH = 0.95  # a turn is K when closer to its speaker's persona than 95% of chance matches
NULL_LOW = 0.50  # and N when no closer to any known persona than the median chance match


def label(rows: list[dict], vecs) -> dict:
    """Label rows in place ("K", "N" or "" for discarded) and return the thresholds.

    The labelling functions, in order:
      1. a persona sentence is K (a durable statement about its speaker, by construction);
      2. a turn's sentence ending with a question mark is N;
      3. `own` is the best cosine of the sentence to its own speaker's persona sentences,
         `any` to every persona sentence known in its conversation (both speakers' in
         Synthetic-Persona-Chat; XPersona gives only the responder's). The null
         distribution is each sentence's best cosine to the persona sentences of an
         unrelated conversation (the next one of the same source, both speakers); per
         source, `high` is its 95th and `low` its 50th percentile;
      4. a sentence whose own persona is known is K when own >= high;
      5. it is N when every persona of its conversation is known and any < low (in
         XPersona, where the asker's persona is not given, only the responder's sentences
         can be N this way, with any = own);
      6. anything else is discarded (the middle: neither clearly a persona fact nor
         clearly far from every persona fact).
    """
    import numpy as np

    by_group: dict[str, dict] = {}
    for i, r in enumerate(rows):
        g = by_group.setdefault(r["group"], {"A": [], "B": [], "known": True, "source": r["source"]})
        if r["kind"] == "persona":
            g[r["speaker"]].append(i)
    for g in by_group.values():
        g["known"] = bool(g["A"]) and bool(g["B"])
    unit = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)

    def best(i, idx):
        return float((unit[idx] @ unit[i]).max()) if idx else float("nan")

    groups_by_source: dict[str, list[str]] = {}
    for name, g in by_group.items():
        groups_by_source.setdefault(g["source"], []).append(name)
    nxt = {}
    for names in groups_by_source.values():
        for k, name in enumerate(names):
            nxt[name] = names[(k + 1) % len(names)]
    null: dict[str, list[float]] = {}
    for i, r in enumerate(rows):
        if r["kind"] != "turn":
            continue
        g = by_group[r["group"]]
        other = by_group[nxt[r["group"]]]
        r["own"] = best(i, g[r["speaker"]])
        r["any"] = best(i, g["A"] + g["B"])
        null.setdefault(r["source"], []).append(best(i, other["A"] + other["B"]))
    thresholds = {s: {"high": float(np.quantile(v, NULL_HIGH)), "low": float(np.quantile(v, NULL_LOW))} for s, v in null.items()}
    for r in rows:
        if r["kind"] == "persona":
            r["label"], r["why"] = "K", "persona"
            continue
        t = thresholds[r["source"]]
        g = by_group[r["group"]]
        own_known = bool(g[r["speaker"]])
        if is_question(r["text"]):
            r["label"], r["why"] = "N", "question"
        elif own_known and r["own"] >= t["high"]:
            r["label"], r["why"] = "K", "near own persona"
        elif own_known and (g["known"] or r["speaker"] == "B") and r["any"] < t["low"]:
            r["label"], r["why"] = "N", "far from every known persona"
        else:
            r["label"], r["why"] = "", "middle"
    return thresholds


COLUMNS = ["label", "lang", "source", "split", "group", "kind", "speaker", "turn", "why", "own", "any", "text"]


def write_tsv(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\t".join(COLUMNS) + "\n")
        for r in rows:
            vals = []
            for c in COLUMNS:
                v = r.get(c, "")
                if isinstance(v, float):
                    v = "" if v != v else f"{v:.4f}"
                vals.append(str(v).replace("\t", " "))
            f.write("\t".join(vals) + "\n")


def read_tsv(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    return [dict(zip(head, line.split("\t"))) for line in lines[1:]]


HAND = ROOT / "fixtures" / "devsets" / "salience-public-handlabels.tsv"


def agreement(rows: list[dict]) -> dict:
    """The labelling functions against the hand labels of HAND (matched by conversation, speaker, turn and text)."""
    import collections

    auto = {(r["source"], r["group"], r["speaker"], str(r.get("turn", "")), r["text"]): r for r in rows}
    lines = [line for line in HAND.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    head = lines[0].split("\t")
    hand = [dict(zip(head, line.split("\t"))) for line in lines[1:]]
    by_source, by_why = collections.Counter(), collections.defaultdict(lambda: [0, 0])
    agree = n = k_auto = k_hand = 0
    for h in hand:
        r = auto.get((h["source"], h["group"], h["speaker"], h["turn"], h["text"]))
        if r is None or r["label"] not in ("K", "N"):
            continue
        n += 1
        ok = r["label"] == h["hand"]
        agree += ok
        by_source[h["source"]] += ok
        by_why[r["why"]][0] += ok
        by_why[r["why"]][1] += 1
        k_auto += r["label"] == "K"
        k_hand += h["hand"] == "K"
    po = agree / n
    pa, ph = k_auto / n, k_hand / n
    pe = pa * ph + (1 - pa) * (1 - ph)
    return {"n": n, "agree": agree, "kappa": round((po - pe) / (1 - pe), 3),
            "by source": dict(by_source), "by rule (agree, of)": {k: tuple(v) for k, v in by_why.items()}}


def main() -> None:
    import argparse
    import collections

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="/work/salience-public", help="where the labelled TSV goes (outside the repository)")
    a = ap.parse_args()
    out = Path(a.out)
    report = {"files": {f"{s}:{p}": h for (s, _, _), (p, h) in FILES.items()}}
    for split in ("valid", "test"):
        rows = all_rows(split, CAP[split])
        vecs = teacher_vectors([r["text"] for r in rows], out / "teacher-cache")
        report[f"thresholds {split}"] = label(rows, vecs)
        write_tsv(rows, out / f"public-{split}.tsv")
        counts = collections.Counter((r["source"], r["label"] or "-") for r in rows)
        report[f"counts {split}"] = {f"{s} {lab}": n for (s, lab), n in sorted(counts.items())}
        if split == "valid":
            report["hand agreement"] = agreement(rows)
            print(f"agreement with {HAND.name}: {report['hand agreement']}")
        print(f"{split}: {len(rows)} rows -> {out / f'public-{split}.tsv'}")
        for (s, lab), n in sorted(counts.items()):
            print(f"  {s:14} {lab} {n}")
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
