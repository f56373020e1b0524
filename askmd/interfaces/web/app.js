// askmd's page: ask, watch the answer stream, open its citations, add notes.
// Plain JavaScript with no build step and nothing fetched from elsewhere.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  history: [], // {question, answer} of earlier turns, for follow-up questions
  controller: null, // aborts the running answer
  token: sessionStorage.getItem("askmd-token") || "",
};
const turns = new WeakMap(); // each turn's node -> its hits and references, for citations

// --- talking to the API ----------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  if (state.token) headers["Authorization"] = `Bearer ${state.token}`;
  const response = await fetch(path, {
    ...options,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try {
      message = (await response.json()).error || message;
    } catch (_) {
      /* not JSON: keep the status line */
    }
    if (response.status === 401) askForToken();
    throw new ApiError(response.status, message);
  }
  return response;
}

// Server-Sent Events from a POST (EventSource can only GET): yields {event, data}.
async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) yield { event, data: JSON.parse(data.join("\n")) };
    }
  }
}

// --- rendering -------------------------------------------------------------------------

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// Answers are Markdown, rendered by markdown-it (web/vendor/, no build step). Raw HTML is
// off, since an answer quotes notes; so are images (they would be fetched from elsewhere)
// and reference definitions (a line "[1]: …" in an answer is text, not a hidden link).
const md = window.markdownit({ html: false, breaks: true }).disable(["image", "reference"]);

// `[n]` in the answer's text (not in its code) becomes a button that opens source n.
md.core.ruler.push("citations", (state) => {
  for (const block of state.tokens) {
    if (block.type !== "inline") continue;
    block.children = block.children.flatMap((token) => (token.type === "text" ? citations(state, token) : [token]));
  }
});

function citations(state, token) {
  const parts = token.content.split(/\[(\d{1,3})\]/);
  if (parts.length === 1) return [token];
  return parts
    .map((part, i) => Object.assign(new state.Token(i % 2 ? "cite" : "text", "", 0), { content: part }))
    .filter((piece) => piece.content);
}

md.renderer.rules.cite = (tokens, idx) => {
  const n = tokens[idx].content; // digits only
  return `<button type="button" class="cite" data-n="${n}" aria-label="source ${n}">[${n}]</button>`;
};

// An answer's headings sit below the question's (h2) and the references' (h3).
md.core.ruler.push("heading_levels", (state) => {
  for (const token of state.tokens) {
    if (token.type === "heading_open" || token.type === "heading_close") {
      token.tag = `h${Math.min(6, Number(token.tag.slice(1)) + 3)}`;
    }
  }
});

function markdown(text) {
  return md.render(text);
}

function shownSource(item) {
  return item.folder ? `${item.folder}:${item.source}` : item.source;
}

function where(item) {
  const chain = item.heading_chain ? ` › ${item.heading_chain}` : "";
  if (item.page_start != null) {
    const pages = item.page_end && item.page_end !== item.page_start
      ? `${item.page_start}–${item.page_end}` : `${item.page_start}`;
    return `${shownSource(item)} p. ${pages}${chain}`;
  }
  return `${shownSource(item)}${chain} · lines ${item.line_start}–${item.line_end}`;
}

// --- one question ----------------------------------------------------------------------

function newTurn(question) {
  const node = $("turn-template").content.firstElementChild.cloneNode(true);
  node.querySelector(".question").textContent = question;
  $("conversation").append(node);
  node.scrollIntoView({ block: "start", behavior: "smooth" });
  const turn = {
    node,
    answer: node.querySelector(".answer"),
    notice: node.querySelector(".notice"),
    hits: [],
    references: new Map(),
  };
  turns.set(node, turn);
  return turn;
}

function showRetrieved(turn, results) {
  turn.hits = results;
  const box = turn.node.querySelector(".retrieved");
  const list = box.querySelector("ol");
  list.replaceChildren(
    ...results.map((hit) => {
      const li = document.createElement("li");
      li.innerHTML = `<p class="muted small">${escapeHtml(where(hit))} · score ${hit.score.toFixed(3)}</p><pre class="chunk"></pre>`;
      li.querySelector("pre").textContent = hit.text;
      return li;
    })
  );
  box.querySelector("summary").textContent = `Retrieved chunks (${results.length})`;
  box.hidden = results.length === 0;
}

