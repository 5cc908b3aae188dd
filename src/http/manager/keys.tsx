/**
 * The manager's API keys (operators only, spec 2.2): the list with today's use, issuing a key, a
 * key's page (limits, usage, traffic charts) and revocation. Mounted under /manager/organizations
 * by routes.tsx, behind its session and CSRF checks; the markup is in pages/keys.tsx.
 */
import { Hono } from "hono";
import {
  apiKeyView,
  changeCredits,
  createApiKey,
  getApiKey,
  keyTraffic,
  keyUsage,
  listApiKeys,
  revokeApiKey,
  updateApiKey,
} from "../../identity/api-keys";
import { isoTime } from "../../lib/time";
import { emptyUsage } from "../../ratelimit/windows";
import { ChangeCreditsInput, CreateApiKeyInput, UpdateApiKeyInput } from "../../schemas/admin";
import { parseInput } from "../../schemas/validate";
import { confirmations } from "./pages/confirm";
import { ApiKeyDetail, ApiKeyIssued, ApiKeys } from "./pages/keys";
import {
  actor,
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
    const key = apiKeyView(record, deps.config.defaultLimits);
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
      notices[c.req.query("notice") ?? ""],
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
