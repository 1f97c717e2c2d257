/** Test servers on loopback (the admin handler's tests). */
import type { Server } from 'node:http';

/** Closes `server`, if any, with its keep-alive connections, so that the next test starts clean. */
export async function closeServer(server: Server | undefined): Promise<void> {
  if (server === undefined) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
