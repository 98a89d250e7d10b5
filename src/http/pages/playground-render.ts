/**
 * The playground's transcript, as browser JS (see playground.ts for the page and its rules): the
 * bubbles, one box per tool call that its result joins, one card per approval. Every value the
 * server sends (model text included) goes into `textContent`, never into HTML. The functions
 * share the page script's scope with playground-client.ts; `decide` lives there.
 */
export const PLAYGROUND_RENDER = String.raw`
  // The shown thread: its tool boxes by call id and its approval cards by approval id, so a
  // result or a decision that arrives later (a resumed run, a 409, a reload) joins what is shown.
  var tools = {}, cards = {};

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function part(parent, tag, className, text) { return parent.appendChild(el(tag, className, text)); }
  function scrollDown() { transcript.scrollTop = transcript.scrollHeight; }
  function add(className, text) {
    var node = part(transcript, "div", className, text || "");
    scrollDown();
    return node;
  }
  function clearTranscript() { transcript.textContent = ""; tools = {}; cards = {}; }
  function pretty(value) { try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); } }
  // Tool results travel as text: a JSON object or array is shown parsed and indented, anything
  // else as the text it is (never as a quoted JSON string).
  function resultText(result) {
    if (typeof result !== "string") return pretty(result);
    try {
      var parsed = JSON.parse(result);
      if (parsed !== null && typeof parsed === "object") return pretty(parsed);
    } catch (e) { /* plain text */ }
    return result;
  }
  // An error id is named once: only where the text shown does not already carry it.
  function reference(text, errorId) { return errorId && String(text).indexOf(errorId) < 0 ? " (reference " + errorId + ")" : ""; }
  function when(iso) {
    var d = new Date(iso);
    return isNaN(d.getTime()) ? String(iso) : d.toLocaleString() + " (" + iso + ")";
  }

  function toolBox(id, name) {
    var box = tools[id];
    if (!box) {
      box = add("tool");
      box.setAttribute("data-call-id", String(id));
      part(box, "div", "name", "tool: " + name);
      tools[id] = box;
    }
    return box;
  }
  function showToolCall(call) {
    var box = toolBox(call.id, call.name);
    part(box, "pre", "args", pretty(call.args));
  }
  // A refused approval reads "not approved" (spec 7.4): shown as rejected, not as a plain failure.
  function showToolResult(r) {
    var box = toolBox(r.id, r.name);
    var rejected = r.is_error && /\bnot approved\b/.test(String(r.result));
    var state = rejected ? "rejected" : r.is_error ? "failed" : "ok";
    box.className = "tool " + state;
    var label = rejected ? "rejected: not approved" : r.is_error ? "error" + reference(r.result, r.error_id) : "result";
    part(box, "div", "label", label);
    part(box, "pre", "result", resultText(r.result));
    scrollDown();
  }
  // The reference is in the message already (spec 7.2); under dev the detail comes beside it.
  function showError(data) {
    var box = add("bubble error", data.code + ": " + data.message + reference(data.message, data.error_id));
    if (data.detail) part(box, "pre", "detail", "detail: " + data.detail);
  }

  // A thread as GET /threads/{id}/messages returns it, drawn as the live stream draws it.
  function showHistory(messages) {
    messages.forEach(function (m) {
      if (m.role === "user") add("bubble user", m.content);
      else if (m.role === "assistant") {
        if (m.content) add("bubble assistant", m.content);
        (m.tool_calls || []).forEach(showToolCall);
      } else if (m.role === "tool") {
        showToolResult({ id: m.tool_call_id, name: m.name, result: m.content, is_error: m.is_error, error_id: m.error_id });
      }
    });
  }

  // One card per approval (spec 2.3): shown again, it is updated where it stands.
  function approvalCard(a, fallbackThread) {
    var known = cards[a.approval_id];
    if (known) { known.update(a); return known; }
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
    var entry = {
      approval: a,
      thread: a.thread_id || fallbackThread || threadId,
      decided: false,
      comment: comment,
      enable: function (on) { approve.disabled = reject.disabled = comment.disabled = !on; },
      show: function (className, text) { status.className = "status " + className; status.textContent = text; },
      // The approval's status: approved, rejected or expired closes the card; pending keeps it open.
      settle: function (state, note) {
        entry.decided = true;
        entry.enable(false);
        card.className = "approval decided " + state;
        card.setAttribute("data-status", state);
        entry.show(state, state + (note ? " · " + note : ""));
      },
      update: function (next) {
        if (next.status && next.status !== "pending") entry.settle(next.status, next.comment ? "comment: " + next.comment : "");
      },
    };
    card.setAttribute("data-status", "pending");
    cards[a.approval_id] = entry;
    approve.addEventListener("click", function () { decide(entry, "approve"); });
    reject.addEventListener("click", function () { decide(entry, "reject"); });
    entry.update(a);
    return entry;
  }
`;
