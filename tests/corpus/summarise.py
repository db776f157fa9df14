#!/usr/bin/env python3
"""Turn a recorder's events (events-*.jsonl, lines-*.txt) into one package's recording.

The recording (tests/fixtures/code/recorded/<name>.json) holds only what the tests showed about
the package's own files: its batch sites (pipelines and transactions with the line that opened
them and the line that sent them, script runs, commands that carried two or more keys), every
line where a keyed command was sent, and the lines of its files that the tests executed. Test
files (tests/, test_*.py, conftest.py, ...) are left out: keyplan is scored on the package.

Each site line comes with the span of the statement it belongs to (for a compound statement,
its header: `with r.pipeline() as p:`), so a report at any line of a multi-line call matches.
"""
import argparse
import ast
import glob
import json
import os
import re

SCRIPT_CMDS = {"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"}
MAX_EXECUTIONS = 12
TEST_DIRS = {"test", "tests", "testing", "t", "testsuite", "test_utils", "tests_async"}


def is_test_file(rel):
    parts = rel.replace(os.sep, "/").split("/")
    base = parts[-1]
    if any(p in TEST_DIRS for p in parts[:-1]):
        return True
    return base.startswith("test_") or base.endswith("_test.py") or base in ("conftest.py", "tests.py", "test.py")


class Spans:
    def __init__(self, src):
        self.src = src
        self.trees = {}

    def of(self, rel, line):
        if rel not in self.trees:
            try:
                with open(os.path.join(self.src, rel), "rb") as f:
                    self.trees[rel] = ast.parse(f.read())
            except Exception:
                self.trees[rel] = None
        tree = self.trees[rel]
        if tree is None:
            return [line, line]
        best = None
        for node in ast.walk(tree):
            if not isinstance(node, ast.stmt) or not (node.lineno <= line <= (node.end_lineno or node.lineno)):
                continue
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                end = max(node.lineno, body[0].lineno - 1)
                # a one-line compound statement (`with x as p: p.execute()`) keeps its line
                if body[0].lineno == node.lineno:
                    end = node.lineno
                if line > end:
                    continue
                cand = [node.lineno, end]
            else:
                cand = [node.lineno, node.end_lineno or node.lineno]
            if best is None or cand[1] - cand[0] < best[1] - best[0]:
                best = cand
        return best or [line, line]


