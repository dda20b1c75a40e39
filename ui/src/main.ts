// Quarry's window: libraries (create, rename, delete, add files by drop or picker, progress), chat with a
// live research trace and a streaming answer, citations that open a passage panel, conversations that
// persist, report export. All backend calls go through ./api.
import DOMPurify from "dompurify";
import { marked } from "marked";
import * as api from "./api";
import type { AgentEvent, Answer, Conversation, IngestEvent, LibraryView, Turn } from "./api";

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Record<string, any> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const node: HTMLElementTagNameMap[K] = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

const state = {
  libraries: [] as LibraryView[],
  /** The library files dropped on the window go to. */
  selectedLibrary: null as string | null,
  /** Libraries ticked for questions (none ticked: all). */
  picked: new Set<string>(),
  conversation: null as Conversation | null,
  /** The question running, if any: its conversation id (null until the backend names it). */
  running: false,
  runningId: null as string | null,
  /** Streamed text and trace of the running question. */
  liveText: "",
  liveTrace: [] as AgentEvent[],
  /** Web queries the model wrote, waiting for "Send" or "Don't send" (the "ask" web query policy). */
  approvals: [] as { id: number; source: string; query: string }[],
};

function showError(id: string, error: unknown) {
  const node = $(id);
  node.textContent = error ? String(error) : "";
  node.hidden = !error;
}

function setStatus(text: string) {
  $("status").textContent = text;
}

// ---------------------------------------------------------------- libraries

async function refreshLibraries() {
  try {
    state.libraries = await api.listLibraries();
  } catch (error) {
    showError("library-error", error);
    return;
  }
  if (state.selectedLibrary && !state.libraries.some((l) => l.name === state.selectedLibrary)) state.selectedLibrary = null;
  if (!state.selectedLibrary && state.libraries.length > 0) state.selectedLibrary = state.libraries[0].name;
  for (const name of [...state.picked]) if (!state.libraries.some((l) => l.name === name)) state.picked.delete(name);
  renderLibraries();
}

function libraryCounts(l: LibraryView): string {
  if (l.error) return l.error;
  const parts = [`${l.indexed} document${l.indexed === 1 ? "" : "s"}`, `${l.chunks} chunks`];
  if (l.failed) parts.push(`${l.failed} failed`);
  if (l.pending) parts.push(`${l.pending} pending`);
  if (l.ingesting) parts.push("adding…");
  return parts.join(" · ");
}

function renderLibraries() {
  const list = $("libraries");
  list.replaceChildren();
  for (const library of state.libraries) {
    const item = el("li", { className: library.name === state.selectedLibrary ? "selected" : "" });
    item.dataset.library = library.name;
    const name = el("div", { className: "name" }, library.name);
    const counts = el("div", { className: "muted counts" }, libraryCounts(library));
    const actions = el("div", { className: "actions" });
    const add = el("button", { className: "small", textContent: "Add files", type: "button" });
    add.onclick = (e) => (e.stopPropagation(), pickAndAdd(library.name, false));
    const addFolder = el("button", { className: "small", textContent: "Add folder", type: "button" });
    addFolder.onclick = (e) => (e.stopPropagation(), pickAndAdd(library.name, true));
    const rename = el("button", { className: "small", textContent: "Rename", type: "button" });
    rename.onclick = (e) => (e.stopPropagation(), startRename(item, library.name));
    const remove = el("button", { className: "small danger", textContent: "Delete", type: "button" });
    remove.onclick = (e) => (e.stopPropagation(), confirmDelete(actions, library.name));
    actions.append(add, addFolder, rename, remove);
    item.append(name, counts, actions);
    if (library.failures.length > 0) {
      const failures = el("details", {}, el("summary", {}, `${library.failures.length} could not be read`));
      const ul = el("ul");
      for (const [path, reason] of library.failures) ul.append(el("li", { title: path }, `${baseName(path)}: ${reason}`));
      failures.append(ul);
      item.append(failures);
    }
    item.onclick = () => {
      state.selectedLibrary = library.name;
      renderLibraries();
    };
    list.append(item);
  }
  renderLibraryPicks();
  $("welcome").hidden = state.libraries.some((l) => l.indexed > 0) || state.conversation !== null;
}

