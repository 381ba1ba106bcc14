// The TypeScript client of docs/clients.md (@modelcontextprotocol/sdk 1.32): `sleep` as a
// task, and `confirm`, whose input the server asks for with elicitation/create.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

// Declaring `elicitation` is what lets the server ask; `confirm` is refused without it.
const client = new Client({ name: 'demo', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
// The answer must fit the requestedSchema `confirm` sends: {answer: string}.
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { answer: 'yes' } }));
await client.connect(new StdioClientTransport({ command: process.env.STDIO_SERVER ?? 'target/debug/stdio_server' }));

await client.listTools(); // the SDK learns which tools run as tasks
for (const [name, args] of [['sleep', { ms: 500 }], ['confirm', { question: 'Proceed?' }]]) {
  // With `task`, callToolStream gets a CreateTaskResult, polls tasks/get, ends with tasks/result.
  const stream = client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, {
    task: { ttl: 60_000 },
  });
  for await (const msg of stream) {
    if (msg.type === 'taskCreated') console.log(`${name}: task ${msg.task.taskId}`);
    if (msg.type === 'result') console.log(`${name}: ${msg.result.content[0].text}`);
    if (msg.type === 'error') throw msg.error;
  }
}
await client.close();
