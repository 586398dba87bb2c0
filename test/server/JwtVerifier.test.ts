/**
 * Scenario: the default token verifier. HS256 tokens against a secret; ES256 and RS256
 * tokens against a JWKS file; and every way a token can be wrong — another key, expired,
 * not yet valid, wrong issuer or audience, no subject, an algorithm the configuration
 * does not allow ("none", HS256 against a key set), garbage — refused as UNAUTHENTICATED.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { jwtVerifier, loadJwks } from "../../src/server/JwtVerifier.js";

const SECRET = "0123456789abcdef0123456789abcdef-secret";
const root = mkdtempSync(join(tmpdir(), "cairn-jwt-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const hs = (claims: Record<string, unknown> = {}) => new SignJWT(claims).setProtectedHeader({ alg: "HS256" });
const secretKey = new TextEncoder().encode(SECRET);

describe("the JWT verifier", () => {
  it("accepts an HS256 token and turns its claims into the identity", async () => {
    const verifier = jwtVerifier({ secret: SECRET, issuer: "https://issuer.example", audience: "cairn" });
    const token = await hs({ name: "Ada", roles: ["admin"] }).setSubject("user-1").setIssuer("https://issuer.example").setAudience("cairn").setExpirationTime("10m").sign(secretKey);
    const verified = await verifier.verify(token);
    expect(verified.identity).toMatchObject({ subject: "user-1", issuer: "https://issuer.example", name: "Ada", roles: ["admin"] });
    expect(verified.expiresAtMs).toBeGreaterThan(Date.now());
  });

  it("keeps `subject` and `issuer` for `sub` and `iss`: a token's own claims of those names cannot pose as them", async () => {
    const verifier = jwtVerifier({ secret: SECRET });
    const token = await hs({ subject: "admin", issuer: "https://trusted.example", plan: "pro" }).setSubject("user-7").setIssuedAt().setExpirationTime("10m").sign(secretKey);
    const { identity } = await verifier.verify(token);
    expect(identity.subject).toBe("user-7");
    expect(identity).not.toHaveProperty("issuer");
    expect(identity).not.toHaveProperty("sub");
    expect(identity).toMatchObject({ plan: "pro", iat: expect.any(Number), exp: expect.any(Number) });
  });

  it("refuses every wrong HS256 token with UNAUTHENTICATED", async () => {
    const verifier = jwtVerifier({ secret: SECRET, issuer: "https://issuer.example", audience: "cairn" });
    const good = () => hs().setSubject("u").setIssuer("https://issuer.example").setAudience("cairn");
    const cases = {
      otherKey: await good().sign(new TextEncoder().encode("another-secret-of-enough-length-0000")),
      expired: await good().setExpirationTime(Math.floor(Date.now() / 1000) - 60).sign(secretKey),
      notYet: await good().setNotBefore(Math.floor(Date.now() / 1000) + 3600).sign(secretKey),
      wrongIssuer: await hs().setSubject("u").setIssuer("https://evil.example").setAudience("cairn").sign(secretKey),
      wrongAudience: await hs().setSubject("u").setIssuer("https://issuer.example").setAudience("other").sign(secretKey),
      noSubject: await hs().setIssuer("https://issuer.example").setAudience("cairn").sign(secretKey),
      unsigned: new UnsecuredJWT({ sub: "u", iss: "https://issuer.example", aud: "cairn" }).encode(),
      garbage: "not.a.token",
    };
    for (const [name, token] of Object.entries(cases)) {
      await expect(verifier.verify(token), name).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    }
  });

  it("verifies ES256 and RS256 tokens against a JWKS file, and refuses an HS256 one", async () => {
    const es = await generateKeyPair("ES256");
    const rs = await generateKeyPair("RS256");
    const jwks = { keys: [{ ...(await exportJWK(es.publicKey)), kid: "es", alg: "ES256" }, { ...(await exportJWK(rs.publicKey)), kid: "rs", alg: "RS256" }] };
    const file = join(root, "jwks.json");
    writeFileSync(file, JSON.stringify(jwks));
    const verifier = jwtVerifier({ jwks: loadJwks(file) });
    const esToken = await new SignJWT({}).setProtectedHeader({ alg: "ES256", kid: "es" }).setSubject("es-user").sign(es.privateKey);
    const rsToken = await new SignJWT({}).setProtectedHeader({ alg: "RS256", kid: "rs" }).setSubject("rs-user").sign(rs.privateKey);
    expect((await verifier.verify(esToken)).identity.subject).toBe("es-user");
    expect((await verifier.verify(rsToken)).identity.subject).toBe("rs-user");
    const stranger = await generateKeyPair("ES256");
    await expect(verifier.verify(await new SignJWT({}).setProtectedHeader({ alg: "ES256", kid: "es" }).setSubject("x").sign(stranger.privateKey))).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
    await expect(verifier.verify(await hs().setSubject("x").sign(secretKey))).rejects.toMatchObject({ code: "UNAUTHENTICATED" });
  });

  it("refuses a configuration it cannot verify with: no key, both keys, a short secret, a bad JWKS file", () => {
    expect(() => jwtVerifier({})).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => jwtVerifier({ secret: SECRET, jwks: { keys: [] } })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => jwtVerifier({ secret: "short" })).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    const bad = join(root, "bad.json");
    writeFileSync(bad, JSON.stringify({ keys: [] }));
    expect(() => loadJwks(bad)).toThrow(/at least one key/);
    expect(() => loadJwks(join(root, "missing.json"))).toThrow(/cannot read the JWKS file/);
  });
});
