/**
 * How the operator CLI prints: one object as aligned `key  value` lines, a list as a table, JSON
 * with --json; every string from the server with its control characters escaped, so stored text
 * cannot drive the terminal.
 */
import process from "node:process";
/** @typedef {import("./common.mjs").Item} Item */
/** @typedef {import("./common.mjs").Column} Column */

/** @param {string} field @returns {(item: Item) => unknown} */
export const field = (field) => (item) => item[field];

/** @param {string} outer @param {string} inner @returns {(item: Item) => unknown} */
export const nested = (outer, inner) => (item) => {
  const value = item[outer];
  return isObject(value) ? value[inner] : undefined;
};

/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
export function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Text from the server with control characters escaped: names are chosen by organization
 * administrators too, and an escape sequence must not reach the operator's terminal as one.
 * @param {string} text
 */
export function clean(text) {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: this pattern exists to find control characters.
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** @param {unknown} value */
export function show(value) {
  if (value === null || value === undefined) return "-";
  if (typeof value === "string") return clean(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return clean(JSON.stringify(value));
}

/**
 * One object as aligned `key  value` lines; nested objects become dotted keys (limits.per_day).
 * @param {Item} data
 */
export function record(data) {
  /** @type {[string, string][]} */
  const rows = [];
  /** @param {Item} object @param {string} prefix */
  const walk = (object, prefix) => {
    for (const [key, value] of Object.entries(object)) {
      if (isObject(value) && Object.keys(value).length > 0) walk(value, `${prefix}${key}.`);
      else rows.push([`${prefix}${key}`, show(value)]);
    }
  };
  walk(data, "");
  const width = Math.max(0, ...rows.map(([key]) => key.length));
  return rows.map(([key, value]) => `${key.padEnd(width)}  ${value}\n`).join("");
}

/**
 * Items as a table with a header row, columns padded to their widest cell.
 * @param {Item[]} items
 * @param {Column[]} columns
 */
export function table(items, columns) {
  const rows = [columns.map((c) => c.header), ...items.map((item) => columns.map((c) => show(c.value(item))))];
  const widths = columns.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length)));
  return rows.map((row) => `${row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  ")}\n`).join("");
}

/** @param {string} text */
export function write(text) {
  process.stdout.write(text);
}
