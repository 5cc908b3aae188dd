/**
 * The manager's API keys (operators only, spec 2.2): the list with today's use, issuing a key, a
 * key's page (limits, usage, traffic charts), rotating its secret (a grace for the old one, the
 * new one shown once), ending that grace, and revocation. Mounted under /manager/organizations
 * by routes.tsx, behind its session and CSRF checks; the markup is in pages/keys.tsx.
 */
import { Hono } from "hono";
import { ApiError } from "../../errors";
import {
  apiKeyView,
  changeCredits,
  createApiKey,
  endRotationGrace,
  getApiKey,
  keyTraffic,
  keyUsage,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
  updateApiKey,
} from "../../identity/api-keys";
import { isoTime } from "../../lib/time";
import { emptyUsage } from "../../ratelimit/windows";
import { ChangeCreditsInput, CreateApiKeyInput, RotateApiKeyInput, UpdateApiKeyInput } from "../../schemas/admin";
import { parseInput } from "../../schemas/validate";
import { confirmations } from "./pages/confirm";
import { ApiKeyDetail, ApiKeyIssued, ApiKeyRotated, ApiKeys, GRACE_CHOICES } from "./pages/keys";
import {
  actor,
  type C,
  confirmPage,
  csrf,
  form,
  limitsFrom,
  type ManagerEnv,
  notices,
  operatorOnly,
  optional,
  orgCrumbs,
  orgFor,
  PAGE_SIZE,
  page,
} from "./shared";

/** Notices of this sub-app's actions (shared.tsx has the others'). */
const KEY_NOTICES: Record<string, string> = {
  "grace-ended": "Grace ended: the previous secret is refused from its next request on, at every location.",
};

/**
 * The grace the rotation form chose, in seconds: one of its choices, or the number in its field
 * (whole seconds; anything else is NaN, which RotateApiKeyInput refuses naming the field).
 */
function chosenGrace(choice: string | undefined, field: string | undefined): number {
  const seconds = (field ?? "").trim();
  const asNumber = (text: string) => (/^\d{1,7}$/.test(text) ? Number(text) : Number.NaN);
  if (choice === "seconds") return asNumber(seconds);
  if (seconds !== "" && asNumber(seconds) !== Number(choice)) {
    throw new ApiError("invalid_request", "Choose “A number of seconds” to use the number given, or clear the Seconds field.");
  }
  return GRACE_CHOICES.some(([value]) => value === choice) ? Number(choice) : Number.NaN;
}

/** The key of the URL, as the API shows it (its grace judged at this request's instant). */
async function keyFor(c: C, orgId: string) {
  const deps = c.get("deps");
  return apiKeyView(await getApiKey(deps, orgId, c.req.param("key") ?? ""), deps.config.defaultLimits, deps.now());
}