function renderLibraryPicks() {
  const picks = $("library-picks");
  picks.replaceChildren();
  if (state.libraries.length < 2) return;
  picks.append(el("span", { className: "muted" }, "Search:"));
  for (const library of state.libraries) {
    const box = el("input", { type: "checkbox", checked: state.picked.has(library.name) });
    box.onchange = () => (box.checked ? state.picked.add(library.name) : state.picked.delete(library.name));
    picks.append(el("label", {}, box, ` ${library.name}`));
  }
}

function startRename(item: HTMLElement, name: string) {
  const input = el("input", { value: name });
  const save = el("button", { className: "small", textContent: "Save", type: "button" });
  const form = el("div", { className: "row" }, input, save);
  const commit = async () => {
    try {
      await api.renameLibrary(name, input.value);
      if (state.selectedLibrary === name) state.selectedLibrary = input.value.trim();
      showError("library-error", null);
    } catch (error) {
      showError("library-error", error);
    }
    await refreshLibraries();
  };
  save.onclick = (e) => (e.stopPropagation(), commit());
  input.onclick = (e) => e.stopPropagation();
  input.onkeydown = (e) => {
    if (e.key === "Enter") commit();
    if (e.key === "Escape") renderLibraries();
  };
  item.replaceChildren(form);
  input.focus();
  input.select();
}

function confirmDelete(actions: HTMLElement, name: string) {
  const yes = el("button", { className: "small danger", textContent: `Delete ${name} and its index`, type: "button" });
  const no = el("button", { className: "small", textContent: "Keep", type: "button" });
  yes.onclick = async (e) => {
    e.stopPropagation();
    try {
      await api.deleteLibrary(name);
      showError("library-error", null);
    } catch (error) {
      showError("library-error", error);
    }
    await refreshLibraries();
  };
  no.onclick = (e) => (e.stopPropagation(), renderLibraries());
  actions.replaceChildren(el("span", { className: "muted" }, "Your files are not touched."), yes, no);
}

async function pickAndAdd(library: string, folders: boolean) {
  try {
    const paths = await api.pickFiles(folders);
    if (paths.length > 0) await addFiles(library, paths);
  } catch (error) {
    showError("library-error", error);
  }
}

// ---------------------------------------------------------------- ingest progress

interface FileRow {
  state: string;
  detail: string;
}
const ingest = { library: "", files: new Map<string, FileRow>(), toRead: 0, done: 0, embedded: 0, known: 0, started: 0, model: "" };

async function addFiles(library: string, paths: string[]) {
  Object.assign(ingest, { library, files: new Map(), toRead: 0, done: 0, embedded: 0, known: 0, started: Date.now(), model: "" });
  $("ingest").hidden = false;
  $("ingest-title").textContent = `Adding ${paths.length} item${paths.length === 1 ? "" : "s"} to ${library}`;
  $("ingest-summary").textContent = "Scanning…";
  $("cancel-ingest").hidden = false;
  $("close-ingest").hidden = true;
  delete $("ingest-summary").dataset.finished;
  renderIngest();
  await refreshLibraries();
  try {
    const summary = await api.addToLibrary(library, paths);
    const parts = [`${summary.indexed} indexed`, `${summary.failed} failed`, `${summary.unchanged} unchanged`];
    if (summary.skipped) parts.push(`${summary.skipped} duplicates skipped`);
    if (summary.reread) parts.push(`${summary.reread} read again with a newer reading of their format`);
    $("ingest-summary").textContent =
      `${summary.cancelled ? "Stopped" : "Done"}: ${parts.join(", ")} — ${summary.chunks} chunks in ${summary.seconds.toFixed(1)} s` +
      (summary.cancelled ? ". What was read is saved; add the same files again to read the rest." : "");
  } catch (error) {
    $("ingest-summary").textContent = String(error);
  }
  $("cancel-ingest").hidden = true;
  $("close-ingest").hidden = false;
  (document.getElementById("ingest-progress") as HTMLProgressElement).value = 1;
  await refreshLibraries();
  // Last, after the sidebar shows the new counts (the end-to-end test waits for this mark).
  $("ingest-summary").dataset.finished = "true";
}

