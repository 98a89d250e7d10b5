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
    mainFields: ["module", "main"],
    esbuildOptions(options) {
      options.conditions = ["workerd", "worker", "browser", "import", "default"];
    },
    sourcemap: true,
    clean: false,
  },
]);
