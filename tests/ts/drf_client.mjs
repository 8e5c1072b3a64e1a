// Every tool of the tests.drfbig API through the TypeScript SDK's client (validation of results against each
// tool's outputSchema on, as it is by default): lists the tools, compiles every `pattern` of every schema as
// ECMA-262 (`new RegExp(p, "u")`), then makes the calls given as JSON and prints one JSON line per step.
// Usage: node drf_client.mjs <path to @modelcontextprotocol/client's dist/index.mjs> <url> <calls.json>
import { readFileSync } from "node:fs";

const [clientPath, url, callsFile] = process.argv.slice(2);
const { Client, StreamableHTTPClientTransport } = await import(clientPath);
const out = (step, value) => console.log(JSON.stringify({ step, value }));

function patterns(schema, where, found) {
  if (Array.isArray(schema)) schema.forEach((s, i) => patterns(s, `${where}/${i}`, found));
  else if (schema && typeof schema === "object") {
    for (const [key, value] of Object.entries(schema)) {
      if (key === "pattern" && typeof value === "string") found.push([where, value]);
      else patterns(value, `${where}/${key}`, found);
    }
  }
  return found;
}

const client = new Client({ name: "drf-ts-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const { tools } = await client.listTools();
out("tools", tools.map((t) => t.name));
const bad = [];
let count = 0;
for (const tool of tools) {
  for (const [where, p] of patterns([tool.inputSchema, tool.outputSchema ?? {}], tool.name, [])) {
    count += 1;
    try { new RegExp(p, "u"); } catch (e) { bad.push([where, p, String(e)]); }
  }
}
out("patterns", { count, bad });
for (const [name, args] of JSON.parse(readFileSync(callsFile, "utf8"))) {
  try {
    const result = await client.callTool({ name, arguments: args });
    out("call", { name, isError: result.isError ?? false, structured: result.structuredContent ?? null,
      text: result.content?.[0]?.text ?? null });
  } catch (e) {
    out("call", { name, thrown: String(e) });
  }
}
await client.close();
