/**
 * The operator CLI's help, derived from the command table so it cannot drift from what runs: every
 * command, one group's, or one command's synopsis with what its flags mean, then the environment
 * and exit status.
 */
import {
  ASSERTION_REUSE,
  COMMANDS,
  CREDENTIAL_METHODS,
  DELIVERIES,
  DELIVERY_STATUSES,
  LOCATION_HINTS,
  SIGNATURE_SCHEMES,
  TOKEN_STRATEGIES,
} from "./commands.mjs";
import { AUDIT_DEFAULT_LIMIT } from "./common.mjs";
/** @typedef {import("./common.mjs").Flags} Flags */
/** @typedef {import("./http.mjs").Client} Client */

/** Per group: its heading in the help, and what its flags mean. */
export const GROUPS = {
  orgs: {
    title: "Organizations",
    notes: [
      "--out FILE      orgs export: write the document to FILE (mode 600) instead of stdout",
      "--per-second N, --per-day N, --per-month N   orgs limits: the quota all its keys share (UTC windows; `none` removes one;",
      "                per-second at most 10000, leased to the keys above 1000; 1000 when not set)",
    ],
  },
  users: { title: "Users", notes: ["--email E       the user's e-mail address"] },
  "trusted-issuers": {
    title: "Trusted issuers (workload identity issuers whose JWTs authenticate federated_jwt credentials)",
    notes: [
      "--issuer URL          the issuer, exactly as its JWTs' iss (https), e.g. https://token.actions.githubusercontent.com",
      "--jwks-uri URL        where it publishes its keys; default: found in its OpenID or RFC 8414 metadata",
      "--name N              a label for the issuer",
      `--assertion-reuse R   ${ASSERTION_REUSE.join(" or ")}: one token request per JWT (needs a jti; the default), or any number`,
      "                      until it expires (Kubernetes projected tokens, CI job tokens read from a file)",
      "--max-lifetime SECONDS  the longest a JWT of it may live, 60..86400 (default 3600)",
      "<issuer_id>           the ID column of `trusted-issuers list` (iss_...); remove revokes its federated credentials",
    ],
  },
  credentials: {
    title: "Client credentials",
    notes: [
      "--name N        a label for the credential",
      `--method M      how the client authenticates: ${CREDENTIAL_METHODS.join(", ")} (default: a secret,`,
      "                or what --jwks, --jwks-uri or --federated-issuer imply)",
      '--jwks FILE     a JSON file holding the client\'s public keys ({"keys": [...]}): private_key_jwt, no secret;',
      "                on update it replaces the key set (list old and new during a rotation)",
      "--jwks-uri URL  private_key_jwt: where the client publishes its keys, instead of --jwks; keyway fetches it",
      "                (https) and again when a JWT names a key it does not hold: the client rotates on its own",
      "--federated-issuer URL   federated_jwt: one of the organization's trusted issuers, exactly as registered",
      "--federated-subject SUB  federated_jwt: the workload's `sub`, matched exactly (e.g. repo:org/app:ref:refs/heads/main)",
      `--access-token-strategy S  ${TOKEN_STRATEGIES.join(" or ")}: keyway's opaque tokens (the default) or RFC 9068 JWTs`,
      '--scopes "S.."  the scopes its tokens may have, space-separated; update: `all` lifts the restriction',
      "--dpop on|off   whether its tokens must be DPoP-bound",
      "<client_id>     the CLIENT_ID column of `credentials list` (kw_client_...)",
    ],
  },
  keys: {
    title: "API keys",
    notes: [
      "--name N             a label for the key",
      "--per-second N       requests per second (1..10000; above 1000 the key is served by shards); update: `default` restores the service default",
      "--per-day N          requests per UTC day (1..100000000); update: `default` restores the service default",
      `--location-hint H    where the key's clients are: ${LOCATION_HINTS.join(" ")}`,
      "--days               keys traffic: the last 30 days by UTC day instead of the last 24 hours",
      "--credits N          a prepaid balance each request spends its cost from (429 credits_exhausted at 0);",
      "                     update: sets the balance, `none` removes credits",
      "--refill N/day       with --credits: set the balance back to N at each UTC day (or N/month) boundary",
      "--add N / --set N    keys credits: top up by N, or make the balance exactly N",
      "--grace SECONDS      keys rotate: how long the replaced secret keeps working, 0..604800 (7 days), e.g. 3600;",
      "                     default 0: it stops at once (the safe choice when a secret may have leaked); give a grace",
      "                     for a planned switch-over, and `keys end-grace` once every client has the new secret",
    ],
  },
  "admin-tokens": {
    title: "Administrator tokens (sign-ins to the manager app for one organization)",
    notes: ["--name N             a label for the token", "--expires-in-days N  1..365 (default 30)"],
  },
  manager: {
    title: "The manager app (the operator's sign-in without pasting ADMIN_TOKEN)",
    notes: ["--expires-in SECONDS   manager sign-in-link: how long the link may be used in, 60..900 (default 300)"],
  },
  audit: { title: "Audit log", notes: ["--limit N       at most N entries", "--all           every entry (follows every page)"] },
  webhooks: {
    title: "Webhook configurations (where an organization's events go, and how keyway signs in to each receiver)",
    notes: [
      "<id>            a configuration's id (whk_...), the ID column of `webhooks list`",
      "--webhook-url URL      where keyway POSTs the events: a public https: URL (--url is keyway's own address)",
      "--token-url URL        the receiver's OAuth token endpoint, where keyway gets its access token (https:)",
      "--client-id ID         keyway's client id at the receiver",
      "--client-secret-stdin  read keyway's client secret at the receiver from stdin (a pipe or `< FILE`);",
      "--client-secret-file FILE  or from FILE. Never a plain flag: shell history and `ps` would keep it.",
      "                       One trailing newline is dropped. Update: needed again when --webhook-url or",
      "                       --token-url moves to another origin; without it the stored secret is kept",
      "--events T,T..         event types, separated by commas or spaces (e.g. order.created,order.paid);",
      "                       create: without it, every event; update: `all` for every event",
      '--description D        a name for lists; update: "" removes it',
      "--ordered              one delivery at a time, in publish order (update: --no-ordered turns it off)",
      "--rate-limit N         at most N deliveries per second, 1..1000; update: `none` removes the limit",
      '--filter JSON          a payload filter over the event (Outpost\'s shape), e.g. \'{"data": {"amount": {"$gte": 100}}}\';',
      "                       checked against the event types' schemas; update: `none` removes it",
      "--channels C,C..       only events carrying one of these channels; update: `all` for every channel",
      "--token-cache          one shared receiver token, reused until 60 s before it expires (update:",
      "                       --no-token-cache: a token request before each webhook, the default)",
      "--auth-method M        how keyway authenticates at the token URL: client_secret_post (the default),",
      "                       client_secret_basic, or private_key_jwt (no client secret: keyway signs an assertion;",
      "                       the receiver registers keyway's JWKS URL, the view's oauth.jwks_uri, as the client's jwks_uri)",
      '--scope "S.."          sent as scope in the token request, space-separated; update: `none` sends none',
      "--resource URI         sent as a resource parameter (RFC 8707); give it once per URI; update: `none` sends none",
      "--audience A           sent as audience in the token request; update: `none` sends none",
      "--assertion-audience U private_key_jwt: the assertion's aud (default the token URL); update: `none` for the default",
      "--dpop, --no-dpop      ask for DPoP-bound tokens and send webhooks with DPoP proofs (RFC 9449), or stop",
      `--signature-scheme S   create, rotate-secret: ${SIGNATURE_SCHEMES.join(" or ")}. v1 (the default): HMAC-SHA256 with a whsec_`,
      "                       secret, shown once; v1a: Ed25519, keyway keeps the private key and shows the public key",
      "                       (signing_public_key, whpk_...), which is not a secret. rotate-secret: default the current",
      "                       scheme; another one is a rotation, both keys signing for 24 hours",
      `--delivery D           create: ${DELIVERIES.join(" or ")}. push (the default): keyway sends each event to --webhook-url;`,
      "                       polling: no --webhook-url, --token-url, --client-id, client secret, pacing or signature;",
      "                       the receiver reads its events at polling.url with the polling.token shown once",
      "                       (`GET /v1/polling-endpoints/{id}/events`, `Authorization: Bearer kw_poll_...`)",
      "--yes                  webhooks delete, end-portal-session: confirms it (without it, nothing is sent but a look-up)",
      "--since TIME           webhooks recover: the window's start, with its zone, e.g. 2026-06-01T09:00:00Z (UTC)",
      "--until TIME           webhooks recover: the window's end (default: now)",
      "<recovery>             webhooks recoveries: one recovery (rcv_...) to show; without it, every recovery",
      "--expires-in SECONDS   webhooks portal-link: how long the link may be opened in, 60..3600 (default 600);",
      "                       the link is printed once and opens once (single-use); keyway keeps only its hash",
      "<session>              webhooks end-portal-session: the ID column of `webhooks portal-sessions` (pts_...)",
    ],
  },
  "event-types": {
    title: "Event types (the organization's event catalog: a JSON Schema and examples for each type's data)",
    notes: [
      "<name>                 group.event in lower case, e.g. order.created",
      '--description D        what happened, for the receivers; update: "" removes it',
      "--schema-file FILE     a JSON file holding a JSON Schema (draft 2020-12) for the event's data; publishes of",
      "                       the type are checked against it (400 naming the failing path)",
      "--no-schema            update: remove the schema (any data is accepted)",
      "--examples-file FILE   a JSON file holding an array of example data values, each checked against the schema",
      "--deprecated           still accepted, marked as on its way out (update: --no-deprecated undoes it)",
      "--yes                  event-types delete: confirms it (without it, nothing is sent but a look-up)",
    ],
  },
  "webhook-settings": {
    title: "Webhook settings (one set per organization)",
    notes: [
      "--refuse-unknown-types     publishing an event type that is not in the catalog answers 400",
      "--no-refuse-unknown-types  such events are sent (the default)",
      "--frame-origin O           an https origin that may show the receivers' portal in an iframe; give it once per",
      "                           origin (the list replaces the current one), or `none` for none",
      "--yes                      rotate-assertion-key: confirms it (without it, nothing is sent)",
    ],
  },
  deliveries: {
    title: "Deliveries",
    notes: [
      `--status S          ${DELIVERY_STATUSES.slice(0, -1).join(", ")} or ${DELIVERY_STATUSES.at(-1)}`,
      "--event-type T      e.g. order.created",
      "--event-id E        one event's deliveries (evt_...)",
      "<id>                deliveries list: the configuration (whk_...); show and resend: the delivery (msg_..., the webhook-id)",
      "--limit N / --all   deliveries list shows the 50 newest unless told otherwise",
    ],
  },
};

