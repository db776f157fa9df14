#!/usr/bin/env python3
"""Record the Redis batch sites of real packages by running their own test suites.

A development tool, not run by CI. For each package named in packages.toml (or on the command
line) it downloads the pinned sdist from PyPI (`pip download`), makes a venv under the work
directory, installs the package (editable, so the tests run its sdist files) and its test
dependencies, starts a private `redis-server` on 127.0.0.1:6379 inside a fresh network namespace
(`unshare -n`: suites that hard-code 6379 get their own server, and nothing else is reachable),
and runs the suite with the recorder (python/sitecustomize.py) on PYTHONPATH. Then summarise.py
turns the recorder's events into tests/fixtures/code/recorded/<name>.json. npm packages run under
js/record.js; Debian packages (Ruby gems, Go golang-*-dev) are fetched with apt-get download and
run under ruby/record.rb (RUBYOPT) or with go/overlay.py's recording copy of redigo (GOPATH).

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
import signal
import subprocess
import sys
import re
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
    if pkg.get("registry") == "debian":
        return fetch_deb(pkg, work, log)
    root = fetch_sdist(pkg, work, log)
    # Tests the sdist lacks, from the package's repository at the release's tag (`git archive`
    # of a local mirror): "tests_from = [MIRROR_GIT_DIR, TAG, PATH...]". They are used to run
    # the suite only; the recorded files are the sdist's.
    if pkg.get("tests_from"):
        gitdir, tag, *paths = pkg["tests_from"]
        if not os.path.exists(os.path.join(root, paths[0])):
            archive = subprocess.run(["git", "--git-dir", gitdir, "archive", tag] + paths, capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", root], input=archive, check=True)
    # Local edits to the unpacked suite only ("patch = [[FILE, OLD, NEW], ...]"), e.g. a fixture
    # that starts Redis in Docker made to return the private server's URL. Never to package code.
    for f, old, new in pkg.get("patch", []):
        path = os.path.join(root, f)
        text = open(path).read()
        if new not in text:
            if old not in text:
                raise RuntimeError("patch: %r not in %s" % (old[:60], f))
            open(path, "w").write(text.replace(old, new))
    return root


def fetch_npm(pkg, work, log):
    """The npm tarball's root (work/src/<name>-<version>/package), from `npm pack`."""
    name, version = pkg["dist"], pkg["version"]
    dl = os.path.join(work, "dl")
    os.makedirs(dl, exist_ok=True)
    dest = os.path.join(work, "src", "%s-%s" % (pkg["name"], version))
    tgz = "%s-%s.tgz" % (name.lstrip("@").replace("/", "-"), version)
    pkg["_sdist"] = tgz
    if os.path.isdir(dest) and os.listdir(dest):
        return os.path.join(dest, os.listdir(dest)[0])
    if not os.path.exists(os.path.join(dl, tgz)):
        r = sh(["npm", "pack", "--silent", "%s@%s" % (name, version)], log, cwd=dl)
        if r.returncode:
            raise RuntimeError("npm pack failed")
    os.makedirs(dest, exist_ok=True)
    with tarfile.open(os.path.join(dl, tgz)) as t:
        t.extractall(dest, filter="data")
    return os.path.join(dest, os.listdir(dest)[0])


def deb_file(pkg):
    """The file name `apt-get download` gives a binary package (an epoch's colon as %3a)."""
    return "%s_%s_%s.deb" % (pkg["dist"], pkg["version"].replace(":", "%3a"), pkg.get("arch", "all"))


