// Shared by every screen: element lookup and creation, the window's state, error and status lines.
import type { AgentEvent, Conversation, LibraryView } from "./api";

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

export function showError(id: string, error: unknown) {
  const node = $(id);
  node.textContent = error ? String(error) : "";
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
