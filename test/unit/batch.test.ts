/**
 * The Postgres adapter's natural batching (src/store/postgres/batch.ts), with the database
 * replaced by deferred answers so each test decides when a batch returns.
 */
import { describe, expect, it } from "vitest";
import { batcher, type BatchOptions } from "../../src/store/postgres/batch.js";

interface Item {
  readonly key: string;
  readonly n: number;
}

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A fake database: every statement waits until the test answers it. */
function fakeDatabase(overrides: Partial<BatchOptions<Item, string>> = {}) {
  const sent: { kind: "one" | "many"; items: Item[]; answer: ReturnType<typeof deferred<string[]>> }[] = [];
  const fallbacks: number[] = [];
  const write = batcher<Item, string>({
    one: async (item) => {
      const answer = deferred<string[]>();
      sent.push({ kind: "one", items: [item], answer });
      return (await answer.promise)[0]!;
    },
    many: async (items) => {
      const answer = deferred<string[]>();
      sent.push({ kind: "many", items: [...items], answer });
      return answer.promise;
    },
    key: (item) => item.key,
    inFlight: 1,
    max: 3,
    maxWaitMs: 60_000,
    onFallback: (size) => fallbacks.push(size),
    ...overrides,
  });
  const ok = (i: number) => sent[i]!.answer.resolve(sent[i]!.items.map((item) => `ok ${item.n}`));
  return { write, sent, fallbacks, ok };
}

const tick = () => new Promise((r) => setTimeout(r, 0));
const item = (n: number, key = `k${n}`): Item => ({ key, n });

/** Item 1 goes alone; 2 and 3 wait for it and go as the second statement, not yet answered. */
async function secondBatchOfTwo(db: ReturnType<typeof fakeDatabase>): Promise<Promise<string>[]> {
  const first = db.write(item(1));
  const rest = [2, 3].map((n) => db.write(item(n)));
  db.ok(0);
  await first;
  await tick();
  expect(db.sent[1]).toMatchObject({ kind: "many", items: [item(2), item(3)] });
  return rest;
}

describe("batcher", () => {
  it("sends a call alone and at once while nothing is in flight", async () => {
    const db = fakeDatabase();
    const answer = db.write(item(1));
    expect(db.sent).toEqual([expect.objectContaining({ kind: "one", items: [item(1)] })]);
    db.ok(0);
    await expect(answer).resolves.toBe("ok 1");
  });

  it("groups the calls made while a batch is in flight, and answers each its own result", async () => {
    const db = fakeDatabase();
    const first = db.write(item(1));
    const rest = [2, 3, 4].map((n) => db.write(item(n)));
    expect(db.sent).toHaveLength(1);
    db.ok(0);
    await first;
    await tick();
    expect(db.sent[1]).toMatchObject({ kind: "many", items: [item(2), item(3), item(4)] });
    db.ok(1);
    await expect(Promise.all(rest)).resolves.toEqual(["ok 2", "ok 3", "ok 4"]);
  });

  it("keeps calls with one key apart, caps the batch size and sends a batch in key order", async () => {
    const db = fakeDatabase();
    const all = [db.write(item(1)), db.write(item(2, "same")), db.write(item(3, "same")), db.write(item(4)), db.write(item(5)), db.write(item(6))];
    db.ok(0);
    await tick();
    // 3 shares a key with 2; at most three; in key order (k4, k5, same)
    expect(db.sent[1]!.items.map((i) => i.n)).toEqual([4, 5, 2]);
    db.ok(1);
    await tick();
    expect(db.sent[2]!.items.map((i) => i.n)).toEqual([6, 3]);
    db.ok(2);
    await expect(Promise.all(all)).resolves.toEqual(["ok 1", "ok 2", "ok 3", "ok 4", "ok 5", "ok 6"]);
  });

  it("retries a batch that failed on its data one call at a time, so only the bad call fails", async () => {
    const db = fakeDatabase();
    const rest = await secondBatchOfTwo(db);
    db.sent[1]!.answer.reject(Object.assign(new Error("foreign key"), { code: "23503" }));
    await tick();
    expect(db.fallbacks).toEqual([2]);
    expect(db.sent.slice(2).map((s) => [s.kind, s.items[0]!.n])).toEqual([["one", 2], ["one", 3]]);
    db.sent[2]!.answer.reject(Object.assign(new Error("foreign key"), { code: "23503" }));
    db.ok(3);
    const settled = await Promise.allSettled(rest);
    expect(settled.map((s) => s.status)).toEqual(["rejected", "fulfilled"]);
  });

  it("fails every call of a batch the connection lost, without retrying any", async () => {
    const db = fakeDatabase();
    const rest = await secondBatchOfTwo(db);
    db.sent[1]!.answer.reject(Object.assign(new Error("gone"), { code: "ECONNRESET" }));
    const settled = await Promise.allSettled(rest);
    expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected"]);
    expect(db.sent).toHaveLength(2);
    expect(db.fallbacks).toEqual([]);
  });

  it("refuses, without sending, a call that waited longer than maxWaitMs for a slot", async () => {
    const db = fakeDatabase({ maxWaitMs: 20 });
    const first = db.write(item(1));
    const late = db.write(item(2));
    await new Promise((r) => setTimeout(r, 40));
    const fresh = db.write(item(3));
    db.ok(0);
    await first;
    await expect(late).rejects.toMatchObject({ code: "QUERY_TIMEOUT" });
    await tick();
    expect(db.sent.map((s) => s.items.map((i) => i.n))).toEqual([[1], [3]]);
    db.ok(1);
    await expect(fresh).resolves.toBe("ok 3");
  });
});
