// An MCP server speaking revision 2026-07-28, built on the TypeScript SDK v2
// (`@modelcontextprotocol/server`, installed into .peers/ by scripts/install_peers.sh).
//
//   node22 tests/servers/ts_modern_server.mjs PORT [--mode dual|modern-only]
//       [--response-mode auto|sse|json] [--events-file PATH] [--peers-dir DIR]
//
// Serves Streamable HTTP at http://127.0.0.1:PORT/mcp through the SDK's
// `createMcpHandler(factory, options)` (a web-standard fetch handler; a fresh
// McpServer per HTTP request), mounted on node:http by a small adapter below
// (the official `@modelcontextprotocol/node` adapter would pull in hono).
//
// --mode dual         (default) `legacy: 'stateless'`: 2025-era traffic is
//                     served statelessly (no Mcp-Session-Id; GET/DELETE → 405).
// --mode modern-only  `legacy: 'reject'`: handshake-era requests get the SDK's
//                     UnsupportedProtocolVersion error; notifications 202.
// --mode stateful     2026-07-28 as in `dual`; handshake-era traffic (told apart
//                     by the SDK's `isLegacyRequest`) goes to a sessionful
//                     `WebStandardStreamableHTTPServerTransport` per session
//                     (Mcp-Session-Id, GET stream, DELETE), the SDK's documented
//                     way to keep a legacy deployment next to a strict modern
//                     endpoint. There the SDK's legacy shim turns an
//                     input-required return into a real `elicitation/create`.
// --response-mode     the SDK's modern response shaping: auto (JSON unless the
//                     handler emits first, e.g. progress), sse (always stream),
//                     json (never stream; progress dropped).
//
// Tools: echo(text); add(a, b) → structured {sum}; slow(steps=5, delay=0.2)
// with progress (needs _meta.progressToken) and cancellation on client
// disconnect; regional(region, text, priority=0, verbose=false) whose
// parameters carry x-mcp-header Region / Priority / Verbose (the SDK validates
// the Mcp-Param-* headers of a modern call: 400 -32020 on mismatch) and which
// returns the mcp-param-* headers it received; confirm(action), an
// input-required tool (SEP-2322: `inputRequired({inputRequests: {confirm:
// elicit}})`, completed by the client's retry with inputResponses; on a
// 2025-era request the SDK's legacy shim elicits through the legacy
// connection, which a stateless server cannot do: use --mode stateful);
// signin(service), a URL question at 2026-07-28 (`inputRequired.elicitUrl`,
// no elicitationId): the server decides from its own requestState that the
// person went there, "<service>: signed in (<state>)" on accept (in the
// handshake era the shim sends it as a URL elicitation/create); handshake era
// only: visit(service), a URL elicitation (elicitationId `visit-<service>`)
// followed by notifications/elicitation/complete on accept, and gated(service),
// which refuses with -32042 (one URL, elicitationId `gate-<service>`) the first
// time per service and then answers "gated <service>: open"; add_tool(name) /
// remove_tool(name) change the tool list (shared by every per-request
// instance) and publish notifications/tools/list_changed to open
// subscriptions/listen streams.
//
// Resources, prompts, completion, logs (F2-F8): ts://greeting (text, with a
// cache hint), ts://blob (16 bytes, 0-15), the template ts://items/{item}
// (its `item` completed from apple, apricot, banana); a prompt
// review(code, language?) whose `language` completes from python, rust, go and
// whose second message embeds ts://greeting; link(name), a tool returning a
// resource_link to ts://items/<name>; shout(text), which logs `text` at info
// (the server declares `logging`) before answering.
//
// Subscriptions and list changes (F2, F5): at 2026-07-28 the server declares
// resources.subscribe and listChanged for resources and prompts, and the SDK's
// listen router honours `resourceSubscriptions` on subscriptions/listen;
// touch(uri) publishes notifications/resources/updated for `uri` to the listen
// streams that asked for it (handler.notify.resourceUpdated). change_lists()
// publishes resources and prompts list_changed to listen streams and, in the
// handshake era, sends both on the call's own stream (a stateless legacy
// request has no other way out). The handshake era (stateless in --mode dual)
// declares no resources.subscribe: with no session and no GET stream there is
// nowhere to send an update.
//
// --events-file receives the same lines as tests/servers/modern_sdk_server.py:
// `request <method>` / `notification <method>` / `get` / `delete`,
// `http {json}`, `closed <method>`, `done {json}`, and `call <tool>`,
// `progress slow <i>`, `finished slow`, `cancelled slow`, `ask confirm`,
// `tool-added <name>`, `tool-removed <name>`, `notified tools/list_changed`,
// `call link`, `call shout`, `read greeting`, `read blob`, `get review`,
// `call touch <uri>`, `call change_lists`.

import { appendFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function parseArgs(argv) {
    const args = { port: null, mode: 'dual', responseMode: 'auto', eventsFile: null, peersDir: null };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
            return argv[++i];
        };
        if (a === '--mode') args.mode = next();
        else if (a === '--response-mode') args.responseMode = next();
        else if (a === '--events-file') args.eventsFile = next();
        else if (a === '--peers-dir') args.peersDir = next();
        else if (args.port === null && /^\d+$/.test(a)) args.port = Number(a);
        else throw new Error(`unexpected argument ${a}`);
    }
    if (args.port === null) throw new Error('usage: ts_modern_server.mjs PORT [--mode dual|modern-only] ...');
    if (!['dual', 'modern-only', 'stateful'].includes(args.mode)) throw new Error(`unknown --mode ${args.mode}`);
    if (!['auto', 'sse', 'json'].includes(args.responseMode)) throw new Error(`unknown --response-mode ${args.responseMode}`);
    return args;
}

const args = parseArgs(process.argv.slice(2));
const here = path.dirname(fileURLToPath(import.meta.url));
const peersDir = path.resolve(args.peersDir ?? process.env.MCP_PEERS_DIR ?? path.join(here, '..', '..', '.peers'));
const serverPkg = path.join(peersDir, 'node_modules', '@modelcontextprotocol', 'server', 'package.json');
// Resolve the SDK (and the zod it depends on) from .peers/, wherever this script runs from.
const requireFromSdk = createRequire(serverPkg);
const sdk = requireFromSdk('@modelcontextprotocol/server');
const { z } = requireFromSdk('zod');
const sdkVersion = requireFromSdk(serverPkg).version;
const {
    McpServer,
    ResourceTemplate,
    completable,
    createMcpHandler,
    inputRequired,
    acceptedContent,
    isLegacyRequest,
    WebStandardStreamableHTTPServerTransport,
    UrlElicitationRequiredError
} = sdk;

// ---------------------------------------------------------------------------
// Events file

function record(line) {
    if (!args.eventsFile) return;
    appendFileSync(args.eventsFile, line + '\n');
}

function sortKeys(value) {
    if (Array.isArray(value)) return value.map(sortKeys);
    if (value && typeof value === 'object') {
        return Object.fromEntries(Object.keys(value).sort().map(k => [k, sortKeys(value[k])]));
    }
    return value;
}

function recordJson(tag, data) {
    record(`${tag} ${JSON.stringify(sortKeys(data))}`);
}

const RECORDED_HEADERS = new Set(['mcp-protocol-version', 'mcp-method', 'mcp-name', 'mcp-session-id', 'last-event-id', 'accept']);
const HANDSHAKE_VERSIONS = new Set(['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25']);

function describeBody(text) {
    let decoded;
    try {
        decoded = text.trim() ? JSON.parse(text) : null;
    } catch {
        return { kind: 'invalid', method: null, id: null, name: null };
    }
    if (Array.isArray(decoded)) return { kind: 'batch', method: null, id: null, name: null };
    if (!decoded || typeof decoded !== 'object') return { kind: 'invalid', method: null, id: null, name: null };
    let kind;
    let method = decoded.method;
    if (typeof method !== 'string') {
        kind = 'result' in decoded || 'error' in decoded ? 'response' : 'invalid';
        method = null;
    } else {
        kind = 'id' in decoded ? 'request' : 'notification';
    }
    const name = decoded.params && typeof decoded.params.name === 'string' ? decoded.params.name : null;
    return { kind, method, id: decoded.id ?? null, name };
}

