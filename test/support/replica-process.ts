/**
 * A replica in a process of its own (test/runtime/fixtures/pg-replica.mjs, the built dist/):
 * spawned with its environment, ready once it printed the port it listens on.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const FIXTURE = fileURLToPath(new URL("../runtime/fixtures/pg-replica.mjs", import.meta.url));

export interface ReplicaProcess {
  readonly child: ChildProcess;
  /** `http://127.0.0.1:<port>` */
  readonly base: string;
  /** What it wrote to stderr so far. */
  stderr(): string;
}

/** Spawns the fixture with `env` (PATH is added) and waits up to 10 s for its `port=<n>` line. */
export async function spawnReplica(env: Record<string, string>, children?: Set<ChildProcess>): Promise<ReplicaProcess> {
  const child = spawn(process.execPath, [FIXTURE], { cwd: process.cwd(), env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  children?.add(child);
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (stderr += s));
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`child printed no port in 10 s\nstdout:\n${out}\nstderr:\n${stderr}`)), 10_000);
    child.stdout!.setEncoding("utf8").on("data", (s: string) => {
      out += s;
      const m = /port=(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`child exited (${code ?? signal}) before printing its port\nstderr:\n${stderr}`));
    });
  });
  return { child, base: `http://127.0.0.1:${port}`, stderr: () => stderr };
}
