/**
 * `npm run admin -- <command>`: the operator API (/admin/v1) from a terminal, against any keyway
 * (a local `npm start` or a deployment). Each command is one route of src/http/routes/admin.ts,
 * declared once in COMMANDS below with its path, body and output columns; the help text is derived
 * from the same table, so it cannot drift from what runs. The operator token comes only from the
 * environment (ADMIN_TOKEN), never from a flag, so it stays out of shell history and `ps`; for a
 * loopback URL an unset token may be read from ./.dev.vars, which is where `npm start` keeps it.
 * Created secrets are printed once, because that answer is the only place they ever appear.
 * Every failure is one readable message on stderr and an exit status (1: the request failed,
 * 2: nothing was sent because the command line or environment is wrong), never a stack trace.
 */
import { readFileSync, writeFileSync } from "node:fs";
import process from "node:process";
import { parseArgs } from "node:util";
import { parseDevVars } from "./dev-vars.mjs";

/** Revocations answer once every key object applied them, which can take a while on a busy deployment. */
const REQUEST_TIMEOUT_MS = 60_000;
/** The server's page size cap (schemas/common.ts ListQuery). */
const MAX_PAGE = 100;
/** The audit log grows for 400 days; without --all or --limit, the most recent entries are what an operator wants. */
const AUDIT_DEFAULT_LIMIT = 50;

/** @typedef {Record<string, unknown>} Item */
/** @typedef {"GET" | "POST" | "PATCH" | "DELETE"} Method */
/** @typedef {{ method: Method, path: string, body?: Item }} Call */
/** @typedef {Record<string, string | boolean | undefined>} Flags */
/** @typedef {{ header: string, value: (item: Item) => unknown }} Column */

/**
 * One command: `words` select it (`["keys", "create"]`; `["audit"]`), `args` are its positional
 * parameters in order, `flags` the options it takes beyond the global ones. A command either makes
 * one call (`call`) or reads a list (`list`: the collection's path, followed page by page).
 * @typedef {object} Command
 * @property {string[]} words
 * @property {string[]} args
 * @property {string[]} flags
 * @property {string} summary
 * @property {(a: Record<string, string>, f: Flags) => Call} [call]
 * @property {(a: Record<string, string>, f: Flags) => string} [list]
 * @property {Column[]} [columns]
 * @property {string} [noun] what a list holds, for "(no ...)"
 * @property {string} [secret] the field of the answer holding a secret shown only this once
 * @property {number} [defaultLimit] lists: how many items without --limit/--all (default: all)
 * @property {(client: Client, a: Record<string, string>, f: Flags) => Promise<void>} [check] run before the call; throws a UsageError to stop it
 * @property {(client: Client, a: Record<string, string>, f: Flags) => Promise<Shown>} [run] a command of several calls, or with its own output
 */

/** What a `run` command shows: `data` for --json, `text` for people (default: `data` as a record). */
/** @typedef {{ data: unknown, text?: string }} Shown */

/** Exit 2: nothing was sent. `group` selects the usage text printed with the message. */
class UsageError extends Error {
  /**
   * @param {string} message
   * @param {string} [group]
   * @param {boolean} [withUsage] false when usage text would not help (e.g. a missing ADMIN_TOKEN)
   */
  constructor(message, group, withUsage = true) {
    super(message);
    /** @type {string | undefined} */
    this.group = group;
    this.withUsage = withUsage;
  }
}

/** Exit 1: the request failed; `lines` are printed to stderr as they are. */
class RequestError extends Error {
  /** @param {string[]} lines */
  constructor(lines) {
    super(lines.join("\n"));
    this.lines = lines;
  }
}

