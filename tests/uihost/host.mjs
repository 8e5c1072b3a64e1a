// A web host of MCP Apps for tests/test_ui_browser.py, as the ext-apps basic-host example builds one:
// the TypeScript SDK's client connected to the server, and for each app a sandbox proxy on another
// origin (sandbox.html) holding the app's frame, talked to through the ext-apps AppBridge.
// Bundled by esbuild (the test does it) into one module for index.html.
import { AppBridge, PostMessageTransport, getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const UI = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";
const HOST_INFO = { name: "django-mcp-test-host", version: "1.0.0" };
const params = new URLSearchParams(location.search);
const SANDBOX = params.get("sandbox");

let client = null;

async function connected() {
  if (client) return client;
  client = new Client(HOST_INFO, { capabilities: { extensions: { [UI]: { mimeTypes: [MIME] } } } });
  const token = params.get("token"); // a bearer token for a project with OAuth on (the example project)
  const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp/", location.href), { requestInit }));
  return client;
}

function proxyReady(frame) {
  return new Promise((resolve) => {
    window.addEventListener("message", function ready(event) {
      if (event.source === frame.contentWindow && event.data?.method === "ui/notifications/sandbox-proxy-ready") {
        window.removeEventListener("message", ready);
        resolve();
      }
    });
  });
}

// Render the app of `name` and hand it a call's input and result, as a host does after the model called the tool.
// `options.undeclare`: an origin taken out of the resource's resourceDomains before the sandbox builds its CSP (as
// if the server had not declared it); `options.timeout`: ms to wait for the app to initialize (then an error).
async function show(name, args, options = {}) {
  const mcp = await connected();
  const { tools } = await mcp.listTools();
  const tool = tools.find((t) => t.name === name);
  const uri = getToolUiResourceUri(tool);
  const read = await mcp.readResource({ uri });
  const content = read.contents.find((c) => c.mimeType === MIME);
  const listing = (await mcp.listResources()).resources.find((r) => r.uri === uri);
  const ui = content._meta?.ui ?? listing?._meta?.ui ?? {};
  let csp = ui.csp;
  if (options.undeclare && csp?.resourceDomains) {
    csp = { ...csp, resourceDomains: csp.resourceDomains.filter((d) => d !== options.undeclare) };
  }
  const frame = document.createElement("iframe");
  frame.id = `app-${name}`;
  frame.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  frame.style.cssText = `width: 640px; height: 240px; border: ${ui.prefersBorder ? "1px solid #bbb" : "0"}`;
  frame.src = `${SANDBOX}?host=${encodeURIComponent(location.origin)}`;
  const ready = proxyReady(frame);
  document.getElementById("apps").append(frame);
  await ready;
  const bridge = new AppBridge(mcp, HOST_INFO, { openLinks: {}, serverTools: {}, serverResources: {} }, {
    hostContext: { theme: "light", platform: "web", locale: params.get("locale") || "en-US", displayMode: "inline",
      availableDisplayModes: ["inline"], toolInfo: { tool } },
  });
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  bridge.onsizechange = ({ height }) => { if (height) frame.style.height = `${height + 4}px`; };
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  await bridge.sendSandboxResourceReady({ html: content.text, csp, permissions: ui.permissions });
  const timeout = new Promise((_, reject) => {
    setTimeout(() => reject(new Error(`the app of ${name} did not initialize`)), options.timeout ?? 30000);
  });
  await Promise.race([initialized, timeout]);
  const result = await mcp.callTool({ name, arguments: args });
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result);
  return { uri, ui, tool: tool._meta, result, size: new TextEncoder().encode(content.text).length };
}

async function call(name, args) {
  return (await connected()).callTool({ name, arguments: args });
}

window.host = { show, call };
document.body.dataset.ready = "true";
