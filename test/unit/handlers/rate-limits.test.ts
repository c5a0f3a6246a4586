import t from 'tap'
import { rateLimitOf } from '../../../src/pool/handler-contract.js'
import { PROVIDER_SETTINGS } from '../../../src/handler-providers.js'
import geocoder, { isPublicNominatim } from '../../../handlers/address-validator-geocoder/index.js'
import emailSend from '../../../handlers/email-send/index.js'

const defaults = Object.fromEntries(
  PROVIDER_SETTINGS.filter((s) => s.default !== undefined).map((s) => [s.name, s.default]),
)

t.test("the geocoder keeps to the public Nominatim's one request a second, and only there", async (t) => {
  t.equal(defaults.NOMINATIM_URL, 'https://nominatim.openstreetmap.org', 'the default is the public server')
  t.same(rateLimitOf(geocoder, defaults), { requests: 1, perSeconds: 1 })
  t.same(
    rateLimitOf(geocoder, { NOMINATIM_URL: 'https://NOMINATIM.openstreetmap.org./' }),
    { requests: 1, perSeconds: 1 },
    'however the host is spelled',
  )
  t.equal(rateLimitOf(geocoder, { NOMINATIM_URL: 'https://geo.example.com' }), undefined, "an operator's own instance")
  t.equal(rateLimitOf(geocoder, { NOMINATIM_URL: 'https://nominatim.openstreetmap.org.evil.example' }), undefined)
  t.equal(isPublicNominatim('not a url'), false)
  t.equal(isPublicNominatim(undefined), false)
})

t.test('a fixed limit is the same whatever the settings', async (t) => {
  t.same(rateLimitOf(emailSend, {}), { requests: 60, perSeconds: 60 })
  t.same(rateLimitOf(emailSend, defaults), { requests: 60, perSeconds: 60 })
})