const enc = encodeURIComponent;
const orgPath = (/** @type {Record<string, string>} */ a) => `/admin/v1/organizations/${enc(a.org ?? "")}`;
const usersPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/users`;
const credentialsPath = (/** @type {Record<string, string>} */ a) => `${usersPath(a)}/${enc(a.user ?? "")}/client-credentials`;
const keysPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/api-keys`;
const tokensPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/admin-tokens`;
const webhooksPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/webhook-configurations`;
const webhookPath = (/** @type {Record<string, string>} */ a) => `${webhooksPath(a)}/${enc(a.id ?? "")}`;
const deliveryPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/deliveries/${enc(a.id ?? "")}`;

/** @param {string} field @returns {(item: Item) => unknown} */
const field = (field) => (item) => item[field];
/** @param {string} outer @param {string} inner @returns {(item: Item) => unknown} */
const nested = (outer, inner) => (item) => {
  const value = item[outer];
  return isObject(value) ? value[inner] : undefined;
};

/** @type {Column[]} */
const ORG_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "NAME", value: field("name") },
  { header: "CREATED", value: field("created_at") },
];
/** @type {Column[]} */
const USER_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "NAME", value: field("name") },
  { header: "EMAIL", value: field("email") },
  { header: "CREATED", value: field("created_at") },
];
/** @type {Column[]} */
const CREDENTIAL_COLUMNS = [
  { header: "CLIENT_ID", value: field("client_id") },
  { header: "NAME", value: field("name") },
  { header: "AUTH", value: field("token_endpoint_auth_method") },
  { header: "SCOPES", value: (item) => (Array.isArray(item.scopes) ? item.scopes.join(" ") : undefined) },
  { header: "DPOP", value: field("dpop_bound_access_tokens") },
  { header: "STATUS", value: field("status") },
  { header: "CREATED", value: field("created_at") },
  { header: "LAST USED", value: field("last_used_at") },
];
/** @type {Column[]} */
const KEY_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "NAME", value: field("name") },
  { header: "HINT", value: field("hint") },
  { header: "PER SECOND", value: nested("limits", "per_second") },
  { header: "PER DAY", value: nested("limits", "per_day") },
  { header: "LOCATION", value: field("location_hint") },
  { header: "STATUS", value: field("status") },
  { header: "LAST USED", value: field("last_used_at") },
];
/** @type {Column[]} */
const TOKEN_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "NAME", value: field("name") },
  { header: "STATUS", value: field("status") },
  { header: "EXPIRES", value: field("expires_at") },
  { header: "LAST USED", value: field("last_used_at") },
];
/** @type {Column[]} */
const AUDIT_COLUMNS = [
  { header: "AT", value: field("at") },
  {
    header: "ACTOR",
    value: (item) => {
      const actor = isObject(item.actor) ? item.actor : {};
      return typeof actor.id === "string" ? `${actor.type}:${actor.id}` : actor.type;
    },
  },
  { header: "ACTION", value: field("action") },
  {
    header: "RESOURCE",
    value: (item) => (isObject(item.resource) ? `${item.resource.type}:${item.resource.id}` : undefined),
  },
  { header: "DETAIL", value: field("detail") },
];

/** @type {Column[]} */
const WEBHOOK_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "DESCRIPTION", value: field("description") },
  { header: "URL", value: field("url") },
  { header: "STATUS", value: (item) => (isObject(item.state) && item.state.pause_reason ? `${item.status}, paused` : item.status) },
  { header: "LANE", value: nested("state", "lane") },
  { header: "EVENTS", value: (item) => (Array.isArray(item.events) ? item.events.join(" ") : "all") },
];
/** @type {Column[]} */
const DELIVERY_COLUMNS = [
  { header: "ID (WEBHOOK-ID)", value: field("id") },
  { header: "EVENT", value: field("event_type") },
  { header: "EVENT ID", value: field("event_id") },
  { header: "STATUS", value: field("status") },
  { header: "ATTEMPTS", value: (item) => (Array.isArray(item.attempts) ? item.attempts.length : 0) },
  { header: "NEXT ATTEMPT", value: field("next_attempt_at") },
  { header: "CREATED", value: field("created_at") },
];
/** @type {Column[]} */
const ATTEMPT_COLUMNS = [
  { header: "#", value: field("number") },
  { header: "AT", value: field("at") },
  { header: "STEP", value: field("step") },
  { header: "HTTP", value: field("http_status") },
  { header: "MS", value: field("latency_ms") },
  { header: "OUTCOME", value: field("outcome") },
  { header: "ERROR", value: (item) => [item.error, item.note].filter((x) => typeof x === "string").join("; ") || undefined },
  {
    header: "ANSWER",
    value: (item) => (isObject(item.response) ? (item.response.body_withheld ? "(withheld)" : item.response.body_excerpt) : undefined),
  },
];
/** @param {string[]} fields @returns {Column[]} */
const seriesColumns = (fields) => [
  { header: "START (UTC)", value: field("start") },
  ...fields.map((f) => ({ header: f.toUpperCase(), value: field(f) })),
];

/** Every flag the CLI knows (node:util parseArgs), global or a command's own. */
const OPTIONS = /** @type {const} */ ({
  url: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  limit: { type: "string" },
  all: { type: "boolean" },
  name: { type: "string" },
  email: { type: "string" },
  "per-second": { type: "string" },
  "per-day": { type: "string" },
  "location-hint": { type: "string" },
  "expires-in-days": { type: "string" },
  jwks: { type: "string" },
  scopes: { type: "string" },
  dpop: { type: "string" },
  confirm: { type: "string" },
  version: { type: "boolean" },
  status: { type: "string" },
  "event-type": { type: "string" },
  "event-id": { type: "string" },
  days: { type: "boolean" },
  out: { type: "string" },
});

/** @type {Command[]} */
const COMMANDS = [
  {
    words: ["orgs", "create"],
    args: ["name"],
    flags: [],
    summary: "create an organization",
    call: (a) => ({ method: "POST", path: "/admin/v1/organizations", body: { name: a.name } }),
  },
  {
    words: ["orgs", "list"],
    args: [],
    flags: ["limit"],
    summary: "list organizations",
    list: () => "/admin/v1/organizations",
    columns: ORG_COLUMNS,
    noun: "organizations",
  },
  { words: ["orgs", "get"], args: ["org"], flags: [], summary: "show an organization", call: (a) => ({ method: "GET", path: orgPath(a) }) },
  {
    words: ["orgs", "delete"],
    args: ["org"],
    flags: ["confirm"],
    summary: "delete an organization: revoke all it holds now, erase its data after 30 days (--confirm NAME)",
    // Irreversible for its customer: the operator names the organization to confirm it.
    check: async (client, a, f) => {
      const org = await send(client, { method: "GET", path: orgPath(a) });
      const name = isObject(org) && typeof org.name === "string" ? org.name : "";
      if (f.confirm !== name) {
        throw new UsageError(
          `orgs delete revokes every API key, client credential, token and session of ${a.org} at once and erases its data after 30 days; to confirm, name it: --confirm ${JSON.stringify(name)}`,
        );
      }
    },
    call: (a) => ({ method: "DELETE", path: orgPath(a) }),
  },
  {
    words: ["orgs", "export"],
    args: ["org"],
    flags: ["out"],
    summary: "every record of an organization as one JSON document, no secrets (for backups, audits, offboarding)",
    run: async (client, a, f) => {
      const document = await exportOrganization(client, a);
      const text = `${JSON.stringify(document, null, 2)}\n`;
      if (f.out === undefined || f.out === true) return { data: document, text };
      writeFileSync(String(f.out), text, { mode: 0o600 });
      const counts = Object.entries(document)
        .filter(([, v]) => Array.isArray(v))
        .map(([k, v]) => `${/** @type {unknown[]} */ (v).length} ${k.replaceAll("_", " ")}`);
      return { data: { file: f.out, ...document }, text: `Wrote ${f.out}: ${counts.join(", ")}.\n` };
    },
  },

  {
    words: ["users", "create"],
    args: ["org", "name"],
    flags: ["email"],
    summary: "add a user to an organization",
    call: (a, f) => ({ method: "POST", path: usersPath(a), body: defined({ name: a.name, email: f.email }) }),
  },
  {
    words: ["users", "list"],
    args: ["org"],
    flags: ["limit"],
    summary: "list an organization's users",
    list: usersPath,
    columns: USER_COLUMNS,
    noun: "users",
  },
  {
    words: ["users", "get"],
    args: ["org", "user"],
    flags: [],
    summary: "show a user",
    call: (a) => ({ method: "GET", path: `${usersPath(a)}/${enc(a.user ?? "")}` }),
  },
  {
    words: ["users", "remove"],
    args: ["org", "user"],
    flags: [],
    summary: "remove a user, revoking their client credentials first",
    call: (a) => ({ method: "DELETE", path: `${usersPath(a)}/${enc(a.user ?? "")}` }),
  },

  {
    words: ["credentials", "create"],
    args: ["org", "user"],
    flags: ["name", "jwks", "scopes", "dpop"],
    summary: "issue a client credential to a user (client_secret shown once; with --jwks, private_key_jwt and no secret)",
    call: (a, f) => ({
      method: "POST",
      path: credentialsPath(a),
      body: defined({
        name: f.name,
        ...(f.jwks !== undefined ? { token_endpoint_auth_method: "private_key_jwt", jwks: jwksFile(f.jwks) } : {}),
        scopes: scopeList(f.scopes, false),
        dpop_bound_access_tokens: onOff(f.dpop),
      }),
    }),
    secret: "client_secret",
  },
  {
    words: ["credentials", "update"],
    args: ["org", "user", "client_id"],
    flags: ["name", "jwks", "scopes", "dpop"],
    summary: "change a client credential: a new key set (rotation), scopes, DPoP, name",
    call: (a, f) => ({
      method: "PATCH",
      path: `${credentialsPath(a)}/${enc(a.client_id ?? "")}`,
      body: defined({
        name: f.name,
        jwks: f.jwks === undefined ? undefined : jwksFile(f.jwks),
        scopes: scopeList(f.scopes, true),
        dpop_bound_access_tokens: onOff(f.dpop),
      }),
    }),
  },
  {
    words: ["credentials", "list"],
    args: ["org", "user"],
    flags: ["limit"],
    summary: "list a user's client credentials",
    list: credentialsPath,
    columns: CREDENTIAL_COLUMNS,
    noun: "client credentials",
  },
  {
    words: ["credentials", "get"],
    args: ["org", "user", "client_id"],
    flags: [],
    summary: "show a client credential",
    call: (a) => ({ method: "GET", path: `${credentialsPath(a)}/${enc(a.client_id ?? "")}` }),
  },
  {
    words: ["credentials", "revoke"],
    args: ["org", "user", "client_id"],
    flags: [],
    summary: "revoke a client credential (its tokens stop working at once)",
    call: (a) => ({ method: "DELETE", path: `${credentialsPath(a)}/${enc(a.client_id ?? "")}` }),
  },

  {
    words: ["keys", "create"],
    args: ["org"],
    flags: ["name", "per-second", "per-day", "location-hint"],
    summary: "issue an API key (api_key shown once)",
    call: (a, f) => {
      const limits = defined({ per_second: count(f, "per-second"), per_day: count(f, "per-day") });
      return {
        method: "POST",
        path: keysPath(a),
        body: defined({
          name: f.name,
          location_hint: f["location-hint"],
          limits: Object.keys(limits).length > 0 ? limits : undefined,
        }),
      };
    },
    secret: "api_key",
  },
  {
    words: ["keys", "list"],
    args: ["org"],
    flags: ["limit"],
    summary: "list an organization's API keys",
    list: keysPath,
    columns: KEY_COLUMNS,
    noun: "API keys",
  },
  {
    words: ["keys", "get"],
    args: ["org", "id"],
    flags: [],
    summary: "show an API key with its current usage",
    call: (a) => ({ method: "GET", path: `${keysPath(a)}/${enc(a.id ?? "")}` }),
  },
  {
    words: ["keys", "update"],
    args: ["org", "id"],
    flags: ["name", "per-second", "per-day"],
    summary: "rename an API key or change its limits (`default` restores one)",
    call: (a, f) => {
      const limits = defined({ per_second: countOrDefault(f, "per-second"), per_day: countOrDefault(f, "per-day") });
      const body = defined({ name: f.name, limits: Object.keys(limits).length > 0 ? limits : undefined });
      if (Object.keys(body).length === 0)
        throw new UsageError("keys update: nothing to change; give --name, --per-second or --per-day", "keys");
      return { method: "PATCH", path: `${keysPath(a)}/${enc(a.id ?? "")}`, body };
    },
  },
  {
    words: ["keys", "revoke"],
    args: ["org", "id"],
    flags: [],
    summary: "revoke an API key",
    call: (a) => ({ method: "DELETE", path: `${keysPath(a)}/${enc(a.id ?? "")}` }),
  },
  {
    words: ["keys", "traffic"],
    args: ["org", "id"],
    flags: ["days"],
    summary: "an API key's requests admitted and refused: the last 24 hours by hour (--days: the last 30 days)",
    run: async (client, a, f) => {
      const data = await send(client, { method: "GET", path: `${keysPath(a)}/${enc(a.id ?? "")}/traffic` });
      const series =
        isObject(data) && Array.isArray(data[f.days === true ? "days" : "hours"]) ? data[f.days === true ? "days" : "hours"] : [];
      return { data, text: table(/** @type {Item[]} */ (series).filter(isObject), seriesColumns(["admitted", "refused"])) };
    },
  },

  {
    words: ["webhooks", "list"],
    args: ["org"],
    flags: ["limit"],
    summary: "list the organization's webhook configurations",
    list: webhooksPath,
    columns: WEBHOOK_COLUMNS,
    noun: "webhook configurations",
  },
  {
    words: ["webhooks", "show"],
    args: ["org", "id"],
    flags: [],
    summary: "show a webhook configuration with its health: the last 24 hours' attempts, success rate and latency",
    run: async (client, a) => {
      const [config, traffic] = await Promise.all([
        send(client, { method: "GET", path: webhookPath(a) }),
        send(client, { method: "GET", path: `${webhookPath(a)}/traffic` }),
      ]);
      const last = isObject(traffic) && isObject(traffic.last_24h) ? traffic.last_24h : {};
      const health = {
        attempts: Number(last.succeeded ?? 0) + Number(last.failed ?? 0),
        failed: last.failed,
        success_rate: typeof last.success_rate === "number" ? `${Math.round(last.success_rate * 1000) / 10}%` : "-",
        latency_ms_avg: last.latency_ms_avg,
      };
      const data = { ...(isObject(config) ? config : {}), last_24h: last };
      return { data, text: `${record(isObject(config) ? config : {})}\nLast 24 hours\n${record(health)}` };
    },
  },
  {
    words: ["webhooks", "pause"],
    args: ["org", "id"],
    flags: [],
    summary: "disable a webhook configuration: nothing is sent to it until it is resumed",
    call: (a) => ({ method: "PATCH", path: webhookPath(a), body: { status: "disabled" } }),
  },
  {
    words: ["webhooks", "resume"],
    args: ["org", "id"],
    flags: [],
    summary: "re-enable a webhook configuration (its health count starts again)",
    call: (a) => ({ method: "PATCH", path: webhookPath(a), body: { status: "active" } }),
  },
  {
    words: ["webhooks", "test"],
    args: ["org", "id"],
    flags: [],
    summary: "send a webhook.test event to one configuration; prints the delivery's id",
    run: async (client, a) => {
      const data = await send(client, { method: "POST", path: `${webhookPath(a)}/test` });
      const deliveries = isObject(data) && Array.isArray(data.deliveries) ? data.deliveries.filter(isObject) : [];
      const ids = deliveries.map((d) => `delivery  ${show(d.id)} (${show(d.status)})\n`).join("");
      return { data, text: `${record(isObject(data) ? { id: data.id, type: data.type, created_at: data.created_at } : {})}${ids}` };
    },
  },

  {
    words: ["deliveries", "list"],
    args: ["org", "id"],
    flags: ["limit", "status", "event-type", "event-id"],
    summary: "list a configuration's deliveries, newest first, filtered by --status, --event-type, --event-id",
    list: (a, f) => {
      const query = new URLSearchParams(
        /** @type {Record<string, string>} */ (
          defined({ status: flagText(f.status), event_type: flagText(f["event-type"]), event_id: flagText(f["event-id"]) })
        ),
      ).toString();
      return `${webhookPath(a)}/deliveries${query ? `?${query}` : ""}`;
    },
    columns: DELIVERY_COLUMNS,
    noun: "deliveries",
    defaultLimit: 50,
  },
  {
    words: ["deliveries", "show"],
    args: ["org", "id"],
    flags: [],
    summary: "show a delivery (the webhook-id) and every attempt: step, HTTP status, latency, outcome, the receiver's answer",
    run: async (client, a) => {
      const data = await send(client, { method: "GET", path: deliveryPath(a) });
      const { attempts, ...rest } = isObject(data) ? data : {};
      const rows = Array.isArray(attempts) ? attempts.filter(isObject) : [];
      return { data, text: `${record(rest)}\nAttempts\n${rows.length === 0 ? "(no attempts yet)\n" : table(rows, ATTEMPT_COLUMNS)}` };
    },
  },
  {
    words: ["deliveries", "resend"],
    args: ["org", "id"],
    flags: [],
    summary: "re-send a delivery with the same webhook-id (refused while an attempt is in flight or the configuration is disabled)",
    call: (a) => ({ method: "POST", path: `${deliveryPath(a)}/retry` }),
  },

  {
    words: ["admin-tokens", "create"],
    args: ["org"],
    flags: ["name", "expires-in-days"],
    summary: "mint a manager-app sign-in for the organization (token shown once)",
    call: (a, f) => ({
      method: "POST",
      path: tokensPath(a),
      body: defined({ name: f.name, expires_in_days: count(f, "expires-in-days") }),
    }),
    secret: "token",
  },
  {
    words: ["admin-tokens", "list"],
    args: ["org"],
    flags: ["limit"],
    summary: "list the organization's administrator tokens",
    list: tokensPath,
    columns: TOKEN_COLUMNS,
    noun: "administrator tokens",
  },
  {
    words: ["admin-tokens", "get"],
    args: ["org", "id"],
    flags: [],
    summary: "show an administrator token",
    call: (a) => ({ method: "GET", path: `${tokensPath(a)}/${enc(a.id ?? "")}` }),
  },
  {
    words: ["admin-tokens", "revoke"],
    args: ["org", "id"],
    flags: [],
    summary: "revoke an administrator token, ending its manager sessions",
    call: (a) => ({ method: "DELETE", path: `${tokensPath(a)}/${enc(a.id ?? "")}` }),
  },

  {
    words: ["audit"],
    args: ["org"],
    flags: ["limit", "all"],
    summary: `the organization's audit log, newest first (${AUDIT_DEFAULT_LIMIT} entries unless --limit or --all)`,
    list: (a) => `${orgPath(a)}/audit-log`,
    columns: AUDIT_COLUMNS,
    noun: "audit entries",
    defaultLimit: AUDIT_DEFAULT_LIMIT,
  },
];

