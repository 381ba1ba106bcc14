// HTTP interop client for mcp_http (the Streamable HTTP server of http/), written against
// the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, installed in interop/).
// Both principals' clients declare the elicitation capability: `confirm` tasks ask them
// through `elicitation/create` (on the tasks/result SSE stream or the standalone GET
// stream), and `notifications/tasks/status` reach them the same way.
//
// Usage: node ts_client.mjs
// Environment: MCP_TASKS_URL (the server's /mcp endpoint), MCP_TASKS_ALICE_TOKEN and
// MCP_TASKS_BOB_TOKEN (two principals' bearer tokens), MCP_TASKS_PAGE_SIZE (the server's
// tasks/list page size). Each scenario prints one PASS/FAIL line; the last line is
// "N passed, N failed" and the exit code is 1 if any failed.

import { randomUUID } from 'node:crypto';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
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
} from '../harness.mjs';

const INVALID_PARAMS = -32602;
const METHOD_NOT_FOUND = -32601;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`ts_client.mjs: set ${name}`);
    process.exit(2);
  }
  return value;
}

const url = new URL(required('MCP_TASKS_URL'));
const aliceToken = required('MCP_TASKS_ALICE_TOKEN');
const bobToken = required('MCP_TASKS_BOB_TOKEN');
const pageSize = Number.parseInt(process.env.MCP_TASKS_PAGE_SIZE ?? '50', 10);

// ---------------------------------------------------------------- harness ---


// ---------------------------------------------------------- raw HTTP checks ---

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
};

async function post(body, headers = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
}

const bearer = (token) => ({ authorization: `Bearer ${token}` });

// A session opened with plain fetch, for the header checks.
async function rawSession(token) {
  const response = await post(INIT, bearer(token));
  eq(response.status, 200, 'initialize HTTP status');
  const session = response.headers.get('mcp-session-id');
  check(session, 'initialize answered without an Mcp-Session-Id header');
  await response.text();
  return session;
}

// --------------------------------------------------------------- clients ---

// A client declaring form elicitation. It keeps every notifications/tasks/status and every
// elicitation/create it gets; its elicitation handler asks the server (tasks/get) for the
// task's status while the question is pending, then answers: decline for a question with
// "[decline]", cancel for "[cancel]", otherwise accept with {answer: "yes from <who>"}. A
// question with "[hold]" waits until the scenario calls the elicitation's release().
function newClient(name, who = name) {
  const client = new Client({ name, version: '0.1.0' }, { capabilities: { elicitation: { form: {} } } });
  const record = { client, who, statusNotifications: [], elicitations: [] };
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
    record.statusNotifications.push(n.params);
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const params = request.params;
    const related = params._meta?.[RELATED_TASK_META_KEY];
    const e = { params, related, statusWhilePending: undefined, statusError: undefined };
    e.held = new Promise((resolve) => {
      e.release = resolve;
    });
    record.elicitations.push(e);
    const q = String(params.message ?? '');
    if (q.includes('[hold]')) await e.held;
    if (related?.taskId) {
      try {
        e.statusWhilePending = (await client.experimental.tasks.getTask(related.taskId, { timeout: 5_000 })).status;
      } catch (err) {
        e.statusError = describeError(err);
      }
    }
    const meta = related ? { _meta: { [RELATED_TASK_META_KEY]: { taskId: related.taskId } } } : {};
    e.answeredAt = Date.now();
    if (q.includes('[decline]')) return { action: 'decline', ...meta };
    if (q.includes('[cancel]')) return { action: 'cancel', ...meta };
    return { action: 'accept', content: { answer: `yes from ${who}` }, ...meta };
  });
  return record;
}

async function connect(name, token, who) {
  const record = newClient(name, who);
  record.transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await record.client.connect(record.transport);
  return record;
}

// Task-augmented tools/call through the SDK's generic request path.
function createTask(client, name, args, ttl = 60_000) {
  return client.request(
    { method: 'tools/call', params: { name, arguments: args } },
    CreateTaskResultSchema,
    { task: { ttl } },
  );
}

// Waits (at most 5 s) until `peer` was notified of each status in `wanted` for `taskId`;
// returns the statuses notified for it, in order.
async function notifiedStatuses(peer, taskId, wanted) {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const got = peer.statusNotifications.filter((n) => n.taskId === taskId).map((n) => n.status);
    if (wanted.every((s) => got.includes(s))) return got;
    if (Date.now() > deadline) {
      throw new CheckFailure(`${peer.who} was not notified ${wanted.join(' and ')} for task ${taskId} (got ${got.join(',') || 'none'})`);
    }
    await sleep(50);
  }
}