def fetch_deb(pkg, work, log):
    """A Debian binary package's code root, and the suite's directory beside it.

    The package's code is the binary package as Debian ships it (`apt-get download NAME=VERSION`,
    unpacked with `dpkg-deb -x`); `root` names its directory inside the package (a gem's directory
    under usr/share/rubygems-integration, usr/lib/ruby/vendor_ruby, or a Go package's directory
    under usr/share/gocode/src). Ruby binary packages ship no tests: the suite comes from the
    upstream repository at the release's tag (`tests_from = [MIRROR_GIT_DIR, TAG]`, the whole
    tree), whose lib/ is replaced by a link to the package's code (`lib`: the code's load-path
    directory inside root, "." for vendor_ruby), so the tests run Debian's files. Go packages
    ship their tests: the suite runs in the code root itself (set up by run_go_suite)."""
    dl = os.path.join(work, "dl")
    os.makedirs(dl, exist_ok=True)
    deb = os.path.join(dl, deb_file(pkg))
    pkg["_sdist"] = os.path.basename(deb)
    if not os.path.exists(deb):
        r = sh(["apt-get", "download", "%s=%s" % (pkg["dist"], pkg["version"])], log, cwd=dl)
        if r.returncode or not os.path.exists(deb):
            raise RuntimeError("apt-get download %s=%s failed" % (pkg["dist"], pkg["version"]))
    base = os.path.join(work, "src", "%s-%s" % (pkg["name"], pkg["version"].replace(":", "_")))
    unpacked = os.path.join(base, "deb")
    if not os.path.isdir(unpacked):
        os.makedirs(unpacked)
        sh(["dpkg-deb", "-x", deb, unpacked], log, check=True)
    root = os.path.join(unpacked, pkg["root"])
    pkg["_suite"] = root
    if pkg.get("tests_from"):
        gitdir, tag = pkg["tests_from"][:2]
        suite = os.path.join(base, "suite")
        if not os.path.isdir(suite):
            os.makedirs(suite)
            archive = subprocess.run(["git", "--git-dir", gitdir, "archive", tag] + pkg["tests_from"][2:],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", suite], input=archive, check=True)
            lib = os.path.join(suite, "lib")
            if os.path.lexists(lib):
                shutil.rmtree(lib) if not os.path.islink(lib) else os.unlink(lib)
            os.symlink(os.path.normpath(os.path.join(root, pkg.get("lib", "lib"))), lib)
        for f, old, new in pkg.get("patch", []):  # edits to the suite only, never to package code
            path = os.path.join(suite, f)
            text = open(path).read()
            if new not in text:
                if old not in text:
                    raise RuntimeError("patch: %r not in %s" % (old[:60], f))
                open(path, "w").write(text.replace(old, new))
        pkg["_suite"] = suite
    elif pkg.get("tests_from_source"):
        # the suite from the Debian source package's upstream archive (`apt-get source
        # --download-only`): "tests_from_source = [SOURCE_PACKAGE, DIRECTORY]", the directory
        # inside the archive that the suite runs in, its lib/ linked to the binary package's code
        srcpkg, sub = pkg["tests_from_source"]
        tree = os.path.join(base, "suite")
        if not os.path.isdir(tree):
            if not glob.glob(os.path.join(dl, "%s_*.orig.tar.*" % srcpkg)):
                r = sh(["apt-get", "source", "--download-only", srcpkg], log, cwd=dl)
                if r.returncode:
                    raise RuntimeError("apt-get source %s failed" % srcpkg)
            orig = sorted(glob.glob(os.path.join(dl, "%s_*.orig.tar.*" % srcpkg)))[-1]
            os.makedirs(tree)
            sh(["tar", "-x", "-f", orig, "-C", tree, "--strip-components=1"], log, check=True)
            lib = os.path.join(tree, sub, "lib")
            if os.path.lexists(lib):
                shutil.rmtree(lib) if not os.path.islink(lib) else os.unlink(lib)
            os.symlink(os.path.normpath(os.path.join(root, pkg.get("lib", "lib"))), lib)
        pkg["_suite"] = os.path.join(tree, sub)
    return root


def install_npm(pkg, src, work, log):
    marker = os.path.join(src, ".keyplan-installed")
    want = json.dumps([src, pkg.get("deps"), pkg.get("omit_dev")])
    if os.path.exists(marker) and open(marker).read() == want:
        return None
    base = ["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"]
    if pkg.get("omit_dev"):  # only its dependencies and the test deps named
        base.append("--omit=dev")
    if pkg.get("package_install", True):  # off for a package without dependencies of its own
        r = sh(base, log, cwd=src)
        if r.returncode:
            raise RuntimeError("npm install failed")
    if pkg.get("deps") and pkg.get("omit_dev"):
        # the test deps apart (NODE_PATH), since --omit=dev leaves out whatever devDependencies names
        deps = os.path.join(work, "jsdeps", pkg["name"])
        os.makedirs(deps, exist_ok=True)
        r = sh(["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error", "--prefix", deps] + pkg["deps"], log, cwd=deps)
        if r.returncode:
            raise RuntimeError("npm install of deps failed")
    elif pkg.get("deps"):
        r = sh(base + ["--no-save"] + pkg["deps"], log, cwd=src)
        if r.returncode:
            raise RuntimeError("npm install of deps failed")
    with open(marker, "w") as f:
        f.write(want)
    return None


def fetch_sdist(pkg, work, log):
    if pkg.get("language") == "javascript":
        return fetch_npm(pkg, work, log)
    name, version = pkg["dist"], pkg["version"]
    dl = os.path.join(work, "dl")
    os.makedirs(dl, exist_ok=True)
    dest = os.path.join(work, "src", "%s-%s" % (pkg["name"], version))
    if os.path.isdir(dest) and os.listdir(dest):
        return os.path.join(dest, os.listdir(dest)[0])
    base = ensure_base(work, log)
    # --no-binary names the package only: its build backend (for the metadata pip prepares) comes
    # as a wheel, never built from source.
    cmd = [base, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", name, "-d", dl, "%s==%s" % (name, version)]
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
APT_LOCK = threading.Lock()


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
            "uv-build", "scikit-build-core", "cython"], log)
    return py


