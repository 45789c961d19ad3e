import { InferenceError } from '@nereid/protocol';

/** Throws the INVALID_ARG error of a failed config check. */
export function invalid(message: string): never {
  throw InferenceError.invalidArg(message);
}

export function isValidDim(d: number): boolean {
  return Number.isInteger(d) && (d >= 1 || d === -1);
}

export const DIM_RULE = 'dimension must be integer >= 1, or -1 to indicate a variable-size dimension';

/** `data_type` missing or TYPE_INVALID. */
export function missingDataType(dataType: string | undefined): boolean {
  return dataType === undefined || dataType === '' || dataType === 'TYPE_INVALID';
}
