// Interop client for the mcp-tasks stdio server example, written against the
// official TypeScript SDK (@modelcontextprotocol/sdk, pinned to 1.32.2).
//
// Usage: node ts_client.mjs <path-to-stdio_server> [server args...]
//
// Environment passed on to the server: MCP_TASKS_PAGE_SIZE, MCP_TASKS_TRACE,
// RUST_LOG, RUST_BACKTRACE (when set). Each scenario prints one PASS/FAIL line;
// the last line is "N passed, N failed" and the exit code is 1 if any failed.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
  TaskStatusNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import {
  CheckFailure,
  check,
  describeError,
  eq,
  expectError,
  finish,
  scenario,
  sleep,
  textOf,
} from './harness.mjs';

const INVALID_PARAMS = -32602;
const METHOD_NOT_FOUND = -32601;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

const serverCommand = process.argv[2];
if (!serverCommand) {
  console.error('usage: node ts_client.mjs <path-to-stdio_server> [args...]');
  process.exit(2);
}
const serverArgs = process.argv.slice(3);
const pageSize = Number.parseInt(process.env.MCP_TASKS_PAGE_SIZE ?? '50', 10);

// ---------------------------------------------------------------- harness ---


// -------------------------------------------------------------- the client ---

const client = new Client(
  { name: 'mcp-tasks-interop-ts', version: '0.1.0' },
  { capabilities: { elicitation: { form: {} } } },
);

// h. every notifications/tasks/status received during the run
const statusNotifications = [];
client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
  statusNotifications.push(n.params);
});

// g. elicitation handler: answers according to the question, and while the
// elicitation is pending asks the server (tasks/get) for the task status.
const elicitations = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  const params = request.params;
  const related = params._meta?.[RELATED_TASK_META_KEY];
  const record = { params, related, statusWhilePending: undefined, statusError: undefined };
  elicitations.push(record);
  if (related?.taskId) {
    try {
      const t = await client.experimental.tasks.getTask(related.taskId, { timeout: 5_000 });
      record.statusWhilePending = t.status;
    } catch (err) {
      record.statusError = describeError(err);
    }
  }
  const meta = related ? { _meta: { [RELATED_TASK_META_KEY]: { taskId: related.taskId } } } : {};
  const q = String(params.message ?? '');
  if (q.includes('[cancel-task]') && related?.taskId) {
    // d4: cancel the task while its elicitation is pending, then answer anyway.
    try {
      record.cancelResult = await client.experimental.tasks.cancelTask(related.taskId, { timeout: 5_000 });
    } catch (err) {
      record.cancelError = describeError(err);
    }
  }
  if (q.includes('[decline]')) return { action: 'decline', ...meta };
  if (q.includes('[cancel]')) return { action: 'cancel', ...meta };
  return { action: 'accept', content: { answer: 'yes' }, ...meta };
});

// Task-augmented tools/call through the SDK's generic request path: returns
// the CreateTaskResult (validated by the SDK's CreateTaskResultSchema).
function createTask(name, args, ttl = 60_000) {
  return client.request(
    { method: 'tools/call', params: { name, arguments: args } },
    CreateTaskResultSchema,
    { task: { ttl } },
  );
}

// Polls tasks/get (honouring pollInterval) until `stop(task)` or timeout.
async function pollUntil(taskId, stop, timeoutMs = 15_000) {
  const seen = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const t = await client.experimental.tasks.getTask(taskId);
    seen.push(t.status);
    if (stop(t)) return { task: t, seen };
    if (Date.now() > deadline) {
      throw new CheckFailure(`task ${taskId} still ${t.status} after ${timeoutMs} ms (seen ${seen.join(',')})`);
    }
    await sleep(t.pollInterval ?? 100);
  }
}

const transport = new StdioClientTransport({
  command: serverCommand,
  args: serverArgs,
  env: Object.fromEntries(
    ['MCP_TASKS_PAGE_SIZE', 'MCP_TASKS_TRACE', 'RUST_LOG', 'RUST_BACKTRACE']
      .filter((k) => process.env[k] !== undefined)
      .map((k) => [k, process.env[k]]),
  ),
  stderr: 'inherit',
});

