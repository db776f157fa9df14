#!/usr/bin/env python3
"""Record the Redis batch sites of real packages by running their own test suites.

A development tool, not run by CI. For each package named in packages.toml (or on the command
line) it downloads the pinned sdist from PyPI (`pip download`), makes a venv under the work
directory, installs the package (editable, so the tests run its sdist files) and its test
dependencies, starts a private `redis-server` on 127.0.0.1:6379 inside a fresh network namespace
(`unshare -n`: suites that hard-code 6379 get their own server, and nothing else is reachable),
and runs the suite with the recorder (python/sitecustomize.py) on PYTHONPATH. Then summarise.py
turns the recorder's events into tests/fixtures/code/recorded/<name>.json.

    python3 tests/corpus/run.py [--work /tmp/keyplan-corpus] [--jobs 2] [NAME ...]
    python3 tests/corpus/run.py --fetch-only NAME ...   # just download and unpack the sdists
"""
import argparse
import concurrent.futures
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import tomllib
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RECORDED = os.path.join(REPO, "tests", "fixtures", "code", "recorded")


def sh(cmd, log, **kw):
    log.write("$ %s\n" % (cmd if isinstance(cmd, str) else shlex.join(cmd)))
    log.flush()
    return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, **kw)


def python_for(version):
    """An interpreter of this version: pyenv's, else one on PATH (python3.12)."""
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/%s.*/bin/python" % version)))
    if found:
        return found[-1]
    cand = shutil.which("python%s" % version)
    if cand:
        return cand
    raise RuntimeError("no Python %s" % version)


