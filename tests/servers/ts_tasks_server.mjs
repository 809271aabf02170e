// An MCP server with the 2025-11-25 experimental tasks, built on the TypeScript
// SDK 1.x (`@modelcontextprotocol/sdk`, pinned in .peers/ by scripts/install_peers.sh).
//
//   node22 tests/servers/ts_tasks_server.mjs PORT [--events-file PATH] [--peers-dir DIR]
//
// Serves stateful Streamable HTTP at http://127.0.0.1:PORT/mcp (one McpServer
// and transport per session, mounted on node:http), declaring the capability
// `tasks: {list, cancel, requests: {tools: {call}}}`.  The SDK's Protocol
// answers tasks/get, tasks/result, tasks/list and tasks/cancel from the task
// store.  The store is shared by all sessions and does not bind a task to the
// session that created it, so a new client (a new session) can resume a task
// by its id.  Every task has pollInterval 100 ms.
//
// Tools (registered with `server.experimental.tasks.registerToolTask`, so they
// carry `execution.taskSupport`):
//   slow_task(steps=3, delay=0.2)  taskSupport "optional": status message
//                                  "step i/n" per step; result "counted to N".
//                                  Called without `task`, the SDK runs it as a
//                                  task itself and answers the call when done.
//   slow_required(steps=3, delay=0.2)  the same, taskSupport "required" (a
//                                  client that tasks only required tools, as
//                                  mcpcore does in this era, follows this one).
//   required_task(text)            taskSupport "required": "required: <text>";
//                                  without `task` the SDK answers -32601.
//   ask_task(action)               "required": elicits {confirmed: boolean}
//                                  through the task's side channel (status
//                                  input_required; the request is delivered on
//                                  the tasks/result stream); result
//                                  "<action>: accept confirmed=true" /
//                                  "<action>: decline" / "<action>: cancel".
//   failing_task(reason)           "required": the task ends "failed" with a
//                                  CallToolResult {isError: true, text reason}.
//   long_task(seconds=30)          "required": runs until done or cancelled; a
//                                  tasks/cancel is recorded as `cancelled long_task`.
//   echo(text)                     a plain tool (taskSupport "forbidden").
//
// --events-file lines: `start <tool>`, `done <tool>`, `failed <tool>`,
// `ask <tool>`, `answer <tool> <action>`, `cancelled <tool>`,
// `request <method>` per JSON-RPC request received.

import { appendFileSync } from 'node:fs';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

function parseArgs(argv) {
    const args = { port: null, eventsFile: null, peersDir: null };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === '--events-file') args.eventsFile = next();
        else if (a === '--peers-dir') args.peersDir = next();
        else if (args.port === null && /^\d+$/.test(a)) args.port = Number(a);
        else throw new Error(`unexpected argument ${a}`);
    }
    if (args.port === null) throw new Error('usage: ts_tasks_server.mjs PORT [--events-file PATH] [--peers-dir DIR]');
    return args;
}

const args = parseArgs(process.argv.slice(2));
const here = path.dirname(fileURLToPath(import.meta.url));
const peersDir = path.resolve(args.peersDir ?? process.env.MCP_PEERS_DIR ?? path.join(here, '..', '..', '.peers'));
const sdkDir = path.join(peersDir, 'node_modules', '@modelcontextprotocol', 'sdk');
const sdkEsm = (rel) => import(pathToFileURL(path.join(sdkDir, 'dist', 'esm', rel)).href);
const requireFromSdk = createRequire(path.join(sdkDir, 'package.json'));
const { z } = requireFromSdk('zod');
const sdkVersion = requireFromSdk('./package.json').version;
const { McpServer } = await sdkEsm('server/mcp.js');
const { StreamableHTTPServerTransport } = await sdkEsm('server/streamableHttp.js');
const { InMemoryTaskStore, InMemoryTaskMessageQueue } = await sdkEsm('experimental/tasks/stores/in-memory.js');
const { ElicitResultSchema } = await sdkEsm('types.js');

function record(line) {
    if (args.eventsFile) appendFileSync(args.eventsFile, line + '\n');
}

const POLL_MS = 100;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

// Tasks are not bound to a session: a new session may poll or cancel them.
class SharedTaskStore extends InMemoryTaskStore {
    createTask(taskParams, requestId, request, _sessionId) {
        return super.createTask(taskParams, requestId, request, undefined);
    }
}
const taskStore = new SharedTaskStore();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function statusOf(taskId) {
    const task = await taskStore.getTask(taskId);
    return task?.status;
}

// Run `work(taskId)` in the background; its return value completes the task,
// a thrown error fails it.  A task cancelled meanwhile is left cancelled.
function runTask(extra, name, work) {
    return (async () => {
        const task = await extra.taskStore.createTask({ ttl: extra.taskRequestedTtl ?? 60000, pollInterval: POLL_MS });
        record(`start ${name}`);
        (async () => {
            try {
                const result = await work(task.taskId);
                if (TERMINAL.has(await statusOf(task.taskId))) return;
                await taskStore.storeTaskResult(task.taskId, 'completed', result);
                record(`done ${name}`);
            } catch (error) {
                if (TERMINAL.has(await statusOf(task.taskId))) return;
                await taskStore.storeTaskResult(task.taskId, 'failed', {
                    content: [{ type: 'text', text: String(error?.message ?? error) }],
                    isError: true,
                });
                record(`failed ${name}`);
            }
        })();
        return { task };
    })();
}

const taskHandlers = (name, work) => ({
    createTask: async (toolArgs, extra) => runTask(extra, name, (taskId) => work(toolArgs, extra, taskId)),
    getTask: async (_toolArgs, extra) => taskStore.getTask(extra.taskId),
    getTaskResult: async (_toolArgs, extra) => taskStore.getTaskResult(extra.taskId),
});