let connected = false;
await scenario('0. initialize: tasks capabilities and tool list', async () => {
  await client.connect(transport);
  connected = true;
  const caps = client.getServerCapabilities();
  check(caps?.tools, `server capabilities lack tools: ${JSON.stringify(caps)}`);
  check(caps?.tasks?.list, `server capabilities lack tasks.list: ${JSON.stringify(caps)}`);
  check(caps?.tasks?.cancel, `server capabilities lack tasks.cancel: ${JSON.stringify(caps)}`);
  check(caps?.tasks?.requests?.tools?.call, `server capabilities lack tasks.requests.tools.call: ${JSON.stringify(caps)}`);
  const { tools } = await client.listTools();
  const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? 'forbidden']));
  eq(support.sleep, 'optional', 'sleep taskSupport');
  eq(support.fail, 'optional', 'fail taskSupport');
  eq(support.confirm, 'required', 'confirm taskSupport');
  eq(support.echo, 'forbidden', 'echo taskSupport (absent or forbidden)');
  check(client.isToolTaskRequired('confirm'), 'SDK did not register confirm as task-required');
  await client.ping();
  return `server ${client.getServerVersion()?.name ?? '?'}; tools ${tools.map((t) => t.name).join(',')}`;
});

if (!connected) {
  finish({ extra: 1, abort: true });
}

let sleepTaskId;
await scenario('a. task-augmented sleep: working -> completed, tasks/result text and related-task _meta', async () => {
  // callToolStream adds `task` itself because sleep has taskSupport "optional";
  // it then polls tasks/get and finally calls tasks/result.
  const stream = client.experimental.tasks.callToolStream(
    { name: 'sleep', arguments: { ms: 300 } },
    CallToolResultSchema,
    { task: { ttl: 60_000 } },
  );
  const statuses = [];
  let created;
  let result;
  for await (const msg of stream) {
    if (msg.type === 'taskCreated') created = msg.task;
    else if (msg.type === 'taskStatus') statuses.push(msg.task.status);
    else if (msg.type === 'result') result = msg.result;
    else if (msg.type === 'error') throw new CheckFailure(`stream ended with error: ${describeError(msg.error)}`);
  }
  check(created, 'no taskCreated message (server did not answer with a CreateTaskResult)');
  sleepTaskId = created.taskId;
  eq(created.status, 'working', 'CreateTaskResult task.status');
  eq(statuses.at(-1), 'completed', 'last tasks/get status');
  check(result, 'no result message');
  eq(textOf(result), 'slept 300 ms', 'tasks/result text');
  check(!result.isError, 'tasks/result isError is true');
  eq(result._meta?.[RELATED_TASK_META_KEY]?.taskId, created.taskId, 'tasks/result _meta related-task taskId');
  // and once more explicitly: tasks/get reports completed
  const again = await client.experimental.tasks.getTask(created.taskId);
  eq(again.status, 'completed', 'tasks/get after completion');
  eq(again.taskId, created.taskId, 'tasks/get taskId');
  return `task ${created.taskId}; polled ${statuses.join(',')}`;
});

await scenario('a2. tasks/result on a working task blocks until the task completes', async () => {
  const started = Date.now();
  const created = await createTask('sleep', { ms: 300 });
  const taskId = created.task.taskId;
  const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
  const elapsed = Date.now() - started;
  eq(textOf(result), 'slept 300 ms', 'tasks/result text');
  check(elapsed >= 250, `tasks/result answered after ${elapsed} ms, before the 300 ms sleep could end`);
  const got = await client.experimental.tasks.getTask(taskId);
  eq(got.status, 'completed', 'tasks/get after tasks/result returned');
  return `answered after ${elapsed} ms`;
});

