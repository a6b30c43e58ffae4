// embedding on the GPU (shaders/embedding.metal) against the cpu backend's (native/cpu/pick.cc):
// dense float32/float16/bfloat16 tables copied bit for bit, every quantized format (affine with
// each group) decoded to float32 within 1e-6 (1 + |ref|) (the same decoders; an affine s * q + b
// may round once or twice), NaN and inf blocks included; odd vocabularies, rows of one and of
// several threadgroups, ids of odd counts and shapes, repeated ids; and ids outside the table,
// which must give the cpu backend's E_ARG through the status buffer (the first bad one also when
// it sits in a later SIMD-group than a later bad one; a single id) while the kernel still writes
// its rows: zeros for a bad id, the table's row for the others.
#include <cmath>
#include <cstring>

#include "cases.h"
#include "core/error.h"
#include "core/plan/embedding.h"
#include "cpu/ops.h"
#include "data.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::plan::Arg;

Bytes bytes_of(const mto::Buffer& b) {
  const auto* p = static_cast<const unsigned char*>(b.data());
  return Bytes(p, p + b.bytes());
}

struct EmbCase {
  int64_t vocab, dim;
  mto::Shape ids;
  bool quantized;
  DType dtype;  // dense tables
  mto::Format format;
  int block;
  std::vector<std::pair<int64_t, int32_t>> bad;  // (flat index, id) planted outside the table
  uint32_t max_threads = 1024;                    // the pipeline limit the plan is made for
};

