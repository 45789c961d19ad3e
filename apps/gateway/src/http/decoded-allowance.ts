import { HttpRequestErrors, type InferenceError } from '@nereid/protocol';
import { BYTES_ELEMENT_COST, checkedElementCount, isBytesData, type Tensor } from '@nereid/tensor';

/**
 * What an HTTP inference request may hold decoded (issue 16). Its bytes are bounded by
 * --http-max-input-size and charged to the budget of request bodies held at once
 * (--http-max-inflight-body-bytes), but its BYTES elements cost far more decoded than on the wire
 * (a 1-byte element is 5 bytes of a binary body or 4 of JSON, ~128 bytes decoded:
 * BYTES_ELEMENT_COST), so a 64 MiB body of them held ~1.6 GB. Each BYTES input's element count is
 * taken from its shape before it is decoded (the decoders make exactly that many elements, or
 * refuse the input), and the request is refused (400) when its bytes plus BYTES_ELEMENT_COST per
 * element pass `maxInputSize`; what fits is charged to the request's body budget (`charge`: the
 * budget's 503 when it has no room), so the decoded overhead of all requests held at once is
 * bounded too.
 *
 * At the defaults (64 MiB, 32 MiB budget) a batch of 10,000 sentences of 100 bytes (~1.1 MB of
 * JSON) counts 1.1 MB + 1.28 MB; a request holds at most ~500,000 BYTES elements.
 */
export class DecodedAllowance {
  private elements = 0;

  constructor(
    /** The request's (decompressed) body bytes. */
    private wireBytes: number,
    /** --http-max-input-size. */
    private readonly maxInputSize: number,
    /** Charges decoded bytes to the body budget; an error when they do not fit. */
    private readonly charge?: (bytes: number) => InferenceError | undefined,
  ) {}

  /**
   * Starts over for another request of `wireBytes`: the HTTP fast path keeps one allowance, since a
   * request is decoded in one synchronous call, so that one without BYTES inputs allocates nothing.
   */
  reset(wireBytes: number): this {
    this.wireBytes = wireBytes;
    this.elements = 0;
    return this;
  }

  /** Takes the elements of a BYTES input of `shape` before it is decoded (`elementSize`: what its decoder counts by). */
  takeShape(shape: readonly number[], elementSize: number, name: string, model: string): void {
    this.take(checkedElementCount(shape, elementSize, name, model));
  }

  /** Takes the BYTES elements of tensors decoded already (a cached header's request). */
  takeDecoded(tensors: readonly Tensor[]): void {
    let elements = 0;
    for (const t of tensors) if (isBytesData(t.data)) elements += t.data.length;
    this.take(elements);
  }

  private take(elements: number): void {
    if (elements === 0) return;
    const total = this.elements + elements;
    if (this.wireBytes + total * BYTES_ELEMENT_COST > this.maxInputSize) {
      throw HttpRequestErrors.decodedTooLarge(this.wireBytes, total, BYTES_ELEMENT_COST, this.maxInputSize);
    }
    const refused = this.charge?.(elements * BYTES_ELEMENT_COST);
    if (refused) throw refused;
    this.elements = total;
  }
}
