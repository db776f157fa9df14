// keyplan corpus recorder for ioredis (a development tool, not run by CI).
//
//   KEYPLAN_REC_OUT=dir KEYPLAN_REC_ROOT=pkgdir node --require tests/corpus/js/record.js ...
//
// Wraps every copy of ioredis that the process loads: Redis.prototype.sendCommand (commands
// sent at once, including the EVALSHA/EVAL of defineCommand scripts), Redis.prototype.pipeline
// and .multi (the frame that opened a batch), Pipeline.prototype.sendCommand (the frame that
// queued each command) and Pipeline.prototype.exec (the frame that sent it). Each event is one
// JSON line in KEYPLAN_REC_OUT/events-<pid>.jsonl with the command names and their arguments
// (strings, cut at 300 characters); summarise.py asks a real server (COMMAND GETKEYS) for the
// keys. A frame is the first stack frame outside ioredis, this file and node's internals: its
// file relative to KEYPLAN_REC_ROOT when it lies there.
"use strict";
const fs = require("fs");
const path = require("path");
const Module = require("module");

const OUT = process.env.KEYPLAN_REC_OUT;
const ROOT = process.env.KEYPLAN_REC_ROOT ? fs.realpathSync(process.env.KEYPLAN_REC_ROOT) + path.sep : null;
const MAX_PER_SITE = 40;

