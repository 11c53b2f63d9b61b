#include "kernels/cuda/fp8_gemv.h"

#include <string>

#include "kernels/cuda/fp8_gemv_device.h"

namespace dss::cuda {
namespace {

Status check_fp8(const Matrix& w) {
  if (w.dtype != DType::kF8E4M3 || w.scales == nullptr)
    return Status::error("fp8_gemv: the matrix must be F8E4M3 with block scales");
  if (w.layout != WeightLayout::kRowMajor)
    return Status::error("fp8_gemv: the matrix must be row-major (load with --weight-layout mmap)");
  return Status::ok();
}

Status cuda_error(const char* what, const char* e) {
  if (e == nullptr) return Status::ok();
  return Status::error(what, ": ", e);
}

// Owns the device buffers of one GEMV problem (freed on every path).
struct Upload {
  dev::Fp8GemvBuffers b;
  ~Upload() { dev::fp8_gemv_free(b); }
  Status init(const Matrix& w, const float* x) {
    b.n_rows = w.n_rows;
    b.n_cols = w.n_cols;
    return cuda_error("fp8_gemv upload",
                      dev::fp8_gemv_upload(b, static_cast<const uint8_t*>(w.data), w.scales, x));
  }
};

}  // namespace

bool device_present() { return dev::device_present(); }

Status fp8_gemv_host(const Matrix& w, const float* x, float* y) {
  DSS_RETURN_IF_ERROR(check_fp8(w));
  Upload u;
  DSS_RETURN_IF_ERROR(u.init(w, x));
  DSS_RETURN_IF_ERROR(cuda_error("fp8_gemv launch", dev::fp8_gemv_run(u.b)));
  return cuda_error("fp8_gemv copy y", dev::fp8_gemv_download_y(u.b, y));
}

Result<GemvTiming> fp8_gemv_time(const Matrix& w, int iters) {
  DSS_RETURN_IF_ERROR(check_fp8(w));
  Upload u;
  DSS_RETURN_IF_ERROR(u.init(w, nullptr));
  double ms = 0.0;
  DSS_RETURN_IF_ERROR(cuda_error("fp8_gemv timing", dev::fp8_gemv_time_ms(u.b, iters, &ms)));
  GemvTiming t;
  t.seconds_per_call = ms * 1e-3;
  const double bytes =
      static_cast<double>(w.n_rows * w.n_cols) +
      4.0 * static_cast<double>(w.n_scale_rows() * w.n_scale_cols() + w.n_cols + w.n_rows);
  t.gbytes_per_s = bytes / t.seconds_per_call * 1e-9;
  return t;
}

}  // namespace dss::cuda
