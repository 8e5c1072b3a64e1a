// The official TypeScript SDK's experimental (2025-11-25) tasks client against our server.
// Usage: node tasks_client.mjs <sdk dist/esm dir> <server url>; prints one JSON line per step.
const [sdkDir, url] = process.argv.slice(2);
const { Client } = await import(`${sdkDir}/client/index.js`);
const { StreamableHTTPClientTransport } = await import(`${sdkDir}/client/streamableHttp.js`);
const { CallToolResultSchema, ElicitRequestSchema } = await import(`${sdkDir}/types.js`);

const out = (step, value) => console.log(JSON.stringify({ step, value }));
const client = new Client({ name: 'ts-sdk-tasks', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params.message);
  return { action: 'accept', content: { confirm: true } };
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
out('protocol', client.transport.protocolVersion ?? null);
out('capabilities', client.getServerCapabilities().tasks ?? null);
const tools = await client.listTools();
out('taskSupport', Object.fromEntries(tools.tools.filter((t) => t.execution).map((t) => [t.name, t.execution.taskSupport])));

async function run(name, args) {
  const seen = [];
  for await (const message of client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, { task: { ttl: 60000 } })) {
    if (message.type === 'taskCreated') seen.push(['created', message.task.status]);
    else if (message.type === 'taskStatus') seen.push(['status', message.task.status]);
    else if (message.type === 'result') seen.push(['result', message.result.content[0].text]);
    else if (message.type === 'error') seen.push(['error', String(message.error?.message ?? message.error)]);
  }
  return seen;
}

out('slow_compute', await run('slow_compute', { seconds: 1, label: 'ts' }));
out('confirm_delete', await run('confirm_delete', { filename: 'ts.txt' }));
out('asked', asked);
const listed = await client.experimental.tasks.listTasks();
out('listed', listed.tasks.length);
await client.close();
