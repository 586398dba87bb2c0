import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";

/** An identity provider for tests: signing keys made with jose, and its JWKS endpoint on a local port. */

export interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

export async function signingKey(kid: string, alg: "ES256" | "RS256" = "ES256"): Promise<SigningKey> {
  const pair = await generateKeyPair(alg);
  return { kid, privateKey: pair.privateKey, publicJwk: { ...(await exportJWK(pair.publicKey)), kid, alg, use: "sig" } };
}

/** A token for `subject` signed with `key` (with its algorithm), valid for an hour. */
export function tokenFor(key: SigningKey, subject = "user-1"): Promise<string> {
  return new SignJWT({ name: "Ada" }).setProtectedHeader({ alg: key.publicJwk.alg!, kid: key.kid }).setSubject(subject).setIssuedAt().setExpirationTime("1h").sign(key.privateKey);
}

export type Answer = (request: IncomingMessage, response: ServerResponse) => void;

/** The identity provider's JWKS endpoint: what it answers is swapped by the test; it counts requests. */
export class JwksServer {
  requests = 0;
  answer: Answer = () => undefined;
  private server: Server | null = null;
  private port = 0;

  async listen(): Promise<void> {
    const server = createServer((request, response) => {
      this.requests++;
      this.answer(request, response);
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/.well-known/jwks.json`;
  }

  serveKeys(keys: readonly SigningKey[], headers: Record<string, string> = {}): void {
    this.answer = (_request, response) => {
      response.writeHead(200, { "content-type": "application/json", ...headers });
      response.end(JSON.stringify({ keys: keys.map((key) => key.publicJwk) }));
    };
  }

  serveText(status: number, text: string): void {
    this.answer = (_request, response) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(text);
    };
  }

  /** Down: the port refuses connections (it is re-used by `listen` to come back). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server === null) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

