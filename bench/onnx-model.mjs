// Builds ONNX models (ModelProto bytes) for the peer, with protobufjs and the part of onnx.proto
// (IR version 7+, field numbers as in onnx/onnx.proto3) that a one-node graph needs. protobufjs is
// one of the bench's optional peers (peers.mjs): loaded on the first model, which only a run with
// onnxruntime-node builds.
import { loadPeerModule } from './peers.mjs';

const ONNX_PROTO = `
syntax = "proto3";
package onnx;
message AttributeProto {
  string name = 1;
  int32 type = 20;          // AttributeType: FLOAT 1, INT 2, STRING 3, FLOATS 6, INTS 7
  float f = 2;
  int64 i = 3;
  bytes s = 4;
  repeated float floats = 7;
  repeated int64 ints = 8;
}
message ValueInfoProto { string name = 1; TypeProto type = 2; }
message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  string name = 3;
  string op_type = 4;
  string domain = 7;
  repeated AttributeProto attribute = 5;
}
message ModelProto {
  int64 ir_version = 1;
  repeated OperatorSetIdProto opset_import = 8;
  string producer_name = 2;
  string producer_version = 3;
  GraphProto graph = 7;
}
message GraphProto {
  repeated NodeProto node = 1;
  string name = 2;
  repeated TensorProto initializer = 5;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
}
message TensorProto {
  repeated int64 dims = 1;
  int32 data_type = 2;
  string name = 8;
  bytes raw_data = 9;
}
message TensorShapeProto {
  message Dimension { oneof value { int64 dim_value = 1; string dim_param = 2; } }
  repeated Dimension dim = 1;
}
message TypeProto {
  message Tensor { int32 elem_type = 1; TensorShapeProto shape = 2; }
  oneof value { Tensor tensor_type = 1; }
}
message OperatorSetIdProto { string domain = 1; int64 version = 2; }
`;

let modelProto = null;

/** onnx.ModelProto, parsed once protobufjs is needed. */
function ModelProtoType() {
  if (!modelProto) {
    const loaded = loadPeerModule('protobufjs');
    if (loaded.missing) throw new Error(loaded.missing);
    modelProto = loaded.module.parse(ONNX_PROTO, { keepCase: true }).root.lookupType('onnx.ModelProto');
  }
  return modelProto;
}

/** TensorProto.DataType values. */
export const DataType = { FLOAT: 1, UINT8: 2, INT8: 3, INT32: 6, INT64: 7, FLOAT16: 10 };

/** A graph input/output: dims are numbers or symbolic names. */
export function valueInfo(name, elemType, dims) {
  return {
    name,
    type: {
      tensor_type: {
        elem_type: elemType,
        shape: { dim: dims.map((d) => (typeof d === 'string' ? { dim_param: d } : { dim_value: d })) },
      },
    },
  };
}

/** An initializer from a typed array (stored little-endian as raw_data). */
export function initializer(name, elemType, dims, data) {
  return { name, data_type: elemType, dims, raw_data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
}

function attribute(name, value) {
  if (typeof value === 'number' && Number.isInteger(value)) return { name, type: 2, i: value };
  if (typeof value === 'number') return { name, type: 1, f: value };
  if (typeof value === 'string') return { name, type: 3, s: new TextEncoder().encode(value) };
  throw new Error(`attribute ${name}: unsupported value ${value}`);
}

/**
 * A one-node model. node: { op, domain?, inputs, outputs, attrs? }. Names '' in inputs mark
 * omitted optional inputs, as ONNX does.
 */
export function buildModel({ node, inputs, outputs, initializers = [], opset = 21, msOpset = 1 }) {
  const opsetImport = [{ domain: '', version: opset }];
  if (node.domain) opsetImport.push({ domain: node.domain, version: msOpset });
  const model = {
    ir_version: 10,
    producer_name: 'metal-tensorops bench',
    producer_version: '1',
    opset_import: opsetImport,
    graph: {
      name: node.op,
      node: [{
        name: node.op,
        op_type: node.op,
        domain: node.domain ?? '',
        input: node.inputs,
        output: node.outputs,
        attribute: Object.entries(node.attrs ?? {}).map(([k, v]) => attribute(k, v)),
      }],
      initializer: initializers,
      input: inputs,
      output: outputs,
    },
  };
  const ModelProto = ModelProtoType();
  const err = ModelProto.verify(model);
  if (err) throw new Error(`ONNX model: ${err}`);
  return ModelProto.encode(ModelProto.fromObject(model)).finish();
}
