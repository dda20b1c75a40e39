// The one module that talks to the Rust backend: every `invoke` and every event subscription goes
// through here, typed after the Rust structs in src-tauri/src/commands.rs and the crates they return.
import { invoke } from "@tauri-apps/api/core";
import { listen, type UnlistenFn } from "@tauri-apps/api/event";
import { getCurrentWebview } from "@tauri-apps/api/webview";

/** quarry_core::ErrorCode: the kind of a failure, what the UI acts on. */
export type ErrorCode =
  | "disk_full"
  | "library_busy"
  | "library_not_found"
  | "model_missing"
  | "offline"
  | "unreachable"
  | "cancelled"
  | "other";

/** commands::Failure: what every command rejects with. */
export interface Failure {
  code: ErrorCode;
  message: string;
}

export interface AppInfo {
  version: string;
  /** Formats the ingestion layer reads, by short name (pdf, docx, xlsx, …). */
  formats: string[];
  /** Where libraries and conversations are kept. */
  data_dir: string;
}

export interface LibraryView {
  name: string;
  indexed: number;
  failed: number;
  pending: number;
  /** Documents searchable by keyword only: their chunks wait for embeddings. */
  keyword_only: number;
  chunks: number;
  /** Chunks waiting for their embeddings, and the estimated seconds until they are embedded. */
  waiting_chunks: number;
  waiting_eta_seconds: number | null;
  /** [path, reason] of each failed document. */
  failures: [string, string][];
  ingesting: boolean;
  error: string | null;
}

export interface IngestSummary {
  files: number;
  unchanged: number;
  /** Unchanged files read again because this Quarry reads their format better. */
  reread: number;
  indexed: number;
  failed: number;
  skipped: number;
  moved: number;
  removed: number;
  chunks: number;
  pages: number;
  seconds: number;
  cancelled: boolean;
}

/** quarry_store::IngestEvent, plus `error` when the run itself failed. */
export type IngestEvent =
  | { event: "phase"; phase: "scan" | "read" | "embed" | "optimize" }
  | { event: "scanned"; files: number; to_read: number; unchanged: number; reread: number }
  | { event: "unreadable"; path: string; error: string }
  | { event: "read"; path: string; format: string; pages: number | null; chunks: number }
  | { event: "skipped"; path: string; reason: string }
  | { event: "failed"; path: string; status: string; error: string }
  | { event: "moved"; from: string; to: string }
  | { event: "keyword_indexed"; documents: number; chunks: number }
  | { event: "keyword_ready"; documents: number; waiting_chunks: number; seconds: number }
  | { event: "indexed"; documents: number; chunks: number }
  | { event: "embedding"; done: number; known: number }
  | { event: "file_done"; path: string }
  | { event: "removed"; path: string }
  | { event: "model_chosen"; model_id: string; cjk_share: number; sampled_chars: number }
  | ({ event: "finished" } & IngestSummary)
  | { event: "error"; error: string; code: ErrorCode };

export interface Passage {
  library: string;
  document_id: string;
  /** Absolute path (`/a/b.zip!/c.pdf` for a ZIP member) or a web page's URL. */
  path: string;
  page_start: number | null;
  page_end: number | null;
  sheet: string | null;
  heading_path: string[];
  text: string;
  /** What the document is (issuer · document type · period · file name); absent when unknown. */
  context?: string;
  /** Its text was recognised by OCR from a scan or a picture (absent: read from a text layer). */
  ocr?: boolean;
}

export interface Citation {
  number: number;
  passage: Passage;
}

export interface Answer {
  question: string;
  agent: string;
  markdown: string;
  citations: Citation[];
  sources: Citation[];
  queries: string[][];
  retrieved: number;
  kept: number;
  llm_calls: number;
  usage: { prompt_tokens: number; completion_tokens: number };
  seconds: number;
  model: string;
  libraries: string[];
  nothing_found: boolean;
  /** The claim check: each claim of the answer, and whether the passages it cites hold its figures. */
  claims?: ClaimCheck[];
  web_queries?: { source: string; query: string; sent: boolean }[];
  /** quarry_agents::answer::CitationMarker: the markers of `markdown` that cite its passages, exactly as
   *  written there — the only strings the chat turns into citation links. */
  markers: { text: string; numbers: number[] }[];
}

export interface ClaimCheck {
  sentence: string;
  cited: number[];
  supported: boolean;
  /** Why it is unsupported (absent when supported). */
  problem?: string;
}

export interface Turn {
  question: string;
  agent: string;
  libraries: string[];
  answer: Answer | null;
  error: string | null;
  /** The run's events (AgentEvent JSON), without streamed text. */
  trace: AgentEvent[];
  asked_ms: number;
}

export interface Conversation {
  id: string;
  title: string;
  created_ms: number;
  updated_ms: number;
  turns: Turn[];
}

export interface ConversationSummary {
  id: string;
  title: string;
  updated_ms: number;
  turns: number;
}

/** quarry_agents::PassageRef: a passage named in a trace. */
export interface PassageRef {
  library: string;
  chunk_id: number;
  citation: string;
}

/** quarry_agents::AgentEvent, plus the app's own `conversation`, `web_notice`, `web_query_approval` and
 *  `error` (src-tauri/src/commands.rs). Checked against the Rust types by tests/app. */
