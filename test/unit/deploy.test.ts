/**
 * The deploy artefacts under scripts/deploy/, which neither Docker nor Helm can run here: the
 * chart rendered with its values (test/support/helm-lite.ts) and parsed as Kubernetes objects,
 * and the Dockerfile's instructions read and checked against package.json, the build's entries
 * and the repository, so neither can drift from the service.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import semver from "semver";
import { parseAllDocuments } from "yaml";
import { parseSettings } from "../../src/settings/parse.js";
import { settingsShape } from "../../src/settings/schema.js";
import { renderChart } from "../support/helm-lite.js";
import { compilationModes, HOT_SCRIPT } from "../support/v8-compilations.js";

const CHART = "scripts/deploy/helm/agent-service";
const DOCKERFILE = "scripts/deploy/Dockerfile";
// Loaded by URL, not imported: tsc would otherwise typecheck the build config with the tests.
const tsupConfig = ((await import(new URL("../../tsup.config.ts", import.meta.url).href)) as { default: unknown }).default;
const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string>; engines: { node: string } };

/** What `npm start` passes to node before the entry. */
function startFlags(): string[] {
  const start = pkg.scripts.start!.split(/\s+/);
  return start.slice(1, start.findIndex((w) => w.startsWith("dist/")));
}

type Obj = Record<string, any>;

/** Every object of the rendered chart, by kind (one of each here). */
function objects(): Record<string, Obj> {
  const { files } = renderChart(CHART);
  const byKind: Record<string, Obj> = {};
  for (const [name, text] of Object.entries(files)) {
    for (const doc of parseAllDocuments(text)) {
      expect(doc.errors, name).toEqual([]);
      const obj = doc.toJS() as Obj | null;
      if (!obj) continue;
      expect(obj.apiVersion, name).toBeTruthy();
      expect(byKind[obj.kind], `${name}: a second ${obj.kind}`).toBeUndefined();
      byKind[obj.kind] = obj;
    }
  }
  return byKind;
}

/** Secret variables: never in the ConfigMap, always a secretKeyRef. */
const SECRET = /(^|_)(KEY|TOKEN|SECRET|PASSWORD|DSN|URI)$/;

describe("Helm chart", () => {
  const k = objects();
  const values = renderChart(CHART).values as Obj;
  const deployment = k.Deployment!;
  const pod = deployment?.spec.template;
  const container = pod?.spec.containers[0];
  const settings = k.ConfigMap?.data as Record<string, unknown>;

  it("renders a Deployment, a Service, a ConfigMap and a PodDisruptionBudget", () => {
    expect(Object.keys(k).sort()).toEqual(["ConfigMap", "Deployment", "PodDisruptionBudget", "Service"]);
  });

  it("two replicas with CHECKPOINTER=sql, so they share state through PostgreSQL", () => {
    expect(deployment.spec.replicas).toBe(2);
    expect(settings.CHECKPOINTER).toBe("sql");
    expect(deployment.spec.selector.matchLabels).toEqual(pod.metadata.labels);
  });

  it("settings come from the ConfigMap as strings, every one a variable the service knows, and they parse", () => {
    expect(container.envFrom).toEqual([{ configMapRef: { name: k.ConfigMap!.metadata.name } }]);
    for (const [key, value] of Object.entries(settings)) {
      expect(typeof value, key).toBe("string");
      expect(Object.keys(settingsShape), key).toContain(key);
      expect(key, "a secret in the ConfigMap").not.toMatch(SECRET);
    }
    const secrets = Object.fromEntries((container.env as Obj[]).map((e) => [e.name, "from-the-secret"]));
    const parsed = parseSettings({ ...(settings as Record<string, string>), ...secrets, SQLDB_DSN: "postgres://agent@db:5432/app" });
    expect(parsed.CHECKPOINTER).toBe("sql");
    expect(parsed.HOST).toBe("0.0.0.0");
    expect(parsed.PORT).toBe(values.port);
  });

  it("keys are Secret references, never values", () => {
    const env = container.env as Obj[];
    expect(env.map((e) => e.name)).toEqual(expect.arrayContaining(["API_KEY", "SQLDB_DSN"]));
    for (const e of env) {
      expect(Object.keys(settingsShape), e.name).toContain(e.name);
      expect(e.value, e.name).toBeUndefined();
      expect(e.valueFrom?.secretKeyRef, e.name).toMatchObject({ name: expect.any(String), key: expect.any(String) });
    }
  });

  it("liveness on /health and readiness on /ready, on the container's port", () => {
    const port = container.ports.find((p: Obj) => p.name === "http");
    expect(port.containerPort).toBe(Number(settings.PORT));
    expect(container.livenessProbe.httpGet).toEqual({ path: "/health", port: "http" });
    expect(container.readinessProbe.httpGet).toEqual({ path: "/ready", port: "http" });
  });

  it("terminationGracePeriodSeconds covers the preStop pause, the drain grace and the entry's last 5 s", () => {
    const preStop = Number(container.lifecycle.preStop.exec.command.at(-1));
    const drain = Number(settings.DRAIN_GRACE_S ?? 25);
    expect(pod.spec.terminationGracePeriodSeconds).toBeGreaterThan(preStop + drain + 5);
  });

  it("runs as a non-root user", () => {
    expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true });
    expect(pod.spec.securityContext.runAsUser).not.toBe(0);
    expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false });
  });

  it("the Service and the PodDisruptionBudget select the Deployment's pods", () => {
    expect(k.Service!.spec.selector).toEqual(pod.metadata.labels);
    expect(k.Service!.spec.ports[0].targetPort).toBe("http");
    expect(k.PodDisruptionBudget!.spec.selector.matchLabels).toEqual(pod.metadata.labels);
    expect(k.PodDisruptionBudget!.spec.minAvailable).toBeLessThan(deployment.spec.replicas);
  });
});

