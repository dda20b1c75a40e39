// Quarry's window: libraries (create, rename, delete, add files by drop or picker, progress), chat with a
// live research trace and a streaming answer, citations that open a passage panel, conversations that
// persist, report export. All backend calls go through ./api. This module wires the window's controls to
// the screens (libraries.ts, chat.ts, settings.ts; shared state and helpers in dom.ts) and starts.
import * as api from "./api";
import { $, errorText, state, showError, setStatus } from "./dom";
import { refreshLibraries, ingest, addFiles, onIngestEvents } from "./libraries";
import { refreshConversations, newConversation, send, onAgentEvents, stop, shownCitation } from "./chat";
import { openSettings, closeSettings, saveSettings, testConnection, findServers } from "./settings";

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
    setStatus(`Backend unavailable: ${errorText(error)}`);
  }
  await Promise.all([refreshLibraries(), refreshConversations()]);
  document.body.dataset.ready = "true";
}

start();
