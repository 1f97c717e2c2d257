/**
 * The admin handler's check of the `Host` header (issue 33, defect 5). A page on `evil.example`
 * whose DNS answer turns to 127.0.0.1 (DNS rebinding) reaches a handler on the loopback with
 * the browser's blessing: same origin, so it reads every answer and passes the mutating routes'
 * rule too. What it cannot change is the `Host` header, which names the attacker's domain. So
 * the handler answers only names that cannot be rebound (IP addresses; `localhost` and
 * `*.localhost`, which browsers resolve to the loopback themselves) and those it is told are its
 * own.
 *
 * @internal
 */
import * as check from '../internal/validate.js';
import { hostNameOf, isIpAddress } from './host-header.js';

/**
 * More host names the admin handler answers, besides IP addresses, `localhost` and
 * `*.localhost`: an exact name (`"admin.example"`), or with a leading dot a name and all its
 * subdomains (`".corp.example"`). `true` answers every `Host`: only behind a proxy that checks it.
 */
export type AllowedHosts = readonly string[] | true;

const OPTION = 'createAdminHandler option "allowedHosts"';

/** The option checked, with its names in lower case; throws a `TypeError` naming the bad entry. */
export function checkAllowedHosts(value: unknown): AllowedHosts {
  if (value === true) return true;
  if (!Array.isArray(value)) {
    throw new TypeError(
      `qmux: ${OPTION} must be true or an array of host names without port (a leading dot allows subdomains too), got ${check.describeValue(value)}`,
    );
  }
  return value.map((entry: unknown, i) => {
    const name = `createAdminHandler option "allowedHosts[${i}]"`;
    if (typeof entry === 'string' && entry.startsWith('*.')) {
      throw new TypeError(
        `qmux: ${name} got ${JSON.stringify(entry)}: for a name and its subdomains write a leading dot, ${JSON.stringify(entry.slice(1))}`,
      );
    }
    const bare = typeof entry === 'string' && entry.startsWith('.') ? entry.slice(1) : entry;
    const hostname = typeof bare === 'string' && !bare.includes(':') ? hostNameOf(bare) : undefined;
    if (hostname === undefined || typeof entry !== 'string') {
      throw new TypeError(
        `qmux: ${name} must be a host name without port, such as "admin.example" or ".example.com" (the name and its subdomains), got ${check.describeValue(entry)}`,
      );
    }
    return entry.startsWith('.') ? `.${hostname}` : hostname;
  });
}

/** Whether a request's `Host` header names this handler; `allowed` as {@link checkAllowedHosts} returned it. */
export function isAllowedHost(host: string | undefined, allowed: AllowedHosts): boolean {
  if (allowed === true) return true;
  const hostname = hostNameOf(host);
  if (hostname === undefined) return false;
  if (isIpAddress(hostname) || hostname === 'localhost' || hostname.endsWith('.localhost')) return true;
  for (const entry of allowed) {
    if (entry.startsWith('.') ? hostname === entry.slice(1) || hostname.endsWith(entry) : hostname === entry) return true;
  }
  return false;
}

/** What a 421 says: the name refused and how to allow it. */
export function hostRefusal(host: string | undefined): string {
  const shown = hostNameOf(host) ?? host ?? '';
  return `qmux admin answers only its own host names (IP addresses, localhost and *.localhost, and the createAdminHandler option allowedHosts): not ${JSON.stringify(shown)}`;
}
