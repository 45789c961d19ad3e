import {
  bf16ArrayToFloat32,
  bf16BitsToFloat32,
  float32ArrayToBf16,
  float32ArrayToFp16,
  float32ToBf16Bits,
  float32ToFp16Bits,
  fp16ArrayToFloat32,
  fp16BitsToFloat32,
} from './float16';

const isNanFp16 = (h: number) => (h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0;

describe('FP16', () => {
  it('maps known values', () => {
    expect(float32ToFp16Bits(0)).toBe(0x0000);
    expect(float32ToFp16Bits(-0)).toBe(0x8000);
    expect(float32ToFp16Bits(1)).toBe(0x3c00);
    expect(float32ToFp16Bits(-2)).toBe(0xc000);
    expect(float32ToFp16Bits(65504)).toBe(0x7bff);
    expect(float32ToFp16Bits(0.1)).toBe(0x2e66);
    expect(float32ToFp16Bits(2 ** -14)).toBe(0x0400); // smallest normal
    expect(float32ToFp16Bits(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(float32ToFp16Bits(Infinity)).toBe(0x7c00);
    expect(float32ToFp16Bits(-Infinity)).toBe(0xfc00);
    expect(isNanFp16(float32ToFp16Bits(NaN))).toBe(true);
  });

  it('overflows to infinity and underflows to zero', () => {
    expect(float32ToFp16Bits(65520)).toBe(0x7c00); // halfway to 2^16 rounds up to inf
    expect(float32ToFp16Bits(65519)).toBe(0x7bff);
    expect(float32ToFp16Bits(1e10)).toBe(0x7c00);
    expect(float32ToFp16Bits(-1e10)).toBe(0xfc00);
    expect(float32ToFp16Bits(2 ** -25)).toBe(0x0000); // tie → even (zero)
    expect(float32ToFp16Bits(2 ** -25 * 1.0001)).toBe(0x0001);
    expect(float32ToFp16Bits(-(2 ** -26))).toBe(0x8000);
    expect(float32ToFp16Bits(1e-30)).toBe(0x0000);
  });

  it('round-trips every non-NaN bit pattern exactly', () => {
    for (let h = 0; h < 0x10000; h++) {
      const f = fp16BitsToFloat32(h);
      if (isNanFp16(h)) {
        expect(Number.isNaN(f)).toBe(true);
        expect(isNanFp16(float32ToFp16Bits(f))).toBe(true);
      } else if (float32ToFp16Bits(f) !== h) {
        throw new Error(`bits ${h.toString(16)} → ${f} → ${float32ToFp16Bits(f).toString(16)}`);
      }
    }
  });

  it('rounds midpoints to even and just-above midpoints up (normals and subnormals)', () => {
    for (let h = 0; h < 0x7bff; h++) {
      const lo = fp16BitsToFloat32(h);
      const hi = fp16BitsToFloat32(h + 1);
      const mid = (lo + hi) / 2;
      const even = h % 2 === 0 ? h : h + 1;
      if (float32ToFp16Bits(mid) !== even) throw new Error(`midpoint after ${h.toString(16)}`);
      if (float32ToFp16Bits(-mid) !== (even | 0x8000)) throw new Error(`negative midpoint after ${h.toString(16)}`);
      const above = mid + (hi - lo) / 8;
      if (float32ToFp16Bits(above) !== h + 1) throw new Error(`above midpoint after ${h.toString(16)}`);
    }
  });

  it('converts whole arrays', () => {
    const bits = float32ArrayToFp16([1, -0.5, 65504]);
    expect(Array.from(bits)).toEqual([0x3c00, 0xb800, 0x7bff]);
    expect(Array.from(fp16ArrayToFloat32(bits))).toEqual([1, -0.5, 65504]);
  });
});

describe('BF16', () => {
  it('keeps the upper half of float32 for exact values', () => {
    expect(float32ToBf16Bits(1)).toBe(0x3f80);
    expect(float32ToBf16Bits(-2)).toBe(0xc000);
    expect(float32ToBf16Bits(0)).toBe(0x0000);
    expect(float32ToBf16Bits(-0)).toBe(0x8000);
    expect(float32ToBf16Bits(Infinity)).toBe(0x7f80);
    expect(float32ToBf16Bits(-Infinity)).toBe(0xff80);
    expect(bf16BitsToFloat32(0x3f80)).toBe(1);
    expect(bf16BitsToFloat32(0x7f80)).toBe(Infinity);
    expect(bf16BitsToFloat32(0xff80)).toBe(-Infinity);
    expect(Object.is(bf16BitsToFloat32(0x8000), -0)).toBe(true);
  });

  it('rounds to nearest even and keeps NaN quiet', () => {
    // 1 + 2^-8 is the midpoint between 1 and 1 + 2^-7: ties to even (1).
    expect(float32ToBf16Bits(1 + 2 ** -8)).toBe(0x3f80);
    // 1 + 3·2^-8 is the midpoint between 1+2^-7 (odd) and 1+2^-6 (even): rounds up.
    expect(float32ToBf16Bits(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(float32ToBf16Bits(1 + 2 ** -8 + 2 ** -12)).toBe(0x3f81);
    expect(float32ToBf16Bits(3.4e38)).toBe(0x7f80); // rounds past the largest finite to inf
    const nan = float32ToBf16Bits(NaN);
    expect((nan & 0x7f80) === 0x7f80 && (nan & 0x7f) !== 0).toBe(true);
    expect(Number.isNaN(bf16BitsToFloat32(nan))).toBe(true);
  });

  it('round-trips every non-NaN bit pattern, including subnormals', () => {
    for (let h = 0; h < 0x10000; h++) {
      const f = bf16BitsToFloat32(h);
      if (Number.isNaN(f)) continue;
      if (float32ToBf16Bits(f) !== h) throw new Error(`bits ${h.toString(16)}`);
    }
    expect(bf16BitsToFloat32(0x0001)).toBe(2 ** -133);
  });

  it('converts whole arrays', () => {
    const bits = float32ArrayToBf16([1, -2, 0.5]);
    expect(Array.from(bits)).toEqual([0x3f80, 0xc000, 0x3f00]);
    expect(Array.from(bf16ArrayToFloat32(bits))).toEqual([1, -2, 0.5]);
  });
});
