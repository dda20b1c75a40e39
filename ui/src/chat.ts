// Conversations (list, open, new), the chat (question, live research trace, streaming answer, web-query
// approvals) and the citation panel.
import DOMPurify from "dompurify";
import { marked } from "marked";
import * as api from "./api";
import type { AgentEvent, Answer, Turn } from "./api";
import { $, baseName, el, errorText, state, showError, setStatus } from "./dom";

// ---------------------------------------------------------------- conversations

export async function refreshConversations() {
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

export function newConversation() {
  if (state.running) return;
  state.conversation = null;
  renderMessages();
  refreshConversations();
  $("question").focus();
}

// ---------------------------------------------------------------- chat

/** Markdown → sanitised HTML; `[n]` markers of `answer`'s passages become citation links when the answer
 * is finished (`turnIndex` set). */
function renderMarkdown(markdown: string, turnIndex: number | null, answer?: Answer): HTMLElement {
  const div = el("div", { className: "answer" });
  // An answer is model text over document text: no images (they fetch), no forms, no `style` (a
  // full-window overlay can fake the app), no SVG or MathML (their `xlink:href` links navigate).
  div.innerHTML = DOMPurify.sanitize(marked.parse(markdown, { async: false }) as string, {
    // Nothing that loads by itself (images, media, frames, objects) or changes the page (styles, forms).
    FORBID_TAGS: [
      "img", "picture", "video", "audio", "source", "track", "iframe", "object", "embed",
      "style", "link", "meta", "base", "form", "input", "svg", "math",
    ],
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
  // The markers the backend found in the answer (quarry_agents::answer::citation_markers) are linked
  // where their exact text stands; nothing else is parsed here, so "[2023]" stays text.
  const markers = answer?.markers ?? [];
  if (markers.length === 0) return div;
  for (const node of texts) {
    const value = node.nodeValue ?? "";
    const fragment = document.createDocumentFragment();
    let last = 0;
    for (;;) {
      let next: { at: number; marker: (typeof markers)[number] } | null = null;
      for (const marker of markers) {
        const at = value.indexOf(marker.text, last);
        if (at >= 0 && (next === null || at < next.at)) next = { at, marker };
      }
      if (next === null) break;
      fragment.append(value.slice(last, next.at));
      fragment.append("[");
      next.marker.numbers.forEach((n, i) => {
        if (i > 0) fragment.append(", ");
        const link = el("button", { className: "cite", type: "button", textContent: String(n) });
        link.dataset.number = String(n);
        link.dataset.turn = String(turnIndex);
        link.onclick = () => showCitation(turnIndex, n);
        fragment.append(link);
      });
      fragment.append("]");
      last = next.at + next.marker.text.length;
    }
    if (last === 0) continue;
    fragment.append(value.slice(last));
    node.replaceWith(fragment);
  }
  return div;
}

function traceLine(e: AgentEvent): string | null {
  switch (e.event) {
    case "routed":
      return `Agent ${e.agent} over ${e.libraries.join(", ")} (${e.reason})`;
    case "queries":
      return `Round ${e.round}: ${e.queries.map((q) => `“${q}”`).join(", ")}`;
    case "retrieved":
      return `${e.hits} passages (${e.new} new) for “${e.query}”`;
    case "judged":
      return `Kept ${e.kept.length} of ${e.kept.length + e.rejected.length}: ${e.kept.map((p) => p.citation).join("; ") || "none"}`;
    case "intermediate_answer":
      return `Intermediate answer to “${e.query}”: ${e.answer}`;
    case "reflected":
      return `Reflection after round ${e.round}: ${e.facts.join(" ") || "no facts noted"}${e.queries.length ? "" : " Nothing missing."}`;
    case "ordered":
      return `${e.kept} passages for the answer ordered by a search for “${e.query}”`;
    case "stopped":
      return `Stop after round ${e.round}: ${e.reason}`;
    case "degraded":
      return `${e.step}: ${e.problem}; ${e.fallback}`;
    case "llm_call":
      return `${e.step}: ${e.prompt_tokens} + ${e.completion_tokens} tokens, ${e.seconds.toFixed(1)} s`;
    case "web_notice":
      return `Web: ${e.message}`;
    case "web_query":
      return e.sent ? `Sent to ${e.source}: “${e.query}”` : `Withheld from ${e.source} (written by the model): “${e.query}”`;
    case "finished":
      return `Finished: ${e.llm_calls} model calls, ${e.usage.prompt_tokens + e.usage.completion_tokens} tokens, ${e.seconds.toFixed(1)} s`;
    default:
      return null;
  }
}

function renderTrace(events: AgentEvent[], open: boolean): HTMLElement {
  const lines = events.map(traceLine).filter((l): l is string => l !== null);
  const tokens = events.reduce((sum, e) => (e.event === "llm_call" ? sum + e.prompt_tokens + e.completion_tokens : sum), 0);
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
        exported.textContent = errorText(error);
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
    try {
      const delivered = await api.answerWebQuery(asked.id, send);
      if (!delivered) setStatus("That web query was no longer waiting for an answer: it was not sent.");
    } catch (error) {
      // Not delivered: put the question back so the person can answer again, and say why.
      state.approvals = [...state.approvals, asked];
      renderMessages();
      setStatus(`Your answer to the web query did not reach Quarry: ${errorText(error)}`);
    }
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

export async function send() {
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
    setStatus(errorText(error));
  }
  Object.assign(state, { running: false, runningId: null });
  $("send").hidden = false;
  $("stop").hidden = true;
  renderMessages();
  refreshConversations();
}

export function onAgentEvents(conversation: string, events: AgentEvent[]) {
  if (!state.running) return;
  if (state.runningId === null) {
    const named = events.find((e) => e.event === "conversation");
    if (named) state.runningId = conversation;
  }
  if (conversation !== state.runningId) return;
  for (const e of events) {
    if (e.event === "answer_delta") state.liveText += e.text;
    else if (e.event === "web_query_approval") state.approvals.push({ id: e.id, source: e.source, query: e.query });
    else if (e.event !== "conversation") state.liveTrace.push(e);
  }
  renderMessages();
}

export async function stop() {
  if (state.runningId) await api.stopAsk(state.runningId);
}

// ---------------------------------------------------------------- citations

function citationText(p: api.Passage): string {
  if (/^https?:\/\//.test(p.path)) return p.heading_path[0] ? `${p.heading_path[0]} (${p.path})` : p.path;
  const place = placeOf(p);
  return place ? `${baseName(p.path)}, ${place}` : baseName(p.path);
}

/** As quarry_core::Passage::place: `p. 3`, `pp. 3–4`, `sheet Q3`, `Safety > Ladders`, with `, OCR` when
 *  the text was recognised by OCR. */
function placeOf(p: api.Passage): string {
  let place: string;
  if (p.page_start !== null) place = p.page_end !== null && p.page_end !== p.page_start ? `pp. ${p.page_start}–${p.page_end}` : `p. ${p.page_start}`;
  else if (p.sheet) place = `sheet ${p.sheet}`;
  else place = p.heading_path.join(" > ");
  if (!p.ocr) return place;
  return place ? `${place}, OCR` : "OCR";
}


export let shownCitation: { turn: number; number: number } | null = null;

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
