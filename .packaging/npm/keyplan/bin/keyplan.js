#!/usr/bin/env node
// keyplan's npm launcher: runs the native binary of the platform package npm installed
// beside this one (an optional dependency per platform, @keyplan/linux-x64-gnu and so on; npm
// installs only the one whose `os`, `cpu` and `libc` match). KEYPLAN_BINARY names another
// binary to run instead.
"use strict";

const { spawnSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

// The C library of this Linux: "musl" or "gnu". Node's own report says which glibc it runs
// on (absent on musl); where the report is unavailable, the musl loader's presence decides.
function linuxLibc(report = () => process.report.getReport(), exists = fs.existsSync) {
  try {
    if (process.report) process.report.excludeNetwork = true;
    const header = report().header;
    if (header) return header.glibcVersionRuntime ? "gnu" : "musl";
  } catch (e) {
    // Falls through to the loader.
  }
  const arch = { x64: "x86_64", arm64: "aarch64", arm: "armhf" }[process.arch] || process.arch;
  return exists(`/lib/ld-musl-${arch}.so.1`) ? "musl" : "gnu";
}

// This platform's package name part: linux-x64-gnu, linux-arm64-musl, darwin-arm64, win32-x64.
function platformKey(libc = linuxLibc) {
  const base = `${process.platform}-${process.arch}`;
  return process.platform === "linux" ? `${base}-${libc()}` : base;
}

const exe = process.platform === "win32" ? "keyplan.exe" : "keyplan";

function binary(platform) {
  if (process.env.KEYPLAN_BINARY) {
    // A path, never a name looked up on PATH (spawn would search PATH for a bare name).
    return path.resolve(process.env.KEYPLAN_BINARY);
  }
  const pkg = `@keyplan/${platform}`;
  try {
    return require.resolve(`${pkg}/bin/${exe}`);
  } catch (e) {
    const deps = require("../package.json").optionalDependencies || {};
    const known = Object.keys(deps);
    const version = require("../package.json").version;
    const why = known.includes(pkg)
      ? `its package ${pkg} is not installed (npm leaves an optional dependency out when it cannot fetch it, runs with --omit=optional, or the lock file was made on another platform): install it beside keyplan with \`npm install ${pkg}@${deps[pkg]}\``
      : `keyplan has no npm build for ${platform} (builds: ${known.map((k) => k.replace(/^@keyplan\//, "")).join(", ") || "none"}): install it with \`pip install keyplan==${version}\` or \`cargo install --locked keyplan --version ${version}\``;
    process.stderr.write(`error: no keyplan binary for ${platform}: ${why}\n`);
    process.exit(2);
  }
}

if (require.main !== module) {
  // Required (by the tests): the detection only, nothing run.
  module.exports = { linuxLibc, platformKey };
  return;
}

const bin = binary(platformKey());
if (process.env.KEYPLAN_BINARY) {
  // Someone else's file: run it only as it is, never change its mode (a chmod would make a
  // private file world-readable and then run whatever it holds).
  const st = fs.statSync(bin, { throwIfNoEntry: false });
  let why = null;
  if (!st) {
    why = "does not exist";
  } else if (!st.isFile()) {
    why = "is not a file";
  } else {
    try {
      fs.accessSync(bin, fs.constants.X_OK);
    } catch (e) {
      why = `is not executable (mode ${(st.mode & 0o7777).toString(8).padStart(4, "0")})`;
    }
  }
  if (why) {
    process.stderr.write(
      `error: KEYPLAN_BINARY names ${JSON.stringify(bin)}, which ${why}: point it at keyplan's executable binary (\`chmod u+x\` it if it is yours) or unset KEYPLAN_BINARY to run the installed one\n`,
    );
    process.exit(2);
  }
} else {
  try {
    fs.accessSync(bin, fs.constants.X_OK);
  } catch (e) {
    // The platform package's own binary, from a tarball unpacked by a tool that dropped the
    // execute bit: execute where it can already be read, and no wider.
    try {
      const mode = fs.statSync(bin).mode & 0o777;
      fs.chmodSync(bin, mode | ((mode & 0o444) >> 2));
    } catch (e2) {
      // Left to spawnSync to report.
    }
  }
}
const result = spawnSync(bin, process.argv.slice(2), { stdio: "inherit" });
if (result.error) {
  process.stderr.write(`error: cannot run ${bin}: ${result.error.message}\n`);
  process.exit(2);
}
if (result.signal) {
  // Die of the same signal, so a shell or CI sees what the binary saw. Node ignores some
  // (SIGPIPE) and handles others itself, so the kill may not end this process: then exit
  // as a shell reports a child killed by signal n, 128 + n.
  const number = os.constants.signals[result.signal];
  try {
    process.kill(process.pid, result.signal);
  } catch (e) {
    // Falls through to the exit status below.
  }
  process.exit(number ? 128 + number : 2);
}
process.exit(result.status === null ? 2 : result.status);
