import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP relay in front of the server that a test can cut, to drop a client's connection
 * mid-stream the way a network failure does, while the server itself runs on. `cut()`
 * closes every relayed connection and refuses new ones (accepted, then closed at once)
 * until `mend()`.
 */
export class Proxy {
  address = "";
  private readonly server: Server;
  private readonly open = new Set<Socket>();
  private refusing = false;

  private constructor(target: string) {
    const [host, port] = splitAddress(target);
    this.server = createServer((client) => {
      if (this.refusing) {
        client.destroy();
        return;
      }
      const upstream = createConnection({ host, port });
      for (const [socket, other] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        this.open.add(socket);
        socket.pipe(other);
        socket.on("error", () => other.destroy());
        socket.on("close", () => {
          this.open.delete(socket);
          other.destroy();
        });
      }
    });
  }

  static async start(target: string): Promise<Proxy> {
    const proxy = new Proxy(target);
    await new Promise<void>((resolve) => proxy.server.listen(0, "127.0.0.1", resolve));
    const address = proxy.server.address();
    if (address === null || typeof address === "string") {
      throw new Error("the relay has no TCP address");
    }
    proxy.address = `127.0.0.1:${address.port}`;
    return proxy;
  }

  cut(): void {
    this.refusing = true;
    for (const socket of this.open) {
      socket.destroy();
    }
  }

  mend(): void {
    this.refusing = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function splitAddress(address: string): [string, number] {
  const colon = address.lastIndexOf(":");
  return [address.slice(0, colon), Number(address.slice(colon + 1))];
}
