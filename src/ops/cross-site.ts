/**
 * SPEC 11's rule for the admin handler's mutating routes (issue 33, defect 5). Any page the
 * browser opens can send requests to `localhost`: a form POST, or a `no-cors` fetch, reaches the
 * handler without asking, though the page cannot read the answer. Such a request can only carry
 * a form's content types (`application/x-www-form-urlencoded`, `multipart/form-data`,
 * `text/plain`): `application/json` forces a CORS preflight, which the handler never grants. And
 * a browser says where a request comes from (`Origin`, `Sec-Fetch-Site`), which a page cannot
 * forge. A client that is not a browser (curl, a script) sends neither and passes with the
 * content type alone.
 *
 * @internal
 */
import type { IncomingHttpHeaders } from 'node:http';
import { parseAuthority } from './host-header.js';

/** Why a request to a mutating route could have come from a page on another site, or `undefined` when it could not. */
export function crossSiteRefusal(headers: IncomingHttpHeaders): string | undefined {
  const type = headers['content-type'];
  const media = type?.split(';')[0]?.trim().toLowerCase();
  if (media !== 'application/json') {
    return `a request that changes a worker must have Content-Type: application/json (got ${media === undefined ? 'none' : media}), which a page on another site cannot send`;
  }
  const origin = headers.origin;
  if (origin !== undefined && !isOwnOrigin(origin, headers.host)) {
    return `a request that changes a worker must come from this handler's own origin: Origin is ${origin}, Host is ${headers.host ?? 'absent'}`;
  }
  const site = headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') {
    return `a request that changes a worker must come from this handler's own pages: Sec-Fetch-Site is ${site}, not same-origin`;
  }
  return undefined;
}

/**
 * Whether `origin` is the origin of the handler the request names in `host`. Compared by host and
 * port only: behind a proxy that ends TLS the handler cannot know its scheme. `null` (a sandboxed
 * frame, a `data:` page) is no one's origin.
 */
function isOwnOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== origin.toLowerCase()) return false;
  return parseAuthority(url.protocol, host)?.host === url.host;
}