export function keyRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();
  // API keys (operators only: spec 2.2, keys come from the support team).
  app.get("/:org/api-keys", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const deps = c.get("deps");
    const keys = await listApiKeys(deps, org.id, PAGE_SIZE);
    const usage = await Promise.all(keys.items.map((k) => (k.revoked_at === null ? keyUsage(deps, k) : null)));
    const rows = keys.items.map((k, i) => ({ view: apiKeyView(k, deps.config.defaultLimits), usage: usage[i] ?? null }));
    return page(
      c,
      "API keys",
      [...orgCrumbs(c, org, true), { label: "API keys" }],
      <ApiKeys org={org} keys={rows} defaults={deps.config.defaultLimits} csrf={csrf(c)} />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.post("/:org/api-keys", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const f = await form(c);
    const input = parseInput(CreateApiKeyInput, {
      ...optional(f, ["name", "location_hint"]),
      limits: limitsFrom(f, ["per_second", "per_day"], false),
    });
    const { secret } = await createApiKey(c.get("deps"), org.id, input, actor(c));
    return page(
      c,
      "New API key",
      [...orgCrumbs(c, org, true), { label: "API keys", href: `/manager/organizations/${org.id}/api-keys` }, { label: "New" }],
      <ApiKeyIssued org={org} secret={secret} />,
    );
  });

  app.get("/:org/api-keys/:key", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const deps = c.get("deps");
    const record = await getApiKey(deps, org.id, c.req.param("key"));
    const key = apiKeyView(record, deps.config.defaultLimits, deps.now());
    // Usage and traffic both come from the key's object (two reads, off the hot path).
    const [decision, traffic] = await Promise.all([keyUsage(deps, record), keyTraffic(deps, record)]);
    const usage = decision ?? emptyUsage(key.limits, deps.now());
    const title = `API key: ${key.name ?? key.hint}`;
    return page(
      c,
      title,
      [...orgCrumbs(c, org, true), { label: "API keys", href: `/manager/organizations/${org.id}/api-keys` }, { label: title }],
      <ApiKeyDetail
        base={`/manager/organizations/${org.id}/api-keys/${key.id}`}
        apiKey={key}
        usage={usage}
        traffic={traffic}
        resetsAt={isoTime(usage.day.resetAt)}
        credits={usage.credits ?? null}
        quota={usage.quota ?? null}
        csrf={csrf(c)}
      />,
      notices[c.req.query("notice") ?? ""] ?? KEY_NOTICES[c.req.query("notice") ?? ""],
    );
  });

  app.post("/:org/api-keys/:key/limits", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const input = parseInput(UpdateApiKeyInput, { limits: limitsFrom(await form(c), ["per_second", "per_day"], true) });
    await updateApiKey(c.get("deps"), org.id, c.req.param("key"), input, actor(c));
    return c.redirect(`/manager/organizations/${org.id}/api-keys?notice=limits-saved`, 303);
  });

  // Credits: a top-up adds, a reset sets; both audited (identity/api-keys.ts changeCredits).
  app.post("/:org/api-keys/:key/credits", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const f = await form(c);
    const amountText = typeof f.amount === "string" ? f.amount.trim() : "";
    const amount = /^\d{1,13}$/.test(amountText) ? Number(amountText) : Number.NaN;
    const input = parseInput(ChangeCreditsInput, f.action === "set" ? { set: amount } : { add: amount }, "form");
    await changeCredits(c.get("deps"), org.id, c.req.param("key"), input, actor(c));
    return c.redirect(`/manager/organizations/${org.id}/api-keys/${c.req.param("key")}?notice=credits-saved`, 303);
  });

  // Rotation: the key's page chooses the grace (a GET form), this page confirms it naming the key
  // and the grace, its POST rotates and shows the new secret once (identity/api-keys.ts rotateApiKey).
  app.get("/:org/api-keys/:key/rotate", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const key = await keyFor(c, org.id);
    if (key.status !== "active") throw new ApiError("conflict", "The API key is revoked; issue a new one.");
    const { grace_seconds } = parseInput(
      RotateApiKeyInput,
      { grace_seconds: chosenGrace(c.req.query("grace"), c.req.query("grace_seconds")) },
      "form",
    );
    const keys = `/manager/organizations/${org.id}/api-keys`;
    const until = isoTime(c.get("deps").now() + grace_seconds * 1000);
    return confirmPage(
      c,
      [...orgCrumbs(c, org, true), { label: "API keys", href: keys }, { label: key.name ?? key.hint, href: `${keys}/${key.id}` }],
      confirmations.rotateApiKey(key, grace_seconds, until),
      { action: `${keys}/${key.id}/rotate`, cancel: `${keys}/${key.id}` },
    );
  });

  app.post("/:org/api-keys/:key/rotate", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const f = await form(c);
    const text = typeof f.grace_seconds === "string" ? f.grace_seconds.trim() : "";
    const input = parseInput(RotateApiKeyInput, { grace_seconds: /^\d{1,7}$/.test(text) ? Number(text) : Number.NaN }, "form");
    const deps = c.get("deps");
    const { record, secret, applied } = await rotateApiKey(deps, org.id, c.req.param("key"), input.grace_seconds, actor(c));
    const key = apiKeyView(record, deps.config.defaultLimits, deps.now());
    const keys = `/manager/organizations/${org.id}/api-keys`;
    return page(
      c,
      "New API key secret",
      [
        ...orgCrumbs(c, org, true),
        { label: "API keys", href: keys },
        { label: key.name ?? key.hint, href: `${keys}/${key.id}` },
        { label: "New secret" },
      ],
      <ApiKeyRotated base={`${keys}/${key.id}`} apiKey={key} secret={secret} applied={applied} />,
    );
  });

  // Ending a rotation's grace early stops the old secret: confirmed first, like a revocation.
  app.get("/:org/api-keys/:key/end-grace", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const key = await keyFor(c, org.id);
    const keys = `/manager/organizations/${org.id}/api-keys`;
    return confirmPage(
      c,
      [...orgCrumbs(c, org, true), { label: "API keys", href: keys }, { label: key.name ?? key.hint, href: `${keys}/${key.id}` }],
      confirmations.endApiKeyGrace(key),
      { action: `${keys}/${key.id}/end-grace`, cancel: `${keys}/${key.id}` },
    );
  });

  app.post("/:org/api-keys/:key/end-grace", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    await endRotationGrace(c.get("deps"), org.id, c.req.param("key"), actor(c));
    return c.redirect(`/manager/organizations/${org.id}/api-keys/${c.req.param("key")}?notice=grace-ended`, 303);
  });

  app.get("/:org/api-keys/:key/revoke", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const deps = c.get("deps");
    const key = apiKeyView(await getApiKey(deps, org.id, c.req.param("key")), deps.config.defaultLimits);
    const keys = `/manager/organizations/${org.id}/api-keys`;
    return confirmPage(
      c,
      [...orgCrumbs(c, org, true), { label: "API keys", href: keys }, { label: key.hint, href: `${keys}/${key.id}` }],
      confirmations.revokeApiKey(key),
      { action: `${keys}/${key.id}/revoke`, cancel: `${keys}/${key.id}` },
    );
  });

  app.post("/:org/api-keys/:key/revoke", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    await revokeApiKey(c.get("deps"), org.id, c.req.param("key"), actor(c));
    return c.redirect(`/manager/organizations/${org.id}/api-keys?notice=key-revoked`, 303);
  });

  return app;
}
