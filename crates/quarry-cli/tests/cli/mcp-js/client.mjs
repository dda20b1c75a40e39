// `quarry mcp` driven by the official MCP TypeScript SDK (what JavaScript hosts such as Electron apps
// use): search, then get_passage with the chunk id exactly as search gave it, then resources/read.
// Usage: node client.mjs QUERY -- COMMAND ARGS…   Prints what it saw as one JSON object.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const separator = process.argv.indexOf("--");
const [query] = process.argv.slice(2, separator);
const [command, ...args] = process.argv.slice(separator + 1);
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "quarry-js-test", version: "1.0.0" });
await client.connect(transport);
const seen = {};
const search = await client.callTool({ name: "search", arguments: { query, k: 3 } });
seen.search = search.structuredContent;
const first = search.structuredContent?.passages?.[0];
if (first) {
  seen.chunk_id = first.chunk_id;
  const passage = await client.callTool({
    name: "get_passage",
    arguments: { library: first.library, chunk_id: first.chunk_id },
  });
  seen.get_passage = { is_error: passage.isError ?? false, structured: passage.structuredContent ?? null };
}
const resources = (await client.listResources()).resources;
seen.resources = resources.map((r) => r.uri);
if (resources.length > 0) {
  const read = await client.readResource({ uri: resources[0].uri });
  seen.resource_text = read.contents.map((c) => c.text ?? "").join("");
}
await client.close();
process.stdout.write(JSON.stringify(seen));
