/**
 * Starting things a few at a time (the system file's `deploy.parallel`, spec 2.9): at most
 * `limit` are starting at once, taken in order; the next starts when one of them is up. Once one
 * fails to come up, or `halted()` says to stop (a signal), nothing more is started; those already
 * starting are left to finish so their caller can stop them.
 */
export async function startLimited<T>(items: readonly T[], limit: number, start: (item: T) => Promise<boolean>, halted: () => boolean): Promise<boolean> {
  let next = 0;
  let failed = false;
  const lane = async () => {
    while (!failed && !halted() && next < items.length) {
      const item = items[next++]!;
      if (!(await start(item))) failed = true;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  return !failed && !halted() && next === items.length;
}
