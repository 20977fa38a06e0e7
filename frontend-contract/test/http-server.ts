// A real HTTP server on 127.0.0.1 for the helpers' tests, and a gate the test opens by hand.
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A real server; `handler` writes the response. */
export async function serve(
  handler: (req: IncomingMessage, res: ServerResponse, body: string) => Promise<void>,
) {
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on(
      "end",
      () => void handler(req, res, body).catch((e: unknown) => res.destroy(e as Error)),
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const close = () => {
    server.close();
    server.closeAllConnections();
  };
  return { baseUrl: `http://127.0.0.1:${port}`, close };
}

/** A promise the test resolves from outside, with a time limit so a hang fails instead. */
export function gate(label: string) {
  let open!: () => void;
  const opened = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${label}: timed out`)), 30_000);
    open = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { open, opened };
}
