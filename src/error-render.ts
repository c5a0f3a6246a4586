import type { FastifyReply } from 'fastify'
import { statusText, type AppError } from './errors.js'

// The one rendering of a catalogue error (errors.ts): `{statusCode, code, error, message, ...details}`.

/** Renders one catalogue error: its headers, its status and `{statusCode, code, error, message, ...details}`. */
export function sendAppError(reply: FastifyReply, e: AppError): FastifyReply {
  if (e.headers) reply.headers(e.headers)
  return reply.code(e.statusCode).send(appErrorBody(e))
}

/** The body of a catalogue error, for code that must return a payload rather than send (onSend hooks). */
export function appErrorBody(e: AppError): Record<string, unknown> {
  return { statusCode: e.statusCode, code: e.code, error: statusText(e.statusCode), message: e.message, ...e.details }
}