CaseResult run_case(const EmbCase& c, const std::string& name, const std::string& variant) {
  const uint64_t seed = seed_of(name);
  mto::cpu::ThreadPool pool(1);
  // The table: MX corner-case blocks (zeros, subnormals, huge values, NaN, inf), quantized or
  // stored in the dense dtype.
  const std::vector<float> values = mx_block_data(c.vocab, (c.dim + 31) / 32 * 32, seed);
  mto::Tensor dense;
  dense.shape = {c.vocab, c.dim};
  dense.dtype = c.quantized ? DType::Float32 : c.dtype;
  dense.buffer = mto::make_buffer(size_t(c.vocab * c.dim) * mto::dtype_size(dense.dtype));
  const int64_t padded = (c.dim + 31) / 32 * 32;
  for (int64_t r = 0; r < c.vocab; ++r) {
    mto::from_float32(dense.dtype, values.data() + r * padded,
                      static_cast<unsigned char*>(dense.buffer->data()) + size_t(r * c.dim) * mto::dtype_size(dense.dtype),
                      size_t(c.dim));
  }
  mto::QTensorPtr q;
  if (c.quantized) {
    q = mto::make_qtensor({c.vocab, c.dim}, c.format, c.block);
    mto::cpu::quantize(pool, dense, *q);
  }
  const mto::Operand table = c.quantized ? mto::Operand{nullptr, q.get()} : mto::Operand{&dense, nullptr};

  mto::Tensor ids;
  ids.shape = c.ids;
  ids.dtype = DType::Int32;
  ids.buffer = mto::make_buffer(size_t(ids.numel()) * 4);
  Rng rng(seed + 1);
  auto* id = static_cast<int32_t*>(ids.buffer->data());
  for (int64_t i = 0; i < ids.numel(); ++i) id[i] = int32_t(rng.range(0, int(c.vocab - 1)));
  if (ids.numel() > 2) id[ids.numel() - 1] = id[0];  // a repeated id
  if (ids.numel() > 1) id[1] = int32_t(c.vocab - 1);  // the last row
  for (const auto& [at, value] : c.bad) id[at] = value;

  const mto::EmbeddingParams p = mto::check_embedding(table, ids);
  mto::Tensor out;
  out.shape = p.out_shape;
  out.dtype = p.out_dtype;
  out.buffer = mto::make_buffer(out.bytes());
  std::string cpu_error;
  try {
    mto::cpu::embedding(pool, table, ids, p, out);
  } catch (const mto::Error& e) {
    cpu_error = std::string(e.code()) + ": " + e.what();
  }
  std::vector<float> ref(size_t(out.numel()));
  mto::to_float32(out.dtype, out.buffer->data(), ref.data(), ref.size());

  std::map<Arg, Bytes> inputs = {{Arg::Ids, bytes_of(*ids.buffer)}};
  if (c.quantized) {
    inputs[Arg::WCodes] = bytes_of(*q->codes);
    inputs[Arg::WScales] = bytes_of(*q->scales);
    if (q->biases) inputs[Arg::WBiases] = bytes_of(*q->biases);
  } else {
    inputs[Arg::X] = bytes_of(*dense.buffer);
  }
  const mto::plan::Dispatch plan =
      mto::plan::plan_embedding(p, c.quantized, c.dtype, c.format, c.block, mto::Tier::Simdgroup, c.max_threads);
  return run_plan_case(
      "embedding", plan, variant, inputs,
      {{Arg::Y, out.bytes()}, {Arg::Status, size_t(mto::plan::kEmbeddingStatusBytes)}},
      [&](const std::map<Arg, Bytes>& got) {
        int32_t status[2];
        std::memcpy(status, got.at(Arg::Status).data(), sizeof status);
        const mto::OpStatus s = mto::plan::embedding_status(status, p);
        const std::string gpu_error = s.ok() ? "" : std::string(s.code) + ": " + s.message;
        if (gpu_error != cpu_error) {
          Comparison bad;
          bad.ok = false;
          bad.mismatches = 1;
          bad.first_mismatch = "status: kernel '" + gpu_error + "', cpu '" + cpu_error + "'";
          return bad;
        }
        if (!cpu_error.empty()) {
          // The op fails, and the kernel's rows are still defined (embedding.metal's header): a
          // bad id's row is zeros, every other row its table row.
          std::vector<int32_t> fixed(id, id + ids.numel());
          for (const auto& [at, value] : c.bad) fixed[size_t(at)] = 0;
          mto::Tensor ids_ok = ids;
          ids_ok.buffer = mto::make_buffer(size_t(ids.numel()) * 4);
          std::memcpy(ids_ok.buffer->data(), fixed.data(), fixed.size() * 4);
          mto::Tensor want = out;
          want.buffer = mto::make_buffer(out.bytes());
          mto::cpu::embedding(pool, table, ids_ok, mto::check_embedding(table, ids_ok), want);
          const size_t row = size_t(c.dim) * mto::dtype_size(want.dtype);
          for (const auto& [at, value] : c.bad) {
            std::memset(static_cast<unsigned char*>(want.buffer->data()) + size_t(at) * row, 0, row);
          }
          if (!c.quantized) {
            Comparison cmp;
            cmp.ok = got.at(Arg::Y) == bytes_of(*want.buffer);
            if (!cmp.ok) {
              cmp.mismatches = 1;
              cmp.first_mismatch = "out (ids out of range): rows other than the table's or zeros";
            }
            return cmp;
          }
          std::vector<float> want_f(size_t(want.numel()));
          mto::to_float32(want.dtype, want.buffer->data(), want_f.data(), want_f.size());
          return compare_outputs(got.at(Arg::Y), DType::Float32, want_f, 1e-6, c.dim, "out (ids out of range)");
        }
        if (!c.quantized) {  // a copy: the same bits
          Comparison cmp;
          cmp.ok = got.at(Arg::Y) == bytes_of(*out.buffer);
          if (!cmp.ok) {
            cmp.mismatches = 1;
            cmp.first_mismatch = "out: the copied rows differ from the table's bits";
          }
          return cmp;
        }
        return compare_outputs(got.at(Arg::Y), DType::Float32, ref, 1e-6, c.dim, "out");
      });
}

}  // namespace