let failTaskId;
await scenario('b. fail as a task: status failed, tasks/result is a success response with isError', async () => {
  const created = await createTask('fail', {});
  failTaskId = created.task.taskId;
  eq(created.task.status, 'working', 'CreateTaskResult task.status');
  const { task, seen } = await pollUntil(failTaskId, (t) => TERMINAL.has(t.status));
  eq(task.status, 'failed', 'terminal status');
  const result = await client.experimental.tasks.getTaskResult(failTaskId, CallToolResultSchema);
  eq(result.isError, true, 'tasks/result isError');
  eq(textOf(result), 'the fail tool always fails', 'tasks/result text');
  eq(result._meta?.[RELATED_TASK_META_KEY]?.taskId, failTaskId, 'tasks/result _meta related-task taskId');
  // The SDK's streaming helper reports a failed task as an 'error' message.
  let last;
  for await (const msg of client.experimental.tasks.callToolStream({ name: 'fail', arguments: {} })) last = msg;
  eq(last?.type, 'error', 'callToolStream(fail) final message type');
  return `task ${failTaskId}; polled ${seen.join(',')}; statusMessage ${JSON.stringify(task.statusMessage)}`;
});

await scenario(`c. tasks/list pagination (page size ${pageSize}) lists 5 new tasks exactly once`, async () => {
  const created = [];
  for (let i = 0; i < 5; i += 1) {
    const r = await createTask('sleep', { ms: 50 + i });
    created.push(r.task.taskId);
  }
  check(new Set(created).size === 5, `server returned duplicate task ids: ${created.join(',')}`);
  const seen = new Map();
  const pages = [];
  let cursor;
  for (let n = 0; ; n += 1) {
    check(n < 200, 'more than 200 pages; cursor loop?');
    const page = await client.experimental.tasks.listTasks(cursor);
    pages.push(page.tasks.length);
    check(page.tasks.length <= pageSize, `page ${n} has ${page.tasks.length} tasks, page size is ${pageSize}`);
    for (const t of page.tasks) seen.set(t.taskId, (seen.get(t.taskId) ?? 0) + 1);
    if (page.nextCursor === undefined) break;
    check(typeof page.nextCursor === 'string', `nextCursor is not a string: ${JSON.stringify(page.nextCursor)}`);
    cursor = page.nextCursor;
  }
  for (const id of created) eq(seen.get(id) ?? 0, 1, `occurrences of task ${id} across pages`);
  for (const [id, count] of seen) eq(count, 1, `occurrences of task ${id} across pages`);
  for (const id of [sleepTaskId, failTaskId].filter(Boolean)) {
    eq(seen.get(id) ?? 0, 1, `earlier task ${id} in the listing`);
  }
  const minPages = Math.ceil(seen.size / pageSize);
  check(pages.length >= minPages, `${seen.size} tasks came in ${pages.length} pages (page size ${pageSize})`);
  return `${seen.size} tasks in ${pages.length} pages [${pages.join(',')}], last page without nextCursor`;
});

await scenario('c2. tasks/list with an invalid cursor -> -32602', async () => {
  const err = await expectError(client.experimental.tasks.listTasks('not-a-cursor-from-this-server'), INVALID_PARAMS, 'tasks/list');
  return `message ${JSON.stringify(err.message)}`;
});

await scenario('d. cancel a running sleep(30000): cancelled, second cancel -32602, tasks/get cancelled', async () => {
  const created = await createTask('sleep', { ms: 30_000 });
  const taskId = created.task.taskId;
  const cancelled = await client.experimental.tasks.cancelTask(taskId);
  eq(cancelled.status, 'cancelled', 'tasks/cancel result status');
  eq(cancelled.taskId, taskId, 'tasks/cancel result taskId');
  await expectError(client.experimental.tasks.cancelTask(taskId), INVALID_PARAMS, 'second tasks/cancel');
  const got = await client.experimental.tasks.getTask(taskId);
  eq(got.status, 'cancelled', 'tasks/get after cancel');
  return `task ${taskId}`;
});

await scenario('d2. cancel a completed task -> -32602', async () => {
  check(sleepTaskId, 'no completed task from scenario a');
  await expectError(client.experimental.tasks.cancelTask(sleepTaskId), INVALID_PARAMS, 'tasks/cancel of completed task');
});

