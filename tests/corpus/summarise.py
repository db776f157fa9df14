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

MAX_KEPT = 64


def slot(key):
    """CLUSTER KEYSLOT: CRC16 (XMODEM) of the hash tag, or of the whole key."""
    import binascii

    b = key.encode("utf-8", "surrogateescape")
    st = b.find(b"{")
    if st >= 0:
        e = b.find(b"}", st + 1)
        if e > st + 1:
            b = b[st + 1 : e]
    return binascii.crc_hqx(b, 0) % 16384


SCRIPT_CMDS = {"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"}
MAX_EXECUTIONS = 12
TEST_DIRS = {"test", "tests", "testing", "t", "testsuite", "test_utils", "tests_async", "__tests__", "spec", "node_modules"}


def is_test_file(rel):
    parts = rel.replace(os.sep, "/").split("/")
    base = parts[-1]
    if any(p in TEST_DIRS or p.endswith("_tests") or p.startswith("tests_") for p in parts[:-1]):
        return True
    if re.search(r"[._-](test|spec)\.[cm]?[jt]sx?$", base):
        return True
    if base.endswith(("_test.go", "_test.rb", "_spec.rb")):
        return True
    return base.startswith("test_") or base.endswith("_test.py") or base in ("conftest.py", "tests.py", "test.py")


def js_span(path, line):
    """A JavaScript (or Go, or Ruby) statement's lines, roughly: from the line back while the
    previous line continues an expression (ends with an operator, '(' or ',', or this one starts
    with '.'), and forward until the brackets opened on these lines close. A Ruby block's header
    (`redis.pipelined do |p|`) is its own statement."""
    ruby = path.endswith(".rb")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
    except OSError:
        return [line, line]
    i = line - 1
    if i >= len(lines):
        return [line, line]
    start = i
    while start > 0:
        prev = lines[start - 1].rstrip()
        cur = lines[start].lstrip()
        if cur.startswith(".") or cur.startswith("?.") or cur.startswith("&.") or prev.endswith(("(", ",", "=", "+", "&&", "||", "?", ":", "await", "\\")):
            start -= 1
        else:
            break
    depth = 0
    end = start
    for j in range(start, min(len(lines), start + 60)):
        if ruby:  # strings first: "#{...}" is no comment
            code = re.sub(r"(['\"`]).*?\1", "", lines[j]).split("#")[0]
        else:
            code = re.sub(r"(['\"`]).*?\1", "", lines[j].split("//")[0])
        depth += code.count("(") + code.count("[") - code.count(")") - code.count("]")
        end = j
        if j >= i and depth <= 0:
            break
    return [start + 1, max(end + 1, line)]


class Spans:
    def __init__(self, src):
        self.src = src
        self.trees = {}

    def of(self, rel, line):
        if not rel.endswith(".py"):
            return js_span(os.path.join(self.src, rel), line)
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


class KeyServer:
    """COMMAND GETKEYS on a real server, for recorders that log arguments, not keys (the JS one)."""

    def __init__(self, addr):
        import socket

        host, _, port = addr.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.buf = b""
        self.cache = {}

    def _line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"-":
            return None
        if t in (b":", b"+"):
            return rest
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(65536)
            data, self.buf = self.buf[:n], self.buf[n + 2 :]
            return data
        if t == b"*":
            return [self._reply() for _ in range(int(rest))]
        raise RuntimeError("unexpected reply")

    def keys(self, cmd, args):
        k = (cmd, tuple(args))
        if k not in self.cache:
            parts = [b"COMMAND", b"GETKEYS"] + [x.encode("utf-8", "surrogateescape") for x in [cmd] + list(args)]
            self.sock.sendall(b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in parts))
            r = self._reply()
            self.cache[k] = [x.decode("utf-8", "surrogateescape") for x in r] if isinstance(r, list) else []
        return self.cache[k]


KEYSERVER = None


