/**
 * The operator CLI's commands: one table, each entry one route of the operator API
 * (src/http/routes/admin.ts and the operator's mirror of the webhook routes) with its positional
 * arguments, flags, path, body and output columns, plus the commands that make several calls
 * or print their own way (webhooks show, webhooks create, rotate-secret and rotate-polling-token
 * with the signing secret or polling token shown once, webhooks recoveries, event-types show, deliveries show, keys traffic, orgs
 * export). Trusted issuers (issue 44) and the credentials' federated_jwt, jwks_uri and access token
 * options are plain routes of the table. The event catalog, the webhook settings, recoveries and portal links and sessions go
 * to the operator's mirror of their /v1 routes (src/http/routes/webhooks.ts `operatorMirror`).
 */
import { writeFileSync } from "node:fs";
import process from "node:process";
import { AUDIT_DEFAULT_LIMIT, UsageError } from "./common.mjs";
import { readList, send } from "./http.mjs";
import { clean, field, isObject, nested, record, show, table } from "./output.mjs";
import {
  amount,
  channelList,
  clientSecret,
  count,
  countOrDefault,
  countOrNone,
  defined,
  eventList,
  filterFlag,
  flagText,
  graceSeconds,
  instant,
  jsonFile,
  jwksFile,
  oneOf,
  onOff,
  refillFlag,
  scopeList,
  toggle,
} from "./values.mjs";

/** @typedef {import("./common.mjs").Item} Item */
/** @typedef {import("./common.mjs").Column} Column */
/** @typedef {import("./common.mjs").Command} Command */
/** @typedef {import("./http.mjs").Client} Client */

/** @typedef {import("./common.mjs").Flags} Flags */

/** The flags of the receiver's token endpoint (issue 31), on webhooks create and update. */
const RECEIVER_AUTH_FLAGS = ["auth-method", "scope", "resource", "audience", "assertion-audience", "dpop", "no-dpop"];
const AUTH_METHODS = ["client_secret_post", "client_secret_basic", "private_key_jwt"];

/** How a configuration's webhooks are signed (the API's SignatureScheme, issue 45): `--signature-scheme`. */
export const SIGNATURE_SCHEMES = ["v1", "v1a"];

/** How a configuration's events reach its receiver (the API's Delivery, issue 45): `webhooks create --delivery`. */
export const DELIVERIES = ["push", "polling"];

/**
 * The flags of `webhooks create` a polling configuration has no use for: it has no URL, no
 * receiver token endpoint, no pacing and no signature (the API refuses those fields for it).
 */
const PUSH_ONLY_FLAGS = [
  "webhook-url",
  "token-url",
  "client-id",
  "client-secret-stdin",
  "client-secret-file",
  "ordered",
  "rate-limit",
  "token-cache",
  "signature-scheme",
  ...RECEIVER_AUTH_FLAGS,
];

/** What `deliveries list --status` filters by (the API's DeliveryStatus, src/schemas/webhooks.ts). */
export const DELIVERY_STATUSES = ["pending", "retrying", "delivered", "failed"];

/** Where a key's clients are (the API's LocationHint, src/schemas/records.ts): `--location-hint`. */
export const LOCATION_HINTS = ["wnam", "enam", "sam", "weur", "eeur", "apac", "oc", "afr", "me"];

export const enc = encodeURIComponent;

export const orgPath = (/** @type {Record<string, string>} */ a) => `/admin/v1/organizations/${enc(a.org ?? "")}`;

export const usersPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/users`;

export const credentialsPath = (/** @type {Record<string, string>} */ a) => `${usersPath(a)}/${enc(a.user ?? "")}/client-credentials`;

export const issuersPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/trusted-issuers`;

/** How a client credential authenticates (`credentials create --method`; the API's TokenEndpointAuthMethod less client_secret_post, a secret too). */
export const CREDENTIAL_METHODS = ["client_secret_basic", "private_key_jwt", "federated_jwt"];

/** What a credential's access tokens are (`--access-token-strategy`, the API's AccessTokenStrategy). */
export const TOKEN_STRATEGIES = ["opaque", "jwt"];

/** Whether one JWT of a trusted issuer may authenticate more than once (`--assertion-reuse`, the API's AssertionReuse). */
export const ASSERTION_REUSE = ["once", "until_expiry"];

export const keysPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/api-keys`;

export const tokensPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/admin-tokens`;

export const webhooksPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/webhook-configurations`;

export const webhookPath = (/** @type {Record<string, string>} */ a) => `${webhooksPath(a)}/${enc(a.id ?? "")}`;

export const deliveryPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/deliveries/${enc(a.id ?? "")}`;