await scenario('d3. a pending tasks/result is answered when the task is cancelled', async () => {
  const created = await createTask('sleep', { ms: 30_000 });
  const taskId = created.task.taskId;
  const pending = client.experimental.tasks
    .getTaskResult(taskId, CallToolResultSchema, { timeout: 10_000 })
    .then((result) => ({ result }), (error) => ({ error }));
  await sleep(200);
  const cancelled = await client.experimental.tasks.cancelTask(taskId);
  eq(cancelled.status, 'cancelled', 'tasks/cancel result status');
  const settled = await pending;
  check(
    !(settled.error instanceof McpError && settled.error.code === -32001),
    'tasks/result was still pending 10 s after the task was cancelled',
  );
  return settled.error ? `tasks/result answered ${describeError(settled.error)}` : `tasks/result answered ${JSON.stringify(settled.result)}`;
});

await scenario('d4. cancel while input_required: the late elicitation answer does not revive the task', async () => {
  const before = elicitations.length;
  const created = await createTask('confirm', { question: 'Cancel me while I wait [cancel-task]' });
  const taskId = created.task.taskId;
  // The spec has the requestor call tasks/result on input_required; it must be
  // answered once the task is cancelled.
  const pending = client.experimental.tasks
    .getTaskResult(taskId, CallToolResultSchema, { timeout: 10_000 })
    .then((result) => ({ result }), (error) => ({ error }));
  const deadline = Date.now() + 10_000;
  while (elicitations.length === before || !('cancelResult' in elicitations[before] || 'cancelError' in elicitations[before])) {
    check(Date.now() < deadline, 'no elicitation/create arrived for the confirm task');
    await sleep(50);
  }
  const e = elicitations[before];
  eq(e.related?.taskId, taskId, 'elicitation related-task taskId');
  eq(e.statusWhilePending, 'input_required', 'tasks/get status while the elicitation was pending');
  check(!e.cancelError, `tasks/cancel during the elicitation failed: ${e.cancelError}`);
  eq(e.cancelResult?.status, 'cancelled', 'tasks/cancel result status');
  const settled = await pending;
  check(
    !(settled.error instanceof McpError && settled.error.code === -32001),
    'tasks/result was still pending 10 s after the task was cancelled',
  );
  await sleep(300);
  const got = await client.experimental.tasks.getTask(taskId);
  eq(got.status, 'cancelled', 'tasks/get after the late elicitation answer');
  return settled.error ? `tasks/result answered ${describeError(settled.error)}` : `tasks/result answered a result`;
});

await scenario('e. unknown task id -> -32602 on tasks/get, tasks/result, tasks/cancel', async () => {
  const bogus = 'no-such-task-00000000';
  const err = await expectError(client.experimental.tasks.getTask(bogus), INVALID_PARAMS, 'tasks/get');
  await expectError(
    client.experimental.tasks.getTaskResult(bogus, CallToolResultSchema, { timeout: 5_000 }),
    INVALID_PARAMS,
    'tasks/result',
  );
  await expectError(client.experimental.tasks.cancelTask(bogus), INVALID_PARAMS, 'tasks/cancel');
  return `message ${JSON.stringify(err.message)}`;
});

await scenario('f. confirm (taskSupport required) without a task -> -32601', async () => {
  // The SDK itself refuses this client-side in callTool() ...
  let local;
  try {
    await client.callTool({ name: 'confirm', arguments: { question: 'no task?' } });
  } catch (err) {
    local = err;
  }
  check(local instanceof McpError, `Client.callTool did not refuse a task-required tool: ${describeError(local)}`);
  // ... so send the plain tools/call with the lower-level request() to reach the server.
  const err = await expectError(
    client.request(
      { method: 'tools/call', params: { name: 'confirm', arguments: { question: 'no task?' } } },
      CallToolResultSchema,
      { timeout: 5_000 },
    ),
    METHOD_NOT_FOUND,
    'tools/call confirm without task',
  );
  return `message ${JSON.stringify(err.message)}`;
});

await scenario('f2. echo: plain call works, task-augmented call -> -32601', async () => {
  const plain = await client.callTool({ name: 'echo', arguments: { text: 'hello interop' } });
  eq(textOf(plain), 'hello interop', 'echo text');
  check(!plain.isError, 'echo isError');
  await expectError(createTask('echo', { text: 'as a task' }), METHOD_NOT_FOUND, 'tools/call echo with task');
});