function onIngestEvents(library: string, events: IngestEvent[]) {
  if (library !== ingest.library) return;
  for (const e of events) {
    switch (e.event) {
      case "scanned":
        ingest.toRead = e.to_read;
        break;
      case "read":
        ingest.files.set(e.path, { state: "embedding", detail: `${e.format}, ${e.chunks} chunks` });
        break;
      case "failed":
        ingest.files.set(e.path, { state: "failed", detail: `${e.status}: ${e.error}` });
        break;
      case "unreadable":
        ingest.files.set(e.path, { state: "failed", detail: e.error });
        break;
      case "skipped":
        ingest.files.set(e.path, { state: "skipped", detail: e.reason });
        break;
      case "indexed":
        for (const row of ingest.files.values()) if (row.state === "embedding") row.state = "indexed";
        break;
      case "embedding":
        ingest.embedded = e.done;
        ingest.known = e.known;
        break;
      case "file_done":
        ingest.done += 1;
        break;
      case "model_chosen":
        // A new library's first documents picked its embedding model (multilingual for mostly CJK text).
        ingest.model = `${e.model_id}, chosen for ${Math.round(e.cjk_share * 100)}% CJK text`;
        break;
      case "error":
        $("ingest-summary").textContent = e.error;
        break;
    }
  }
  renderIngest();
}

function renderIngest() {
  const fraction = ingest.toRead > 0 ? (ingest.done + (ingest.known > 0 ? ingest.embedded / ingest.known : 0)) / (ingest.toRead + 1) : 0;
  (document.getElementById("ingest-progress") as HTMLProgressElement).value = Math.min(1, fraction);
  if (ingest.toRead > 0) {
    const elapsed = (Date.now() - ingest.started) / 1000;
    const eta = fraction > 0.02 ? Math.round((elapsed / fraction) * (1 - fraction)) : null;
    $("ingest-summary").textContent =
      `${ingest.done} of ${ingest.toRead} files read · ${ingest.embedded} of ${ingest.known} chunks embedded` +
      (eta !== null ? ` · about ${eta} s left` : "") +
      (ingest.model ? ` · model ${ingest.model}` : "");
  }
  // Only the latest rows and every failure: a 10,000-file ingest must not build 10,000 nodes.
  const rows = [...ingest.files.entries()];
  const shown = [...rows.filter(([, r]) => r.state === "failed"), ...rows.filter(([, r]) => r.state !== "failed").slice(-50)];
  $("ingest-files").replaceChildren(
    ...shown.map(([path, row]) => el("li", { className: `state-${row.state}`, title: path }, el("span", {}, baseName(path)), el("span", {}, `${row.state} — ${row.detail}`))),
  );
}

// ---------------------------------------------------------------- conversations

async function refreshConversations() {
  try {
    const [list, problems] = await api.listConversations();
    showError("conversation-problems", problems.length ? problems.join("\n") : null);
    const ul = $("conversations");
    ul.replaceChildren();
    for (const c of list) {
      const item = el("li", { className: c.id === state.conversation?.id ? "selected" : "" });
      item.dataset.conversation = c.id;
      const actions = el("div", { className: "actions" });
      const rename = el("button", { className: "small", textContent: "Rename", type: "button" });
      rename.onclick = (e) => {
        e.stopPropagation();
        const input = el("input", { value: c.title });
        input.onclick = (ev) => ev.stopPropagation();
        input.onkeydown = async (ev) => {
          if (ev.key === "Enter") {
            await api.renameConversation(c.id, input.value).catch((error) => showError("conversation-problems", error));
            if (state.conversation?.id === c.id) state.conversation.title = input.value;
            refreshConversations();
          }
          if (ev.key === "Escape") refreshConversations();
        };
        item.replaceChildren(input);
        input.focus();
        input.select();
      };
      const remove = el("button", { className: "small danger", textContent: "Delete", type: "button" });
      remove.onclick = async (e) => {
        e.stopPropagation();
        await api.deleteConversation(c.id).catch((error) => showError("conversation-problems", error));
        if (state.conversation?.id === c.id) newConversation();
        refreshConversations();
      };
      actions.append(rename, remove);
      item.append(el("div", { className: "name" }, c.title), el("div", { className: "muted" }, `${c.turns} question${c.turns === 1 ? "" : "s"} · ${new Date(c.updated_ms).toLocaleString()}`), actions);
      item.onclick = () => openConversation(c.id);
      ul.append(item);
    }
  } catch (error) {
    showError("conversation-problems", error);
  }
}