def ranges(lines):
    out, start, prev = [], None, None
    for n in sorted(lines):
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(str(start) if start == prev else "%d-%d" % (start, prev))
            start = prev = n
    if start is not None:
        out.append(str(start) if start == prev else "%d-%d" % (start, prev))
    return ",".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--dist", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--events", required=True)
    ap.add_argument("--outcome", default="")
    ap.add_argument("--sdist", default="")
    ap.add_argument("--language", default="python")
    ap.add_argument("-o", required=True)
    a = ap.parse_args()
    spans = Spans(a.src)
    top = os.path.basename(os.path.normpath(a.src))

    def pkg_frame(fr):
        return fr is not None and fr.get("in_root") and not is_test_file(fr["file"])

    sites = {}
    command_lines = {}
    counts = {}

    def site(key, init):
        s = sites.get(key)
        if s is None:
            s = sites[key] = init
            s["_execs"] = []
            s["_seen"] = set()
            s["ops"] = set()
            s["via"] = set()
            s["executions"] = 0
        return s

    def add_exec(s, keys, detail=None):
        s["executions"] += 1
        sig = json.dumps(keys)
        if sig in s["_seen"] or len(s["_execs"]) >= MAX_EXECUTIONS:
            return
        s["_seen"].add(sig)
        s["_execs"].append(detail if detail is not None else keys)

    for path in sorted(glob.glob(os.path.join(a.events, "events-*.jsonl"))):
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            for raw in f:
                try:
                    ev = json.loads(raw)
                except ValueError:
                    continue
                t = ev.get("t")
                if t in ("command", "watched"):
                    fr = ev["at"]
                    if not pkg_frame(fr):
                        continue
                    keys = ev.get("keys")
                    cmd = ev["cmd"]
                    command_lines.setdefault(fr["file"], {}).setdefault(fr["line"], set()).add(cmd)
                    n = len(keys or [])
                    kind = "script" if cmd in SCRIPT_CMDS else "command"
                    if kind == "command" and n < 2:
                        continue
                    k = (kind, fr["file"], fr["line"], cmd if kind == "command" else "")
                    s = site(k, {"kind": kind, "file": fr["file"], "line": fr["line"]})
                    s["ops"].add(cmd)
                    if fr.get("via"):
                        s["via"].add(fr["via"])
                    add_exec(s, keys)
                elif t == "pipeline":
                    o, snd = ev.get("open"), ev["send"]
                    if not (pkg_frame(o) or pkg_frame(snd)):
                        continue
                    kind = "transaction" if ev.get("transaction") else "pipeline"
                    ofile = o["file"] if pkg_frame(o) else None
                    sfile = snd["file"] if pkg_frame(snd) else None
                    k = (kind, ofile, o and o["line"] if ofile else None, sfile, snd["line"] if sfile else None)
                    s = site(
                        k,
                        {
                            "kind": kind,
                            "file": ofile,
                            "line": o["line"] if ofile else None,
                            "send_file": sfile,
                            "send_line": snd["line"] if sfile else None,
                            "queued": set(),
                        },
                    )
                    keys = []
                    detail = []
                    for c in ev["commands"]:
                        s["ops"].add(c["cmd"])
                        ck = c.get("keys") or []
                        keys.extend(ck)
                        detail.append([c["cmd"]] + ck)
                        cf = c.get("at")
                        if pkg_frame(cf):
                            s["queued"].add("%s:%d" % (cf["file"], cf["line"]))
                            command_lines.setdefault(cf["file"], {}).setdefault(cf["line"], set()).add(c["cmd"])
                    for fr in (o, snd):
                        if fr and fr.get("via"):
                            s["via"].add(fr["via"])
                    s.setdefault("_keysets", [])
                    add_exec(s, detail)
                elif t == "count":
                    counts[ev["site"]] = max(counts.get(ev["site"], 0), ev["n"])

    executed = {}
    for path in glob.glob(os.path.join(a.events, "lines-*.txt")):
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            for raw in f:
                rel, _, n = raw.rstrip("\n").rpartition("\t")
                if rel and not is_test_file(rel) and n.isdigit():
                    executed.setdefault(rel, set()).add(int(n))

    out_sites = []
    for k, s in sites.items():
        rec = {"kind": s["kind"]}
        if s.get("file"):
            rec["file"], rec["line"] = s["file"], s["line"]
            rec["span"] = spans.of(s["file"], s["line"])
        if s["kind"] in ("pipeline", "transaction"):
            if s.get("send_file"):
                rec["send_file"], rec["send_line"] = s["send_file"], s["send_line"]
                rec["send_span"] = spans.of(s["send_file"], s["send_line"])
            rec["queued"] = sorted(s["queued"])
            if "file" not in rec:
                rec["file"], rec["line"], rec["span"] = rec["send_file"], rec["send_line"], rec["send_span"]
        rec["ops"] = sorted(s["ops"])
        rec["via"] = sorted(s["via"])
        rec["executions_seen"] = s["executions"]
        if s["kind"] in ("pipeline", "transaction"):
            rec["executions"] = s["_execs"]  # each: [[CMD, key, ...], ...]
        else:
            rec["executions"] = s["_execs"]  # each: [key, ...] (null: the server could not tell)
        out_sites.append(rec)
    out_sites.sort(key=lambda r: (r["file"], r["line"], r["kind"], r.get("send_line") or 0, r["ops"]))

    doc = {
        "package": a.name,
        "dist": a.dist,
        "version": a.version,
        "language": a.language,
        "registry": "pypi" if a.language == "python" else "npm",
        "sdist": a.sdist,
        "root": top,
        "client": "redis-py" if a.language == "python" else "",
        "suite": a.outcome,
        "sites": out_sites,
        "command_lines": {
            f: {str(n): sorted(c) for n, c in sorted(lines.items())} for f, lines in sorted(command_lines.items())
        },
        "executed": {f: ranges(v) for f, v in sorted(executed.items())},
    }
    with open(a.o, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=True, sort_keys=False)
        f.write("\n")
    print("%s: %d sites, %d files executed" % (a.name, len(out_sites), len(executed)))


if __name__ == "__main__":
    main()