// Waits (at most 10 s) for the `index`th elicitation/create `peer` received.
async function nthElicitation(peer, index) {
  const deadline = Date.now() + 10_000;
  while (peer.elicitations.length <= index) {
    check(Date.now() < deadline, `${peer.who} received no elicitation/create`);
    await sleep(25);
  }
  return peer.elicitations[index];
}

async function pollUntil(client, taskId, stop, timeoutMs = 15_000) {
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

// Every task id of `client`'s tasks/list, following nextCursor.
async function listAll(client) {
  const ids = [];
  const pages = [];
  let cursor;
  for (let n = 0; ; n += 1) {
    check(n < 500, 'more than 500 pages; cursor loop?');
    const page = await client.experimental.tasks.listTasks(cursor);
    pages.push(page);
    for (const t of page.tasks) ids.push(t.taskId);
    if (page.nextCursor === undefined) break;
    cursor = page.nextCursor;
  }
  return { ids, pages };
}

// The error a promise rejects with, as {code, message, data}; fails if it resolves.
async function errorOf(promise, what) {
  try {
    const result = await promise;
    throw new CheckFailure(`${what}: expected a JSON-RPC error, got result ${JSON.stringify(result)}`);
  } catch (err) {
    if (err instanceof CheckFailure) throw err;
    check(err instanceof McpError, `${what}: expected McpError, got ${describeError(err)}`);
    return { code: err.code, message: err.message, data: err.data };
  }
}

// Requires the error for `ownedId` to equal the error for `unknownId` once each id is
// replaced by a placeholder: nothing tells a foreign task from a missing one.
function sameAsUnknown(foreign, ownedId, unknown, unknownId, what) {
  const norm = (e, id) => JSON.stringify({ code: e.code, message: e.message.split(id).join('<id>'), data: e.data ?? null });
  const a = norm(foreign, ownedId);
  const b = norm(unknown, unknownId);
  check(a === b, `${what}: the error for another principal's task differs from an unknown id's:\n    ${a}\n    ${b}`);
  eq(foreign.code, INVALID_PARAMS, `${what}: error code`);
}

// ------------------------------------------------------------- scenarios ---

await scenario('t1. transport: requests without a valid bearer token are refused (401, WWW-Authenticate: Bearer)', async () => {
  const none = await post(INIT);
  eq(none.status, 401, 'initialize without Authorization');
  check(/^Bearer\b/i.test(none.headers.get('www-authenticate') ?? ''), `WWW-Authenticate is ${JSON.stringify(none.headers.get('www-authenticate'))}`);
  await none.text();
  const wrong = await post(INIT, bearer('not-a-token-of-this-server'));
  eq(wrong.status, 401, 'initialize with an unknown token');
  check(/^Bearer\b/i.test(wrong.headers.get('www-authenticate') ?? ''), 'WWW-Authenticate missing for an unknown token');
  await wrong.text();
  const basic = await post(INIT, { authorization: `Basic ${Buffer.from(`alice:${aliceToken}`).toString('base64')}` });
  eq(basic.status, 401, 'initialize with Basic credentials');
  await basic.text();
  // The SDK's transport, without a token: connect() must fail.
  const { client } = newClient('mcp-tasks-interop-ts-anonymous');
  const transport = new StreamableHTTPClientTransport(url);
  let refused;
  try {
    await client.connect(transport);
  } catch (err) {
    refused = err;
  }
  check(refused, 'Client.connect without a token succeeded');
  await client.close().catch(() => {});
  return `SDK connect refused: ${describeError(refused)}`;
});

// The first chunk of an SSE response body, then the stream is dropped.
async function firstChunk(response) {
  const reader = response.body.getReader();
  const { value } = await reader.read();
  await reader.cancel().catch(() => {});
  return new TextDecoder().decode(value ?? new Uint8Array());
}

await scenario('t2. transport: foreign Origin 403, bad MCP-Protocol-Version 400, sessions required and bound; GET stream and DELETE per session', async () => {
  for (const origin of ['https://attacker.example', 'http://localhost.attacker.example', 'null']) {
    const foreign = await post(INIT, { ...bearer(aliceToken), origin });
    eq(foreign.status, 403, `initialize from Origin ${origin}`);
    await foreign.text();
  }
  const local = await post(INIT, { ...bearer(aliceToken), origin: 'http://localhost:6274' });
  eq(local.status, 200, 'initialize from a localhost Origin');
  await local.text();
  const session = await rawSession(aliceToken);
  const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
  const ok = await post(ping, { ...bearer(aliceToken), 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
  eq(ok.status, 200, 'ping in the session');
  eq((await ok.json()).id, 2, 'ping answer id');
  const noVersion = await post(ping, { ...bearer(aliceToken), 'mcp-session-id': session });
  eq(noVersion.status, 200, 'ping without MCP-Protocol-Version (default assumed)');
  await noVersion.text();
  const badVersion = await post(ping, { ...bearer(aliceToken), 'mcp-session-id': session, 'mcp-protocol-version': '1999-01-01' });
  eq(badVersion.status, 400, 'ping with an unsupported MCP-Protocol-Version');
  await badVersion.text();
  const noSession = await post(ping, bearer(aliceToken));
  eq(noSession.status, 400, 'ping without Mcp-Session-Id');
  await noSession.text();
  const unknownSession = await post(ping, { ...bearer(aliceToken), 'mcp-session-id': randomUUID() });
  eq(unknownSession.status, 404, 'ping with an unknown Mcp-Session-Id');
  await unknownSession.text();
  const stolen = await post(ping, { ...bearer(bobToken), 'mcp-session-id': session });
  eq(stolen.status, 404, "bob using alice's Mcp-Session-Id");
  await stolen.text();
  const note = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { ...bearer(aliceToken), 'mcp-session-id': session });
  eq(note.status, 202, 'a notification is accepted with 202');
  await note.text();
  // GET opens the session's standalone SSE stream: the session is required and bound.
  const sse = { accept: 'text/event-stream' };
  const getNoSession = await fetch(url, { headers: { ...bearer(aliceToken), ...sse } });
  eq(getNoSession.status, 400, 'GET without Mcp-Session-Id');
  await getNoSession.text();
  const getUnknown = await fetch(url, { headers: { ...bearer(aliceToken), ...sse, 'mcp-session-id': randomUUID() } });
  eq(getUnknown.status, 404, 'GET with an unknown Mcp-Session-Id');
  await getUnknown.text();
  const getStolen = await fetch(url, { headers: { ...bearer(bobToken), ...sse, 'mcp-session-id': session } });
  eq(getStolen.status, 404, "bob's GET on alice's session");
  await getStolen.text();
  const getJson = await fetch(url, { headers: { ...bearer(aliceToken), accept: 'application/json', 'mcp-session-id': session } });
  eq(getJson.status, 406, 'GET accepting only application/json');
  await getJson.text();
  const stream = await fetch(url, { headers: { ...bearer(aliceToken), ...sse, 'mcp-session-id': session } });
  eq(stream.status, 200, 'GET with the session');
  check((stream.headers.get('content-type') ?? '').startsWith('text/event-stream'), `GET content-type ${stream.headers.get('content-type')}`);
  const priming = await firstChunk(stream);
  check(/^id: \S+/m.test(priming), `the stream does not start with a priming event carrying an id: ${JSON.stringify(priming)}`);
  // DELETE ends the session, for its principal only.
  const delNoSession = await fetch(url, { method: 'DELETE', headers: bearer(aliceToken) });
  eq(delNoSession.status, 400, 'DELETE without Mcp-Session-Id');
  await delNoSession.text();
  const delStolen = await fetch(url, { method: 'DELETE', headers: { ...bearer(bobToken), 'mcp-session-id': session } });
  eq(delStolen.status, 404, "bob's DELETE of alice's session");
  await delStolen.text();
  const stillThere = await post(ping, { ...bearer(aliceToken), 'mcp-session-id': session });
  eq(stillThere.status, 200, "ping after bob's DELETE attempt");
  await stillThere.text();
  const del = await fetch(url, { method: 'DELETE', headers: { ...bearer(aliceToken), 'mcp-session-id': session } });
  eq(del.status, 204, 'DELETE of the session by its principal');
  await del.text();
  const gone = await post(ping, { ...bearer(aliceToken), 'mcp-session-id': session });
  eq(gone.status, 404, 'ping in an ended session');
  await gone.text();
  return `priming event ${JSON.stringify(priming.split('\n')[0])}`;
});

let alice;
let bob;
await scenario('0. initialize over HTTP (alice and bob): session ids, tasks capabilities, tool list', async () => {
  alice = await connect('mcp-tasks-interop-ts-alice', aliceToken, 'alice');
  bob = await connect('mcp-tasks-interop-ts-bob', bobToken, 'bob');
  check(alice.transport.sessionId, 'no Mcp-Session-Id for alice');
  check(bob.transport.sessionId && bob.transport.sessionId !== alice.transport.sessionId, 'bob has no session of his own');
  const caps = alice.client.getServerCapabilities();
  check(caps?.tasks?.list && caps?.tasks?.cancel && caps?.tasks?.requests?.tools?.call, `tasks capabilities: ${JSON.stringify(caps)}`);
  const { tools } = await alice.client.listTools();
  const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? 'forbidden']));
  eq(support.sleep, 'optional', 'sleep taskSupport');
  eq(support.confirm, 'required', 'confirm taskSupport');
  eq(support.echo, 'forbidden', 'echo taskSupport');
  // callToolStream adds `task` to a call of a task-required tool it knows from tools/list.
  await bob.client.listTools();
  check(alice.client.isToolTaskRequired('confirm') && bob.client.isToolTaskRequired('confirm'), 'the SDK did not register confirm as task-required');
  await alice.client.ping();
  await bob.client.ping();
  return `protocol ${alice.transport.protocolVersion ?? '?'}; tools ${tools.map((t) => t.name).join(',')}`;
});

