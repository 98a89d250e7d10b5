/**
 * A small async queue of A2A updates for one stream: a task's listener pushes into it while the
 * HTTP binding reads it as an async iterable. Pushing never waits: a slow reader leaves items
 * queued rather than holding up the run that produces them.
 */
import type { WireObject } from "./types.js";

export class EventQueue implements AsyncIterable<WireObject> {
  private items: WireObject[] = [];
  private done = false;
  private wake: (() => void) | undefined;

  push(item: WireObject): void {
    if (this.done) return;
    this.items.push(item);
    this.wake?.();
  }

  /** Puts the item before everything queued so far. */
  lead(item: WireObject): void {
    if (this.done) return;
    this.items.unshift(item);
    this.wake?.();
  }

  end(): void {
    this.done = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<WireObject> {
    for (;;) {
      while (this.items.length > 0) yield this.items.shift()!;
      if (this.done) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}