/** Per group: its heading in the help, and what its flags mean. */
const GROUPS = {
  orgs: { title: "Organizations", notes: ["--out FILE      orgs export: write the document to FILE (mode 600) instead of stdout"] },
  users: { title: "Users", notes: ["--email E       the user's e-mail address"] },
  credentials: {
    title: "Client credentials",
    notes: [
      "--name N        a label for the credential",
      '--jwks FILE     a JSON file holding the client\'s public keys ({"keys": [...]}): private_key_jwt, no secret;',
      "                on update it replaces the key set (list old and new during a rotation)",
      '--scopes "S.."  the scopes its tokens may have, space-separated; update: `all` lifts the restriction',
      "--dpop on|off   whether its tokens must be DPoP-bound",
      "<client_id>     the CLIENT_ID column of `credentials list` (kw_client_...)",
    ],
  },
  keys: {
    title: "API keys",
    notes: [
      "--name N             a label for the key",
      "--per-second N       requests per second (1..10000); update: `default` restores the service default",
      "--per-day N          requests per UTC day (1..100000000); update: `default` restores the service default",
      "--location-hint H    where the key's clients are: wnam enam sam weur eeur apac oc afr me",
      "--days               keys traffic: the last 30 days by UTC day instead of the last 24 hours",
    ],
  },
  "admin-tokens": {
    title: "Administrator tokens (sign-ins to the manager app for one organization)",
    notes: ["--name N             a label for the token", "--expires-in-days N  1..365 (default 30)"],
  },
  audit: { title: "Audit log", notes: ["--limit N       at most N entries", "--all           every entry (follows every page)"] },
  webhooks: {
    title: "Webhook configurations (created by the organization's API clients; operators look in and pause)",
    notes: ["<id>            a configuration's id (whk_...), the ID column of `webhooks list`"],
  },
  deliveries: {
    title: "Deliveries",
    notes: [
      "--status S          pending, retrying, delivered or failed",
      "--event-type T      e.g. order.created",
      "--event-id E        one event's deliveries (evt_...)",
      "<id>                deliveries list: the configuration (whk_...); show and resend: the delivery (msg_..., the webhook-id)",
      "--limit N / --all   deliveries list shows the 50 newest unless told otherwise",
    ],
  },
};