std::vector<Case> embedding_cases() {
  std::vector<Case> cases;
  auto add = [&](const EmbCase& c) {
    std::string name = "embedding/";
    if (c.quantized) {
      name += mto::format_info(c.format).name;
      if (mto::format_info(c.format).affine) name += ".g" + std::to_string(c.block);
    } else {
      name += c.dtype == DType::Float32 ? "f32" : c.dtype == DType::Float16 ? "f16" : "bf16";
    }
    name += "/V" + std::to_string(c.vocab) + "/D" + std::to_string(c.dim) + "/ids";
    for (size_t i = 0; i < c.ids.size(); ++i) name += (i ? "x" : "") + std::to_string(c.ids[i]);
    if (!c.bad.empty()) name += "/out_of_range";
    if (c.max_threads < 1024) name += "/limit" + std::to_string(c.max_threads);
    cases.push_back({name, [=](const std::string& v) { return run_case(c, name, v); }});
  };
  using mto::Format;
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    add({37, 45, {7}, false, dt, Format::MXFP4, 32, {}});
    add({5, 1, {3, 4}, false, dt, Format::MXFP4, 32, {}});
    add({11, 3001, {2, 3}, false, dt, Format::MXFP4, 32, {}});  // two threadgroups per row
    add({37, 45, {9}, false, dt, Format::MXFP4, 32, {{3, 37}, {5, -1}}});
  }
  struct Q {
    Format f;
    int block;
  };
  const Q formats[] = {{Format::MXFP8_E4M3, 32}, {Format::MXFP8_E5M2, 32}, {Format::MXFP6_E3M2, 32},
                       {Format::MXFP6_E2M3, 32}, {Format::MXFP4, 32},      {Format::MXINT8, 32},
                       {Format::MXINT4, 32},     {Format::MXINT2, 32},     {Format::AFFINE4, 32},
                       {Format::AFFINE4, 64},    {Format::AFFINE4, 128},   {Format::AFFINE8, 32},
                       {Format::AFFINE8, 64},    {Format::AFFINE8, 128}};
  for (const Q& q : formats) {
    add({29, q.block * 3, {7}, true, DType::Float32, q.f, q.block, {}});
    add({3, 2176, {2, 2}, true, DType::Float32, q.f, q.block, {}});  // two threadgroups per row
  }
  add({29, 96, {6}, true, DType::Float32, Format::MXFP4, 32, {{4, 29}}});
  // One id (a decode step): threadgroup (0, 0) is the only one, and it must write the status.
  add({37, 45, {1}, false, DType::Float16, Format::MXFP4, 32, {}});
  add({29, 96, {1}, true, DType::Float32, Format::MXINT4, 32, {}});
  add({29, 96, {1}, true, DType::Float32, Format::MXINT4, 32, {{0, 29}}});
  // 256 threads (8 SIMD-groups) scanning 300 ids: the first bad id (flat 40) in SIMD-group 1,
  // a later one (flat 260) in SIMD-group 0's second stride, and one past them in SIMD-group 7.
  add({11, 3001, {300}, false, DType::Float32, Format::MXFP4, 32, {{40, 11}, {260, -1}, {255, 12}}});
  add({3, 2176, {300}, true, DType::Float32, Format::MXFP4, 32, {{40, 3}, {260, -5}, {255, 4}}});
  // A row filling 225..256 of one 32-thread threadgroup's 256 elements: its 8th stride is partial.
  add({13, 250, {5}, false, DType::Float32, Format::MXFP4, 32, {}});
  // The only bad id in a thread's second stride through the ids (flat 260 of 2 x 150).
  add({11, 3001, {2, 150}, false, DType::BFloat16, Format::MXFP4, 32, {{260, 11}}});
  add({29, 128, {6}, true, DType::Float32, Format::AFFINE4, 64, {{0, -7}, {2, 1000}}});
  // Plans made for a pipeline that allows 40 threads: one SIMD-group, more threadgroups per row.
  add({11, 3001, {2, 3}, false, DType::BFloat16, Format::MXFP4, 32, {}, 40});
  add({3, 2176, {2, 2}, true, DType::Float32, Format::MXINT4, 32, {}, 40});
  add({37, 45, {9}, false, DType::Float32, Format::MXFP4, 32, {{3, 37}, {5, -1}}, 40});
  return cases;
}

}  // namespace mtoh_driver
