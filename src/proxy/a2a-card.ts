import { AgentCard, type AgentSkill } from '@a2a-js/sdk'
import { toolMethod } from '../transports/mcp.js'
import { X402_A2A_EXTENSION } from '../transports/a2a.js'
import { formatUsdc } from '../x402/usdc-amount.js'
import type { EndpointEntry } from './endpoint-table.js'

/** The skill an endpoint is on its service's A2A agent: a seller's agent's skill keeps its id, else the slug. */
export const skillIdOf = (e: EndpointEntry): string => e.a2aSkill ?? e.slug

/**
 * A service's Agent Card (A2A v1.0, with a v0.3 JSON-RPC interface at the same URL for older
 * clients): one skill per endpoint, its price in the description and in the x402 extension's
 * params; the x402 extension declared as required (specs/transports-v2/a2a.md).
 */
export function serviceAgentCard(url: string, endpoints: readonly EndpointEntry[]): AgentCard {
  const first = endpoints[0]!
  const prices: Record<string, unknown> = {}
  const skills: AgentSkill[] = endpoints.map((e) => {
    const challenge = e.challenges.get(toolMethod(e.methods))!
    const schemes = [...new Set(challenge.v2.accepts.map((a) => a.scheme))]
    prices[skillIdOf(e)] = {
      usdc: formatUsdc(e.price),
      amount: e.price.toString(),
      asset: challenge.requirementsV2.asset,
      network: challenge.requirementsV2.network,
      schemes,
      ...(e.inputSchema ? { inputSchema: e.inputSchema } : {}),
    }
    return {
      id: skillIdOf(e),
      name: skillIdOf(e),
      description: `${e.description ? `${e.description.replace(/\.?\s*$/, '.')} ` : ''}Price: ${formatUsdc(e.price)} USDC per call, paid with x402 (${schemes.join(' or ')}, ${challenge.requirementsV2.network}).`,
      tags: ['x402', 'paid'],
      examples: [],
      inputModes: ['application/json'],
      outputModes: [e.mimeType || 'application/json'],
      securityRequirements: [],
    }
  })
  return {
    name: `${first.namespace}/${first.service}`,
    description: `Tollgate service ${first.namespace}/${first.service} as an A2A agent: each skill is a paid endpoint. Name the skill in the message metadata "skill" and send its input as a data part.`,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
    ],
    provider: undefined,
    version: '1.0.0',
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extensions: [
        {
          uri: X402_A2A_EXTENSION,
          description: 'Supports payments using the x402 protocol for on-chain settlement.',
          required: true,
          params: { skills: prices },
        },
      ],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['application/json', 'text/plain'],
    defaultOutputModes: ['application/json'],
    skills,
    signatures: [],
  }
}

/** The card as served (proto JSON, the shape the SDK's resolver reads). */
export const agentCardJson = (card: AgentCard): unknown => AgentCard.toJSON(card)
