#!/usr/bin/env node
// Builds keyplan's npm packages the way esbuild and biome ship theirs: one package per
// platform holding the native binary (`keyplan-linux-x64`, with `os` and `cpu` so npm installs
// only the matching one), and the `keyplan` package whose `bin` launcher runs it, listing
// every platform package as an optional dependency.
//
//   node .packaging/npm/pack.js OUTDIR PLATFORM=BINARY...
//   node .packaging/npm/pack.js dist linux-x64=target/release/keyplan
//
// PLATFORM is Node's `${process.platform}-${process.arch}` (linux-x64, linux-arm64,
// darwin-arm64, win32-x64, ...). Writes OUTDIR/keyplan-VERSION.tgz and one
// OUTDIR/keyplan-PLATFORM-VERSION.tgz per binary; the version and description are
// Cargo.toml's.
"use strict";

const { execFileSync } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

function fail(message) {
  process.stderr.write(`error: ${message}\n`);
  process.exit(2);
}

const [outArg, ...pairs] = process.argv.slice(2);
if (!outArg || pairs.length === 0) {
  fail("usage: pack.js OUTDIR PLATFORM=BINARY... (e.g. dist linux-x64=target/release/keyplan)");
}
const root = path.resolve(__dirname, "..", "..");
const out = path.resolve(outArg);
fs.mkdirSync(out, { recursive: true });

// [package]'s version, description, license and keywords.
const cargo = fs.readFileSync(path.join(root, "Cargo.toml"), "utf8");
const section = cargo.split(/^\[(?!package\])/m)[0];
const field = (name) => {
  const m = section.match(new RegExp(`^${name}\\s*=\\s*"([^"]*)"`, "m"));
  if (!m) fail(`Cargo.toml has no [package] ${name}`);
  return m[1];
};
const version = field("version");
const description = field("description");
const license = field("license");
const keywords = (section.match(/^keywords\s*=\s*\[([^\]]*)\]/m) || [, ""])[1]
  .split(",")
  .map((k) => k.trim().replace(/^"|"$/g, ""))
  .filter(Boolean);

const stage = fs.mkdtempSync(path.join(os.tmpdir(), "keyplan-npm-"));
const pack = (dir) => {
  const name = execFileSync("npm", ["pack", "--silent", "--pack-destination", out], {
    cwd: dir,
    encoding: "utf8",
  }).trim();
  process.stdout.write(`${path.join(out, name.split("\n").pop())}\n`);
};
const writeJson = (file, value) => fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);

const optional = {};
for (const pair of pairs) {
  const eq = pair.indexOf("=");
  if (eq < 0) fail(`${pair}: expected PLATFORM=BINARY`);
  const platform = pair.slice(0, eq);
  const binary = path.resolve(pair.slice(eq + 1));
  const m = platform.match(/^(linux|darwin|win32|freebsd)-(x64|arm64|ia32|arm)$/);
  if (!m) fail(`${platform}: not a Node platform-arch (linux-x64, darwin-arm64, win32-x64, ...)`);
  if (!fs.statSync(binary, { throwIfNoEntry: false })?.isFile()) fail(`${binary}: no such file`);
  const name = `keyplan-${platform}`;
  const dir = path.join(stage, name);
  fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
  const exe = m[1] === "win32" ? "keyplan.exe" : "keyplan";
  fs.copyFileSync(binary, path.join(dir, "bin", exe));
  fs.chmodSync(path.join(dir, "bin", exe), 0o755);
  writeJson(path.join(dir, "package.json"), {
    name,
    version,
    description: `keyplan's ${platform} binary (installed by the keyplan package)`,
    license,
    os: [m[1]],
    cpu: [m[2]],
    files: ["bin/"],
    preferUnplugged: true,
  });
  pack(dir);
  optional[name] = version;
}

const dir = path.join(stage, "keyplan");
fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
fs.copyFileSync(path.join(__dirname, "keyplan", "bin", "keyplan.js"), path.join(dir, "bin", "keyplan.js"));
fs.chmodSync(path.join(dir, "bin", "keyplan.js"), 0o755);
fs.copyFileSync(path.join(root, "README.md"), path.join(dir, "README.md"));
writeJson(path.join(dir, "package.json"), {
  name: "keyplan",
  version,
  description,
  license,
  keywords,
  bin: { keyplan: "bin/keyplan.js" },
  files: ["bin/"],
  engines: { node: ">=16" },
  optionalDependencies: optional,
});
pack(dir);
fs.rmSync(stage, { recursive: true, force: true });