async function confirmRoundTrip(question, expectedText) {
  const before = elicitations.length;
  // confirm is taskSupport "required": callToolStream adds `task` by itself,
  // polls tasks/get and, on input_required, calls tasks/result (which blocks
  // until the task is terminal while our elicitation handler answers).
  const statuses = [];
  let created;
  let result;
  for await (const msg of client.experimental.tasks.callToolStream({ name: 'confirm', arguments: { question } })) {
    if (msg.type === 'taskCreated') created = msg.task;
    else if (msg.type === 'taskStatus') statuses.push(msg.task.status);
    else if (msg.type === 'result') result = msg.result;
    else if (msg.type === 'error') throw new CheckFailure(`stream ended with error: ${describeError(msg.error)}`);
  }
  check(created, 'no taskCreated message');
  eq(created.status, 'working', 'CreateTaskResult task.status');
  const mine = elicitations.slice(before);
  eq(mine.length, 1, 'elicitation/create requests received');
  const e = mine[0];
  eq(e.params.mode ?? 'form', 'form', 'elicitation mode');
  eq(e.params.message, question, 'elicitation message');
  check(
    e.params.requestedSchema?.properties?.answer?.type === 'string',
    `requestedSchema lacks answer:string: ${JSON.stringify(e.params.requestedSchema)}`,
  );
  eq(e.related?.taskId, created.taskId, 'elicitation _meta related-task taskId');
  check(!e.statusError, `tasks/get while the elicitation was pending failed: ${e.statusError}`);
  eq(e.statusWhilePending, 'input_required', 'tasks/get status while the elicitation was pending');
  check(result, 'no result message');
  eq(textOf(result), expectedText, 'tasks/result text');
  eq(result._meta?.[RELATED_TASK_META_KEY]?.taskId, created.taskId, 'tasks/result _meta related-task taskId');
  const final = await client.experimental.tasks.getTask(created.taskId);
  eq(final.status, 'completed', 'tasks/get after the round trip');
  const notified = statusNotifications.filter((n) => n.taskId === created.taskId).map((n) => n.status);
  return `task ${created.taskId}; polled ${statuses.join(',')}; notified ${notified.join(',')}`;
}

await scenario('g. confirm as a task: input_required, elicitation accept {answer:"yes"} -> completed', () =>
  confirmRoundTrip('Proceed with the interop test?', 'the user answered: yes'));

await scenario('g2. confirm as a task: elicitation decline -> "the user declined"', () =>
  confirmRoundTrip('Shall we stop? [decline]', 'the user declined'));

await scenario('g3. confirm as a task: elicitation cancel -> "the user cancelled"', () =>
  confirmRoundTrip('Dismiss this? [cancel]', 'the user cancelled'));

await scenario('h. notifications/tasks/status received (full Task params)', async () => {
  check(statusNotifications.length > 0, 'no notifications/tasks/status received during the run');
  for (const n of statusNotifications) {
    check(typeof n.taskId === 'string' && typeof n.status === 'string', `bad notification params ${JSON.stringify(n)}`);
    check(n.createdAt && n.lastUpdatedAt && 'ttl' in n, `notification params are not a full Task: ${JSON.stringify(n)}`);
  }
  if (sleepTaskId) {
    const s = statusNotifications.filter((n) => n.taskId === sleepTaskId).map((n) => n.status);
    check(s.includes('completed'), `no 'completed' notification for task ${sleepTaskId} (got ${s.join(',') || 'none'})`);
  }
  if (failTaskId) {
    const s = statusNotifications.filter((n) => n.taskId === failTaskId).map((n) => n.status);
    check(s.includes('failed'), `no 'failed' notification for task ${failTaskId} (got ${s.join(',') || 'none'})`);
  }
  const withMeta = statusNotifications.filter((n) => n._meta?.[RELATED_TASK_META_KEY]);
  eq(withMeta.length, 0, 'notifications carrying related-task _meta (spec: SHOULD NOT)');
  const counts = {};
  for (const n of statusNotifications) counts[n.status] = (counts[n.status] ?? 0) + 1;
  return `${statusNotifications.length} notifications ${JSON.stringify(counts)}`;
});

await client.close().catch(() => {});
finish();
