// `node scripts/lib/ab-serve.mjs <build dir>`, forked by scripts/ab-builds.mjs with an IPC channel:
// serves that build's package (<dir>/index.js) as bench:chat serves dist/ (serveNode, the fake
// model) on 127.0.0.1, sends `{ port }`, and serves until killed.
import { pathToFileURL } from "node:url";
import { SERVICE_ENV } from "./chat-workload.mjs";

const dir = process.argv[2];
const { createApp, serveNode } = await import(pathToFileURL(`${dir}/index.js`).href);
const app = await createApp({ env: SERVICE_ENV, logWrite: () => {} });
const { port } = await serveNode({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 });
process.send({ port });