if (!alice || !bob) {
  finish({ abort: true });
}

const a = alice.client;
const b = bob.client;

let sleepTaskId;
await scenario('a. task-augmented sleep: working -> completed by polling, tasks/result text and related-task _meta', async () => {
  const statuses = [];
  let created;
  let result;
  for await (const msg of a.experimental.tasks.callToolStream(
    { name: 'sleep', arguments: { ms: 300 } },
    CallToolResultSchema,
    { task: { ttl: 60_000 } },
  )) {
    if (msg.type === 'taskCreated') created = msg.task;
    else if (msg.type === 'taskStatus') statuses.push(msg.task.status);
    else if (msg.type === 'result') result = msg.result;
    else if (msg.type === 'error') throw new CheckFailure(`stream ended with error: ${describeError(msg.error)}`);
  }
  check(created, 'no taskCreated message');
  sleepTaskId = created.taskId;
  eq(created.status, 'working', 'CreateTaskResult task.status');
  eq(statuses.at(-1), 'completed', 'last tasks/get status');
  eq(textOf(result), 'slept 300 ms', 'tasks/result text');
  eq(result._meta?.[RELATED_TASK_META_KEY]?.taskId, created.taskId, 'tasks/result _meta related-task taskId');
  return `task ${created.taskId}; polled ${statuses.join(',')}`;
});

