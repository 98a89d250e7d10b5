import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Two files at a time: on the 2-core CI machine vitest's default (cores - 1) ran the files one
    // after the other; most of them wait on processes, sockets and databases, not the CPU. The
    // whole suite went from about 470 s to about 270 s and stays well inside the 10 minutes.
    maxWorkers: 2,
  },
});
