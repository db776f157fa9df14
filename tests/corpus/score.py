#!/usr/bin/env python3
"""Score `keyplan code` against the recorded ground truth (tests/fixtures/code/recorded/*.json).

For each recording it fetches the package's pinned sdist (pip download; npm packages with npm
pack, Debian packages with apt-get download; cached), runs
`keyplan code <sdist root> --format json`, and compares:

- found (recall): a recorded batch site (pipeline or transaction, script run, command that sent
  two or more keys) is found when keyplan reports a site in the same file whose line lies in the
  statement that opened the batch or in the statement that sent it (`execute()`); a site is a
  span, so either end counts.
- precision: reported sites whose statement the tests executed (sites in unexecuted code, and in
  test files, are not judged) that lie on a recorded batch site's statement or on a line where the
  tests sent a keyed command.
- verdicts: for each found site, keyplan's `cross_slot` against the recorded keys' real slots
  (CRC16 of the hash tag, as CLUSTER KEYSLOT): cross-slot when some execution's keys hashed to two
  slots or more, one slot otherwise. `depends` is counted apart (never right), and so is the worst
  error: one slot said of a batch that was recorded cross-slot.
- templates: for each recorded site, the share of its distinct recorded keys that one of
  keyplan's key templates matches (`<...>` placeholders as wildcards), averaged over sites with
  keys (a missed site scores 0). `templates*` counts only templates with a literal character.

    python3 tests/corpus/score.py [--keyplan target/release/keyplan] [--half dev|held-out|all]
        [--markdown] [--cache DIR] [--verbose] [NAME ...]
"""
import argparse
import binascii
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RECORDED = os.path.join(REPO, "tests", "fixtures", "code", "recorded")
sys.path.insert(0, HERE)
from summarise import Spans  # noqa: E402

# ---- slots -----------------------------------------------------------------------------------


def crc16(data):
    return binascii.crc_hqx(data, 0)


def slot(key):
    b = key.encode("utf-8", "surrogateescape")
    s = b.find(b"{")
    if s >= 0:
        e = b.find(b"}", s + 1)
        if e > s + 1:
            b = b[s + 1 : e]
    return crc16(b) % 16384


# ---- recordings ------------------------------------------------------------------------------


def load_split():
    """package -> 'dev' | 'held-out' from SPLIT.md's table."""
    halves = {}
    path = os.path.join(RECORDED, "SPLIT.md")
    if not os.path.exists(path):
        return halves
    with open(path) as f:
        for line in f:
            m = re.match(r"\|\s*`?([A-Za-z0-9_.-]+)`?\s*\|\s*[^|]*\|\s*[^|]*\|\s*(dev|held-out)\s*\|", line)
            if m:
                halves[m.group(1)] = m.group(2)
    return halves


def site_keys(site):
    """Each execution's keys (None when the server could not tell a command's keys)."""
    out = []
    for ex in site["executions"]:
        if site["kind"] in ("pipeline", "transaction"):
            keys = []
            for c in ex:
                keys.extend(c[1:])
            out.append(keys)
        else:
            out.append(ex)
    return out


def is_lock_only(site):
    """A script run by redis-py's Lock (acquire/release/extend) on the package's behalf."""
    return site["kind"] == "script" and site["via"] and all(v.startswith("lock.py:") for v in site["via"])


def template_regex(t):
    parts = re.split(r"(<[^<>]*>)", t)
    rx = "".join(".*" if p.startswith("<") and p.endswith(">") else re.escape(p) for p in parts)
    return re.compile(rx, re.S)


def has_literal(t):
    return bool(re.sub(r"<[^<>]*>", "", t))


# ---- sources ---------------------------------------------------------------------------------


