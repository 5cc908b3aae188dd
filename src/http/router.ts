/**
 * Mounts declared routes (route.ts) on the app, with the credential checks each one declares.
 * Checks run path-wide, in a fixed order, so that a request to an unknown /v1 path is refused
 * for its missing credentials (401) before it could learn the path does not exist (404):
 *   public routes (`auth: "none"`) first, ahead of any check;
 *   /v1/*: the API key (spec 5.1), its rate limits (spec 8) and the access token (spec 5.2), in
 *     one call to the key's object, except on the routes declared `auth: "apiKey"` (the token
 *     endpoints, which admit the key with the client credential their body presents);
 *   /admin/*: the operator token.
 * The /v1 paths that take an access token are the protected resource: their challenges name its
 * metadata (RFC 9728 5.1, `protectedResource` below).
 * A declaration whose `auth` disagrees with what its path gets is refused at startup, so what the
 * API description says and what the router enforces cannot differ. Every path answers the
 * methods it does not declare with 405 and `Allow` (RFC 9110 15.5.6).
 */
import type { Context, Hono, MiddlewareHandler } from "hono";
import { insufficientScope } from "../auth/scopes";
import { ApiError } from "../errors";
import type { AppEnv } from "./context";
import { type RequestCost, requireCredentials } from "./middleware/credentials";
import { apiHeaders } from "./middleware/headers";
import type { Csp } from "./middleware/html";
import { requireOperator } from "./middleware/operator";
import { type Auth, honoPath, type Route } from "./route";

/**
 * `pageSecurity` gives an HTML route its security headers and Content-Security-Policy
 * (middleware/html.ts `htmlSecurity`): only the people's Worker serves pages and passes it, so
 * hono's secure-headers stays out of the API Worker's bundle; a page declared without it is refused.
 */
export function mountRoutes(
  app: Hono<AppEnv>,
  routes: readonly Route[],
  provideDeps: MiddlewareHandler<AppEnv>,
  pageSecurity?: (csp: Csp) => MiddlewareHandler<AppEnv>,
): void {
  const authOfPath = new Map<string, Route["auth"]>();
  for (const route of routes) {
    // The checks below run by path, so every method of a path must want the same ones.
    const other = authOfPath.get(route.path);
    if (other !== undefined && other !== route.auth) {
      throw new Error(`path ${route.path} mixes auth "${other}" and "${route.auth}"; give each its own path`);
    }
    authOfPath.set(route.path, route.auth);
    if ((route.wire === "html") !== (route.csp !== undefined)) {
      throw new Error(`route ${route.method} ${route.path}: HTML pages, and only they, declare a Content-Security-Policy`);
    }
    if (route.scope !== undefined && route.auth !== "client") {
      throw new Error(`route ${route.method} ${route.path}: only routes that take an access token declare a scope`);
    }
    const enforced = enforcedAuth(route.path, mountedFirst(route));
    if (
      route.auth !== enforced &&
      !(route.auth === "apiKey" && enforced === "client") &&
      !(route.auth === "polling" && enforced === "none")
    ) {
      throw new Error(`route ${route.method} ${route.path} declares auth "${route.auth}" but its path gets "${enforced}"`);
    }
  }
  const tokenEndpoints = new Set(routes.filter((r) => r.auth === "apiKey").map((r) => r.path));
  const costs = new Map<string, NonNullable<Route["cost"]>>();
  const weights: Weight[] = [];
  for (const route of routes) {
    if (route.weight !== undefined && (!Number.isInteger(route.weight) || route.weight < 1 || route.cost !== undefined)) {
      throw new Error(`route ${route.method} ${route.path}: a weight is a whole number of requests, at least 1, and not beside a cost`);
    }
    if (route.weight !== undefined && route.weight !== 1)
      weights.push({ method: route.method, path: pathPattern(route.path), weight: route.weight });
    if (route.cost === undefined) continue;
    if (route.path.includes("{")) throw new Error(`route ${route.method} ${route.path}: a cost needs a path without parameters`);
    costs.set(`${route.method} ${route.path}`, route.cost);
  }
  // Declared weights become costs too: the credentials check runs before routing, so it matches
  // the path itself (parameters as one segment each).
  const costOf = (c: Context<AppEnv>): RequestCost => {
    const dynamic = costs.get(`${c.req.method} ${c.req.path}`);
    if (dynamic !== undefined) return () => dynamic(c);
    return weights.find((w) => w.method === c.req.method && w.path.test(c.req.path))?.weight;
  };
  for (const route of routes) {
    if (route.csp === undefined) continue;
    if (pageSecurity === undefined)
      throw new Error(`route ${route.method} ${route.path}: an HTML page is mounted only with its security headers`);
    app.use(honoPath(route.path), pageSecurity(route.csp));
  }

  mount(app, routes.filter(mountedFirst));
  // RFC 6749 5.2 error bodies on the plain token endpoint, set before the API key check so its
  // refusals use them too.
  for (const route of routes) if (route.errorStyle === "oauth") app.use(honoPath(route.path), oauthErrorStyle);
  app.use("/v1/*", apiHeaders, provideDeps, protectedResource(tokenEndpoints), requireCredentials(tokenEndpoints, costOf));
  app.use("/admin/*", apiHeaders, provideDeps, requireOperator);
  mount(
    app,
    routes.filter((r) => !mountedFirst(r)),
  );
}