function showDone(turn, result) {
  turn.answer.innerHTML = markdown(result.answer);
  turn.answer.setAttribute("aria-busy", "false");
  turn.references = new Map(result.references.map((r) => [r.n, r]));
  const box = turn.node.querySelector(".references");
  box.querySelector("ol").replaceChildren(
    ...result.references.map((ref) => {
      const li = document.createElement("li");
      li.value = ref.n;
      li.innerHTML = `<button type="button" class="cite" data-n="${ref.n}">[${ref.n}]</button> <span class="small"></span><blockquote></blockquote>`;
      li.querySelector("span").textContent = where(ref);
      if (ref.supported === false) {
        const mark = document.createElement("span");
        mark.className = "unsupported small";
        mark.textContent = " (this passage does not say this)";
        li.querySelector("span").after(mark);
      }
      li.querySelector("blockquote").textContent = ref.text;
      return li;
    })
  );
  box.hidden = result.references.length === 0;
  showNearest(turn, result);
  const notes = [];
  if (result.unsupported_citations && result.unsupported_citations.length) {
    notes.push(`The answer cites ${result.unsupported_citations.map((n) => `[${n}]`).join(", ")} for what the passage does not say; check it.`);
  }
  if (result.answered !== false && result.unmentioned && result.unmentioned.length) {
    notes.push(`Your notes never mention ${result.unmentioned.map((n) => `“${n}”`).join(" or ")}: check that the answer is about it.`);
  }
  if (result.answered !== false && result.absent && result.absent.length) {
    notes.push(`The closest passages never mention ${result.absent.map((n) => `“${n}”`).join(" or ")}: check that the answer is about it.`);
  }
  if (result.answered !== false && result.lacking && result.lacking.length) {
    notes.push(`The closest passages give no ${result.lacking.map(kindLabel).join(" or ")}: check that the answer says it.`);
  }
  if (result.invalid_citations.length) {
    notes.push(`The answer cited ${result.invalid_citations.map((n) => `[${n}]`).join(", ")}, which matched no source; removed.`);
  }
  if (result.mode === "llm" && turn.hits.length && !result.citations.length) {
    notes.push("The answer cites none of the sources; check it against the retrieved chunks.");
  }
  if (result.llm_error) {
    notes.push(`${result.llm_error} Quoting your notes instead.`);
  } else if (result.mode === "extractive" && turn.hits.length && result.answered !== false) {
    notes.push("No LLM is configured, so these are sentences quoted from your notes.");
  }
  turn.notice.textContent = notes.join(" ");
  turn.notice.hidden = notes.length === 0;
}

// A declined answer points at the closest passages, as places to look, not as citations.
// The kinds of value a question may ask for (answer/answer_kinds.py), as the page says them.
const KIND_LABELS = {
  price: "price",
  date: "date",
  shortcut: "keyboard shortcut",
  number: "number",
};

function kindLabel(kind) {
  return KIND_LABELS[kind] || kind;
}

function showNearest(turn, result) {
  const nearest = result.answered === false ? result.nearest || [] : [];
  let box = turn.node.querySelector(".nearest");
  if (!nearest.length) {
    if (box) box.hidden = true;
    return;
  }
  if (!box) {
    box = document.createElement("div");
    box.className = "nearest small";
    turn.node.querySelector(".references").before(box);
  }
  box.hidden = false;
  const list = document.createElement("ul");
  list.replaceChildren(
    ...nearest.map((item) => {
      const li = document.createElement("li");
      li.textContent = where(item);
      return li;
    })
  );
  const title = document.createElement("p");
  title.className = "muted";
  title.textContent = "Closest in your notes:";
  box.replaceChildren(title, list);
}

function showError(turn, message) {
  turn.answer.setAttribute("aria-busy", "false");
  const p = document.createElement("p");
  p.className = "error";
  p.setAttribute("role", "alert");
  p.textContent = message;
  turn.answer.append(p);
}

async function ask(question) {
  const turn = newTurn(question);
  const controller = new AbortController();
  state.controller = controller;
  setBusy(true);
  let text = "";
  let pending = false;
  const render = () => {
    pending = false;
    turn.answer.innerHTML = markdown(text) || '<p class="muted">writing…</p>';
  };
  try {
    const response = await api("/api/v1/ask", {
      method: "POST",
      body: { question, history: state.history.slice(-6), stream: true },
      signal: controller.signal,
    });
    for await (const { event, data } of events(response)) {
      if (event === "retrieved") {
        showRetrieved(turn, data.results);
        turn.answer.innerHTML = '<p class="muted">waiting for the answer…</p>';
      } else if (event === "token") {
        text += data.text;
        if (!pending) {
          pending = true;
          requestAnimationFrame(render);
        }
      } else if (event === "done") {
        showDone(turn, data);
        state.history.push({ question, answer: data.answer });
      } else if (event === "error") {
        showError(turn, data.error);
      }
    }
  } catch (error) {
    if (error.name === "AbortError") {
      render();
      showError(turn, "stopped");
    } else {
      showError(turn, error.message);
    }
  } finally {
    state.controller = null;
    setBusy(false);
    refreshStats();
  }
}

