/**
 * The Worker the vitest projects run (vitest.config.ts): keyway's API Worker (src/index.ts) with
 * the entrypoints of its companion Workers exported beside it, the people's Worker's and the
 * GraphQL engine's, so that the PEOPLE and GRAPHQL service bindings reach them inside the same
 * test Worker (with the test Worker's bindings). Deployed, and under `npm start`, they are three
 * Workers (wrangler.toml, wrangler.people.toml, wrangler.graphql.toml); the e2e tests exercise
 * that topology.
 */
export { GraphQLEngine } from "../src/graphql-worker";
export * from "../src/index";
export { default } from "../src/index";
export { People } from "../src/people-worker";
