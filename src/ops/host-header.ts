/**
 * Reading the authority of a request (its `Host` header) and of a page (its `Origin` header)
 * the way a browser resolves them: through the WHATWG URL parser, so every spelling of an IPv4
 * address (`0x7f.1`, `2130706433`) becomes one dotted quad, a name its lower-case form and a
 * scheme's default port nothing.
 *
 * @internal
 */

/**
 * A name or a bracketed IPv6 address, then an optional port: nothing the URL parser would read
 * as a user (`evil.example@127.0.0.1`), a path or a query.
 */
const AUTHORITY = /^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(:\d{1,5})?$/i;

/** `scheme//authority` parsed, or `undefined` when it is not a plain host and port. */
export function parseAuthority(scheme: string, authority: string): URL | undefined {
  if (!AUTHORITY.test(authority)) return undefined;
  try {
    return new URL(`${scheme}//${authority}`);
  } catch {
    return undefined;
  }
}

/** The host name of a `Host` header: lower case, no port, no trailing dot; `undefined` when absent or malformed. */
export function hostNameOf(host: string | undefined): string | undefined {
  if (host === undefined) return undefined;
  const url = parseAuthority('http:', host);
  if (url === undefined || url.hostname === '') return undefined;
  return url.hostname.endsWith('.') ? url.hostname.slice(0, -1) : url.hostname;
}

/** Whether a host name (as {@link hostNameOf} gives it) is an IP address: no DNS lookup gives it, so no DNS rebinding. */
export function isIpAddress(hostname: string): boolean {
  return hostname.startsWith('[') || /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname);
}
