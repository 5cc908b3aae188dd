/**
 * RFC 9728 (OAuth 2.0 Protected Resource Metadata) on the API's refusals: where a protected
 * resource's metadata is (section 3.1) and the `resource_metadata` auth-param (section 5.1) that
 * http/errors.ts adds to every `Bearer` (RFC 6750 3) and `DPoP` (RFC 9449 7.1) challenge of the
 * /v1 API, so that a client answered 401 or 403 can discover keyway's authorization server. The
 * domain code (auth/) builds the challenges without knowing the origin; the router marks the
 * requests to the protected resource (router.ts `protectedResource`).
 */

/** RFC 9728 3: the well-known URI suffix of protected resource metadata. */
export const RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource";

/**
 * RFC 9728 3.1: the metadata's URL for a resource identifier, the suffix inserted between the
 * host and the path. keyway's identifier is an origin (no path), so the suffix is appended.
 */
export function resourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  const path = url.pathname === "/" ? "" : url.pathname;
  return `${url.origin}${RESOURCE_METADATA_PATH}${path}`;
}

/** The auth-schemes whose challenges get the parameter (compared case-insensitively, RFC 9110 11.1). */
const SCHEMES = new Set(["bearer", "dpop"]);

/** RFC 9110 5.6.2 tchar. */
const isTchar = (ch: string): boolean => /^[!#$%&'*+\-.^_`|~0-9A-Za-z]$/.test(ch);
/** RFC 9110 11.2 token68's characters, before its trailing "=". */
const isToken68Char = (ch: string): boolean => /^[A-Za-z0-9\-._~+/]$/.test(ch);
const isSpace = (ch: string | undefined): boolean => ch === " " || ch === "\t";

/** The index just past the quoted-string (RFC 9110 5.6.4) that opens at `start`; the end when unterminated. */
function quotedEnd(header: string, start: number): number {
  let i = start + 1;
  while (i < header.length) {
    if (header[i] === "\\") i += 2;
    else if (header[i] === '"') return i + 1;
    else i++;
  }
  return header.length;
}

const skipSpaces = (header: string, from: number): number => {
  let i = from;
  while (isSpace(header[i])) i++;
  return i;
};

/**
 * What follows an auth-scheme that ends at `at` (RFC 9110 11.6.1: `auth-scheme [ 1*SP ( token68 /
 * #auth-param ) ]`): nothing (the end or the next list element), a token68, or auth-params.
 */
function afterScheme(header: string, at: number): "nothing" | "token68" | "params" {
  const next = skipSpaces(header, at);
  if (next === header.length || header[next] === ",") return "nothing";
  let i = next;
  while (i < header.length && isToken68Char(header[i] as string)) i++;
  const run = i - next;
  while (header[i] === "=") i++;
  const after = skipSpaces(header, i);
  // `abc`, `abc==` then the end or a comma: a token68; `name=value` or `name="value"`: auth-params.
  return run > 0 && (after === header.length || header[after] === ",") ? "token68" : "params";
}

/**
 * `challenges` (a WWW-Authenticate value, RFC 9110 11.6.1) with `resource_metadata="<url>"` (RFC
 * 9728 5.1) right after each top-level `Bearer` or `DPoP` auth-scheme, other schemes (`Basic`)
 * untouched. It walks the value: quoted-strings are skipped whole (an error_description may say
 * "Bearer" or hold a comma), and a token is an auth-scheme only at the start of a list element
 * and when no "=" follows it (else it names an auth-param). A challenge with a token68 takes no
 * auth-param, so it is left as it is.
 */
export function withResourceMetadata(challenges: string, url: string): string {
  const param = `resource_metadata="${url.replace(/["\\]/g, "\\$&")}"`;
  let out = "";
  let elementStart = true;
  let i = 0;
  while (i < challenges.length) {
    const ch = challenges[i] as string;
    if (ch === '"') {
      const end = quotedEnd(challenges, i);
      out += challenges.slice(i, end);
      i = end;
      elementStart = false;
    } else if (ch === ",") {
      out += ch;
      i++;
      elementStart = true;
    } else if (isSpace(ch)) {
      out += ch;
      i++;
    } else if (isTchar(ch)) {
      let end = i;
      while (end < challenges.length && isTchar(challenges[end] as string)) end++;
      const token = challenges.slice(i, end);
      out += token;
      const isScheme = elementStart && challenges[skipSpaces(challenges, end)] !== "=";
      if (isScheme && SCHEMES.has(token.toLowerCase())) {
        const rest = afterScheme(challenges, end);
        if (rest === "nothing") out += ` ${param}`;
        else if (rest === "params") out += ` ${param},`;
      }
      i = end;
      elementStart = false;
    } else {
      out += ch;
      i++;
      elementStart = false;
    }
  }
  return out;
}
