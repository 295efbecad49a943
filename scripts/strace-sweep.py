#!/usr/bin/env python3
"""Fault-injection sweep of dream's writing commands with strace (issue 29).

Why this exists: `cargo test` sweeps dream's own crash points (`DREAM_CRASH_AT`,
`DREAM_FAIL_AT`, `DREAM_FAIL_FROM`), which only exist where dream's code marks them. This
script checks the same promise from outside, at the system calls themselves (libgit2's and
SQLite's writes included): for each command and each of the first N calls of fsync,
rename, write and unlink, it kills the process there (SIGKILL), or makes that one call fail
(EIO, ENOSPC), or makes every such call fail from there on (EIO), then runs the same
command again with no fault, and compares what a user can observe (history messages and
trees, every file of the working tree and of HOME, `git status`, the state's rows, any
journal or temporary file left) with one uninterrupted run. A failed run that says
"nothing was changed" must also equal the repository before the command. A command that
does not end within 60 s counts as stuck.

    scripts/strace-sweep.py [--bin target/debug/dream] [--n 20] [--commands accept,run,init,hooks]

Needs strace, git and python3; it writes only under a temporary folder. Prints one line per
command and a total: points tried, differences, stuck.
"""

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

NOW = "2026-11-06T21:00:00Z"
LATER = "2026-11-07T08:00:00Z"
SYSCALLS = ["fsync", "rename", "write", "unlink"]
MODES = ["kill", "EIO", "ENOSPC", "EIO+"]


def event(ts, session, text):
    return json.dumps({"ts": ts, "kind": "message", "actor": "user", "session": session, "text": text}) + "\n"