def resolve_keys(ev):
    def one(c):
        if "args" in c and "keys" not in c:
            c["keys"] = KEYSERVER.keys(c["cmd"], c["args"]) if KEYSERVER else None
            del c["args"]

    if ev.get("t") in ("command", "watched"):
        one(ev)
    elif ev.get("t") == "pipeline":
        for c in ev["commands"]:
            one(c)


def v8_executed(cov_dir, src):
    """Lines of files under src that V8's coverage (NODE_V8_COVERAGE) saw run: a line counts
    when the innermost range holding its first non-blank character ran at least once."""
    import bisect
    import urllib.parse

    root = os.path.realpath(src) + os.sep
    executed = {}
    for path in glob.glob(os.path.join(cov_dir, "coverage-*.json")):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        for script in doc.get("result", []):
            url = script.get("url", "")
            if not url.startswith("file://"):
                continue
            fn = os.path.realpath(urllib.parse.unquote(url[7:]))
            if not fn.startswith(root) or os.sep + "node_modules" + os.sep in fn:
                continue
            rel = fn[len(root) :]
            try:
                text = open(fn, encoding="utf-8", errors="replace").read()
            except OSError:
                continue
            ranges = []
            for func in script.get("functions", []):
                for r in func.get("ranges", []):
                    ranges.append((r["startOffset"], r["endOffset"], r["count"]))
            if not ranges:
                continue
            # V8 offsets are UTF-16 code units; close enough for ASCII sources
            starts = [0]
            for i, ch in enumerate(text):
                if ch == "\n":
                    starts.append(i + 1)
            lines = executed.setdefault(rel, set())
            for ln, st in enumerate(starts, start=1):
                end = starts[ln] if ln < len(starts) else len(text)
                seg = text[st:end]
                stripped = len(seg) - len(seg.lstrip())
                off = st + stripped
                if off >= end or not seg.strip():
                    continue
                best = None
                for a_, b_, c_ in ranges:
                    if a_ <= off < b_ and (best is None or b_ - a_ < best[1] - best[0]):
                        best = (a_, b_, c_)
                if best and best[2] > 0:
                    lines.add(ln)
    return executed


