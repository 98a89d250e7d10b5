/**
 * The dev playground (GET /playground): one HTML page with its CSS and JS inline and no build
 * step, so it works on a machine without internet and under a CSP that allows nothing but this
 * page and `connect-src 'self'`. It posts to /chat and renders the SSE stream as it arrives; the
 * caller's threads (GET /threads) reopen with their messages, and the shown thread survives a
 * reload (its id in the URL and localStorage, its messages read back). A paused run's approvals
 * (spec 2.3) show as one card each, deciding through POST /threads/{id}/approvals/{approval_id};
 * the resumed run streams into the transcript the same way. The A2A card and a link to /docs sit
 * beside it. Server data is only ever written with `textContent`, never parsed as HTML.
 *
 * The script is split by concern (playground-render.ts, playground-client.ts) into strings that
 * run in one scope; they use no template literals, so nothing in them is interpolated here.
 */
import { PLAYGROUND_CLIENT } from "./playground-client.js";
import { PLAYGROUND_RENDER } from "./playground-render.js";
import { PLAYGROUND_STYLE } from "./playground-style.js";

export const PLAYGROUND_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** JSON is valid JS; escaping `<` keeps a `</script>` inside the value from closing the element. */
const scriptValue = (value: string) => JSON.stringify(value).replace(/</g, "\\u003c");

export function playgroundHtml(options: { apiKey: string | undefined; a2aName: string }): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent playground</title>
<style>${PLAYGROUND_STYLE}</style>
</head>
<body>
<header>
  <h1>Agent playground</h1>
  <label>API key <input id="api-key" type="password" autocomplete="off" spellcheck="false"></label>
  <label>Thread <span id="thread-id"></span></label>
  <button id="new-thread" type="button">New thread</button>
  <nav><a id="docs-link" href="/docs">API docs</a></nav>
</header>
<div id="layout">
  <aside>
    <section>
      <h2>Threads <button id="refresh-threads" type="button" title="Reload the list">Refresh</button></h2>
      <ul id="threads"></ul>
      <p id="threads-note" class="note"></p>
    </section>
    <details id="card-panel">
      <summary>A2A agent card</summary>
      <div id="card"></div>
    </details>
  </aside>
  <main id="transcript" aria-live="polite"></main>
</div>
<footer>
  <textarea id="message" rows="2" placeholder="Message (Enter sends, Shift+Enter for a new line)"></textarea>
  <button id="send" class="primary" type="button">Send</button>
  <button id="stop" type="button" hidden>Stop</button>
</footer>
<script>
"use strict";
(function () {
  var SERVER_KEY = ${scriptValue(options.apiKey ?? "")};
  var A2A_NAME = ${scriptValue(options.a2aName)};
  var $ = function (id) { return document.getElementById(id); };
  var keyInput = $("api-key"), threadLabel = $("thread-id"), transcript = $("transcript");
  var messageInput = $("message"), sendButton = $("send"), stopButton = $("stop");
  var threadList = $("threads"), threadsNote = $("threads-note"), cardBox = $("card");
  var threadId = "";
${PLAYGROUND_RENDER}
${PLAYGROUND_CLIENT}
})();
</script>
</body>
</html>
`;
}
