/**
 * The playground in a real browser (Debian's chromium through playwright-core): the service is
 * served on 127.0.0.1 under APP_ENV=dev with the fake model, a plain tool and the gated `orders`
 * API, and the page is driven as a person would: a chat, a tool call, a gated call approved with
 * the button and the resumed run, a reload that keeps the conversation, a rejected call, an error,
 * the thread list, the A2A card and /docs. Each step leaves a screenshot in
 * test-artifacts/playground/. Every request that is not to the service is aborted and must not
 * happen. Without chromium the suite fails under CI and is skipped elsewhere, saying why.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { defineTool } from "../../src/index.js";
import { KEY, makeApp } from "../helpers.js";
import { artefacts, findChromium, inCi, NO_CHROMIUM, openBrowser, type BrowserSession } from "../support/browser.js";
import { createOrder, GATED, ordersPolicy } from "../support/orders.js";
import { served, type Served } from "../support/served.js";
import { recordingUpstream } from "../support/upstream.js";

const FORECAST = { city: "Oslo", temp_c: 21, sky: ["sun", "clouds"] };
const forecast = defineTool({
  name: "forecast",
  description: "the weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } } },
  calls: [],
  run: async () => FORECAST,
});

const chromiumPath = findChromium();
const upstream = recordingUpstream();

if (!chromiumPath && !inCi()) {
  console.warn(`playground browser test skipped: ${NO_CHROMIUM}`);
  describe.skip(`the playground in chromium (skipped: ${NO_CHROMIUM})`, () => {
    it("drives the page", () => undefined);
  });
} else {
  describe("the playground in chromium", () => {
    let service: Served;
    let session: BrowserSession;
    const shot = artefacts("playground");

    beforeAll(async () => {
      if (!chromiumPath) throw new Error(`CI: the browser test cannot run: ${NO_CHROMIUM}`);
      service = await served((base) =>
        makeApp({ APP_ENV: "dev", APP_URL: base, ORDERS_URL: upstream.base }, { policyText: ordersPolicy(), tools: [createOrder, forecast], playgroundKey: KEY }),
      );
      session = await openBrowser(chromiumPath, service.base);
    }, 60_000);

    afterAll(async () => {
      await session?.close();
      await service?.close();
    });

    const idle = (page: Page) => page.waitForFunction(() => !(document.getElementById("send") as HTMLButtonElement).disabled && (document.getElementById("stop") as HTMLButtonElement).hidden);
    const text = (page: Page, selector: string) => page.locator(selector).last().innerText();
    async function send(page: Page, message: string) {
      await page.fill("#message", message);
      await page.press("#message", "Enter");
      await idle(page);
    }
    const threadInUrl = (page: Page) => new URL(page.url()).searchParams.get("thread");

    it("chats, calls tools, decides approvals and keeps the conversation across a reload", async () => {
      const { page } = session;
      await page.goto(`${service.base}/playground`);
      await page.waitForFunction(() => document.getElementById("threads-note")!.textContent === "no threads yet");
      await shot(page, "01-open");

      // A chat: the answer streams into a bubble, the thread is named in the URL and the list.
      await send(page, "hello");
      expect(await text(page, ".bubble.assistant")).toBe("echo: hello");
      const thread = threadInUrl(page)!;
      expect(thread).toMatch(/^[0-9a-f-]{36}$/);
      expect(await page.locator("#thread-id").innerText()).toBe(thread);
      await page.locator(`#threads button[data-thread-id="${thread}"].active`).waitFor();
      await shot(page, "02-chat");

      // A tool call: its JSON result shown parsed and indented, not as a JSON string.
      await send(page, '/call forecast {"city":"Oslo"}');
      const toolBox = page.locator(".tool.ok").last();
      expect(await toolBox.locator("pre.args").innerText()).toBe(JSON.stringify({ city: "Oslo" }, null, 2));
      expect(await toolBox.locator("pre.result").innerText()).toBe(JSON.stringify(FORECAST, null, 2));
      await shot(page, "03-tool-call");

      // A gated call: one card; Approve sends it once and the resumed run streams on.
      await send(page, GATED);
      const pending = page.locator('.approval[data-status="pending"]');
      await pending.waitFor();
      expect(await pending.count()).toBe(1);
      const approvalId = (await pending.getAttribute("data-approval-id"))!;
      expect(upstream.hits).toHaveLength(0);
      await shot(page, "04-approval-card");
      // A new message on the waiting thread is refused (409) and the same card is kept, not a second one.
      await send(page, "are you there?");
      expect(await text(page, ".bubble.error")).toContain("approval_pending");
      expect(await page.locator(`.approval[data-approval-id="${approvalId}"]`).count()).toBe(1);
      await pending.getByRole("button", { name: "Approve" }).click();
      await page.locator(`.approval[data-approval-id="${approvalId}"][data-status="approved"]`).waitFor();
      await idle(page);
      expect(await page.locator(".meta", { hasText: "resumed after approve" }).count()).toBe(1);
      const approved = page.locator(".tool.ok").last();
      expect(await approved.locator(".name").innerText()).toBe("tool: create_order");
      expect(JSON.parse(await approved.locator("pre.result").innerText())).toEqual({ status: 200, body: { created: true } });
      expect(upstream.hits.map((h) => `${h.method} ${h.url}`)).toEqual(["POST /orders"]);
      expect(await page.locator(".approval").count()).toBe(1);
      await shot(page, "05-approved-and-resumed");

      // A reload keeps the conversation: the thread reopens from the server, results still JSON.
      await page.reload();
      await page.waitForFunction(() => document.querySelectorAll("#transcript .tool.ok").length === 2);
      expect(threadInUrl(page)).toBe(thread);
      expect(await page.locator("#transcript .bubble.user").allInnerTexts()).toEqual(["hello", '/call forecast {"city":"Oslo"}', GATED]);
      expect(await page.locator("#transcript .tool.ok pre.result").first().innerText()).toBe(JSON.stringify(FORECAST, null, 2));
      expect(await page.locator(".approval").count()).toBe(0); // decided: nothing waits
      await shot(page, "06-after-reload");

      // A rejected call: the card and the tool box say rejected, never in the approved green.
      await send(page, GATED);
      const card = page.locator('.approval[data-status="pending"]');
      await card.locator("textarea").fill("not today");
      await card.getByRole("button", { name: "Reject" }).click();
      const rejected = page.locator('.approval[data-status="rejected"]');
      await rejected.waitFor();
      await idle(page);
      expect(await rejected.locator(".status").innerText()).toBe("rejected · comment: not today");
      const colour = await rejected.locator(".status").evaluate((node) => getComputedStyle(node).color);
      expect(colour).not.toBe("rgb(6, 118, 71)");
      const refused = page.locator(".tool.rejected").last();
      expect(await refused.locator(".label").innerText()).toBe("rejected: not approved");
      expect(await refused.locator("pre.result").innerText()).toContain("not today");
      expect(upstream.hits).toHaveLength(1);
      await shot(page, "07-rejected");
      await page.reload();
      await page.locator(".tool.rejected .label").waitFor();
      expect(await page.locator(".tool.ok").count()).toBe(2);

      // A failed run: the error reference once, the dev detail beside it.
      await send(page, "/error");
      const error = await text(page, ".bubble.error");
      const reference = /Reference: ([0-9a-f]{16})/.exec(error)![1]!;
      expect(error.split(reference)).toHaveLength(2);
      expect(error).toContain("detail: ModelError: fake model: /error directive");
      await shot(page, "08-error");

      // The thread list: a new thread, then the first one reopened from the list.
      await page.click("#new-thread");
      expect(threadInUrl(page)).toBeNull();
      expect(await page.locator("#transcript > *").count()).toBe(0);
      await send(page, "a second thread");
      const second = threadInUrl(page)!;
      expect(second).not.toBe(thread);
      await page.click("#refresh-threads");
      await page.waitForFunction(() => document.querySelectorAll("#threads button[data-thread-id]").length === 2);
      await page.click(`#threads button[data-thread-id="${thread}"]`);
      await page.waitForFunction(() => document.querySelectorAll("#transcript .bubble.user").length === 5);
      expect(threadInUrl(page)).toBe(thread);
      await shot(page, "09-thread-list");

      // The A2A card, read with the same key.
      await page.click("#card-panel summary");
      expect(await page.locator("#card").innerText()).toContain(`JSONRPC 1.0: ${service.base}/a2a/app`);
      await shot(page, "10-a2a-card");

      expect(session.blocked).toEqual([]);
      // The one refused request was the message on the waiting thread.
      expect(session.problems).toEqual(["console: Failed to load resource: the server responded with a status of 409 (Conflict)"]);
      session.problems.length = 0;
    }, 120_000);

    it("links to /docs, which lists the A2A routes with a request per method", async () => {
      const { page } = session;
      await page.goto(`${service.base}/playground`);
      await page.click("#docs-link");
      await page.waitForURL(`${service.base}/docs`);
      const post = page.locator("section.op", { has: page.locator("h2", { hasText: /^post\s*\/a2a\/\{agent\}$/i }) });
      await post.waitFor();
      for (const method of ["SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask"])
        expect(await post.locator(".method-list").innerText()).toContain(method);
      const examples = await post.locator("pre.request-example").allInnerTexts();
      expect(examples.join("\n")).toContain(`curl -X POST '${service.base}/a2a/app'`);
      expect(examples.filter((e) => e.includes("A2A-Version: 1.0"))).toHaveLength(7);
      expect(examples.filter((e) => e.startsWith("curl -N ") && e.includes("Accept: text/event-stream"))).toHaveLength(2);
      await page.locator("section.op h2", { hasText: "/a2a/{agent}/.well-known/agent-card.json" }).waitFor();
      // Every route has its request example.
      const withoutExample = await page.$$eval("section.op", (ops) => ops.filter((op) => !op.querySelector("pre.request-example")).map((op) => op.querySelector("h2")!.textContent));
      expect(withoutExample).toEqual([]);
      await shot(post, "11-docs-a2a-jsonrpc");
      expect(session.blocked).toEqual([]);
      expect(session.problems).toEqual([]);
    }, 60_000);
  });
}
