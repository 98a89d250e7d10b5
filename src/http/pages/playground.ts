/**
 * The dev playground (GET /playground): one HTML page with its CSS and JS inline, so it works on
 * a machine without internet and under a CSP that allows nothing but this page and `connect-src
 * 'self'`. It posts to /chat and renders the SSE stream as it arrives. A paused run's approvals
 * (spec 2.3) show as cards that decide through POST /threads/{id}/approvals/{approval_id}; the
 * resumed run streams into the transcript the same way. Server data is only ever written with
 * `textContent`, never parsed as HTML.
 */

export const PLAYGROUND_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function playgroundHtml(options: { apiKey: string | undefined }): string {
  // JSON is valid JS; escaping `<` keeps a `</script>` inside the key from closing the element.
  const initialKey = JSON.stringify(options.apiKey ?? "").replace(/</g, "\\u003c");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent playground</title>
<style>
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, sans-serif; background: #f6f7f9; color: #1d2330; display: flex; flex-direction: column; height: 100vh; }
  header { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; padding: 10px 16px; background: #fff; border-bottom: 1px solid #dde1e7; }
  header h1 { font-size: 15px; margin: 0 8px 0 0; }
  label { display: flex; gap: 6px; align-items: center; color: #5a6270; }
  input, textarea { font: inherit; padding: 6px 8px; border: 1px solid #c8ced8; border-radius: 6px; }
  #api-key { width: 260px; }
  #thread-id { font-family: ui-monospace, monospace; color: #1d2330; min-width: 120px; }
  button { font: inherit; padding: 6px 14px; border: 1px solid #c8ced8; border-radius: 6px; background: #fff; cursor: pointer; }
  button.primary { background: #2f6feb; border-color: #2f6feb; color: #fff; }
  button:disabled { opacity: 0.5; cursor: default; }
  #transcript { flex: 1; overflow-y: auto; padding: 16px; display: flex; flex-direction: column; gap: 10px; }
  .bubble { max-width: 80%; padding: 8px 12px; border-radius: 10px; white-space: pre-wrap; word-wrap: break-word; }
  .user { align-self: flex-end; background: #2f6feb; color: #fff; }
  .assistant { align-self: flex-start; background: #fff; border: 1px solid #dde1e7; }
  .error { align-self: flex-start; background: #fdecec; border: 1px solid #f1b0b0; color: #8a1c1c; }
  .tool { align-self: flex-start; max-width: 80%; font: 12px/1.4 ui-monospace, monospace; background: #eef1f6; border: 1px solid #d3d9e3; border-radius: 8px; padding: 6px 10px; }
  .tool pre { margin: 4px 0 0; white-space: pre-wrap; word-break: break-all; }
  .tool .result { border-top: 1px dashed #c3cad6; margin-top: 6px; padding-top: 4px; }
  .tool .result.failed { color: #b42318; }
  .meta { align-self: flex-start; font-size: 12px; color: #6b7280; }
  .meta.warn { color: #b54708; font-weight: 600; }
  .approval { align-self: flex-start; width: min(80%, 640px); display: flex; flex-direction: column; gap: 6px; background: #fff8e8; border: 1px solid #f0c36d; border-radius: 8px; padding: 8px 12px; }
  .approval .title { font-weight: 600; font-family: ui-monospace, monospace; word-break: break-all; }
  .approval .field { font-size: 12px; color: #5a6270; white-space: pre-wrap; word-wrap: break-word; }
  .approval pre { margin: 0; font: 12px/1.4 ui-monospace, monospace; background: #fff; border: 1px solid #eadfc4; border-radius: 6px; padding: 4px 8px; white-space: pre-wrap; word-break: break-all; }
  .approval textarea { resize: vertical; min-height: 36px; }
  .approval .actions { display: flex; gap: 8px; align-items: center; }
  .approval .status { font-size: 12px; font-weight: 600; }
  .approval .status.failed { color: #b42318; }
  .approval .status.ok { color: #067647; }
  .approval.decided { background: #f4f5f7; border-color: #d3d9e3; }
  footer { display: flex; gap: 8px; padding: 10px 16px; background: #fff; border-top: 1px solid #dde1e7; }
  #message { flex: 1; resize: vertical; min-height: 44px; }
</style>
</head>
<body>
<header>
  <h1>Agent playground</h1>
  <label>API key <input id="api-key" type="password" autocomplete="off" spellcheck="false"></label>
  <label>Thread <span id="thread-id"></span></label>
  <button id="new-thread" type="button">New thread</button>
</header>
<main id="transcript" aria-live="polite"></main>
<footer>
  <textarea id="message" rows="2" placeholder="Message (Enter sends, Shift+Enter for a new line)"></textarea>
  <button id="send" class="primary" type="button">Send</button>
  <button id="stop" type="button" hidden>Stop</button>
</footer>
<script>
"use strict";
(function () {
  var SERVER_KEY = ${initialKey};
  var STORAGE_KEY = "agent.apiKey";
  var $ = function (id) { return document.getElementById(id); };
  var keyInput = $("api-key"), threadLabel = $("thread-id"), transcript = $("transcript");
  var messageInput = $("message"), sendButton = $("send"), stopButton = $("stop");
  var threadId = "";
  var controller = null;

  function stored() { try { return localStorage.getItem(STORAGE_KEY) || ""; } catch (e) { return ""; } }
  keyInput.value = SERVER_KEY || stored();
  keyInput.addEventListener("input", function () {
    try { localStorage.setItem(STORAGE_KEY, keyInput.value); } catch (e) { /* storage unavailable */ }
  });

  function setThread(id) { threadId = id || ""; threadLabel.textContent = threadId || "(new)"; }
  setThread("");
  $("new-thread").addEventListener("click", function () { if (!controller) { setThread(""); transcript.textContent = ""; } });

  function add(className, text) {
    var el = document.createElement("div");
    el.className = className;
    el.textContent = text || "";
    transcript.appendChild(el);
    transcript.scrollTop = transcript.scrollHeight;
    return el;
  }
  function pretty(value) { try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); } }
  function detailText(body) {
    var detail = body && body.detail;
    if (Array.isArray(detail)) {
      return detail.map(function (d) { return (Array.isArray(d.loc) ? d.loc.join(".") : String(d.loc)) + ": " + d.msg; }).join("; ");
    }
    return typeof detail === "string" ? detail : pretty(detail);
  }
  function setStreaming(on) { sendButton.disabled = on; stopButton.hidden = !on; }

  // One run's rendering state: the assistant bubble being streamed into and the tool boxes by call id.
  function renderer() {
    var bubble = null, tools = {};
    return function (name, data) {
      if (name === "message.start") {
        setThread(data.thread_id);
        if (data.approval_id) add("meta", "resumed after " + data.decision);
      } else if (name === "message.delta") {
        if (!bubble) bubble = add("bubble assistant");
        bubble.textContent += data.text || "";
        transcript.scrollTop = transcript.scrollHeight;
      } else if (name === "tool.call") {
        var box = add("tool");
        var title = document.createElement("div");
        title.textContent = "tool: " + data.name;
        var args = document.createElement("pre");
        args.textContent = pretty(data.args);
        box.appendChild(title);
        box.appendChild(args);
        tools[data.id] = box;
        bubble = null; // text after a tool call starts a new bubble, below the box
      } else if (name === "tool.result") {
        var parent = tools[data.id];
        if (!parent) {
          // A resumed run reports the result of a call that the paused run announced.
          parent = add("tool");
          var heading = document.createElement("div");
          heading.textContent = "tool: " + data.name;
          parent.appendChild(heading);
        }
        var result = document.createElement("pre");
        result.className = data.is_error ? "result failed" : "result";
        result.textContent = (data.is_error ? "error" + (data.error_id ? " " + data.error_id : "") + ": " : "result: ") + pretty(data.result);
        parent.appendChild(result);
        transcript.scrollTop = transcript.scrollHeight;
      } else if (name === "message.end") {
        var usage = data.usage || {};
        add(data.status === "step_limit" ? "meta warn" : "meta",
          (data.status === "step_limit" ? "stopped at the step limit" : data.status) +
          " · " + usage.input_tokens + " in / " + usage.output_tokens + " out tokens · " + data.latency_ms + " ms");
        if (data.status === "awaiting_approval") {
          var waiting = Array.isArray(data.approvals) ? data.approvals : (data.approval ? [data.approval] : []);
          waiting.forEach(function (a) { approvalCard(a, data.thread_id); });
        }
        bubble = null;
      } else if (name === "error") {
        add("bubble error", data.code + ": " + data.message + (data.error_id ? " (" + data.error_id + ")" : ""));
      }
    };
  }

  // Splits the byte stream into SSE frames: "event: name", "data: json", blank line; ":" lines are keep-alives.
  async function readEvents(body, onEvent) {
    var reader = body.getReader(), decoder = new TextDecoder(), buffer = "";
    var name = "message", data = [];
    for (;;) {
      var chunk = await reader.read();
      buffer += chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
      var lines = buffer.split(/\\r?\\n/);
      buffer = chunk.done ? "" : lines.pop();
      for (var i = 0; i < lines.length; i++) {
        var line = lines[i];
        if (line === "") {
          if (data.length) {
            var parsed;
            try { parsed = JSON.parse(data.join("\\n")); } catch (e) { parsed = null; }
            if (parsed) onEvent(name, parsed);
          }
          name = "message"; data = [];
        } else if (line.charAt(0) === ":") {
          continue;
        } else if (line.indexOf("event:") === 0) {
          name = line.slice(6).trim();
        } else if (line.indexOf("data:") === 0) {
          data.push(line.slice(5).replace(/^ /, ""));
        }
      }
      if (chunk.done) return;
    }
  }

  // Runs one request at a time (a chat message or a decision): Stop aborts it, Send waits.
  async function exclusive(work, onFailure) {
    if (controller) return false;
    controller = new AbortController();
    setStreaming(true);
    try {
      await work(controller.signal);
    } catch (e) {
      if (e && e.name === "AbortError") add("meta warn", "stopped");
      else add("bubble error", "request failed: " + (e && e.message ? e.message : String(e)));
      if (onFailure) onFailure();
    } finally {
      controller = null;
      setStreaming(false);
      messageInput.focus();
    }
    return true;
  }

  function postJson(url, payload, signal) {
    return fetch(url, {
      method: "POST",
      headers: { "Authorization": "Bearer " + keyInput.value, "Content-Type": "application/json", "Accept": "text/event-stream" },
      body: JSON.stringify(payload),
      signal: signal,
    });
  }
  async function jsonOf(res) { try { return await res.json(); } catch (e) { return null; } }
  function isStream(res) { return (res.headers.get("content-type") || "").indexOf("text/event-stream") >= 0; }

  // Renders one run's SSE answer: a chat reply or the run a decision resumed.
  async function streamRun(res) {
    if (!res.body) throw new Error("response has no body");
    await readEvents(res.body, renderer());
  }

  function part(parent, tag, className, text) {
    var el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    parent.appendChild(el);
    return el;
  }
  function when(iso) {
    var d = new Date(iso);
    return isNaN(d.getTime()) ? String(iso) : d.toLocaleString() + " (" + iso + ")";
  }

  // One waiting call (spec 2.3) with its own comment box and Approve / Reject buttons.
  function approvalCard(a, fallbackThread) {
    var card = add("approval");
    card.setAttribute("data-approval-id", String(a.approval_id));
    part(card, "div", "title", "Approval needed: " + a.method + " " + a.path);
    part(card, "div", "field", "api: " + a.api + " · tool: " + a.tool);
    part(card, "div", "field", "reason: " + a.reason);
    if (a.query !== null && a.query !== undefined && Object.keys(a.query).length) {
      part(card, "div", "field", "query");
      part(card, "pre", "", pretty(a.query));
    }
    if (a.body !== null && a.body !== undefined) {
      part(card, "div", "field", "body");
      part(card, "pre", "", pretty(a.body));
    }
    if (Array.isArray(a.approvers)) part(card, "div", "field", "approvers: " + a.approvers.join(", "));
    part(card, "div", "field", "expires: " + when(a.expires_at));
    var comment = part(card, "textarea");
    comment.rows = 2;
    comment.maxLength = 1000;
    comment.placeholder = "Comment (optional)";
    var actions = part(card, "div", "actions");
    var approve = part(actions, "button", "primary", "Approve");
    var reject = part(actions, "button", "", "Reject");
    approve.type = reject.type = "button";
    var status = part(card, "div", "status");
    var thread = a.thread_id || fallbackThread || threadId;
    var decided = false;

    function enable(on) { approve.disabled = reject.disabled = comment.disabled = !on; }
    function show(className, text) { status.className = "status " + className; status.textContent = text; }
    function done(text) { decided = true; enable(false); card.className = "approval decided"; show("ok", text); }

    async function decide(decision) {
      if (decided) return;
      var payload = { decision: decision, digest: a.digest };
      if (comment.value.trim()) payload.comment = comment.value;
      enable(false);
      show("", "sending " + decision + "…");
      var started = await exclusive(async function (signal) {
        var url = "/threads/" + encodeURIComponent(thread) + "/approvals/" + encodeURIComponent(a.approval_id);
        var res = await postJson(url, payload, signal);
        if (res.ok && isStream(res)) {
          done(decision === "approve" ? "approved" : "rejected");
          await streamRun(res);
          return;
        }
        var body = await jsonOf(res);
        if (res.ok) {
          var others = body && Array.isArray(body.pending) ? body.pending.length : 0;
          done((decision === "approve" ? "approved" : "rejected") +
            (body && body.resumed === false && others ? " · the run waits for " + others + " other approval" + (others === 1 ? "" : "s") : ""));
          return;
        }
        var code = body && body.code ? body.code : "HTTP " + res.status;
        show("failed", code + ": " + (body ? detailText(body) : res.statusText));
        // Gone, decided or the wrong call: the card cannot be decided again. Others may be retried.
        if (res.status === 404 || res.status === 409 || res.status === 410) { decided = true; card.className = "approval decided"; }
        else enable(true);
      }, function () { if (!decided) { enable(true); show("failed", "request failed"); } });
      if (!started) { enable(true); show("failed", "wait until the current answer finishes"); }
    }
    approve.addEventListener("click", function () { decide("approve"); });
    reject.addEventListener("click", function () { decide("reject"); });
    return card;
  }

  async function send() {
    var message = messageInput.value;
    if (!message.trim() || controller) return;
    messageInput.value = "";
    add("bubble user", message);
    var payload = { message: message };
    if (threadId) payload.thread_id = threadId;
    await exclusive(async function (signal) {
      var res = await postJson("/chat", payload, signal);
      if (res.status !== 200) {
        var body = await jsonOf(res);
        add("bubble error", "HTTP " + res.status + ": " + (body ? (body.code ? body.code + ": " : "") + detailText(body) : res.statusText));
        // The thread waits for a decision: show the waiting calls so they can be decided here.
        if (res.status === 409 && body && body.code === "approval_pending" && Array.isArray(body.approvals))
          body.approvals.forEach(function (a) { approvalCard(a, threadId); });
        return;
      }
      await streamRun(res);
    });
  }

  sendButton.addEventListener("click", send);
  stopButton.addEventListener("click", function () { if (controller) controller.abort(); });
  messageInput.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  messageInput.focus();
})();
</script>
</body>
</html>
`;
}
