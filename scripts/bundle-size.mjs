#!/usr/bin/env node
/**
 * After the build: the worker bundle's size, raw and gzipped (what workerd's upload limit counts),
 * printed on one line; exits 1 when the gzipped bundle is over 1 MiB.
 *
 *   node scripts/bundle-size.mjs [dist/worker.js]
 */
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

const LIMIT = 1024 * 1024;
const file = process.argv[2] ?? "dist/worker.js";
let bytes;
try {
  bytes = readFileSync(file);
} catch (error) {
  process.stderr.write(`bundle-size: cannot read ${file} (${error.code ?? error.message}); build first\n`);
  process.exit(2);
}
const gzipped = gzipSync(bytes, { level: 9 }).length;
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const verdict = gzipped <= LIMIT ? "under" : "OVER";
process.stdout.write(`${file}: ${kib(bytes.length)}, gzip ${kib(gzipped)} (${verdict} the ${kib(LIMIT)} limit)\n`);
if (gzipped > LIMIT) process.exit(1);