// ---------------------------------------------------------------------------
// Tools (one definition, registered on every per-request McpServer instance)

const dynamicTools = new Set();
const visitedGates = new Set();
const sleep = (ms, signal) =>
    new Promise((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
        const timer = setTimeout(() => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
        }, ms);
        const onAbort = () => {
            clearTimeout(timer);
            reject(signal.reason ?? new Error('aborted'));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
    });

function decodeHeaderValue(value) {
    const m = /^=\?base64\?(.*)\?=$/.exec(value);
    if (!m) return value;
    try {
        return Buffer.from(m[1], 'base64').toString('utf8');
    } catch {
        return value;
    }
}

const text = t => ({ content: [{ type: 'text', text: t }] });
let handler; // set below; the tools publish list changes through it

// ---------------------------------------------------------------------------
// Resources, a template, prompts, completion and a log message (F2-F8)

const LANGUAGES = ['python', 'rust', 'go'];
const ITEMS = ['apple', 'apricot', 'banana'];

function registerFeatures(server) {
    server.registerResource(
        'greeting',
        'ts://greeting',
        { mimeType: 'text/plain', description: 'A short text.', cacheHint: { ttlMs: 60000, cacheScope: 'public' } },
        async uri => {
            record('read greeting');
            return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'hello from the ts peer' }] };
        }
    );
    server.registerResource('blob', 'ts://blob', { mimeType: 'application/octet-stream', description: 'Sixteen bytes, 0 to 15.' }, async uri => {
        record('read blob');
        const bytes = Buffer.from(Array.from({ length: 16 }, (_, i) => i));
        return { contents: [{ uri: uri.href, mimeType: 'application/octet-stream', blob: bytes.toString('base64') }] };
    });
    server.registerResource(
        'item',
        new ResourceTemplate('ts://items/{item}', {
            list: undefined,
            complete: { item: value => ITEMS.filter(i => i.startsWith(value)) }
        }),
        { mimeType: 'text/plain', description: 'One item, by name.' },
        async (uri, variables) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: `item ${variables.item}` }] })
    );
    server.registerPrompt(
        'review',
        {
            description: 'Ask for a review of `code`.',
            argsSchema: z.object({
                code: z.string(),
                language: completable(z.string(), value => LANGUAGES.filter(l => l.startsWith(value))).optional()
            })
        },
        ({ code, language }) => {
            record('get review');
            return {
                messages: [
                    { role: 'user', content: { type: 'text', text: `Please review this ${language ?? 'python'} code:\n${code}` } },
                    {
                        role: 'user',
                        content: { type: 'resource', resource: { uri: 'ts://greeting', mimeType: 'text/plain', text: 'hello from the ts peer' } }
                    }
                ]
            };
        }
    );
    server.registerTool(
        'link',
        { description: 'Return a resource_link to the item `name`.', inputSchema: z.object({ name: z.string() }) },
        async ({ name }) => {
            record('call link');
            return {
                content: [
                    { type: 'text', text: `the item ${name}` },
                    { type: 'resource_link', uri: `ts://items/${encodeURIComponent(name)}`, name: `item ${name}`, mimeType: 'text/plain' }
                ]
            };
        }
    );
    server.registerTool('shout', { description: 'Log `text` at info, then answer.', inputSchema: z.object({ text: z.string() }) }, async ({ text: t }, ctx) => {
        record('call shout');
        await ctx.mcpReq.log('info', t);
        return text(`shouted ${t}`);
    });
}

function registerChanges(server, era) {
    server.registerTool(
        'touch',
        { description: 'Announce that the resource at `uri` changed (to listen streams subscribed to it).', inputSchema: z.object({ uri: z.string() }) },
        async ({ uri }) => {
            record(`call touch ${uri}`);
            handler.notify.resourceUpdated(uri);
            return text(`touched ${uri}`);
        }
    );
    server.registerTool('change_lists', { description: 'Announce that the resource and prompt lists changed.', inputSchema: z.object({}) }, async (_args, ctx) => {
        record('call change_lists');
        handler.notify.resourcesChanged();
        handler.notify.promptsChanged();
        if (era === 'legacy') {
            await ctx.mcpReq.notify({ method: 'notifications/resources/list_changed' });
            await ctx.mcpReq.notify({ method: 'notifications/prompts/list_changed' });
        }
        return text('changed');
    });
}

