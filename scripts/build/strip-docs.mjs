/**
 * What the API Worker's bundle leaves out (issue 43): the text that only describes the API, never
 * serves it. Route declarations (src/http/routes/*.ts) carry their summary, description and
 * examples beside the behaviour, so that each route is declared once; schemas (src/schemas/*.ts)
 * carry `.describe("...")` for the JSON Schema of the API description. The people's Worker builds
 * the description from them (src/people-worker.ts); the API Worker serves requests, which never
 * read them. This transform, applied by scripts/build/api.mjs to those files only, replaces:
 *   - in the object literal given to a route builder (envelopeRoute, listRoute, rawRoute), and in
 *     its `body`, `response` and `query` entries: `summary`, a literal `description`, `example`;
 *   - in each query parameter of its `query` (an array written there, or a constant array the
 *     declaration names, `query: DELIVERY_QUERY`): a literal `description` and `example`;
 *   - `x.describe(<literal>)` in schemas: by `x`;
 * each with `undefined` (or nothing), by text splices at positions from TypeScript's parser, so
 * everything else stays byte for byte what the tests ran. Only literals are removed: a
 * `description` computed from data (a webhook configuration's own) is never one. The runtime
 * data of operational events (src/schemas/operational.ts: their JSON Schemas and examples are
 * served to receivers) is not touched: only `.describe(...)` calls are, and that file has none.
 * test/e2e/strip-docs.test.ts holds these rules; test/e2e/api-bundle.test.ts serves the built bundle under npm start.
 */
import ts from "typescript";

const ROUTE_BUILDERS = new Set(["envelopeRoute", "listRoute", "rawRoute"]);
const PROSE = new Set(["summary", "description"]);

/**
 * A string written in the source: a literal, a template, or a `+` of them.
 * @param {ts.Node} node
 * @returns {boolean}
 */
function isLiteral(node) {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) return true;
  if (ts.isParenthesizedExpression(node)) return isLiteral(node.expression);
  return (
    ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken && isLiteral(node.left) && isLiteral(node.right)
  );
}

/**
 * An object literal's `name: value` properties, by name (spreads, methods and computed names left out).
 * @param {ts.ObjectLiteralExpression} object
 * @returns {[string, ts.Expression][]}
 */
const assignments = (object) =>
  object.properties.flatMap((p) =>
    ts.isPropertyAssignment(p) && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? [[p.name.text, p.initializer]] : [],
  );

/**
 * @param {string} text a TypeScript source file
 * @param {string} fileName
 * @returns {{ code: string, removed: number }}
 */
export function stripDocs(text, fileName) {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  /** @type {[number, number, string][]} */
  const edits = [];
  /** @param {ts.Node} node */
  const blank = (node) => edits.push([node.getStart(source), node.getEnd(), "undefined"]);

  /** The route builders' declaration objects, and the names of the constant arrays their `query` names. */
  /** @type {ts.ObjectLiteralExpression[]} */
  const declarations = [];
  /** @type {Set<string>} */
  const queryNames = new Set();
  /** @param {ts.Node} node */
  const find = (node) => {
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && ROUTE_BUILDERS.has(node.expression.text)) {
      const [first] = node.arguments;
      if (first !== undefined && ts.isObjectLiteralExpression(first)) {
        declarations.push(first);
        for (const [name, value] of assignments(first)) if (name === "query" && ts.isIdentifier(value)) queryNames.add(value.text);
      }
    }
    ts.forEachChild(node, find);
  };
  find(source);

  /**
   * The declaration's own doc fields, and those of its body, response and query parameters.
   * @param {ts.ObjectLiteralExpression} object
   */
  const stripDeclaration = (object) => {
    for (const [name, value] of assignments(object)) {
      if (name === "summary" || (name === "description" && isLiteral(value))) blank(value);
      else if ((name === "body" || name === "response") && ts.isObjectLiteralExpression(value)) stripExample(value);
      else if (name === "query" && ts.isArrayLiteralExpression(value)) stripQuery(value);
    }
  };
  /** @param {ts.ArrayLiteralExpression} array */
  const stripQuery = (array) => {
    for (const element of array.elements) if (ts.isObjectLiteralExpression(element)) stripQueryParam(element);
  };
  /** @param {ts.ObjectLiteralExpression} object */
  const stripExample = (object) => {
    for (const [name, value] of assignments(object)) if (name === "example") blank(value);
  };
  /** @param {ts.ObjectLiteralExpression} object */
  const stripQueryParam = (object) => {
    for (const [name, value] of assignments(object)) if (name === "example" || (PROSE.has(name) && isLiteral(value))) blank(value);
  };

  /** @param {ts.Node} node */
  const visit = (node) => {
    if (ts.isObjectLiteralExpression(node) && declarations.includes(node)) stripDeclaration(node);
    if (
      ts.isVariableDeclaration(node) &&
      ts.isIdentifier(node.name) &&
      queryNames.has(node.name.text) &&
      node.initializer !== undefined &&
      ts.isArrayLiteralExpression(node.initializer)
    ) {
      stripQuery(node.initializer);
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const [first] = node.arguments;
      if (
        ts.isPropertyAccessExpression(callee) &&
        callee.name.text === "describe" &&
        node.arguments.length === 1 &&
        first &&
        isLiteral(first)
      ) {
        // `x.describe("...")` -> `x`: cut from the end of `x` to the end of the call.
        edits.push([callee.expression.getEnd(), node.getEnd(), ""]);
        visit(callee.expression);
        return;
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);

  // An edit inside another (a literal within a blanked example) goes with the outer one; the rest
  // are applied from the end, so that earlier positions stay valid.
  edits.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  /** @type {[number, number, string][]} */
  const kept = [];
  for (const edit of edits) if (edit[0] >= (kept.at(-1)?.[1] ?? 0)) kept.push(edit);
  let code = text;
  for (const [start, end, replacement] of kept.reverse()) code = code.slice(0, start) + replacement + code.slice(end);
  return { code, removed: kept.length };
}
