// The library sidebar (create, rename, delete, pick for questions, add files by drop or picker) and
// the ingest progress panel.
import * as api from "./api";
import type { IngestEvent, LibraryView } from "./api";
import { $, baseName, el, errorText, state, showError } from "./dom";

// ---------------------------------------------------------------- libraries

export async function refreshLibraries() {
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
  const searchable = l.indexed + l.keyword_only;
  const parts = [`${searchable} document${searchable === 1 ? "" : "s"}`, `${l.chunks} chunks`];
  if (l.waiting_chunks) {
    // Searchable by keyword already; semantic search covers them once embedded.
    const eta = l.waiting_eta_seconds != null ? `, ~${Math.max(1, Math.round(l.waiting_eta_seconds / 60))} min` : "";
    parts.push(`${l.waiting_chunks} chunks waiting for embeddings${eta}`);
  }
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
export const ingest = { library: "", files: new Map<string, FileRow>(), toRead: 0, done: 0, embedded: 0, known: 0, started: 0, model: "", keywordSeconds: null as number | null };

export async function addFiles(library: string, paths: string[]) {
  Object.assign(ingest, { library, files: new Map(), toRead: 0, done: 0, embedded: 0, known: 0, started: Date.now(), model: "", keywordSeconds: null });
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
    $("ingest-summary").textContent = errorText(error);
  }
  $("cancel-ingest").hidden = true;
  $("close-ingest").hidden = false;
  (document.getElementById("ingest-progress") as HTMLProgressElement).value = 1;
  await refreshLibraries();
  // Last, after the sidebar shows the new counts (the end-to-end test waits for this mark).
  $("ingest-summary").dataset.finished = "true";
}

export function onIngestEvents(library: string, events: IngestEvent[]) {
  if (library !== ingest.library) return;
  for (const e of events) {
    switch (e.event) {
      case "scanned":
        ingest.toRead = e.to_read;
        break;
      case "read":
        ingest.files.set(e.path, { state: "read", detail: `${e.format}, ${e.chunks} chunks` });
        break;
      case "keyword_indexed":
        // Committed: keyword search finds these files now; embeddings come after every file is read.
        for (const row of ingest.files.values()) if (row.state === "read") row.state = "keyword search";
        break;
      case "keyword_ready":
        ingest.keywordSeconds = e.seconds;
        ingest.embedded = 0;
        ingest.known = e.waiting_chunks;
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
        // Groups are embedded in the order files were read.
        {
          let left = e.documents;
          for (const row of ingest.files.values()) {
            if (left <= 0) break;
            if (row.state === "keyword search") {
              row.state = "indexed";
              left -= 1;
            }
          }
        }
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
        $("ingest-summary").textContent = errorText({ code: e.code, message: e.error });
        break;
    }
  }
  renderIngest();
}

function renderIngest() {
  // Reading files is quick and embedding takes most of the time (docs/evaluation/ingest-and-search.md):
  // the bar gives reading a tenth.
  const read = ingest.toRead > 0 ? ingest.done / ingest.toRead : 0;
  const embedded = ingest.known > 0 ? ingest.embedded / ingest.known : 0;
  const fraction = ingest.toRead > 0 ? 0.1 * read + 0.9 * embedded : 0;
  (document.getElementById("ingest-progress") as HTMLProgressElement).value = Math.min(1, fraction);
  if (ingest.toRead > 0) {
    const elapsed = (Date.now() - ingest.started) / 1000;
    const eta = fraction > 0.02 ? Math.round((elapsed / fraction) * (1 - fraction)) : null;
    $("ingest-summary").textContent =
      `${ingest.done} of ${ingest.toRead} files read` +
      (ingest.keywordSeconds !== null ? ` (searchable by keyword after ${ingest.keywordSeconds.toFixed(0)} s)` : "") +
      ` · ${ingest.embedded} of ${ingest.known} chunks embedded` +
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
