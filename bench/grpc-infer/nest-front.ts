// The alternative the gRPC issue asked to measure: ModelInfer served through @nestjs/microservices
// (Transport.GRPC) instead of grpc-js directly, with the same decode, core and encode. Used only by
// bench/grpc-infer/run.js (mode `nest`); Nereid itself serves gRPC on grpc-js directly.
import * as path from 'node:path';
import { Controller, Inject, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { GrpcMethod, RpcException, Transport, type MicroserviceOptions } from '@nestjs/microservices';
import type { InferenceCore } from '@nereid/core';
import { decodeInferRequest } from '../../apps/gateway/src/grpc/infer-request';
import { encodeInferResponse } from '../../apps/gateway/src/grpc/infer-response';
import { toServiceError } from '../../apps/gateway/src/grpc/grpc-status';
import type { WireModelInferRequest, WireModelInferResponse } from '../../apps/gateway/src/grpc/wire-types';

const CORE = Symbol('core');

@Controller()
class ModelInferController {
  constructor(@Inject(CORE) private readonly core: InferenceCore) {}

  @GrpcMethod('GRPCInferenceService', 'ModelInfer')
  async modelInfer(message: WireModelInferRequest): Promise<WireModelInferResponse> {
    try {
      const { request } = decodeInferRequest(message);
      return encodeInferResponse(await this.core.inferOne(request));
    } catch (e) {
      const { code, details } = toServiceError(e);
      throw new RpcException({ code, message: details });
    }
  }
}

export async function startNestFront(core: InferenceCore, host: string, port: number): Promise<{ close(): Promise<void> }> {
  @Module({ controllers: [ModelInferController], providers: [{ provide: CORE, useValue: core }] })
  class BenchModule {}

  const protoDir = path.resolve(__dirname, '../../proto');
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(BenchModule, {
    transport: Transport.GRPC,
    logger: false,
    options: {
      package: 'inference',
      protoPath: 'grpc_service.proto',
      url: `${host}:${port}`,
      loader: { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: [protoDir] },
      maxReceiveMessageLength: 2 ** 31 - 1,
      maxSendMessageLength: 2 ** 31 - 1,
    },
  });
  await app.listen();
  return { close: () => app.close() };
}
