// A memory limit for one child process, as a container's would be: a cgroup of its own (Linux,
// cgroup v1 or v2) under this process's, with `limitMb` as its limit. The child is moved into it
// before it execs, so the runtime sees the limit from its first instruction (Node sizes V8's heap
// from it: uv_get_constrained_memory). Needs write access to the cgroup tree; where there is none
// (no Linux, no delegation, not root), `memoryCgroup` answers `{ error }` and the caller skips
// the measurement, saying why.
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";

let made = 0;

/**
 * `{ dir, wrap(command, args), remove() }`, or `{ error }` when no cgroup can be made here.
 * `wrap` gives the command that joins the cgroup, then execs `command` (same pid: /proc reads stay valid).
 */
export function memoryCgroup(limitMb) {
  const bytes = String(Math.round(limitMb * 1024 * 1024));
  let lines;
  try {
    lines = readFileSync("/proc/self/cgroup", "utf8").trim().split("\n");
  } catch {
    return { error: "no /proc/self/cgroup (not Linux)" };
  }
  const name = `bench-${process.pid}-${made++}`;
  // cgroup v1: "N:memory:/path"; v2: "0::/path" (the unified tree, memory enabled for children).
  const v1 = lines.map((l) => l.split(":")).find(([, controllers]) => controllers.split(",").includes("memory"));
  const v2 = lines.map((l) => l.split(":")).find(([id, controllers]) => id === "0" && controllers === "");
  const attempts = [];
  if (v1) attempts.push({ dir: path.join("/sys/fs/cgroup/memory", v1[2], name), limitFile: "memory.limit_in_bytes" });
  if (v2) attempts.push({ dir: path.join("/sys/fs/cgroup", v2[2], name), limitFile: "memory.max" });
  let why = "no memory controller in /proc/self/cgroup";
  for (const { dir, limitFile } of attempts) {
    try {
      mkdirSync(dir);
    } catch (error) {
      why = `cannot make ${dir}: ${error.code ?? error.message}`;
      continue;
    }
    try {
      writeFileSync(path.join(dir, limitFile), bytes);
    } catch (error) {
      why = `cannot set ${limitFile} in ${dir}: ${error.code ?? error.message}`;
      removeDir(dir);
      continue;
    }
    return {
      dir,
      // sh joins the cgroup ($0 is its directory), then becomes the command.
      wrap: (command, args) => ["sh", ["-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', dir, command, ...args]],
      remove: () => removeDir(dir),
    };
  }
  return { error: why };
}

/** A cgroup goes once its last process has left; an exit may take a moment to count. */
function removeDir(dir) {
  for (let i = 0; i < 50; i++) {
    try {
      rmdirSync(dir);
      return;
    } catch (error) {
      if (error.code === "ENOENT") return;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}