def fetch(pkg, work, log):
    """The sdist's unpacked root (work/src/<name>-<version>/<top>)."""
    name, version = pkg["dist"], pkg["version"]
    dl = os.path.join(work, "dl")
    os.makedirs(dl, exist_ok=True)
    dest = os.path.join(work, "src", "%s-%s" % (pkg["name"], version))
    if os.path.isdir(dest) and os.listdir(dest):
        return os.path.join(dest, os.listdir(dest)[0])
    base = ensure_base(work, log)
    cmd = [base, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", dl, "%s==%s" % (name, version)]
    r = sh(cmd + ["--no-build-isolation"], log)
    if r.returncode:
        r = sh(cmd, log)
    if r.returncode:
        raise RuntimeError("pip download failed")
    norm = name.lower().replace("-", "_").replace(".", "_")
    archive = None
    for f in os.listdir(dl):
        fl = f.lower().replace("-", "_").replace(".", "_")
        if fl.startswith(norm + "_" + version.replace(".", "_")) and (f.endswith(".tar.gz") or f.endswith(".zip") or f.endswith(".tar.bz2")):
            archive = os.path.join(dl, f)
    if archive is None:
        raise RuntimeError("no sdist for %s %s in %s" % (name, version, os.listdir(dl)))
    os.makedirs(dest, exist_ok=True)
    if archive.endswith(".zip"):
        zipfile.ZipFile(archive).extractall(dest)
    else:
        with tarfile.open(archive) as t:
            t.extractall(dest, filter="data")
    pkg["_sdist"] = os.path.basename(archive)
    return os.path.join(dest, os.listdir(dest)[0])


BASE_LOCK = threading.Lock()


def ensure_base(work, log):
    """A venv with the common build backends, for `pip download --no-build-isolation`."""
    with BASE_LOCK:
        return _ensure_base(work, log)


def _ensure_base(work, log):
    base = os.path.join(work, "base")
    py = os.path.join(base, "bin", "python")
    if not os.path.exists(py):
        sh([python_for("3.12"), "-m", "venv", base], log, check=True)
        sh([py, "-m", "pip", "install", "-q", "-U", "pip", "setuptools", "wheel", "hatchling", "hatch-vcs",
            "hatch-fancy-pypi-readme", "setuptools-scm", "poetry-core", "flit-core", "pdm-backend",
            "maturin", "scikit-build-core", "cython"], log)
    return py


def install(pkg, src, work, log):
    venv = os.path.join(work, "venv", pkg["name"])
    py = os.path.join(venv, "bin", "python")
    marker = os.path.join(venv, ".keyplan-installed")
    if os.path.exists(marker):
        return py
    if os.path.exists(venv):
        shutil.rmtree(venv)
    sh([python_for(pkg.get("python", "3.12")), "-m", "venv", venv], log, check=True)
    sh([py, "-m", "pip", "install", "-q", "-U", "pip", "setuptools", "wheel"], log, check=True)
    auto = detect_test_deps(src)
    extras = pkg.get("extras", auto["extras"])
    target = "." + ("[%s]" % ",".join(extras) if extras else "")
    args = [py, "-m", "pip", "install", "-q"]
    if pkg.get("editable", True):
        args.append("-e")
    args.append(target)
    for g in pkg.get("groups", auto["groups"]):
        args += ["--group", g]
    for r in pkg.get("requirements", auto["requirements"]):
        args += ["-r", r]
    args += pkg.get("deps", [])
    args += ["pytest", "pytest-timeout"]
    if pkg.get("constraints"):
        args += pkg["constraints"]
    r = sh(args, log, cwd=src)
    if r.returncode:
        raise RuntimeError("install failed")
    open(marker, "w").close()
    return py


def detect_test_deps(src):
    """The test extras, dependency groups and requirement files an sdist declares."""
    found = {"extras": [], "groups": [], "requirements": []}
    wanted = ("test", "tests", "testing", "testsuite", "dev", "redis", "backends")
    try:
        with open(os.path.join(src, "PKG-INFO"), errors="replace") as f:
            for line in f:
                if line.startswith("Provides-Extra:"):
                    e = line.split(":", 1)[1].strip()
                    if e in wanted:
                        found["extras"].append(e)
    except OSError:
        pass
    try:
        with open(os.path.join(src, "pyproject.toml"), "rb") as f:
            groups = tomllib.load(f).get("dependency-groups", {})
        for g in ("test", "tests", "testing", "dev"):
            if g in groups:
                found["groups"].append(g)
                if g != "dev":
                    break
    except (OSError, tomllib.TOMLDecodeError):
        pass
    for pat in ("requirements-test*.txt", "requirements_test*.txt", "requirements-dev.txt", "requirements/test.txt",
                "test-requirements.txt", "requirements/dev.txt"):
        for f in sorted(glob.glob(os.path.join(src, pat))):
            found["requirements"].append(os.path.relpath(f, src))
    return found


def run_suite(pkg, src, py, work, log):
    out = os.path.join(work, "rec", pkg["name"])
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.update(
        {
            "PYTHONPATH": os.path.join(HERE, "python"),
            "KEYPLAN_REC_OUT": out,
            "KEYPLAN_REC_ROOT": src,
            "KEYPLAN_REC_REDIS": "127.0.0.1:6379",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "REDIS_HOST": "127.0.0.1",
            "REDIS_PORT": "6379",
            "PATH": os.path.join(os.path.dirname(py)) + os.pathsep + env["PATH"],
            "VIRTUAL_ENV": os.path.dirname(os.path.dirname(py)),
        }
    )
    env.update(pkg.get("env", {}))
    timeout = int(pkg.get("timeout", 300))
    cmd = pkg.get("command") or (
        "python -m pytest -p no:cacheprovider -q -o addopts='' --timeout=%d %s %s"
        % (int(pkg.get("test_timeout", 60)), pkg.get("pytest_args", ""), pkg.get("tests", "tests"))
    )
    servers = pkg.get("ports", [6379])
    start = "; ".join(
        "redis-server --port %d --save '' --appendonly no --daemonize yes --dir /tmp >/dev/null" % p for p in servers
    )
    waits = "; ".join("until redis-cli -p %d ping >/dev/null 2>&1; do sleep 0.1; done" % p for p in servers)
    script = "ip link set lo up; %s; %s; %s timeout -k 10 %d sh -c %s; rc=$?; %s; exit $rc" % (
        start,
        waits,
        pkg.get("pre", "") and pkg["pre"] + ";",
        timeout,
        shlex.quote(cmd),
        "; ".join("redis-cli -p %d shutdown nosave >/dev/null 2>&1" % p for p in servers),
    )
    t0 = time.time()
    r = sh(["unshare", "-n", "sh", "-c", script], log, cwd=os.path.join(src, pkg.get("cwd", ".")), env=env)
    return out, r.returncode, time.time() - t0


def one(pkg, work, summarise_only=False, fetch_only=False, install_only=False):
    os.makedirs(os.path.join(work, "logs"), exist_ok=True)
    logpath = os.path.join(work, "logs", pkg["name"] + ".log")
    with open(logpath, "a") as log:
        try:
            src = fetch(pkg, work, log)
            if fetch_only:
                return pkg["name"], "fetched " + src
            out = os.path.join(work, "rec", pkg["name"])
            rc, secs = None, None
            if install_only:
                install(pkg, src, work, log)
                return pkg["name"], "installed"
            if not summarise_only:
                py = install(pkg, src, work, log)
                out, rc, secs = run_suite(pkg, src, py, work, log)
                with open(os.path.join(out, "run.json"), "w") as f:
                    json.dump({"rc": rc, "seconds": round(secs, 1)}, f)
            outcome = tail_outcome(logpath)
            r = sh(
                [sys.executable, os.path.join(HERE, "summarise.py"), "--name", pkg["name"], "--dist", pkg["dist"],
                 "--version", pkg["version"], "--src", src, "--events", out, "--outcome", outcome,
                 "--sdist", pkg.get("_sdist") or sdist_name(work, pkg), "-o", os.path.join(RECORDED, pkg["name"] + ".json")],
                log,
            )
            return pkg["name"], "rc=%s %ss %s; summarise rc=%s" % (rc, secs and round(secs), outcome, r.returncode)
        except Exception as e:
            log.write("FAILED: %r\n" % e)
            return pkg["name"], "FAILED: %s (see %s)" % (e, logpath)


def sdist_name(work, pkg):
    norm = pkg["dist"].lower().replace("-", "_").replace(".", "_")
    for f in os.listdir(os.path.join(work, "dl")):
        fl = f.lower().replace("-", "_").replace(".", "_")
        if fl.startswith(norm + "_" + pkg["version"].replace(".", "_")):
            return f
    return ""


def tail_outcome(logpath):
    """pytest's closing line, e.g. '12 failed, 230 passed, 3 skipped in 40.1s'."""
    last = ""
    with open(logpath, errors="replace") as f:
        for line in f:
            s = line.strip().strip("=").strip()
            if (" passed" in s or " failed" in s or " error" in s or "no tests ran" in s) and " in " in s:
                last = s
    return last or "no pytest summary (timed out or crashed)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--work", default="/tmp/keyplan-corpus")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--summarise-only", action="store_true")
    ap.add_argument("--fetch-only", action="store_true")
    ap.add_argument("--install-only", action="store_true")
    a = ap.parse_args()
    with open(os.path.join(HERE, "packages.toml"), "rb") as f:
        cfg = tomllib.load(f)
    pkgs = []
    for name, p in cfg.items():
        if p.get("language", "python") != "python":
            continue
        p["name"] = name
        p.setdefault("dist", name)
        if a.names and name not in a.names:
            continue
        if p.get("skip") and not a.names:
            continue
        pkgs.append(p)
    os.makedirs(RECORDED, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        futs = [ex.submit(one, p, a.work, a.summarise_only, a.fetch_only, a.install_only) for p in pkgs]
        for fu in concurrent.futures.as_completed(futs):
            name, what = fu.result()
            print("%-24s %s" % (name, what), flush=True)


if __name__ == "__main__":
    main()
