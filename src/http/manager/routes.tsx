/**
 * The manager app's routes at /manager (spec 2.1, 5.3): Organization Settings -> Users -> Client
 * credentials, plus API keys (operators only) and webhook configurations (health, edits, test
 * events, each delivery's attempts and re-sends).
 * This file decides who may do what and loads the data; the markup and wording are in pages.tsx
 * and views.tsx. Whatever removes or stops something (revocations, removing a user, disabling a
 * webhook configuration) and re-sends go through a confirmation page (a GET) that names the
 * thing; only its form POSTs. A failed sign-in answers with the sign-in form again and the reason.
 * Every page gets the security headers of middleware/html.ts (a nonce-based CSP); every POST
 * carries the session's CSRF token (the sign-in form a server-signed one, login-csrf.ts); every
 * cookie is a `__Host-` cookie; an organization administrator's session reaches its own
 * organization only (anything else is a 404, whatever the URL or form says). Actions call the
 * same domain functions as the operator API.
 */
import type { Context } from "hono";
import { Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Child } from "hono/jsx";
import { actorOf, canAccess, resume, SESSION_COOKIE, SESSION_TTL_SECONDS, type Session, signIn, signOut } from "../../auth/sessions";
import { ApiError, invalidInput } from "../../errors";
import { adminTokenView, getOrgAdminToken, listOrgAdminTokens, mintOrgAdminToken, revokeOrgAdminToken } from "../../identity/admin-tokens";
import { apiKeyView, createApiKey, getApiKey, keyUsage, listApiKeys, revokeApiKey, updateApiKey } from "../../identity/api-keys";
import { auditLog } from "../../identity/audit";
import {
  clientCredentialView,
  createClientCredential,
  getClientCredential,
  listClientCredentials,
  revokeClientCredential,
  updateClientCredential,
} from "../../identity/credentials";
import { createOrganization, deleteOrganization, getOrganization, listOrganizations } from "../../identity/organizations";
import { createUser, getUser, listUsers, removeUser } from "../../identity/users";
import { constantTimeEqual } from "../../lib/crypto";
import { isoTime } from "../../lib/time";
import { describeError, log } from "../../log";
import { emptyUsage } from "../../ratelimit/windows";
import {
  CreateApiKeyInput,
  CreateClientCredentialInput,
  CreateOrganizationInput,
  CreateUserInput,
  MintOrgAdminTokenInput,
  UpdateApiKeyInput,
  UpdateClientCredentialInput,
} from "../../schemas/admin";
import { ALL_SCOPES } from "../../schemas/scopes";
import { parseInput } from "../../schemas/validate";
import { UpdateWebhookConfigurationInput } from "../../schemas/webhooks";
import { getWebhookConfiguration, listWebhookConfigurations, updateWebhookConfiguration } from "../../webhooks/configurations";
import { canResend, getDelivery, listDeliveries, retryDelivery, sendTestEvent } from "../../webhooks/deliveries";
import { readFields } from "../body";
import type { AppEnv } from "../context";
import { provideDeps } from "../middleware/deps";
import { type Csp, htmlSecurity, NONCE, pageNonce } from "../middleware/html";
import { checkLoginCsrf, issueLoginCsrf, LOGIN_CSRF_COOKIE, LOGIN_CSRF_TTL_SECONDS } from "./login-csrf";
import {
  AdminTokenMinted,
  ApiKeyDetail,
  ApiKeyIssued,
  ApiKeys,
  AuditLog,
  ClientCredentialCreated,
  ClientCredentialEdit,
  ClientCredentials,
  Confirm,
  type Confirmation,
  confirmations,
  DeliveryDetail,
  ErrorMessage,
  OrganizationSettings,
  Organizations,
  SIGN_IN_ERRORS,
  SignInForm,
  Users,
  WebhookConfigurationDetail,
  WebhookConfigurations,
} from "./pages";
import { type Crumb, Page } from "./views";

