# keyplan corpus recorder for redis-py (a development tool, not run by CI).
#
# Put this directory on PYTHONPATH and set KEYPLAN_REC_OUT (a directory). Every Python process
# then logs, as JSON lines in KEYPLAN_REC_OUT/events-<pid>.jsonl:
#   - every keyed command sent (Redis.execute_command, sync and asyncio, and the commands a
#     pipeline sends at once while WATCHing), with the first stack frame outside redis-py;
#   - every pipeline or transaction executed, with the frame that created it, the frame that
#     called execute(), and each queued command with the frame that queued it;
#   - script runs are the EVAL/EVALSHA/FCALL commands these produce (Script.__call__,
#     register_script objects, redis-py's Lock) with the frame of the caller.
# Keys come from the real server: COMMAND INFO (first/last/step) or COMMAND GETKEYS for
# commands with movable keys or subcommands, asked on a raw socket of KEYPLAN_REC_REDIS
# (host:port, default 127.0.0.1:6379).
# With KEYPLAN_REC_ROOT set (the package's source root) and Python 3.12+, the lines of files
# under that root that the process executed are logged too (lines-<pid>.txt), through
# sys.monitoring with each line disabled after its first hit.
import os
import sys

_OUT = os.environ.get("KEYPLAN_REC_OUT")


