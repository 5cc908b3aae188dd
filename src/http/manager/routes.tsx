/**
 * The manager app at /manager (spec 2.1, 5.3): Organization Settings -> Users -> Client
 * credentials, plus API keys (operators only) and a read-only view of webhook configurations.
 * Server-rendered, usable without JavaScript. Every page sends a nonce-based CSP; every POST
 * carries the session's CSRF token; an organization administrator's session reaches its own
 * organization only (anything else is a 404, whatever the URL or form says). Actions call the
 * same store functions as the operator API.
 */
import type { Context } from "hono";
import { Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Child } from "hono/jsx";
import { createApiKey, revokeApiKey, updateApiKey } from "../../auth/api-keys";
import { removeUser } from "../../auth/users";
import { ApiError } from "../../errors";
import { constantTimeEqual, randomToken } from "../../lib/crypto";
import { isoTime } from "../../lib/time";
import { describeError, log } from "../../log";
import { keyUsage } from "../../ratelimit/service";
import {
  CreateApiKeyInput,
  CreateClientCredentialInput,
  CreateOrganizationInput,
  CreateUserInput,
  MintOrgAdminTokenInput,
  UpdateApiKeyInput,
} from "../../schemas/admin";
import { parseInput } from "../../schemas/validate";
import { apiKeyView, getApiKey, listApiKeys } from "../../stores/api-keys";
import {
  clientCredentialView,
  createClientCredential,
  getClientCredential,
  listClientCredentials,
  revokeClientCredential,
} from "../../stores/client-credentials";
import { findOrgAdminToken, mintOrgAdminToken } from "../../stores/org-admin-tokens";
import { createOrganization, getOrganization, listOrganizations } from "../../stores/organizations";
import { createUser, getUser, listUsers } from "../../stores/users";
import { listWebhookConfigurations } from "../../webhooks/configurations";
import { listDeliveries } from "../../webhooks/deliveries";
import { readFields } from "../body";
import type { AppEnv } from "../context";
import { provideDeps } from "../middleware/deps";
import { setResponseHeaders } from "../middleware/headers";
import { canAccess, newSession, openSession, SESSION_COOKIE, SESSION_TTL_SECONDS, type Session, sealSession } from "./session";
import { type Crumb, Field, Page, PostForm, SecretOnce, Status, when } from "./views";

type ManagerEnv = {
  Bindings: AppEnv["Bindings"];
  /** `form`: a POST's fields, read once (the CSRF check and the handler both need them). */
  Variables: AppEnv["Variables"] & { nonce: string; session: Session; form: Record<string, unknown> };
};
type C = Context<ManagerEnv>;

const LOGIN_CSRF_COOKIE = "kw_login_csrf";
const PAGE_SIZE = { limit: 100 };

