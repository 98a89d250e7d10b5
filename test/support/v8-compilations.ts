/**
 * How V8 compiled a hot function under given flags, by its own account (`--trace-opt`): whether
 * it optimized on the main thread (`kSynchronous`) or on its compiler threads (`kConcurrent`).
 * The entries' scripts ask for the main thread (README, "Runtimes"); the tests of `npm start`
 * (Node) and `npm run start:deno` read it here.
 */
import { execFileSync } from "node:child_process";

/** A function hot enough for V8's optimizing tiers. */
export const HOT_SCRIPT =
  "function f(x) { let s = 0; for (let i = 0; i < 100; i++) s += (x * i) % 7; return s; }\n" +
  "let t = 0; for (let i = 0; i < 200000; i++) t += f(i); if (t < 0) console.log(t);\n";

/** Runs `command args` (which must pass --trace-opt to V8) and returns its compilations' modes, one per compilation. */
export function compilationModes(command: string, args: readonly string[], env?: NodeJS.ProcessEnv): ("synchronous" | "concurrent")[] {
  return execFileSync(command, args, { encoding: "utf8", ...(env ? { env } : {}) })
    .split("\n")
    .filter((line) => line.startsWith("[compiling method"))
    .map((line) => (line.includes("ConcurrencyMode::kSynchronous") ? "synchronous" : "concurrent"));
}
