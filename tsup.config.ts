import { dirname, join, sep } from "node:path";
import { defineConfig, type Options } from "tsup";

type Plugin = NonNullable<Options["esbuildPlugins"]>[number];

/**
 * zod exports every one of its 40-odd locales (`z.locales`, `z.core.locales`); nothing here reads
 * any but English, its default (every message a caller sees is the service's own or English).
 * Bundled, they were 360 KB of the largest chunk's 794, parsed at every start and held as its
 * source (a two-byte string in V8, since their text is not all Latin-1; one em dash in a comment
 * of zod's keeps it so). Without them, and with the pages' two ellipses written as escapes, the
 * started Node entry is 2.2 MB smaller on Node 24 and on Node 20, and the worker bundle 255 KiB
 * (scripts/BENCHMARKS.md). zod's locales module is replaced by one that exports English only.
 */
const zodEnglishOnly: Plugin = {
  name: "zod-english-only",
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]v4[\\/](classic|core)[\\/]/.test(args.importer)
        ? { path: "english-only", namespace: "zod-locales", pluginData: join(dirname(args.importer), "../locales") }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: "zod-locales" }, (args) => ({
      contents: `export { default as en } from "./en.js";`,
      loader: "js",
      resolveDir: args.pluginData as string,
    }));
  },
};

export default defineConfig([
  {
    // The package and the Node, Bun and Deno entries. ESM with shared chunks, so each module
    // exists once. `node:` specifiers are kept: Deno resolves built-ins only by them outside a
    // package.json project (a `deno compile`d binary, dist/ copied elsewhere).
    entry: {
      index: "src/runtime/package.ts",
      node: "src/runtime/node.ts",
      bun: "src/runtime/bun.ts",
      deno: "src/runtime/deno.ts",
      agentcli: "src/cli/agentcli.ts",
      // RUNTIME=graph-server: what langgraph.json names, and the start the Node entry loads lazily.
      "graph-server/graph": "src/runtime/graph-server/graph.ts",
      "graph-server/auth": "src/runtime/graph-server/auth.ts",
      "graph-server/app": "src/runtime/graph-server/app.ts",
      "graph-server/start": "src/runtime/graph-server/start.ts",
    },
    // The LangGraph packages are optional dependencies (graph-server only): never bundled, so the
    // graph, the auth handler and the server share the one copy the server itself loads.
    external: [/^@langchain\//],
    // The dependencies every start loads are bundled into the shared chunks, as the worker build
    // bundles everything: a few files instead of about 230 modules (zod alone is 94, the
    // OpenTelemetry API 51, jose 46, hono 27), each of which the ESM loader keeps a module record,
    // a namespace and its source for. With npm start's flags, about 9 MB less RSS at start on
    // Node 24 (98.5 -> 89.3 MB) and 2 MB on Node 20, and /health answering 120-150 ms sooner after
    // the spawn (scripts/BENCHMARKS.md). None of them is an object the package hands across its
    // API: tools take JSON Schema, and a caller's `tracer` and the SDK meet the bundled
    // OpenTelemetry API through its global registry, which is made for several copies. The one
    // Hono app handed to other code, the graph-server's, imports hono from node_modules (the
    // plugin below). Left out: yaml (its Node build is CommonJS; its ESM build bundled measured
    // no smaller) and what a setting loads (postgres, the model SDKs, the OpenTelemetry SDK,
    // undici), loaded on first use.
    noExternal: ["zod", /^zod\//, "hono", /^hono\//, "@hono/node-server", "jose", "@opentelemetry/api", "@cfworker/json-schema", "eventsource-parser"],
    esbuildPlugins: [
      zodEnglishOnly,
      {
        // The LangGraph server mounts the graph-server's app (`app.route`) with its own hono, which
        // passes a sub-app's handlers through unchanged only when both share one copy's default
        // error handler; with two copies an error in our middleware would be answered by ours,
        // not the server's. So src/runtime/graph-server/ imports the hono in node_modules, the
        // server's, and only it: the rest of the service keeps the bundled copy.
        name: "graph-server-shares-the-servers-hono",
        setup(build) {
          build.onResolve({ filter: /^hono(\/|$)/ }, (args) =>
            args.importer.includes(`${sep}src${sep}runtime${sep}graph-server${sep}`) ? { path: args.path, external: true } : undefined,
          );
        },
      },
    ],
    removeNodeProtocol: false,
    format: ["esm"],
    platform: "node",
    target: "node20",
    dts: { entry: { index: "src/runtime/package.ts" } },
    sourcemap: true,
    // The maps name src/ files and lines, without the sources' text: `--enable-source-maps` (npm
    // start, the image) loads every map the entry imports, and the text was 80% of their bytes,
    // about 2-3 MB of the Node entry's RSS at start. Stack traces read the same.
    esbuildOptions(options) {
      options.sourcesContent = false;
    },
    clean: true,
    splitting: true,
  },
  {
    // The workerd module worker: one self-contained file on a neutral platform, so a stray Node
    // import fails this build instead of failing in production.
    entry: { worker: "src/runtime/worker.ts" },
    format: ["esm"],
    platform: "neutral",
    target: "es2022",
    noExternal: [/.*/],
    splitting: false,
    // workerd counts the gzipped upload: scripts/bundle-size.mjs prints it after the build.
    minify: true,
    // Keep `node:` specifiers visible to the stub plugin below instead of externalizing them.
    removeNodeProtocol: false,
    mainFields: ["module", "main"],
    esbuildOptions(options) {
      options.conditions = ["workerd", "worker", "browser", "import", "default"];
      // workerd's own modules (the Durable Object base class, sockets) are the runtime's, never
      // bundled; so are the Node modules nodejs_compat provides that PostgreSQL on workerd uses
      // (the postgres package's workerd build, and AsyncLocalStorage: src/runtime/workerd/postgres.ts).
      options.external = [...(options.external ?? []), "cloudflare:*", "node:async_hooks", "node:buffer", "node:events", "node:stream"];
    },
    esbuildPlugins: [
      zodEnglishOnly,
      {
        // The Anthropic SDK's main entry also carries local agent tools (shell, files) that import
        // Node modules at the top; the model client never reaches them. On workerd those imports
        // become a stub that fails only if something ever calls into it.
        name: "node-builtins-stubbed-in-worker",
        setup(build) {
          // Only for dependencies: a Node import in our own src still fails this build. The
          // postgres package's workerd build keeps its imports (external above, nodejs_compat).
          build.onResolve({ filter: /^(node:)?(child_process|fs|fs\/promises|os|path|stream|util|readline|events|worker_threads|crypto)$/ }, (args) =>
            args.importer.includes("/node_modules/") && !args.importer.includes("/node_modules/postgres/") ? { path: args.path, namespace: "node-stub" } : undefined,
          );
          build.onLoad({ filter: /.*/, namespace: "node-stub" }, (args) => ({
            contents: `const fail = () => { throw new Error(${JSON.stringify(`${args.path} is not available on workerd`)}); };
export const once = fail;
export class Worker { constructor() { fail(); } }
export default {};`,
            loader: "js",
          }));
        },
      },
    ],
    sourcemap: true,
    clean: false,
  },
]);