export function managerApp(now: () => number): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();

  // Scoped to /manager: this app is mounted at the root, where "*" would mean every request.
  app.use("/manager/*", provideDeps(now) as never, async (c, next) => {
    const nonce = randomToken(18);
    c.set("nonce", nonce);
    await next();
    setResponseHeaders(c, {
      "Content-Security-Policy": `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
      "X-Content-Type-Options": "nosniff",
      "X-Frame-Options": "DENY",
      "Referrer-Policy": "no-referrer",
      "Cache-Control": "no-store",
    });
  });

  app.onError((err, c) => {
    const e = err instanceof ApiError ? err : null;
    if (!e || e.detail !== undefined) log.error("manager error", { path: c.req.path, detail: describeError(err) });
    const status = e?.status ?? 500;
    const message = e ? e.developerMessage : "Something went wrong on our side. It has been logged.";
    const session = c.get("session");
    return c.html(
      <Page
        title={status === 404 ? "Not found" : status === 403 ? "Not allowed" : "That did not work"}
        nonce={c.get("nonce") ?? ""}
        {...(session ? { csrf: session.csrf, who: session.role === "operator" ? "Operator" : "Organization administrator" } : {})}
      >
        <p role="alert">{message}</p>
        <p>
          <a href="/manager">Back to the start</a>
        </p>
      </Page>,
      status as 400,
    );
  });

  // Sign-in: the operator with ADMIN_TOKEN, an organization's administrator with a minted token.
  app.get("/manager/sign-in", (c) => {
    const loginCsrf = randomToken(18);
    setCookie(c, LOGIN_CSRF_COOKIE, loginCsrf, { httpOnly: true, secure: true, sameSite: "Strict", path: "/manager", maxAge: 600 });
    return c.html(
      <Page title="Sign in" nonce={c.get("nonce")}>
        <form method="post" action="/manager/sign-in" class="card">
          <input type="hidden" name="csrf" value={loginCsrf} />
          <Field
            id="token"
            type="password"
            label="Access token"
            hint="the operator's ADMIN_TOKEN, or an organization administrator token"
            required
          />
          <button type="submit">Sign in</button>
        </form>
      </Page>,
    );
  });

  app.post("/manager/sign-in", async (c) => {
    const fields = await form(c);
    const expected = getCookie(c, LOGIN_CSRF_COOKIE);
    if (!expected || !(await constantTimeEqual(String(fields.csrf ?? ""), expected))) {
      throw new ApiError("forbidden", "The sign-in form expired. Open the sign-in page again.");
    }
    const deps = c.get("deps");
    const token = String(fields.token ?? "").trim();
    let session: Session | null = null;
    if (await constantTimeEqual(token, deps.config.adminToken)) session = newSession("operator", null, null, deps.now());
    else {
      const admin = await findOrgAdminToken(deps, token);
      if (admin) session = newSession("org_admin", admin.organization_id, admin.id, deps.now());
    }
    if (!session) {
      return c.html(
        <Page title="Sign in" nonce={c.get("nonce")}>
          <p class="warning" role="alert">
            That token was not accepted.
          </p>
          <p>
            <a href="/manager/sign-in">Try again</a>
          </p>
        </Page>,
        401,
      );
    }
    deleteCookie(c, LOGIN_CSRF_COOKIE, { path: "/manager", secure: true });
    setCookie(c, SESSION_COOKIE, await sealSession(deps.config.signingKeys, session), {
      httpOnly: true,
      secure: true,
      sameSite: "Strict",
      path: "/manager",
      maxAge: SESSION_TTL_SECONDS,
    });
    return c.redirect(home(session), 303);
  });

  // Everything below needs a session.
  app.use("/manager/*", async (c, next) => {
    const deps = c.get("deps");
    const session = await openSession(deps.config.signingKeys, getCookie(c, SESSION_COOKIE), deps.now());
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

  app.post("/manager/sign-out", (c) => {
    deleteCookie(c, SESSION_COOKIE, { path: "/manager", secure: true });
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
      <>
        <table>
          <caption class="hint">Every organization (first 100)</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Id</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {orgs.items.map((o) => (
              <tr>
                <td>
                  <a href={`/manager/organizations/${o.id}`}>{o.name}</a>
                </td>
                <td>
                  <code>{o.id}</code>
                </td>
                <td>{when(o.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <h2>Create an organization</h2>
        <PostForm action="/manager/organizations" csrf={c.get("session").csrf} label="Create an organization">
          <Field id="name" label="Name" required />
          <button type="submit">Create organization</button>
        </PostForm>
      </>,
    );
  });

  app.post("/manager/organizations", async (c) => {
    operatorOnly(c);
    const org = await createOrganization(c.get("deps"), parseInput(CreateOrganizationInput, { name: (await form(c)).name }));
    return c.redirect(`/manager/organizations/${org.id}?notice=created`, 303);
  });

  // Organization Settings.
  app.get("/manager/organizations/:org", async (c) => {
    const org = await orgFor(c);
    const base = `/manager/organizations/${org.id}`;
    const operator = c.get("session").role === "operator";
    return page(
      c,
      "Organization Settings",
      orgCrumbs(c, org),
      <>
        <p>
          <strong>{org.name}</strong> <code>{org.id}</code>
        </p>
        <ul class="links">
          <li>
            <a href={`${base}/users`}>Users</a> and their client credentials
          </li>
          {operator && (
            <li>
              <a href={`${base}/api-keys`}>API keys</a> (operators only)
            </li>
          )}
          <li>
            <a href={`${base}/webhooks`}>Webhook configurations</a> and recent deliveries
          </li>
        </ul>
        {operator && (
          <>
            <h2>Administrator access</h2>
            <p>Mint a token that signs this organization's administrator into this app, for this organization only.</p>
            <PostForm action={`${base}/admin-tokens`} csrf={c.get("session").csrf} label="Mint an administrator token">
              <Field id="name" label="Token name" hint="optional" />
              <button type="submit">Mint administrator token</button>
            </PostForm>
          </>
        )}
      </>,
      c.req.query("notice") === "created" ? "Organization created." : undefined,
    );
  });

  app.post("/manager/organizations/:org/admin-tokens", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const input = parseInput(MintOrgAdminTokenInput, optional(await form(c), ["name"]));
    const { token } = await mintOrgAdminToken(c.get("deps"), org.id, input);
    return page(
      c,
      "Administrator token",
      [...orgCrumbs(c, org, true), { label: "Administrator token" }],
      <>
        <SecretOnce id="admin-token" label="administrator token" value={token} />
        <p>Give it to the organization's administrator: signing in with it opens this organization only.</p>
        <p>
          <a href={`/manager/organizations/${org.id}`}>Back to Organization Settings</a>
        </p>
      </>,
    );
  });

  // Users.
  app.get("/manager/organizations/:org/users", async (c) => {
    const org = await orgFor(c);
    const users = await listUsers(c.get("deps"), org.id, PAGE_SIZE);
    const base = `/manager/organizations/${org.id}/users`;
    return page(
      c,
      "Users",
      [...orgCrumbs(c, org, true), { label: "Users" }],
      <>
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">E-mail</th>
              <th scope="col">Created</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {users.items.map((u) => (
              <tr>
                <td>{u.name}</td>
                <td>{u.email ?? "-"}</td>
                <td>{when(u.created_at)}</td>
                <td>
                  <a href={`${base}/${u.id}/client-credentials`}>
                    Client credentials<span class="skip"> of {u.name}</span>
                  </a>
                  {" | "}
                  <a href={`${base}/${u.id}/remove`}>
                    Remove<span class="skip"> {u.name}</span>
                  </a>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {users.items.length === 0 && <p>No users yet.</p>}
        <h2>Add a user</h2>
        <PostForm action={base} csrf={c.get("session").csrf} label="Add a user">
          <Field id="name" label="Name" required />
          <Field id="email" label="E-mail" type="email" hint="optional" />
          <button type="submit">Add user</button>
        </PostForm>
      </>,
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.post("/manager/organizations/:org/users", async (c) => {
    const org = await orgFor(c);
    const input = parseInput(CreateUserInput, optional(await form(c), ["name", "email"]));
    await createUser(c.get("deps"), org.id, input);
    return c.redirect(`/manager/organizations/${org.id}/users?notice=user-added`, 303);
  });

  app.get("/manager/organizations/:org/users/:user/remove", async (c) => {
    const org = await orgFor(c);
    const user = await getUser(c.get("deps"), org.id, c.req.param("user"));
    return confirmPage(
      c,
      `Remove ${user.name}?`,
      orgCrumbs(c, org, true),
      `/manager/organizations/${org.id}/users/${user.id}/remove`,
      "Removing the user revokes all of their client credentials: access tokens issued with them stop working.",
      "Remove user",
      `/manager/organizations/${org.id}/users`,
    );
  });

  app.post("/manager/organizations/:org/users/:user/remove", async (c) => {
    const org = await orgFor(c);
    await removeUser(c.get("deps"), org.id, c.req.param("user"));
    return c.redirect(`/manager/organizations/${org.id}/users?notice=user-removed`, 303);
  });

  // Client credentials of a user.
  app.get("/manager/organizations/:org/users/:user/client-credentials", async (c) => {
    const { org, user } = await userFor(c);
    const creds = await listClientCredentials(c.get("deps"), org.id, user.id, PAGE_SIZE);
    const base = credentialsPath(org.id, user.id);
    return page(
      c,
      "Client credentials",
      credentialCrumbs(c, org, user),
      <>
        <p>
          Client credentials of <strong>{user.name}</strong>. API clients exchange them for access tokens at <code>POST /v1/oauth</code>.
        </p>
        <table>
          <thead>
            <tr>
              <th scope="col">client_id</th>
              <th scope="col">Name</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">Status</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {creds.items.map(clientCredentialView).map((cr) => (
              <tr>
                <td>
                  <code>{cr.client_id}</code>
                </td>
                <td>{cr.name ?? "-"}</td>
                <td>{when(cr.created_at)}</td>
                <td>{when(cr.last_used_at)}</td>
                <td>
                  <Status value={cr.status} />
                </td>
                <td>
                  {cr.status === "active" ? (
                    <a href={`${base}/${cr.client_id}/revoke`}>
                      Revoke<span class="skip"> {cr.client_id}</span>
                    </a>
                  ) : (
                    when(cr.revoked_at)
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {creds.items.length === 0 && <p>No client credentials yet.</p>}
        <h2>Create client credentials</h2>
        <PostForm action={base} csrf={c.get("session").csrf} label="Create client credentials">
          <Field id="name" label="Name" hint="optional, e.g. the application using it" />
          <button type="submit">Create client credentials</button>
        </PostForm>
      </>,
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.post("/manager/organizations/:org/users/:user/client-credentials", async (c) => {
    const { org, user } = await userFor(c);
    const input = parseInput(CreateClientCredentialInput, optional(await form(c), ["name"]));
    const { record, secret } = await createClientCredential(c.get("deps"), org.id, user.id, input);
    return page(
      c,
      "New client credentials",
      [...credentialCrumbs(c, org, user, true), { label: "New" }],
      <>
        <div class="card">
          <label for="client-id">client_id</label>
          <input id="client-id" class="secret" type="text" readonly value={record.client_id} />
        </div>
        <SecretOnce id="client-secret" label="client_secret" value={secret} />
        <p>
          <a href={credentialsPath(org.id, user.id)}>Back to the client credentials</a>
        </p>
      </>,
    );
  });

  app.get("/manager/organizations/:org/users/:user/client-credentials/:client/revoke", async (c) => {
    const { org, user } = await userFor(c);
    const cred = await getClientCredential(c.get("deps"), org.id, user.id, c.req.param("client"));
    const base = credentialsPath(org.id, user.id);
    return confirmPage(
      c,
      `Revoke ${cred.client_id}?`,
      credentialCrumbs(c, org, user, true),
      `${base}/${cred.client_id}/revoke`,
      "Revoking stops this client from obtaining tokens, and access tokens it already has stop working.",
      "Revoke client credentials",
      base,
    );
  });

  app.post("/manager/organizations/:org/users/:user/client-credentials/:client/revoke", async (c) => {
    const { org, user } = await userFor(c);
    await revokeClientCredential(c.get("deps"), org.id, user.id, c.req.param("client"));
    return c.redirect(`${credentialsPath(org.id, user.id)}?notice=credential-revoked`, 303);
  });

  // API keys (operators only: spec 2.2, keys come from the support team).
  app.get("/manager/organizations/:org/api-keys", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const deps = c.get("deps");
    const keys = await listApiKeys(deps, org.id, PAGE_SIZE);
    const usage = await Promise.all(keys.items.map((k) => (k.revoked_at === null ? keyUsage(deps, k.id) : null)));
    const base = `/manager/organizations/${org.id}/api-keys`;
    return page(
      c,
      "API keys",
      [...orgCrumbs(c, org, true), { label: "API keys" }],
      <>
        <table>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Name</th>
              <th scope="col">Limits</th>
              <th scope="col">Used today</th>
              <th scope="col">Status</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {keys.items.map((k, i) => {
              const v = apiKeyView(k, deps.config.defaultLimits);
              const u = usage[i];
              return (
                <tr>
                  <td>
                    <code>{v.hint}</code>
                  </td>
                  <td>{v.name ?? "-"}</td>
                  <td>{u ? `${u.second.limit}/s, ${u.day.limit}/day` : `${v.limits.per_second}/s, ${v.limits.per_day}/day`}</td>
                  <td>{u ? `${u.day.used} (${u.day.remaining} left)` : "-"}</td>
                  <td>
                    <Status value={v.status} />
                  </td>
                  <td>
                    {v.status === "active" ? (
                      <a href={`${base}/${v.id}`}>
                        Limits and revocation<span class="skip"> for {v.hint}</span>
                      </a>
                    ) : (
                      when(v.revoked_at)
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
        <h2>Issue an API key</h2>
        <PostForm action={base} csrf={c.get("session").csrf} label="Issue an API key">
          <Field id="name" label="Name" hint="optional" />
          <Field
            id="per_second"
            label="Requests per second"
            type="number"
            min={1}
            hint={`empty for the default, ${deps.config.defaultLimits.per_second}`}
          />
          <Field
            id="per_day"
            label="Requests per day"
            type="number"
            min={1}
            hint={`empty for the default, ${deps.config.defaultLimits.per_day}`}
          />
          <button type="submit">Issue API key</button>
        </PostForm>
      </>,
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.post("/manager/organizations/:org/api-keys", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const f = await form(c);
    const input = parseInput(CreateApiKeyInput, { ...optional(f, ["name"]), limits: limitsFrom(f, false) });
    const { secret } = await createApiKey(c.get("deps"), org.id, input);
    return page(
      c,
      "New API key",
      [...orgCrumbs(c, org, true), { label: "API keys", href: `/manager/organizations/${org.id}/api-keys` }, { label: "New" }],
      <>
        <SecretOnce id="api-key" label="API key" value={secret} />
        <p>
          <a href={`/manager/organizations/${org.id}/api-keys`}>Back to the API keys</a>
        </p>
      </>,
    );
  });

  app.get("/manager/organizations/:org/api-keys/:key", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const deps = c.get("deps");
    const key = apiKeyView(await getApiKey(deps, org.id, c.req.param("key")), deps.config.defaultLimits);
    const usage = await keyUsage(deps, key.id);
    const base = `/manager/organizations/${org.id}/api-keys/${key.id}`;
    return page(
      c,
      `API key ${key.hint}`,
      [...orgCrumbs(c, org, true), { label: "API keys", href: `/manager/organizations/${org.id}/api-keys` }, { label: key.hint }],
      <>
        <p>
          Used today: <strong>{usage.day.used}</strong> of {usage.day.limit} (resets {when(isoTime(usage.day.resetAt))}).
        </p>
        <h2>Change limits</h2>
        <PostForm action={`${base}/limits`} csrf={c.get("session").csrf} label="Change limits">
          <Field
            id="per_second"
            label="Requests per second"
            type="number"
            min={1}
            value={String(usage.second.limit)}
            hint="empty restores the default"
          />
          <Field
            id="per_day"
            label="Requests per day"
            type="number"
            min={1}
            value={String(usage.day.limit)}
            hint="empty restores the default"
          />
          <button type="submit">Save limits</button>
        </PostForm>
        {key.status === "active" && (
          <>
            <h2>Revoke</h2>
            <PostForm action={`${base}/revoke`} csrf={c.get("session").csrf} label="Revoke this API key">
              <p>Every request with this key is refused from then on. This cannot be undone.</p>
              <button type="submit" class="danger">
                Revoke API key
              </button>
            </PostForm>
          </>
        )}
      </>,
    );
  });

  app.post("/manager/organizations/:org/api-keys/:key/limits", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    const input = parseInput(UpdateApiKeyInput, { limits: limitsFrom(await form(c), true) });
    await updateApiKey(c.get("deps"), org.id, c.req.param("key"), input);
    return c.redirect(`/manager/organizations/${org.id}/api-keys?notice=limits-saved`, 303);
  });

  app.post("/manager/organizations/:org/api-keys/:key/revoke", async (c) => {
    operatorOnly(c);
    const org = await orgFor(c);
    await revokeApiKey(c.get("deps"), org.id, c.req.param("key"));
    return c.redirect(`/manager/organizations/${org.id}/api-keys?notice=key-revoked`, 303);
  });

  // Webhook configurations (read-only) with recent delivery outcomes.
  app.get("/manager/organizations/:org/webhooks", async (c) => {
    const org = await orgFor(c);
    const deps = c.get("deps");
    const configs = await listWebhookConfigurations(deps, org.id, PAGE_SIZE);
    const recent = await Promise.all(configs.items.map((w) => listDeliveries(deps, org.id, w.id, { limit: 5 })));
    return page(
      c,
      "Webhook configurations",
      [...orgCrumbs(c, org, true), { label: "Webhook configurations" }],
      <>
        {configs.items.length === 0 && <p>No webhook configurations. They are created through the API.</p>}
        {configs.items.map((w, i) => (
          <section class="card" aria-labelledby={`whk-${w.id}`}>
            <h2 id={`whk-${w.id}`}>
              <code>{w.url}</code>
            </h2>
            <p>
              <Status value={w.status} /> {w.disabled_reason ? `(${w.disabled_reason})` : ""} Events:{" "}
              {w.events ? w.events.join(", ") : "all"}. Token URL: <code>{w.oauth.token_url}</code>
            </p>
            <table>
              <caption class="hint">Recent deliveries</caption>
              <thead>
                <tr>
                  <th scope="col">Delivery</th>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col">Last attempt</th>
                </tr>
              </thead>
              <tbody>
                {(recent[i]?.items ?? []).map((d) => {
                  const last = d.attempts.at(-1);
                  return (
                    <tr>
                      <td>
                        <code>{d.id}</code>
                      </td>
                      <td>{d.event_type}</td>
                      <td>
                        <Status value={d.status} />
                      </td>
                      <td>{last ? `${when(last.at)}: ${last.step} ${last.http_status ?? ""} ${last.error ?? last.outcome}` : "-"}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </section>
        ))}
      </>,
    );
  });

  app.all("/manager/*", () => {
    throw new ApiError("not_found", "There is no such page.");
  });
  return app;
}

const notices: Record<string, string> = {
  "user-added": "User added.",
  "user-removed": "User removed; their client credentials were revoked.",
  "credential-revoked": "Client credentials revoked.",
  "key-revoked": "API key revoked.",
  "limits-saved": "Limits saved; they apply from the next request.",
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

function page(c: C, title: string, crumbs: Crumb[], body: Child, notice?: string): Response | Promise<Response> {
  const s = c.get("session");
  return c.html(
    <Page
      title={title}
      nonce={c.get("nonce")}
      crumbs={crumbs}
      csrf={s.csrf}
      who={s.role === "operator" ? "Operator" : "Organization administrator"}
      notice={notice}
    >
      {body}
    </Page>,
  );
}

function confirmPage(c: C, title: string, crumbs: Crumb[], action: string, consequence: string, button: string, cancel: string) {
  return page(
    c,
    title,
    [...crumbs, { label: "Confirm" }],
    <PostForm action={action} csrf={c.get("session").csrf} label={title}>
      <p class="warning">{consequence}</p>
      <button type="submit" class="danger">
        {button}
      </button>{" "}
      <a href={cancel}>Cancel</a>
    </PostForm>,
  );
}
