import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import ts from "typescript";

/**
 * The house rules of src/ as checks over source text (parsed with the TypeScript
 * compiler, so comments and strings never count): the layer order and index.ts
 * boundaries (DESIGN.md §1, STYLE.md practice 15), and time and randomness only through
 * the injected Clock and Random (STYLE.md practice 4). Each function returns one message
 * per violation, naming the file, the line and what to do instead.
 */

/**
 * DESIGN.md §1's layers, lowest first: a layer imports only layers before it. The order
 * among layers that never import each other (objectstore and model, gc and snapshots,
 * fleet and functions, server and client) is the one DESIGN.md lists. A layer not yet
 * built (dashboard) keeps its place. `package` is not in DESIGN.md: it holds the published
 * package's entry points (`cairn`, `cairn/client`, …), which re-export the layers.
 */
export const LAYER_ORDER = [
  "base",
  "objectstore",
  "model",
  "local",
  "manifest",
  "segments",
  "snapshots",
  "gc",
  "shard",
  "replica",
  "fleet",
  "functions",
  "sync",
  "server",
  "client",
  "react",
  "dashboard",
  "cli",
  "package",
] as const;

/**
 * The client runs in browsers (the demo page bundles it with esbuild for the browser
 * platform), and the index.ts of model and sync reach node:crypto (shardFor), SQLite and
 * the server's handler, which a browser bundle cannot hold. So the client imports these
 * browser-safe modules of theirs directly; `sync/protocol.ts` is the client↔server
 * protocol module both ends share (STYLE.md practice 19), bundled with the client, so it
 * too imports the browser-safe model modules directly (error data travels in the value
 * encoding); `sync/resultChecksum.ts` is the diff checksum both ends compute (issue 30).
 * Nothing else may (base is browser-safe as a whole: the client imports it
 * through base/index.ts).
 */
export const CLIENT_BROWSER_SAFE_IMPORTS: ReadonlySet<string> = new Set([
  "model/Value.ts",
  "model/ValueJson.ts",
  "model/compareValues.ts",
  "model/withoutUndefinedFields.ts",
  "sync/protocol.ts",
  "sync/resultChecksum.ts",
]);

/**
 * Where the system's time and randomness may be touched: the injected Clock and Random
 * of src/base, and the client's own injected defaults (it runs in browsers, where
 * src/base's Node-only systemRandom cannot go; CairnClient takes `timers` and `random`).
 */
export const TIME_AND_RANDOMNESS_SOURCES: ReadonlySet<string> = new Set([
  "base/clock.ts",
  "base/random.ts",
  "client/Timers.ts",
  "client/Random.ts",
  "dashboard/pageClock.ts",
]);

const SOURCE_FILE = /\.(ts|tsx|mts|mjs|js)$/;

/** Every source file under `srcRoot`, as paths relative to it ("shard/ShardEngine.ts"). */
export function sourceFiles(srcRoot: string): string[] {
  const files: string[] = [];
  const walk = (directory: string) => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const path = join(directory, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (SOURCE_FILE.test(entry.name) && !entry.name.endsWith(".d.mts") && !entry.name.endsWith(".d.ts")) {
        files.push(relative(srcRoot, path).split("\\").join("/"));
      }
    }
  };
  walk(srcRoot);
  return files.sort();
}

function parse(file: string, text: string): ts.SourceFile {
  return ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith("js") ? ts.ScriptKind.JS : ts.ScriptKind.TS);
}

function lineOf(source: ts.SourceFile, node: ts.Node): number {
  return source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
}

/** Every module specifier in `text`: import/export … from, import("…"), import("…").T types, require("…"). */
export function moduleSpecifiers(file: string, text: string): { readonly specifier: string; readonly line: number }[] {
  const source = parse(file, text);
  const found: { specifier: string; line: number }[] = [];
  const visit = (node: ts.Node) => {
    let literal: ts.Node | undefined;
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) literal = node.moduleSpecifier;
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) literal = node.moduleReference.expression;
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) literal = node.argument.literal;
    else if (ts.isCallExpression(node) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === "require"))) {
      literal = node.arguments[0];
    }
    if (literal !== undefined && ts.isStringLiteralLike(literal)) found.push({ specifier: literal.text, line: lineOf(source, literal) });
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const layerOf = (path: string) => path.split("/")[0]!;

