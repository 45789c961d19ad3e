/** The KServe v2 tensor datatypes, by their wire names. */
export const DATATYPES = [
  'BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64',
  'FP16', 'FP32', 'FP64', 'BYTES', 'BF16',
] as const;

export type DataType = (typeof DATATYPES)[number];

/** Bytes per element; 0 for BYTES (variable length). */
export const ELEMENT_SIZE: Readonly<Record<DataType, number>> = {
  BOOL: 1, UINT8: 1, UINT16: 2, UINT32: 4, UINT64: 8, INT8: 1, INT16: 2, INT32: 4, INT64: 8,
  FP16: 2, FP32: 4, FP64: 8, BYTES: 0, BF16: 2,
};

/** Model config enum name (`TYPE_FP32`) for each wire datatype; BYTES is `TYPE_STRING`. */
export const CONFIG_TYPE: Readonly<Record<DataType, string>> = {
  BOOL: 'TYPE_BOOL', UINT8: 'TYPE_UINT8', UINT16: 'TYPE_UINT16', UINT32: 'TYPE_UINT32', UINT64: 'TYPE_UINT64',
  INT8: 'TYPE_INT8', INT16: 'TYPE_INT16', INT32: 'TYPE_INT32', INT64: 'TYPE_INT64', FP16: 'TYPE_FP16',
  FP32: 'TYPE_FP32', FP64: 'TYPE_FP64', BYTES: 'TYPE_STRING', BF16: 'TYPE_BF16',
};

const FROM_CONFIG: ReadonlyMap<string, DataType> = new Map(
  DATATYPES.map((d) => [CONFIG_TYPE[d], d] as const),
);

export function isDataType(s: string): s is DataType {
  return (DATATYPES as readonly string[]).includes(s);
}

/** `TYPE_FP32` → `FP32`; undefined for TYPE_INVALID or unknown names. */
export function fromConfigType(t: string): DataType | undefined {
  return FROM_CONFIG.get(t);
}

export function toConfigType(d: DataType): string {
  return CONFIG_TYPE[d];
}