// ---- Dockerfile -----------------------------------------------------------------------------

interface Instruction {
  readonly op: string;
  readonly args: string;
  /** Index of the stage (FROM) it belongs to. */
  readonly stage: number;
}

/** Instructions with continuation lines joined, comments and the parser directive dropped. */
function instructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  let stage = -1;
  const joined = text.replace(/\\\n\s*/g, " ");
  for (const raw of joined.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const [, op, args] = /^(\S+)\s*(.*)$/.exec(line)!;
    if (op!.toUpperCase() === "FROM") stage++;
    out.push({ op: op!.toUpperCase(), args: args!, stage });
  }
  return out;
}

/** `["a", "b"]` (exec form) or `a b` (shell form) -> words. */
const words = (args: string): string[] => (args.startsWith("[") ? (JSON.parse(args) as string[]) : args.split(/\s+/));

describe("Dockerfile", () => {
  const all = instructions(readFileSync(DOCKERFILE, "utf8"));
  const last = Math.max(...all.map((i) => i.stage));
  const final = all.filter((i) => i.stage === last);
  const one = (op: string) => {
    const found = final.filter((i) => i.op === op);
    expect(found, op).toHaveLength(1);
    return found[0]!.args;
  };

  it("is multi-stage: the image installs production dependencies only (npm ci --omit=dev)", () => {
    expect(last).toBeGreaterThanOrEqual(1);
    expect(final.some((i) => i.op === "RUN" && /\bnpm ci --omit=dev\b/.test(i.args))).toBe(true);
    expect(final.some((i) => i.op === "RUN" && /\bnpm (ci|install)\b(?!.*--omit=dev)/.test(i.args))).toBe(false);
  });

  it("its base image's Node satisfies package.json engines", () => {
    const min = Number(/>=\s*(\d+)/.exec(pkg.engines.node)![1]);
    for (const from of all.filter((i) => i.op === "FROM")) {
      const major = Number(/^node:(\d+)/.exec(from.args)?.[1]);
      expect(major, from.args).toBeGreaterThanOrEqual(min);
    }
  });

  it("its base image's Node is one every production dependency supports (engines.node in the lock)", () => {
    // node:<major> pulls the newest release of that line; its first release (<major>.0.0) is
    // what any build of the image at least gets, so it is the one checked. npm only warns on a
    // mismatch (EBADENGINE), and a package that needs a newer Node fails at run time instead.
    const lock = JSON.parse(readFileSync("package-lock.json", "utf8")) as { packages: Record<string, { dev?: boolean; engines?: { node?: string } }> };
    const production = Object.entries(lock.packages).filter(([path, p]) => path !== "" && !p.dev && typeof p.engines?.node === "string");
    expect(production.length).toBeGreaterThan(0);
    for (const from of all.filter((i) => i.op === "FROM")) {
      const release = `${Number(/^node:(\d+)/.exec(from.args)?.[1])}.0.0`;
      const unmet = production.filter(([, p]) => !semver.satisfies(release, p.engines!.node!)).map(([path, p]) => `${path} (${p.engines!.node})`);
      expect(unmet, `${from.args}: Node ${release}`).toEqual([]);
    }
  });

  it("every npm script it runs exists, and every file that script names is copied in before", () => {
    for (const [index, i] of all.entries()) {
      if (i.op !== "RUN") continue;
      for (const [, script] of i.args.matchAll(/\bnpm run ([\w:-]+)/g)) {
        expect(Object.keys(pkg.scripts), `npm run ${script}`).toContain(script);
        const copied = all.slice(0, index).filter((c) => c.op === "COPY" && c.stage === i.stage && !c.args.startsWith("--from"));
        const targets = copied.flatMap((c) => words(c.args).slice(0, -1));
        for (const [path] of pkg.scripts[script!]!.matchAll(/\b(?:scripts|src)\/[\w./-]+/g)) {
          expect(
            targets.some((t) => path.startsWith(`${t.replace(/\/$/, "")}/`) || path === t),
            `${path} (npm run ${script}) is not copied into the stage`,
          ).toBe(true);
        }
      }
    }
  });

  it("every path it copies from the repository exists", () => {
    for (const c of all.filter((i) => i.op === "COPY" && !i.args.startsWith("--from"))) {
      for (const source of words(c.args).slice(0, -1)) expect(existsSync(source), source).toBe(true);
    }
  });

  it("runs the Node entry as `npm start` does, from the build stage's dist/, which the build makes", () => {
    const cmd = words(one("CMD"));
    expect(cmd.join(" ")).toBe(pkg.scripts.start);
    const entry = cmd.find((w) => w.startsWith("dist/"))!;
    const name = /^dist\/(.+)\.js$/.exec(entry)![1]!;
    const entries = (tsupConfig as unknown as { entry: Record<string, string> }[]).flatMap((c) => Object.keys(c.entry));
    expect(entries).toContain(name);
    expect(final.some((i) => i.op === "COPY" && /^--from=\S+\s+\/app\/dist\s+\.\/dist$/.test(i.args))).toBe(true);
    expect(all.some((i) => i.op === "WORKDIR" && i.args === "/app" && i.stage === 0)).toBe(true);
  });

  it("`npm start`, and so the image, holds V8's young generation to 8 MB semi-spaces, half Node 20's own cap", () => {
    // Node 24 lets the young generation grow to 128 MB on a large host; 10,000 waiting
    // conversations then took 393-410 MB instead of 325-328 with 16 MB semi-spaces, and the
    // young generation's room is still held 5 s after they were opened (README, "Runtimes").
    const flags = startFlags();
    expect(flags).toContain("--max-semi-space-size=8");
    // Objects that survive a scavenge or two: the allocation that makes V8 grow the young generation.
    const churn = `const v8 = require("node:v8"); const keep = new Array(50000); let max = 0;
      for (let i = 0; i < 2000000; i++) { keep[i % 50000] = { i, s: "x" + i, a: [i, i] };
        if (i % 10000 === 0) max = Math.max(max, v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size); }
      process.stdout.write(String(max));`;
    const newSpace = Number(execFileSync(process.execPath, [...flags, "-e", churn], { encoding: "utf8" }));
    expect(newSpace).toBeGreaterThan(0);
    // 2 x 8 MB: 16 MB on Node 20, 17.5 MB on Node 24 (32 MB with 16 MB semi-spaces, 128 MB with
    // Node 24's own sizing on a 24 GB host).
    expect(newSpace).toBeLessThanOrEqual(20 * 1024 * 1024);
  });

  it("`npm start`, and so the image, lets V8's old generation grow as it does under the chart's memory limit", () => {
    // On a host with much memory V8 lets the old generation grow to about 4x what a full
    // collection left before it collects again; under the chart's 512 MiB limit, about 1.3x.
    // 10,000 conversations opened at once left their garbage in that room (README, "Runtimes").
    const flags = startFlags();
    expect(flags).toContain("--heap-growing-percent=30");
    // About 68 MB kept (`held` keeps it reachable through the collections), and objects that
    // survive scavenges and die in the old generation. In a function: run as the script's top
    // level, Node 24 placed the same allocation differently.
    const churn = `(() => { const v8 = require("node:v8"); const old = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === "old_space");
      const kept = []; for (let i = 0; i < 300000; i++) kept.push({ i, s: "k" + i, a: [i] });
      const ring = new Array(200000); let max = 0;
      for (let i = 0; i < 3000000; i++) { ring[i % 200000] = { i, s: "x" + i, a: [i, i] }; if (i % 20000 === 0) max = Math.max(max, old().space_size); }
      gc(); gc(); process.stdout.write(JSON.stringify({ max, live: old().space_used_size, held: kept.length + ring.length })); })();`;
    const { max, live } = JSON.parse(execFileSync(process.execPath, ["--expose-gc", ...flags, "-e", churn], { encoding: "utf8" })) as { max: number; live: number };
    expect(live).toBeGreaterThan(40 * 1024 * 1024);
    // 1.5-1.6x here with the flag, 3.9-4.5x without it (Node 20 and 24, a 24 GB host).
    expect(max).toBeLessThanOrEqual(2 * live);
  }, 30_000);

  it("`npm start`, and so the image, has V8 compile optimized code on the main thread, not on its compiler threads", () => {
    // Node 24's compiler threads (Maglev's above all) kept about 20 MB of malloc'd memory after
    // 10,000 conversations were opened at once, for the process's life (README, "Runtimes").
    const flags = startFlags();
    expect(flags).toContain("--no-concurrent-recompilation");
    const modes = (extra: string[]) => compilationModes(process.execPath, [...extra, "--trace-opt", "-e", HOT_SCRIPT]);
    const compiled = modes(flags);
    expect(compiled.length).toBeGreaterThan(0);
    expect(compiled.every((mode) => mode === "synchronous")).toBe(true);
    // Without the flag the same compilations go to the compiler threads: the check above can tell.
    expect(modes([])).toContain("concurrent");
  });

  it("runs as a non-root user", () => {
    const user = one("USER");
    expect(["root", "0"]).not.toContain(user.split(":")[0]);
  });

  it("listens on all interfaces on the port it exposes, the chart's port and the spec's default", () => {
    const env = final.filter((i) => i.op === "ENV").map((i) => i.args).join(" ");
    expect(env).toMatch(/\bHOST=0\.0\.0\.0\b/);
    const port = Number(/\bPORT=(\d+)/.exec(env)![1]);
    expect(Number(one("EXPOSE"))).toBe(port);
    expect(port).toBe(8000);
    expect(port).toBe((renderChart(CHART).values as Obj).port);
  });

  it("its healthcheck asks /health on that port", () => {
    const check = one("HEALTHCHECK");
    expect(check).toMatch(/\bCMD\b/);
    expect(check).toContain("/health");
    expect(check).toContain("process.env.PORT");
  });
});

