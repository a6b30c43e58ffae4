// Dispatch plans of the elementwise ops (shaders/elementwise.metal): unary silu/gelu/gelu_tanh
// and binary add/mul/swiglu with NumPy broadcasting (core/ops.h ElementwiseParams).
#pragma once
#include <limits>

#include "../dispatch_plan.h"

namespace mto::plan {

// out = op(x) over a dense x of dtype x, out of dtype out (x's: check_unary). Throws E_DTYPE
// (not a float dtype, out other than x), E_SHAPE (more than 2^31 - 1 elements), E_BACKEND
// (Tier::Cpu). Slots: X (buffer A), Y.
Dispatch plan_unary(UnaryOp op, DType x, DType out, const Broadcast& bc, Tier tier);

// out = op(a, b) over bc (broadcast_shapes), a and b of any float dtypes, out of their dtype when
// they agree, else float32 (check_binary). One dense run or a repeated value for each operand
// takes the contiguous kernel, anything else the strided kernel (at most ELEMENTWISE_MAX_DIMS
// merged dimensions). Throws E_DTYPE, E_SHAPE (too many dimensions or elements), E_BACKEND.
// Slots: A, B, Y.
// SwigluOai reads alpha and limit (ElementwiseParams).
Dispatch plan_binary(BinaryOp op, DType a, DType b, DType out, const Broadcast& bc, Tier tier, float alpha = 1.f,
                     float limit = std::numeric_limits<float>::infinity());

}  // namespace mto::plan
