/**
 * Where the prebuilt API description lives among the Worker's static assets (wrangler.toml
 * `[assets]`, directory build/assets): written by `npm run build` (scripts/build-description.mjs,
 * from http/description.ts) and read by the two description routes (routes/index.ts). The page is
 * built with a placeholder where each response's CSP nonce goes.
 */
export const DESCRIPTION_ASSETS = {
  openapi: "/openapi.json",
  docs: "/docs.html",
  /** Replaced by the response's nonce; never occurs in the page otherwise. */
  noncePlaceholder: "__KEYWAY_CSP_NONCE__",
} as const;
