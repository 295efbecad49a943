#!/usr/bin/env python3
"""Compose the labelled turns of fixtures/devsets/turns-composed.txt from real transcripts.

Real coding sessions hold few owner turns, and fewer with pastes in them, but plenty of the
material people paste: file contents, command output, logs, web pages and agents' reports,
all in the tool results of the MIT-licensed Claude Code sessions under
shared/fixtures/transcripts/claude-code (see fixtures/devsets/PROVENANCE.md). This script
takes each such tool result, cuts a chunk of its lines (as a person would select and paste
it: Read's line-number gutter removed), and puts it between owner prose: the real owner
lines of the same sessions and a fixed pool of one-line prompts written for this dev set.
The labels are known by construction: the chunk is S (pasted), the prose P. Seeded, so the
file is the same on every run.

usage: scripts/devsets/make_turns.py SHARED_TRANSCRIPTS_DIR > fixtures/devsets/turns-composed.txt
"""
import glob
import json
import os
import random
import re
import sys

INTROS = [
    "here's what I get:",
    "this is the output",
    "look at this file",
    "the relevant part:",
    "I pasted it below",
    "this is what the tool printed, is it expected?",
    "here is the current version of the file",
    "this is from the docs I found",
    "my colleague sent me this",
    "see below",
    "here you go",
    "the search gave me this, which one should we use?",
    "it printed this and then hung",
    "this is the summary the other agent wrote",
    "context for the next task:",
]
OUTROS = [
    "what do you think?",
    "fix it please",
    "keep the same structure but make it shorter",
    "I want it to work like this but without the extra dependency",
    "can you explain why it does that?",
    "we should never ship it like this",
    "I prefer the second option",
    "make the tests pass without touching the public API",
    "",
    "",
]
OWNER_PROSE = []  # real owner lines of the sessions, filled in by read()


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(x.get("text", "") for x in content if isinstance(x, dict))
    return ""


def read(folder):
    chunks = []
    seen = set()
    for path in sorted(glob.glob(os.path.join(folder, "claude-code", "*.jsonl"))):
        names = {}
        for line in open(path, encoding="utf-8"):
            try:
                o = json.loads(line)
            except ValueError:
                continue
            msg = o.get("message") or {}
            c = msg.get("content")
            if o.get("type") == "user" and not o.get("isSidechain") and not o.get("isMeta"):
                t = c if isinstance(c, str) else ""
                if t and not t.startswith("<") and not t.startswith("[") and "\n" not in t.strip():
                    OWNER_PROSE.append(t.strip())
            if not isinstance(c, list):
                continue
            for b in c:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_use":
                    names[b.get("id")] = b.get("name")
                if b.get("type") == "tool_result":
                    t = text_of(b.get("content"))
                    name = names.get(b.get("tool_use_id"), "?")
                    if len(t) < 80 or "doesn't want to proceed" in t or "<tool_use_error>" in t:
                        continue
                    # The harness's own acknowledgements are not what people paste.
                    if name in ("TodoWrite", "KillBash") or t in seen:
                        continue
                    seen.add(t)
                    chunks.append((os.path.basename(path), name, t))
    return chunks


GUTTER = re.compile(r"^\s*\d+→")


def chunk_lines(name, text, rng):
    lines = text.split("\n")
    if name in ("Read", "Edit", "Write", "MultiEdit"):
        lines = [GUTTER.sub("", l) for l in lines if GUTTER.match(l)]
    lines = [l.rstrip() for l in lines]
    # Drop leading and trailing blanks; keep inner blank lines (a paste has them).
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return []
    n = rng.randint(3, 25)
    start = rng.randint(0, max(0, len(lines) - n)) if len(lines) > n else 0
    out = lines[start : start + n]
    while out and not out[-1].strip():
        out.pop()
    while out and not out[0].strip():
        out.pop(0)
    return out


def main():
    folder = sys.argv[1]
    rng = random.Random(27)
    chunks = read(folder)
    print("# Composed owner turns: real pasted material (tool results of the MIT-licensed Claude Code")
    print("# sessions in shared/fixtures/transcripts/claude-code, see PROVENANCE.md) between owner")
    print("# prose. Made by scripts/devsets/make_turns.py; do not edit by hand. Format: see")
    print("# turns-handwritten.txt.")
    pool = OWNER_PROSE + INTROS
    for i, (src, name, text) in enumerate(chunks):
        body = chunk_lines(name, text, rng)
        if not body:
            continue
        print(f"=== c-{i:03d} {src} {name}")
        if rng.random() < 0.85:
            print("P| " + rng.choice(pool))
        for l in body:
            print("S| " + l if l.strip() else "|")
        out = rng.choice(OUTROS)
        if out:
            print("P| " + out)


if __name__ == "__main__":
    main()
