/**
 * Runs before every file of the unit tier (Node). The pure cores are written for workerd, which
 * ships two things Node 24 lacks: the ES2026 Uint8Array base64 and hex methods (TC39
 * proposal-arraybuffer-base64; Node 24's `--js-base-64` version ignores a subarray's offset, so
 * core-js's implementation of the standard is used instead), and `crypto.subtle.timingSafeEqual`,
 * workerd's constant-time comparison, given here by Node's own.
 */
import "core-js/modules/es.uint8-array.from-base64.js";
import "core-js/modules/es.uint8-array.from-hex.js";
import "core-js/modules/es.uint8-array.to-base64.js";
import "core-js/modules/es.uint8-array.to-hex.js";
import { timingSafeEqual } from "node:crypto";

const bytes = (v: ArrayBuffer | ArrayBufferView): Uint8Array =>
  ArrayBuffer.isView(v) ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : new Uint8Array(v);
const subtle = crypto.subtle as SubtleCrypto & {
  timingSafeEqual?: (a: ArrayBuffer | ArrayBufferView, b: ArrayBuffer | ArrayBufferView) => boolean;
};
subtle.timingSafeEqual ??= (a, b) => timingSafeEqual(bytes(a), bytes(b));