await scenario('a2. a blocking tasks/result does not stall other requests (ping, tasks/get, tasks/list meanwhile)', async () => {
  const created = await createTask(a, 'sleep', { ms: 1_500 });
  const taskId = created.task.taskId;
  const started = Date.now();
  let settledAt;
  const pending = a.experimental.tasks.getTaskResult(taskId, CallToolResultSchema).then((r) => {
    settledAt = Date.now();
    return r;
  });
  await sleep(100);
  const latencies = [];
  for (let i = 0; i < 5; i += 1) {
    const t0 = Date.now();
    await a.ping();
    const t = await a.experimental.tasks.getTask(taskId);
    await b.experimental.tasks.listTasks();
    latencies.push(Date.now() - t0);
    eq(t.status, 'working', 'status while tasks/result is pending');
  }
  check(settledAt === undefined, 'tasks/result answered before the task could finish');
  const worst = Math.max(...latencies);
  check(worst < 500, `requests took up to ${worst} ms while a tasks/result was pending`);
  const result = await pending;
  eq(textOf(result), 'slept 1500 ms', 'tasks/result text');
  const elapsed = settledAt - started;
  check(elapsed >= 1_300, `tasks/result answered after ${elapsed} ms, before the sleep ended`);
  return `5 rounds of ping+get+list, worst ${worst} ms; tasks/result after ${elapsed} ms`;
});

