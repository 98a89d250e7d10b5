/** Runs in progress in this process: counted for metrics and drained on shutdown. */

export interface ActiveRun {
  /** Stops the run; it ends as `interrupted` (its stream just ends). */
  interrupt(): void;
  readonly done: Promise<unknown>;
}

export interface RunRegistry {
  add(run: ActiveRun): void;
  delete(run: ActiveRun): void;
  readonly size: number;
  /** Waits for runs to finish, at most `graceMs`, then interrupts the rest and waits for them. */
  drain(graceMs: number): Promise<void>;
}

export function createRunRegistry(): RunRegistry {
  const runs = new Set<ActiveRun>();
  return {
    add: (run) => void runs.add(run),
    delete: (run) => void runs.delete(run),
    get size() {
      return runs.size;
    },
    async drain(graceMs) {
      if (runs.size === 0) return;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
      await Promise.race([Promise.all([...runs].map((r) => r.done)), grace]);
      clearTimeout(timer);
      const left = [...runs];
      for (const r of left) r.interrupt();
      await Promise.all(left.map((r) => r.done));
    },
  };
}