export type AgentEvent =
  | { event: "routed"; agent: string; libraries: string[]; reason: string }
  | { event: "started"; agent: string; question: string }
  | { event: "queries"; round: number; queries: string[] }
  | { event: "retrieved"; round: number; query: string; hits: number; new: number }
  | { event: "judged"; round: number; kept: PassageRef[]; rejected: PassageRef[] }
  | { event: "reflected"; round: number; facts: string[]; queries: string[] }
  | { event: "ordered"; query: string; kept: number }
  | { event: "intermediate_answer"; round: number; query: string; answer: string; supporting: PassageRef[] }
  | { event: "stopped"; round: number; reason: string }
  | { event: "degraded"; step: string; problem: string; fallback: string }
  | { event: "llm_call"; step: string; prompt_tokens: number; completion_tokens: number; seconds: number }
  | { event: "section"; index: number; count: number; title: string; stage: string }
  | { event: "answer_delta"; text: string }
  | { event: "web_query"; source: string; query: string; sent: boolean }
  | { event: "finished"; llm_calls: number; usage: { prompt_tokens: number; completion_tokens: number }; seconds: number }
  | { event: "conversation"; id: string; title: string }
  | { event: "web_notice"; message: string }
  | { event: "web_query_approval"; id: number; source: string; query: string }
  | { event: "error"; error: string; code: ErrorCode };

export interface PassageContext {
  before: string | null;
  text: string;
  after: string | null;
  in_library: boolean;
}

export type Agent = "auto" | "naive" | "deep" | "chain";

/** quarry_session::Settings (API keys are never part of it: they live in the OS keyring). */
export interface Settings {
  network: "offline" | "online";
  llm: { model_file: string | null; url: string | null; model: string | null; threads: number | null; context_tokens: number; dry_multiplier?: number };
  embedding: { model: string | null; model_dir: string | null; model_id: string | null; languages: string[] | null; onnx_runtime: string | null };
  /** `queries`: what the provider receives — only the typed question (the default), each agent query the person approves ("ask"), or every agent query too. */
  web: { enabled: boolean; provider: "searxng" | "tavily" | "brave"; url: string | null; pages: number; queries?: "question" | "ask" | "all" };
  /** When PDF pages are read by OCR: pages without a text layer ("auto"), never, or every page. */
  ocr: "auto" | "off" | "force";
  data_dir: string | null;
}

export interface KeyState {
  name: "llm" | "tavily" | "brave";
  source: "environment" | "keyring" | "none";
  variable: string;
}

export interface SettingsView {
  settings: Settings;
  path: string;
  data_dir_in_use: string;
  keys: KeyState[];
  keyring_problem: string | null;
  settings_problem: string | null;
}

export const appInfo = () => invoke<AppInfo>("app_info");
export const listLibraries = () => invoke<LibraryView[]>("list_libraries");
export const createLibrary = (name: string) => invoke<void>("create_library", { name });
export const renameLibrary = (from: string, to: string) => invoke<void>("rename_library", { from, to });
export const deleteLibrary = (name: string) => invoke<void>("delete_library", { name });
export const addToLibrary = (library: string, paths: string[]) => invoke<IngestSummary>("add_to_library", { library, paths });
export const pickFiles = (folders: boolean) => invoke<string[]>("pick_files", { folders });
export const cancelIngest = (library: string) => invoke<boolean>("cancel_ingest", { library });
export const listConversations = () => invoke<[ConversationSummary[], string[]]>("list_conversations");
export const loadConversation = (id: string) => invoke<Conversation>("load_conversation", { id });
export const renameConversation = (id: string, title: string) => invoke<Conversation>("rename_conversation", { id, title });
export const deleteConversation = (id: string) => invoke<void>("delete_conversation", { id });
export const ask = (conversation: string | null, question: string, agent: Agent, libraries: string[]) =>
  invoke<Conversation>("ask", { conversation, question, agent, libraries });
export const stopAsk = (conversation: string) => invoke<boolean>("stop_ask", { conversation });
/** The person's answer to a `web_query_approval` event: send the query to the web or not. */
export const answerWebQuery = (id: number, send: boolean) => invoke<boolean>("answer_web_query", { id, send });
export const passageContext = (conversation: string, turn: number, number: number) =>
  invoke<PassageContext>("passage_context", { conversation, turn, number });
export const openSource = (conversation: string, turn: number, number: number) =>
  invoke<void>("open_source", { conversation, turn, number });
export const exportReport = (conversation: string, turn: number) => invoke<string | null>("export_report", { conversation, turn });

export const getSettings = () => invoke<SettingsView>("get_settings");
/** Saves `settings`; `keys` are [name, value] pairs stored in the OS keyring (an empty value deletes). */
export const saveSettings = (settings: Settings, keys: [string, string][]) => invoke<SettingsView>("save_settings", { settings, keys });
export const testConnection = (settings: Settings, llmKey: string | null) => invoke<string>("test_connection", { settings, llmKey });
/** An OpenAI-compatible server running on this computer (quarry_llm::LocalServer). */
export interface LocalServer { name: string; url: string; models: string[] }
/** Servers answering on this computer's usual ports (loopback only, 1.5 s at most). */
export const findLlmServers = () => invoke<LocalServer[]>("find_llm_servers");

/** Batches of ingest progress for `library` (see src-tauri/src/batch.rs). */
export function onIngest(handler: (library: string, events: IngestEvent[]) => void): Promise<UnlistenFn> {
  return listen<{ key: string; events: IngestEvent[] }>("ingest", (e) => handler(e.payload.key, e.payload.events));
}

/** Batches of agent events for a conversation (streamed answer text arrives as `answer_delta`). */
export function onAgent(handler: (conversation: string, events: AgentEvent[]) => void): Promise<UnlistenFn> {
  return listen<{ key: string; events: AgentEvent[] }>("agent", (e) => handler(e.payload.key, e.payload.events));
}

/** Files and folders dropped on the window (Tauri v2 drag-drop). */
export function onDrop(handler: (paths: string[]) => void): Promise<UnlistenFn> {
  return getCurrentWebview().onDragDropEvent((e) => {
    if (e.payload.type === "drop") handler(e.payload.paths);
  });
}