if (OUT) {
  fs.mkdirSync(OUT, { recursive: true });
  Error.stackTraceLimit = Math.max(Error.stackTraceLimit || 10, 60);
  let fd = null;
  let fdPid = null;
  const seen = new Map();
  const real = new Map();

  function out(obj, site) {
    try {
      if (fdPid !== process.pid) {
        fd = fs.openSync(path.join(OUT, "events-" + process.pid + ".jsonl"), "a");
        fdPid = process.pid;
        seen.clear();
      }
      const n = seen.get(site) || 0;
      seen.set(site, n + 1);
      if (n >= MAX_PER_SITE) return;
      fs.writeSync(fd, JSON.stringify(obj) + "\n");
    } catch (e) {
      process.stderr.write("keyplan recorder: " + e + "\n");
    }
  }

  function realpath(f) {
    let r = real.get(f);
    if (r === undefined) {
      try {
        r = fs.realpathSync(f);
      } catch (e) {
        r = f;
      }
      real.set(f, r);
    }
    return r;
  }

  const clientDirs = [];
  const FRAME = /^\s*at (?:async )?(?:(.*?) \()?(.*?):(\d+):(\d+)\)?$/;

  function frame() {
    const stack = new Error().stack.split("\n").slice(1);
    let via = null;
    for (const line of stack) {
      const m = FRAME.exec(line);
      if (!m) continue;
      let file = m[2];
      if (file.startsWith("file://")) file = file.slice(7);
      if (file.startsWith("node:") || !file.startsWith("/")) continue;
      const rp = realpath(file);
      // ioredis itself, this file, and test spies that wrap the client's methods (sinon, jest)
      if (rp === __filename || clientDirs.some((d) => rp.startsWith(d)) || /[\\/]node_modules[\\/](sinon|jest-mock|@sinonjs)[\\/]/.test(rp)) {
        via = path.basename(rp) + ":" + (m[1] || "");
        continue;
      }
      const inRoot = ROOT !== null && rp.startsWith(ROOT) && !rp.includes(path.sep + "node_modules" + path.sep);
      return {
        file: inRoot ? rp.slice(ROOT.length) : rp,
        line: Number(m[3]),
        in_root: inRoot,
        func: m[1] || "",
        via,
      };
    }
    return null;
  }

  function str(a) {
    if (a === null || a === undefined) return "";
    if (Buffer.isBuffer(a)) a = a.toString("latin1");
    else if (typeof a !== "string") a = String(a);
    return a.length > 300 ? a.slice(0, 300) : a;
  }

  function flatArgs(args) {
    const outArgs = [];
    (function walk(x) {
      for (const a of x) {
        if (Array.isArray(a)) walk(a);
        else outArgs.push(str(a));
      }
    })(args || []);
    return outArgs;
  }

  function cmdOf(command) {
    return { cmd: String(command.name || "").toUpperCase(), args: flatArgs(command.args) };
  }

  function sitekey(...frames) {
    return frames.map((f) => (f ? f.file + ":" + f.line : "-")).join("|");
  }

  const SKIP = new Set(["MULTI", "EXEC", "DISCARD", "INFO", "PING", "SELECT", "CLIENT", "SCRIPT", "QUIT", "HELLO", "AUTH", "READONLY", "SUBSCRIBE", "PSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "FLUSHDB", "FLUSHALL", "CONFIG", "DBSIZE", "TIME", "KEYS", "SCAN"]);

  function patch(Redis, Pipeline) {
    if (!Redis || !Redis.prototype || Redis.prototype.__keyplanWrapped) return;
    Redis.prototype.__keyplanWrapped = true;
    const origSend = Redis.prototype.sendCommand;
    Redis.prototype.sendCommand = function (command, stream) {
      try {
        const c = cmdOf(command);
        if (!SKIP.has(c.cmd) && !(command.__keyplanQueued)) {
          const at = frame();
          if (at) out({ t: "command", cmd: c.cmd, args: c.args, at }, "c" + c.cmd + sitekey(at) + c.args.length);
        }
      } catch (e) {}
      return origSend.call(this, command, stream);
    };
    for (const name of ["pipeline", "multi"]) {
      const orig = Redis.prototype[name];
      if (typeof orig !== "function") continue;
      Redis.prototype[name] = function (...a) {
        const p = orig.apply(this, a);
        try {
          if (p && typeof p === "object" && typeof p.exec === "function") {
            p.__keyplanOpen = frame();
            p.__keyplanTx = name === "multi";
            // the Pipeline class of this ioredis, whatever its version calls its module
            patchPipeline(p.constructor);
          }
        } catch (e) {}
        return p;
      };
    }
    patchPipeline(Pipeline);
  }

  function patchPipeline(Pipeline) {
    if (Pipeline && Pipeline.prototype && !Object.prototype.hasOwnProperty.call(Pipeline.prototype, "__keyplanWrapped")) {
      Pipeline.prototype.__keyplanWrapped = true;
      const origQ = Pipeline.prototype.sendCommand;
      Pipeline.prototype.sendCommand = function (command) {
        try {
          command.__keyplanAt = frame();
          command.__keyplanQueued = true;
        } catch (e) {}
        return origQ.call(this, command);
      };
      const origExec = Pipeline.prototype.exec;
      Pipeline.prototype.exec = function (...a) {
        try {
          const q = (this._queue || []).filter((c) => !["MULTI", "EXEC"].includes(String(c.name).toUpperCase()));
          if (q.length) {
            const send = frame();
            const tx = !!(this.__keyplanTx || (this._queue || []).some((c) => String(c.name).toUpperCase() === "MULTI"));
            const cmds = q.map((c) => Object.assign(cmdOf(c), { at: c.__keyplanAt || null }));
            out(
              { t: "pipeline", transaction: tx, open: this.__keyplanOpen || null, send, commands: cmds },
              "p" + sitekey(this.__keyplanOpen, send) + cmds.map((c) => c.cmd + c.args.length).join("").slice(0, 400)
            );
          }
        } catch (e) {}
        return origExec.apply(this, a);
      };
    }
  }

  // Inside a Jest test environment (this file given as a setupFiles entry), modules come from
  // Jest's own registry, not Module._load: wrap the registry's ioredis directly.
  if (typeof jest !== "undefined" && typeof require === "function") {
    try {
      // resolved from the package under test, not from this file
      const file = require.resolve("ioredis", { paths: [process.cwd()] });
      const dir = realpath(file).replace(/([\\/]ioredis[\\/]).*$/, "$1");
      if (!clientDirs.includes(dir)) clientDirs.push(dir);
      const io = require(file);
      patch(io.default || io.Redis || io, require(path.join(dir, "built", "Pipeline.js")).default);
    } catch (e) {
      process.stderr.write("keyplan recorder: cannot wrap ioredis in jest: " + e + "\n");
    }
  }

  const origLoad = Module._load;
  Module._load = function (request, parent, isMain) {
    const exp = origLoad.apply(this, arguments);
    try {
      if (request === "ioredis" || /[\\/]ioredis[\\/]built[\\/](index|Redis|Pipeline)(\.js)?$/.test(request)) {
        const file = Module._resolveFilename(request, parent, isMain);
        const dir = realpath(file).replace(/([\\/]ioredis[\\/]).*$/, "$1");
        if (!clientDirs.includes(dir)) clientDirs.push(dir);
        const Redis = exp && (exp.default || exp.Redis || exp);
        let Pipeline = null;
        try {
          Pipeline = origLoad.call(Module, path.join(dir, "built", "Pipeline.js"), parent, false).default;
        } catch (e) {}
        patch(Redis, Pipeline);
        if (exp && exp.Cluster) patch(exp.Cluster, null);
      }
    } catch (e) {
      process.stderr.write("keyplan recorder: cannot wrap ioredis: " + e + "\n");
    }
    return exp;
  };
}
