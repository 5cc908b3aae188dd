/**
 * Demo data for local runs: through the operator API (/admin/v1) it creates one organization with
 * one user, a client credential for that user and an API key, which together are everything a
 * client needs to obtain an access token. It goes through HTTP rather than writing KV directly so
 * the demo exercises the same validation and storage code as real operators. It uses only
 * `fetch` (injected), so `npm start` runs it against wrangler dev and the workers test suite runs
 * it inside workerd against the Worker itself. `formatDemo` renders the block `npm start` prints,
 * kept here so the test checks the very commands a developer will paste.
 *
 * The demo key is the one key with a development limit (DEMO_LIMITS): the specification's default
 * of 1 request per second would make the banner's session, pasted as one block, and the client
 * recipes (docs/clients.md) answer 429 at their second request. Every other key, including the
 * ones the README's session and the operator CLI create, gets the specification's 1/s and 1000/day.
 */

/**
 * The demo key's limits: enough for the banner's session and every recipe pasted at once, and
 * still a limit (a runaway loop is refused, as it would be in production).
 */
export const DEMO_LIMITS = Object.freeze({ per_second: 100, per_day: 100_000 });

/**
 * @typedef {object} Demo
 * @property {string} baseUrl
 * @property {string} organizationId
 * @property {string} userId
 * @property {string} clientId
 * @property {string} clientSecret
 * @property {string} apiKey
 * @property {string} apiKeyId
 * @property {{ per_second: number, per_day: number }} [limits] the demo key's limits when seeded
 */

/**
 * @typedef {(input: string, init?: RequestInit) => Promise<Response>} FetchLike
 */

/**
 * Creates the demo organization, user, client credential and API key.
 * @param {{ baseUrl: string, adminToken: string, fetch?: FetchLike }} options
 * @returns {Promise<Demo>}
 */
export async function seedDemo({ baseUrl, adminToken, fetch = (input, init) => globalThis.fetch(input, init) }) {
  const base = baseUrl.replace(/\/+$/, "");

  /**
   * POSTs to the operator API and returns the named string fields of `data`; throws with the
   * status and developer_message on failure, or when a field is missing.
   * @template {string} K
   * @param {string} path
   * @param {unknown} payload
   * @param {K[]} names
   * @returns {Promise<Record<K, string>>}
   */
  async function post(path, payload, names) {
    // Called as a plain function: workerd's fetch throws "Illegal invocation" when called as a
    // method of some other object.
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
      body: JSON.stringify(payload),
    });
    /** @type {unknown} */
    let envelope = null;
    try {
      envelope = await res.json();
    } catch {
      // Not JSON (e.g. a proxy error page); the status alone is reported below.
    }
    const record = isObject(envelope) ? envelope : {};
    if (!res.ok) {
      const detail = typeof record.developer_message === "string" ? record.developer_message : "no envelope in the answer";
      throw new Error(`seed: POST ${path} answered ${res.status}: ${detail}`);
    }
    if (!isObject(record.data)) throw new Error(`seed: POST ${path} answered ${res.status} without a data object`);
    const data = record.data;
    /** @type {Partial<Record<K, string>>} */
    const fields = {};
    for (const name of names) {
      const value = data[name];
      if (typeof value !== "string") throw new Error(`seed: POST ${path} answered without data.${name}`);
      fields[name] = value;
    }
    return /** @type {Record<K, string>} */ (fields);
  }

  const orgs = "/admin/v1/organizations";
  const org = await post(orgs, { name: "Demo organization" }, ["id"]);
  const orgPath = `${orgs}/${encodeURIComponent(org.id)}`;
  const user = await post(`${orgPath}/users`, { name: "Demo user", email: "demo@example.com" }, ["id"]);
  const credential = await post(`${orgPath}/users/${encodeURIComponent(user.id)}/client-credentials`, { name: "Demo credential" }, [
    "client_id",
    "client_secret",
  ]);
  const key = await post(`${orgPath}/api-keys`, { name: "Demo key", limits: DEMO_LIMITS }, ["id", "api_key"]);

  return {
    baseUrl: base,
    organizationId: org.id,
    userId: user.id,
    clientId: credential.client_id,
    clientSecret: credential.client_secret,
    apiKey: key.api_key,
    apiKeyId: key.id,
    limits: { ...DEMO_LIMITS },
  };
}

