import 'reflect-metadata';
import { Type } from 'class-transformer';
import {
  IsArray,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Min,
  ValidateNested,
  validateSync,
  type ValidationError,
} from 'class-validator';
import { DATATYPES } from '@nereid/tensor';
import { HttpRequestErrors as Errors, InferenceError, JsonAccess } from '@nereid/protocol';

/**
 * The structure of a v2 infer request, checked with class-validator. Tensor `data` is never part
 * of these objects: it is decoded and checked by the tensor codec in one pass.
 */
export class InferInputDto {
  @IsString()
  name!: string;

  @IsArray()
  @IsInt({ each: true })
  @Min(0, { each: true })
  shape!: number[];

  @IsString()
  @IsIn(DATATYPES as unknown as string[])
  datatype!: string;

  @IsOptional()
  @IsObject()
  parameters?: Record<string, unknown>;
}

export class InferOutputDto {
  @IsString()
  name!: string;

  @IsOptional()
  @IsObject()
  parameters?: Record<string, unknown>;
}

export class InferRequestDto {
  @IsOptional()
  @IsString()
  id?: string;

  @IsOptional()
  @IsObject()
  parameters?: Record<string, unknown>;

  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => InferInputDto)
  inputs!: InferInputDto[];

  @IsOptional()
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => InferOutputDto)
  outputs?: InferOutputDto[];
}

/** TritonJson's words for a member that is absent or not of the type `kind`. */
function accessError(field: string, value: unknown, kind: string): InferenceError {
  return Errors.unableToParse(field, value === undefined ? JsonAccess.missing(field) : kind);
}

/** Triton's error for one field that broke a rule (`constraints` keys are class-validator's). */
function fieldError(e: ValidationError, owner: object | undefined): InferenceError {
  const c = e.constraints ?? {};
  switch (e.property) {
    case 'inputs':
    case 'outputs':
    case 'shape':
      if (c.isArray) return accessError(e.property, e.value, JsonAccess.array);
      return Errors.unableToParse(e.property, JsonAccess.unsigned);
    case 'datatype':
      if (c.isString) return accessError('datatype', e.value, JsonAccess.string);
      return Errors.invalidDatatype((owner as InferInputDto | undefined)?.name ?? '');
    case 'parameters':
      // The request's own parameters are enumerated; Triton only looks into a tensor's.
      if (owner === undefined) return Errors.requestParameters();
      return Errors.unableToParse('parameters', JsonAccess.object);
    default:
      return accessError(e.property, e.value, JsonAccess.string);
  }
}

/** Where Triton reads a request: id, parameters, then each input's and each output's fields. */
const REQUEST_ORDER = ['id', 'parameters', 'inputs', 'outputs'];
const TENSOR_ORDER = ['name', 'datatype', 'shape', 'parameters'];

function byOrder(errors: readonly ValidationError[], order: readonly string[]): ValidationError[] {
  return [...errors].sort((a, b) => order.indexOf(a.property) - order.indexOf(b.property));
}

/** The first fault in Triton's reading order, in Triton's words (server src/http_server.cc). */
function structureError(errors: readonly ValidationError[]): InferenceError {
  for (const e of byOrder(errors, REQUEST_ORDER)) {
    if (e.constraints) return fieldError(e, undefined);
    for (const item of e.children ?? []) {
      for (const f of byOrder(item.children ?? [], TENSOR_ORDER)) {
        if (f.constraints) return fieldError(f, item.value as object);
      }
    }
  }
  return Errors.unableToParse('inputs', JsonAccess.array);
}

function toDto<T extends object>(ctor: new () => T, fields: Partial<T>): T {
  return Object.assign(new ctor(), fields);
}

const DATATYPE_SET: ReadonlySet<string> = new Set(DATATYPES);

function isObjectOrAbsent(v: unknown): boolean {
  return v === undefined || (typeof v === 'object' && v !== null && !Array.isArray(v));
}

function isShape(v: unknown): boolean {
  if (!Array.isArray(v)) return false;
  for (const d of v) if (typeof d !== 'number' || !Number.isInteger(d) || d < 0) return false;
  return true;
}

/**
 * True when the request certainly satisfies the DTOs above. It only lets well-formed requests skip
 * class-validator's metadata walk (about 15 µs a request, measured in bench/http-infer); anything it
 * is unsure of goes to class-validator, which stays the definition of the rules (the words of the
 * errors are Triton's, from @nereid/protocol's request-errors). infer-dto.spec.ts checks that it never accepts what class-validator rejects.
 */
export function isWellFormedInfer(b: Record<string, unknown>): boolean {
  if (b.id !== undefined && typeof b.id !== 'string') return false;
  if (!isObjectOrAbsent(b.parameters)) return false;
  const inputs = b.inputs;
  if (!Array.isArray(inputs)) return false;
  for (const i of inputs) {
    if (typeof i !== 'object' || i === null) return false;
    const t = i as Record<string, unknown>;
    if (typeof t.name !== 'string' || typeof t.datatype !== 'string' || !DATATYPE_SET.has(t.datatype)) return false;
    if (!isShape(t.shape) || !isObjectOrAbsent(t.parameters)) return false;
  }
  const outputs = b.outputs;
  if (outputs === undefined) return true;
  if (!Array.isArray(outputs)) return false;
  for (const o of outputs) {
    if (typeof o !== 'object' || o === null) return false;
    const t = o as Record<string, unknown>;
    if (typeof t.name !== 'string' || !isObjectOrAbsent(t.parameters)) return false;
  }
  return true;
}

/**
 * Checks the structure of a parsed infer request (never its tensor data) and throws INVALID_ARG
 * with Triton's words for the first offending field.
 */
export function checkInferStructure(body: unknown): void {
  if (typeof body === 'object' && body !== null && !Array.isArray(body) && isWellFormedInfer(body as Record<string, unknown>)) {
    return;
  }
  validateInferStructure(body);
}

/** class-validator over the request structure; throws INVALID_ARG naming the first offending field. */
export function validateInferStructure(body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    // Triton looks for `inputs` in whatever the JSON holds.
    throw Errors.unableToParse('inputs', JsonAccess.missing('inputs'));
  }
  const b = body as Record<string, unknown>;
  const rawInputs = b.inputs;
  const rawOutputs = b.outputs;
  const dto = toDto(InferRequestDto, {
    id: b.id as string | undefined,
    parameters: b.parameters as Record<string, unknown> | undefined,
    inputs: Array.isArray(rawInputs)
      ? rawInputs.map((i) => {
          const o = (typeof i === 'object' && i !== null ? i : {}) as Record<string, unknown>;
          return toDto(InferInputDto, {
            name: o.name as string,
            shape: o.shape as number[],
            datatype: o.datatype as string,
            parameters: o.parameters as Record<string, unknown> | undefined,
          });
        })
      : (rawInputs as InferInputDto[]),
    outputs: Array.isArray(rawOutputs)
      ? rawOutputs.map((i) => {
          const o = (typeof i === 'object' && i !== null ? i : {}) as Record<string, unknown>;
          return toDto(InferOutputDto, { name: o.name as string, parameters: o.parameters as Record<string, unknown> | undefined });
        })
      : (rawOutputs as InferOutputDto[] | undefined),
  });
  if (b.id === undefined) delete dto.id;
  if (b.parameters === undefined) delete dto.parameters;
  if (rawOutputs === undefined) delete dto.outputs;
  const errors = validateSync(dto, { forbidUnknownValues: false });
  if (errors.length > 0) throw structureError(errors);
}
