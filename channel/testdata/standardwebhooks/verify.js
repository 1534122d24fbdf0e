// Verifies webhook requests as a receiver does: channel's rotation tests
// (secret_test.go) write the cases (a request's body and headers, and an
// HMAC secret or an ed25519 public key) as JSON to stdin and read, for
// each, null when the request verified or why not. HMAC ("v1,") with the
// npm Standard Webhooks library; ed25519 ("v1a,"), which that library
// does not verify, with node's crypto, written from the Standard Webhooks
// specification.
"use strict";
const crypto = require("crypto");
const { Webhook } = require("standardwebhooks");

const TOLERANCE_SECONDS = 5 * 60;

function verifyV1a(publicKey, body, headers) {
  if (!publicKey.startsWith("whpk_")) throw new Error("not a whpk_ key");
  const raw = Buffer.from(publicKey.slice("whpk_".length), "base64");
  const key = crypto.createPublicKey({
    key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") },
    format: "jwk",
  });
  const id = headers["webhook-id"];
  const ts = headers["webhook-timestamp"];
  const sigs = headers["webhook-signature"];
  if (!id || !ts || !sigs) throw new Error("Missing required headers");
  const seconds = parseInt(ts, 10);
  if (Math.abs(Math.floor(Date.now() / 1000) - seconds) > TOLERANCE_SECONDS) {
    throw new Error("Message timestamp out of tolerance");
  }
  const signed = Buffer.from(`${id}.${ts}.${body}`, "utf8");
  for (const part of sigs.split(" ")) {
    const [version, sig] = part.split(",");
    if (version !== "v1a" || !sig) continue;
    if (crypto.verify(null, signed, key, Buffer.from(sig, "base64"))) return;
  }
  throw new Error("No matching signature found");
}

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const cases = JSON.parse(input);
  const out = cases.map(({ secret, publicKey, body, headers }) => {
    try {
      if (publicKey) {
        verifyV1a(publicKey, body, headers);
      } else {
        new Webhook(secret).verify(body, headers);
      }
      return null;
    } catch (e) {
      return String(e && e.message ? e.message : e);
    }
  });
  process.stdout.write(JSON.stringify(out));
});