let failTaskId;
await scenario('b. fail as a task: status failed, tasks/result is a success response with isError', async () => {
  const created = await createTask(a, 'fail', {});
  failTaskId = created.task.taskId;
  const { task } = await pollUntil(a, failTaskId, (t) => TERMINAL.has(t.status));
  eq(task.status, 'failed', 'terminal status');
  const result = await a.experimental.tasks.getTaskResult(failTaskId, CallToolResultSchema);
  eq(result.isError, true, 'tasks/result isError');
  eq(textOf(result), 'the fail tool always fails', 'tasks/result text');
  eq(result._meta?.[RELATED_TASK_META_KEY]?.taskId, failTaskId, 'tasks/result _meta related-task taskId');
  return `statusMessage ${JSON.stringify(task.statusMessage)}`;
});

await scenario(`c. tasks/list through nextCursor (page size ${pageSize}) lists 5 new tasks exactly once`, async () => {
  const created = [];
  for (let i = 0; i < 5; i += 1) created.push((await createTask(a, 'sleep', { ms: 50 + i })).task.taskId);
  const { ids, pages } = await listAll(a);
  for (const page of pages) check(page.tasks.length <= pageSize, `a page has ${page.tasks.length} tasks`);
  const counts = new Map();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  for (const id of [...created, sleepTaskId, failTaskId]) eq(counts.get(id) ?? 0, 1, `occurrences of ${id}`);
  for (const [id, n] of counts) eq(n, 1, `occurrences of ${id}`);
  check(pages.length >= Math.ceil(ids.length / pageSize), `${ids.length} tasks in ${pages.length} pages`);
  return `${ids.length} tasks in ${pages.length} pages`;
});

await scenario('c2. tasks/list with an invalid cursor -> -32602', async () => {
  await expectError(a.experimental.tasks.listTasks('not-a-cursor-from-this-server'), INVALID_PARAMS, 'tasks/list');
});

await scenario('d. cancel a running sleep: cancelled, second cancel -32602, tasks/get cancelled; a pending tasks/result is answered', async () => {
  const created = await createTask(a, 'sleep', { ms: 30_000 });
  const taskId = created.task.taskId;
  const pending = a.experimental.tasks
    .getTaskResult(taskId, CallToolResultSchema, { timeout: 10_000 })
    .then((result) => ({ result }), (error) => ({ error }));
  await sleep(200);
  const cancelled = await a.experimental.tasks.cancelTask(taskId);
  eq(cancelled.status, 'cancelled', 'tasks/cancel result status');
  eq(cancelled.taskId, taskId, 'tasks/cancel result taskId');
  await expectError(a.experimental.tasks.cancelTask(taskId), INVALID_PARAMS, 'second tasks/cancel');
  eq((await a.experimental.tasks.getTask(taskId)).status, 'cancelled', 'tasks/get after cancel');
  const settled = await pending;
  check(!(settled.error instanceof McpError && settled.error.code === -32001), 'tasks/result still pending 10 s after the cancel');
  check(sleepTaskId, 'no completed task from scenario a');
  await expectError(a.experimental.tasks.cancelTask(sleepTaskId), INVALID_PARAMS, 'tasks/cancel of a completed task');
  return settled.error ? `tasks/result answered ${describeError(settled.error)}` : 'tasks/result answered a result';
});

await scenario('e. unknown task id -> -32602 on tasks/get, tasks/result, tasks/cancel', async () => {
  const bogus = randomUUID();
  await expectError(a.experimental.tasks.getTask(bogus), INVALID_PARAMS, 'tasks/get');
  await expectError(a.experimental.tasks.getTaskResult(bogus, CallToolResultSchema, { timeout: 5_000 }), INVALID_PARAMS, 'tasks/result');
  await expectError(a.experimental.tasks.cancelTask(bogus), INVALID_PARAMS, 'tasks/cancel');
});

await scenario('f. taskSupport: confirm without task -> -32601, echo with task -> -32601, echo plain works', async () => {
  await expectError(
    a.request({ method: 'tools/call', params: { name: 'confirm', arguments: { question: 'no task?' } } }, CallToolResultSchema),
    METHOD_NOT_FOUND,
    'confirm without task',
  );
  await expectError(createTask(a, 'echo', { text: 'as a task' }), METHOD_NOT_FOUND, 'echo with task');
  const plain = await a.callTool({ name: 'echo', arguments: { text: 'hello over http' } });
  eq(textOf(plain), 'hello over http', 'echo text');
});