type ManagerEnv = {
  Bindings: AppEnv["Bindings"];
  /** `form`: a POST's fields, read once (the CSRF check and the handler both need them). */
  Variables: AppEnv["Variables"] & { session: Session; form: Record<string, unknown> };
};
type C = Context<ManagerEnv>;

/**
 * The attributes of every manager cookie. Their names carry the `__Host-` prefix (RFC 6265bis
 * section 4.1.3.2): a browser then stores the cookie only from a secure origin, with Secure,
 * Path=/ and no Domain, so a sibling subdomain or a plain-http man in the middle cannot plant or
 * overwrite it (cookie tossing, the route to login CSRF and session fixation). Path=/ is what the
 * prefix demands; SameSite=Strict keeps the cookies off cross-site requests, HttpOnly away from
 * scripts. Plain-http local runs (npm start on http://127.0.0.1) keep working in Chromium, which
 * treats loopback as a potentially trustworthy origin and so stores Secure and `__Host-` cookies
 * from it (test/e2e/manager.browser.test.ts checks it); a browser that does not needs https.
 */
const COOKIE = { httpOnly: true, secure: true, sameSite: "Strict", path: "/" } as const;
/** Forms post to this origin only; the one style and script carry the response's nonce. */
const MANAGER_CSP: Csp = {
  defaultSrc: ["'none'"],
  styleSrc: [NONCE],
  scriptSrc: [NONCE],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
};
const PAGE_SIZE = { limit: 100 };