async function openConversation(id: string) {
  if (state.running) return;
  try {
    state.conversation = await api.loadConversation(id);
    renderMessages();
    refreshConversations();
    $("welcome").hidden = true;
  } catch (error) {
    showError("conversation-problems", error);
  }
}

function newConversation() {
  if (state.running) return;
  state.conversation = null;
  renderMessages();
  refreshConversations();
  $("question").focus();
}

// ---------------------------------------------------------------- chat

/** A citation marker as Quarry stores it (`quarry_agents::answer::canonical_markers`): `[2]`, `[1, 3]`. */
const CITATION = /\[(\d+(?:, \d+)*)\]/g;

/** Markdown → sanitised HTML; `[n]` markers of `answer`'s passages become citation links when the answer
 * is finished (`turnIndex` set). */
function renderMarkdown(markdown: string, turnIndex: number | null, answer?: Answer): HTMLElement {
  const div = el("div", { className: "answer" });
  // An answer is model text over document text: no images (they fetch), no forms, no `style` (a
  // full-window overlay can fake the app), no SVG or MathML (their `xlink:href` links navigate).
  div.innerHTML = DOMPurify.sanitize(marked.parse(markdown, { async: false }) as string, {
    FORBID_TAGS: ["img", "style", "form", "input", "svg", "math"],
    FORBID_ATTR: ["style", "xlink:href"],
  });
  for (const a of div.querySelectorAll("a")) a.removeAttribute("href"); // no navigation out of the app
  if (turnIndex === null) return div;
  const walker = document.createTreeWalker(div, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  while (walker.nextNode()) {
    const node = walker.currentNode as Text;
    if (!node.parentElement?.closest("code, pre")) texts.push(node);
  }
  // Numbers the answer can resolve: a bracket of other numbers ("[2023]") stays text.
  const known = new Set([...(answer?.citations ?? []), ...(answer?.sources ?? [])].map((c) => c.number));
  for (const node of texts) {
    const value = node.nodeValue ?? "";
    if (!CITATION.test(value)) continue;
    CITATION.lastIndex = 0;
    const fragment = document.createDocumentFragment();
    let last = 0;
    for (const match of value.matchAll(CITATION)) {
      const numbers = match[1].split(", ");
      if (!numbers.every((n) => known.has(Number(n)))) continue;
      fragment.append(value.slice(last, match.index));
      fragment.append("[");
      numbers.forEach((n, i) => {
        if (i > 0) fragment.append(", ");
        const link = el("button", { className: "cite", type: "button", textContent: n });
        link.dataset.number = n;
        link.dataset.turn = String(turnIndex);
        link.onclick = () => showCitation(turnIndex, Number(n));
        fragment.append(link);
      });
      fragment.append("]");
      last = (match.index ?? 0) + match[0].length;
    }
    fragment.append(value.slice(last));
    node.replaceWith(fragment);
  }
  return div;
}

function traceLine(e: AgentEvent): string | null {
  const f = e as Record<string, any>;
  switch (e.event) {
    case "routed":
      return `Agent ${f.agent} over ${(f.libraries as string[]).join(", ")} (${f.reason})`;
    case "queries":
      return `Round ${f.round}: ${(f.queries as string[]).map((q) => `“${q}”`).join(", ")}`;
    case "retrieved":
      return `${f.hits} passages (${f.new} new) for “${f.query}”`;
    case "judged":
      return `Kept ${f.kept.length} of ${f.kept.length + f.rejected.length}: ${(f.kept as { citation: string }[]).map((p) => p.citation).join("; ") || "none"}`;
    case "intermediate_answer":
      return `Intermediate answer to “${f.query}”: ${f.answer}`;
    case "reflected":
      return `Reflection after round ${f.round}: ${(f.facts as string[]).join(" ") || "no facts noted"}${(f.queries as string[]).length ? "" : " Nothing missing."}`;
    case "ordered":
      return `${f.kept} passages for the answer ordered by a search for “${f.query}”`;
    case "stopped":
      return `Stop after round ${f.round}: ${f.reason}`;
    case "degraded":
      return `${f.step}: ${f.problem}; ${f.fallback}`;
    case "llm_call":
      return `${f.step}: ${f.prompt_tokens} + ${f.completion_tokens} tokens, ${Number(f.seconds).toFixed(1)} s`;
    case "web_notice":
      return `Web: ${f.message}`;
    case "web_query":
      return f.sent ? `Sent to ${f.source}: “${f.query}”` : `Withheld from ${f.source} (written by the model): “${f.query}”`;
    case "finished":
      return `Finished: ${f.llm_calls} model calls, ${f.usage.prompt_tokens + f.usage.completion_tokens} tokens, ${Number(f.seconds).toFixed(1)} s`;
    default:
      return null;
  }
}

function renderTrace(events: AgentEvent[], open: boolean): HTMLElement {
  const lines = events.map(traceLine).filter((l): l is string => l !== null);
  const tokens = events.filter((e) => e.event === "llm_call").reduce((sum, e) => sum + Number(e.prompt_tokens) + Number(e.completion_tokens), 0);
  const details = el("details", { className: "trace", open }, el("summary", {}, `Research trace — ${lines.length} steps, ${tokens} tokens`));
  details.append(el("ol", {}, ...lines.map((l) => el("li", {}, l))));
  return details;
}

function renderTurn(turn: Turn, index: number): HTMLElement {
  const box = el("article", { className: "turn" });
  box.dataset.turn = String(index);
  box.append(el("div", { className: "question" }, turn.question));
  box.append(renderTrace(turn.trace, false));
  if (turn.answer) {
    const a = turn.answer;
    box.append(renderMarkdown(a.markdown, index, a));
    const unsupported = (a.claims ?? []).filter((c) => !c.supported);
    if (unsupported.length > 0) {
      const warning = el("div", { className: "unsupported" }, `Unsupported by the cited passages (${unsupported.length} of ${(a.claims ?? []).length} claims) — check before relying on them:`);
      const items = el("ul", {});
      for (const c of unsupported) items.append(el("li", {}, `“${c.sentence}” — ${c.problem ?? "unsupported"}`));
      warning.append(items);
      box.append(warning);
    }
    const list = a.citations.length > 0 ? a.citations : a.sources;
    if (list.length > 0) {
      box.append(el("div", { className: "muted" }, a.citations.length > 0 ? "Sources" : "Sources (the model cited none; the answer was written from these passages)"));
      const sources = el("ol", { className: "sources" });
      for (const c of list) {
        const link = el("button", { className: "cite", type: "button", textContent: citationText(c.passage) });
        link.onclick = () => showCitation(index, c.number);
        const li = el("li", { value: c.number }, link);
        sources.append(li);
      }
      box.append(sources);
    }
    const exportButton = el("button", { className: "small export", textContent: "Export report…", type: "button" });
    const exported = el("span", { className: "exported" });
    exportButton.onclick = async () => {
      if (!state.conversation) return;
      try {
        const path = await api.exportReport(state.conversation.id, index);
        exported.textContent = path ? `Saved ${path}` : "";
      } catch (error) {
        exported.textContent = String(error);
      }
    };
    box.append(
      el("div", { className: "turn-footer row" }, `${a.agent} · ${a.llm_calls} model call${a.llm_calls === 1 ? "" : "s"} · ${a.usage.prompt_tokens + a.usage.completion_tokens} tokens · ${a.seconds.toFixed(1)} s · ${a.model}`, exportButton, exported),
    );
  } else if (turn.error) {
    box.append(el("p", { className: "error" }, turn.error));
  }
  return box;
}

function renderMessages() {
  const messages = $("messages");
  messages.replaceChildren(...(state.conversation?.turns ?? []).map(renderTurn));
  if (state.running) {
    const live = el("article", { className: "turn live" });
    live.append(el("div", { className: "question" }, pendingQuestion));
    live.append(renderTrace(state.liveTrace, true));
    for (const asked of state.approvals) live.append(renderApproval(asked));
    live.append(renderMarkdown(state.liveText || "…", null));
    messages.append(live);
  }
  messages.scrollTop = messages.scrollHeight;
}

/** A query the model wrote for the web, with "Send" and "Don't send": nothing goes out unapproved. */
function renderApproval(asked: { id: number; source: string; query: string }): HTMLElement {
  const answer = async (send: boolean) => {
    state.approvals = state.approvals.filter((a) => a.id !== asked.id);
    renderMessages();
    await api.answerWebQuery(asked.id, send);
  };
  const box = el("div", { className: "web-approval" });
  box.dataset.id = String(asked.id);
  box.append(
    el("p", {}, `The agent wants to search ${asked.source} for: `, el("q", {}, asked.query), " — it may quote your documents."),
    el("button", { className: "send-query", type: "button", onclick: () => answer(true) }, "Send"),
    el("button", { className: "withhold-query", type: "button", onclick: () => answer(false) }, "Don't send"),
  );
  return box;
}

let pendingQuestion = "";

async function send() {
  const question = ($("question") as HTMLTextAreaElement).value.trim();
  if (!question || state.running) return;
  const agent = ($("agent") as HTMLSelectElement).value as api.Agent;
  Object.assign(state, { running: true, runningId: state.conversation?.id ?? null, liveText: "", liveTrace: [], approvals: [] });
  pendingQuestion = question;
  ($("question") as HTMLTextAreaElement).value = "";
  $("welcome").hidden = true;
  $("send").hidden = true;
  $("stop").hidden = false;
  renderMessages();
  try {
    state.conversation = await api.ask(state.conversation?.id ?? null, question, agent, [...state.picked]);
  } catch (error) {
    if (state.runningId) state.conversation = await api.loadConversation(state.runningId).catch(() => state.conversation);
    setStatus(String(error));
  }
  Object.assign(state, { running: false, runningId: null });
  $("send").hidden = false;
  $("stop").hidden = true;
  renderMessages();
  refreshConversations();
}

function onAgentEvents(conversation: string, events: AgentEvent[]) {
  if (!state.running) return;
  if (state.runningId === null) {
    const named = events.find((e) => e.event === "conversation");
    if (named) state.runningId = conversation;
  }
  if (conversation !== state.runningId) return;
  for (const e of events) {
    if (e.event === "answer_delta") state.liveText += String(e.text);
    else if (e.event === "web_query_approval") state.approvals.push({ id: Number(e.id), source: String(e.source), query: String(e.query) });
    else if (e.event !== "conversation") state.liveTrace.push(e);
  }
  renderMessages();
}

async function stop() {
  if (state.runningId) await api.stopAsk(state.runningId);
}

// ---------------------------------------------------------------- citations

function citationText(p: api.Passage): string {
  if (/^https?:\/\//.test(p.path)) return p.heading_path[0] ? `${p.heading_path[0]} (${p.path})` : p.path;
  const place = placeOf(p);
  return place ? `${baseName(p.path)}, ${place}` : baseName(p.path);
}

function placeOf(p: api.Passage): string {
  if (p.page_start !== null) return p.page_end !== null && p.page_end !== p.page_start ? `pp. ${p.page_start}–${p.page_end}` : `p. ${p.page_start}`;
  if (p.sheet) return `sheet ${p.sheet}`;
  return p.heading_path.join(" > ");
}

function baseName(path: string): string {
  const inner = path.split("!/").pop() ?? path;
  return inner.split(/[\\/]/).pop() ?? inner;
}

let shownCitation: { turn: number; number: number } | null = null;

async function showCitation(turn: number, number: number) {
  const conversation = state.conversation;
  const answer = conversation?.turns[turn]?.answer;
  if (!conversation || !answer) return;
  const citation = [...answer.citations, ...answer.sources].find((c) => c.number === number);
  if (!citation) return;
  shownCitation = { turn, number };
  const p = citation.passage;
  $("citation").hidden = false;
  $("citation-title").textContent = `[${number}] ${baseName(p.path)}`;
  $("citation-place").textContent = [placeOf(p), p.path, p.library].filter(Boolean).join(" · ");
  showError("citation-error", null);
  $("citation-text").replaceChildren(el("mark", {}, p.text));
  try {
    const context = await api.passageContext(conversation.id, turn, number);
    const parts: Node[] = [];
    if (context.before) parts.push(el("div", { className: "context" }, `…${context.before.slice(-600)}`));
    parts.push(el("mark", {}, context.text));
    if (context.after) parts.push(el("div", { className: "context" }, `${context.after.slice(0, 600)}…`));
    if (!context.in_library) parts.push(el("p", { className: "muted" }, "This passage is no longer in the library; the quote kept with the answer is shown."));
    $("citation-text").replaceChildren(...parts);
  } catch (error) {
    showError("citation-error", error);
  }
}

// ---------------------------------------------------------------- settings

let shownSettings: api.SettingsView | null = null;
const input = (id: string) => $<HTMLInputElement>(id);
const orNull = (value: string) => (value.trim() === "" ? null : value.trim());

function keyNote(view: api.SettingsView, name: string): string {
  const key = view.keys.find((k) => k.name === name);
  if (!key) return "";
  if (key.source === "environment") return `set by ${key.variable}`;
  if (key.source === "keyring") return "stored in the OS keyring (type to replace, clear to keep)";
  return "not set";
}

function fillSettings(view: api.SettingsView) {
  shownSettings = view;
  const s = view.settings;
  input(s.llm.url ? "llm-server" : "llm-embedded").checked = true;
  input("llm-model-file").value = s.llm.model_file ?? "";
  input("llm-url").value = s.llm.url ?? "";
  input("llm-model").value = s.llm.model ?? "";
  input("llm-key").value = "";
  input("llm-key").placeholder = keyNote(view, "llm");
  $<HTMLSelectElement>("network").value = s.network;
  input("web-enabled").checked = s.web.enabled;
  $<HTMLSelectElement>("web-provider").value = s.web.provider;
  input("web-url").value = s.web.url ?? "";
  input("web-pages").value = String(s.web.pages);
  $<HTMLSelectElement>("web-queries").value = s.web.queries ?? "question";
  input("web-key").value = "";
  input("web-key").placeholder = keyNote(view, s.web.provider === "brave" ? "brave" : "tavily");
  $<HTMLSelectElement>("embedding-model").value = s.embedding.model === "e5" ? "e5" : "";
  input("embedding-dir").value = s.embedding.model_dir ?? "";
  input("data-dir").value = s.data_dir ?? "";
  input("data-dir").placeholder = view.data_dir_in_use;
  $("data-dir-note").textContent = `In use now: ${view.data_dir_in_use}. A new data folder takes effect at the next start.`;
  $("keys-note").textContent =
    `Settings file: ${view.path}. API keys are kept in the OS keyring, never in that file.` + (view.keyring_problem ? ` Keyring: ${view.keyring_problem}` : "");
  showError("settings-problem", view.settings_problem);
}

function readSettings(): api.Settings {
  const base = shownSettings!.settings;
  const server = input("llm-server").checked;
  return {
    ...base,
    network: $<HTMLSelectElement>("network").value as api.Settings["network"],
    llm: {
      ...base.llm,
      model_file: server ? null : orNull(input("llm-model-file").value),
      url: server ? orNull(input("llm-url").value) : null,
      model: server ? orNull(input("llm-model").value) : null,
    },
    embedding: { ...base.embedding, model: orNull($<HTMLSelectElement>("embedding-model").value), model_dir: orNull(input("embedding-dir").value) },
    web: {
      enabled: input("web-enabled").checked,
      provider: $<HTMLSelectElement>("web-provider").value as api.Settings["web"]["provider"],
      url: orNull(input("web-url").value),
      pages: Math.max(1, Number(input("web-pages").value) || 3),
      queries: $<HTMLSelectElement>("web-queries").value as "question" | "ask" | "all",
    },
    data_dir: orNull(input("data-dir").value),
  };
}

async function openSettings() {
  try {
    fillSettings(await api.getSettings());
    document.body.classList.add("show-settings");
    $("settings").hidden = false;
    $("settings-result").textContent = "";
    $("connection-result").textContent = "";
    void findServers();
  } catch (error) {
    setStatus(String(error));
  }
}

function closeSettings() {
  document.body.classList.remove("show-settings");
  $("settings").hidden = true;
}

async function saveSettings() {
  const settings = readSettings();
  const keys: [string, string][] = [];
  if (input("llm-key").value.trim()) keys.push(["llm", input("llm-key").value]);
  if (input("web-key").value.trim() && settings.web.provider !== "searxng") keys.push([settings.web.provider, input("web-key").value]);
  $("settings-result").textContent = "Saving…";
  try {
    fillSettings(await api.saveSettings(settings, keys));
    $("settings-result").textContent = "Saved. The next question uses these settings.";
    setStatus(`Quarry · ${settings.network}${settings.web.enabled ? " · web search on" : ""}`);
  } catch (error) {
    $("settings-result").textContent = String(error);
  }
}

async function testConnection() {
  $("connection-result").textContent = "Loading the model and asking it for one word…";
  try {
    $("connection-result").textContent = `OK: ${await api.testConnection(readSettings(), orNull(input("llm-key").value))}`;
  } catch (error) {
    $("connection-result").textContent = String(error);
  }
}

/** Lists the LLM servers running on this computer, each model with a button that fills the form with it. */
async function findServers() {
  $("servers-result").textContent = "Looking on this computer's usual ports…";
  $("servers").replaceChildren();
  const servers = await api.findLlmServers().catch(() => [] as api.LocalServer[]);
  $("servers-result").textContent = servers.length
    ? "Choose a model, then Test connection and Save."
    : "None found (Ollama 11434, LM Studio 1234, llama.cpp server 8080, vLLM 8000, Jan 1337).";
  for (const server of servers) {
    const models = server.models.length ? server.models : [""];
    for (const model of models) {
      const use = el("button", { type: "button", className: "small use-server" }, "Use");
      use.dataset.url = server.url;
      use.dataset.model = model;
      use.onclick = () => {
        input("llm-server").checked = true;
        input("llm-url").value = server.url;
        input("llm-model").value = model;
        $("connection-result").textContent = "";
      };
      $("servers").append(el("li", {}, use, ` ${server.name} · ${server.url} · ${model || "no model loaded"}`));
    }
  }
}

// ---------------------------------------------------------------- start

function wire() {
  $("new-library").onsubmit = async (e) => {
    e.preventDefault();
    const input = $("new-library-name") as HTMLInputElement;
    const name = input.value.trim();
    if (!name) return;
    setStatus(`Creating ${name}… (the embedding model loads the first time)`);
    try {
      await api.createLibrary(name);
      input.value = "";
      state.selectedLibrary = name;
      showError("library-error", null);
      setStatus(`Created ${name}. Drop files on the window to add them.`);
    } catch (error) {
      showError("library-error", error);
      setStatus("");
    }
    await refreshLibraries();
  };
  $("new-conversation").onclick = newConversation;
  $("composer").onsubmit = (e) => (e.preventDefault(), send());
  $("question").onkeydown = (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  };
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      if (state.running) stop();
      else if (!$("settings").hidden) closeSettings();
      else $("citation").hidden = true;
    }
  });
  $("stop").onclick = stop;
  $("open-settings").onclick = openSettings;
  $("close-settings").onclick = closeSettings;
  $("settings-form").onsubmit = (e) => (e.preventDefault(), saveSettings());
  $("test-connection").onclick = testConnection;
  $("find-servers").onclick = findServers;
  $("cancel-ingest").onclick = () => api.cancelIngest(ingest.library);
  $("close-ingest").onclick = () => ($("ingest").hidden = true);
  $("close-citation").onclick = () => ($("citation").hidden = true);
  $("open-source").onclick = async () => {
    if (!state.conversation || !shownCitation) return;
    try {
      await api.openSource(state.conversation.id, shownCitation.turn, shownCitation.number);
    } catch (error) {
      showError("citation-error", error);
    }
  };
  api.onIngest(onIngestEvents);
  api.onAgent(onAgentEvents);
  api.onDrop((paths) => {
    if (!state.selectedLibrary) {
      showError("library-error", "Create a library first, then drop files on it.");
      return;
    }
    addFiles(state.selectedLibrary, paths);
  });
}

async function start() {
  wire();
  try {
    const info = await api.appInfo();
    $("formats").textContent = `Reads ${info.formats.join(", ")}. Data folder: ${info.data_dir}`;
    const view = await api.getSettings();
    setStatus(`Quarry ${info.version} · ${view.settings.network}${view.settings.web.enabled ? " · web search on" : ""}`);
    if (view.settings_problem) setStatus(view.settings_problem);
  } catch (error) {
    setStatus(`Backend unavailable: ${String(error)}`);
  }
  await Promise.all([refreshLibraries(), refreshConversations()]);
  document.body.dataset.ready = "true";
}

start();