// g. The 2025-11-25 elicitation round trip over HTTP: `confirm` as a task through the SDK's
// callToolStream (tasks/get polling, then tasks/result, whose SSE stream or the session's
// GET stream carries the task's elicitation/create and status notifications).
async function confirmRoundTrip(peer, question, expectedText) {
  const before = peer.elicitations.length;
  const statuses = [];
  let created;
  let result;
  for await (const msg of peer.client.experimental.tasks.callToolStream({ name: 'confirm', arguments: { question } })) {
    if (msg.type === 'taskCreated') created = msg.task;
    else if (msg.type === 'taskStatus') statuses.push(msg.task.status);
    else if (msg.type === 'result') result = msg.result;
    else if (msg.type === 'error') throw new CheckFailure(`stream ended with error: ${describeError(msg.error)}`);
  }
  check(created, 'no taskCreated message');
  eq(created.status, 'working', 'CreateTaskResult task.status');
  const mine = peer.elicitations.slice(before);
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
  eq((await peer.client.experimental.tasks.getTask(created.taskId)).status, 'completed', 'tasks/get after the round trip');
  const notified = await notifiedStatuses(peer, created.taskId, ['input_required', 'completed']);
  return `task ${created.taskId}; polled ${statuses.join(',')}; notified ${notified.join(',')}`;
}

await scenario('g. alice: confirm as a task over HTTP: elicitation/create (related task) accepted {answer} -> completed with the answer; input_required and completed notified', () =>
  confirmRoundTrip(alice, 'Proceed over HTTP?', 'the user answered: yes from alice'));

await scenario('g1. bob: the same round trip in his own session', () =>
  confirmRoundTrip(bob, 'Bob, proceed over HTTP?', 'the user answered: yes from bob'));

await scenario('g2. alice: elicitation declined -> the task completes saying "the user declined"', () =>
  confirmRoundTrip(alice, 'Shall we stop? [decline]', 'the user declined'));

await scenario('g4. without the standalone GET stream (the client\'s fetch answers GET with 405), the elicitation and the status notifications come on the tasks/result SSE stream', async () => {
  let refusedGets = 0;
  const noGet = async (input, init) => {
    if ((init?.method ?? 'GET').toUpperCase() === 'GET') {
      refusedGets += 1;
      return new Response(null, { status: 405 });
    }
    return fetch(input, init);
  };
  const peer = newClient('mcp-tasks-interop-ts-alice-no-get', 'alice');
  peer.transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${aliceToken}` } },
    fetch: noGet,
  });
  await peer.client.connect(peer.transport);
  try {
    await peer.client.listTools();
    const detail = await confirmRoundTrip(peer, 'No GET stream: proceed?', 'the user answered: yes from alice');
    check(refusedGets >= 1, 'the SDK never tried to open the GET stream');
    return `${detail}; ${refusedGets} GET refused client-side`;
  } finally {
    await peer.client.close().catch(() => {});
  }
});

await scenario("g3. while alice's confirm waits for her answer (input_required), bob cannot see, wait on, cancel or list it; then she answers", async () => {
  const before = alice.elicitations.length;
  const taskId = (await createTask(a, 'confirm', { question: 'Hold on [hold]' })).task.taskId;
  const e = await nthElicitation(alice, before);
  eq(e.related?.taskId, taskId, 'elicitation _meta related-task taskId');
  eq((await a.experimental.tasks.getTask(taskId)).status, 'input_required', "alice's tasks/get while her answer is pending");
  const unknown = randomUUID();
  const cases = [
    ['tasks/get', (id) => b.experimental.tasks.getTask(id)],
    ['tasks/result', (id) => b.experimental.tasks.getTaskResult(id, CallToolResultSchema, { timeout: 5_000 })],
    ['tasks/cancel', (id) => b.experimental.tasks.cancelTask(id)],
  ];
  for (const [what, call] of cases) {
    const t0 = Date.now();
    const foreign = await errorOf(call(taskId), `bob ${what} on alice's waiting task`);
    const took = Date.now() - t0;
    const missing = await errorOf(call(unknown), `bob ${what} on an unknown id`);
    sameAsUnknown(foreign, taskId, missing, unknown, `bob ${what}`);
    check(took < 2_000, `bob's ${what} on alice's waiting task took ${took} ms (must not wait on it)`);
  }
  check(!(await listAll(b)).ids.includes(taskId), "bob's tasks/list shows alice's waiting task");
  check(!bob.elicitations.some((x) => x.related?.taskId === taskId), "bob received alice's elicitation");
  check(!bob.statusNotifications.some((n) => n.taskId === taskId), "bob was notified of alice's task");
  eq((await a.experimental.tasks.getTask(taskId)).status, 'input_required', "alice's task after bob's attempts");
  e.release();
  const result = await a.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { timeout: 10_000 });
  eq(textOf(result), 'the user answered: yes from alice', 'tasks/result text');
  eq((await a.experimental.tasks.getTask(taskId)).status, 'completed', 'tasks/get after the answer');
  const notified = await notifiedStatuses(alice, taskId, ['input_required', 'completed']);
  return `task ${taskId}; notified ${notified.join(',')}`;
});

