import * as fs from 'node:fs';
import * as path from 'node:path';
import * as protobuf from 'protobufjs';
import { MODEL_CONFIG_PROTO_PATH, printModelConfigProto } from './proto-text';
import { allEnums, allMessages, getMessage } from './schema';

const REPO_ROOT = path.join(__dirname, '..', '..', '..');

describe('model_config.proto', () => {
  it('committed proto/model_config.proto equals the generator output', () => {
    const committed = fs.readFileSync(path.join(REPO_ROOT, MODEL_CONFIG_PROTO_PATH), 'utf8');
    expect(committed).toBe(printModelConfigProto());
  });

  it('loads with protobufjs and matches the descriptor table field by field', () => {
    const root = protobuf.parse(printModelConfigProto(), { keepCase: true }).root;
    for (const m of allMessages()) {
      const type = root.lookupType(`inference.${m.fullName}`);
      expect(Object.keys(type.fields)).toEqual(m.fields.map((f) => f.name));
      for (const f of m.fields) {
        const pf = type.fields[f.name];
        expect(pf.id).toBe(f.number);
        expect(pf.repeated).toBe(f.label === 'repeated');
        expect(pf.map).toBe(f.label === 'map');
        expect(pf.partOf?.name).toBe(f.oneof);
      }
    }
    for (const e of allEnums()) {
      const type = root.lookupEnum(`inference.${e.fullName}`);
      expect(Object.entries(type.values)).toEqual(e.values.map((v) => [v.name, v.number]));
    }
  });

  it('keeps Triton numbers for fields declared out of number order', () => {
    const config = getMessage('ModelConfig');
    const numberOf = (name: string): number | undefined => config.fields.find((f) => f.name === name)?.number;
    expect(config.fields.slice(0, 5).map((f) => f.name)).toEqual(['name', 'platform', 'backend', 'runtime', 'version_policy']);
    expect([numberOf('backend'), numberOf('runtime'), numberOf('model_metrics'), numberOf('response_cache')]).toEqual([17, 25, 26, 24]);
    const group = getMessage('ModelInstanceGroup').fields.find((f) => f.name === 'kind');
    expect(group).toMatchObject({ number: 4, kind: 'enum', ref: 'ModelInstanceGroup.Kind' });
    const shape = getMessage('ModelOptimizationPolicy.Cuda.GraphSpec.LowerBound').fields[1];
    expect(shape).toMatchObject({ label: 'map', mapKey: 'string', ref: 'ModelOptimizationPolicy.Cuda.GraphSpec.Shape' });
  });
});
