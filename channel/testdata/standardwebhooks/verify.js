// Verifies webhook requests as a receiver does, with the npm Standard
// Webhooks library: channel's rotation test (secret_test.go) writes the
// cases (a request's body and headers, a secret) as JSON to stdin and
// reads, for each, null when the library took the request or its error.
"use strict";
const { Webhook } = require("standardwebhooks");

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const cases = JSON.parse(input);
  const out = cases.map(({ secret, body, headers }) => {
    try {
      new Webhook(secret).verify(body, headers);
      return null;
    } catch (e) {
      return String(e && e.message ? e.message : e);
    }
  });
  process.stdout.write(JSON.stringify(out));
});