const GLOBAL_HELP = `Flags of every command
  --url URL       keyway's base URL (default: $KEYWAY_URL, else http://127.0.0.1:$PORT with PORT 8787)
  --json          print the answer's data as JSON on stdout; for a list, one array of its items
  -h, --help      this help; \`<group> --help\` for one group
  --version       the version of keyway this CLI belongs to

Lists follow every page (cursor after cursor) unless --limit N caps them; audit shows the
${AUDIT_DEFAULT_LIMIT} most recent entries unless --limit N or --all says otherwise.

Environment
  ADMIN_TOKEN     the operator token, sent as \`Authorization: Bearer\`. Only from the environment,
                  never a flag, so it stays out of shell history and \`ps\`. If it is unset, the URL
                  is loopback and ./.dev.vars exists (npm start's local secrets), it is read from there.
  KEYWAY_URL      base URL when --url is not given
  PORT            port of the default URL

Exit status
  0 done; 1 the request failed (keyway's message and error code on stderr) or keyway could not be
  reached; 2 nothing was sent: unknown command, missing argument, bad number, bad URL, no ADMIN_TOKEN.

Secrets (api_key, client_secret, token) are printed only by the command that creates them: keyway
keeps only their hashes and never shows them again. Lists and gets never include them.
`;

// `npm run admin -- audit org_x | head` closes stdout early: not a failure, and not worth a trace.
process.stdout.on("error", (err) => {
  process.exitCode = /** @type {NodeJS.ErrnoException} */ (err).code === "EPIPE" ? 0 : 1;
  process.exit();
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    // Only a bug in this script gets here; still one line, never a stack trace.
    process.stderr.write(`admin: unexpected failure: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);

/**
 * Runs one command line; resolves to the exit status.
 * @param {string[]} argv
 * @returns {Promise<number>}
 */
async function main(argv) {
  try {
    const parsed = parseCommandLine(argv);
    if (parsed.help !== undefined) {
      process.stdout.write(parsed.version === true ? `keyway ${packageVersion()}\n` : helpText(parsed.help));
      return 0;
    }
    const { command, args, flags } = parsed;
    const base = baseUrl(flags.url);
    const { token, source } = adminToken(base);
    const client = { base, token, source };
    const json = flags.json === true;

    if (command.list) {
      const limit =
        flags.all === true ? Number.POSITIVE_INFINITY : (count(flags, "limit") ?? command.defaultLimit ?? Number.POSITIVE_INFINITY);
      const { items, more } = await readList(client, command.list(args, flags), limit);
      if (json) write(`${JSON.stringify(items, null, 2)}\n`);
      else write(items.length === 0 ? `(no ${command.noun})\n` : table(items, command.columns ?? []));
      // On stderr, so that stdout stays the table or the JSON array.
      if (more) process.stderr.write(`(more ${command.noun} than shown: raise --limit${command.defaultLimit ? " or use --all" : ""})\n`);
      return 0;
    }

    if (command.run) {
      const shown = await command.run(client, args, flags);
      write(json ? `${JSON.stringify(shown.data, null, 2)}\n` : (shown.text ?? record(isObject(shown.data) ? shown.data : {})));
      return 0;
    }
    await command.check?.(client, args, flags);
    const call = command.call?.(args, flags);
    if (call === undefined) throw new Error(`${command.words.join(" ")} has neither call nor list`);
    const data = await send(client, call);
    if (!isObject(data)) throw new RequestError([`admin: ${call.method} ${call.path} answered without a data object`]);
    // Only when the answer holds it (a private_key_jwt credential has no secret).
    const secret = command.secret !== undefined && data[command.secret] !== undefined ? command.secret : undefined;
    const notice = secret
      ? `The ${secret} above is shown only now: keyway keeps only its hash and cannot show it again. Store it safely.`
      : "";
    if (json) {
      write(`${JSON.stringify(data, null, 2)}\n`);
      // stdout stays pure JSON for scripts; the warning still reaches the person running it.
      if (secret) process.stderr.write(`${notice.replace("above", `(data.${secret})`)}\n`);
    } else {
      const { [secret ?? ""]: secretValue, ...rest } = data;
      write(record(secret ? rest : data));
      if (secret) write(`\n${record({ [secret]: secretValue })}${notice}\n`);
    }
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`admin: ${err.message}\n`);
      if (err.withUsage) process.stderr.write(`\n${usageText(err.group)}`);
      return 2;
    }
    if (err instanceof RequestError) {
      process.stderr.write(`${err.lines.join("\n")}\n`);
      return 1;
    }
    throw err;
  }
}

/**
 * What the command line asks for: help (on a group, or `""` for all), or a command with its
 * arguments and flags. Every mistake is a UsageError naming it.
 * @param {string[]} argv
 * @returns {{ help: string, version?: boolean, command?: undefined, args?: undefined, flags?: undefined }
 *   | { help?: undefined, command: Command, args: Record<string, string>, flags: Flags }}
 */
function parseCommandLine(argv) {
  // A mistyped flag is named with the closest one (node:util's own message suggests nothing).
  for (const word of argv) {
    if (word === "--") break;
    if (!word.startsWith("--")) continue;
    const flag = word.slice(2).split("=")[0] ?? "";
    if (!Object.hasOwn(OPTIONS, flag)) {
      const group = argv.find((w) => !w.startsWith("-"));
      throw new UsageError(
        `unknown flag --${clean(flag)}${suggest(flag, Object.keys(OPTIONS), "--")}`,
        group !== undefined && isGroup(group) ? group : undefined,
      );
    }
  }
  /** @type {{ values: Flags, positionals: string[] }} */
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: OPTIONS,
    });
  } catch (err) {
    // node:util's messages name the option and say what is wrong with it.
    const group = argv.find((word) => !word.startsWith("-"));
    throw new UsageError(err instanceof Error ? err.message : String(err), group !== undefined && isGroup(group) ? group : undefined);
  }
  const { values: flags, positionals } = parsed;
  const [first, second] = positionals;

  if (first === "help") {
    if (second !== undefined && !isGroup(second)) throw new UsageError(`no command group "${second}"`);
    return { help: second ?? "" };
  }
  if (first === undefined) {
    if (flags.help === true) return { help: "" };
    if (flags.version === true) return { help: "", version: true };
    throw new UsageError("no command given");
  }
  if (!isGroup(first)) throw new UsageError(`unknown command "${clean(first)}"${suggest(first, Object.keys(GROUPS))}`);
  if (flags.help === true) {
    // `keys create --help`: that command alone; `keys --help`: the group.
    const one = COMMANDS.find((c) => c.words[0] === first && c.words[1] === second && c.words.length === 2);
    return { help: one ? `${first} ${second}` : first };
  }

  const inGroup = COMMANDS.filter((c) => c.words[0] === first);
  const command = inGroup.length === 1 && inGroup[0]?.words.length === 1 ? inGroup[0] : inGroup.find((c) => c.words[1] === second);
  if (command === undefined) {
    throw new UsageError(
      second === undefined
        ? `${first}: which command?`
        : `unknown command "${first} ${clean(second)}"${suggest(
            second,
            inGroup.map((c) => c.words[1] ?? ""),
            `${first} `,
          )}`,
      first,
    );
  }

  const given = positionals.slice(command.words.length);
  const name = command.words.join(" ");
  if (given.length < command.args.length) {
    throw new UsageError(`${name}: missing <${command.args.slice(given.length).join("> <")}>`, first);
  }
  if (given.length > command.args.length) throw new UsageError(`${name}: unexpected argument "${given[command.args.length]}"`, first);
  /** @type {Record<string, string>} */
  const args = {};
  command.args.forEach((arg, i) => {
    args[arg] = given[i] ?? "";
  });
  for (const [arg, value] of Object.entries(args)) {
    if (value.trim() === "") throw new UsageError(`${name}: <${arg}> must not be empty`, first);
  }

  const global = ["url", "json", "help"];
  for (const flag of Object.keys(flags)) {
    if (!global.includes(flag) && !command.flags.includes(flag)) throw new UsageError(`${name} takes no --${flag}`, first);
  }
  if (flags.all === true && flags.limit !== undefined) throw new UsageError(`${name}: give --limit or --all, not both`, first);
  // Numbers are checked now, so a typo is a usage error before anything is sent.
  try {
    if (command.list) count(flags, "limit");
    else command.call?.(args, flags);
  } catch (err) {
    if (err instanceof UsageError) err.group = first;
    throw err;
  }
  return { command, args, flags };
}

/**
 * `; did you mean "x"?` for the candidate closest to `word` by edit distance, when it is close
 * enough to be a typo (at most 2 edits, and fewer than half the word); "" otherwise.
 * @param {string} word
 * @param {string[]} candidates
 * @param {string} [prefix] put before the candidate in the suggestion
 */
function suggest(word, candidates, prefix = "") {
  let best = "";
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const d = editDistance(word.toLowerCase(), candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best !== "" && bestDistance <= 2 && bestDistance < word.length / 2 ? `; did you mean "${prefix}${best}"?` : "";
}

/**
 * Levenshtein distance (insertions, deletions, substitutions), one row at a time.
 * @param {string} a
 * @param {string} b
 */
function editDistance(a, b) {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length] ?? 0;
}

/** The version in package.json, which `--version` prints. */
function packageVersion() {
  const pkg = /** @type {{ version?: string }} */ (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")));
  return pkg.version ?? "unknown";
}

/** @param {string} word */
function isGroup(word) {
  return Object.hasOwn(GROUPS, word);
}

/**
 * A positive whole number flag, or undefined when it is absent.
 * @param {Flags} flags
 * @param {string} name
 * @returns {number | undefined}
 */
function count(flags, name) {
  const value = flags[name];
  if (value === undefined || typeof value === "boolean") return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) {
    throw new UsageError(`--${name} must be a whole number of at least 1, got "${clean(value)}"`);
  }
  return n;
}

/**
 * Like count, but `default` is null: the API's way to restore the service default.
 * @param {Flags} flags
 * @param {string} name
 * @returns {number | null | undefined}
 */
function countOrDefault(flags, name) {
  return flags[name] === "default" ? null : count(flags, name);
}

/**
 * The JWK Set in the file --jwks names; keyway checks its keys (public, signing) and says what is wrong.
 * @param {string | boolean} path
 */
function jwksFile(path) {
  if (typeof path !== "string") throw new UsageError("--jwks needs a file name");
  let text;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    throw new UsageError(`--jwks: cannot read ${clean(path)}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`--jwks: ${clean(path)} is not JSON`);
  }
}

