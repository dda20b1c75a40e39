// The one module that talks to the Rust backend. Every `invoke` goes through here, typed.
import { invoke } from "@tauri-apps/api/core";

export interface AppInfo {
  version: string;
  /** Formats the ingestion layer reads, by short name (pdf, docx, xlsx, …). */
  formats: string[];
}

export function appInfo(): Promise<AppInfo> {
  return invoke<AppInfo>("app_info");
}
