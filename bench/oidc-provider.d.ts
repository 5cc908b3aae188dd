// The little of node-oidc-provider's API the bench peer uses (the package ships no types).
declare module "oidc-provider" {
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    on(event: "server_error", listener: (ctx: unknown, err: Error) => void): this;
    listen(port: number, host: string, callback: () => void): unknown;
  }
}
