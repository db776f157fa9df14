#!/usr/bin/env node
// keyplan's npm launcher: runs the native binary of the platform package npm installed
// beside this one (an optional dependency per platform; npm installs only the one whose
// `os` and `cpu` match). KEYPLAN_BINARY names another binary to run instead.
"use strict";

const { spawnSync } = require("child_process");
const fs = require("fs");
const path = require("path");

const platform = `${process.platform}-${process.arch}`;
const exe = process.platform === "win32" ? "keyplan.exe" : "keyplan";

function binary() {
  if (process.env.KEYPLAN_BINARY) {
    return process.env.KEYPLAN_BINARY;
  }
  const pkg = `keyplan-${platform}`;
  try {
    return require.resolve(`${pkg}/bin/${exe}`);
  } catch (e) {
    const deps = require("../package.json").optionalDependencies || {};
    const known = Object.keys(deps);
    const why = known.includes(pkg)
      ? `its package ${pkg} is not installed (npm leaves an optional dependency out when it cannot fetch it or runs with --omit=optional): install it beside keyplan with \`npm install ${pkg}@${deps[pkg]}\``
      : `keyplan has no npm build for ${platform} (builds: ${known.map((k) => k.replace(/^keyplan-/, "")).join(", ") || "none"}): install it with \`pip install keyplan\` or \`cargo install keyplan\``;
    process.stderr.write(`error: no keyplan binary for ${platform}: ${why}\n`);
    process.exit(2);
  }
}

const bin = binary();
// A tarball unpacked by a tool that drops the execute bit still runs.
try {
  fs.accessSync(bin, fs.constants.X_OK);
} catch (e) {
  try {
    fs.chmodSync(bin, 0o755);
  } catch (e2) {
    // Left to spawnSync to report.
  }
}
const result = spawnSync(bin, process.argv.slice(2), { stdio: "inherit" });
if (result.error) {
  process.stderr.write(`error: cannot run ${bin}: ${result.error.message}\n`);
  process.exit(2);
}
if (result.signal) {
  // Die of the same signal, so a shell or CI sees what the binary saw.
  process.kill(process.pid, result.signal);
}
process.exit(result.status === null ? 2 : result.status);
