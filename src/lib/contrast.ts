/**
 * An organization's accent colour made readable (the portal's branding): from one `#rrggbb`, the
 * light and the dark scheme's `--accent`, `--on-accent` and `--nav-current` such that WCAG 2.x
 * contrast (1.4.3, level AA: 4.5:1 for text) holds for accent text on the page (`--bg`), on cards
 * (`--surface`) and on the navigation's marker (`--nav-current`), and for `--on-accent` text on
 * `--accent` (buttons). The hue is kept; only the lightness moves, darker for the light scheme and
 * lighter for the dark one, in small steps until every pair passes (black and white pass against
 * every background here, so the search always ends). Pure: the portal's layout injects the result
 * after the manager's style sheet (http/portal/layout.tsx), whose base colours are BASE below.
 */

/** WCAG 2.x 1.4.3 (AA) for normal text. */
export const AA_TEXT = 4.5;

/**
 * The manager's style sheet's backgrounds, text and text on the accent, per scheme: MANAGER_CSS
 * (http/manager/views.tsx) is written with these, so the palette is judged against the colours
 * the page has.
 */
export const BASE = {
  light: { bg: "#f6f7f9", surface: "#ffffff", fg: "#1a1a1a", onAccent: "#ffffff" },
  dark: { bg: "#121417", surface: "#1c1f24", fg: "#e8eaed", onAccent: "#0b1a33" },
} as const;

export type Scheme = keyof typeof BASE;

export interface SchemePalette {
  accent: string;
  onAccent: string;
  navCurrent: string;
  /** Whether the accent had to move from the organization's colour to pass. */
  adjusted: boolean;
}

export type AccentPalette = Record<Scheme, SchemePalette>;

const HEX = /^#[0-9a-f]{6}$/;

/** `#rrggbb` lower-case, or null for anything else (`#abc`, names, `rgb()`, upper case is lowered). */
export function normalizeHex(value: string): string | null {
  const lower = value.trim().toLowerCase();
  return HEX.test(lower) ? lower : null;
}

type Rgb = [number, number, number];

function rgbOf(hex: string): Rgb {
  const n = Number.parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

const hexOf = ([r, g, b]: Rgb): string => `#${[r, g, b].map((v) => Math.round(v).toString(16).padStart(2, "0")).join("")}`;

/** WCAG 2.x relative luminance of an sRGB colour. */
export function luminance(hex: string): number {
  const [r, g, b] = rgbOf(hex).map((v) => {
    const c = v / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as Rgb;
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** WCAG 2.x contrast ratio, 1 to 21. */
export function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

type Hsl = [number, number, number];

function hslOf(hex: string): Hsl {
  const [r, g, b] = rgbOf(hex).map((v) => v / 255) as Rgb;
  const max = Math.max(r, g, b);
  const min = Math.min(r, g, b);
  const l = (max + min) / 2;
  if (max === min) return [0, 0, l];
  const d = max - min;
  const s = l > 0.5 ? d / (2 - max - min) : d / (max + min);
  const h = max === r ? (g - b) / d + (g < b ? 6 : 0) : max === g ? (b - r) / d + 2 : (r - g) / d + 4;
  return [h * 60, s, l];
}

function hexOfHsl([h, s, l]: Hsl): string {
  const k = (n: number) => (n + h / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => l - a * Math.max(-1, Math.min(k(n) - 3, Math.min(9 - k(n), 1)));
  return hexOf([f(0) * 255, f(8) * 255, f(4) * 255]);
}

/** The navigation marker's background: a pale (light) or deep (dark) tint of the accent's hue. */
const NAV_TINT: Record<Scheme, { saturation: number; lightness: number }> = {
  light: { saturation: 0.7, lightness: 0.93 },
  dark: { saturation: 0.35, lightness: 0.21 },
};
/** Lightness moves by this much per step (about 200 steps at most from one end to the other). */
const STEP = 0.005;

function passes(scheme: Scheme, accent: string, onAccent: string, navCurrent: string): boolean {
  const base = BASE[scheme];
  return [base.bg, base.surface, navCurrent, onAccent].every((other) => contrast(accent, other) >= AA_TEXT);
}

function schemePalette(hex: string, scheme: Scheme): SchemePalette {
  const [h, s, l] = hslOf(hex);
  const tint = NAV_TINT[scheme];
  const navCurrent = hexOfHsl([h, Math.min(s, tint.saturation), tint.lightness]);
  // Text on the accent (buttons): white on the light scheme's dark accent, the dark scheme's ink on its light one.
  const onAccent = BASE[scheme].onAccent;
  if (passes(scheme, hex, onAccent, navCurrent)) return { accent: hex, onAccent, navCurrent, adjusted: false };
  const direction = scheme === "light" ? -1 : 1;
  for (let lightness = l + direction * STEP; lightness > 0 && lightness < 1; lightness += direction * STEP) {
    const accent = hexOfHsl([h, s, lightness]);
    if (passes(scheme, accent, onAccent, navCurrent)) return { accent, onAccent, navCurrent, adjusted: true };
  }
  // Black on the light scheme's backgrounds, white on the dark one's: both pass every pair.
  return { accent: scheme === "light" ? "#000000" : "#ffffff", onAccent, navCurrent, adjusted: true };
}

/** The light and dark palettes of an organization's accent (`#rrggbb`, lower-case). */
export function accentPalette(hex: string): AccentPalette {
  const color = normalizeHex(hex);
  if (color === null) throw new Error("accentPalette needs a #rrggbb colour");
  return { light: schemePalette(color, "light"), dark: schemePalette(color, "dark") };
}

/**
 * The style block that applies a palette after the base style sheet: custom properties only, each
 * value a `#rrggbb` produced above (nothing of the organization's text reaches the CSS).
 */
export function paletteCss(palette: AccentPalette): string {
  const vars = (p: SchemePalette) => `--accent:${p.accent}; --on-accent:${p.onAccent}; --nav-current:${p.navCurrent};`;
  for (const p of [palette.light, palette.dark]) {
    for (const value of [p.accent, p.onAccent, p.navCurrent]) if (!HEX.test(value)) throw new Error("a palette colour is not #rrggbb");
  }
  return `:root { ${vars(palette.light)} }\n@media (prefers-color-scheme: dark) { :root { ${vars(palette.dark)} } }\n`;
}
