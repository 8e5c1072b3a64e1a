// The app side of the MCP Apps bridge, bundled from the ext-apps package build without bundled dependencies
// (dist/src/app.js) by esbuild, minified and tree-shaken to what a page uses. Run by scripts/vendor_ext_apps.py
// (argument: the .node directory); writes the bundle to stdout.
//
// Two things let esbuild drop what is not used, without changing what runs:
// * app.js imports zod as `import {z as Q} from "zod/v4"` (one namespace object, kept whole with all of zod's
//   locales); it becomes `import * as Q from "zod/v4"`, the same module, whose unused members can be dropped.
// * the packages' modules are marked free of side effects on import (zod's compile.js, which registers itself,
//   excepted), so an unused module of the MCP SDK is not kept for its top-level code.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const nodeDir = process.argv[2];
const esbuild = await import(pathToFileURL(join(nodeDir, "node_modules", "esbuild", "lib", "main.js")).href);
const NAMES = ["App", "PostMessageTransport", "applyDocumentTheme", "applyHostStyleVariables", "applyHostFonts"];

const shake = {
  name: "shake",
  setup(build) {
    build.onLoad({ filter: /\.m?js$/ }, async (args) => {
      const source = await readFile(args.path, "utf8");
      const star = source.replace(/import\s*\{\s*z\s+as\s+([\w$]+)\s*\}\s*from\s*"zod\/v4"/g, 'import*as $1 from"zod/v4"');
      return star === source ? undefined : { contents: star, loader: "js" };
    });
    build.onResolve({ filter: /.*/ }, async (args) => {
      if (args.pluginData === "shake") return undefined;
      const { kind, resolveDir, importer } = args;
      const found = await build.resolve(args.path, { kind, resolveDir, importer, pluginData: "shake" });
      if (found.errors.length || found.external) return undefined;
      return { path: found.path, sideEffects: /[\\/]zod[\\/]v4[\\/]core[\\/]compile\.js$/.test(found.path) };
    });
  },
};

const result = await esbuild.build({
  stdin: {
    contents: `import {${NAMES}} from "@modelcontextprotocol/ext-apps";\nglobalThis.McpExtApps={${NAMES}};\n`,
    resolveDir: nodeDir,
  },
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2022",
  legalComments: "eof",
  write: false,
  plugins: [shake],
  logLevel: "error",
});
process.stdout.write(result.outputFiles[0].text);