function buildServer(era = 'modern') {
    const server = new McpServer(
        { name: 'mcpcore-ts-modern-server', version: sdkVersion },
        {
            capabilities: {
                tools: { listChanged: true },
                logging: {},
                resources: { subscribe: era === 'modern', listChanged: true },
                prompts: { listChanged: true }
            },
            instructions: 'mcpcore test peer (TypeScript SDK v2)'
        }
    );
    registerFeatures(server);
    registerChanges(server, era);

    server.registerTool('echo', { description: 'Echo the text back.', inputSchema: z.object({ text: z.string() }) }, async ({ text: t }) => {
        record('call echo');
        return text(t);
    });

    server.registerTool(
        'add',
        {
            description: 'Add two numbers (structured output).',
            inputSchema: z.object({ a: z.number(), b: z.number() }),
            outputSchema: z.object({ sum: z.number() })
        },
        async ({ a, b }) => {
            record('call add');
            const out = { sum: a + b };
            return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
        }
    );

    server.registerTool(
        'slow',
        {
            description: 'Take `steps` steps of `delay` seconds, reporting progress; cancellable.',
            inputSchema: z.object({ steps: z.number().int().default(5), delay: z.number().default(0.2) })
        },
        async ({ steps, delay }, ctx) => {
            record('call slow');
            const token = ctx.mcpReq._meta?.progressToken;
            try {
                for (let i = 1; i <= steps; i++) {
                    await sleep(delay * 1000, ctx.mcpReq.signal);
                    if (token !== undefined) {
                        await ctx.mcpReq.notify({
                            method: 'notifications/progress',
                            params: { progressToken: token, progress: i, total: steps, message: `step ${i}/${steps}` }
                        });
                    }
                    record(`progress slow ${i}`);
                }
            } catch (err) {
                if (ctx.mcpReq.signal.aborted) record('cancelled slow');
                throw err;
            }
            record('finished slow');
            return text(`completed ${steps} steps`);
        }
    );

    server.registerTool(
        'regional',
        {
            description: 'Echo `text` tagged with `region`; returns the Mcp-Param-* headers it received.',
            inputSchema: z.object({
                region: z.string().meta({ 'x-mcp-header': 'Region' }),
                text: z.string(),
                priority: z.number().int().default(0).meta({ 'x-mcp-header': 'Priority' }),
                verbose: z.boolean().default(false).meta({ 'x-mcp-header': 'Verbose' })
            })
        },
        async ({ region, text: t, priority, verbose }, ctx) => {
            record('call regional');
            const headers = {};
            const decoded = {};
            const req = ctx.http?.req;
            if (req) {
                for (const [k, v] of req.headers) {
                    if (k.toLowerCase().startsWith('mcp-param-')) {
                        headers[k.toLowerCase()] = v;
                        decoded[k.toLowerCase()] = decodeHeaderValue(v);
                    }
                }
            }
            const out = { region, text: t, priority, verbose, headers, decoded, headersReadable: Boolean(req) };
            return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
        }
    );

    server.registerTool(
        'confirm',
        {
            description: 'Ask the client to confirm `action` (input_required / elicitation) before completing.',
            inputSchema: z.object({ action: z.string() })
        },
        async ({ action }, ctx) => {
            const responses = ctx.mcpReq.inputResponses;
            const answer = responses?.confirm;
            if (answer === undefined) {
                record('ask confirm');
                return inputRequired({
                    inputRequests: {
                        confirm: inputRequired.elicit({
                            message: `Confirm ${action}?`,
                            requestedSchema: {
                                type: 'object',
                                properties: { confirmed: { type: 'boolean' } },
                                required: ['confirmed']
                            }
                        })
                    }
                });
            }
            record('call confirm');
            const content = acceptedContent(responses, 'confirm');
            if (content !== undefined) return text(`${action}: accept confirmed=${content.confirmed}`);
            return text(`${action}: ${answer?.action ?? 'unknown'}`);
        }
    );

    server.registerTool(
        'signin',
        {
            description: 'Ask the person to sign in to `service` at a URL (2026-07-28 input_required).',
            inputSchema: z.object({ service: z.string() })
        },
        async ({ service }, ctx) => {
            const state = ctx.mcpReq.requestState();
            const answer = ctx.mcpReq.inputResponses?.visit;
            if (state === undefined || answer === undefined) {
                record('ask signin');
                return inputRequired({
                    inputRequests: {
                        visit: inputRequired.elicitUrl({ message: `Sign in to ${service}`, url: `https://auth.example.test/${service}?code=hush` })
                    },
                    requestState: `pending-${service}`
                });
            }
            record('call signin');
            if (answer.action !== 'accept') return text(`${service}: ${answer.action}`);
            return text(`${service}: signed in (${state})`);
        }
    );

    server.registerTool(
        'visit',
        { description: 'Handshake era: a URL elicitation, then elicitation/complete on accept.', inputSchema: z.object({ service: z.string() }) },
        async ({ service }, ctx) => {
            record('call visit');
            const elicitationId = `visit-${service}`;
            // On the call's own stream (related), not the standalone GET stream.
            const related = { relatedRequestId: ctx.mcpReq.id };
            const result = await ctx.mcpReq.elicitInput(
                { mode: 'url', message: `Sign in to ${service}`, url: `https://auth.example.test/${service}?code=hush`, elicitationId },
                related
            );
            if (result.action === 'accept') await server.server.createElicitationCompletionNotifier(elicitationId, related)();
            return text(`${service}: ${result.action}`);
        }
    );

    server.registerTool(
        'gated',
        { description: 'Handshake era: -32042 (URL elicitation required) the first time per service.', inputSchema: z.object({ service: z.string() }) },
        async ({ service }) => {
            record('call gated');
            if (!visitedGates.has(service)) {
                visitedGates.add(service);
                throw new UrlElicitationRequiredError([
                    { mode: 'url', message: `Connect ${service}`, url: `https://auth.example.test/connect/${service}?state=hush`, elicitationId: `gate-${service}` }
                ]);
            }
            return text(`gated ${service}: open`);
        }
    );

    server.registerTool(
        'add_tool',
        { description: 'Register a new tool `name(text)` and announce tools/list_changed.', inputSchema: z.object({ name: z.string() }) },
        async ({ name }) => {
            record('call add_tool');
            if (dynamicTools.has(name) || ['echo', 'add', 'slow', 'regional', 'confirm', 'signin', 'visit', 'gated', 'add_tool', 'remove_tool', 'link', 'shout', 'touch', 'change_lists'].includes(name)) {
                return { ...text(`tool '${name}' already exists`), isError: true };
            }
            dynamicTools.add(name);
            record(`tool-added ${name}`);
            handler.notify.toolsChanged();
            record('notified tools/list_changed');
            return text(`added ${name}`);
        }
    );

    server.registerTool(
        'remove_tool',
        { description: 'Remove a tool added by add_tool and announce tools/list_changed.', inputSchema: z.object({ name: z.string() }) },
        async ({ name }) => {
            record('call remove_tool');
            if (!dynamicTools.delete(name)) return { ...text(`cannot remove '${name}'`), isError: true };
            record(`tool-removed ${name}`);
            handler.notify.toolsChanged();
            record('notified tools/list_changed');
            return text(`removed ${name}`);
        }
    );

    for (const name of dynamicTools) {
        server.registerTool(
            name,
            { description: `dynamic tool ${name}`, inputSchema: z.object({ text: z.string().default('') }) },
            async ({ text: t }) => {
                record(`call ${name}`);
                return text(`dynamic ${name}: ${t}`);
            }
        );
    }
    return server;
}

