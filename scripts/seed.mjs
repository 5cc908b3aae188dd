/**
 * Demo data for local runs: through the operator API (/admin/v1) it creates one organization with
 * one user, a client credential for that user and an API key, which together are everything a
 * client needs to obtain an access token. It goes through HTTP rather than writing KV directly so
 * the demo exercises the same validation and storage code as real operators. It uses only
 * `fetch` (injected), so `npm start` runs it against wrangler dev and the workers test suite runs
 * it inside workerd against the Worker itself. `formatDemo` renders the block `npm start` prints,
 * kept here so the test checks the very commands a developer will paste.
 */

/**
 * @typedef {object} Demo
 * @property {string} baseUrl
 * @property {string} organizationId
 * @property {string} userId
 * @property {string} clientId
 * @property {string} clientSecret
 * @property {string} apiKey
 * @property {string} apiKeyId
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
  const key = await post(`${orgPath}/api-keys`, { name: "Demo key" }, ["id", "api_key"]);

  return {
    baseUrl: base,
    organizationId: org.id,
    userId: user.id,
    clientId: credential.client_id,
    clientSecret: credential.client_secret,
    apiKey: key.api_key,
    apiKeyId: key.id,
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
 * The text `npm start` prints: the demo identifiers and secrets plus two curl commands that can be
 * pasted as they are (every value is base64url or an id, so single quotes need no escaping).
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
    "1. Get an access token:",
    "",
    `curl -sS -X POST ${base}/v1/oauth -H 'Content-Type: application/json' -H 'x-api-key: ${demo.apiKey}' -d '${body}'`,
    "",
    "2. The token is data.access_token of that answer. Put it in TOKEN and call the API, but",
    "   wait a second between calls: the default rate limit is 1 request per second per API key.",
    "",
    // Quoted so that pasting the line unedited is harmless rather than a shell redirection.
    "TOKEN='<data.access_token from step 1>'",
    `curl -sS ${base}/v1/me -H 'x-api-key: ${demo.apiKey}' -H "Authorization: Bearer $TOKEN"`,
    rule,
  ].join("\n");
}
