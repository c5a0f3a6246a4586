/** The tools' input schemas (zod 4), shared by the adapters; optional fields are nullable for strict tool schemas (OpenAI). */
import { z } from 'zod'

export const paidFetchSchema = z.object({
  url: z.string().describe('the http(s) URL to call'),
  method: z.string().nullable().optional().describe('HTTP method; default GET, or POST when a body is given'),
  body: z.string().nullable().optional().describe('request body; JSON text is sent as application/json'),
})

export const searchSchema = z.object({
  query: z.string().describe('words describing the API wanted, e.g. "uuid" or "weather"'),
  limit: z.number().int().nullable().optional().describe('how many results, 1 to 50 (default 10)'),
})

/** The same, every field required and nullable: what OpenAI's strict function schemas take. */
export const strictPaidFetchSchema = z.object({
  url: paidFetchSchema.shape.url,
  method: z.string().nullable().describe('HTTP method; null: GET, or POST when a body is given'),
  body: z.string().nullable().describe('request body or null; JSON text is sent as application/json'),
})

export const strictSearchSchema = z.object({
  query: searchSchema.shape.query,
  limit: z.number().int().nullable().describe('how many results, 1 to 50; null: 10'),
})
