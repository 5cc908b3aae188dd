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
import { checkedInput, type FormErrors, formErrorsOf, labelled, text } from "./form-check";
import { confirmations } from "./pages/confirm";
import {
  ApiKeyDetail,
  ApiKeyIssued,
  ApiKeyRotated,
  ApiKeys,
  EMPTY_KEY_FORM,
  GRACE_CHOICES,
  KEY_FIELD_LABELS,
  type KeyField,
  type KeyFormValues,
  type KeyLimitField,
  type RefusedKeyForms,
} from "./pages/keys";
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

/** The form field an input path names: a limit is `limits.<field>`. */
function keyField(path: string[]): KeyField | null {
  const name = path[0] === "limits" ? path[1] : path[0];
  return name !== undefined && Object.hasOwn(KEY_FIELD_LABELS, name) ? (name as KeyField) : null;
}

/** The limits form's field a path names (`limits.per_day`). */
function limitField(path: string[]): KeyLimitField | null {
  const name = path[0] === "limits" ? path[1] : undefined;
  return name === "per_second" || name === "per_day" ? name : null;
}

/** A key's page: its limits and today's use, credits, traffic and forms; after a refusal with that form as typed. */
async function keyPage(c: C, org: { id: string; name: string }, refused: RefusedKeyForms = {}) {
  const deps = c.get("deps");
  const record = await getApiKey(deps, org.id, c.req.param("key") ?? "");
  const key = apiKeyView(record, deps.config.defaultLimits, deps.now());
  // Usage and traffic both come from the key's object (two reads, off the hot path).
  const [decision, traffic] = await Promise.all([keyUsage(deps, record), keyTraffic(deps, record)]);
  const usage = decision ?? emptyUsage(key.limits, deps.now());
  const title = `API key: ${key.name ?? key.hint}`;
  const failed = refused.limits !== undefined || refused.credits !== undefined;
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
      refused={refused}
    />,
    failed ? undefined : (notices[c.req.query("notice") ?? ""] ?? KEY_NOTICES[c.req.query("notice") ?? ""]),
  );
}

/** The organization's keys with today's usage, and the form that issues one. */
async function keysPage(c: C, org: { id: string; name: string }, values: KeyFormValues, errors?: FormErrors<KeyField>) {
  const deps = c.get("deps");
  const keys = await listApiKeys(deps, org.id, PAGE_SIZE);
  const usage = await Promise.all(keys.items.map((k) => (k.revoked_at === null ? keyUsage(deps, k) : null)));
  const rows = keys.items.map((k, i) => ({ view: apiKeyView(k, deps.config.defaultLimits), usage: usage[i] ?? null }));
  return page(
    c,
    "API keys",
    [...orgCrumbs(c, org, true), { label: "API keys" }],
    <ApiKeys org={org} keys={rows} defaults={deps.config.defaultLimits} csrf={csrf(c)} values={values} errors={errors} />,
    errors ? undefined : notices[c.req.query("notice") ?? ""],
  );
}

export function keyRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();
  // API keys (operators only: spec 2.2, keys come from the support team).
  app.get("/:org/api-keys", async (c) => {
    operatorOnly(c);
    return keysPage(c, await orgFor(c), EMPTY_KEY_FORM);
  });

  // A refusal answers with the list and the form again: the values as typed, every field's message beside it.
  app.post("/:org/api-keys", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const f = await form(c);
    const values: KeyFormValues = {
      name: text(f, "name"),
      per_second: text(f, "per_second"),
      location_hint: text(f, "location_hint"),
      per_day: text(f, "per_day"),
    };
    try {
      const input = checkedInput(CreateApiKeyInput, {
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
    } catch (err) {
      const errors = formErrorsOf(err, keyField, labelled(KEY_FIELD_LABELS));
      if (errors === null) throw err;
      c.status(errors.status);
      return keysPage(c, org, values, errors);
    }
  });

  app.get("/:org/api-keys/:key", async (c) => {
    operatorOnly(c);
    return keyPage(c, await orgFor(c));
  });

  // A refused change answers with the key's page, that form as typed and its messages.
  app.post("/:org/api-keys/:key/limits", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const f = await form(c);
    try {
      const input = checkedInput(UpdateApiKeyInput, { limits: limitsFrom(f, ["per_second", "per_day"], true) });
      await updateApiKey(c.get("deps"), org.id, c.req.param("key"), input, actor(c));
    } catch (err) {
      const errors = formErrorsOf(err, limitField, labelled(KEY_FIELD_LABELS));
      if (errors === null) throw err;
      c.status(errors.status);
      return keyPage(c, org, { limits: { values: { per_second: text(f, "per_second"), per_day: text(f, "per_day") }, errors } });
    }
    return c.redirect(`/manager/organizations/${org.id}/api-keys?notice=limits-saved`, 303);
  });

  // Credits: a top-up adds, a reset sets; both audited (identity/api-keys.ts changeCredits).
  app.post("/:org/api-keys/:key/credits", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const f = await form(c);
    const amountText = text(f, "amount");
    const amount = /^\d{1,13}$/.test(amountText) ? Number(amountText) : Number.NaN;
    const action = f.action === "set" ? "set" : "add";
    try {
      // The union's branch the action chose, so its refusal names the amount ("must be at least 1"),
      // not the union's "must be {add: n} or {set: n}".
      const [addBranch, setBranch] = ChangeCreditsInput.options;
      const input = action === "set" ? checkedInput(setBranch, { set: amount }) : checkedInput(addBranch, { add: amount });
      await changeCredits(c.get("deps"), org.id, c.req.param("key"), input, actor(c));
    } catch (err) {
      // Either way the input names `set` or `add`: the one Credits field.
      const errors = formErrorsOf(
        err,
        (path) => (path[0] === "set" || path[0] === "add" ? "amount" : null),
        (_field, issue) => `Credits${"text" in issue ? issue.text : " is invalid"}`,
      );
      if (errors === null) throw err;
      c.status(errors.status);
      return keyPage(c, org, { credits: { values: { action, amount: amountText }, errors } });
    }
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
    const grace = text(f, "grace_seconds");
    const input = parseInput(RotateApiKeyInput, { grace_seconds: /^\d{1,7}$/.test(grace) ? Number(grace) : Number.NaN }, "form");
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