export function managerApp(now: () => number): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();

  // Scoped to /manager: this app is mounted at the root, where "*" would mean every request.
  app.use("/manager/*", provideDeps(now) as never, htmlSecurity(MANAGER_CSP));

  app.onError((err, c) => {
    const e = err instanceof ApiError ? err : null;
    if (!e || e.detail !== undefined) log.error("manager error", { path: c.req.path, detail: describeError(err) });
    const status = e?.status ?? 500;
    const message = e ? e.developerMessage : "Something went wrong on our side. It has been logged.";
    const session = c.get("session");
    return c.html(
      <Page
        title={status === 404 ? "Not found" : status === 403 ? "Not allowed" : "That did not work"}
        nonce={pageNonce(c)}
        {...(session ? { csrf: session.csrf, who: who(session) } : {})}
      >
        <ErrorMessage message={message} />
      </Page>,
      status as 400,
    );
  });

  // Sign-in: the operator with ADMIN_TOKEN, an organization's administrator with a minted token.
  app.get("/manager/sign-in", (c) => signInPage(c, 200));

  // Every failure answers with the form again (a fresh double-submit pair, the field empty) and
  // the reason attached to the field, so the next attempt is one step away. A form whose token
  // we did not sign for this browser's cookie (a planted cookie with the same value in the form,
  // a forged or tampered token) is refused before the access token is even looked at.
  app.post("/manager/sign-in", async (c) => {
    const fields = await form(c);
    const deps = c.get("deps");
    const check = await checkLoginCsrf(deps.config.signingKeys, deps.now(), getCookie(c, LOGIN_CSRF_COOKIE), fields.csrf);
    if (check !== "ok") return signInPage(c, 403, check === "expired" ? SIGN_IN_ERRORS.expired : SIGN_IN_ERRORS.unverified);
    const token = typeof fields.token === "string" ? fields.token.trim() : "";
    if (token === "") return signInPage(c, 400, SIGN_IN_ERRORS.empty);
    const opened = await signIn(deps, token);
    // One message for a wrong, revoked or expired token: which one it was would help a guesser.
    if (!opened) return signInPage(c, 401, SIGN_IN_ERRORS.rejected);
    deleteCookie(c, LOGIN_CSRF_COOKIE, COOKIE);
    setCookie(c, SESSION_COOKIE, opened.cookie, { ...COOKIE, maxAge: SESSION_TTL_SECONDS });
    return c.redirect(home(opened.session), 303);
  });

  // Everything below needs a session; every POST its CSRF token.
  app.use("/manager/*", async (c, next) => {
    // The session lives on the server: a signed-out, revoked or rotated-away session is gone.
    const session = await resume(c.get("deps"), getCookie(c, SESSION_COOKIE));
    if (!session) return c.redirect("/manager/sign-in", 303);
    c.set("session", session);
    if (c.req.method === "POST") {
      const fields = await form(c);
      if (!(await constantTimeEqual(String(fields.csrf ?? ""), session.csrf))) {
        throw new ApiError("forbidden", "The form could not be verified (missing or stale CSRF token). Reload the page and try again.");
      }
    }
    await next();
  });

  app.post("/manager/sign-out", async (c) => {
    await signOut(c.get("deps"), c.get("session"));
    deleteCookie(c, SESSION_COOKIE, COOKIE);
    return c.redirect("/manager/sign-in", 303);
  });

  app.get("/manager", (c) => c.redirect(home(c.get("session")), 303));

  // Organizations (operator only).
  app.get("/manager/organizations", async (c) => {
    operatorOnly(c);
    const orgs = await listOrganizations(c.get("deps"), PAGE_SIZE);
    return page(
      c,
      "Organizations",
      [{ label: "Organizations" }],
      <Organizations orgs={orgs.items} csrf={csrf(c)} />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.post("/manager/organizations", async (c) => {
    operatorOnly(c);
    const org = await createOrganization(c.get("deps"), parseInput(CreateOrganizationInput, { name: (await form(c)).name }), actor(c));
    return c.redirect(`/manager/organizations/${org.id}?notice=created`, 303);
  });

  // Organization Settings.
  app.get("/manager/organizations/:org", async (c) => {
    const org = await orgFor(c);
    const deps = c.get("deps");
    const operator = c.get("session").role === "operator";
    const tokens = (await listOrgAdminTokens(deps, org.id, PAGE_SIZE)).items.map((t) => adminTokenView(t, deps.now()));
    return page(
      c,
      "Organization Settings",
      orgCrumbs(c, org),
      <OrganizationSettings org={org} operator={operator} tokens={tokens} csrf={csrf(c)} />,
      c.req.query("notice") === "created" ? "Organization created." : notices[c.req.query("notice") ?? ""],
    );
  });

  app.get("/manager/organizations/:org/delete", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    return confirmPage(c, orgCrumbs(c, org, true), confirmations.deleteOrganization(org), {
      action: `/manager/organizations/${org.id}/delete`,
      cancel: `/manager/organizations/${org.id}`,
    });
  });

  app.post("/manager/organizations/:org/delete", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    // The name typed must be the organization's: a slip of the mouse deletes nothing.
    if (String((await form(c)).confirm ?? "").trim() !== org.name) {
      const retry = { ...confirmations.deleteOrganization(org), error: `The name typed is not ${org.name}; nothing was deleted.` };
      c.status(400);
      return confirmPage(c, orgCrumbs(c, org, true), retry, {
        action: `/manager/organizations/${org.id}/delete`,
        cancel: `/manager/organizations/${org.id}`,
      });
    }
    await deleteOrganization(c.get("deps"), org.id, actor(c));
    return c.redirect("/manager/organizations?notice=org-deleted", 303);
  });

  app.post("/manager/organizations/:org/admin-tokens", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const input = parseInput(MintOrgAdminTokenInput, optional(await form(c), ["name"]));
    const { token } = await mintOrgAdminToken(c.get("deps"), org.id, input, actor(c));
    return page(
      c,
      "Administrator token",
      [...orgCrumbs(c, org, true), { label: "Administrator token" }],
      <AdminTokenMinted org={org} token={token} />,
    );
  });

  app.get("/manager/organizations/:org/admin-tokens/:token/revoke", async (c) => {
    const org = await orgFor(c);
    const token = await getOrgAdminToken(c.get("deps"), org.id, c.req.param("token"));
    return confirmPage(c, orgCrumbs(c, org, true), confirmations.revokeAdminToken(token, org), {
      action: `/manager/organizations/${org.id}/admin-tokens/${token.id}/revoke`,
      cancel: `/manager/organizations/${org.id}`,
    });
  });

  app.post("/manager/organizations/:org/admin-tokens/:token/revoke", async (c) => {
    const org = await orgFor(c);
    await revokeOrgAdminToken(c.get("deps"), org.id, c.req.param("token"), actor(c));
    return c.redirect(`/manager/organizations/${org.id}?notice=token-revoked`, 303);
  });

  // The audit log.
  app.get("/manager/organizations/:org/audit-log", async (c) => {
    const org = await orgFor(c);
    const entries = await auditLog(c.get("deps"), org.id, PAGE_SIZE);
    return page(c, "Audit log", [...orgCrumbs(c, org, true), { label: "Audit log" }], <AuditLog entries={entries.items} />);
  });

  // Users.
  app.get("/manager/organizations/:org/users", async (c) => {
    const org = await orgFor(c);
    const users = await listUsers(c.get("deps"), org.id, PAGE_SIZE);
    return page(
      c,
      "Users",
      [...orgCrumbs(c, org, true), { label: "Users" }],
      <Users org={org} users={users.items} csrf={csrf(c)} />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.post("/manager/organizations/:org/users", async (c) => {
    const org = await orgFor(c);
    const input = parseInput(CreateUserInput, optional(await form(c), ["name", "email"]));
    await createUser(c.get("deps"), org.id, input, actor(c));
    return c.redirect(`/manager/organizations/${org.id}/users?notice=user-added`, 303);
  });

  app.get("/manager/organizations/:org/users/:user/remove", async (c) => {
    const { org, user } = await userFor(c);
    return confirmPage(c, orgCrumbs(c, org, true), confirmations.removeUser(user), {
      action: `/manager/organizations/${org.id}/users/${user.id}/remove`,
      cancel: `/manager/organizations/${org.id}/users`,
    });
  });

  app.post("/manager/organizations/:org/users/:user/remove", async (c) => {
    const org = await orgFor(c);
    await removeUser(c.get("deps"), org.id, c.req.param("user"), actor(c));
    return c.redirect(`/manager/organizations/${org.id}/users?notice=user-removed`, 303);
  });

  // Client credentials of a user.
  app.get("/manager/organizations/:org/users/:user/client-credentials", async (c) => {
    const { org, user } = await userFor(c);
    const creds = await listClientCredentials(c.get("deps"), org.id, user.id, PAGE_SIZE);
    return page(
      c,
      "Client credentials",
      credentialCrumbs(c, org, user),
      <ClientCredentials
        base={credentialsPath(org.id, user.id)}
        user={user}
        credentials={creds.items.map(clientCredentialView)}
        csrf={csrf(c)}
      />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.post("/manager/organizations/:org/users/:user/client-credentials", async (c) => {
    const { org, user } = await userFor(c);
    const fields = await form(c);
    const jwt = fields.token_endpoint_auth_method === "private_key_jwt";
    const input = parseInput(CreateClientCredentialInput, {
      ...optional(fields, ["name"]),
      ...(jwt ? { token_endpoint_auth_method: "private_key_jwt", jwks: jwksFrom(fields) } : {}),
      ...policyFrom(fields),
    });
    const { record, secret } = await createClientCredential(c.get("deps"), org.id, user.id, input, actor(c));
    return page(
      c,
      "New client credentials",
      [...credentialCrumbs(c, org, user, true), { label: "New" }],
      <ClientCredentialCreated base={credentialsPath(org.id, user.id)} clientId={record.client_id} secret={secret} />,
    );
  });

  app.get("/manager/organizations/:org/users/:user/client-credentials/:client/edit", async (c) => {
    const { org, user } = await userFor(c);
    const cred = clientCredentialView(await getClientCredential(c.get("deps"), org.id, user.id, c.req.param("client")));
    const base = credentialsPath(org.id, user.id);
    return page(
      c,
      `Client credentials ${cred.client_id}`,
      [...credentialCrumbs(c, org, user, true), { label: cred.name ?? cred.client_id }],
      <ClientCredentialEdit action={`${base}/${cred.client_id}`} cancel={base} credential={cred} csrf={csrf(c)} />,
    );
  });

  app.post("/manager/organizations/:org/users/:user/client-credentials/:client", async (c) => {
    const { org, user } = await userFor(c);
    const cred = await getClientCredential(c.get("deps"), org.id, user.id, c.req.param("client"));
    const fields = await form(c);
    const name = typeof fields.name === "string" && fields.name.trim() !== "" ? fields.name : null;
    const input = parseInput(UpdateClientCredentialInput, {
      name,
      ...(cred.auth_method === "private_key_jwt" ? { jwks: jwksFrom(fields) } : {}),
      ...policyFrom(fields, true),
    });
    await updateClientCredential(c.get("deps"), org.id, user.id, cred.client_id, input, actor(c));
    return c.redirect(`${credentialsPath(org.id, user.id)}?notice=credential-saved`, 303);
  });

  app.get("/manager/organizations/:org/users/:user/client-credentials/:client/revoke", async (c) => {
    const { org, user } = await userFor(c);
    const cred = await getClientCredential(c.get("deps"), org.id, user.id, c.req.param("client"));
    const base = credentialsPath(org.id, user.id);
    return confirmPage(c, credentialCrumbs(c, org, user, true), confirmations.revokeClientCredential(cred, user), {
      action: `${base}/${cred.client_id}/revoke`,
      cancel: base,
    });
  });

  app.post("/manager/organizations/:org/users/:user/client-credentials/:client/revoke", async (c) => {
    const { org, user } = await userFor(c);
    await revokeClientCredential(c.get("deps"), org.id, user.id, c.req.param("client"), actor(c));
    return c.redirect(`${credentialsPath(org.id, user.id)}?notice=credential-revoked`, 303);
  });

  // API keys (operators only: spec 2.2, keys come from the support team).
  app.get("/manager/organizations/:org/api-keys", async (c) => {
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

  app.post("/manager/organizations/:org/api-keys", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const f = await form(c);
    const input = parseInput(CreateApiKeyInput, { ...optional(f, ["name", "location_hint"]), limits: limitsFrom(f, false) });
    const { secret } = await createApiKey(c.get("deps"), org.id, input, actor(c));
    return page(
      c,
      "New API key",
      [...orgCrumbs(c, org, true), { label: "API keys", href: `/manager/organizations/${org.id}/api-keys` }, { label: "New" }],
      <ApiKeyIssued org={org} secret={secret} />,
    );
  });

  app.get("/manager/organizations/:org/api-keys/:key", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const deps = c.get("deps");
    const record = await getApiKey(deps, org.id, c.req.param("key"));
    const key = apiKeyView(record, deps.config.defaultLimits);
    const usage = (await keyUsage(deps, record)) ?? emptyUsage(key.limits, deps.now());
    return page(
      c,
      `API key ${key.hint}`,
      [...orgCrumbs(c, org, true), { label: "API keys", href: `/manager/organizations/${org.id}/api-keys` }, { label: key.hint }],
      <ApiKeyDetail
        base={`/manager/organizations/${org.id}/api-keys/${key.id}`}
        apiKey={key}
        usage={usage}
        resetsAt={isoTime(usage.day.resetAt)}
        csrf={csrf(c)}
      />,
    );
  });

  app.post("/manager/organizations/:org/api-keys/:key/limits", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const input = parseInput(UpdateApiKeyInput, { limits: limitsFrom(await form(c), true) });
    await updateApiKey(c.get("deps"), org.id, c.req.param("key"), input, actor(c));
    return c.redirect(`/manager/organizations/${org.id}/api-keys?notice=limits-saved`, 303);
  });

  app.get("/manager/organizations/:org/api-keys/:key/revoke", async (c) => {
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

  app.post("/manager/organizations/:org/api-keys/:key/revoke", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    await revokeApiKey(c.get("deps"), org.id, c.req.param("key"), actor(c));
    return c.redirect(`/manager/organizations/${org.id}/api-keys?notice=key-revoked`, 303);
  });

  // Webhook configurations: health, edits, test events, and each delivery's attempts with a re-send.
  app.get("/manager/organizations/:org/webhooks", async (c) => {
    const org = await orgFor(c);
    const configs = await listWebhookConfigurations(c.get("deps"), org.id, PAGE_SIZE);
    return page(
      c,
      "Webhook configurations",
      [...orgCrumbs(c, org, true), { label: "Webhook configurations" }],
      <WebhookConfigurations base={`/manager/organizations/${org.id}/webhooks`} configs={configs.items} />,
    );
  });

  app.get("/manager/organizations/:org/webhooks/:id", async (c) => {
    const { org, config } = await webhookFor(c);
    const deliveries = await listDeliveries(c.get("deps"), org.id, config.id, { limit: 25 });
    return page(
      c,
      `Webhook configuration ${config.id}`,
      webhookCrumbs(c, org),
      <WebhookConfigurationDetail base={webhookPath(org.id, config.id)} config={config} deliveries={deliveries.items} csrf={csrf(c)} />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.post("/manager/organizations/:org/webhooks/:id", async (c) => {
    const { org, config } = await webhookFor(c);
    const fields = await form(c);
    const text = (name: string) => (typeof fields[name] === "string" ? (fields[name] as string).trim() : "");
    const events = text("events")
      .split(",")
      .map((e) => e.trim())
      .filter((e) => e !== "");
    // No status here: disabling goes through its confirmation, re-enabling through its button.
    const input = parseInput(UpdateWebhookConfigurationInput, {
      url: text("url"),
      oauth: {
        token_url: text("token_url"),
        client_id: text("client_id"),
        ...(text("client_secret") !== "" ? { client_secret: text("client_secret") } : {}),
      },
      events: events.length === 0 ? null : events,
      description: text("description") === "" ? null : text("description"),
      // A number field posts text; parseInput's schema says what a valid limit is.
      rate_limit: text("rate_limit") === "" ? null : Number(text("rate_limit")),
      ordered: fields.ordered === "on",
      token_cache: fields.token_cache === "on",
    });
    await updateWebhookConfiguration(c.get("deps"), org.id, config.id, input, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=webhook-saved`, 303);
  });

  app.get("/manager/organizations/:org/webhooks/:id/disable", async (c) => {
    const { org, config } = await webhookFor(c);
    const base = webhookPath(org.id, config.id);
    return confirmPage(c, webhookCrumbs(c, org, config.id), confirmations.disableWebhook(config), {
      action: `${base}/disable`,
      cancel: base,
    });
  });

  app.post("/manager/organizations/:org/webhooks/:id/disable", async (c) => {
    const { org, config } = await webhookFor(c);
    await updateWebhookConfiguration(c.get("deps"), org.id, config.id, { status: "disabled" }, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=webhook-disabled`, 303);
  });

  app.post("/manager/organizations/:org/webhooks/:id/enable", async (c) => {
    const { org, config } = await webhookFor(c);
    await updateWebhookConfiguration(c.get("deps"), org.id, config.id, { status: "active" }, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=webhook-enabled`, 303);
  });

  app.post("/manager/organizations/:org/webhooks/:id/test", async (c) => {
    const { org, config } = await webhookFor(c);
    await sendTestEvent(c.get("deps"), org.id, config.id, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=test-sent`, 303);
  });

  app.get("/manager/organizations/:org/webhooks/:id/deliveries/:delivery", async (c) => {
    const { org, config, delivery } = await deliveryFor(c);
    const base = `${webhookPath(org.id, config.id)}/deliveries/${delivery.id}`;
    return page(
      c,
      `Delivery ${delivery.id}`,
      [...webhookCrumbs(c, org, config.id), { label: `Delivery ${delivery.id}` }],
      <DeliveryDetail base={base} delivery={delivery} resendable={canResend(c.get("deps"), config, delivery)} />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.get("/manager/organizations/:org/webhooks/:id/deliveries/:delivery/resend", async (c) => {
    const { org, config, delivery } = await deliveryFor(c);
    const base = `${webhookPath(org.id, config.id)}/deliveries/${delivery.id}`;
    return confirmPage(
      c,
      [...webhookCrumbs(c, org, config.id), { label: `Delivery ${delivery.id}`, href: base }],
      confirmations.resendDelivery(delivery, config),
      { action: `${base}/resend`, cancel: base },
    );
  });

  app.post("/manager/organizations/:org/webhooks/:id/deliveries/:delivery/resend", async (c) => {
    const { org, config, delivery } = await deliveryFor(c);
    await retryDelivery(c.get("deps"), org.id, delivery.id, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}/deliveries/${delivery.id}?notice=resent`, 303);
  });

  app.all("/manager/*", () => {
    throw new ApiError("not_found", "There is no such page.");
  });
  return app;
}

const notices: Record<string, string> = {
  "user-added": "User added.",
  "org-deleted": "Organization deleted: everything it held has stopped working; its data is erased after 30 days.",
  "user-removed": "User removed; their client credentials were revoked.",
  "credential-revoked": "Client credentials revoked.",
  "credential-saved": "Client credentials saved; the next token request everywhere follows them.",
  "key-revoked": "API key revoked.",
  "limits-saved": "Limits saved; they apply from the next request.",
  "token-revoked": "Administrator token revoked; its sessions have ended.",
  "webhook-saved": "Webhook configuration saved.",
  "webhook-disabled": "Webhook configuration disabled; nothing is sent to it until it is re-enabled.",
  "webhook-enabled": "Webhook configuration re-enabled; its health count starts again.",
  "test-sent": "Test event published; its delivery is listed below.",
  resent: "Re-sent; the new attempt appears here once it is made.",
};

const home = (s: Session) => (s.role === "operator" ? "/manager/organizations" : `/manager/organizations/${s.org}`);
const credentialsPath = (orgId: string, userId: string) => `/manager/organizations/${orgId}/users/${userId}/client-credentials`;

async function form(c: C): Promise<Record<string, unknown>> {
  const cached = c.get("form");
  if (cached) return cached;
  const fields = await readFields(c.req.raw, ["form"], 16 * 1024);
  c.set("form", fields);
  return fields;
}

/** The JWK Set textarea, parsed as JSON (its shape is then checked by the input schema). */
function jwksFrom(fields: Record<string, unknown>): unknown {
  const text = typeof fields.jwks === "string" ? fields.jwks.trim() : "";
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidInput({ label: "form", issues: [{ path: ["jwks"], text: " is not valid JSON" }] });
  }
}

/**
 * The scope checkboxes and the DPoP checkbox; every scope checked means no restriction. A post
 * without the scopes fieldset (`scopes-shown`) leaves the scopes as they are (all, on create).
 */
function policyFrom(fields: Record<string, unknown>, update = false): { scopes?: string[] | null; dpop_bound_access_tokens: boolean } {
  const scopes = ALL_SCOPES.filter((s) => fields[`scope-${s}`] === "on");
  const all = fields["scopes-shown"] !== "1" || scopes.length === ALL_SCOPES.length;
  return { ...(all ? (update ? { scopes: null } : {}) : { scopes }), dpop_bound_access_tokens: fields.dpop === "on" };
}

/** Empty form fields mean "not given" for optional inputs. */
function optional(fields: Record<string, unknown>, names: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const value = fields[name];
    if (typeof value === "string" && value.trim() !== "") out[name] = value;
  }
  return out;
}

/** Number inputs to limits; empty means default (null on update, absent on create). */
function limitsFrom(fields: Record<string, unknown>, update: boolean): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const name of ["per_second", "per_day"]) {
    const value = typeof fields[name] === "string" ? (fields[name] as string).trim() : "";
    if (value === "") {
      if (update) out[name] = null;
    } else out[name] = /^\d{1,10}$/.test(value) ? Number(value) : Number.NaN;
  }
  return out;
}

function operatorOnly(c: C): void {
  // Organization administrators are told nothing exists here, as for another organization.
  if (c.get("session").role !== "operator") throw new ApiError("not_found", "There is no such page.");
}

async function orgFor(c: C) {
  const orgId = c.req.param("org") ?? "";
  if (!canAccess(c.get("session"), orgId)) throw new ApiError("not_found", "There is no such page.");
  return getOrganization(c.get("deps"), orgId);
}

const webhookPath = (orgId: string, id: string) => `/manager/organizations/${orgId}/webhooks/${id}`;

async function webhookFor(c: C) {
  const org = await orgFor(c);
  return { org, config: await getWebhookConfiguration(c.get("deps"), org.id, c.req.param("id") ?? "") };
}

/** A delivery of the configuration in the URL; one of another configuration is not found here. */
async function deliveryFor(c: C) {
  const { org, config } = await webhookFor(c);
  const delivery = await getDelivery(c.get("deps"), org.id, c.req.param("delivery") ?? "");
  if (delivery.webhook_configuration_id !== config.id) throw new ApiError("not_found", "There is no such page.");
  return { org, config, delivery };
}

function webhookCrumbs(c: C, org: { id: string; name: string }, configId?: string): Crumb[] {
  return [
    ...orgCrumbs(c, org, true),
    { label: "Webhook configurations", href: `/manager/organizations/${org.id}/webhooks` },
    ...(configId ? [{ label: `Configuration ${configId}`, href: webhookPath(org.id, configId) }] : [{ label: "Configuration" }]),
  ];
}

async function userFor(c: C) {
  const org = await orgFor(c);
  return { org, user: await getUser(c.get("deps"), org.id, c.req.param("user") ?? "") };
}

function orgCrumbs(c: C, org: { id: string; name: string }, link = false): Crumb[] {
  const crumbs: Crumb[] = c.get("session").role === "operator" ? [{ label: "Organizations", href: "/manager/organizations" }] : [];
  crumbs.push({ label: `${org.name}: Organization Settings`, ...(link ? { href: `/manager/organizations/${org.id}` } : {}) });
  return crumbs;
}

function credentialCrumbs(c: C, org: { id: string; name: string }, user: { id: string; name: string }, link = false): Crumb[] {
  return [
    ...orgCrumbs(c, org, true),
    { label: "Users", href: `/manager/organizations/${org.id}/users` },
    { label: `${user.name}: Client credentials`, ...(link ? { href: credentialsPath(org.id, user.id) } : {}) },
  ];
}

const csrf = (c: C) => c.get("session").csrf;
const actor = (c: C) => actorOf(c.get("session"));
const who = (s: Session) => (s.role === "operator" ? "Operator" : "Organization administrator");

function page(c: C, title: string, crumbs: Crumb[], body: Child, notice?: string): Response | Promise<Response> {
  const s = c.get("session");
  return c.html(
    <Page title={title} nonce={pageNonce(c)} crumbs={crumbs} csrf={s.csrf} who={who(s)} notice={notice}>
      {body}
    </Page>,
  );
}

function confirmPage(c: C, crumbs: Crumb[], confirmation: Confirmation, to: { action: string; cancel: string }) {
  return page(c, confirmation.title, [...crumbs, { label: "Confirm" }], <Confirm {...confirmation} {...to} csrf={csrf(c)} />);
}

/** The sign-in page, with a fresh double-submit pair (login-csrf.ts); after a failed attempt, with why. */
async function signInPage(c: C, status: 200 | 400 | 401 | 403, error?: string): Promise<Response> {
  const deps = c.get("deps");
  const { nonce, token } = await issueLoginCsrf(deps.config.signingKeys, deps.now());
  setCookie(c, LOGIN_CSRF_COOKIE, nonce, { ...COOKIE, maxAge: LOGIN_CSRF_TTL_SECONDS });
  return c.html(
    <Page title="Sign in" nonce={pageNonce(c)}>
      <SignInForm loginCsrf={token} error={error} />
    </Page>,
    status,
  );
}
