// The settings panel: answer model, embedded or OpenAI-compatible server (with the servers found on this
// computer), keys, network and web search.
import * as api from "./api";
import { $, el, errorText, showError, setStatus } from "./dom";

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
  $<HTMLSelectElement>("ocr").value = s.ocr ?? "auto";
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
    ocr: $<HTMLSelectElement>("ocr").value as api.Settings["ocr"],
    data_dir: orNull(input("data-dir").value),
  };
}

export async function openSettings() {
  try {
    fillSettings(await api.getSettings());
    document.body.classList.add("show-settings");
    $("settings").hidden = false;
    $("settings-result").textContent = "";
    $("connection-result").textContent = "";
    void findServers();
  } catch (error) {
    setStatus(errorText(error));
  }
}

export function closeSettings() {
  document.body.classList.remove("show-settings");
  $("settings").hidden = true;
}

export async function saveSettings() {
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
    $("settings-result").textContent = errorText(error);
  }
}

export async function testConnection() {
  $("connection-result").textContent = "Loading the model and asking it for one word…";
  try {
    $("connection-result").textContent = `OK: ${await api.testConnection(readSettings(), orNull(input("llm-key").value))}`;
  } catch (error) {
    $("connection-result").textContent = errorText(error);
  }
}

/** Lists the LLM servers running on this computer, each model with a button that fills the form with it. */
export async function findServers() {
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
