/**
 * The common MCP messages of a paid route answered without the SDK's Server and transport:
 * `initialize`, `tools/list` and `tools/call`, one JSON-RPC request per POST. Building a Server
 * and a Streamable HTTP transport for each message (with the web Request/Response they convert
 * to and from) cost a paid MCP call more CPU than the paid call itself (bench:mcp).
 *
 * The answer is the SDK's to the byte: the same header checks, the same zod schemas of the SDK
 * (its JSON-RPC message, its request of each method, its tool result), the result built as its
 * Server builds it, and the response object in the order its Protocol writes it. Everything else
 * (notifications, ping, batches, resources, a message a schema refuses, a chunked or oversized
 * body, a task-augmented call) is left to the SDK: with the body already read, it is handed over
 * parsed, so the SDK answers it as if it had read it itself.
 * test/integration/mcp/direct.test.ts compares the two paths' answers.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { safeParse } from '@modelcontextprotocol/sdk/server/zod-compat.js'
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js'
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ErrorCode,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  LATEST_PROTOCOL_VERSION,
  ListToolsRequestSchema,
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolRequest,
  type CallToolResult,
  type Implementation,
  type ListToolsResult,
  type RequestId,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js'

/** One service's MCP server, as both paths answer it. */
export interface McpToolServer {
  serverInfo: Implementation
  capabilities: ServerCapabilities
  listTools(): ListToolsResult
  callTool(params: CallToolRequest['params']): Promise<CallToolResult>
}

/** What the direct path did: answered, or left the message to the SDK (`parsedBody` when it read the body). */
export type DirectOutcome = { answered: true } | { answered: false; parsedBody?: unknown }

const DIRECT_METHODS = new Set(['initialize', 'tools/list', 'tools/call'])
const LEAVE: DirectOutcome = { answered: false }
const ANSWERED: DirectOutcome = { answered: true }
// as the web Request's text(): UTF-8, a leading BOM dropped, bad bytes replaced
const utf8 = new TextDecoder()

export async function answerDirect(
  req: IncomingMessage,
  res: ServerResponse,
  server: McpToolServer,
  maxBytes: number,
): Promise<DirectOutcome> {
  if (!headersFit(req, maxBytes)) return LEAVE
  let text: string
  try {
    text = utf8.decode(await readBody(req))
  } catch {
    // as the SDK answers a body it could not read
    return send(res, 400, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: Invalid JSON' }, id: null })
  }
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return send(res, 400, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: Invalid JSON' }, id: null })
  }
  const message = directMessage(body)
  if (message === undefined) return { answered: false, parsedBody: body }
  // the id of the message the SDK's transport parsed: a method's request schema has none
  const requestId = message.id
  const method = (body as { method: string }).method
  if (method !== 'tools/call') return answerListing(res, server, method, message, requestId) ?? leaveToSdk(body)
  const request = safeParse(CallToolRequestSchema, message)
  if (!request.success) return leaveToSdk(body)
  let result: CallToolResult
  try {
    result = checkedToolResult(await server.callTool(request.data.params))
  } catch (err) {
    return sendHandlerError(res, requestId, err)
  }
  return sendResult(res, requestId, result)
}

/** The message left to the SDK, with the body this path read. */
function leaveToSdk(body: unknown): DirectOutcome {
  return { answered: false, parsedBody: body }
}

/**
 * The message as the SDK's JSON-RPC schema parses it, when the direct path answers it: one
 * request of a direct method, not task-augmented; else undefined (the SDK's to answer).
 */
function directMessage(body: unknown): { id: RequestId } | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined
  const { method, id, params } = body as { method?: unknown; id?: unknown; params?: unknown }
  if (typeof method !== 'string' || !DIRECT_METHODS.has(method) || id === undefined) return undefined
  // a task-augmented request: the SDK refuses it (no tasks capability)
  if (params !== null && typeof params === 'object' && 'task' in params) return undefined
  const message = safeParse(JSONRPCMessageSchema, body)
  return message.success ? (message.data as { id: RequestId }) : undefined
}

/** `initialize` and `tools/list` answered as the SDK's Server answers them; undefined when the method's schema refuses the message. */
function answerListing(
  res: ServerResponse,
  server: McpToolServer,
  method: string,
  message: unknown,
  requestId: RequestId,
): DirectOutcome | undefined {
  if (method === 'initialize') {
    const request = safeParse(InitializeRequestSchema, message)
    if (!request.success) return undefined
    const requested = request.data.params.protocolVersion
    return sendResult(res, requestId, {
      protocolVersion: SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION,
      capabilities: server.capabilities,
      serverInfo: server.serverInfo,
    })
  }
  const request = safeParse(ListToolsRequestSchema, message)
  if (!request.success) return undefined
  return sendResult(res, requestId, server.listTools())
}

/** The tool's result as the SDK's Server checks it: a result its schema refuses is thrown as an McpError. */
function checkedToolResult(result: CallToolResult): CallToolResult {
  const answer = safeParse(CallToolResultSchema, result)
  if (!answer.success) {
    const error: unknown = answer.error
    throw new McpError(
      ErrorCode.InvalidParams,
      `Invalid tools/call result: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  return answer.data
}

/** As the SDK's Protocol answers a handler that threw. */
function sendHandlerError(res: ServerResponse, requestId: RequestId, err: unknown): DirectOutcome {
  const e = err as { code?: unknown; message?: string; data?: unknown }
  return send(res, 200, {
    jsonrpc: '2.0',
    id: requestId,
    error: {
      code: Number.isSafeInteger(e.code) ? e.code : ErrorCode.InternalError,
      message: e.message ?? 'Internal error',
      ...(e.data !== undefined && { data: e.data }),
    },
  })
}

/** The checks the SDK's transport makes before it reads a body all pass, and the body is one of a known, bounded length. */
function headersFit(req: IncomingMessage, maxBytes: number): boolean {
  const h = req.headers
  const accept = h.accept
  if (accept === undefined || !accept.includes('application/json') || !accept.includes('text/event-stream'))
    return false
  if (!isJsonContentType(h['content-type'])) return false
  const version = h['mcp-protocol-version']
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version as string)) return false
  const length = h['content-length']
  if (length === undefined || h['transfer-encoding'] !== undefined) return false
  const bytes = Number(length)
  return Number.isSafeInteger(bytes) && bytes > 0 && bytes <= maxBytes
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)))
    req.once('error', reject)
    req.once('close', () => {
      if (!req.complete) reject(new Error('request closed before its body was read'))
    })
  })
}

// the SDK's Protocol writes a response as { result, jsonrpc, id }
function sendResult(res: ServerResponse, id: RequestId, result: unknown): DirectOutcome {
  return send(res, 200, { result, jsonrpc: '2.0', id })
}

function send(res: ServerResponse, status: number, message: unknown): DirectOutcome {
  if (res.headersSent || res.destroyed) return ANSWERED
  const body = JSON.stringify(message)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body)
  return ANSWERED
}
