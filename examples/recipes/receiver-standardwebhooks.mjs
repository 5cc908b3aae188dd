/**
 * Recipe: a webhook receiver that verifies keyway's deliveries with the `standardwebhooks`
 * package (the Standard Webhooks reference implementation): the signature over the exact bytes
 * received, the webhook-id and a timestamp within 5 minutes. It answers 204 when the delivery
 * verifies and 400 when it does not, and prints each verified event. A real receiver also checks
 * `Authorization: Bearer <token>` against its own authorization server (see ../receiver.mjs) and
 * processes each webhook-id once, since a retry repeats it. Run: SIGNING_SECRET=whsec_...
 * RECEIVER_PORT=9002 node receiver-standardwebhooks.mjs (needs `npm install standardwebhooks`).
 */
import { createServer } from "node:http";
import { Webhook } from "standardwebhooks";

const secret = process.env.SIGNING_SECRET;
if (!secret?.startsWith("whsec_")) throw new Error("set SIGNING_SECRET to the whsec_... value keyway returned");
// The library takes the base64 part of the secret, without the whsec_ prefix.
const webhook = new Webhook(secret.slice("whsec_".length));
const port = Number(process.env.RECEIVER_PORT ?? 9002);

createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  // Verify the raw bytes: parsing and re-serializing the JSON first would break the signature.
  const payload = Buffer.concat(chunks).toString("utf8");
  const headers = {
    "webhook-id": String(req.headers["webhook-id"] ?? ""),
    "webhook-timestamp": String(req.headers["webhook-timestamp"] ?? ""),
    "webhook-signature": String(req.headers["webhook-signature"] ?? ""),
  };
  try {
    const event = webhook.verify(payload, headers);
    console.log(`verified ${headers["webhook-id"]}: ${JSON.stringify(event)}`);
    res.writeHead(204).end();
  } catch (err) {
    console.log(`refused ${headers["webhook-id"] || "(no id)"}: ${err instanceof Error ? err.message : String(err)}`);
    res.writeHead(400).end();
  }
}).listen(port, "127.0.0.1", () => console.log(`listening on http://127.0.0.1:${port}`));