let aliceLongId;
await scenario("i1. owner isolation: bob cannot get, wait on, cancel or list alice's task; his errors equal an unknown id's", async () => {
  aliceLongId = (await createTask(a, 'sleep', { ms: 25_000 })).task.taskId;
  const bobOwn = (await createTask(b, 'sleep', { ms: 50 })).task.taskId;
  const unknown = randomUUID();
  const cases = [
    ['tasks/get', (id) => b.experimental.tasks.getTask(id)],
    ['tasks/result', (id) => b.experimental.tasks.getTaskResult(id, CallToolResultSchema, { timeout: 5_000 })],
    ['tasks/cancel', (id) => b.experimental.tasks.cancelTask(id)],
  ];
  for (const [what, call] of cases) {
    for (const target of [aliceLongId, failTaskId]) {
      const t0 = Date.now();
      const foreign = await errorOf(call(target), `bob ${what} on alice's task`);
      const took = Date.now() - t0;
      const missing = await errorOf(call(unknown), `bob ${what} on an unknown id`);
      sameAsUnknown(foreign, target, missing, unknown, `bob ${what}`);
      check(took < 2_000, `bob's ${what} on alice's running task took ${took} ms (must not wait on it)`);
    }
  }
  eq((await a.experimental.tasks.getTask(aliceLongId)).status, 'working', "alice's task after bob's cancel attempt");
  const bobList = await listAll(b);
  const aliceList = await listAll(a);
  for (const id of [aliceLongId, failTaskId, sleepTaskId]) check(!bobList.ids.includes(id), `bob's tasks/list shows alice's task ${id}`);
  check(bobList.ids.includes(bobOwn), "bob's tasks/list lacks his own task");
  check(!aliceList.ids.includes(bobOwn), "alice's tasks/list shows bob's task");
  // A cursor is bound to its principal: alice's cursor is no cursor for bob.
  const aliceCursor = aliceList.pages[0].nextCursor;
  check(aliceCursor, `alice has only one page (${aliceList.ids.length} tasks); cannot test cursor binding`);
  await expectError(b.experimental.tasks.listTasks(aliceCursor), INVALID_PARAMS, "bob's tasks/list with alice's cursor");
  return `bob lists ${bobList.ids.length} task(s), alice ${aliceList.ids.length}`;
});

await scenario('i2. reconnect: a new session with the same token sees (and may cancel) its tasks', async () => {
  check(aliceLongId, 'no task from i1');
  const again = await connect('mcp-tasks-interop-ts-alice-again', aliceToken, 'alice');
  try {
    check(again.transport.sessionId && again.transport.sessionId !== alice.transport.sessionId, 'the new connection reused the old session id');
    const t = await again.client.experimental.tasks.getTask(aliceLongId);
    eq(t.status, 'working', 'task status from the new session');
    const done = await again.client.experimental.tasks.getTask(failTaskId);
    eq(done.status, 'failed', 'finished task from the new session');
    const { ids } = await listAll(again.client);
    check(ids.includes(aliceLongId) && ids.includes(failTaskId), 'the new session does not list the old tasks');
    const cancelled = await again.client.experimental.tasks.cancelTask(aliceLongId);
    eq(cancelled.status, 'cancelled', 'cancel from the new session');
    eq((await a.experimental.tasks.getTask(aliceLongId)).status, 'cancelled', 'the old session sees the cancel');
    return `sessions ${alice.transport.sessionId.slice(0, 8)}… and ${again.transport.sessionId.slice(0, 8)}…, ${ids.length} tasks`;
  } finally {
    await again.client.close().catch(() => {});
  }
});