def sha256(path):
    import hashlib

    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return ""


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
    ap.add_argument("--sdist", default="", help="the sdist file (its name and sha256 are recorded)")
    ap.add_argument("--language", default="python")
    ap.add_argument("--tests-from", default="", help="where the suite came from when the package lacks it")
    ap.add_argument("--redis", help="host:port of a server to ask COMMAND GETKEYS (JS, Ruby and Go recordings)")
    ap.add_argument("--registry", default="", help="pypi, npm or debian (default: from the language)")
    ap.add_argument("--root", default="", help="the code root's path inside the archive (default: its last component)")
    ap.add_argument("--client", default="", help="the client library recorded (default: from the language)")
    ap.add_argument("-o", required=True)
    a = ap.parse_args()
    global KEYSERVER
    if a.redis:
        KEYSERVER = KeyServer(a.redis)
    spans = Spans(a.src)
    top = a.root or os.path.basename(os.path.normpath(a.src))

    def pkg_frame(fr):
        return (
            fr is not None
            and fr.get("in_root")
            and not is_test_file(fr["file"])
            and os.path.isfile(os.path.join(a.src, fr["file"]))
        )

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
        """One execution: every one counts for the verdict (its keys' distinct slots), the first
        MAX_EXECUTIONS distinct ones are kept, each cut to MAX_KEPT keys or commands."""
        s["executions"] += 1
        if keys is None or any(k is None for k in keys):
            s["unknown"] = True
        else:
            slots = {slot(k) for k in keys}
            s["cross"] = s.get("cross", False) or len(slots) > 1
        sig = json.dumps(detail if detail is not None else keys)
        if sig in s["_seen"] or len(s["_execs"]) >= MAX_EXECUTIONS:
            return
        s["_seen"].add(sig)
        kept = detail if detail is not None else keys
        if kept is not None and len(kept) > MAX_KEPT:
            kept = kept[:MAX_KEPT]
            s["truncated"] = True
        if detail is not None:
            kept = [c if len(c) <= MAX_KEPT else c[:MAX_KEPT] for c in kept]
        s["_execs"].append(kept)

    for path in sorted(glob.glob(os.path.join(a.events, "events-*.jsonl"))):
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            for raw in f:
                try:
                    ev = json.loads(raw)
                except ValueError:
                    continue
                t = ev.get("t")
                resolve_keys(ev)
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
                        ck = c.get("keys")
                        if ck is None:
                            keys.append(None)
                            ck = []
                        keys.extend(ck)
                        detail.append([c["cmd"]] + ck)
                        cf = c.get("at")
                        if pkg_frame(cf):
                            s["queued"].add("%s:%d" % (cf["file"], cf["line"]))
                            command_lines.setdefault(cf["file"], {}).setdefault(cf["line"], set()).add(c["cmd"])
                    for fr in (o, snd):
                        if fr and fr.get("via"):
                            s["via"].add(fr["via"])
                    add_exec(s, keys, detail)
                elif t == "count":
                    counts[ev["site"]] = max(counts.get(ev["site"], 0), ev["n"])

    executed = {}
    if os.path.isdir(os.path.join(a.events, "v8")):
        for rel, lines in v8_executed(os.path.join(a.events, "v8"), a.src).items():
            if not is_test_file(rel):
                executed.setdefault(rel, set()).update(lines)
    for path in glob.glob(os.path.join(a.events, "jestcov", "coverage-final.json")):
        # Jest's coverage (istanbul JSON, mapped back to the TypeScript sources)
        root = os.path.realpath(a.src) + os.sep
        with open(path) as f:
            doc = json.load(f)
        for fn, cov in doc.items():
            fn = os.path.realpath(fn)
            if not fn.startswith(root):
                continue
            rel = fn[len(root):]
            if is_test_file(rel):
                continue
            lines = executed.setdefault(rel, set())
            for sid, loc in cov.get("statementMap", {}).items():
                if cov.get("s", {}).get(sid):
                    lines.update(range(loc["start"]["line"], (loc["end"]["line"] or loc["start"]["line"]) + 1))
    for path in glob.glob(os.path.join(a.events, "cover*.out")):
        # `go test -coverprofile`: IMPORT/PATH/file.go:L1.C1,L2.C2 STATEMENTS COUNT
        rels = {}
        with open(path) as f:
            for raw in f:
                m = re.match(r"^(.+\.go):(\d+)\.\d+,(\d+)\.\d+ \d+ (\d+)$", raw.strip())
                if not m or m.group(4) == "0":
                    continue
                name = m.group(1)
                if name not in rels:
                    parts = name.split("/")
                    rels[name] = next(("/".join(parts[i:]) for i in range(len(parts)) if os.path.isfile(os.path.join(a.src, *parts[i:]))), None)
                rel = rels[name]
                if rel and not is_test_file(rel):
                    executed.setdefault(rel, set()).update(range(int(m.group(2)), int(m.group(3)) + 1))
    for path in glob.glob(os.path.join(a.events, "lines-*.txt")):
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            for raw in f:
                rel, _, n = raw.rstrip("\n").rpartition("\t")
                if rel and not is_test_file(rel) and n.isdigit() and os.path.isfile(os.path.join(a.src, rel)):
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
        # the verdict over every execution seen: some execution's keys in two slots or more
        rec["cross_slot"] = None if s.get("unknown") else bool(s.get("cross"))
        if s.get("truncated"):
            rec["truncated"] = True
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
        "registry": a.registry or ("pypi" if a.language == "python" else "npm"),
        "tests_from": a.tests_from,
        "sdist": os.path.basename(a.sdist),
        "sha256": sha256(a.sdist),
        "root": top,
        "client": a.client or {"python": "redis-py", "javascript": "ioredis", "ruby": "redis-rb", "go": "redigo"}.get(a.language, ""),
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
