#!/usr/bin/env python3
"""How sentences end in scripts written without spaces: on XPersona's validation turns in
Japanese, Chinese and Korean (and, beside them, French and English), count the stops inside
a turn (not at its end) and what follows each: white space (Rust's `phrases::sentences`
already cuts there), a letter (it does not: the sentence runs on), another stop or a
closing bracket or quote. The extension stated in docs/BENCHMARKS.md ("Sentence
splitting") follows from these counts.

    /work/venvs/ml/bin/python scripts/measure_split.py
"""
from __future__ import annotations

import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "salience"))
import public_data  # noqa: E402

STOPS = {".": "ascii", "!": "ascii", "?": "ascii", "\u3002": "wide", "\uff01": "wide", "\uff1f": "wide",
         "\uff0e": "wide", "\uff61": "wide"}
CLOSING = "\u300d\u300f\uff09)\"'\u201d\u2019\u3011"


def main() -> None:
    for lang in ("Jp", "Zh", "Ko", "Fr", "En"):
        c = collections.Counter()
        turns = 0
        for d in public_data.xpersona(lang, "valid"):
            for _, t in d["turns"]:
                turns += 1
                for k, ch in enumerate(t[:-1]):
                    if ch not in STOPS:
                        continue
                    nxt = t[k + 1]
                    kind = ("space" if nxt.isspace() else "stop" if nxt in STOPS else
                            "closing" if nxt in CLOSING else "digit" if nxt.isdigit() else "letter")
                    c[(ch, kind)] += 1
        print(f"{lang}: {turns} turns; " + ", ".join(f"{ch!r} then {kind} {n}" for (ch, kind), n in sorted(c.items())))


if __name__ == "__main__":
    main()