handler = createMcpHandler(ctx => buildServer(ctx.era), {
    legacy: args.mode === 'dual' ? 'stateless' : 'reject',
    responseMode: args.responseMode,
    onerror: err => process.stderr.write(`ts_modern_server: ${err?.stack ?? err}\n`)
});

// --mode stateful: the handshake era on sessionful transports, one per session.
const legacySessions = new Map();

async function statefulLegacy(request) {
    const sessionId = request.headers.get('mcp-session-id');
    if (sessionId !== null) {
        const known = legacySessions.get(sessionId);
        if (known === undefined) {
            return new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }), {
                status: 404,
                headers: { 'content-type': 'application/json' }
            });
        }
        return known.handleRequest(request);
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: id => legacySessions.set(id, transport),
        onsessionclosed: id => legacySessions.delete(id)
    });
    await buildServer('legacy').connect(transport);
    return transport.handleRequest(request);
}

async function serve(request) {
    if (args.mode === 'stateful' && (await isLegacyRequest(request))) return statefulLegacy(request);
    return handler.fetch(request);
}

// ---------------------------------------------------------------------------
// node:http ⇄ fetch adapter with recording

const httpServer = http.createServer(async (req, res) => {
    const verb = (req.method ?? 'GET').toUpperCase();
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = Buffer.concat(chunks);

    const headers = {};
    const fetchHeaders = new Headers();
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const key = req.rawHeaders[i].toLowerCase();
        const value = req.rawHeaders[i + 1];
        fetchHeaders.append(key, value);
        if (RECORDED_HEADERS.has(key) || key.startsWith('mcp-param-')) headers[key] = value;
    }
    const version = headers['mcp-protocol-version'];
    const era = version !== undefined && !HANDSHAKE_VERSIONS.has(version) ? 'modern' : 'legacy';
    const info = verb === 'POST' ? describeBody(body.toString('utf8')) : { kind: verb.toLowerCase(), method: null, id: null, name: null };
    const label = info.method ?? verb;
    if (verb === 'POST') record(['request', 'notification'].includes(info.kind) ? `${info.kind} ${info.method}` : `post ${info.kind}`);
    else record(verb.toLowerCase());
    recordJson('http', { verb, era, kind: info.kind, method: info.method, id: info.id, name: info.name, headers });

    const state = { status: null, contentType: null, closedByClient: false };
    const abort = new AbortController();
    let reader = null;
    res.on('close', () => {
        if (!res.writableFinished) {
            state.closedByClient = true;
            record(`closed ${label}`);
            abort.abort(new Error('client closed the response stream'));
            reader?.cancel().catch(() => {});
        }
        recordJson('done', {
            verb,
            method: info.method,
            id: info.id,
            status: state.status,
            content_type: state.contentType,
            closed_by_client: state.closedByClient
        });
    });

    try {
        const request = new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url}`, {
            method: verb,
            headers: fetchHeaders,
            body: verb === 'GET' || verb === 'HEAD' ? undefined : body,
            signal: abort.signal
        });
        const response = await serve(request);
        state.status = response.status;
        state.contentType = response.headers.get('content-type');
        const outHeaders = {};
        response.headers.forEach((value, key) => {
            outHeaders[key] = value;
        });
        res.writeHead(response.status, outHeaders);
        if (typeof res.flushHeaders === 'function') res.flushHeaders();
        if (response.body) {
            reader = response.body.getReader();
            for (;;) {
                const { done, value } = await reader.read();
                if (done) break;
                if (!res.write(value)) await new Promise(resolve => res.once('drain', resolve).once('close', resolve));
                if (res.destroyed) break;
            }
        }
        res.end();
    } catch (err) {
        if (!res.headersSent && !res.destroyed) {
            state.status = 500;
            res.writeHead(500, { 'content-type': 'text/plain' });
            res.end(String(err));
        } else {
            res.destroy();
        }
    }
});

httpServer.keepAliveTimeout = 5000;
httpServer.listen(args.port, '127.0.0.1', () => {
    process.stderr.write(
        `ts_modern_server: @modelcontextprotocol/server ${sdkVersion} mode=${args.mode} ` +
            `response-mode=${args.responseMode} http://127.0.0.1:${args.port}/mcp\n`
    );
});

function shutdown() {
    httpServer.close();
    httpServer.closeAllConnections?.();
    handler.close().finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 1000).unref();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
