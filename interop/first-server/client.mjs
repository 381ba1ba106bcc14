// Calls the README's first task server (server/examples/first_server.rs) with the official
// TypeScript SDK (@modelcontextprotocol/sdk 1.32): `deploy` as a task, its approval
// answered, its result read.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

// Declaring `elicitation` is what lets the server ask for approval.
const client = new Client({ name: 'deployer', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  console.log(`asked: ${request.params.message}`); // Deploy checkout?
  return { action: 'accept', content: { approve: true } };
});
const transport = process.env.MCP_URL // http://127.0.0.1:8808/mcp, with MCP_TOKEN
  ? new StreamableHTTPClientTransport(new URL(process.env.MCP_URL), {
      requestInit: { headers: { Authorization: `Bearer ${process.env.MCP_TOKEN}` } },
    })
  : new StdioClientTransport({ command: process.env.FIRST_SERVER ?? 'target/debug/examples/first_server', env: process.env });
await client.connect(transport);

await client.listTools(); // the SDK learns that `deploy` runs only as a task
const stream = client.experimental.tasks.callToolStream(
  { name: 'deploy', arguments: { service: 'checkout' } },
  CallToolResultSchema,
  { task: { ttl: 60_000 } },
);
for await (const message of stream) {
  if (message.type === 'result') console.log(message.result.content[0].text); // checkout deployed
  if (message.type === 'error') throw message.error;
}
await client.close();
