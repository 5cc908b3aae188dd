/**
 * The Worker the vitest projects run (vitest.config.ts): keyway's API Worker (src/index.ts) with
 * the entrypoints of its companion Workers exported beside it, the description Worker's and the
 * GraphQL engine's, so that the DOCS and GRAPHQL service bindings reach them inside the same test
 * Worker. Deployed, and under `npm start`, they are three Workers (wrangler.toml,
 * wrangler.docs.toml, wrangler.graphql.toml); the e2e tests exercise that topology.
 */
export { Description } from "../src/description";
export { GraphQLEngine } from "../src/graphql-worker";
export * from "../src/index";
export { default } from "../src/index";
