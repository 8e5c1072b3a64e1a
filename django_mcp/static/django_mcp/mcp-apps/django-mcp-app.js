// django-mcp-toolkit: the script of an MCP App page (django_mcp.ui), inlined after the ext-apps bridge.
//
// It connects the page to its host (the ext-apps `App`, as `globalThis.mcpApp`), shows each tool
// result (rendered on the server by the tool's UI template, through its app-only helper tool) in
// the page's [data-mcp-result] element, and makes elements with data-mcp-call call a tool through
// the host when clicked (a <form>: when submitted, its fields the arguments). Every call goes to the
// server through the host, so it meets the same checks as any call. Events on `document`:
// mcp:connected, mcp:toolinput, mcp:toolresult, mcp:called, mcp:rendered, mcp:error.
const { App, applyDocumentTheme, applyHostStyleVariables, applyHostFonts } = globalThis.McpExtApps;
const config = JSON.parse(document.getElementById("mcp-app-config")?.textContent || "{}");
const app = new App({ name: config.name || document.title || "MCP App", version: "1.0.0" }, {}, { autoResize: true });
globalThis.mcpApp = app;

let lastArguments = {};

function emit(name, detail) {
  document.dispatchEvent(new CustomEvent(name, { detail }));
}

function textOf(result) {
  return (result?.content || [])
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

function resultBox() {
  return document.querySelector("[data-mcp-result]");
}

function show(target, html, isText) {
  if (!target) return;
  if (isText) target.textContent = html;
  else target.innerHTML = html; // HTML the server rendered with Django's autoescaping, for this caller
  target.removeAttribute("aria-busy");
  emit("mcp:rendered", { target });
}

// A tool's result, rendered by `helper` (its UI template on the server), or its text when it has none.
async function present(result, helper, args, target) {
  if (!helper) {
    show(target, textOf(result), true);
    return;
  }
  target?.setAttribute("aria-busy", "true");
  const rendered = await app.callServerTool({
    name: helper,
    arguments: {
      result: result?.structuredContent ?? null,
      content: result?.content || [],
      arguments: args || {},
      locale: app.getHostContext()?.locale ?? null,
      is_error: Boolean(result?.isError),
    },
  });
  if (rendered.isError) {
    emit("mcp:error", { tool: helper, result: rendered });
    show(target, textOf(rendered), true);
    return;
  }
  show(target, rendered.structuredContent?.html ?? textOf(rendered), false);
}

function applyContext(context) {
  if (!context) return;
  if (context.theme) applyDocumentTheme(context.theme);
  if (context.styles?.variables) applyHostStyleVariables(context.styles.variables);
  if (context.styles?.css?.fonts) applyHostFonts(context.styles.css.fonts);
}

app.ontoolinput = (params) => {
  lastArguments = params.arguments || {};
  emit("mcp:toolinput", params);
};

app.ontoolresult = (result) => {
  emit("mcp:toolresult", result);
  present(result, config.render, lastArguments, resultBox()).catch((error) => emit("mcp:error", { error }));
};

app.ontoolcancelled = (params) => emit("mcp:error", { cancelled: params });
app.onhostcontextchanged = (context) => applyContext(context);

async function callFrom(element, args) {
  const name = element.dataset.mcpCall;
  const target = element.dataset.mcpTarget ? document.querySelector(element.dataset.mcpTarget) : resultBox();
  element.setAttribute("aria-busy", "true");
  if ("disabled" in element) element.disabled = true;
  try {
    const result = await app.callServerTool({ name, arguments: args });
    emit("mcp:called", { name, arguments: args, result });
    await present(result, element.dataset.mcpRender, args, target);
  } catch (error) {
    emit("mcp:error", { tool: name, error });
    show(target, String(error?.message || error), true);
  } finally {
    element.removeAttribute("aria-busy");
    if ("disabled" in element) element.disabled = false;
  }
}

function declaredArguments(element) {
  return element.dataset.mcpArguments ? JSON.parse(element.dataset.mcpArguments) : {};
}

document.addEventListener("click", (event) => {
  const element = event.target.closest("[data-mcp-call]");
  if (!element || element.tagName === "FORM") return;
  event.preventDefault();
  callFrom(element, declaredArguments(element));
});

document.addEventListener("submit", (event) => {
  const form = event.target.closest("form[data-mcp-call]");
  if (!form) return;
  event.preventDefault();
  callFrom(form, { ...declaredArguments(form), ...Object.fromEntries(new FormData(form)) });
});

await app.connect();
applyContext(app.getHostContext());
emit("mcp:connected", { host: app.getHostVersion() });
