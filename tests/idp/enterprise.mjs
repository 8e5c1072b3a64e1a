// A company identity provider for the enterprise-managed authorization tests (ID-JAG), on loopback.
//
// It signs people in (POST /login: username and password -> an OpenID Connect ID token for the client
// that asked) and, by RFC 8693 token exchange at POST /token, turns such an ID token into an Identity
// Assertion JWT Authorization Grant (typ oauth-id-jag+jwt) for the authorization server named by
// `audience` and the MCP server named by `resource`. Its policy: a client gets ID-JAGs for its own
// signed-in users only, and only with the scopes IDP_CLIENTS grants it. It publishes RFC 8414 metadata
// and its key set; it signs with the private JWK Set in IDP_JWKS (written by the test, which can then
// forge assertions with the same key). Signing and verification are the `jose` package's.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';

const jose = await import(pathToFileURL(process.argv[2]).href);

const port = Number(process.env.IDP_PORT);
const issuer = `http://127.0.0.1:${port}`;
const privateJwk = JSON.parse(readFileSync(process.env.IDP_JWKS, 'utf8')).keys[0];
const people = JSON.parse(process.env.IDP_PEOPLE); // username -> {password, email}
const clients = JSON.parse(process.env.IDP_CLIENTS); // client_id -> {secret, scope}
const ttl = Number(process.env.IDP_IDJAG_TTL || 300);
const key = await jose.importJWK(privateJwk, privateJwk.alg);
const { d, p, q, dp, dq, qi, ...publicJwk } = privateJwk;
const publicKey = await jose.importJWK(publicJwk, privateJwk.alg);

function send(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(body));
}

async function form(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return Object.fromEntries(new URLSearchParams(body));
}

function client(req) {
  const header = req.headers.authorization || '';
  if (!header.startsWith('Basic ')) return null;
  const [id, secret] = Buffer.from(header.slice(6), 'base64').toString().split(':').map(decodeURIComponent);
  return clients[id] && clients[id].secret === secret ? id : null;
}

const sign = (claims, typ) =>
  new jose.SignJWT(claims).setProtectedHeader({ alg: privateJwk.alg, kid: privateJwk.kid, typ }).sign(key);

async function login(params) {
  const person = people[params.username];
  if (!person || person.password !== params.password || !clients[params.client_id]) return null;
  const now = Math.floor(Date.now() / 1000);
  return sign(
    { iss: issuer, sub: params.username, aud: params.client_id, email: person.email, iat: now, exp: now + 300 },
    'JWT',
  );
}

async function exchange(req, params) {
  const clientId = client(req);
  if (!clientId) return [401, { error: 'invalid_client' }];
  if (params.grant_type !== 'urn:ietf:params:oauth:grant-type:token-exchange') {
    return [400, { error: 'unsupported_grant_type' }];
  }
  if (
    params.requested_token_type !== 'urn:ietf:params:oauth:token-type:id-jag' ||
    params.subject_token_type !== 'urn:ietf:params:oauth:token-type:id_token' ||
    !params.audience
  ) {
    return [400, { error: 'invalid_request' }];
  }
  let subject;
  try {
    ({ payload: subject } = await jose.jwtVerify(params.subject_token, publicKey, { issuer, audience: clientId }));
  } catch {
    return [400, { error: 'invalid_grant', error_description: 'Invalid ID token' }];
  }
  const allowed = clients[clientId].scope.split(' ');
  const scope = (params.scope ? params.scope.split(' ') : allowed).filter((s) => allowed.includes(s));
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    iss: issuer,
    sub: subject.sub,
    email: subject.email,
    aud: params.audience,
    client_id: clientId,
    jti: randomUUID(),
    iat: now,
    exp: now + ttl,
    scope: scope.join(' '),
  };
  if (params.resource) claims.resource = params.resource;
  const assertion = await sign(claims, 'oauth-id-jag+jwt');
  return [
    200,
    {
      access_token: assertion,
      issued_token_type: 'urn:ietf:params:oauth:token-type:id-jag',
      token_type: 'N_A',
      expires_in: ttl,
      scope: claims.scope,
    },
  ];
}

createServer(async (req, res) => {
  try {
    const path = new URL(req.url, issuer).pathname;
    if (req.method === 'GET') console.log(`FETCH ${path}`); // the test counts who fetched what
    if (req.method === 'GET' && path === '/.well-known/oauth-authorization-server') {
      return send(res, 200, {
        issuer,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        grant_types_supported: ['urn:ietf:params:oauth:grant-type:token-exchange'],
      });
    }
    if (req.method === 'GET' && path === '/jwks') return send(res, 200, { keys: [publicJwk] });
    if (req.method === 'POST' && path === '/login') {
      const token = await login(await form(req));
      return token ? send(res, 200, { id_token: token }) : send(res, 401, { error: 'access_denied' });
    }
    if (req.method === 'POST' && path === '/token') {
      const [status, body] = await exchange(req, await form(req));
      return send(res, status, body);
    }
    return send(res, 404, { error: 'not_found' });
  } catch (error) {
    console.log(`ERROR ${error}`);
    return send(res, 500, { error: 'server_error' });
  }
}).listen(port, '127.0.0.1', () => console.log(`READY ${issuer}`));
