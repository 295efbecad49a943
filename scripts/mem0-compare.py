#!/usr/bin/env python3
"""mem0 on dream's token workload, through the same fake server (a benchmark, not a test).

docs/BENCHMARKS.md compares dream's tokens with mem0's on the same events. This script
measures mem0's side so anyone can run it again:

1. it makes a throwaway venv and installs mem0 from PyPI into it (`pip install
   mem0ai==VERSION`), unless `--venv` names one that has it;
2. for each `--events` size it starts `dream-bench fake-server`, which writes the token
   scenario's events (the same seed, days and sizes as `dream-bench --scenario tokens`) and
   serves the tests' fake OpenAI-compatible server on loopback: it counts tokens as dream's
   benchmark does (a quarter of the characters, per message overhead), answers mem0's
   extraction call with each user line as a memory, and embeddings with its builtin vectors;
3. it feeds the events to mem0 (`Memory.add`) in each `--modes` mode: `session` (one add
   per session, the session's events as its messages) and `event` (one add per event, as a
   hook calling mem0 on every message does), with mem0's local Qdrant and history database
   in a temporary folder and its telemetry off;
4. it reads the calls and tokens the server counted (`GET /fake/usage`) and prints one
   JSON object per size and mode, and a table.

With `--stream FILE` (a LoCoMo file, read where it is), the events are the stream
scenario's instead (`dream-bench --scenario stream`: every conversation's turns as one
person's stream, oldest first), one add per LoCoMo session in `session` mode, each turn's
speaker before its text as in dream's prompt.

Usage (from the repository root, after `cargo build --release -p dream-bench`):

    python3 scripts/mem0-compare.py --events 1000,5000
    python3 scripts/mem0-compare.py --venv /path/to/venv-with-mem0 --events 1000
    python3 scripts/mem0-compare.py --stream PATH/locomo-dev.json --modes session

Only loopback addresses are used, apart from PyPI when the venv is made.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEM0_VERSION = "2.2.1"
# The fake server's builtin embedder answers vectors of this many dimensions.
EMBED_DIMS = 64


def make_venv(folder):
    """A throwaway venv with mem0 from PyPI; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", folder], check=True)
    py = os.path.join(folder, "bin", "python")
    subprocess.run(
        [py, "-m", "pip", "install", "--quiet", f"mem0ai=={MEM0_VERSION}"], check=True
    )
    return py


def usage(url):
    base = url.rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    with urllib.request.urlopen(base + "/v1/fake/usage", timeout=30) as r:
        return json.load(r)


