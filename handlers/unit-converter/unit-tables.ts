/**
 * Conversion factors to each category's base unit (SI where there is one), exact by definition
 * unless noted. US customary volumes are US liquid measures; "-uk" units are imperial.
 */
export const LINEAR_UNITS = {
  length: {
    base: 'm',
    units: {
      nm: 1e-9,
      um: 1e-6,
      mm: 1e-3,
      cm: 1e-2,
      dm: 1e-1,
      m: 1,
      km: 1e3,
      in: 0.0254,
      ft: 0.3048,
      yd: 0.9144,
      mi: 1609.344,
      nmi: 1852,
      au: 149_597_870_700,
      ly: 9_460_730_472_580_800, // IAU 2012; Julian year of light travel
    },
  },
  mass: {
    base: 'kg',
    units: {
      ug: 1e-9,
      mg: 1e-6,
      g: 1e-3,
      kg: 1,
      t: 1e3,
      oz: 0.028349523125,
      lb: 0.45359237,
      st: 6.35029318,
      'ton-us': 907.18474,
      'ton-uk': 1016.0469088,
    },
  },
  volume: {
    base: 'm3',
    units: {
      mm3: 1e-9,
      cm3: 1e-6,
      ml: 1e-6,
      cl: 1e-5,
      dl: 1e-4,
      l: 1e-3,
      m3: 1,
      km3: 1e9,
      tsp: 4.92892159375e-6,
      tbsp: 1.478676478125e-5,
      'fl-oz': 2.95735295625e-5,
      cup: 2.365882365e-4,
      pt: 4.73176473e-4,
      qt: 9.46352946e-4,
      gal: 3.785411784e-3,
      'fl-oz-uk': 2.84130625e-5,
      'pt-uk': 5.6826125e-4,
      'gal-uk': 4.54609e-3,
      in3: 1.6387064e-5,
      ft3: 0.028316846592,
    },
  },
  area: {
    base: 'm2',
    units: {
      mm2: 1e-6,
      cm2: 1e-4,
      m2: 1,
      ha: 1e4,
      km2: 1e6,
      in2: 6.4516e-4,
      ft2: 0.09290304,
      yd2: 0.83612736,
      ac: 4046.8564224,
      mi2: 2_589_988.110336,
    },
  },
  speed: {
    base: 'm/s',
    units: { 'm/s': 1, 'km/h': 1 / 3.6, mph: 0.44704, kn: 1852 / 3600, 'ft/s': 0.3048 },
  },
  time: {
    base: 's',
    // mo and yr are Gregorian averages (365.2425 days a year)
    units: {
      ns: 1e-9,
      us: 1e-6,
      ms: 1e-3,
      s: 1,
      min: 60,
      h: 3600,
      d: 86_400,
      wk: 604_800,
      mo: 2_629_746,
      yr: 31_556_952,
    },
  },
  data: {
    base: 'B',
    units: {
      bit: 0.125,
      kbit: 125,
      Mbit: 125e3,
      Gbit: 125e6,
      Tbit: 125e9,
      B: 1,
      kB: 1e3,
      MB: 1e6,
      GB: 1e9,
      TB: 1e12,
      PB: 1e15,
      KiB: 1024,
      MiB: 1024 ** 2,
      GiB: 1024 ** 3,
      TiB: 1024 ** 4,
      PiB: 1024 ** 5,
    },
  },
  pressure: {
    base: 'Pa',
    units: {
      Pa: 1,
      hPa: 100,
      kPa: 1e3,
      MPa: 1e6,
      mbar: 100,
      bar: 1e5,
      atm: 101_325,
      psi: 6894.757293168361,
      torr: 101_325 / 760,
      mmHg: 133.322387415,
      inHg: 3386.389, // inHg at 0 °C (conventional)
    },
  },
  energy: {
    base: 'J',
    units: {
      J: 1,
      kJ: 1e3,
      MJ: 1e6,
      cal: 4.184,
      kcal: 4184, // thermochemical calorie
      Wh: 3600,
      kWh: 3.6e6,
      eV: 1.602176634e-19,
      BTU: 1055.05585262, // International Table BTU
      'ft-lbf': 1.3558179483314003,
      erg: 1e-7, // 0.3048 m x 4.4482216152605 N, to double precision
    },
  },
} as const satisfies Record<string, { base: string; units: Record<string, number> }>

/** Temperature scales are affine, so they convert through kelvin with functions, not factors. */
export const TEMPERATURE = {
  C: { toK: (v: number) => v + 273.15, fromK: (k: number) => k - 273.15 },
  F: { toK: (v: number) => ((v - 32) * 5) / 9 + 273.15, fromK: (k: number) => ((k - 273.15) * 9) / 5 + 32 },
  K: { toK: (v: number) => v, fromK: (k: number) => k },
  R: { toK: (v: number) => (v * 5) / 9, fromK: (k: number) => (k * 9) / 5 },
} as const

export type Category = keyof typeof LINEAR_UNITS | 'temperature'

/** Every unit id with its category; ids are unique across categories (a test checks). */
export const UNIT_CATEGORY: Record<string, Category> = Object.fromEntries([
  ...Object.entries(LINEAR_UNITS).flatMap(([cat, { units }]) => Object.keys(units).map((u) => [u, cat as Category])),
  ...Object.keys(TEMPERATURE).map((u) => [u, 'temperature' as Category]),
])