// ---- graph-server in an install and in the image --------------------------------------------

describe("graph-server's packages: optional dependencies, in the image on request", () => {
  const manifest = JSON.parse(readFileSync("package.json", "utf8")) as { optionalDependencies?: Record<string, string>; devDependencies: Record<string, string>; files: string[] };
  const lock = (JSON.parse(readFileSync("package-lock.json", "utf8")) as { packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean; version?: string }> }).packages;
  const all = instructions(readFileSync(DOCKERFILE, "utf8"));
  const last = Math.max(...all.map((i) => i.stage));
  const final = all.filter((i) => i.stage === last);

  it("the @langchain packages are pinned optional dependencies: npm ci --omit=dev installs them, --omit=optional leaves out only them", () => {
    const langchain = Object.keys(manifest.optionalDependencies ?? {});
    expect(langchain.sort()).toEqual(["@langchain/core", "@langchain/langgraph", "@langchain/langgraph-api", "@langchain/langgraph-checkpoint", "@langchain/langgraph-sdk"]);
    for (const name of langchain) {
      expect(manifest.optionalDependencies![name], name).toMatch(/^\d+\.\d+\.\d+$/);
      expect(manifest.devDependencies[name], name).toBeUndefined();
      expect(lock[`node_modules/${name}`], name).toMatchObject({ optional: true, version: manifest.optionalDependencies![name] });
      expect(lock[`node_modules/${name}`]!.dev, name).toBeUndefined();
    }
    // Nothing a production install needs is optional: --omit=optional drops the server's packages only.
    const production = Object.entries(lock).filter(([path, e]) => path !== "" && !e.dev && !e.optional && !e.devOptional);
    expect(production.map(([path]) => path)).toEqual(expect.arrayContaining(["node_modules/hono", "node_modules/zod", "node_modules/postgres"]));
    expect(production.filter(([path]) => path.includes("@langchain/"))).toEqual([]);
  });

  it("the image installs them with --build-arg GRAPH_SERVER=true only, and copies langgraph.json where the server entry looks", () => {
    expect(final.some((i) => i.op === "ARG" && i.args === "GRAPH_SERVER=false")).toBe(true);
    const install = final.find((i) => i.op === "RUN" && /\bnpm ci\b/.test(i.args))!;
    const argsWith = (graphServer: string) =>
      execFileSync("sh", ["-c", install.args.replace(/\bnpm ci\b/, "echo npm ci").replace(/&& npm cache clean --force/, "")], { env: { PATH: process.env.PATH, GRAPH_SERVER: graphServer }, encoding: "utf8" })
        .trim()
        .split(/\s+/);
    expect(argsWith("false")).toEqual(expect.arrayContaining(["--omit=dev", "--omit=optional"]));
    expect(argsWith("true")).toContain("--omit=dev");
    expect(argsWith("true")).not.toContain("--omit=optional");
    // start.ts finds scripts/graph-server/langgraph.json in the directory above dist/: /app here.
    expect(final.some((i) => i.op === "WORKDIR" && i.args === "/app")).toBe(true);
    expect(final.some((i) => i.op === "COPY" && words(i.args).join(" ") === "scripts/graph-server ./scripts/graph-server")).toBe(true);
    expect(existsSync("scripts/graph-server/langgraph.json")).toBe(true);
    // A packed package carries it too.
    expect(manifest.files).toContain("scripts/graph-server");
  });
});