export const GLOBAL_HELP = `Flags of every command
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

Secrets (api_key, client_secret, token) are printed only by the command that creates them (and a
key's new api_key by \`keys rotate\`): keyway keeps only their hashes and never shows them again.
A webhook configuration's signing_secret is printed by \`webhooks create\` and \`webhooks
rotate-secret\` only: keyway keeps it encrypted, to sign with (a v1a configuration has none: its
signing_public_key is public, and every view shows it). A polling configuration's polling.token
is printed by \`webhooks create\` and \`webhooks rotate-polling-token\` only: keyway keeps its
hash. Lists and gets never include them.
Secrets given to keyway (a receiver's client secret) are read from stdin or a file, never argv.
`;

/**
 * Help for one command (`keys create --help`): its synopsis, what it does, its group's notes.
 * @param {string} words
 */
export function commandHelp(words) {
  const [group = ""] = words.split(" ");
  const row = commandRows(group).find(([usage]) => usage === words || usage.startsWith(`${words} `));
  const info = GROUPS[/** @type {keyof typeof GROUPS} */ (group)];
  const lines = [`Usage: npm run admin -- ${row?.[0] ?? words} [--url URL] [--json]`, "", `  ${row?.[1] ?? ""}`];
  // The group's notes on this command's flags only (a note and its continuation lines).
  const command = COMMANDS.find((c) => c.words.join(" ") === words);
  let keep = false;
  for (const note of info?.notes ?? []) {
    if (!note.startsWith(" "))
      keep =
        command === undefined ||
        !note.startsWith("--") ||
        command.flags.some((f) => note.startsWith(`--${f} `) || note.includes(` --${f} `) || note.startsWith(`--${f}/`));
    if (keep) lines.push(`  ${note}`);
  }
  lines.push("", "`npm run admin -- help` has every command, the flags of all, the environment and exit status.", "");
  return lines.join("\n");
}

