// Shared by every screen: element lookup and creation, the window's state, error and status lines.
import type { AgentEvent, Conversation, ErrorCode, Failure, LibraryView } from "./api";

export const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: Record<string, any> = {}, ...children: (Node | string)[]): HTMLElementTagNameMap[K] {
  const node: HTMLElementTagNameMap[K] = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

export const state = {
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

/** What a person can do about a failure of kind `code`, when there is more to say than its message. */
const ADVICE: Partial<Record<ErrorCode, string>> = {
  disk_full: "The disk is full: free some space and try again. Libraries keep what they had.",
  library_busy: "Wait for the other work on this library to finish, or stop it, then try again.",
  model_missing: "A model file is missing: choose one in Settings, or reinstall Quarry.",
  offline: "Quarry is offline: allow the network in Settings to reach another computer.",
};

/** A rejected command's error as one line: a backend `Failure`'s message and advice by its code, or the
 *  text of anything else. */
export function errorText(error: unknown): string {
  if (error && typeof error === "object" && "message" in error && "code" in error) {
    const failure = error as Failure;
    const advice = ADVICE[failure.code];
    return advice ? `${failure.message} — ${advice}` : failure.message;
  }
  return String(error);
}

export function showError(id: string, error: unknown) {
  const node = $(id);
  node.textContent = error ? errorText(error) : "";
  node.hidden = !error;
}

export function setStatus(text: string) {
  $("status").textContent = text;
}

/** The file name of a document's path: `/docs/a.zip!/reports/b.pdf` → `b.pdf`. */
export function baseName(path: string): string {
  const inner = path.split("!/").pop() ?? path;
  return inner.split(/[\\/]/).pop() ?? inner;
}