export const eventTypesPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/event-types`;

export const eventTypePath = (/** @type {Record<string, string>} */ a) => `${eventTypesPath(a)}/${enc(a.name ?? "")}`;

export const settingsPath = (/** @type {Record<string, string>} */ a) => `${orgPath(a)}/webhook-settings`;

/** @type {Column[]} */
export const ORG_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "NAME", value: field("name") },
  { header: "CREATED", value: field("created_at") },
];

/** @type {Column[]} */
export const USER_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "NAME", value: field("name") },
  { header: "EMAIL", value: field("email") },
  { header: "CREATED", value: field("created_at") },
];

/** @type {Column[]} */
export const CREDENTIAL_COLUMNS = [
  { header: "CLIENT_ID", value: field("client_id") },
  { header: "NAME", value: field("name") },
  { header: "AUTH", value: field("token_endpoint_auth_method") },
  { header: "SCOPES", value: (item) => (Array.isArray(item.scopes) ? item.scopes.join(" ") : undefined) },
  { header: "DPOP", value: field("dpop_bound_access_tokens") },
  { header: "TOKENS", value: field("access_token_strategy") },
  // What it authenticates with, when not a secret: its key set URL, or its trusted issuer and subject.
  {
    header: "WITH",
    value: (item) =>
      isObject(item.federated)
        ? `${show(item.federated.issuer)} ${show(item.federated.subject)}`
        : typeof item.jwks_uri === "string"
          ? item.jwks_uri
          : undefined,
  },
  { header: "STATUS", value: field("status") },
  { header: "CREATED", value: field("created_at") },
  { header: "LAST USED", value: field("last_used_at") },
];

/** @type {Column[]} */
export const ISSUER_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "NAME", value: field("name") },
  { header: "ISSUER", value: field("issuer") },
  { header: "JWKS_URI", value: field("jwks_uri") },
  { header: "SOURCE", value: field("jwks_uri_source") },
  { header: "REUSE", value: field("assertion_reuse") },
  { header: "MAX LIFETIME", value: field("max_assertion_lifetime_seconds") },
  {
    header: "KEYS",
    value: (item) => (isObject(item.key_set) && Array.isArray(item.key_set.key_ids) ? item.key_set.key_ids.map(show).join(" ") : undefined),
  },
  { header: "FETCHED", value: nested("key_set", "fetched_at") },
];

/** @type {Column[]} */
export const KEY_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "NAME", value: field("name") },
  { header: "HINT", value: field("hint") },
  { header: "PER SECOND", value: nested("limits", "per_second") },
  { header: "PER DAY", value: nested("limits", "per_day") },
  { header: "LOCATION", value: field("location_hint") },
  { header: "STATUS", value: field("status") },
  { header: "LAST USED", value: field("last_used_at") },
  // After `keys rotate --grace`: until when the replaced secret works.
  { header: "OLD SECRET UNTIL", value: field("previous_secret_expires_at") },
];

/** @type {Column[]} */
export const TOKEN_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "NAME", value: field("name") },
  { header: "STATUS", value: field("status") },
  { header: "EXPIRES", value: field("expires_at") },
  { header: "LAST USED", value: field("last_used_at") },
];

/** @type {Column[]} */
export const AUDIT_COLUMNS = [
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
export const WEBHOOK_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "DESCRIPTION", value: field("description") },
  // A polling configuration has no URL: its receiver reads its events (issue 45).
  { header: "URL", value: (item) => (item.delivery === "polling" ? "(polling)" : item.url) },
  {
    header: "STATUS",
    value: (item) => (item.status === "active" && typeof item.pause_reason === "string" ? "active, paused" : item.status),
  },
  { header: "LANE", value: field("lane") },
  { header: "EVENTS", value: (item) => (Array.isArray(item.events) ? item.events.join(" ") : "all") },
];

/** @type {Column[]} */
export const DELIVERY_COLUMNS = [
  { header: "ID (WEBHOOK-ID)", value: field("id") },
  { header: "EVENT", value: field("event_type") },
  { header: "EVENT ID", value: field("event_id") },
  { header: "STATUS", value: field("status") },
  { header: "ATTEMPTS", value: (item) => (Array.isArray(item.attempts) ? item.attempts.length : 0) },
  { header: "NEXT ATTEMPT", value: field("next_attempt_at") },
  { header: "CREATED", value: field("created_at") },
];

/** @type {Column[]} */
export const ATTEMPT_COLUMNS = [
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

/** @type {Column[]} */
export const EVENT_TYPE_COLUMNS = [
  { header: "NAME", value: field("name") },
  { header: "DESCRIPTION", value: field("description") },
  { header: "DEPRECATED", value: (item) => (item.deprecated === true ? "yes" : "no") },
  { header: "SCHEMA", value: (item) => (isObject(item.schema) ? "yes" : "no") },
  { header: "EXAMPLES", value: (item) => (Array.isArray(item.examples) ? item.examples.length : 0) },
  { header: "OWNER", value: (item) => (item.operational === true ? "keyway" : "organization") },
];

/** @type {Column[]} */
export const RECOVERY_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "SINCE", value: field("since") },
  { header: "UNTIL", value: field("until") },
  { header: "STATUS", value: field("status") },
  { header: "FOUND", value: field("found") },
  { header: "RESENT", value: field("resent") },
  { header: "SKIPPED", value: field("skipped") },
  { header: "CREATED", value: field("created_at") },
  { header: "FINISHED", value: field("finished_at") },
];

/** @type {Column[]} */
export const PORTAL_SESSION_COLUMNS = [
  { header: "ID", value: field("id") },
  { header: "STATUS", value: field("status") },
  { header: "OPENED", value: field("created_at") },
  { header: "LAST SEEN", value: field("last_seen_at") },
  { header: "EXPIRES", value: field("expires_at") },
  { header: "ENDED", value: field("ended_at") },
];

/** @param {string[]} fields @returns {Column[]} */
export const seriesColumns = (fields) => [
  { header: "START (UTC)", value: field("start") },
  ...fields.map((f) => ({ header: f.toUpperCase(), value: field(f) })),
];

/** @type {Command[]} */
export const COMMANDS = [
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
    words: ["orgs", "limits"],
    args: ["org"],
    flags: ["per-second", "per-day", "per-month", "clear"],
    summary: "set the organization's shared quota over all its keys (`none` removes one limit, --clear all)",
    call: (a, f) => {
      if (f.clear === true) return { method: "PATCH", path: orgPath(a), body: { limits: null } };
      const limits = defined({
        per_second: countOrNone(f, "per-second"),
        per_day: countOrNone(f, "per-day"),
        per_month: countOrNone(f, "per-month"),
      });
      if (Object.keys(limits).length === 0)
        throw new UsageError("orgs limits: give --per-second, --per-day, --per-month or --clear", "orgs");
      return { method: "PATCH", path: orgPath(a), body: { limits } };
    },
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
    flags: ["name", "method", "jwks", "jwks-uri", "federated-issuer", "federated-subject", "access-token-strategy", "scopes", "dpop"],
    summary:
      "issue a client credential to a user (client_secret shown once; with --jwks or --jwks-uri, private_key_jwt, and with --method federated_jwt, no secret)",
    call: (a, f) => {
      const method = credentialMethod(f);
      return {
        method: "POST",
        path: credentialsPath(a),
        body: defined({
          name: f.name,
          token_endpoint_auth_method: method === "client_secret_basic" ? undefined : method,
          jwks: f.jwks === undefined ? undefined : jwksFile(f.jwks),
          jwks_uri: flagText(f["jwks-uri"]),
          federated:
            f["federated-issuer"] === undefined && f["federated-subject"] === undefined
              ? undefined
              : { issuer: flagText(f["federated-issuer"]) ?? "", subject: flagText(f["federated-subject"]) ?? "" },
          access_token_strategy: oneOf(f, "access-token-strategy", TOKEN_STRATEGIES),
          scopes: scopeList(f.scopes, false),
          dpop_bound_access_tokens: onOff(f.dpop),
        }),
      };
    },
    secret: "client_secret",
  },
  {
    words: ["credentials", "update"],
    args: ["org", "user", "client_id"],
    flags: ["name", "jwks", "jwks-uri", "access-token-strategy", "scopes", "dpop"],
    summary: "change a client credential: a new key set or key set URL (rotation), access tokens, scopes, DPoP, name",
    call: (a, f) => ({
      method: "PATCH",
      path: `${credentialsPath(a)}/${enc(a.client_id ?? "")}`,
      body: defined({
        name: f.name,
        jwks: f.jwks === undefined ? undefined : jwksFile(f.jwks),
        jwks_uri: flagText(f["jwks-uri"]),
        access_token_strategy: oneOf(f, "access-token-strategy", TOKEN_STRATEGIES),
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
    words: ["trusted-issuers", "create"],
    args: ["org"],
    flags: ["issuer", "jwks-uri", "name", "assertion-reuse", "max-lifetime"],
    required: ["issuer"],
    summary: "trust a workload identity issuer for federated_jwt credentials (keyway fetches its key set now)",
    call: (a, f) => {
      if (typeof f.issuer !== "string") throw new UsageError("trusted-issuers create: --issuer URL is required");
      return {
        method: "POST",
        path: issuersPath(a),
        body: defined({
          issuer: f.issuer,
          jwks_uri: flagText(f["jwks-uri"]),
          name: flagText(f.name),
          assertion_reuse: oneOf(f, "assertion-reuse", ASSERTION_REUSE),
          max_assertion_lifetime_seconds: count(f, "max-lifetime"),
        }),
      };
    },
  },
  {
    words: ["trusted-issuers", "list"],
    args: ["org"],
    flags: ["limit"],
    summary: "list an organization's trusted issuers, with the key ids keyway holds",
    list: issuersPath,
    columns: ISSUER_COLUMNS,
    noun: "trusted issuers",
  },
  {
    words: ["trusted-issuers", "get"],
    args: ["org", "issuer_id"],
    flags: [],
    summary: "show a trusted issuer",
    call: (a) => ({ method: "GET", path: `${issuersPath(a)}/${enc(a.issuer_id ?? "")}` }),
  },
  {
    words: ["trusted-issuers", "remove"],
    args: ["org", "issuer_id"],
    flags: [],
    summary: "stop trusting an issuer: the federated_jwt credentials that name it are revoked with it",
    call: (a) => ({ method: "DELETE", path: `${issuersPath(a)}/${enc(a.issuer_id ?? "")}` }),
  },
  {
    words: ["trusted-issuers", "refresh"],
    args: ["org", "issuer_id"],
    flags: [],
    summary: "fetch an issuer's key set now (a key it withdrew stops authenticating at once)",
    call: (a) => ({ method: "POST", path: `${issuersPath(a)}/${enc(a.issuer_id ?? "")}/refresh-keys` }),
  },

  {
    words: ["keys", "create"],
    args: ["org"],
    flags: ["name", "per-second", "per-day", "location-hint", "credits", "refill"],
    summary: "issue an API key (api_key shown once); --credits N [--refill N/day|N/month] makes it prepaid",
    call: (a, f) => {
      const limits = defined({ per_second: count(f, "per-second"), per_day: count(f, "per-day") });
      return {
        method: "POST",
        path: keysPath(a),
        body: defined({
          name: f.name,
          location_hint: oneOf(f, "location-hint", LOCATION_HINTS),
          limits: Object.keys(limits).length > 0 ? limits : undefined,
          credits: creditsBody(f),
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
    flags: ["name", "per-second", "per-day", "credits", "refill"],
    summary: "rename an API key or change its limits (`default` restores one); --credits N sets its balance (`none` removes credits)",
    call: (a, f) => {
      const limits = defined({ per_second: countOrDefault(f, "per-second"), per_day: countOrDefault(f, "per-day") });
      const body = defined({ name: f.name, limits: Object.keys(limits).length > 0 ? limits : undefined, credits: creditsBody(f) });
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
    words: ["keys", "rotate"],
    args: ["org", "id"],
    flags: ["grace"],
    summary:
      "give an API key a new secret (api_key shown once), keeping its id, limits, counts and credits; the old secret works --grace SECONDS more (default 0: it stops now)",
    call: (a, f) => ({ method: "POST", path: `${keysPath(a)}/${enc(a.id ?? "")}/rotate`, body: { grace_seconds: graceSeconds(f) } }),
    secret: "api_key",
    notes: rotationNotes,
  },
  {
    words: ["keys", "end-grace"],
    args: ["org", "id"],
    flags: [],
    summary: "end a rotation's grace now: the previous secret is refused (401) from its next request on (idempotent)",
    call: (a) => ({ method: "DELETE", path: `${keysPath(a)}/${enc(a.id ?? "")}/previous-secret` }),
    notes: () => ["The previous secret, if the key had one, is refused (401) from its next request on, at every location."],
  },
  {
    words: ["keys", "credits"],
    args: ["org", "id"],
    flags: ["add", "set"],
    summary: "top up (--add N) or reset (--set N) an API key's credits; audited",
    call: (a, f) => {
      const add = f.add !== undefined ? count(f, "add") : undefined;
      const set = amount(f, "set");
      if ((add === undefined) === (set === undefined)) throw new UsageError("keys credits: give exactly one of --add N or --set N", "keys");
      return { method: "POST", path: `${keysPath(a)}/${enc(a.id ?? "")}/credits`, body: add !== undefined ? { add } : { set } };
    },
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
    summary:
      "show a webhook configuration with its health: the last 24 hours' attempts, success rate and latency (a polling configuration: its backlog and last read)",
    run: async (client, a) => {
      const [config, traffic] = await Promise.all([
        send(client, { method: "GET", path: webhookPath(a) }),
        send(client, { method: "GET", path: `${webhookPath(a)}/traffic` }),
      ]);
      const last = isObject(traffic) && isObject(traffic.last_24h) ? traffic.last_24h : {};
      const view = isObject(config) ? config : {};
      const data = { ...view, last_24h: last };
      // A polling configuration sends nothing: what tells how its receiver keeps up is what waits and when it last read.
      if (isObject(view.polling)) {
        const reading = { state: webhookState(view), backlog: view.polling.backlog, last_polled_at: view.polling.last_polled_at };
        return { data, text: `${record(view)}\nReading\n${record(reading)}` };
      }
      const health = {
        attempts: Number(last.succeeded ?? 0) + Number(last.failed ?? 0),
        failed: last.failed,
        success_rate: typeof last.success_rate === "number" ? `${Math.round(last.success_rate * 1000) / 10}%` : "-",
        latency_ms_avg: last.latency_ms_avg,
      };
      return { data, text: `${record(view)}\nLast 24 hours\n${record({ state: webhookState(view), ...health })}` };
    },
  },
  {
    words: ["webhooks", "create"],
    args: ["org"],
    flags: [
      "webhook-url",
      "token-url",
      "client-id",
      "client-secret-stdin",
      "client-secret-file",
      "events",
      "description",
      "ordered",
      "rate-limit",
      "token-cache",
      "operations",
      "signature-scheme",
      "delivery",
      "filter",
      "channels",
      ...RECEIVER_AUTH_FLAGS,
    ],
    summary:
      "create a webhook configuration: where events go and how keyway signs in to the receiver (signing_secret shown once; with --signature-scheme v1a a public key, no secret); the receiver's client secret from stdin or a file (none with --auth-method private_key_jwt). --delivery polling: none of those flags, the receiver reads its events with a polling token (shown once)",
    required: ["webhook-url", "token-url", "client-id"],
    validate: (a, f) => void createWebhookCall(a, f),
    run: async (client, a, f) => shownOnce(await send(client, createWebhookCall(a, f)), f),
  },
  {
    words: ["webhooks", "update"],
    args: ["org", "id"],
    flags: [
      "webhook-url",
      "token-url",
      "client-id",
      "client-secret-stdin",
      "client-secret-file",
      "events",
      "description",
      "ordered",
      "no-ordered",
      "rate-limit",
      "token-cache",
      "no-token-cache",
      "operations",
      "no-operations",
      "filter",
      "channels",
      ...RECEIVER_AUTH_FLAGS,
    ],
    summary:
      "change a webhook configuration (only what is given); moving --webhook-url or --token-url to another origin needs the client secret again",
    call: (a, f) => {
      const secret = clientSecret(f);
      const oauth = defined({
        token_url: flagText(f["token-url"]),
        client_id: flagText(f["client-id"]),
        client_secret: secret,
        ...receiverAuth(f, true),
      });
      const description = flagText(f.description);
      const body = defined({
        url: flagText(f["webhook-url"]),
        oauth: Object.keys(oauth).length > 0 ? oauth : undefined,
        events: eventList(f.events, true),
        description: description === undefined ? undefined : description.trim() === "" ? null : description,
        rate_limit: countOrNone(f, "rate-limit"),
        ordered: toggle(f, "ordered"),
        token_cache: toggle(f, "token-cache"),
        operations: toggle(f, "operations"),
        filter: filterFlag(f, true),
        channels: channelList(f.channels, true),
      });
      if (Object.keys(body).length === 0) throw new UsageError("webhooks update: nothing to change; give at least one flag", "webhooks");
      return { method: "PATCH", path: webhookPath(a), body };
    },
  },
  {
    words: ["webhooks", "delete"],
    args: ["org", "id"],
    flags: ["yes"],
    summary: "delete a webhook configuration: nothing more is sent to it, its open deliveries fail (--yes to confirm)",
    // Irreversible: without --yes it names what would be deleted and sends nothing.
    check: async (client, a, f) => {
      if (f.yes === true) return;
      const config = await send(client, { method: "GET", path: webhookPath(a) });
      const view = isObject(config) ? config : {};
      const name = typeof view.description === "string" ? `“${clean(view.description)}” ` : "";
      throw new UsageError(
        `webhooks delete stops every delivery to ${name}(${clean(String(view.id ?? a.id))}, ${clean(String(view.url ?? (view.delivery === "polling" ? "polling" : "")))}): its pending deliveries fail and it cannot be undone; to confirm, add --yes`,
        "webhooks",
      );
    },
    call: (a) => ({ method: "DELETE", path: webhookPath(a) }),
    notes: () => ["Deleted: nothing more is sent to it, and its open deliveries ended failed."],
  },
  {
    words: ["webhooks", "rotate-secret"],
    args: ["org", "id"],
    flags: ["signature-scheme"],
    summary:
      "a new signing key: a v1 secret (shown once) or a v1a public key; the current one keeps signing beside it for 24 hours. --signature-scheme changes the scheme (a rotation; default: the current one)",
    validate: (a, f) => void rotateSecretCall(a, f),
    run: async (client, a, f) => {
      const data = await send(client, rotateSecretCall(a, f));
      const until = isObject(data) ? show(data.previous_secret_expires_at) : "-";
      return shownOnce(data, f, [
        `Until ${until} each webhook carries a signature with the new key and one with the previous one (and one with each key rotated out earlier, until its own 24 hours end), whatever their schemes, so the receiver can switch in that time.`,
      ]);
    },
  },
  {
    words: ["webhooks", "rotate-polling-token"],
    args: ["org", "id"],
    flags: [],
    summary:
      "a polling configuration: a new polling token (shown once, the receiver's read credential); the previous one stops reading at once",
    run: async (client, a, f) =>
      shownOnce(await send(client, { method: "POST", path: `${webhookPath(a)}/rotate-polling-token` }), f, [
        "The previous polling token no longer reads (a read waiting with it has ended); the configuration keeps its events and the receiver's cursor.",
      ]),
  },
  {
    words: ["webhooks", "revoke-polling-token"],
    args: ["org", "id"],
    flags: [],
    summary:
      "a polling configuration: revoke its polling token, so no read succeeds (401) until `webhooks rotate-polling-token` makes a new one; its events are kept",
    call: (a) => ({ method: "DELETE", path: `${webhookPath(a)}/polling-token` }),
    notes: (_data, a) => [
      `Revoked: no read succeeds (401) until \`webhooks rotate-polling-token ${show(a.org)} ${show(a.id)}\` makes a new token; the configuration keeps its events meanwhile.`,
    ],
  },
  {
    words: ["webhooks", "rotate-assertion-key"],
    args: ["org", "id"],
    flags: ["yes"],
    summary:
      "a new private_key_jwt key for this configuration: published at its jwks_uri at once, signing 10 minutes later, the previous one published 24 hours more; a configuration still on the organization's key moves to its own (--yes to confirm)",
    check: async (_client, _a, f) => {
      if (f.yes === true) return;
      throw new UsageError(
        "webhooks rotate-assertion-key makes a new assertion key for this configuration, published at its jwks_uri before it signs (10 minutes); a configuration still on the organization's key moves to its own, so its receiver must have registered the configuration's jwks_uri first; to confirm, add --yes",
        "webhooks",
      );
    },
    call: (a) => ({ method: "POST", path: `${webhookPath(a)}/rotate-assertion-key` }),
    notes: (data) => {
      const d = isObject(data) ? data : {};
      return [
        `The new key ${show(d.kid)} signs from ${show(d.activates_at)}${d.previous_kid ? `; the previous one (${show(d.previous_kid)}) stays published until ${show(d.previous_expires_at)}` : ""}.`,
      ];
    },
  },
  {
    words: ["webhooks", "test-connection"],
    args: ["org", "id"],
    flags: [],
    summary:
      "fetch a token from the receiver's token URL (only that, as before a webhook) and say what happened: reached or not, status, error code, token_type, expires_in",
    run: async (client, a) => {
      const data = await send(client, { method: "POST", path: `${webhookPath(a)}/test-connection` });
      return { data, text: connectionTestText(isObject(data) ? data : {}) };
    },
  },
  {
    words: ["webhooks", "pause"],
    args: ["org", "id"],
    flags: [],
    summary:
      "pause a webhook configuration (status paused): nothing is sent to it; events published meanwhile are held and delivered in publish order on resume (at most 10,000, each at most 7 days; past that failed, recoverable after resuming)",
    call: (a) => ({ method: "PATCH", path: webhookPath(a), body: { status: "paused" } }),
  },
  {
    words: ["webhooks", "resume"],
    args: ["org", "id"],
    flags: [],
    summary: "resume a paused webhook configuration (what it held is delivered now, in publish order) or re-enable a disabled one",
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
    words: ["webhooks", "recover"],
    args: ["org", "id"],
    flags: ["since", "until"],
    required: ["since"],
    summary:
      "re-send every delivery of the configuration that failed in [--since, --until) (until: now), as a background job paced by the endpoint; each delivery once",
    call: (a, f) => {
      const since = instant(f, "since");
      if (since === undefined) throw new UsageError("webhooks recover: give --since, e.g. --since 2026-06-01T09:00:00Z", "webhooks");
      return { method: "POST", path: `${webhookPath(a)}/recover`, body: defined({ since, until: instant(f, "until") }) };
    },
    notes: (data, a) => [
      `Started. Follow it with \`webhooks recoveries ${show(a.org)} ${show(a.id)} ${show(data.id)}\` (found, resent, status).`,
    ],
  },
  {
    words: ["webhooks", "recoveries"],
    args: ["org", "id"],
    optional: ["recovery"],
    flags: [],
    summary: "a configuration's recoveries, newest first; with a recovery id, that one's progress",
    run: async (client, a) => {
      if (a.recovery !== undefined) {
        const data = await send(client, { method: "GET", path: `${webhookPath(a)}/recoveries/${enc(a.recovery)}` });
        return { data };
      }
      const { items } = await readList(client, `${webhookPath(a)}/recoveries`, Number.POSITIVE_INFINITY);
      return { data: items, text: items.length === 0 ? "(no recoveries)\n" : table(items, RECOVERY_COLUMNS) };
    },
  },
  {
    words: ["webhooks", "portal-link"],
    args: ["org", "id"],
    flags: ["expires-in"],
    summary:
      "a single-use link to the receiver's portal for this configuration (shown once; opens once, within --expires-in seconds, default 600)",
    call: (a, f) => ({
      method: "POST",
      path: `${webhookPath(a)}/portal-links`,
      body: defined({ expires_in: count(f, "expires-in") }),
    }),
    secret: "url",
    notes: (data) => [
      `It is single-use: the first opening starts the receiver's portal session (8 hours) and any later one is refused; unopened, it expires at ${show(data.expires_at)}. Give it to the receiver over a channel you trust.`,
    ],
  },
  {
    words: ["webhooks", "portal-sessions"],
    args: ["org", "id"],
    flags: ["limit"],
    summary: "the configuration's portal sessions, oldest first (ended and expired ones stay listed a day)",
    list: (a) => `${webhookPath(a)}/portal-sessions`,
    columns: PORTAL_SESSION_COLUMNS,
    noun: "portal sessions",
  },
  {
    words: ["webhooks", "end-portal-session"],
    args: ["org", "id", "session"],
    flags: ["yes"],
    summary: "end a portal session: its cookie stops working at once, wherever it is (--yes to confirm)",
    check: async (_client, a, f) => {
      if (f.yes === true) return;
      throw new UsageError(
        `webhooks end-portal-session ends the receiver's portal session ${clean(a.session ?? "")} of ${clean(a.id ?? "")} at once: the receiver sees and changes nothing more until it gets a new link; to confirm, add --yes`,
        "webhooks",
      );
    },
    call: (a) => ({ method: "DELETE", path: `${webhookPath(a)}/portal-sessions/${enc(a.session ?? "")}` }),
  },

  {
    words: ["event-types", "list"],
    args: ["org"],
    flags: ["limit"],
    summary: "the organization's event catalog, by name (keyway's own operational types included, read-only)",
    list: eventTypesPath,
    columns: EVENT_TYPE_COLUMNS,
    noun: "event types",
  },
  {
    words: ["event-types", "show"],
    args: ["org", "name"],
    flags: [],
    summary: "an event type with its JSON Schema and examples",
    run: async (client, a) => {
      const data = await send(client, { method: "GET", path: eventTypePath(a) });
      const { schema, examples, ...rest } = isObject(data) ? data : {};
      // Indented JSON; each line cleaned, so the indentation's newlines stay newlines.
      const pretty = (/** @type {unknown} */ v) => `${(JSON.stringify(v, null, 2) ?? "null").split("\n").map(clean).join("\n")}\n`;
      return {
        data,
        text: `${record(rest)}\nSchema\n${schema === null ? "(none: any data)\n" : pretty(schema)}\nExamples\n${pretty(examples)}`,
      };
    },
  },
  {
    words: ["event-types", "create"],
    args: ["org", "name"],
    flags: ["description", "schema-file", "examples-file", "deprecated"],
    summary:
      "add an event type (name group.event): a JSON Schema for its data from --schema-file, examples (a JSON array) from --examples-file, each checked",
    call: (a, f) => ({
      method: "POST",
      path: eventTypesPath(a),
      body: defined({
        name: a.name,
        description: flagText(f.description),
        schema: jsonFile(f, "schema-file"),
        examples: jsonFile(f, "examples-file"),
        deprecated: f.deprecated === true ? true : undefined,
      }),
    }),
  },
  {
    words: ["event-types", "update"],
    args: ["org", "name"],
    flags: ["description", "schema-file", "no-schema", "examples-file", "deprecated", "no-deprecated"],
    summary: "change an event type (only what is given); --no-schema removes its schema",
    call: (a, f) => {
      if (f["no-schema"] === true && f["schema-file"] !== undefined)
        throw new UsageError("give --schema-file or --no-schema, not both", "event-types");
      const description = flagText(f.description);
      const body = defined({
        description: description === undefined ? undefined : description.trim() === "" ? null : description,
        schema: f["no-schema"] === true ? null : jsonFile(f, "schema-file"),
        examples: jsonFile(f, "examples-file"),
        deprecated: toggle(f, "deprecated"),
      });
      if (Object.keys(body).length === 0)
        throw new UsageError("event-types update: nothing to change; give at least one flag", "event-types");
      return { method: "PATCH", path: eventTypePath(a), body };
    },
  },
  {
    words: ["event-types", "delete"],
    args: ["org", "name"],
    flags: ["yes"],
    summary: "delete an event type: publishes of it are no longer checked (--yes to confirm; consider --deprecated instead)",
    check: async (client, a, f) => {
      if (f.yes === true) return;
      const type = await send(client, { method: "GET", path: eventTypePath(a) });
      const view = isObject(type) ? type : {};
      throw new UsageError(
        `event-types delete removes ${clean(String(view.name ?? a.name))} from the catalog: publishes of it are no longer checked against its schema and receivers no longer see it; to confirm, add --yes`,
        "event-types",
      );
    },
    call: (a) => ({ method: "DELETE", path: eventTypePath(a) }),
  },

  {
    words: ["webhook-settings", "show"],
    args: ["org"],
    flags: [],
    summary: "the organization's webhook settings",
    call: (a) => ({ method: "GET", path: settingsPath(a) }),
  },
  {
    words: ["webhook-settings", "update"],
    args: ["org"],
    flags: ["refuse-unknown-types", "no-refuse-unknown-types", "frame-origin"],
    summary:
      "whether publishing an unknown event type is refused, and the origins that may frame the receivers' portal (--frame-origin once per origin; `none` for none)",
    call: (a, f) => {
      const origins = flagText(f["frame-origin"]);
      const body = defined({
        refuse_unknown_event_types: toggle(f, "refuse-unknown-types"),
        portal_frame_origins: origins === undefined ? undefined : origins === "none" ? [] : origins.split("\n"),
      });
      if (Object.keys(body).length === 0) {
        throw new UsageError(
          "webhook-settings update: nothing to change; give --refuse-unknown-types, --no-refuse-unknown-types or --frame-origin",
          "webhook-settings",
        );
      }
      return { method: "PATCH", path: settingsPath(a), body };
    },
  },

  {
    words: ["webhook-settings", "rotate-assertion-key"],
    args: ["org"],
    flags: ["yes"],
    summary:
      "a new key to sign the organization's private_key_jwt assertions: published at once, signing 10 minutes later; the previous one stays published 24 hours more (--yes to confirm)",
    check: async (_client, _a, f) => {
      if (f.yes === true) return;
      throw new UsageError(
        "webhook-settings rotate-assertion-key makes a new assertion key: receivers' OAuth servers fetch it from the JWKS URL before it signs (10 minutes), and the current key stays published for 24 hours after that; to confirm, add --yes",
        "webhook-settings",
      );
    },
    call: (a) => ({ method: "POST", path: `${settingsPath(a)}/rotate-assertion-key` }),
    notes: (data) => {
      const d = isObject(data) ? data : {};
      return [
        `The new key ${show(d.kid)} signs from ${show(d.activates_at)}${d.previous_kid ? `; the previous one (${show(d.previous_kid)}) stays published until ${show(d.previous_expires_at)}` : ""}. Nothing needs doing at receivers that fetch the JWKS URL.`,
      ];
    },
  },

  {
    words: ["deliveries", "list"],
    args: ["org", "id"],
    flags: ["limit", "all", "status", "event-type", "event-id"],
    summary: "list a configuration's deliveries, newest first, filtered by --status, --event-type, --event-id",
    list: (a, f) => {
      const query = new URLSearchParams(
        /** @type {Record<string, string>} */ (
          defined({
            status: oneOf(f, "status", DELIVERY_STATUSES),
            event_type: flagText(f["event-type"]),
            event_id: flagText(f["event-id"]),
          })
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
    words: ["manager", "sign-in-link"],
    args: [],
    flags: ["expires-in"],
    summary:
      "a single-use link that signs the operator in to the manager app (shown once; works once, within --expires-in seconds, default 300)",
    call: (_a, f) => ({ method: "POST", path: "/admin/v1/manager-sign-in-links", body: defined({ expires_in: count(f, "expires-in") }) }),
    secret: "url",
    notes: (data) => [
      `Open it in a browser and press Sign in: it signs in once (an operator session of 8 hours); unused, it expires at ${show(data.expires_at)}. It is as good as ADMIN_TOKEN until then: do not share it.`,
    ],
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

/**
 * Whether a configuration is sending, and if not why, in one line: disabled (by whom or what, from
 * `disabled_reason`), paused by its status (deliveries held until resumed), paused by keyway (a
 * receiver's Retry-After or the open circuit, until `paused_until`), or active.
 * @param {Item} view a webhook configuration as the API shows it
 */
export function webhookState(view) {
  if (view.status === "disabled") return `disabled: ${typeof view.disabled_reason === "string" ? view.disabled_reason : "no reason given"}`;
  if (view.status === "paused") return "paused: deliveries are held, and sent in publish order when it is resumed";
  if (isObject(view.polling)) {
    const { token_active: active, backlog, last_polled_at: last } = view.polling;
    if (active === false) return "polling, token revoked: no read succeeds until `webhooks rotate-polling-token` makes a new token";
    return `polling: ${show(backlog)} event(s) not read yet, last read ${typeof last === "string" ? show(last) : "never"}`;
  }
  if (typeof view.pause_reason === "string") {
    return `paused${typeof view.paused_until === "string" ? ` until ${view.paused_until}` : ""}: ${view.pause_reason}`;
  }
  return "active, sending";
}

/**
 * `credentials create`'s method: --method, else private_key_jwt with --jwks or --jwks-uri, federated_jwt
 * with --federated-issuer or --federated-subject, else a secret. federated_jwt needs both its flags.
 * @param {Flags} f
 */
function credentialMethod(f) {
  const method =
    oneOf(f, "method", CREDENTIAL_METHODS) ??
    (f.jwks !== undefined || f["jwks-uri"] !== undefined
      ? "private_key_jwt"
      : f["federated-issuer"] !== undefined || f["federated-subject"] !== undefined
        ? "federated_jwt"
        : "client_secret_basic");
  if (method === "federated_jwt" && (typeof f["federated-issuer"] !== "string" || typeof f["federated-subject"] !== "string")) {
    throw new UsageError("credentials create: federated_jwt needs --federated-issuer URL and --federated-subject SUB");
  }
  return method;
}

/**
 * Everything the operator API holds about one organization, every list followed to its end: the
 * organization, its users with their client credentials, API keys, administrator tokens, webhook
 * configurations, trusted issuers and the audit log. The API never returns a secret after creation, so neither
 * does this (test/e2e/admin-cli.test.ts checks it against the secrets it created).
 * @param {Client} client
 * @param {Record<string, string>} a
 */
export async function exportOrganization(client, a) {
  const all = (/** @type {string} */ path) => readList(client, path, Number.POSITIVE_INFINITY).then((r) => r.items);
  const [organization, users, apiKeys, adminTokens, webhooks, issuers, audit] = await Promise.all([
    send(client, { method: "GET", path: orgPath(a) }),
    all(usersPath(a)),
    all(keysPath(a)),
    all(tokensPath(a)),
    all(webhooksPath(a)),
    all(issuersPath(a)),
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
    trusted_issuers: issuers,
    audit_log: audit,
  };
}

/**
 * What a rotation's answer means for the two secrets: until when the old one works (or that it has
 * stopped), and, when the key's object has still to learn the rotation, that the new one is refused
 * until it does (keyway retries within seconds).
 * @param {Item} data the rotation's answer
 * @param {Record<string, string>} a
 * @returns {string[]}
 */
export function rotationNotes(data, a) {
  const until = typeof data.previous_secret_expires_at === "string" ? show(data.previous_secret_expires_at) : null;
  const notes = [
    until === null
      ? "The previous secret no longer works."
      : `The previous secret works until ${until}; both count against this key's one set of limits. \`keys end-grace ${show(a.org)} ${show(a.id)}\` ends it sooner.`,
  ];
  if (data.applied === false) {
    notes.push(
      "Not applied yet: the key's object has still to learn the new secret (keyway retries within seconds). Until it does, the previous secret works and the new one is refused with 401.",
    );
  }
  return notes;
}

/**
 * `--credits N [--refill N/day|N/month]` as the API's credits body; `--credits none` removes them.
 * @param {Flags} f
 */
function creditsBody(f) {
  if (f.credits === "none") return null;
  const remaining = amount(f, "credits");
  const refill = refillFlag(f);
  if (remaining === undefined) {
    if (refill !== undefined) throw new UsageError("--refill goes with --credits N (the balance to start from)");
    return undefined;
  }
  return defined({ remaining, refill });
}

/**
 * `webhooks create`: the body of POST .../webhook-configurations from the flags. The URL of the
 * webhooks is --webhook-url (--url is keyway's own address, a flag of every command); the
 * receiver's client secret comes from stdin or a file (args.mjs clientSecret), never from argv.
 * @param {Record<string, string>} a
 * @param {Flags} f
 * @returns {import("./common.mjs").Call}
 */
export function createWebhookCall(a, f) {
  const delivery = oneOf(f, "delivery", DELIVERIES);
  if (delivery === "polling") return pollingWebhookCall(a, f);
  const scheme = oneOf(f, "signature-scheme", SIGNATURE_SCHEMES);
  /** @type {string[]} */
  const missing = [];
  const url = flagText(f["webhook-url"]);
  const tokenUrl = flagText(f["token-url"]);
  const clientId = flagText(f["client-id"]);
  const secret = clientSecret(f);
  if (url === undefined) missing.push("--webhook-url URL");
  if (tokenUrl === undefined) missing.push("--token-url URL");
  if (clientId === undefined) missing.push("--client-id ID");
  const auth = receiverAuth(f, false);
  // private_key_jwt takes no secret (keyway signs an assertion); keyway says so if one is given.
  if (secret === undefined && auth.auth_method !== "private_key_jwt") {
    missing.push("--client-secret-stdin or --client-secret-file FILE (or --auth-method private_key_jwt)");
  }
  if (missing.length > 0) {
    // Nothing of where to send: perhaps a receiver that cannot take inbound HTTP, which polling is for.
    const polling = url === undefined ? "; or --delivery polling, which takes none of them" : "";
    throw new UsageError(`webhooks create: give ${missing.join("; ")}${polling}`, "webhooks");
  }
  return {
    method: "POST",
    path: webhooksPath(a),
    body: defined({
      delivery,
      url,
      oauth: defined({ token_url: tokenUrl, client_id: clientId, client_secret: secret, ...auth }),
      events: eventList(f.events, false),
      description: flagText(f.description),
      rate_limit: count(f, "rate-limit"),
      ordered: f.ordered === true ? true : undefined,
      token_cache: f["token-cache"] === true ? true : undefined,
      operations: f.operations === true ? true : undefined,
      signature_scheme: scheme,
      filter: filterFlag(f, false),
      channels: channelList(f.channels, false),
    }),
  };
}

/**
 * `webhooks create --delivery polling` (issue 45): no URL, no receiver token endpoint, no pacing,
 * no signature; a flag of those is refused before anything is sent (and before a client secret
 * is read). The answer has the polling URL and its token, shown once.
 * @param {Record<string, string>} a
 * @param {Flags} f
 * @returns {import("./common.mjs").Call}
 */
function pollingWebhookCall(a, f) {
  const given = PUSH_ONLY_FLAGS.filter((flag) => f[flag] !== undefined);
  if (given.length > 0) {
    throw new UsageError(
      `webhooks create --delivery polling takes no ${given.map((flag) => `--${flag}`).join(", ")}: a polling configuration has no URL, receiver token endpoint, pacing or signature (its receiver reads its events with the polling token)`,
      "webhooks",
    );
  }
  return {
    method: "POST",
    path: webhooksPath(a),
    body: defined({
      delivery: "polling",
      events: eventList(f.events, false),
      description: flagText(f.description),
      operations: f.operations === true ? true : undefined,
      filter: filterFlag(f, false),
      channels: channelList(f.channels, false),
    }),
  };
}

/**
 * `webhooks rotate-secret`: POST .../rotate-signing-secret, with `{signature_scheme}` when
 * --signature-scheme is given (changing the scheme is a rotation), else no body.
 * @param {Record<string, string>} a
 * @param {Flags} f
 * @returns {import("./common.mjs").Call}
 */
export function rotateSecretCall(a, f) {
  const scheme = oneOf(f, "signature-scheme", SIGNATURE_SCHEMES);
  const path = `${webhookPath(a)}/rotate-signing-secret`;
  return scheme === undefined ? { method: "POST", path } : { method: "POST", path, body: { signature_scheme: scheme } };
}

/**
 * A configuration's answer with what it shows only once, apart below the record: a v1 signing
 * secret (keyway keeps it encrypted, to sign with, and never returns it) or a polling
 * configuration's `polling.token` (keyway keeps only its hash), each with the warning that this
 * is the only time it is shown. A v1a configuration has no secret (`signing_secret: null`): its
 * `signing_public_key` is printed apart instead, said to be public. With --json, stdout stays
 * the JSON and the warnings go to stderr.
 * @param {unknown} data
 * @param {Flags} f
 * @param {string[]} [notes]
 * @returns {import("./common.mjs").Shown}
 */
export function shownOnce(data, f, notes = []) {
  const view = isObject(data) ? data : {};
  const json = f.json === true;
  const where = (/** @type {string} */ name) => (json ? `(data.${name})` : "above");
  const { signing_secret: secret, ...rest } = view;
  /** @type {Item} */
  let shown = rest;
  /** @type {Item} */
  const apart = {};
  /** @type {string[]} */
  const warnings = [];
  if (typeof secret === "string") {
    apart.signing_secret = secret;
    warnings.push(
      `The signing_secret ${where("signing_secret")} is shown only now: keyway keeps it encrypted to sign with and never shows it again (\`webhooks rotate-secret\` makes a new one). Give it to the receiver, which verifies each webhook's signature with it.`,
    );
  } else if (typeof view.signing_public_key === "string") {
    const { signing_public_key: publicKey, ...others } = shown;
    shown = others;
    apart.signing_public_key = publicKey;
    warnings.push(
      `signature_scheme v1a: keyway signs each webhook with Ed25519 and keeps the private key sealed; the signing_public_key ${where("signing_public_key")} verifies the signatures. It is public, not a secret: give it to the receiver (it cannot sign), and \`webhooks show\` prints it again.`,
    );
  }
  if (isObject(view.polling) && typeof view.polling.token === "string") {
    const { token, ...polling } = view.polling;
    shown = { ...shown, polling };
    apart["polling.token"] = token;
    warnings.push(
      `The polling.token ${where("polling.token")} is shown only now: keyway keeps only its hash and never shows it again (\`webhooks rotate-polling-token\` makes a new one, ending this one). Give it to the receiver, which reads its events at polling.url with \`Authorization: Bearer <token>\`.`,
    );
  }
  if (json) {
    for (const line of [...warnings, ...notes]) process.stderr.write(`${line}\n`);
    return { data };
  }
  const below = Object.keys(apart).length > 0 ? `\n${record(apart)}` : "\n";
  return { data, text: `${record(shown)}${below}${[...warnings, ...notes].map((n) => `${n}\n`).join("")}` };
}

/**
 * The `oauth` fields of those flags: undefined ones left out; on update `none` removes a scope,
 * the resources, the audience or the assertion audience (null). keyway checks the values.
 * @param {Flags} f
 * @param {boolean} update
 * @returns {Item}
 */
function receiverAuth(f, update) {
  const method = oneOf(f, "auth-method", AUTH_METHODS);
  const text = (/** @type {string} */ name) => {
    const value = flagText(f[name]);
    return value !== undefined && update && value.trim() === "none" ? null : value;
  };
  const resources = text("resource");
  const on = f.dpop === undefined ? undefined : f.dpop === true || f.dpop === "on" ? true : f.dpop === "off" ? false : Number.NaN;
  if (Number.isNaN(on))
    throw new UsageError(`--dpop takes no value here (--no-dpop turns it off); got "${clean(String(f.dpop))}"`, "webhooks");
  if (on !== undefined && f["no-dpop"] === true) throw new UsageError("give --dpop or --no-dpop, not both", "webhooks");
  return defined({
    auth_method: method,
    scope: text("scope"),
    resource: typeof resources === "string" ? resources.split("\n") : resources,
    audience: text("audience"),
    assertion_audience: text("assertion-audience"),
    dpop: on ?? (f["no-dpop"] === true ? false : undefined),
  });
}

/** What a connection test found, in words (the view's fields below them). */
const CONNECTION_OUTCOMES = {
  token_issued: "a token was issued",
  refused_by_ssrf_guard: "not sent: the token URL's address is not a public one (keyway's SSRF guard)",
  dns_failure: "the token URL's host name did not resolve",
  connection_refused: "the token URL's server refused the connection",
  tls_failure: "the TLS handshake with the token URL failed",
  timeout: "the token URL did not answer in time",
  network_error: "the token URL could not be reached",
  redirect_refused: "the token URL answered with a redirect, which keyway does not follow",
  http_error: "the token URL refused the request",
  not_json: "the token URL's answer was not JSON",
  no_access_token: "the token URL answered without an access_token",
};

/**
 * @param {Item} d
 * @returns {string}
 */
export function connectionTestText(d) {
  const outcome = typeof d.outcome === "string" ? d.outcome : "";
  const words = Object.hasOwn(CONNECTION_OUTCOMES, outcome)
    ? CONNECTION_OUTCOMES[/** @type {keyof typeof CONNECTION_OUTCOMES} */ (outcome)]
    : clean(outcome);
  const head = `${d.ok === true ? "OK" : "FAILED"}: ${words}${typeof d.message === "string" ? ` (${clean(d.message)})` : ""}\n`;
  return `${head}${record({
    outcome: d.outcome,
    reached: d.reached,
    http_status: d.http_status,
    error: d.error,
    token_type: d.token_type,
    expires_in: d.expires_in,
    auth_method: d.auth_method,
    dpop: d.dpop,
    latency_ms: d.latency_ms,
  })}`;
}