def run_one(args, py, size, mode, work):
    events_file = os.path.join(work, f"events-{size}.jsonl")
    command = [
        args.bench,
        "fake-server",
        "--events-out",
        events_file,
        "--events",
        str(size),
        "--days",
        str(args.days),
        "--seed",
        str(args.seed),
    ]
    if args.stream:
        command += ["--stream", os.path.abspath(args.stream)]
    server = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1"):
            sys.exit(f"dream-bench fake-server did not print its URL (got {url!r})")
        store = tempfile.mkdtemp(prefix=f"mem0-{size}-{mode}-", dir=work)
        env = dict(os.environ)
        env.update(
            {
                "MEM0_TELEMETRY": "False",
                "MEM0_DIR": store,
                "OPENAI_API_KEY": "fake",
                "HOME": store,
            }
        )
        started = time.time()
        child = subprocess.run(
            [py, os.path.abspath(__file__), "--child", url, events_file, mode, store],
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.time() - started
        if child.returncode != 0:
            sys.stderr.write(child.stderr[-4000:])
            sys.exit(f"mem0 failed on {size} events, mode {mode}")
        added = json.loads(child.stdout.strip().splitlines()[-1])
        u = usage(url)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    if args.stream:
        with open(events_file) as f:
            size = sum(1 for line in f if line.strip())
    return {
        "events": size,
        "mode": mode,
        "adds": added["adds"],
        "memories": added["memories"],
        "calls": u["total"]["calls"],
        "prompt_tokens": u["total"]["prompt_tokens"],
        "completion_tokens": u["total"]["completion_tokens"],
        "tokens": u["total"]["total_tokens"],
        "tokens_per_event": round(u["total"]["total_tokens"] / max(size, 1), 2),
        "embedding_tokens": u["embeddings"]["tokens"],
        "wall_s": round(wall, 1),
    }


def child(url, events_file, mode, store):
    """Runs inside the venv: feed the events to mem0 and print what it stored."""
    from mem0 import Memory

    config = {
        "llm": {
            "provider": "openai",
            "config": {"model": "gpt-4o-mini", "openai_base_url": url, "api_key": "fake"},
        },
        "embedder": {
            "provider": "openai",
            "config": {
                "model": "text-embedding-3-small",
                "openai_base_url": url,
                "api_key": "fake",
                "embedding_dims": EMBED_DIMS,
            },
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "bench",
                "path": os.path.join(store, "qdrant"),
                "embedding_model_dims": EMBED_DIMS,
                "on_disk": True,
            },
        },
        "history_db_path": os.path.join(store, "history.db"),
    }
    m = Memory.from_config(config)
    events = [json.loads(line) for line in open(events_file) if line.strip()]
    events.sort(key=lambda e: e["ts"])

    def message(e):
        actor = e.get("actor") or ""
        role = "assistant" if actor == "assistant" else "user"
        # A named speaker (a conversation between people) before the text, as dream's
        # prompt shows it.
        named = actor not in ("", "user", "assistant")
        return {"role": role, "content": f"{actor}: {e['text']}" if named else e["text"]}

    adds = 0
    if mode == "event":
        for e in events:
            m.add([message(e)], user_id="bench")
            adds += 1
    else:
        sessions = {}
        for e in events:
            sessions.setdefault(e.get("session") or e["id"], []).append(e)
        for _, evs in sorted(sessions.items(), key=lambda kv: kv[1][0]["ts"]):
            m.add([message(e) for e in evs], user_id="bench")
            adds += 1
    stored = m.get_all(filters={"user_id": "bench"}, top_k=1000000)
    n = len(stored.get("results", stored) if isinstance(stored, dict) else stored)
    print(json.dumps({"adds": adds, "memories": n}))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:6])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", default="1000,5000", help="sizes, comma-separated")
    p.add_argument("--days", type=int, default=7, help="as dream-bench --token-days")
    p.add_argument("--seed", type=int, default=7, help="as dream-bench --seed")
    p.add_argument("--modes", default="session,event", help="session, event or both")
    p.add_argument("--venv", help="a venv that has mem0ai (else a throwaway one is made)")
    p.add_argument(
        "--stream",
        help="a LoCoMo file: its turns as one stream (dream-bench --scenario stream) "
        "instead of the synthetic events; --events is then unused",
    )
    p.add_argument(
        "--bench",
        default=os.path.join(ROOT, "target", "release", "dream-bench"),
        help="the dream-bench binary",
    )
    p.add_argument("--json", action="store_true", help="print only the JSON lines")
    args = p.parse_args()
    if not os.path.exists(args.bench):
        sys.exit(f"{args.bench} not found: cargo build --release -p dream-bench")
    with tempfile.TemporaryDirectory(prefix="mem0-compare-") as work:
        if args.venv:
            py = os.path.join(args.venv, "bin", "python")
        else:
            print(f"installing mem0ai=={MEM0_VERSION} into a throwaway venv...", file=sys.stderr)
            py = make_venv(os.path.join(work, "venv"))
        rows = []
        sizes = [0] if args.stream else [int(s) for s in args.events.split(",") if s]
        for size in sizes:
            for mode in [m for m in args.modes.split(",") if m]:
                row = run_one(args, py, size, mode, work)
                rows.append(row)
                print(json.dumps(row), flush=True)
        if not args.json:
            print("\n| events | mode | adds | calls | tokens | tokens/event |")
            print("|---|---|---|---|---|---|")
            for r in rows:
                print(
                    f"| {r['events']:,} | one add per {r['mode']} | {r['adds']:,} | "
                    f"{r['calls']:,} | {r['tokens']:,} | {r['tokens_per_event']} |"
                )


if __name__ == "__main__":
    main()
