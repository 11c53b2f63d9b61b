// The plain-type views kernels/cuda/ops_device.h takes, made from the project's types.
#pragma once

#include "backend/backend.h"
#include "base/check.h"
#include "kernels/cuda/ops_device.h"

namespace dss {

static_assert(static_cast<int>(DType::kF32) == cuda::dev::kF32 &&
              static_cast<int>(DType::kBF16) == cuda::dev::kBF16 &&
              static_cast<int>(DType::kF16) == cuda::dev::kF16 &&
              static_cast<int>(DType::kF8E4M3) == cuda::dev::kF8E4M3 &&
              static_cast<int>(DType::kI8) == cuda::dev::kI8);

inline cuda::dev::DevMatrix dev_matrix(const Matrix& w) {
  DSS_CHECK(w.layout == WeightLayout::kRowMajor, "the CUDA backend reads row-major weights");
  return {static_cast<int32_t>(w.dtype), w.n_rows, w.n_cols, w.data, w.scales};
}

inline cuda::dev::DevVector dev_vector(const Vector& v) {
  return {static_cast<int32_t>(v.dtype), v.n, v.data};
}

// Layer i_layer of a cache whose storage is device memory.
inline cuda::dev::DevKvLayer dev_kv(const KvCache& kv, int32_t i_layer) {
  const KvLayout& y = kv.layout();
  cuda::dev::DevKvLayer d;
  d.dtype = static_cast<int32_t>(y.dtype);
  d.d_latent = y.d_latent;
  d.d_rope = y.d_rope;
  d.d_index = y.d_index;
  d.page_size = y.page_size;
  d.latent_row_bytes = static_cast<int64_t>(y.latent_row_bytes());
  d.latent = const_cast<uint8_t*>(kv.latent_rows(i_layer));
  if (y.d_index > 0) {
    d.index_keys = const_cast<uint8_t*>(kv.index_keys(i_layer));
    d.index_scales = const_cast<float*>(kv.index_scales(i_layer));
  }
  return d;
}

}  // namespace dss