// On a phone the ask box stays collapsed while an answer is read; focusing it (a tap)
// opens it, and would open the keyboard over the answer too.
const SMALL_SCREEN = window.matchMedia("(max-width: 40rem)");

function setBusy(busy) {
  $("ask").disabled = busy;
  $("stop").hidden = !busy;
  if (busy && SMALL_SCREEN.matches && $("ask-form").contains(document.activeElement)) {
    document.activeElement.blur();
  }
  if (!busy && !SMALL_SCREEN.matches) $("question").focus();
}

// --- citations open their reference ----------------------------------------------------

function openReference(turnNode, n) {
  const turn = turns.get(turnNode);
  const ref = turn && (turn.references.get(n) || (turn.hits[n - 1] && { n, ...turn.hits[n - 1] }));
  if (!ref) return;
  $("ref-title").textContent = `[${n}] ${shownSource(ref)}`;
  $("ref-where").textContent = where(ref);
  $("ref-text").textContent = ref.text;
  $("reference").showModal();
}

// --- stats, token, notes ---------------------------------------------------------------

function fillingStatus(stats) {
  const percent = Math.floor((100 * stats.chunks_embedded) / Math.max(1, stats.chunks));
  return `vectors ${percent}% — keyword matches only until done`;
}

async function refreshStats() {
  try {
    const stats = await (await api("/api/v1/stats")).json();
    const model = stats.embedder.replace(/^local:/, "");
    const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
    let text = `${plural(stats.files, "note")} · ${plural(stats.chunks, "chunk")} · ${model}`;
    if (stats.chunks_embedded < stats.chunks) {
      // The vectors are still being stored: say so, and look again until they are all in.
      text += ` · ${fillingStatus(stats)}`;
      setTimeout(refreshStats, 5000);
    }
    $("stats").textContent = text;
  } catch (error) {
    $("stats").textContent = error.status === 401 ? "token needed" : `stats unavailable: ${error.message}`;
  }
}

function askForToken() {
  $("token-form").hidden = false;
  $("token").focus();
}

async function addNote(event) {
  event.preventDefault();
  await ingest({ file_name: $("file-name").value.trim(), content: $("content").value });
}

// PDF and Word files are binary: sent as they are (base64), not shown in the text box.
const BINARY_NOTE = /\.(pdf|docx)$/i;

async function uploadBinary(file) {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  const name = $("file-name").value.trim() || file.name;
  await ingest({ file_name: name, content_base64: btoa(binary) });
}

// One ingest, however the note came: what happened to it, or why not, under the form.
async function ingest(body) {
  const status = $("add-status");
  status.className = "small";
  status.textContent = "indexing…";
  try {
    const response = await api("/api/v1/ingest", { method: "POST", body });
    const result = await response.json();
    status.textContent = `${result.file}: ${result.status}, ${result.chunks} chunk${result.chunks === 1 ? "" : "s"}`;
    refreshStats();
  } catch (error) {
    status.className = "small error";
    status.textContent = error.message;
  }
}

function upload() {
  const file = $("upload").files[0];
  if (!file) return;
  if (BINARY_NOTE.test(file.name)) {
    uploadBinary(file);
    return;
  }
  const reader = new FileReader();
  reader.onload = () => {
    $("content").value = reader.result;
    if (!$("file-name").value.trim()) $("file-name").value = file.name;
  };
  reader.onerror = () => {
    $("add-status").textContent = `cannot read ${file.name}`;
  };
  reader.readAsText(file);
}

// --- wiring ----------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", () => {
  $("ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const question = $("question").value.trim();
    if (!question || state.controller) return;
    $("question").value = "";
    ask(question);
  });
  $("question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("ask-form").requestSubmit();
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && state.controller && !$("reference").open) state.controller.abort();
  });
  $("stop").addEventListener("click", () => state.controller && state.controller.abort());
  $("new").addEventListener("click", () => {
    state.history = [];
    $("conversation").replaceChildren();
    $("question").focus();
  });
  $("conversation").addEventListener("click", (event) => {
    const button = event.target.closest("button.cite");
    if (button) openReference(button.closest(".turn"), Number(button.dataset.n));
  });
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token").value.trim();
    sessionStorage.setItem("askmd-token", state.token);
    $("token-form").hidden = true;
    refreshStats();
  });
  $("add-form").addEventListener("submit", addNote);
  $("upload").addEventListener("change", upload);
  refreshStats();
  if (!SMALL_SCREEN.matches) $("question").focus();
});
