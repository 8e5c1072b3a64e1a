// The company's identity provider for the OIDC login tests: npm oidc-provider (a certified OpenID Provider),
// on loopback, with a directory of users read from a JSON file at every sign-in (the tests edit it to
// disable someone) and a plain login page. The relying party is the Django project ("books").
//
//   node idp.mjs <oidc-provider's lib/index.js> <port> <directory.json> <rp redirect uri> <rp client secret>
//
// Directory: {"alice": {"password": "...", "email": "...", "groups": ["vault-readers"], "disabled": false}, ...}
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';

const [providerPath, port, directoryPath, redirectUri, clientSecret] = process.argv.slice(2);
const { default: Provider } = await import(providerPath);
const issuer = `http://127.0.0.1:${port}`;

function directory() {
  return JSON.parse(readFileSync(directoryPath, 'utf8'));
}

function person(sub) {
  const entry = Object.hasOwn(directory(), sub) ? directory()[sub] : undefined;
  return entry && !entry.disabled ? entry : undefined;
}

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'idp-key-1', use: 'sig', alg: 'RS256' };

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'books',
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
  }],
  jwks: { keys: [jwk] },
  cookies: { keys: ['idp-test-cookie-key'] },
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  features: { devInteractions: { enabled: false } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(ctx, sub) {
    const entry = person(sub);
    if (!entry) return undefined; // disabled or removed: its IdP session and tokens stop working
    return {
      accountId: sub,
      async claims() {
        return {
          sub,
          email: entry.email,
          email_verified: true,
          name: entry.name || sub,
          preferred_username: sub,
          groups: entry.groups || [],
        };
      },
    };
  },
});

function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function loginPage(res, uid, message) {
  const body = `<!doctype html><html><head><title>Company sign-in</title></head><body>
<h1>Company sign-in</h1>${message ? `<p id="error">${escape(message)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}/login">
<label>User <input id="login" name="login" autocomplete="username"></label>
<label>Password <input id="password" name="password" type="password"></label>
<button id="signin" type="submit">Sign in</button></form></body></html>`;
  res.writeHead(message ? 401 : 200, { 'Content-Type': 'text/html; charset=utf-8' });
  res.end(body);
}

async function readForm(req) {
  let raw = '';
  for await (const chunk of req) {
    raw += chunk;
    if (raw.length > 10000) throw new Error('form too large');
  }
  return new URLSearchParams(raw);
}

async function interaction(req, res, uid, submitted) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) throw new Error('interaction mismatch');
  if (details.prompt.name === 'login') {
    if (!submitted) return loginPage(res, uid);
    const form = await readForm(req);
    const login = form.get('login') || '';
    const entry = person(login);
    if (!entry || entry.password !== form.get('password')) return loginPage(res, uid, 'Wrong user or password, or the account is disabled.');
    return provider.interactionFinished(req, res, { login: { accountId: login } }, { mergeWithLastSubmission: false });
  }
  // The company's own application: consent to the RP is granted by policy, as IdPs do for first-party apps.
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
  const missing = details.prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

const handle = provider.callback();
const server = http.createServer((req, res) => {
  const match = /^\/interaction\/([\w-]+)(\/login)?$/.exec(new URL(req.url, issuer).pathname);
  if (!match) return handle(req, res);
  interaction(req, res, match[1], Boolean(match[2]) && req.method === 'POST').catch((error) => {
    res.writeHead(400, { 'Content-Type': 'text/plain' });
    res.end(`interaction failed: ${error.message}`);
  });
});
server.listen(Number(port), '127.0.0.1', () => console.log(`IdP ready at ${issuer}`));
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => server.close(() => process.exit(0)));
