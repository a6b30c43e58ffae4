// Dispatch plan of softmax over the last axis (shaders/softmax.metal; core/ops.h RowsParams).
#pragma once
#include "../dispatch_plan.h"

namespace mto::plan {

// y = softmax(x) over rows of p.cols, x of dtype x and y of dtype y (x's: check_softmax). One
// threadgroup per row, any width (rows of 128256 loop). Throws E_DTYPE, E_SHAPE (past 32-bit
// indices), E_BACKEND (Tier::Cpu). Slots: X, Y.
Dispatch plan_softmax(const RowsParams& p, DType x, DType y, Tier tier);

}  // namespace mto::plan