/** The source file a relative specifier of `file` names (".js" written for a ".ts" file). */
function resolveSpecifier(srcRoot: string, file: string, specifier: string): string {
  const target = normalize(join(dirname(file), specifier)).split("\\").join("/");
  if (existsSync(join(srcRoot, target))) return target;
  for (const [written, actual] of [[".js", ".ts"], [".mjs", ".mts"]] as const) {
    if (target.endsWith(written) && existsSync(join(srcRoot, target.slice(0, -written.length) + actual))) return target.slice(0, -written.length) + actual;
  }
  if (existsSync(join(srcRoot, target, "index.ts"))) return `${target}/index.ts`;
  return target;
}

/**
 * Second entries of a layer, beside its index.ts, for what only Node can load: the
 * client's index.ts stays browser-safe, so its Node-only parts (the `ws` WebSocket, a
 * file outbox) are imported from client/node.ts.
 */
const NODE_ONLY_ENTRIES = new Set(["client/node.ts"]);

/**
 * Imports that break the layering: a layer not in LAYER_ORDER, a layer without an
 * index.ts, an import up the order (or out of src/), one around another layer's
 * index.ts, and a file importing its own layer's index.ts (a cycle: the index re-exports it).
 */
export function layerViolations(srcRoot: string, read: (file: string) => string = (file) => readFileSync(join(srcRoot, file), "utf8")): string[] {
  const problems: string[] = [];
  const order: readonly string[] = LAYER_ORDER;
  const files = sourceFiles(srcRoot);
  for (const file of files.filter((file) => !file.includes("/"))) problems.push(`src/${file} is in no layer: move it into the folder of its layer`);
  for (const layer of new Set(files.filter((file) => file.includes("/")).map(layerOf))) {
    if (!order.includes(layer)) problems.push(`src/${layer}/ is not a layer of LAYER_ORDER (test/support/houseRules.ts): place it in DESIGN.md §1's order`);
    else if (!files.includes(`${layer}/index.ts`)) problems.push(`src/${layer}/ has no index.ts: give it one exporting what other layers use`);
  }
  for (const file of files) {
    const from = layerOf(file);
    for (const { specifier, line } of moduleSpecifiers(file, read(file))) {
      if (!specifier.startsWith(".")) continue;
      const target = resolveSpecifier(srcRoot, file, specifier);
      const where = `src/${file}:${line} imports "${specifier}"`;
      if (target.startsWith("..")) {
        problems.push(`${where}: outside src/ — src/ imports only src/ and packages`);
        continue;
      }
      const to = layerOf(target);
      if (to === from) {
        if (target === `${from}/index.ts` && file !== target) problems.push(`${where}: its own layer's index.ts — import the file itself (the index re-exports this one: a cycle)`);
        continue;
      }
      if (order.indexOf(to) > order.indexOf(from)) {
        problems.push(`${where}: up a layer — ${from} may not import ${to}; it imports only layers below it (${order.slice(0, order.indexOf(from)).join(", ")})`);
      } else if (target !== `${to}/index.ts` && !NODE_ONLY_ENTRIES.has(target) && !((from === "client" || file === "sync/protocol.ts") && CLIENT_BROWSER_SAFE_IMPORTS.has(target))) {
        problems.push(`${where}: around ${to}'s index.ts — import from "${relative(dirname(file), `${to}/index.js`)}" (export the name there)`);
      }
    }
  }
  return problems;
}

const GLOBAL_OBJECTS = new Set(["globalThis", "global", "window", "self"]);
const TIMER_FUNCTIONS = new Set(["setTimeout", "setInterval"]);
const RANDOM_FUNCTIONS = new Set(["randomBytes", "randomUUID", "randomFillSync", "randomFill", "randomInt", "getRandomValues"]);
const CRYPTO_MODULES = new Set(["crypto", "node:crypto"]);
const TIME_MODULES = new Set(["timers", "node:timers", "timers/promises", "node:timers/promises", "perf_hooks", "node:perf_hooks"]);
const USE_CLOCK = "take it from the injected Clock (src/base/clock.ts: nowMs, monotonicMs, sleep, setTimer, every)";
const USE_RANDOM = "draw it from the injected Random (src/base/random.ts: systemRandom, randomHex)";

