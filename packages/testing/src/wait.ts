/**
 * Polls `condition` every 10 ms until it holds, for at most `timeoutMs` (5 s), then rejects naming
 * `what`. For events a test cannot await directly (a request reaching a loopback server, a socket
 * closing on the other side); never for timing assertions.
 */
export async function waitUntil(condition: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting until ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
