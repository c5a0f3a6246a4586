import { defineHandler } from '../../src/pool/handler-contract.js'

const MAX_UA = 2_048

interface Input {
  userAgent: string
}

export default defineHandler<Input>({
  slug: 'user-agent-parser',
  description:
    'Parse a User-Agent string into browser, rendering engine, operating system, device and CPU (ua-parser-js 1.x, MIT) and flag crawlers, bots and HTTP libraries (isbot).',
  inputSchema: {
    type: 'object',
    additionalProperties: false,
    required: ['userAgent'],
    properties: {
      userAgent: {
        type: 'string',
        maxLength: MAX_UA,
        description: `The User-Agent header value, at most ${MAX_UA} characters (the parser itself reads the first 500).`,
      },
    },
  },
  output: {
    contentType: 'application/json',
    description:
      '{ browser: { name, version, major }, engine: { name, version }, os: { name, version }, device: { type, vendor, model }, cpu: { architecture }, category, isBot, botPattern } — unknown parts are null; category is bot, mobile, tablet, desktop or other',
    schema: {
      type: 'object',
      properties: {
        browser: {
          type: 'object',
          properties: {
            name: { type: ['null', 'string'] },
            version: { type: ['null', 'string'] },
            major: { type: ['null', 'string'] },
          },
          required: ['name', 'version', 'major'],
        },
        engine: {
          type: 'object',
          properties: { name: { type: ['null', 'string'] }, version: { type: ['null', 'string'] } },
          required: ['name', 'version'],
        },
        os: {
          type: 'object',
          properties: { name: { type: ['null', 'string'] }, version: { type: ['null', 'string'] } },
          required: ['name', 'version'],
        },
        device: {
          type: 'object',
          properties: {
            type: { type: ['null', 'string'] },
            vendor: { type: ['null', 'string'] },
            model: { type: ['null', 'string'] },
          },
          required: ['type', 'vendor', 'model'],
        },
        cpu: { type: 'object', properties: { architecture: { type: ['null', 'string'] } }, required: ['architecture'] },
        category: { type: 'string' },
        isBot: { type: 'boolean' },
        botPattern: { type: ['null', 'string'] },
      },
      required: ['browser', 'engine', 'os', 'device', 'cpu', 'category', 'isBot', 'botPattern'],
    },
    example: {
      browser: { name: 'Chrome', version: '124.0.0.0', major: '124' },
      engine: { name: 'Blink', version: '124.0.0.0' },
      os: { name: 'Windows', version: '10' },
      device: { type: null, vendor: null, model: null },
      cpu: { architecture: 'amd64' },
      category: 'desktop',
      isBot: false,
      botPattern: null,
    },
  },
  example: {
    userAgent:
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  },
  async run(input) {
    const [{ default: UAParser }, { isbot, isbotMatch }] = await Promise.all([import('ua-parser-js'), import('isbot')])
    const r = new UAParser(input.userAgent).getResult()
    const isBot = input.userAgent.trim() !== '' && isbot(input.userAgent)
    const deviceType = r.device.type ?? null
    return {
      body: {
        browser: { name: r.browser.name ?? null, version: r.browser.version ?? null, major: r.browser.major ?? null },
        engine: { name: r.engine.name ?? null, version: r.engine.version ?? null },
        os: { name: r.os.name ?? null, version: r.os.version ?? null },
        device: { type: deviceType, vendor: r.device.vendor ?? null, model: r.device.model ?? null },
        cpu: { architecture: r.cpu.architecture ?? null },
        category: isBot ? 'bot' : categorize(deviceType, r.os.name),
        isBot,
        botPattern: isBot ? (isbotMatch(input.userAgent) ?? null) : null,
      },
    }
  },
})

/** ua-parser-js leaves device.type empty for desktops; infer that from a desktop OS. */
function categorize(deviceType: string | null, os: string | undefined): string {
  if (deviceType === 'mobile' || deviceType === 'tablet') return deviceType
  if (deviceType) return 'other'
  return os && /^(Windows|Mac OS|macOS|Linux|Ubuntu|Debian|Fedora|Chrome ?OS|FreeBSD|OpenBSD)/i.test(os)
    ? 'desktop'
    : 'other'
}
