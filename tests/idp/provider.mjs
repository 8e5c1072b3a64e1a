// A real OpenID Provider (npm oidc-provider) for the JWT resource-server tests, on loopback.
//
// It issues RFC 9068 JWT access tokens by the client credentials grant, bound by RFC 8707 to the
// resources listed in IDP_RESOURCES. Each client stands for one person: extraTokenClaims adds the
// claims a company IdP puts in a token (preferred_username, email, groups). Its signing keys are read
// from IDP_JWKS (a private JWK Set written by the test), so the test can rotate them and forge tokens.
// Every request to the key set is logged as "JWKS <n>" on stdout: the test counts the fetches.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

// The package's entry, passed by the test (the test tree has no node_modules of its own).
const { default: Provider, errors } = await import(pathToFileURL(process.argv[2]).href);

const port = Number(process.env.IDP_PORT);
const issuer = `http://127.0.0.1:${port}`;
const resources = JSON.parse(process.env.IDP_RESOURCES);
const jwks = JSON.parse(readFileSync(process.env.IDP_JWKS, 'utf8'));
const people = JSON.parse(process.env.IDP_PEOPLE); // client_id -> extra claims

const provider = new Provider(issuer, {
  jwks,
  clients: Object.keys(people).map((clientId) => ({
    client_id: clientId,
    client_secret: `${clientId}-secret`,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope: 'mcp secret:read',
  })),
  scopes: ['mcp', 'secret:read'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resources[0],
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator) => {
        if (!resources.includes(resourceIndicator)) throw new errors.InvalidTarget();
        return {
          scope: 'mcp secret:read',
          audience: resourceIndicator,
          accessTokenTTL: Number(process.env.IDP_TOKEN_TTL || 300),
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  extraTokenClaims: (ctx, token) => people[token.clientId] || undefined,
});

let fetches = 0;
provider.use(async (ctx, next) => {
  if (ctx.path === '/jwks') {
    fetches += 1;
    console.log(`JWKS ${fetches}`);
  }
  await next();
});

provider.listen(port, '127.0.0.1', () => console.log(`READY ${issuer}`));
