#!/usr/bin/env node
/**
 * The core bundled for a neutral platform (STYLE.md habit 1, as a2a-js bundles its edge entries
 * with --platform=neutral): src/index.ts (the public API, tooling included) and src/app.ts (the
 * composition root, with the providers it loads lazily), every dependency bundled in, resolved as
 * workerd resolves them. It fails on any Node built-in that anything in that graph imports, ours
 * or a dependency's, naming the importer.
 *
 * Why beside the worker build: the worker bundles only what src/runtime/worker.ts reaches, and it
 * stubs the Node built-ins that dependencies import (so the Anthropic SDK loads there), which
 * would also hide a new dependency that needs Node. Here nothing is stubbed but:
 * - the Postgres adapter (src/store/postgres/), Node-side by design and loaded only under
 *   CHECKPOINTER=sql;
 * - ALLOWED below: files of a dependency that import Node built-ins on paths the service never
 *   takes, each with the reason.
 *
 *   node scripts/check-core-bundle.mjs [ENTRY...]   prints one line; exits 1 listing every Node import
 *
 * ENTRY (paths from the repository root) replaces the core's two entries: the test gives it a
 * file that imports Node, to see the check fail.
 */
import { createRequire, isBuiltin } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
// tsup's own esbuild, so this check resolves exactly as the build does.
const esbuild = createRequire(createRequire(import.meta.url).resolve("tsup"))("esbuild");

/** Importer path (relative to the root) -> why its Node imports are never reached on a web runtime. */
const ALLOWED = [
  // The SDK's main entry re-exports its local agent tools (shell, files) and Node helpers; the
  // model client never calls them (the worker build stubs the same imports).
  { importer: /^node_modules\/@anthropic-ai\/sdk\/(internal\/node\.mjs|tools\/agent-toolset\/)/, why: "Anthropic SDK local tools" },
];

const found = [];
await esbuild.build({
  absWorkingDir: ROOT,
  entryPoints: process.argv.length > 2 ? process.argv.slice(2) : ["src/index.ts", "src/app.ts"],
  bundle: true,
  write: false,
  splitting: true,
  outdir: "core-check",
  format: "esm",
  platform: "neutral",
  target: "es2022",
  mainFields: ["module", "main"],
  conditions: ["workerd", "worker", "browser", "import", "default"],
  logLevel: "error",
  plugins: [
    {
      name: "node-imports",
      setup(build) {
        build.onResolve({ filter: /store\/postgres\/index\.js$/ }, () => ({ path: "postgres", namespace: "postgres-adapter" }));
        build.onLoad({ filter: /.*/, namespace: "postgres-adapter" }, () => ({ contents: "export async function openPostgres() {}", loader: "js" }));
        build.onResolve({ filter: /.*/ }, (args) => {
          if (!isBuiltin(args.path)) return undefined;
          const importer = path.relative(ROOT, args.importer);
          if (!ALLOWED.some((a) => a.importer.test(importer))) found.push(`${importer} imports ${args.path}`);
          return { path: args.path, external: true };
        });
      },
    },
  ],
}).catch(() => process.exit(1)); // esbuild has printed its errors

if (found.length > 0) {
  process.stderr.write(`core bundle (neutral platform): ${found.length} Node import(s), which workerd and browsers do not have:\n`);
  for (const line of [...new Set(found)]) process.stderr.write(`  ${line}\n`);
  process.exit(1);
}
process.stdout.write("core bundle (neutral platform): no Node imports\n");