/**
 * --scopes "a b": the list; on update `all` means no restriction (null).
 * @param {string | boolean | undefined} value
 * @param {boolean} update
 */
function scopeList(value, update) {
  if (value === undefined || typeof value === "boolean") return undefined;
  if (update && value.trim() === "all") return null;
  return value.split(/\s+/).filter((s) => s !== "");
}

/** @param {string | boolean | undefined} value */
function onOff(value) {
  if (value === undefined) return undefined;
  if (value === "on") return true;
  if (value === "off") return false;
  throw new UsageError(`--dpop must be on or off, got "${clean(String(value))}"`);
}

/**
 * @param {Item} object
 * @returns {Item} the object without its undefined fields (so they are absent from the JSON body)
 */
function defined(object) {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}

/**
 * The base URL without a trailing slash, from --url, KEYWAY_URL or the local default.
 * @param {string | boolean | undefined} flag
 */
function baseUrl(flag) {
  const given = typeof flag === "string" ? flag : process.env.KEYWAY_URL || `http://127.0.0.1:${process.env.PORT || 8787}`;
  /** @type {URL} */
  let url;
  try {
    url = new URL(given);
  } catch {
    throw new UsageError(
      `not a URL: "${clean(given)}" (from ${typeof flag === "string" ? "--url" : "KEYWAY_URL or PORT"})`,
      undefined,
      false,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new UsageError(`the URL must be http or https: ${clean(given)}`, undefined, false);
  // Credentials in the URL would be printed in every message that names it.
  if (url.username !== "" || url.password !== "") throw new UsageError("the URL must not carry a user name or password", undefined, false);
  if (url.search !== "" || url.hash !== "")
    throw new UsageError(`the URL must not have a query or fragment: ${clean(given)}`, undefined, false);
  if (url.protocol === "http:" && !isLoopback(url)) {
    process.stderr.write(`admin: warning: ADMIN_TOKEN goes to ${url.host} unencrypted (http); use https beyond this machine\n`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/** @param {URL} url */
function isLoopback(url) {
  const host = url.hostname;
  return host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * ADMIN_TOKEN from the environment or, for a loopback URL, from ./.dev.vars: a local `npm start`
 * keeps it there, and reading it saves pasting it into the shell. A remote URL never gets the
 * local token, which would be the wrong secret sent to the wrong place.
 * @param {string} base
 * @returns {{ token: string, source: string }}
 */
function adminToken(base) {
  const fromEnv = process.env.ADMIN_TOKEN;
  if (fromEnv) return { token: fromEnv, source: "the environment" };
  if (isLoopback(new URL(base))) {
    /** @type {string | undefined} */
    let text;
    try {
      text = readFileSync(".dev.vars", "utf8");
    } catch {
      text = undefined; // no .dev.vars here: fall through to the message below
    }
    const fromFile = text === undefined ? undefined : parseDevVars(text).ADMIN_TOKEN;
    if (fromFile) return { token: fromFile, source: "./.dev.vars" };
  }
  throw new UsageError(
    "ADMIN_TOKEN is not set. Set it in the environment without typing it on the command line, " +
      "e.g. `read -rs ADMIN_TOKEN && export ADMIN_TOKEN`; for a local npm start it is in .dev.vars.",
    undefined,
    false,
  );
}

/** @typedef {{ base: string, token: string, source: string }} Client */

/**
 * Sends one request and returns the envelope's `data` and `_links`; throws RequestError with
 * keyway's developer_message and error code (and, on 401, a hint about ADMIN_TOKEN).
 * @param {Client} client
 * @param {Call} call
 * @returns {Promise<unknown>}
 */
async function send(client, call) {
  return (await exchange(client, call)).data;
}

/**
 * @param {Client} client
 * @param {Call} call
 * @returns {Promise<{ data: unknown, next: string | undefined }>}
 */
async function exchange(client, call) {
  const url = `${client.base}${call.path}`;
  /** @type {Response} */
  let res;
  try {
    res = await fetch(url, {
      method: call.method,
      headers: {
        Authorization: `Bearer ${client.token}`,
        Accept: "application/json",
        ...(call.body ? { "Content-Type": "application/json" } : {}),
      },
      ...(call.body ? { body: JSON.stringify(call.body) } : {}),
      // A redirect is reported rather than followed: it would carry the token somewhere else or
      // turn a POST into a GET.
      redirect: "manual",
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    throw new RequestError([`admin: cannot reach keyway at ${client.base} (${networkReason(err)})`]);
  }
  const where = `${call.method} ${call.path}`;
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel();
    const location = res.headers.get("location");
    throw new RequestError([
      `admin: ${where} answered ${res.status}, a redirect${location ? ` to ${clean(location)}` : ""}; give that URL with --url or KEYWAY_URL`,
    ]);
  }
  /** @type {unknown} */
  let envelope;
  try {
    envelope = await res.json();
  } catch {
    envelope = undefined;
  }
  if (!isObject(envelope) || !("data" in envelope)) {
    throw new RequestError([`admin: ${where} answered HTTP ${res.status} without a keyway envelope: is ${client.base} a keyway?`]);
  }
  if (!res.ok) {
    const message = typeof envelope.developer_message === "string" ? clean(envelope.developer_message) : "(no message)";
    const code = typeof envelope.error === "string" ? clean(envelope.error) : "no error code";
    const lines = [`admin: ${message} (${code}, HTTP ${res.status})`];
    if (res.status === 401) {
      lines.push(
        `hint: ADMIN_TOKEN (from ${client.source}) is wrong or missing for ${client.base}; check it is this deployment's operator token.`,
      );
    }
    if (res.status === 503 && call.method !== "GET") {
      lines.push("hint: a change answered 503 is recorded and still being applied; repeat the same command to confirm it.");
    }
    throw new RequestError(lines);
  }
  const links = isObject(envelope._links) ? envelope._links : {};
  const next = isObject(links.next) && typeof links.next.href === "string" ? links.next.href : undefined;
  return { data: envelope.data, next };
}

/**
 * Reads a list page by page until `limit` items or the last page. The cursor is taken out of
 * `_links.next` and sent to our own base URL, since behind a proxy the server's idea of its URL
 * may not be one this machine can reach.
 * @param {Client} client
 * @param {string} path
 * @param {number} limit
 * @returns {Promise<{ items: Item[], more: boolean }>}
 */
async function readList(client, path, limit) {
  /** @type {Item[]} */
  const items = [];
  /** @type {string | undefined} */
  let cursor;
  for (;;) {
    const size = Math.min(MAX_PAGE, limit - items.length);
    const query = new URLSearchParams({ limit: String(size) });
    if (cursor !== undefined) query.set("cursor", cursor);
    const { data, next } = await exchange(client, { method: "GET", path: `${path}${path.includes("?") ? "&" : "?"}${query}` });
    if (!Array.isArray(data)) throw new RequestError([`admin: GET ${path} answered without a list`]);
    items.push(...data.filter(isObject));
    const nextCursor = next === undefined ? null : new URL(next).searchParams.get("cursor");
    if (nextCursor === null || nextCursor === cursor) return { items, more: false };
    if (items.length >= limit) return { items, more: true };
    cursor = nextCursor;
  }
}

/**
 * One line saying why a request could not be sent, from fetch's error (its cause carries the
 * socket error code; connecting to a name with several addresses nests them in `errors`).
 * @param {unknown} err
 */
function networkReason(err) {
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError"))
    return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = err instanceof Error ? err.cause : undefined;
  const first = cause instanceof AggregateError ? cause.errors[0] : cause;
  const code = codeOf(cause) ?? codeOf(first);
  const reasons = {
    ECONNREFUSED: "connection refused: is it running?",
    ENOTFOUND: "host not found",
    EAI_AGAIN: "host name lookup failed",
    ECONNRESET: "connection reset",
    ETIMEDOUT: "connection timed out",
    EHOSTUNREACH: "host unreachable",
  };
  if (code !== undefined) return Object.hasOwn(reasons, code) ? reasons[/** @type {keyof typeof reasons} */ (code)] : code;
  const message = cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
  return clean(message.split("\n")[0] ?? "");
}

/** @param {unknown} err @returns {string | undefined} */
function codeOf(err) {
  return isObject(err) && typeof err.code === "string" ? err.code : undefined;
}

/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Text from the server with control characters escaped: names are chosen by organization
 * administrators too, and an escape sequence must not reach the operator's terminal as one.
 * @param {string} text
 */
function clean(text) {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: this pattern exists to find control characters.
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** @param {unknown} value */
function show(value) {
  if (value === null || value === undefined) return "-";
  if (typeof value === "string") return clean(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return clean(JSON.stringify(value));
}

/**
 * One object as aligned `key  value` lines; nested objects become dotted keys (limits.per_day).
 * @param {Item} data
 */
function record(data) {
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
function table(items, columns) {
  const rows = [columns.map((c) => c.header), ...items.map((item) => columns.map((c) => show(c.value(item))))];
  const widths = columns.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length)));
  return rows.map((row) => `${row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  ")}\n`).join("");
}

/** @param {string} text */
function write(text) {
  process.stdout.write(text);
}

/**
 * Help for one command (`keys create --help`): its synopsis, what it does, its group's notes.
 * @param {string} words
 */
function commandHelp(words) {
  const [group = ""] = words.split(" ");
  const row = commandRows(group).find(([usage]) => usage === words || usage.startsWith(`${words} `));
  const info = GROUPS[/** @type {keyof typeof GROUPS} */ (group)];
  const lines = [`Usage: npm run admin -- ${row?.[0] ?? words} [--url URL] [--json]`, "", `  ${row?.[1] ?? ""}`];
  for (const note of info?.notes ?? []) lines.push(`  ${note}`);
  lines.push("", "`npm run admin -- help` has every command, the flags of all, the environment and exit status.", "");
  return lines.join("\n");
}

/**
 * One help row per command of a group: its synopsis (words, <arguments>, [flags]) and summary.
 * @param {string} group
 * @returns {[string, string][]}
 */
function commandRows(group) {
  return COMMANDS.filter((c) => c.words[0] === group).map((command) => {
    const flags = command.flags.map((flag) => {
      if (flag === "all") return "[--all]";
      const metavar = { email: "E", "location-hint": "H", confirm: "NAME" }[flag] ?? "N";
      return `[--${flag} ${metavar}]`;
    });
    return [[...command.words, ...command.args.map((arg) => `<${arg}>`), ...flags].join(" "), command.summary];
  });
}

/**
 * Synopsis lines, printed under a usage error: of one group, or of all.
 * @param {string} [group]
 */
function usageText(group) {
  const rows = (group === undefined ? Object.keys(GROUPS) : [group]).flatMap(commandRows);
  return [
    "Usage: npm run admin -- <command> [flags]",
    "",
    ...rows.map(([usage]) => `  ${usage}`),
    "",
    `Run \`npm run admin -- ${group === undefined ? "help" : `${group} --help`}\` for what each does, flags, environment and exit status.`,
    "",
  ].join("\n");
}

/**
 * The full help, or one group's: its commands, what its flags mean, then the global part.
 * @param {string} group "" for every group
 */
function helpText(group) {
  if (group.includes(" ")) return commandHelp(group);
  const groups = group === "" ? Object.keys(GROUPS) : [group];
  const lines = [
    "keyway operator CLI: the operator API (/admin/v1) from a terminal, against any keyway.",
    "",
    `Usage: npm run admin -- ${group === "" ? "<command>" : `${group} <command>`} [flags]`,
    "       (or: node scripts/admin.mjs ...)",
  ];
  for (const name of groups) {
    const info = GROUPS[/** @type {keyof typeof GROUPS} */ (name)];
    lines.push("", info.title);
    // Synopsis, then what it does underneath: side by side, the longest lines would not fit a terminal.
    for (const [usage, summary] of commandRows(name)) lines.push(`  ${usage}`, `      ${summary}`);
    for (const note of info.notes) lines.push(`    ${note}`);
  }
  lines.push("", GLOBAL_HELP);
  return lines.join("\n");
}

/**
 * A string flag's value, or undefined when absent (a boolean means it was given without a value).
 * @param {string | boolean | undefined} value
 */
function flagText(value) {
  return typeof value === "string" ? value : undefined;
}

/**
 * Everything the operator API holds about one organization, every list followed to its end: the
 * organization, its users with their client credentials, API keys, administrator tokens, webhook
 * configurations and the audit log. The API never returns a secret after creation, so neither
 * does this (test/e2e/admin-cli.test.ts checks it against the secrets it created).
 * @param {Client} client
 * @param {Record<string, string>} a
 */
async function exportOrganization(client, a) {
  const all = (/** @type {string} */ path) => readList(client, path, Number.POSITIVE_INFINITY).then((r) => r.items);
  const [organization, users, apiKeys, adminTokens, webhooks, audit] = await Promise.all([
    send(client, { method: "GET", path: orgPath(a) }),
    all(usersPath(a)),
    all(keysPath(a)),
    all(tokensPath(a)),
    all(webhooksPath(a)),
    all(`${orgPath(a)}/audit-log`),
  ]);
  const credentials = await Promise.all(users.map((u) => all(credentialsPath({ ...a, user: String(u.id ?? "") }))));
  return {
    exported_at: new Date().toISOString(),
    source: client.base,
    organization,
    users: users.map((u, i) => ({ ...u, client_credentials: credentials[i] ?? [] })),
    api_keys: apiKeys,
    admin_tokens: adminTokens,
    webhook_configurations: webhooks,
    audit_log: audit,
  };
}