/** `a.b.c` of a property access chain, or null if any link is not a plain name. */
function dottedName(node: ts.Expression): string | null {
  if (ts.isIdentifier(node)) return node.text;
  if (ts.isPropertyAccessExpression(node)) {
    const left = dottedName(node.expression);
    return left === null ? null : `${left}.${node.name.text}`;
  }
  return null;
}

/** `name` without a leading globalThis./window./…: the global it reads. */
function globalName(name: string): string {
  const [first, ...rest] = name.split(".");
  return GLOBAL_OBJECTS.has(first!) && rest.length > 0 ? rest.join(".") : name;
}

/** Whether `node` sits where an identifier is a name being declared or a member's name, not a read of a global. */
function isDeclarationOrMemberName(node: ts.Identifier): boolean {
  const parent = node.parent;
  return (
    ((ts.isPropertyAccessExpression(parent) || ts.isQualifiedName(parent)) && (parent as ts.PropertyAccessExpression).name === node) ||
    ((ts.isPropertySignature(parent) ||
      ts.isMethodSignature(parent) ||
      ts.isMethodDeclaration(parent) ||
      ts.isPropertyDeclaration(parent) ||
      ts.isPropertyAssignment(parent) ||
      ts.isFunctionDeclaration(parent) ||
      ts.isVariableDeclaration(parent) ||
      ts.isParameter(parent) ||
      ts.isImportSpecifier(parent) ||
      ts.isExportSpecifier(parent)) &&
      parent.name === node) ||
    (ts.isImportSpecifier(parent) && parent.propertyName === node) ||
    ts.isTypeReferenceNode(parent) ||
    ts.isTypeQueryNode(parent)
  );
}

/**
 * Reads of the system's time or randomness in `text` (a file of src/ not in
 * TIME_AND_RANDOMNESS_SOURCES): Date.now, new Date() or Date() for the current time,
 * performance.now, process.hrtime, setTimeout/setInterval, Math.random, crypto's random
 * functions, and the node:timers and node:perf_hooks modules.
 */
export function timeAndRandomnessLeaks(file: string, text: string): string[] {
  const source = parse(file, text);
  const problems: string[] = [];
  const report = (node: ts.Node, what: string, instead: string) => problems.push(`src/${file}:${lineOf(source, node)}: ${what} — ${instead}`);
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const module = node.moduleSpecifier.text;
      if (TIME_MODULES.has(module)) report(node, `import from "${module}"`, USE_CLOCK);
      const named = node.importClause?.namedBindings;
      if (CRYPTO_MODULES.has(module) && named !== undefined && ts.isNamedImports(named)) {
        for (const element of named.elements) {
          const imported = (element.propertyName ?? element.name).text;
          if (RANDOM_FUNCTIONS.has(imported)) report(element, `${imported} from "${module}"`, USE_RANDOM);
        }
      }
      if (CRYPTO_MODULES.has(module) && named !== undefined && ts.isNamespaceImport(named)) report(node, `import * from "${module}"`, `import the hash you need by name; ${USE_RANDOM}`);
    } else if (ts.isPropertyAccessExpression(node)) {
      const name = dottedName(node);
      if (name !== null) {
        const read = globalName(name);
        if (read === "Date.now" || read === "performance.now" || read === "process.hrtime") report(node, read, USE_CLOCK);
        else if (read === "Math.random") report(node, read, USE_RANDOM);
        else if (TIMER_FUNCTIONS.has(read)) report(node, name, USE_CLOCK);
        else if (read.startsWith("crypto.") && RANDOM_FUNCTIONS.has(node.name.text)) report(node, name, USE_RANDOM);
      }
    } else if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && dottedName(node.expression) !== null) {
      const callee = globalName(dottedName(node.expression)!);
      if (callee === "Date" && (ts.isCallExpression(node) || (node.arguments ?? []).length === 0)) {
        report(node, ts.isNewExpression(node) ? "new Date() (the current time)" : "Date() (the current time)", USE_CLOCK);
      }
    } else if (ts.isIdentifier(node) && TIMER_FUNCTIONS.has(node.text) && !isDeclarationOrMemberName(node)) {
      report(node, node.text, USE_CLOCK);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return problems;
}
