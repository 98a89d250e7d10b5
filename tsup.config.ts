import { defineConfig } from "tsup";

export default defineConfig([
  {
    // The package and the Node entry. ESM with shared chunks, so each module exists once.
    entry: { index: "src/index.ts", node: "src/runtime/node.ts", agentcli: "src/cli/agentcli.ts" },
    format: ["esm"],
    platform: "node",
    target: "node20",
    dts: { entry: { index: "src/index.ts" } },
    sourcemap: true,
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
    mainFields: ["module", "main"],
    esbuildOptions(options) {
      options.conditions = ["workerd", "worker", "browser", "import", "default"];
    },
    // CHECKPOINTER=sql needs a TCP socket and the postgres package: on workerd that adapter is
    // replaced by a stub that says so, so nothing Node-only enters the worker.
    esbuildPlugins: [
      {
        name: "no-postgres-in-worker",
        setup(build) {
          build.onResolve({ filter: /store\/postgres\/index\.js$/ }, () => ({ path: "postgres-stub", namespace: "stub" }));
          build.onLoad({ filter: /.*/, namespace: "stub" }, () => ({
            contents: "export async function openPostgres() { throw new Error('CHECKPOINTER=sql is not available in the worker build'); }",
            loader: "js",
          }));
        },
      },
    ],
    sourcemap: true,
    clean: false,
  },
]);
