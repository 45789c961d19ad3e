import type { IncomingMessage, ServerResponse } from 'node:http';
import { InferenceError } from '@nereid/protocol';

/**
 * One budget for the bytes of request bodies the HTTP front door holds at once
 * (`--http-max-inflight-body-bytes`), so that many bodies together cannot take the memory that the
 * per-body limit (`--http-max-input-size`) allows each: 64 gzip bombs at once, each inflated up to
 * the limit before it is refused, took node to 4.5 GB (issue 16, attack 2).
 *
 * A body whose length is declared (Content-Length) is charged whole before a byte of it is read:
 * it goes on at once, or waits in line (its bytes stay in the socket) until earlier bodies are
 * released, and is answered 503 after `maxWaitMs`. Bytes that grow as they arrive (a chunked body,
 * the output of an inflater) are charged as they come and refused at once when they do not fit,
 * so that bodies that each hold part of the budget never wait for one another. A request's charge
 * is released when its response closes (the model may read the body until it answers).
 */
export class BodyBudget {
  private used = 0;
  /** Small held messages taken beyond the budget (chargeHeld). */
  private reserveUsed = 0;
  private readonly line: Waiter[] = [];
  /** One 'close' listener for every charged response, with the response as `this`. */
  private readonly onClose: (this: ChargedResponse) => void;

  constructor(
    /** Bytes held at most; a single body larger than the budget is taken only while nothing else is held. */
    readonly limit: number,
    /** How long a declared body waits for room before 503. */
    private readonly maxWaitMs: number,
  ) {
    const budget = this;
    this.onClose = function (this: ChargedResponse) {
      budget.closed(this);
    };
  }

  /** Bytes charged now (the reserve of small held messages included). */
  get inUse(): number {
    return this.used + this.reserveUsed;
  }

  /**
   * Charges the request's declared body to `res` and calls `go` once it fits (at once when it does),
   * or `go` with a 503 after the wait. A request without a declared length goes at once (a chunked
   * body is then charged as it arrives, see `grow`).
   */
  admit(req: IncomingMessage, res: ServerResponse, go: Go): void {
    const header = req.headers['content-length'];
    const declared = header === undefined ? 0 : Number(header);
    // No body at all (most GETs): nothing to charge, nothing to release.
    if (!(declared > 0) && req.headers['transfer-encoding'] === undefined) return go(req, res);
    const charged = res as ChargedResponse;
    charged[CHARGE] = { bytes: 0 };
    // 'close' fires once per response: `on` spares the wrapper `once` allocates per request.
    res.on('close', this.onClose);
    if (!(declared > 0)) return go(req, res);
    if (this.line.length === 0 && this.fits(declared)) {
      this.take(charged, declared);
      return go(req, res);
    }
    const waiter: Waiter = { req, res: charged, bytes: declared, go, timer: undefined };
    waiter.timer = setTimeout(() => {
      this.leaveLine(waiter);
      go(req, res, this.exhausted());
    }, this.maxWaitMs);
    charged[CHARGE]!.waiter = waiter;
    this.line.push(waiter);
  }

  /**
   * Charges `bytes` more to `res` (admitted before) if they fit now; the 503 to answer when they do
   * not. Bodies waiting in line do not stop it: a body under way that finishes releases its room
   * sooner than one refused halfway would.
   */
  grow(res: ServerResponse, bytes: number): InferenceError | undefined {
    const charged = res as ChargedResponse;
    if (charged[CHARGE] === undefined || this.fits(bytes)) {
      if (charged[CHARGE]) this.take(charged, bytes);
      return undefined;
    }
    return this.exhausted();
  }

  /**
   * Charges the decoded overhead of `res`'s request (its BYTES elements, http/decoded-allowance.ts)
   * as `grow` does, and also when `res` is all the budget holds: a request whose body was taken
   * alone (a declared body may exceed the budget then) is not refused for what its body decodes to,
   * which --http-max-input-size bounds already.
   */
  growDecoded(res: ServerResponse, bytes: number): InferenceError | undefined {
    const charged = res as ChargedResponse;
    const own = charged[CHARGE];
    if (own !== undefined && this.used === own.bytes) {
      this.take(charged, bytes);
      return undefined;
    }
    return this.grow(res, bytes);
  }