// The 2026-07-28 tasks extension over the same endpoint, as raw JSON-RPC (the SDK above
// speaks 2025-11-25 only): stateless requests framed in `_meta`, no session. Its input
// travels in tasks/get and tasks/update, which JSON-only HTTP carries.
const EXT_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};
let extId = 0;
async function extCall(token, method, params = {}) {
  extId += 1;
  // The stateless wire's routing headers: the method, and what the body names (SEP-2243).
  const name = params.name ?? params.uri ?? params.taskId;
  const routing = { 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) };
  const r = await post(
    { jsonrpc: '2.0', id: `ext-${extId}`, method, params: { ...params, _meta: EXT_META } },
    { ...bearer(token), 'mcp-protocol-version': '2026-07-28', ...routing },
  );
  eq(r.status, 200, `${method} HTTP status`);
  return r.json();
}

await scenario('x. 2026-07-28 tasks extension over HTTP (raw JSON-RPC, no session): confirm answered through tasks/update; bob isolated', async () => {
  const discover = await extCall(aliceToken, 'server/discover');
  check(discover.result?.capabilities?.extensions?.['io.modelcontextprotocol/tasks'], `server/discover: ${JSON.stringify(discover)}`);
  const created = await extCall(aliceToken, 'tools/call', { name: 'confirm', arguments: { question: 'Over HTTP?' } });
  eq(created.result?.resultType, 'task', 'tools/call resultType');
  const taskId = created.result.taskId;
  let task;
  for (let i = 0; i < 50; i += 1) {
    task = (await extCall(aliceToken, 'tasks/get', { taskId })).result;
    if (task?.status === 'input_required') break;
    await sleep(50);
  }
  eq(task?.status, 'input_required', 'status before the answer');
  const [key, request] = Object.entries(task.inputRequests ?? {})[0] ?? [];
  eq(request?.method, 'elicitation/create', 'input request method');
  eq(request?.params?.message, 'Over HTTP?', 'input request message');
  const foreign = await extCall(bobToken, 'tasks/get', { taskId });
  const unknownId = randomUUID();
  const missing = await extCall(bobToken, 'tasks/get', { taskId: unknownId });
  sameAsUnknown(foreign.error, taskId, missing.error, unknownId, 'bob tasks/get (extension)');
  const foreignUpdate = await extCall(bobToken, 'tasks/update', { taskId, inputResponses: { [key]: { action: 'decline' } } });
  eq(foreignUpdate.error?.code, INVALID_PARAMS, "bob's tasks/update of alice's task");
  const updated = await extCall(aliceToken, 'tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { answer: 'yes' } } } });
  check(updated.result, `tasks/update: ${JSON.stringify(updated)}`);
  for (let i = 0; i < 50; i += 1) {
    task = (await extCall(aliceToken, 'tasks/get', { taskId })).result;
    if (task?.status === 'completed') break;
    await sleep(50);
  }
  eq(task?.status, 'completed', 'status after the answer');
  eq(textOf(task.result), 'the user answered: yes', 'inlined result text');
  return `task ${taskId}`;
});

await scenario('h. notifications/tasks/status over HTTP: full Task params, no related-task _meta, each principal only of its own tasks', async () => {
  for (const peer of [alice, bob]) {
    const ns = peer.statusNotifications;
    check(ns.length > 0, `${peer.who} received no notifications/tasks/status`);
    for (const n of ns) {
      check(typeof n.taskId === 'string' && typeof n.status === 'string', `bad notification params ${JSON.stringify(n)}`);
      check(n.createdAt && n.lastUpdatedAt && 'ttl' in n, `notification params are not a full Task: ${JSON.stringify(n)}`);
      check(!n._meta?.[RELATED_TASK_META_KEY], `a notification carries related-task _meta (spec: SHOULD NOT): ${JSON.stringify(n)}`);
    }
  }
  await notifiedStatuses(alice, sleepTaskId, ['completed']);
  await notifiedStatuses(alice, failTaskId, ['failed']);
  const aliceIds = new Set(alice.statusNotifications.map((n) => n.taskId));
  const bobIds = new Set(bob.statusNotifications.map((n) => n.taskId));
  for (const id of bobIds) check(!aliceIds.has(id), `task ${id} notified to both alice and bob`);
  const counts = (ns) => {
    const c = {};
    for (const n of ns) c[n.status] = (c[n.status] ?? 0) + 1;
    return JSON.stringify(c);
  };
  return `alice ${alice.statusNotifications.length} ${counts(alice.statusNotifications)}, bob ${bob.statusNotifications.length} ${counts(bob.statusNotifications)}`;
});

await a.close().catch(() => {});
await b.close().catch(() => {});
finish();
