// The commands that serve each runtime's built entry, read from package.json's npm scripts, so the
// smoke tests (test/support/service-process.ts) and bench-chat --runtime run exactly what
// `npm start`, `npm run start:bun` and `npm run start:deno` run.
import { readFileSync } from "node:fs";
import path from "node:path";

/** The npm script of each runtime's built entry. */
export const ENTRY_SCRIPTS = { node: "start", bun: "start:bun", deno: "start:deno" };

/**
 * What the npm script `script` of the package at `root` runs: its leading `NAME=value` words as
 * environment, then the command (`node` is the running Node; other commands come from
 * node_modules/.bin, as npm puts it first on the PATH) and its arguments.
 */
export function scriptCommand(root, script) {
  const scripts = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).scripts;
  if (typeof scripts?.[script] !== "string") throw new Error(`package.json has no script ${script}`);
  const words = scripts[script].trim().split(/\s+/);
  const env = {};
  while (/^[A-Z_]+=/.test(words[0] ?? "")) {
    const [name, ...value] = words.shift().split("=");
    env[name] = value.join("=");
  }
  const [bin, ...args] = words;
  return { command: bin === "node" ? process.execPath : path.join(root, "node_modules", ".bin", bin), args, env };
}