def fetch(rec, cache, pip):
    """The sdist's (or npm tarball's, or Debian package's) root directory, downloaded with pip
    (npm pack, apt-get download) and unpacked once into cache."""
    dest = os.path.join(cache, "src", "%s-%s" % (rec["package"], rec["version"]))
    root = os.path.join(dest, rec["root"])
    if os.path.isdir(root):
        return root
    dl = os.path.join(cache, "dl")
    os.makedirs(dl, exist_ok=True)
    path = os.path.join(dl, rec["sdist"])
    if rec.get("registry") == "debian":
        # a Debian binary package, as shipped: `apt-get download NAME=VERSION`, `dpkg-deb -x`;
        # the recording's root is the code's directory inside it
        if not os.path.exists(path):
            r = subprocess.run(["apt-get", "download", "%s=%s" % (rec["dist"], rec["version"])], cwd=dl, capture_output=True)
            if r.returncode or not os.path.exists(path):
                raise RuntimeError("apt-get download %s=%s failed: %s" % (rec["dist"], rec["version"], r.stderr.decode()[-500:]))
        if rec.get("sha256"):
            h = hashlib.sha256(open(path, "rb").read()).hexdigest()
            if h != rec["sha256"]:
                raise RuntimeError("%s: sha256 %s, recorded %s" % (path, h, rec["sha256"]))
        tmp = dest + ".tmp"
        if os.path.isdir(tmp):
            shutil.rmtree(tmp)
        os.makedirs(tmp)
        subprocess.run(["dpkg-deb", "-x", path, tmp], check=True)
        if os.path.isdir(dest):
            shutil.rmtree(dest)
        os.rename(tmp, dest)
        return root
    if not os.path.exists(path) and rec.get("registry") == "npm":
        r = subprocess.run(["npm", "pack", "--silent", "%s@%s" % (rec["dist"], rec["version"])], cwd=dl, capture_output=True)
        if r.returncode or not os.path.exists(path):
            raise RuntimeError("npm pack %s@%s failed: %s" % (rec["dist"], rec["version"], r.stderr.decode()[-500:]))
    if not os.path.exists(path):
        cmd = pip + ["download", "-q", "--no-deps", "--no-binary", rec["dist"], "-d", dl,
                     "%s==%s" % (rec["dist"], rec["version"])]
        r = subprocess.run(cmd + ["--no-build-isolation"], capture_output=True)
        if r.returncode:
            r = subprocess.run(cmd, capture_output=True)
        if r.returncode or not os.path.exists(path):
            raise RuntimeError("pip download %s==%s failed: %s" % (rec["dist"], rec["version"], r.stderr.decode()[-500:]))
    if rec.get("sha256"):
        h = hashlib.sha256(open(path, "rb").read()).hexdigest()
        if h != rec["sha256"]:
            raise RuntimeError("%s: sha256 %s, recorded %s" % (path, h, rec["sha256"]))
    os.makedirs(dest, exist_ok=True)
    if path.endswith(".zip"):
        zipfile.ZipFile(path).extractall(dest)
    else:
        with tarfile.open(path) as t:
            t.extractall(dest, filter="data")
    return root


BACKENDS = ["setuptools", "wheel", "hatchling", "hatch-vcs", "hatch-fancy-pypi-readme", "setuptools-scm",
            "poetry-core", "flit-core", "pdm-backend", "uv-build"]