/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The variables every guide reads (docs/tutorial.md), as one line to paste: `export KEYWAY_URL=...`
 * and the demo's credentials, each value single-quoted (ids and secrets are base64url, so no quote
 * can be in one).
 * @param {Demo} demo
 */
export function demoExports(demo) {
  const vars = {
    KEYWAY_URL: demo.baseUrl.replace(/\/+$/, ""),
    KEYWAY_API_KEY: demo.apiKey,
    KEYWAY_CLIENT_ID: demo.clientId,
    KEYWAY_CLIENT_SECRET: demo.clientSecret,
    KEYWAY_ORG: demo.organizationId,
    KEYWAY_USER: demo.userId,
  };
  return `export ${Object.entries(vars)
    .map(([k, v]) => `${k}='${v}'`)
    .join(" ")}`;
}

/**
 * The text `npm start` prints: the demo identifiers and secrets, then a session to paste as one
 * block (every value is base64url or an id, so single quotes need no escaping): a token from
 * /v1/oauth kept in TOKEN (`sed` takes data.access_token out of the one-line JSON envelope, so the
 * block needs nothing beyond curl and a POSIX shell), then /v1/me and GraphQL with it, and the
 * same token request form-encoded with HTTP Basic. The demo key's limit (DEMO_LIMITS) lets it run
 * without pauses.
 * @param {Demo} demo
 * @returns {string}
 */
export function formatDemo(demo) {
  const base = demo.baseUrl.replace(/\/+$/, "");
  const body = JSON.stringify({
    client_id: demo.clientId,
    client_secret: demo.clientSecret,
    grant_type: "client_credentials",
  });
  const graphql = JSON.stringify({ query: "{ viewer { organizationId clientId rateLimit { second { limit remaining } } } }" });
  const rule = "-".repeat(72);
  return [
    rule,
    "Demo data (local only; these secrets exist only in this machine's local state)",
    `  organization id  ${demo.organizationId}`,
    `  user id          ${demo.userId}`,
    `  client_id        ${demo.clientId}`,
    `  client_secret    ${demo.clientSecret}`,
    `  api key          ${demo.apiKey}`,
    `  api key id       ${demo.apiKeyId}`,
    "",
    "For the tutorial and the guides (docs/README.md), paste this line into a second shell:",
    "",
    demoExports(demo),
    "",
    `The demo key's limit is ${DEMO_LIMITS.per_second} requests per second and ${DEMO_LIMITS.per_day.toLocaleString("en-US")} per day, so that this`,
    "session and the guides' recipes run without pauses. Every other key gets the",
    "specification's default: 1 request per second and 1000 per day (the token request counts).",
    "",
    "Paste this block as it is: an access token, then the REST and GraphQL APIs with it.",
    "",
    `TOKEN=$(curl -sS -X POST ${base}/v1/oauth -H 'Content-Type: application/json' -H 'x-api-key: ${demo.apiKey}' -d '${body}' | sed -E 's/.*"access_token":"([^"]*)".*/\\1/')`,
    `curl -sS ${base}/v1/me -H 'x-api-key: ${demo.apiKey}' -H "Authorization: Bearer $TOKEN"; echo`,
    `curl -sS -X POST ${base}/v1/graphql -H 'Content-Type: application/json' -H 'x-api-key: ${demo.apiKey}' -H "Authorization: Bearer $TOKEN" -d '${graphql}'; echo`,
    `curl -sS -X POST ${base}/v1/oauth -u '${demo.clientId}:${demo.clientSecret}' -H 'x-api-key: ${demo.apiKey}' -d grant_type=client_credentials; echo`,
    rule,
  ].join("\n");
}