class Sweep:
    def __init__(self, binary, work):
        self.bin = os.path.abspath(binary)
        self.work = work

    def env(self, home, repo):
        e = {k: v for k, v in os.environ.items() if not k.startswith(("DREAM_", "GIT_"))}
        e.update({
            "HOME": home,
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_CONFIG_NOSYSTEM": "1",
            "NO_COLOR": "1",
            "DREAM_REPO": repo,
            "DREAM_EPISODES_ENABLED": "false",
        })
        e.pop("CLAUDE_CONFIG_DIR", None)
        e.pop("CODEX_HOME", None)
        return e

    def dream(self, place, args, strace=None, timeout=60):
        repo, home = os.path.join(place, "repo"), os.path.join(place, "home")
        argv = [a.replace("{repo}", repo) for a in args]
        cmd = [self.bin] + argv
        if strace:
            cmd = ["strace", "-f", "-o", "/dev/null", "-e", strace, "--"] + cmd
        try:
            p = subprocess.run(cmd, env=self.env(home, repo), cwd=place, capture_output=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
            return p.returncode, p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            return None, "stuck"

    def template(self, name, build):
        place = os.path.join(self.work, "template-" + name)
        os.makedirs(os.path.join(place, "home"))
        os.makedirs(os.path.join(place, "repo"))
        args = build(place)
        return place, args

    def print_of(self, place):
        repo, home = os.path.join(place, "repo"), os.path.join(place, "home")
        out = {}

        def files(root, skip_private):
            got = {}
            for d, dirs, names in os.walk(root):
                rel_d = os.path.relpath(d, root)
                if skip_private and rel_d == ".":
                    dirs[:] = [x for x in dirs if x not in (".git", ".dream")]
                for n in names:
                    p = os.path.join(d, n)
                    try:
                        data = open(p, "rb").read()
                    except OSError:
                        data = b"<unreadable>"
                    data = data.replace(place.encode(), b"{place}")
                    got[os.path.relpath(p, root)] = hashlib.sha256(data).hexdigest()
            return got

        out["files"] = files(repo, True)
        out["home"] = files(home, False)
        if os.path.isdir(os.path.join(repo, ".git")):
            g = lambda *a: subprocess.run(["git", "-C", repo] + list(a), capture_output=True,
                                          env=self.env(home, repo)).stdout.decode("utf-8", "replace")
            out["history"] = g("log", "--first-parent", "--format=%B%x00%T%x01")
            out["status"] = g("status", "--porcelain", "--untracked-files=all")
            out["locks"] = sorted(n for n in ("index.lock", "HEAD.lock", "config.lock")
                                  if os.path.exists(os.path.join(repo, ".git", n)))
        db = os.path.join(repo, ".dream", "state.sqlite")
        if os.path.exists(db):
            try:
                c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
                rows = {}
                for t, q in [
                    ("events", "SELECT id, text, reflected_cycle, ingested_cycle FROM events ORDER BY id"),
                    ("vetoes", "SELECT id, kind, text, reason, decision FROM vetoes ORDER BY id"),
                    ("watermarks", "SELECT file, offset, line FROM watermarks ORDER BY file"),
                    ("cycles", "SELECT id, kind, now FROM cycles ORDER BY id"),
                ]:
                    rows[t] = c.execute(q).fetchall()
                c.close()
                out["state"] = rows
            except sqlite3.Error as e:
                out["state"] = "unreadable: %s" % e
        dd = os.path.join(repo, ".dream")
        out["leftovers"] = sorted(n for n in (os.listdir(dd) if os.path.isdir(dd) else [])
                                  if n.startswith(".dream-tmp-") or n == "journal.json")
        return out

    def run_command(self, name, template, args, n):
        base = os.path.join(self.work, name + "-base")
        shutil.copytree(template, base, symlinks=True)
        before = self.print_of(base)
        code, err = self.dream(base, args)
        if code != 0:
            sys.exit("%s: the uninterrupted run failed: %s" % (name, err))
        want = self.print_of(base)
        tried = differ = stuck = 0
        notes = []
        for sc in self.syscalls:
            for k in range(1, n + 1):
                for mode in MODES:
                    if mode == "kill":
                        inject = "inject=%s:signal=KILL:when=%d" % (sc, k)
                    elif mode == "EIO+":
                        inject = "inject=%s:error=EIO:when=%d+" % (sc, k)
                    else:
                        inject = "inject=%s:error=%s:when=%d" % (sc, mode, k)
                    place = os.path.join(self.work, "%s-%s-%d-%s" % (name, sc, k, mode.replace("+", "from")))
                    shutil.copytree(template, place, symlinks=True)
                    tried += 1
                    code, err = self.dream(place, args, strace=inject)
                    bad = None
                    if code is None:
                        stuck += 1
                        bad = "stuck"
                    elif code == 0 and mode != "kill":
                        got = self.print_of(place)
                        if got != want:
                            keys = [x for x in want if want.get(x) != got.get(x)]
                            bad = "exit 0 but not the uninterrupted result (differs in %s)" % keys
                    elif code != 0 and "nothing was changed" in err:
                        got = self.print_of(place)
                        if mode == "EIO+":
                            got["leftovers"] = [x for x in got["leftovers"] if x != "journal.json"]
                        if got != before:
                            bad = "says nothing was changed, but something was"
                    if bad is None:
                        rc, rerr = self.dream(place, args)
                        if rc is None:
                            stuck += 1
                            bad = "the rerun is stuck"
                        elif self.print_of(place) != want:
                            got = self.print_of(place)
                            keys = [x for x in want if want.get(x) != got.get(x)]
                            bad = "after the rerun, differs in %s (rerun: %s)" % (keys, rerr.strip().splitlines()[:1])
                    if bad:
                        differ += 1
                        notes.append("%s %s #%d %s: %s [%s]" % (name, sc, k, mode, bad, err.strip().splitlines()[:1]))
                    shutil.rmtree(place, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
        return tried, differ, stuck, notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="target/debug/dream")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--commands", default="accept,run,init,hooks")
    ap.add_argument("--syscalls", default=",".join(SYSCALLS))
    a = ap.parse_args()
    if shutil.which("strace") is None:
        sys.exit("strace is not installed (apt-get install strace)")
    work = tempfile.mkdtemp(prefix="dream-strace-")
    s = Sweep(a.bin, work)
    s.syscalls = a.syscalls.split(",")

    def init_only(place):
        return ["init", "{repo}", "--now", NOW]

    def with_events(place):
        repo = os.path.join(place, "repo")
        code, err = s.dream(place, ["init", "{repo}", "--now", "2026-11-01T09:00:00Z"])
        assert code == 0, err
        with open(os.path.join(repo, "events", "a.jsonl"), "w") as f:
            f.write(event("2026-11-01T09:00:00Z", "s1", "I live in Lisbon with my two cats."))
            f.write(event("2026-11-02T09:00:00Z", "s2", "As I said, I live in Lisbon with my two cats."))
            f.write(event("2026-11-02T15:00:00Z", "s3", "I live in Lisbon with my two cats."))
        code, err = s.dream(place, ["run", "--now", "2026-11-02T21:00:00Z"])
        assert code == 0, err
        with open(os.path.join(repo, "events", "b.jsonl"), "w") as f:
            f.write(event("2026-11-05T09:00:00Z", "s4", "I live in Porto with my two cats."))
            f.write(event("2026-11-06T09:00:00Z", "s5", "Yes, I live in Porto with my two cats."))
            f.write(event("2026-11-06T15:00:00Z", "s6", "I live in Porto with my two cats."))
        return ["run", "--now", NOW]

    def with_card(place):
        with_events(place)
        code, err = s.dream(place, ["run", "--now", NOW])
        assert code == 0, err
        repo, home = os.path.join(place, "repo"), os.path.join(place, "home")
        out = subprocess.run([s.bin, "review", "list", "--json"], env=s.env(home, repo),
                             capture_output=True).stdout
        cards = json.loads(out)
        if not cards:
            sys.exit("the accept template has no card")
        card = next((c for c in cards if c.get("supersedes")), cards[0])
        return ["review", "accept", card["id"], "--now", LATER]

    def with_settings(place):
        code, err = s.dream(place, ["init", "{repo}", "--now", "2026-11-01T09:00:00Z"])
        assert code == 0, err
        claude = os.path.join(place, "home", ".claude")
        os.makedirs(claude)
        with open(os.path.join(claude, "settings.json"), "w") as f:
            f.write('{\n  "theme": "dark"\n}\n')
        return ["hooks", "install", "claude-code", "--now", LATER]

    builders = {"init": init_only, "run": with_events, "accept": with_card, "hooks": with_settings}
    total = [0, 0, 0]
    for name in a.commands.split(","):
        place, args = s.template(name, builders[name])
        tried, differ, stuck, notes = s.run_command(name, place, args, a.n)
        for line in notes:
            print("  " + line)
        print("%-7s %4d points tried, %d differences, %d stuck" % (name, tried, differ, stuck))
        total = [total[0] + tried, total[1] + differ, total[2] + stuck]
    print("total   %4d points tried, %d differences, %d stuck" % tuple(total))
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if total[1] or total[2] else 0)


if __name__ == "__main__":
    main()