/** Routes that check their own credentials, or need none: ahead of the path-wide checks. */
const mountedFirst = (route: Route): boolean => route.auth === "none" || route.auth === "polling";

/** What the middleware above enforces on a path (a public route is mounted ahead of it). */
function enforcedAuth(path: string, mountedFirst: boolean): Auth {
  if (path.startsWith("/admin/")) return "admin";
  if (path.startsWith("/v1/") && !mountedFirst) return "client";
  return "none";
}

/**
 * Marks the requests to the protected resource (RFC 9728 1.2): every /v1 path that takes an
 * access token (`auth: "client"`, and the unknown /v1 paths, refused for their credentials
 * first), so that their Bearer and DPoP challenges name its metadata (RFC 9728 5.1, added by
 * http/errors.ts, which builds the URL only for a refusal that has a challenge: an admitted
 * request pays nothing). Not the token endpoints (the authorization server's, whose challenges
 * are Basic) nor /admin (the operator's `Bearer realm="keyway-admin"` is not an OAuth resource).
 */
function protectedResource(tokenEndpoints: ReadonlySet<string>): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!tokenEndpoints.has(c.req.path)) c.set("protectedResource", true);
    await next();
  };
}

const oauthErrorStyle: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("errorStyle", "oauth");
  await next();
};

function mount(app: Hono<AppEnv>, routes: readonly Route[]): void {
  const byPath = new Map<string, Route[]>();
  for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route]);
  for (const [path, group] of byPath) {
    const hono = honoPath(path);
    for (const route of group) {
      const { scope } = route;
      app.on(route.method, hono, (c) => {
        // After the credentials (middleware/credentials.ts): RFC 6750 3.1's 403, with the scope it needs.
        const principal = scope === undefined ? undefined : c.get("principal");
        if (scope !== undefined && principal !== undefined && !principal.scopes.includes(scope)) {
          throw insufficientScope([scope], principal.jkt === null ? "Bearer" : "DPoP");
        }
        return route.serve(c);
      });
    }
    const methods = group.map((r) => r.method);
    const allow = (methods.includes("GET") ? [...methods, "HEAD"] : methods).join(", ");
    app.all(hono, (c) => {
      throw new ApiError("method_not_allowed", `${c.req.method} is not allowed here; use ${allow}.`, { headers: { Allow: allow } });
    });
  }
}

interface Weight {
  method: string;
  path: RegExp;
  weight: number;
}

/** A declared path as a pattern of concrete paths: each `{param}` one segment. */
const pathPattern = (path: string): RegExp =>
  new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, (ch) => (ch === "{" || ch === "}" ? ch : `\\${ch}`)).replace(/\{\w+\}/g, "[^/]+")}$`);