  /**
   * Charges `bytes` that are held already outside an HTTP response (a gRPC request message, see
   * grpc/message-budget.ts) if they fit now; returns the function that gives them back (once), or
   * undefined when they do not fit (`holdCharge` with one `grow`).
   */
  chargeHeld(bytes: number): (() => void) | undefined {
    const charge = this.holdCharge();
    return charge.grow(bytes) ? charge.release : undefined;
  }

  /**
   * A charge of bytes held outside an HTTP response that grows as they arrive: a gRPC request
   * message, charged at its framed length, then by what it inflates to when it is compressed
   * (grpc/message-budget.ts). They cannot wait in line: their bytes are in memory already, so each
   * `grow` is taken at once or refused. It fits when the budget has room, or when this charge is all
   * the budget holds (one message may exceed the budget when nothing else is held, as one body may).
   * A small message (all its bytes within SMALL_MESSAGE_BYTES) that does not fit is taken into a
   * reserve of an eighth of the budget instead, so that small requests go on being served while
   * large ones hold the budget (HTTP bodies wait in line for that); the bytes held stay within 1.125
   * times the limit, and at most one message beyond it.
   */
  holdCharge(): HeldCharge {
    let main = 0;
    let reserve = 0;
    let open = true;
    return {
      grow: (bytes: number): boolean => {
        if (!open) return false;
        if (this.used + bytes <= this.limit || this.used === main) {
          main += bytes;
          this.used += bytes;
          return true;
        }
        if (main + reserve + bytes <= SMALL_MESSAGE_BYTES && this.reserveUsed + bytes <= this.limit / 8) {
          reserve += bytes;
          this.reserveUsed += bytes;
          return true;
        }
        return false;
      },
      release: (): void => {
        if (!open) return;
        open = false;
        this.reserveUsed -= reserve;
        if (main > 0) this.release(main);
      },
    };
  }

  private release(bytes: number): void {
    this.used -= bytes;
    this.serveLine();
  }

  /** What a request refused for want of room is told (HTTP 503, gRPC RESOURCE_EXHAUSTED). */
  get exhaustedMessage(): string {
    return `the server holds its limit of ${this.limit} bytes of request bodies (--http-max-inflight-body-bytes); try again later`;
  }

  private exhausted(): InferenceError {
    return InferenceError.unavailable(this.exhaustedMessage);
  }

  private fits(bytes: number): boolean {
    return this.used + bytes <= this.limit || this.used === 0;
  }

  private take(res: ChargedResponse, bytes: number): void {
    this.used += bytes;
    res[CHARGE]!.bytes += bytes;
  }

  private closed(res: ChargedResponse): void {
    const charge = res[CHARGE];
    if (!charge) return;
    res[CHARGE] = undefined;
    if (charge.waiter) this.leaveLine(charge.waiter);
    this.used -= charge.bytes;
    this.serveLine();
  }

  private leaveLine(waiter: Waiter): void {
    clearTimeout(waiter.timer);
    const at = this.line.indexOf(waiter);
    if (at !== -1) this.line.splice(at, 1);
    const charge = waiter.res[CHARGE];
    if (charge) charge.waiter = undefined;
  }

  /** First come, first served: a large body at the head is not overtaken by smaller ones. */
  private serveLine(): void {
    while (this.line.length > 0 && this.fits(this.line[0].bytes)) {
      const waiter = this.line[0];
      this.leaveLine(waiter);
      this.take(waiter.res, waiter.bytes);
      waiter.go(waiter.req, waiter.res);
    }
  }
}

/** Held messages up to this size may use the reserve when the budget is full (chargeHeld). */
export const SMALL_MESSAGE_BYTES = 64 * 1024;

/** A charge of held bytes (BodyBudget.holdCharge). */
export interface HeldCharge {
  /** Charges `bytes` more if they fit now; false (nothing charged) when they do not, or after `release`. */
  grow(bytes: number): boolean;
  /** Gives back everything charged (once). */
  release(): void;
}

const CHARGE = Symbol('nereid.bodyCharge');

interface Charge {
  bytes: number;
  waiter?: Waiter;
}

type ChargedResponse = ServerResponse & { [CHARGE]?: Charge };

/** Goes on with a request admitted (`error`: refused). */
export type Go = (req: IncomingMessage, res: ServerResponse, error?: InferenceError) => void;

interface Waiter {
  req: IncomingMessage;
  res: ChargedResponse;
  bytes: number;
  go: Go;
  timer: ReturnType<typeof setTimeout> | undefined;
}
