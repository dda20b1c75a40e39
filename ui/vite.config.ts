import { defineConfig } from "vite";

// Tauri serves ui/dist in builds and this dev server (port fixed, no auto-open) in `tauri dev`.
export default defineConfig({
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  build: { outDir: "dist", target: "es2022", emptyOutDir: true },
});
