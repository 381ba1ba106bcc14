// The TypeScript peer of the wire benchmark: the official MCP SDK (1.32.2, pinned in
// package-lock.json) serving `sleep {ms}` as a task over Streamable HTTP, MCP 2025-11-25
// with sessions, tasks kept in the SDK's own `InMemoryTaskStore` (one store for the whole
// process, as the SDK's own example server does).
//
//   node server.mjs [--listen 127.0.0.1:0]
//
// The first line on stdout is `listening on http://ADDR/mcp`. Plain `node:http` (no
// framework); one `McpServer` and one `StreamableHTTPServerTransport` per session, as the
// SDK requires, with its defaults (answers as SSE, no event store). A session lives until
// the client deletes it or the process ends.

import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks';

const args = process.argv.slice(2);
const at = args.indexOf('--listen');
const listen = at >= 0 ? args[at + 1] : '127.0.0.1:0';
const [host, port] = [listen.slice(0, listen.lastIndexOf(':')), Number(listen.slice(listen.lastIndexOf(':') + 1))];

const taskStore = new InMemoryTaskStore();
const sessions = new Map();

function newServer() {
    const server = new McpServer(
        { name: 'mcp-tasks-wire-ts-peer', version: '0.0.0' },
        {
            capabilities: { tasks: { requests: { tools: { call: {} } }, list: {}, cancel: {} } },
            taskStore,
            taskMessageQueue: new InMemoryTaskMessageQueue()
        }
    );
    server.experimental.tasks.registerToolTask(
        'sleep',
        {
            description: 'Sleeps ms milliseconds, then answers',
            inputSchema: { ms: z.number().int().min(0) },
            execution: { taskSupport: 'optional' }
        },
        {
            async createTask({ ms }, { taskStore: store, taskRequestedTtl }) {
                const task = await store.createTask({ ttl: taskRequestedTtl });
                setTimeout(() => {
                    store
                        .storeTaskResult(task.taskId, 'completed', {
                            content: [{ type: 'text', text: `slept ${ms} ms` }]
                        })
                        .catch(err => console.error('storeTaskResult:', err));
                }, ms);
                return { task };
            },
            async getTask(_args, { taskId, taskStore: store }) {
                return await store.getTask(taskId);
            },
            async getTaskResult(_args, { taskId, taskStore: store }) {
                return await store.getTaskResult(taskId);
            }
        }
    );
    return server;
}

function reply(res, status, message) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

async function readBody(req) {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    return Buffer.concat(chunks).toString('utf8');
}

const http = createServer(async (req, res) => {
    try {
        if (!req.url.startsWith('/mcp')) return reply(res, 404, 'not found');
        const sessionId = req.headers['mcp-session-id'];
        const session = sessionId ? sessions.get(sessionId) : undefined;
        if (req.method !== 'POST') {
            if (!session) return reply(res, sessionId ? 404 : 400, 'no such session');
            return await session.handleRequest(req, res);
        }
        const body = JSON.parse(await readBody(req));
        if (session) return await session.handleRequest(req, res, body);
        if (sessionId) return reply(res, 404, 'Session not found');
        if (!isInitializeRequest(body)) return reply(res, 400, 'no session and not initialize');
        const transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: id => sessions.set(id, transport)
        });
        transport.onclose = () => {
            if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await newServer().connect(transport);
        await transport.handleRequest(req, res, body);
    } catch (err) {
        console.error('request:', err);
        if (!res.headersSent) reply(res, 500, String(err));
    }
});
// As the Rust servers: keep-alive connections stay open while the clients use them.
http.keepAliveTimeout = 60_000;
http.headersTimeout = 65_000;
http.on('connection', socket => socket.setNoDelay(true));
// The accept queue of the Rust servers (tokio's default, 1,024) rather than Node's 511:
// 1,000 clients connect within a second while the event loop is busy opening sessions.
http.listen({ port, host, backlog: 1024 }, () => {
    const { address, port: bound } = http.address();
    console.log(`listening on http://${address}:${bound}/mcp`);
});
const stop = () => {
    taskStore.cleanup();
    process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
