#!/usr/bin/env node
// Builds keyplan's npm packages the way esbuild and biome ship theirs: one package per
// platform holding the native binary, under keyplan's own npm scope so nobody else can publish
// a look-alike (`@keyplan/linux-x64-gnu`, with `os`, `cpu` and, on Linux, `libc`, so npm
// installs only the matching one), and the `keyplan` package whose `bin` launcher runs it,
// listing every platform package as an optional dependency.
//
//   node .packaging/npm/pack.js OUTDIR PLATFORM=BINARY...
//   node .packaging/npm/pack.js dist linux-x64-gnu=target/release/keyplan
//
// PLATFORM is Node's `${process.platform}-${process.arch}`, with `-gnu` or `-musl` after a
// Linux one (linux-x64-gnu, linux-arm64-musl, darwin-arm64, win32-x64, ...). A Linux binary
// must be stripped (no .symtab, no .debug_* sections: `cargo build --release` strips it), so
// the tarball is the same whichever build made it. Writes one
// OUTDIR/keyplan-PLATFORM-VERSION.tgz per binary, then OUTDIR/keyplan-VERSION.tgz, and prints
// their paths in that order (the order to publish them in); the version and description are
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

// The names of an ELF file's symbol table and debug sections (none in a stripped binary);
// [] for a file that is not ELF (Mach-O and PE binaries are stripped by the release profile).
function elfDebugSections(file) {
  const b = fs.readFileSync(file);
  if (b.length < 64 || b.readUInt32BE(0) !== 0x7f454c46) return [];
  const is64 = b[4] === 2;
  const le = b[5] === 1;
  const u16 = (o) => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
  const u32 = (o) => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
  const addr = (o) => (is64 ? Number(le ? b.readBigUInt64LE(o) : b.readBigUInt64BE(o)) : u32(o));
  const shoff = addr(is64 ? 0x28 : 0x20);
  const shentsize = u16(is64 ? 0x3a : 0x2e);
  const shnum = u16(is64 ? 0x3c : 0x30);
  const shstrndx = u16(is64 ? 0x3e : 0x32);
  if (shoff === 0 || shnum === 0 || shoff + shnum * shentsize > b.length) return [];
  const header = (i) => shoff + i * shentsize;
  const strtab = addr(header(shstrndx) + (is64 ? 0x18 : 0x10));
  const names = [];
  for (let i = 0; i < shnum; i++) {
    const start = strtab + u32(header(i));
    const end = b.indexOf(0, start);
    const name = b.toString("latin1", start, end < 0 ? start : end);
    // (.debug_gdb_scripts is loaded with the program, and stays in a stripped one)
    if (name === ".symtab" || (name.startsWith(".debug_") && name !== ".debug_gdb_scripts")) names.push(name);
  }
  return names;
}

// The license texts, which npm packs beside package.json.
function copyLicenses(dir) {
  for (const f of ["LICENSE-MIT", "LICENSE-APACHE"]) fs.copyFileSync(path.join(root, f), path.join(dir, f));
}

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
  const m = platform.match(/^(?:(linux)-(x64|arm64|arm)-(gnu|musl)|(darwin|win32|freebsd)-(x64|arm64|ia32|arm))$/);
  if (!m) {
    fail(`${platform}: not a Node platform-arch, with -gnu or -musl after linux (linux-x64-gnu, linux-arm64-musl, darwin-arm64, win32-x64, ...)`);
  }
  const [osName, cpu, libc] = m[1] ? [m[1], m[2], m[3]] : [m[4], m[5], null];
  if (!fs.statSync(binary, { throwIfNoEntry: false })?.isFile()) fail(`${binary}: no such file`);
  const unstripped = elfDebugSections(binary);
  if (unstripped.length > 0) {
    fail(`${binary}: not stripped (${unstripped.join(", ")}): build it with \`cargo build --release\` (which strips) or \`strip\` it`);
  }
  const name = `@keyplan/${platform}`;
  const dir = path.join(stage, platform);
  fs.mkdirSync(path.join(dir, "bin"), { recursive: true });
  const exe = osName === "win32" ? "keyplan.exe" : "keyplan";
  copyLicenses(dir);
  fs.copyFileSync(binary, path.join(dir, "bin", exe));
  fs.chmodSync(path.join(dir, "bin", exe), 0o755);
  writeJson(path.join(dir, "package.json"), {
    name,
    version,
    description: `keyplan's ${platform} binary (installed by the keyplan package)`,
    license,
    os: [osName],
    cpu: [cpu],
    ...(libc ? { libc: [libc === "gnu" ? "glibc" : "musl"] } : {}),
    files: ["bin/", "LICENSE-MIT", "LICENSE-APACHE"],
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
copyLicenses(dir);
writeJson(path.join(dir, "package.json"), {
  name: "keyplan",
  version,
  description,
  license,
  keywords,
  bin: { keyplan: "bin/keyplan.js" },
  files: ["bin/", "LICENSE-MIT", "LICENSE-APACHE"],
  engines: { node: ">=16" },
  optionalDependencies: optional,
});
pack(dir);
fs.rmSync(stage, { recursive: true, force: true });