def install(pkg, src, work, log):
    if pkg.get("registry") == "debian":
        # Debian's packages: the package itself and what its suite needs (`apt`), installed
        # system-wide; the suite loads the unpacked copy first (RUBYLIB), byte for byte the same
        if pkg.get("apt"):
            with APT_LOCK:  # one dpkg at a time
                r = sh(["apt-get", "install", "-y", "-q", "--no-install-recommends"] + pkg["apt"], log,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
            if r.returncode:
                raise RuntimeError("apt-get install failed")
        return None
    if pkg.get("language") == "javascript":
        return install_npm(pkg, src, work, log)
    venv = os.path.join(work, "venv", pkg["name"])
    py = os.path.join(venv, "bin", "python")
    marker = os.path.join(venv, ".keyplan-installed")
    want = json.dumps([src] + [pkg.get(k) for k in ("python", "extras", "groups", "requirements", "deps", "constraints", "editable")])
    if os.path.exists(marker) and open(marker).read() == want:
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
    with open(marker, "w") as f:
        f.write(want)
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
            "PYTHONPATH": os.pathsep.join(
                [os.path.join(HERE, "python")] + ([os.path.join(HERE, "python", "shims")] if pkg.get("shims") else [])
            ),
            "KEYPLAN_REC_OUT": out,
            "KEYPLAN_REC_ROOT": src,
            # the recorder asks its own server for keys, so suites that count commands
            # (INFO commandstats, MONITOR) see only theirs
            "KEYPLAN_REC_REDIS": "127.0.0.1:16379",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "REDIS_HOST": "127.0.0.1",
            "REDIS_PORT": "6379",
        }
    )
    if pkg.get("language") == "go":
        # GOPATH mode: the recording copy of redigo first, then the unpacked package, then
        # Debian's Go sources for its other imports
        overlay = os.path.join(work, "go-overlay")
        built = subprocess.run([sys.executable, os.path.join(HERE, "go", "overlay.py"), overlay],
                               capture_output=True, text=True, check=True).stdout
        log.write("go overlay: %s\n" % built.replace("\n", " "))
        gopath = src[: src.rindex("/src/")] if "/src/" in src else src
        env.update({"GO111MODULE": "off", "GOFLAGS": "", "GOPATH": os.pathsep.join([overlay, gopath, "/usr/share/gocode"]),
                    "GOCACHE": os.path.join(work, "gocache")})
    elif pkg.get("language") == "ruby":
        env["RUBYOPT"] = "-r%s" % os.path.join(HERE, "ruby", "record.rb")
        # the package's code first, then stand-ins for what the suite requires and Debian lacks
        # (bundler/setup, pry, simplecov: no-ops)
        env["RUBYLIB"] = os.pathsep.join([os.path.join(pkg["_suite"], "lib"), os.path.join(HERE, "ruby", "shims")])
        env.pop("BUNDLE_GEMFILE", None)
    elif py:
        env["PATH"] = os.path.dirname(py) + os.pathsep + env["PATH"]
        env["VIRTUAL_ENV"] = os.path.dirname(os.path.dirname(py))
    else:  # JavaScript: the recorder is required into every node process, V8 coverage on
        env["NODE_OPTIONS"] = "--require %s" % os.path.join(HERE, "js", "record.js")
        env["KEYPLAN_REC_JS"] = os.path.join(HERE, "js", "record.js")
        if pkg.get("v8_coverage", True):  # off where Jest transforms the sources (its own coverage)
            env["NODE_V8_COVERAGE"] = os.path.join(out, "v8")
        deps = os.path.join(work, "jsdeps", pkg["name"], "node_modules")
        env["NODE_PATH"] = deps
        env["PATH"] = os.pathsep.join([os.path.join(src, "node_modules", ".bin"), os.path.join(deps, ".bin"), env["PATH"]])
    env.update(pkg.get("env", {}))
    timeout = int(pkg.get("timeout", 300))
    cmd = pkg.get("command") or (
        "python -m pytest -q -o addopts='' -o filterwarnings= --timeout=%d %s %s"
        % (int(pkg.get("test_timeout", 20)), pkg.get("pytest_args", ""), pkg.get("tests", "tests"))
    )
    servers = pkg.get("ports", [6379]) + [16379]
    start = " ".join(
        "redis-server --port %d --save '' --appendonly no --dir /tmp >/dev/null 2>&1 &" % p for p in servers
    )
    waits = "; ".join("until redis-cli -p %d ping >/dev/null 2>&1; do sleep 0.1; done" % p for p in servers)
    script = "ip link set lo up; %s %s; %s timeout -k 10 %d sh -c %s; rc=$?; %s; exit $rc" % (
        start,
        waits,
        pkg.get("pre", "") and pkg["pre"] + ";",
        timeout,
        shlex.quote(cmd),
        "; ".join("redis-cli -p %d shutdown nosave >/dev/null 2>&1" % p for p in servers),
    )
    t0 = time.time()
    # Its own session, so that whatever the suite leaves behind (forked workers, servers) is
    # killed with the process group when it ends or runs past its time.
    log.write("$ unshare -n sh -c %s\n" % shlex.quote(script))
    log.flush()
    p = subprocess.Popen(["unshare", "-n", "sh", "-c", script], stdout=log, stderr=subprocess.STDOUT,
                         cwd=os.path.join(pkg.get("_suite", src), pkg.get("cwd", ".")), env=env, start_new_session=True)
    try:
        rc = p.wait(timeout + 30)
    except subprocess.TimeoutExpired:
        rc = 124
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    return out, rc, time.time() - t0


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
            try:
                with open(os.path.join(out, "run.json")) as f:
                    ran = json.load(f)
                if ran.get("rc") == 124:
                    outcome = "stopped at the time limit after %ds (partly run)" % ran["seconds"]
            except (OSError, ValueError):
                pass
            args = [sys.executable, os.path.join(HERE, "summarise.py"), "--name", pkg["name"], "--dist", pkg["dist"],
                    "--version", pkg["version"], "--src", src, "--events", out, "--outcome", outcome,
                    "--language", pkg.get("language", "python"),
                    "--registry", pkg.get("registry", {"python": "pypi", "javascript": "npm"}.get(pkg.get("language", "python"), "")),
                    "--sdist", os.path.join(work, "dl", pkg.get("_sdist") or sdist_name(work, pkg)),
                    "-o", os.path.join(RECORDED, pkg["name"] + ".json")]
            if pkg.get("registry") == "debian":
                args += ["--root", pkg["root"]]
            if pkg.get("client"):
                args += ["--client", pkg["client"]]
            if pkg.get("tests_from"):
                # the repository (a mirror's directory is owner+name) and the tag
                args += ["--tests-from", "%s at %s" % (os.path.basename(pkg["tests_from"][0].rstrip("/").removesuffix("/.git").removesuffix("/repo")).replace("+", "/") or pkg["tests_from"][0], pkg["tests_from"][1])]
            server = None
            if pkg.get("language") in ("javascript", "ruby", "go"):
                # a private server for COMMAND GETKEYS (these recorders log arguments)
                port = free_port()
                server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for _ in range(50):
                    if subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).returncode == 0:
                        break
                    time.sleep(0.1)
                args += ["--redis", "127.0.0.1:%d" % port]
            try:
                r = sh(args, log)
            finally:
                if server:
                    server.kill()
                    server.wait()
            return pkg["name"], "rc=%s %ss %s; summarise rc=%s" % (rc, secs and round(secs), outcome, r.returncode)
        except Exception as e:
            log.write("FAILED: %r\n" % e)
            return pkg["name"], "FAILED: %s (see %s)" % (e, logpath)


def free_port():
    import socket

    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        return so.getsockname()[1]


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
            if line.startswith("$ unshare -n"):
                last = ""  # the latest run only
            if line.startswith("$ "):
                continue
            s = line.strip().strip("=").strip()
            if (" passed" in s or " failed" in s or " error" in s or "no tests ran" in s) and " in " in s:
                last = s
            elif s.startswith("Tests:"):  # jest
                last = s
            elif re.match(r"^\d+ runs, \d+ assertions", s) or re.match(r"^\d+ examples?, \d+ failures?", s):  # minitest, rspec
                last = (last + "; " if re.match(r"^\d+ (runs|examples?)", last) else "") + s
            elif re.match(r"^(ok|FAIL)\s+\S+\s+[\d.]+s", s):  # go test, one line a package
                last = (last + "; " if re.match(r"^(ok|FAIL)\s", last) else "") + re.sub(r"\s+", " ", s)
            elif re.match(r"^\d+ (passing|failing|pending)", s):  # mocha
                last = (last + ", " if last.startswith(tuple("0123456789")) and ("passing" in last) else "") + s
    return last or "no test summary (timed out or crashed)"


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