/** Flags that take no value: shown in a synopsis as `[--flag]`. */
const BOOLEAN_FLAGS = new Set([
  "all",
  "days",
  "clear",
  "client-secret-stdin",
  "ordered",
  "no-ordered",
  "token-cache",
  "no-token-cache",
  "operations",
  "no-operations",
  "yes",
  "no-schema",
  "deprecated",
  "no-deprecated",
  "refuse-unknown-types",
  "no-refuse-unknown-types",
]);

/**
 * One help row per command of a group: its synopsis (words, <arguments>, [flags]) and summary.
 * @param {string} group
 * @returns {[string, string][]}
 */
export function commandRows(group) {
  return COMMANDS.filter((c) => c.words[0] === group).map((command) => {
    const flags = command.flags.map((flag) => {
      if (BOOLEAN_FLAGS.has(flag)) return `[--${flag}]`;
      /** @type {Record<string, string>} */
      const metavars = {
        email: "E",
        "location-hint": "H",
        confirm: "NAME",
        status: "S",
        "event-type": "T",
        "event-id": "E",
        out: "FILE",
        refill: "N/day|N/month",
        grace: "SECONDS",
        "webhook-url": "URL",
        "token-url": "URL",
        "client-id": "ID",
        "client-secret-file": "FILE",
        events: "T,T..",
        description: "D",
        "schema-file": "FILE",
        "examples-file": "FILE",
        since: "TIME",
        until: "TIME",
        "expires-in": "SECONDS",
        "frame-origin": "O",
        issuer: "URL",
        "jwks-uri": "URL",
        "assertion-reuse": "R",
        "max-lifetime": "SECONDS",
        method: "M",
        "federated-issuer": "URL",
        "federated-subject": "SUB",
        "access-token-strategy": "S",
        "signature-scheme": "v1|v1a",
        delivery: "push|polling",
      };
      const metavar = metavars[flag] ?? "N";
      return command.required?.includes(flag) ? `--${flag} ${metavar}` : `[--${flag} ${metavar}]`;
    });
    const optional = (command.optional ?? []).map((arg) => `[<${arg}>]`);
    return [[...command.words, ...command.args.map((arg) => `<${arg}>`), ...optional, ...flags].join(" "), command.summary];
  });
}

/**
 * Synopsis lines, printed under a usage error: of one group, or of all.
 * @param {string} [group]
 */
export function usageText(group) {
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
export function helpText(group) {
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
