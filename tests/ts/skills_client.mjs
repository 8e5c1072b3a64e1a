// The TypeScript SDK's host side of the Skills extension (SkillsClient, @modelcontextprotocol/client/ext/skills)
// against one user's bearer token: lists every skill, reads and verifies every file of each (size, digest and,
// for SKILL.md, the frontmatter against the entry), lists each skill's root directory, then asks for the skills
// given as further arguments with skills/get. Prints one JSON line per step.
// Usage: node skills_client.mjs <client dist folder> <url> <token> [skill URI to get...]
const [dist, url, token, ...wanted] = process.argv.slice(2);
const { Client, StreamableHTTPClientTransport } = await import(`${dist}/index.mjs`);
const { SkillsClient } = await import(`${dist}/ext/skills/index.mjs`);
const out = (step, value) => console.log(JSON.stringify({ step, value }));

const client = new Client({ name: "skills-ts-test", version: "1.0.0" });
const headers = { Authorization: `Bearer ${token}` };
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
const skills = new SkillsClient(client);
out("supported", { supported: skills.supported, directoryRead: skills.directoryRead });
const listing = await skills.list();
out("listed", listing.skills.map((s) => s.uri));
for (const skill of listing.skills) {
  for (const entry of skill.resources ?? []) {
    const file = await skills.read(skill, entry.uri);
    out("read", { uri: file.uri, verified: file.verified, size: file.bytes.length,
      frontmatter: file.frontmatter ?? null, body: file.body ?? null });
  }
  const root = skill.uri.slice(0, -"/SKILL.md".length);
  const { resources } = await skills.readDirectory(root);
  out("directory", { uri: root, entries: resources.map((r) => [r.name, r.mimeType]) });
}
for (const uri of wanted) {
  try {
    const { skill } = await skills.get(uri);
    out("get", { uri, name: skill.frontmatter?.name ?? null });
  } catch (e) {
    out("get", { uri, refused: String(e), code: e.code ?? null });
  }
}
await client.close();
