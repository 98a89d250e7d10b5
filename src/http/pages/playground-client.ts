/**
 * The playground's requests, as browser JS (see playground.ts): the SSE reader, one request at a
 * time (a chat message or a decision), the thread list, the thread kept across a reload (its id
 * in the URL and localStorage, its messages read back from the server) and the A2A card. Shares
 * the page script's scope with playground-render.ts.
 */
export const PLAYGROUND_CLIENT = String.raw`
  var KEY_STORE = "agent.apiKey", THREAD_STORE = "agent.threadId";
  var THREAD_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
  var controller = null;
  // Bumped on every thread switch: a load that finishes for a thread no longer shown draws nothing.
  var view = 0;

  function stored(name) { try { return localStorage.getItem(name) || ""; } catch (e) { return ""; } }
  function store(name, value) {
    try { if (value) localStorage.setItem(name, value); else localStorage.removeItem(name); } catch (e) { /* storage unavailable */ }
  }
  function detailText(body) {
    var detail = body && body.detail;
    if (Array.isArray(detail)) {
      return detail.map(function (d) { return (Array.isArray(d.loc) ? d.loc.join(".") : String(d.loc)) + ": " + d.msg; }).join("; ");
    }
    return typeof detail === "string" ? detail : pretty(detail);
  }
  function setStreaming(on) { sendButton.disabled = on; stopButton.hidden = !on; }

  // The shown thread, kept in the URL (?thread=) and in localStorage so a reload reopens it.
  function setThread(id) {
    threadId = id || "";
    threadLabel.textContent = threadId || "(new)";
    store(THREAD_STORE, threadId);
    var url = location.pathname + (threadId ? "?thread=" + encodeURIComponent(threadId) : "");
    try { history.replaceState(null, "", url); } catch (e) { /* not allowed here */ }
    markActive();
  }

  function request(method, url, payload, signal) {
    var headers = { "Authorization": "Bearer " + keyInput.value, "Accept": payload === undefined ? "application/json" : "text/event-stream" };
    if (payload !== undefined) headers["Content-Type"] = "application/json";
    return fetch(url, { method: method, headers: headers, body: payload === undefined ? undefined : JSON.stringify(payload), signal: signal });
  }
  async function jsonOf(res) { try { return await res.json(); } catch (e) { return null; } }
  function isStream(res) { return (res.headers.get("content-type") || "").indexOf("text/event-stream") >= 0; }
  function failure(res, body) { return (body && body.code ? body.code + ": " : "HTTP " + res.status + ": ") + (body ? detailText(body) : res.statusText); }

  // Splits the byte stream into SSE frames: "event: name", "data: json", blank line; ":" lines are keep-alives.
  async function readEvents(body, onEvent) {
    var reader = body.getReader(), decoder = new TextDecoder(), buffer = "";
    var name = "message", data = [];
    for (;;) {
      var chunk = await reader.read();
      buffer += chunk.done ? decoder.decode() : decoder.decode(chunk.value, { stream: true });
      var lines = buffer.split(/\r?\n/);
      buffer = chunk.done ? "" : lines.pop();
      for (var i = 0; i < lines.length; i++) {
        var line = lines[i];
        if (line === "") {
          if (data.length) {
            var parsed;
            try { parsed = JSON.parse(data.join("\n")); } catch (e) { parsed = null; }
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

  // One run's events (spec 6.1): a chat reply or the run a decision resumed.
  async function streamRun(res) {
    if (!res.body) throw new Error("response has no body");
    var bubble = null, ended = false;
    await readEvents(res.body, function (name, data) {
      if (name === "message.start") {
        if (!threadId) setThread(data.thread_id);
        if (data.approval_id) add("meta", "resumed after " + data.decision);
      } else if (name === "message.delta") {
        if (!bubble) bubble = add("bubble assistant");
        bubble.textContent += data.text || "";
        scrollDown();
      } else if (name === "tool.call") {
        showToolCall(data);
        bubble = null; // text after a tool call starts a new bubble, below the box
      } else if (name === "tool.result") {
        showToolResult(data);
        bubble = null;
      } else if (name === "message.end") {
        ended = true;
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
        ended = true;
        showError(data);
      }
    });
    if (!ended) add("meta warn", "the stream ended before the run did (cut)");
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
      refreshThreads();
    }
    return true;
  }

  async function decide(card, decision) {
    if (card.decided) return;
    var a = card.approval;
    var payload = { decision: decision, digest: a.digest };
    if (card.comment.value.trim()) payload.comment = card.comment.value;
    card.enable(false);
    card.show("", "sending " + decision + "\u2026");
    var settled = decision === "approve" ? "approved" : "rejected";
    var started = await exclusive(async function (signal) {
      var url = "/threads/" + encodeURIComponent(card.thread) + "/approvals/" + encodeURIComponent(a.approval_id);
      var res = await request("POST", url, payload, signal);
      if (res.ok && isStream(res)) {
        card.settle(settled, payload.comment ? "comment: " + payload.comment : "");
        await streamRun(res);
        return;
      }
      var body = await jsonOf(res);
      if (res.ok) {
        // Other approvals of the run still wait: the run resumes after the last one.
        var others = body && Array.isArray(body.pending) ? body.pending : [];
        card.settle(settled, body && body.resumed === false && others.length ? "the run waits for " + others.length + " other approval" + (others.length === 1 ? "" : "s") : "");
        others.forEach(function (p) { approvalCard(p, card.thread); });
        return;
      }
      // Decided already (the body names its status), gone or expired: the card shows that; others may be retried.
      if (res.status === 409 && body && body.status) card.settle(body.status, failure(res, body));
      else if (res.status === 410) card.settle("expired", failure(res, body));
      else if (res.status === 404 || res.status === 409) { card.settle("failed", failure(res, body)); }
      else { card.enable(true); card.show("failed", failure(res, body)); }
    }, function () { if (!card.decided) { card.enable(true); card.show("failed", "request failed"); } });
    if (!started) { card.enable(true); card.show("failed", "wait until the current answer finishes"); }
  }

  async function send() {
    var message = messageInput.value;
    if (!message.trim() || controller) return;
    messageInput.value = "";
    add("bubble user", message);
    var payload = { message: message };
    if (threadId) payload.thread_id = threadId;
    await exclusive(async function (signal) {
      var res = await request("POST", "/chat", payload, signal);
      if (res.status !== 200) {
        var body = await jsonOf(res);
        add("bubble error", failure(res, body));
        // The thread waits for a decision: its cards (the ones shown already, updated) decide here.
        if (res.status === 409 && body && body.code === "approval_pending" && Array.isArray(body.approvals))
          body.approvals.forEach(function (a) { approvalCard(a, threadId); });
        return;
      }
      await streamRun(res);
    });
  }

  // Reopens a thread: its messages as stored, then the approvals still waiting on it.
  async function openThread(id) {
    if (controller) return;
    var mine = ++view;
    clearTranscript();
    setThread(id);
    if (!id) return;
    var path = "/threads/" + encodeURIComponent(id);
    var res = await request("GET", path + "/messages");
    if (mine !== view) return;
    if (!res.ok) {
      add("bubble error", "could not reopen thread " + id + ": " + failure(res, await jsonOf(res)));
      if (res.status === 404 && mine === view) setThread("");
      return;
    }
    var messages = await jsonOf(res);
    if (mine !== view || !Array.isArray(messages)) return;
    showHistory(messages);
    var approvals = await request("GET", path + "/approvals");
    var list = approvals.ok ? await jsonOf(approvals) : null;
    if (mine !== view || !Array.isArray(list)) return;
    list.filter(function (a) { return a.status === "pending"; }).reverse().forEach(function (a) { approvalCard(a, id); });
  }

  function markActive() {
    var items = threadList.querySelectorAll("button[data-thread-id]");
    for (var i = 0; i < items.length; i++) items[i].classList.toggle("active", items[i].getAttribute("data-thread-id") === threadId);
  }
  async function refreshThreads() {
    var res;
    try { res = await request("GET", "/threads?limit=50"); } catch (e) { threadsNote.textContent = "could not list threads"; return; }
    var rows = res.ok ? await jsonOf(res) : null;
    threadList.textContent = "";
    threadsNote.className = res.ok ? "note" : "note failed";
    if (!Array.isArray(rows)) { threadsNote.textContent = failure(res, rows); return; }
    threadsNote.textContent = rows.length ? "" : "no threads yet";
    rows.forEach(function (row) {
      var item = part(threadList, "li");
      var button = part(item, "button");
      button.type = "button";
      button.setAttribute("data-thread-id", row.thread_id);
      part(button, "span", "id", row.thread_id);
      part(button, "span", "when", when(row.updated_at));
      button.addEventListener("click", function () { openThread(row.thread_id); });
    });
    markActive();
  }

  // The A2A agent card (spec 4.5), read with the same credential (card.read).
  async function loadCard() {
    cardBox.textContent = "";
    var res;
    try { res = await request("GET", "/a2a/" + encodeURIComponent(A2A_NAME) + "/.well-known/agent-card.json"); }
    catch (e) { part(cardBox, "p", "note failed", "could not read the card"); return; }
    var card = await jsonOf(res);
    if (!res.ok || !card) { part(cardBox, "p", "note failed", failure(res, card)); return; }
    part(cardBox, "div", "field", "name: " + card.name + (card.version ? " " + card.version : ""));
    if (card.description) part(cardBox, "div", "field", card.description);
    (card.supportedInterfaces || []).forEach(function (i) {
      part(cardBox, "div", "field", i.protocolBinding + " " + i.protocolVersion + ": " + i.url);
    });
    (card.skills || []).forEach(function (s) { part(cardBox, "div", "field", "skill: " + s.name + " (" + s.id + ")"); });
    part(cardBox, "pre", "", pretty(card));
  }

  keyInput.value = SERVER_KEY || stored(KEY_STORE);
  keyInput.addEventListener("input", function () { store(KEY_STORE, keyInput.value); });
  keyInput.addEventListener("change", function () { refreshThreads(); loadCard(); });
  $("new-thread").addEventListener("click", function () { openThread(""); });
  $("refresh-threads").addEventListener("click", refreshThreads);
  sendButton.addEventListener("click", send);
  stopButton.addEventListener("click", function () { if (controller) controller.abort(); });
  messageInput.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });

  var fromUrl = new URLSearchParams(location.search).get("thread") || "";
  var initial = THREAD_ID.test(fromUrl) ? fromUrl : THREAD_ID.test(stored(THREAD_STORE)) ? stored(THREAD_STORE) : "";
  openThread(initial);
  refreshThreads();
  loadCard();
  messageInput.focus();
`;