def pip_venv(cache):
    """pip in a venv holding the common build backends, so that `pip download` prepares an
    sdist's metadata without build isolation (no backend downloaded per package)."""
    venv = os.path.join(cache, "pip-venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, ".ready")):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "-U", "pip"] + BACKENDS, check=True)
        open(os.path.join(venv, ".ready"), "w").close()
    return [py, "-m", "pip"]


def parse_ranges(text):
    out = set()
    for part in text.split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


# ---- scoring ---------------------------------------------------------------------------------


class Score:
    FIELDS = ("sites", "found", "reported", "real", "verdicts", "depends", "worst", "tmpl_sites", "tmpl", "tmpl_lit", "locks", "unknown")

    def __init__(self):
        for f in self.FIELDS:
            setattr(self, f, 0)
        self.misses = []

    def add(self, o):
        for f in self.FIELDS:
            setattr(self, f, getattr(self, f) + getattr(o, f))

    @staticmethod
    def pct(a, b):
        return "-" if b == 0 else "%.0f%%" % (100.0 * a / b)

    def row(self, name, half, lang):
        return [
            name, half, lang, str(self.sites), "%d (%s)" % (self.found, self.pct(self.found, self.sites)),
            "%d/%d (%s)" % (self.real, self.reported, self.pct(self.real, self.reported)),
            "%d/%d (%s)" % (self.verdicts, self.found - self.unknown, self.pct(self.verdicts, self.found - self.unknown)),
            str(self.depends), str(self.worst),
            "%.1f/%d (%s)" % (self.tmpl, self.tmpl_sites, self.pct(self.tmpl, self.tmpl_sites)),
            self.pct(self.tmpl_lit, self.tmpl_sites),
        ]


HEAD = ["package", "half", "lang", "sites", "found (recall)", "real/reported (precision)", "verdicts right",
        "depends", "1-slot-for-cross", "templates", "templates*"]


def score(rec, report, src):
    sc = Score()
    spans = Spans(src)
    reported = [r for r in report["sites"]]
    executed = {f: parse_ranges(t) for f, t in rec.get("executed", {}).items()}
    cmd_lines = {f: {int(n) for n in lines} for f, lines in rec.get("command_lines", {}).items()}

    def ends(r):
        # A site is a span: the line that opens it and, when another, the one that sends it.
        return [r["line"]] + ([r["send_line"]] if r.get("send_line") else [])

    def in_span(r, f, sp):
        return f is not None and r["file"] == f and any(sp[0] <= n <= sp[1] for n in ends(r))

    sites = []
    for s in rec["sites"]:
        if is_lock_only(s):
            sc.locks += 1
            continue
        sites.append(s)
    real_spans = {}
    for s in sites:
        real_spans.setdefault(s["file"], []).append(s["span"])
        if s.get("send_file"):
            real_spans.setdefault(s["send_file"], []).append(s["send_span"])

    for s in sites:
        sc.sites += 1
        match = [r for r in reported if in_span(r, s["file"], s["span"])]
        match += [r for r in reported if s.get("send_file") and in_span(r, s["send_file"], s["send_span"]) and r not in match]
        execs = site_keys(s)
        distinct = sorted({k for ex in execs if ex for k in ex})
        if distinct:
            sc.tmpl_sites += 1
        where = "%s:%d" % (s["file"], s["line"]) + (" -> %s:%d" % (s["send_file"], s["send_line"]) if s.get("send_file") else "")
        if not match:
            sc.misses.append("missed %s %s %s e.g. %s" % (s["kind"], where, " ".join(s["ops"][:6]), (distinct[:4])))
            continue
        sc.found += 1
        r = match[0]
        cross = s.get("cross_slot")
        if cross is None and "cross_slot" not in s:  # older recordings: from the kept executions
            cross = None if any(ex is None or None in ex for ex in execs) else any(len({slot(k) for k in ex}) > 1 for ex in execs)
        if cross is None:
            sc.unknown += 1
        else:
            said = r["cross_slot"]
            if said == "depends":
                sc.depends += 1
            elif said is True and cross or said is False and not cross:
                sc.verdicts += 1
            if said is False and cross:
                sc.worst += 1
                sc.misses.append("ONE SLOT SAID OF CROSS-SLOT %s (%s)" % (where, distinct[:4]))
            elif not (said is True and cross or said is False and not cross):
                sc.misses.append("verdict %s: recorded %s, keyplan %s (%s)" % (where, "cross" if cross else "one slot", said, r.get("why")))
        if distinct:
            rx = [(template_regex(t), has_literal(t)) for t in r["key_templates"]]
            hit = [k for k in distinct if any(x.fullmatch(k) for x, _ in rx)]
            lit = [k for k in distinct if any(x.fullmatch(k) for x, l in rx if l)]
            sc.tmpl += len(hit) / len(distinct)
            sc.tmpl_lit += len(lit) / len(distinct)
            if len(hit) < len(distinct):
                sc.misses.append("templates %s: %s vs %s" % (where, r["key_templates"][:6], [k for k in distinct if k not in hit][:4]))

    for r in reported:
        f = r["file"]
        lines = set()
        for n in ends(r):
            sp = spans.of(f, n)
            lines |= set(range(sp[0], sp[1] + 1))
        sp = (min(lines), max(lines))
        if not (lines & executed.get(f, set())):
            continue
        sc.reported += 1
        real = any(sp[0] <= x[1] and x[0] <= sp[1] for x in real_spans.get(f, [])) or bool(lines & cmd_lines.get(f, set()))
        if real:
            sc.real += 1
        else:
            sc.misses.append("not a recorded site: %s:%d %s %s %s" % (f, r["line"], r["kind"], r["op"], r["key_templates"][:4]))
    return sc


def table(rows, markdown):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for j, r in enumerate(rows):
        if markdown:
            out.append("| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(r)) + " |")
            if j == 0:
                out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        else:
            out.append("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip())
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--keyplan", default=os.path.join(REPO, "target", "release", "keyplan"))
    ap.add_argument("--cache", default="/tmp/keyplan-corpus-score")
    ap.add_argument("--pip", help="pip command (default: a venv in the cache with the common build backends)")
    ap.add_argument("--half", default="all", choices=["all", "dev", "held-out"])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--json", help="write the figures per package to this file")
    a = ap.parse_args()
    halves = load_split()
    recs = []
    for f in sorted(os.listdir(RECORDED)):
        if f.endswith(".json"):
            with open(os.path.join(RECORDED, f)) as fh:
                rec = json.load(fh)
            if a.names and rec["package"] not in a.names:
                continue
            half = halves.get(rec["package"], "?")
            if a.half != "all" and half != a.half:
                continue
            if not rec["sites"]:
                continue
            recs.append((rec, half))
    recs.sort(key=lambda r: (r[1], r[0].get("language", "python"), r[0]["package"]))
    pip = a.pip.split() if a.pip else pip_venv(a.cache)
    rows = [HEAD]
    totals = {}
    per = {}
    t0 = time.time()
    fetch_s = keyplan_s = 0.0
    for rec, half in recs:
        t = time.time()
        src = fetch(rec, a.cache, pip)
        fetch_s += time.time() - t
        t = time.time()
        # Run in the package's root: files are named from there, as the recording names them.
        out = subprocess.run([os.path.abspath(a.keyplan), "code", "--format", "json", "-q", "."], cwd=src, capture_output=True)
        keyplan_s += time.time() - t
        if out.returncode not in (0, 1):
            print("%s: keyplan exit %d: %s" % (rec["package"], out.returncode, out.stderr.decode()[-400:]), file=sys.stderr)
            continue
        sc = score(rec, json.loads(out.stdout), src)
        lang = rec.get("language", "python")
        rows.append(sc.row("%s %s" % (rec["package"], rec["version"]), half, lang))
        per[rec["package"]] = dict({f: getattr(sc, f) for f in Score.FIELDS}, half=half, language=lang, version=rec["version"])
        for k in (("all", "all"), (half, "all"), (half, lang), ("all", lang)):
            totals.setdefault(k, Score()).add(sc)
        if a.verbose:
            print("## %s %s (%s)" % (rec["package"], rec["version"], half))
            for m in sc.misses:
                print("   " + m)
    print(table(rows, a.markdown))
    print()
    trows = [["total"] + HEAD[1:]]
    for (half, lang), sc in sorted(totals.items()):
        trows.append(sc.row("total", half, lang)[0:1] + sc.row("", half, lang)[1:])
    print(table(trows, a.markdown))
    locks = sum(p["locks"] for p in per.values())
    print()
    print("%d packages; redis-py Lock scripts left out: %d; fetch %.0fs, keyplan %.0fs, total %.0fs"
          % (len(recs), locks, fetch_s, keyplan_s, time.time() - t0))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(per, f, indent=1)


if __name__ == "__main__":
    main()
