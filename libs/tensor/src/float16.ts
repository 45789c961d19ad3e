/**
 * IEEE half (FP16) and bfloat16 (BF16) conversions. Tensors keep both as raw 16-bit patterns; these
 * helpers convert single values and whole arrays. Float → 16-bit rounds to nearest, ties to even;
 * infinities, NaNs (kept quiet) and subnormals are handled. Inputs are first rounded to float32.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function float32Bits(value: number): number {
  f32[0] = value;
  return u32[0];
}

/** float32 value → FP16 bit pattern (0..0xffff). */
export function float32ToFp16Bits(value: number): number {
  const bits = float32Bits(value);
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  const mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 112; // rebias 127 → 15
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) return sign | roundSubnormal(mant | 0x800000, e);
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1)) half++; // a carry may reach inf: right
  return sign | half;
}

/** Significand (with its implicit bit) of a value below FP16's normal range → subnormal bits. */
function roundSubnormal(significand: number, e: number): number {
  if (e < -10) return 0;
  const shift = 14 - e;
  let half = significand >>> shift;
  const rest = significand & ((1 << shift) - 1);
  const halfway = 1 << (shift - 1);
  if (rest > halfway || (rest === halfway && (half & 1) === 1)) half++;
  return half;
}

/** FP16 bit pattern → number (exact). */
export function fp16BitsToFloat32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant !== 0 ? NaN : sign * Infinity;
  return sign * (1024 + mant) * 2 ** (exp - 25);
}

/** float32 value → BF16 bit pattern (the rounded upper half of the float32). */
export function float32ToBf16Bits(value: number): number {
  const bits = float32Bits(value);
  if ((bits & 0x7fffffff) > 0x7f800000) return (bits >>> 16) | 0x40;
  const lsb = (bits >>> 16) & 1;
  return ((bits + 0x7fff + lsb) >>> 16) & 0xffff;
}

/** BF16 bit pattern → number (exact). */
export function bf16BitsToFloat32(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0];
}

/** Whole-array conversions, for backends that hand FP16/BF16 to runtimes as floats. */
export function fp16ArrayToFloat32(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = fp16BitsToFloat32(bits[i]);
  return out;
}

export function float32ArrayToFp16(values: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = float32ToFp16Bits(values[i]);
  return out;
}

export function bf16ArrayToFloat32(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  const outBits = new Uint32Array(out.buffer);
  for (let i = 0; i < bits.length; i++) outBits[i] = bits[i] << 16;
  return out;
}

export function float32ArrayToBf16(values: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = float32ToBf16Bits(values[i]);
  return out;
}
