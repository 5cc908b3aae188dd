/**
 * The benchmark's peer: node-oidc-provider serving the OAuth 2.0 client-credentials grant
 * (in-memory adapter, opaque access tokens) on 127.0.0.1:$PORT, in its own process so its CPU
 * time can be measured apart from the load generator's. Quiet: no request logging.
 */
import Provider from "oidc-provider";

const port = Number(process.env.PORT ?? 9301);
const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [
    {
      client_id: "bench",
      client_secret: "bench-secret-0123456789abcdefghijklmnop",
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: "client_secret_basic",
    },
  ],
  features: { clientCredentials: { enabled: true }, devInteractions: { enabled: false } },
});
provider.on("server_error", (_ctx, err) => console.error("peer server_error", err.message));
provider.listen(port, "127.0.0.1", () => console.log(`oidc peer ready on ${port}`));
