/**
 * The cost of validating one event's `data` against its type's schema (lib/json-schema.ts,
 * @cfworker/json-schema): a typical order (10 fields, a nested items array of 5 lines), valid,
 * and invalid deep in the items. The module is bundled with esbuild (as wrangler would) and run in
 * this Node; the figure is the median over 200 batches of 200 validations, in microseconds per
 * validation. Run: `node bench/schema-validation.mjs`.
 */
import { build } from "esbuild";
import { ORDER_DATA, ORDER_SCHEMA } from "./lib.mjs";

const { outputFiles } = await build({
  entryPoints: [new URL("../src/lib/json-schema.ts", import.meta.url).pathname],
  bundle: true,
  write: false,
  format: "esm",
  platform: "neutral",
});
const bundled = outputFiles[0]?.text ?? "";
/** @type {typeof import("../src/lib/json-schema.ts")} */
const { checkSchema, compileSchema } = await import(`data:text/javascript;base64,${Buffer.from(bundled).toString("base64")}`);

const ORDER = ORDER_SCHEMA;
const VALID = ORDER_DATA;
const INVALID = { ...VALID, items: [...VALID.items.slice(0, 4), { sku: "SKU-4", quantity: 0, price: 1 }] };

if (!checkSchema(ORDER).ok) throw new Error("the bench schema is refused");
const validator = compileSchema(ORDER);
const refused = validator.validate(INVALID);
if (!validator.validate(VALID).ok || refused.ok || refused.path !== "/items/4/quantity") throw new Error("unexpected answers");

/** @param {unknown} data */
function median(data) {
  const BATCH = 200;
  const per = [];
  for (let warm = 0; warm < 2000; warm++) validator.validate(data);
  for (let b = 0; b < 200; b++) {
    const t = performance.now();
    for (let i = 0; i < BATCH; i++) validator.validate(data);
    per.push(((performance.now() - t) * 1000) / BATCH);
  }
  per.sort((a, b) => a - b);
  return per[per.length >> 1] ?? Number.NaN;
}
console.log(`valid order:   ${median(VALID).toFixed(1)} µs per validation (median)`);
console.log(`invalid order: ${median(INVALID).toFixed(1)} µs per validation (median)`);