const text = (t) => ({ content: [{ type: 'text', text: t }] });

function createServer() {
    const server = new McpServer(
        { name: 'mcpcore-ts-tasks-peer', version: sdkVersion },
        {
            capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
            taskStore,
            taskMessageQueue: new InMemoryTaskMessageQueue(),
        },
    );
    server.registerTool('echo', { description: 'Echo the text back.', inputSchema: { text: z.string() } }, async ({ text: t }) =>
        text(t),
    );
    const tasks = server.experimental.tasks;
    tasks.registerToolTask(
        'slow_task',
        {
            description: 'Count to steps with a status message per step.',
            inputSchema: { steps: z.number().int().default(3), delay: z.number().default(0.2) },
            execution: { taskSupport: 'optional' },
        },
        taskHandlers('slow_task', async ({ steps, delay }, _extra, taskId) => {
            for (let i = 1; i <= steps; i++) {
                await sleep(delay * 1000);
                if (TERMINAL.has(await statusOf(taskId))) return undefined;
                await taskStore.updateTaskStatus(taskId, 'working', `step ${i}/${steps}`);
            }
            return text(`counted to ${steps}`);
        }),
    );
    tasks.registerToolTask(
        'slow_required',
        {
            description: 'Count to steps with a status message per step (only as a task).',
            inputSchema: { steps: z.number().int().default(3), delay: z.number().default(0.2) },
            execution: { taskSupport: 'required' },
        },
        taskHandlers('slow_required', async ({ steps, delay }, _extra, taskId) => {
            for (let i = 1; i <= steps; i++) {
                await sleep(delay * 1000);
                if (TERMINAL.has(await statusOf(taskId))) return undefined;
                await taskStore.updateTaskStatus(taskId, 'working', `step ${i}/${steps}`);
            }
            return text(`counted to ${steps}`);
        }),
    );
    tasks.registerToolTask(
        'required_task',
        {
            description: 'Return the text; only runs as a task.',
            inputSchema: { text: z.string() },
            execution: { taskSupport: 'required' },
        },
        taskHandlers('required_task', async ({ text: t }) => text(`required: ${t}`)),
    );
    tasks.registerToolTask(
        'ask_task',
        {
            description: 'Ask the client to confirm the action before completing.',
            inputSchema: { action: z.string() },
            execution: { taskSupport: 'required' },
        },
        taskHandlers('ask_task', async ({ action }, extra, taskId) => {
            record('ask ask_task');
            const answer = await extra.sendRequest(
                {
                    method: 'elicitation/create',
                    params: {
                        mode: 'form',
                        message: `Confirm ${action}?`,
                        requestedSchema: {
                            type: 'object',
                            properties: { confirmed: { type: 'boolean' } },
                            required: ['confirmed'],
                        },
                    },
                },
                ElicitResultSchema,
                { relatedTask: { taskId }, timeout: 60000 },
            );
            await taskStore.updateTaskStatus(taskId, 'working');
            record(`answer ask_task ${answer.action}`);
            if (answer.action === 'accept') return text(`${action}: accept confirmed=${answer.content?.confirmed}`);
            return text(`${action}: ${answer.action}`);
        }),
    );
    tasks.registerToolTask(
        'failing_task',
        {
            description: 'Fail with the reason.',
            inputSchema: { reason: z.string().default('it broke') },
            execution: { taskSupport: 'required' },
        },
        taskHandlers('failing_task', async ({ reason }) => {
            throw new Error(reason);
        }),
    );
    tasks.registerToolTask(
        'long_task',
        {
            description: 'Run until done or cancelled.',
            inputSchema: { seconds: z.number().default(30) },
            execution: { taskSupport: 'required' },
        },
        taskHandlers('long_task', async ({ seconds }, _extra, taskId) => {
            const end = Date.now() + seconds * 1000;
            while (Date.now() < end) {
                await sleep(50);
                if ((await statusOf(taskId)) === 'cancelled') {
                    record('cancelled long_task');
                    return undefined;
                }
            }
            return text(`slept ${seconds}`);
        }),
    );
    return server;
}

// ---------------------------------------------------------------------------
// HTTP: one transport + McpServer per session

const sessions = new Map();

async function readBody(req) {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const raw = Buffer.concat(chunks).toString('utf8');
    return raw ? JSON.parse(raw) : undefined;
}

const httpServer = http.createServer(async (req, res) => {
    try {
        if (new URL(req.url, 'http://x').pathname !== '/mcp') {
            res.writeHead(404).end();
            return;
        }
        const sid = req.headers['mcp-session-id'];
        const body = req.method === 'POST' ? await readBody(req) : undefined;
        for (const m of Array.isArray(body) ? body : body ? [body] : []) {
            if (m && m.method && m.id !== undefined) record(`request ${m.method}`);
        }
        let transport = sid ? sessions.get(sid) : undefined;
        if (!transport) {
            if (sid || req.method !== 'POST' || body?.method !== 'initialize') {
                res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' });
                res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no such session' } }));
                return;
            }
            transport = new StreamableHTTPServerTransport({
                sessionIdGenerator: () => randomUUID(),
                onsessioninitialized: (id) => sessions.set(id, transport),
            });
            transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
            await createServer().connect(transport);
        }
        await transport.handleRequest(req, res, body);
    } catch (error) {
        if (!res.headersSent) {
            res.writeHead(500, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: String(error) } }));
        }
    }
});

httpServer.listen(args.port, '127.0.0.1', () => {
    console.log(`ts_tasks_server (sdk ${sdkVersion}) on http://127.0.0.1:${args.port}/mcp`);
});
for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, () => {
        httpServer.close();
        process.exit(0);
    });
}
