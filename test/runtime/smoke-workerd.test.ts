/**
 * The smoke suite (smoke.ts) on workerd in Miniflare, served on loopback: the worker entry with the
 * example tools bundled in (test/support/smoke-worker.ts), the API policy as the API_POLICY
 * binding, and the Durable Objects of wrangler.toml for threads and the thread lease.
 */
import { resolve } from "node:path";
import { bundleWorker, startWorkerd } from "../support/workerd.js";
import { describeSmoke } from "./smoke.js";

describeSmoke("workerd, durable objects", async (setup) => {
  const script = await bundleWorker("test/support/smoke-worker.ts", { "agent-service": resolve("src/index.ts") });
  // No files on workerd: the tools are in the bundle and the policy comes as text.
  const { TOOLS_MODULE: _tools, API_POLICY_PATH: _policy, ...vars } = setup.env;
  const mf = await startWorkerd(script, { bindings: { ...vars, API_POLICY: setup.policyText }, host: "127.0.0.1", port: 0 });
  const url = await mf.ready;
  return { base: url.origin, stop: () => mf.dispose() };
});
