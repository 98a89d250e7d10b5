/**
 * The architecture of ../shared/STYLE.md as import rules, checked by `npm run lint:deps` (part of
 * `npm run typecheck`): no cycles, the layer order one way, adapters and runtime-specific packages
 * only where they are wired, Node built-ins only on the Node side. Type-only imports count
 * (tsPreCompilationDeps): a type that points up the layers is a dependency that points up.
 */

/**
 * Layer ranks, highest first: a file may import its own rank or a lower one. These are the ranks
 * of ../shared/tools/layers.mjs (its RANK table, by first path segment under src/), so the
 * reporter and this checker agree; every file not named here (errors.ts, clock.ts, ids.ts,
 * json.ts, observability/, ...) is the base, rank 0.
 */
const LAYERS = [
  { rank: 9, name: "runtime", path: "^src/(runtime|cli)/" },
  { rank: 8, name: "composition", path: "^src/(index\\.ts$|app\\.ts$|tooling/)" },
  { rank: 7, name: "http", path: "^src/http/" },
  { rank: 6, name: "a2a", path: "^src/a2a/" },
  { rank: 5, name: "runs", path: "^src/runs/" },
  { rank: 4, name: "agent-approvals", path: "^src/(agent|approvals)/" },
  { rank: 3, name: "policy", path: "^src/policy/" },
  { rank: 2, name: "auth", path: "^src/auth/" },
  { rank: 1, name: "store-settings", path: "^src/(store|settings)/" },
];
const BASE = { rank: 0, name: "base", path: "^src/", pathNot: LAYERS.map((l) => l.path) };

const layerRules = [...LAYERS, BASE]
  .map((layer) => {
    const higher = LAYERS.filter((l) => l.rank > layer.rank).map((l) => l.path);
    if (higher.length === 0) return undefined;
    return {
      name: `layer-${layer.name}-imports-up`,
      comment: `src/ layer order (STYLE.md): ${layer.name} (rank ${layer.rank}) may import only its own rank or lower. Invert the dependency: declare a small port here and implement it above.`,
      severity: "error",
      from: { path: layer.path, ...(layer.pathNot ? { pathNot: layer.pathNot } : {}) },
      to: { path: higher },
    };
  })
  .filter(Boolean);

/** Only the composition root and the runtime entries pick adapters; an adapter's own files may import each other. */
const ADAPTERS = ["src/store/memory/", "src/store/postgres/", "src/store/durable/", "src/agent/providers/"];
const adapterRules = ADAPTERS.map((dir) => ({
  name: `adapter-${dir.replace(/^src\//, "").replace(/\/$/, "").replace(/\//g, "-")}-outside-composition`,
  comment: `Only src/app.ts and src/runtime/* import the adapter ${dir}; the core takes the port it needs.`,
  severity: "error",
  // tooling/ (the eval's grader builds its model from JUDGE_*) composes like app.ts; never used by the domain.
  from: { path: "^src/", pathNot: ["^src/app\\.ts$", "^src/runtime/", "^src/tooling/", `^${dir}`] },
  to: { path: `^${dir}` },
}));

/** Node built-ins, and Node's ambient types, stay on the Node side. */
const NODE_SIDE = ["^src/runtime/", "^src/cli/", "^src/store/postgres/"];

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "An import cycle in src/ (type-only imports count). Break it by moving the shared type down a layer.",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    ...layerRules,
    ...adapterRules,
    {
      name: "runtime-package-outside-runtime",
      comment: "Runtime-specific packages (the Node server, workerd types and tools, hono's runtime adapters) are imported only by src/runtime/*.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/runtime/" },
      to: {
        path: [
          "^node_modules/(@hono/node-server|@hono/node-ws|@cloudflare/workers-types|miniflare|wrangler|ws|undici)/",
          "^node_modules/hono/dist/(types/|cjs/)?adapter/",
        ],
      },
    },
    {
      name: "node-builtin-in-core",
      comment: "The core runs on web standards (STYLE.md habit 1): node:* and bare built-ins (fs, path, crypto, ...) only in src/runtime/, src/cli/ and src/store/postgres/.",
      severity: "error",
      from: { path: "^src/", pathNot: NODE_SIDE },
      to: { dependencyTypes: ["core"] },
    },
    {
      name: "node-types-in-core",
      comment: "A reference to @types/node outside src/runtime/, src/cli/ and src/store/postgres/ brings Node's globals into the core.",
      severity: "error",
      from: { path: "^src/", pathNot: NODE_SIDE },
      to: { path: "^node_modules/@types/node/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Type-only imports are dependencies too (the layer order holds for types).
    tsPreCompilationDeps: true,
    // `process.getBuiltinModule("node:fs")` is a Node import by another name.
    detectProcessBuiltinModuleCalls: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".mts", ".js", ".mjs", ".d.ts", ".json"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
