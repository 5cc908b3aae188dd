/**
 * The Worker the vitest projects run (vitest.config.ts): keyway's API Worker (src/index.ts) with
 * the description Worker's entrypoint exported beside it, so that the DOCS service binding reaches
 * it inside the same test Worker. Deployed, and under `npm start`, they are two Workers
 * (wrangler.toml, wrangler.docs.toml); the e2e tests exercise that topology.
 */
export { Description } from "../src/description";
export * from "../src/index";
export { default } from "../src/index";