def _install():
    import json
    import socket
    import threading
    import importlib.abc
    import importlib.util

    here = os.path.dirname(os.path.realpath(__file__)) + os.sep
    _real = {}

    def realpath(fn):
        r = _real.get(fn)
        if r is None:
            r = _real[fn] = os.path.realpath(fn)
        return r
    root = os.environ.get("KEYPLAN_REC_ROOT")
    root = os.path.realpath(root) + os.sep if root else None
    addr = os.environ.get("KEYPLAN_REC_REDIS", "127.0.0.1:6379")
    host, _, port = addr.rpartition(":")
    port = int(port)
    state = {"pid": None, "fd": None, "lfd": None, "sock": None, "buf": b""}
    lock = threading.RLock()
    seen = {}
    MAX_PER_SITE = 40
    redis_dirs = []

    def _fd(kind):
        pid = os.getpid()
        if state["pid"] != pid:
            state["pid"] = pid
            state["fd"] = os.open(
                os.path.join(_OUT, "events-%d.jsonl" % pid),
                os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                0o644,
            )
            state["lfd"] = None
            state["sock"] = None
            seen.clear()
        if kind == "lines" and state["lfd"] is None:
            state["lfd"] = os.open(
                os.path.join(_OUT, "lines-%d.txt" % pid),
                os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                0o644,
            )
        return state["fd"] if kind == "events" else state["lfd"]

    # ---- the server's key extraction ---------------------------------------------------
    def _enc(a):
        if isinstance(a, bytes):
            return a
        if isinstance(a, memoryview):
            return a.tobytes()
        if isinstance(a, str):
            return a.encode("utf-8", "surrogateescape")
        if isinstance(a, float):
            return repr(a).encode()
        return str(a).encode("utf-8", "surrogateescape")

    def _sock():
        if state["sock"] is None or state["pid"] != os.getpid():
            s = socket.create_connection((host, port), timeout=5)
            state["sock"] = s
            state["buf"] = b""
        return state["sock"]

    def _readline():
        while b"\r\n" not in state["buf"]:
            chunk = state["sock"].recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            state["buf"] += chunk
        line, _, state["buf"] = state["buf"].partition(b"\r\n")
        return line

    def _readn(n):
        while len(state["buf"]) < n + 2:
            chunk = state["sock"].recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            state["buf"] += chunk
        data, state["buf"] = state["buf"][:n], state["buf"][n + 2 :]
        return data

    def _reply():
        line = _readline()
        t, rest = line[:1], line[1:]
        if t == b"-":
            return RuntimeError(rest.decode("utf-8", "replace"))
        if t == b":":
            return int(rest)
        if t == b"+":
            return rest
        if t == b"$":
            n = int(rest)
            return None if n < 0 else _readn(n)
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [_reply() for _ in range(n)]
        raise ConnectionError("unexpected reply %r" % line[:40])

    def _ask(args):
        with lock:
            try:
                s = _sock()
                out = [b"*%d\r\n" % len(args)]
                for a in args:
                    out.append(b"$%d\r\n%s\r\n" % (len(a), a))
                s.sendall(b"".join(out))
                return _reply()
            except (OSError, ConnectionError, ValueError) as e:
                state["sock"] = None
                return RuntimeError("recorder socket: %s" % e)

    info_cache = {}

    def _info(name):
        if name not in info_cache:
            r = _ask([b"COMMAND", b"INFO", name.encode()])
            spec = None
            if isinstance(r, list) and r and isinstance(r[0], list):
                d = r[0]
                flags = [f.decode() if isinstance(f, bytes) else str(f) for f in d[2]]
                subs = d[9] if len(d) > 9 else []
                spec = {
                    "first": d[3],
                    "last": d[4],
                    "step": d[5],
                    "movable": "movablekeys" in flags or bool(subs),
                }
            info_cache[name] = spec
        return info_cache[name]

    def _keys(args):
        """The keys of one command as the server sees them; None when it can't tell."""
        try:
            parts = [_enc(a) for a in args]
        except Exception:
            return None
        if not parts:
            return []
        head = parts[0].split(b" ")
        parts = head + parts[1:]
        name = parts[0].decode("utf-8", "replace").lower()
        spec = _info(name)
        if spec is None:
            return None
        if not spec["movable"]:
            if spec["first"] == 0:
                return []
            last = spec["last"]
            last = len(parts) + last if last < 0 else last
            return [
                parts[i].decode("utf-8", "surrogateescape")
                for i in range(spec["first"], min(last, len(parts) - 1) + 1, spec["step"] or 1)
            ]
        r = _ask([b"COMMAND", b"GETKEYS"] + parts)
        if isinstance(r, list):
            return [k.decode("utf-8", "surrogateescape") for k in r]
        if isinstance(r, RuntimeError) and "socket" not in str(r):
            return []
        return None

    def _name(args):
        try:
            return _enc(args[0]).decode("utf-8", "replace").upper()
        except Exception:
            return "?"

    # Test helpers that wrap a client's methods (a spy's wrapper is not the caller)
    WRAPPERS = (os.sep + "before_after" + os.sep, os.sep + "unittest" + os.sep + "mock.py", os.sep + "mock" + os.sep + "mock.py",
                os.sep + "pytest_mock" + os.sep, os.sep + "wrapt" + os.sep)

    # ---- frames --------------------------------------------------------------------------
    def _frame():
        f = sys._getframe(1)
        stack = []
        while f is not None:
            fn = f.f_code.co_filename
            real = realpath(fn)
            if real.startswith(here) or any(real.startswith(d) for d in redis_dirs) or any(w in real for w in WRAPPERS):
                stack.append("%s:%s" % (os.path.basename(fn), f.f_code.co_name))
                f = f.f_back
                continue
            path = real
            if root and path.startswith(root) and not fn.startswith("<"):
                rel = path[len(root) :]
            else:
                rel = None
            via = stack[-1] if stack else None
            return {"file": rel if rel is not None else path, "line": f.f_lineno, "in_root": rel is not None, "func": f.f_code.co_name, "via": via}
        return None

    def _emit(ev, site):
        try:
            with lock:
                fd = _fd("events")
                n = seen.get(site, 0)
                seen[site] = n + 1
                if n >= MAX_PER_SITE:
                    if n + 1 in (100, 1000, 10000, 100000):
                        os.write(fd, (json.dumps({"t": "count", "site": site, "n": n + 1}) + "\n").encode())
                    return
                os.write(fd, (json.dumps(ev) + "\n").encode("utf-8", "surrogatepass"))
        except Exception as e:  # never break the suite
            sys.stderr.write("keyplan recorder: %s\n" % e)

    def _sitekey(*frames):
        return "|".join("%s:%s" % (f["file"], f["line"]) if f else "-" for f in frames)

    def _command_event(args, kind, pipe=None):
        name = _name(args)
        keys = _keys(args)
        script = name in ("EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO")
        if not keys and not script:
            return
        fr = _frame()
        if fr is None:
            return
        ev = {"t": kind, "cmd": name, "keys": keys, "at": fr}
        if pipe is not None:
            ev["pipe_open"] = getattr(pipe, "_kp_open", None)
        _emit(ev, kind + name + _sitekey(fr) + repr(len(keys or ())))

    # ---- wrappers ------------------------------------------------------------------------
    def _wrap_client(mod, is_async):
        Redis = getattr(mod, "Redis", None)
        Pipeline = getattr(mod, "Pipeline", None)
        if Redis is None or Pipeline is None or getattr(Redis, "_kp_wrapped", False):
            return
        Redis._kp_wrapped = True
        orig_exec = Redis.execute_command
        if is_async:
            async def execute_command(self, *args, **options):
                _command_event(args, "command")
                return await orig_exec(self, *args, **options)
        else:
            def execute_command(self, *args, **options):
                _command_event(args, "command")
                return orig_exec(self, *args, **options)
        Redis.execute_command = execute_command

        orig_init = Pipeline.__init__

        def __init__(self, *a, **k):
            orig_init(self, *a, **k)
            self._kp_open = _frame()
            self._kp_queued = {}

        Pipeline.__init__ = __init__

        orig_queue = Pipeline.pipeline_execute_command

        def pipeline_execute_command(self, *args, **options):
            r = orig_queue(self, *args, **options)
            try:
                q = self.__dict__.setdefault("_kp_queued", {})
                if self.command_stack:
                    q[id(self.command_stack[-1])] = _frame()
            except Exception:
                pass
            return r

        Pipeline.pipeline_execute_command = pipeline_execute_command

        orig_immediate = Pipeline.immediate_execute_command
        if is_async:
            async def immediate_execute_command(self, *args, **options):
                _command_event(args, "watched", self)
                return await orig_immediate(self, *args, **options)
        else:
            def immediate_execute_command(self, *args, **options):
                _command_event(args, "watched", self)
                return orig_immediate(self, *args, **options)
        Pipeline.immediate_execute_command = immediate_execute_command

        def _pipe_event(self):
            try:
                stack = list(self.command_stack)
                if not stack:
                    return
                q = self.__dict__.get("_kp_queued", {})
                cmds = []
                for item in stack:
                    args = item[0] if isinstance(item, tuple) else getattr(item, "args", ())
                    fr = q.get(id(item))
                    cmds.append({"cmd": _name(args), "keys": _keys(args), "at": fr})
                tx = bool(getattr(self, "transaction", False) or getattr(self, "is_transaction", False) or getattr(self, "explicit_transaction", False))
                send = _frame()
                if send is None:
                    return
                ev = {"t": "pipeline", "transaction": tx, "open": getattr(self, "_kp_open", None), "send": send, "commands": cmds}
                site = "pipeline" + _sitekey(ev["open"], send) + "".join(c["cmd"] + str(len(c["keys"] or ())) for c in cmds[:50]) + str(len(cmds))
                _emit(ev, site)
            except Exception as e:
                sys.stderr.write("keyplan recorder: %r\n" % e)

        orig_execute = Pipeline.execute
        if is_async:
            async def execute(self, *a, **k):
                _pipe_event(self)
                return await orig_execute(self, *a, **k)
        else:
            def execute(self, *a, **k):
                _pipe_event(self)
                return orig_execute(self, *a, **k)
        Pipeline.execute = execute

    TARGETS = {"redis.client": False, "redis.asyncio.client": True}

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname not in TARGETS:
                return None
            sys.meta_path.remove(self)
            try:
                spec = importlib.util.find_spec(fullname)
            finally:
                sys.meta_path.insert(0, self)
            if spec is None or spec.loader is None:
                return spec
            loader = spec.loader
            orig = loader.exec_module

            def exec_module(module, _orig=orig, _name=fullname):
                _orig(module)
                try:
                    d = os.path.dirname(os.path.realpath(module.__file__))
                    if _name == "redis.asyncio.client":
                        d = os.path.dirname(d)
                    d = d + os.sep
                    if d not in redis_dirs:
                        redis_dirs.append(d)
                    _wrap_client(module, TARGETS[_name])
                except Exception as e:
                    sys.stderr.write("keyplan recorder: cannot wrap %s: %r\n" % (_name, e))

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Finder())

    # ---- executed lines of the package (Python 3.12+) ---------------------------------------
    mon = getattr(sys, "monitoring", None)
    if root and mon is not None:
        TOOL = 4
        try:
            mon.use_tool_id(TOOL, "keyplan-recorder")
        except ValueError:
            return
        DISABLE = mon.DISABLE
        ok = {}

        def on_line(code, line):
            fn = code.co_filename
            rel = ok.get(fn)
            if rel is None:
                p = os.path.realpath(fn)
                rel = p[len(root):] if p.startswith(root) and not fn.startswith("<") else ""
                ok[fn] = rel
            if rel:
                try:
                    os.write(_fd("lines"), ("%s\t%d\n" % (rel, line)).encode("utf-8", "surrogateescape"))
                except Exception:
                    pass
            return DISABLE

        mon.register_callback(TOOL, mon.events.LINE, on_line)
        mon.set_events(TOOL, mon.events.LINE)


if _OUT:
    try:
        os.makedirs(_OUT, exist_ok=True)
        _install()
    except Exception as _e:
        sys.stderr.write("keyplan recorder not installed: %r\n" % (_e,))
