/**
 * The portal's accent palette (src/lib/contrast.ts) as properties over random colours: whatever
 * `#rrggbb` an organization sets, the light and the dark scheme's accent reads at WCAG AA (4.5:1)
 * on the page, on cards and on the navigation marker, and the text on buttons reads at AA on the
 * accent; the hue is kept (a grey stays grey); a colour that passes is used as it is, and one that
 * does not moves only in the scheme's direction (darker on light, lighter on dark). The contrast
 * ratios are computed here, independently of the module, from WCAG 2.x's definitions, and
 * fast-check must reach both a colour that needed no change and one that needed adjusting.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { accentPalette, BASE, paletteCss } from "../../src/lib/contrast";

const RUNS = Number(process.env.KEYWAY_PROPERTY_RUNS || 2_000);

/** WCAG 2.x: relative luminance (sRGB), https://www.w3.org/TR/WCAG21/#dfn-relative-luminance. */
function relativeLuminance(hex: string): number {
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(1 + 2 * i, 3 + 2 * i), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(0) + 0.7152 * channel(1) + 0.0722 * channel(2);
}

/** WCAG 2.x: contrast ratio, https://www.w3.org/TR/WCAG21/#dfn-contrast-ratio. */
function ratio(a: string, b: string): number {
  const [l1, l2] = [relativeLuminance(a), relativeLuminance(b)];
  return (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
}

const channels = (hex: string) => [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
const isGrey = (hex: string) => new Set(channels(hex)).size === 1;

const colour = fc
  .tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }))
  .map((rgb) => `#${rgb.map((v) => v.toString(16).padStart(2, "0")).join("")}`);
/** Greys and saturated colours too, which a uniform draw rarely gives. */
const accent = fc.oneof(
  colour,
  fc.integer({ min: 0, max: 255 }).map((v) => `#${v.toString(16).padStart(2, "0").repeat(3)}`),
  fc.constantFrom("#ffff00", "#000000", "#777777", "#ffffff", "#0000ff", "#00ff00", "#ff0000", "#0b57d0", "#8ab4f8"),
);

const reached = { light: { unchanged: 0, adjusted: 0 }, dark: { unchanged: 0, adjusted: 0 } };

describe("accentPalette", () => {
  it("keeps AA contrast for accent text on every background and for button text on the accent, in both schemes", () => {
    fc.assert(
      fc.property(accent, (hex) => {
        const palette = accentPalette(hex);
        for (const scheme of ["light", "dark"] as const) {
          const p = palette[scheme];
          const base = BASE[scheme];
          for (const background of [base.bg, base.surface, p.navCurrent]) expect(ratio(p.accent, background)).toBeGreaterThanOrEqual(4.5);
          expect(ratio(p.onAccent, p.accent)).toBeGreaterThanOrEqual(4.5);
          // The navigation marker's tint keeps the text on it readable too.
          expect(ratio(base.fg, p.navCurrent)).toBeGreaterThanOrEqual(4.5);
          expect(p.adjusted).toBe(p.accent !== hex);
          reached[scheme][p.adjusted ? "adjusted" : "unchanged"]++;
          if (p.adjusted) {
            // Darker on light, lighter on dark; a grey stays grey (the hue is kept).
            const moved = relativeLuminance(p.accent) - relativeLuminance(hex);
            expect(scheme === "light" ? moved < 0 : moved > 0).toBe(true);
            if (isGrey(hex)) expect(isGrey(p.accent)).toBe(true);
          }
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("uses keyway's own colours unchanged (they pass as they are)", () => {
    expect(accentPalette("#0b57d0").light.adjusted).toBe(false);
    expect(accentPalette("#8ab4f8").dark.adjusted).toBe(false);
  });

  it("moves the hard ones: yellow darkens on light, black lightens on dark", () => {
    const yellow = accentPalette("#FFFF00");
    expect(yellow.light.adjusted).toBe(true);
    expect(yellow.dark.accent).toBe("#ffff00");
    const black = accentPalette("#000000");
    expect(black.light.accent).toBe("#000000");
    expect(black.dark.adjusted).toBe(true);
    expect(ratio(black.dark.accent, BASE.dark.surface)).toBeGreaterThanOrEqual(4.5);
  });

  it("refuses anything but #rrggbb, and writes custom properties of #rrggbb values only", () => {
    for (const bad of ["red", "#fff", "#ff00zz", "#ff0000;}body{", "rgb(0,0,0)"]) expect(() => accentPalette(bad)).toThrow();
    const css = paletteCss(accentPalette("#e4002b"));
    expect(css.replace(/#[0-9a-f]{6}/g, "#")).toBe(
      ":root { --accent:#; --on-accent:#; --nav-current:#; }\n@media (prefers-color-scheme: dark) { :root { --accent:#; --on-accent:#; --nav-current:#; } }\n",
    );
  });
});

afterAll(() => {
  // The generator reached both cases in both schemes (else the property proved less than it says).
  for (const scheme of ["light", "dark"] as const) {
    expect(reached[scheme].unchanged).toBeGreaterThan(0);
    expect(reached[scheme].adjusted).toBeGreaterThan(0);
  }
});
