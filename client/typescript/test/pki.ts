import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A test CA (PEM) and a server certificate it signed, for localhost and 127.0.0.1. */
export interface Pki {
  ca: string;
  certFile: string;
  keyFile: string;
}

/**
 * Makes a new CA and server certificate in `dir` with the `openssl` command (Node's
 * `crypto` makes keys but cannot issue X.509 certificates). Offline; `scripts/test`
 * installs `openssl` when the machine lacks it.
 */
export async function issuePki(dir: string, caName: string): Promise<Pki> {
  const path = (name: string) => join(dir, name);
  const openssl = async (...args: string[]) => {
    try {
      await run("openssl", args);
    } catch (error) {
      throw new Error(`openssl ${args[0]} failed (is openssl installed?): ${String(error)}`);
    }
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  await openssl(
    "req", "-x509", ...ec, "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "1",
    "-subj", `/CN=${caName}`,
    "-addext", "basicConstraints=critical,CA:TRUE",
    "-addext", "keyUsage=critical,keyCertSign,cRLSign",
  );
  await openssl(
    "req", ...ec, "-keyout", path("key.pem"), "-out", path("server.csr"), "-subj", "/CN=odysseyd",
  );
  await writeFile(
    path("server.ext"),
    "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
  );
  await openssl(
    "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
    "-set_serial", `0x${randomBytes(12).toString("hex")}`,
    "-days", "1", "-extfile", path("server.ext"), "-out", path("cert.pem"),
  );
  return {
    ca: await readFile(path("ca.pem"), "utf8"),
    certFile: path("cert.pem"),
    keyFile: path("key.pem"),
  };
}
