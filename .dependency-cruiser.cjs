/**
 * The layers of src/ (docs/architecture.md), checked by `npm run lint` with dependency-cruiser:
 * no import cycles, and no import that points up a layer. From the bottom:
 *   lib/                      pure utilities (encoding, crypto, caches, time)
 *   errors.ts, log.ts         the error type and the logger
 *   schemas/                  zod shapes of requests, responses, records, messages
 *   config.ts, deps.ts        settings and what domain code is handed (bindings, clock)
 *   ratelimit/                the rate-limit algorithm and how decisions are shown
 *   stores/                   KV key names
 *   objects/                  the Durable Objects that are the systems of record, and how to reach them
 *   identity/, auth/, webhooks/  the service's rules
 *   graphql/, http/           adapters: GraphQL engine; HTTP routes, the manager app, the API description
 *   app.ts, index.ts, description.ts  composition (the two Workers' entries)
 * Type-only imports count too: a layer that needs a type from above is a layer in the wrong place.
 * scripts/ (the CLI, npm start, deploy) is cruised too, for cycles only: the layer rules match ^src/.
 */
const layer = (name, path, mayImport) => ({
  name: `layer-${name}`,
  comment: `${path} may import only ${mayImport.join(", ")}`,
  severity: "error",
  from: { path: `^src/${path}` },
  to: { path: "^src/", pathNot: mayImport.map((p) => `^src/${p}`) },
});

const FOUNDATION = ["lib/", "errors\\.ts$", "log\\.ts$"];
const SHAPES = [...FOUNDATION, "schemas/"];
const WIRING = [...SHAPES, "config\\.ts$", "deps\\.ts$", "worker-configuration\\.d\\.ts$"];
const STORAGE = [...WIRING, "stores/", "ratelimit/", "objects/"];
const DOMAIN = [...STORAGE, "identity/", "auth/", "webhooks/"];

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "Import cycles make initialisation order matter and layers meaningless.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    layer("lib", "lib/", ["lib/"]),
    layer("errors", "errors\\.ts$", []),
    layer("log", "log\\.ts$", ["errors\\.ts$"]),
    layer("schemas", "schemas/", SHAPES),
    layer("wiring", "(config|deps)\\.ts$", WIRING),
    layer("ratelimit", "ratelimit/", [...WIRING, "ratelimit/"]),
    layer("stores", "stores/", [...WIRING, "stores/"]),
    layer("objects", "objects/", [...WIRING, "ratelimit/", "stores/kv-keys\\.ts$", "objects/"]),
    layer("domain", "(identity|auth|webhooks)/", DOMAIN),
    layer("graphql", "graphql/", [...DOMAIN, "graphql/"]),
    layer("http", "http/", [...DOMAIN, "graphql/", "http/"]),
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".tsx", ".js", ".mjs"] },
  },
};
