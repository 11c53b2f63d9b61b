#include "backend/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_scratch.h"
#include "backend/cuda/dev_views.h"
#include "base/check.h"
#include "base/log.h"
#include "kernels/cuda/blaslt_gemm.h"
#include "kernels/cuda/ops_device.h"

namespace dss {

namespace dev = cuda::dev;

static_assert(dev::kMaxListed == kMlaAbsorbChunk);

namespace {

struct DeviceMemory final : Buffer::Owner {
  void* p = nullptr;
  ~DeviceMemory() override { cudaFree(p); }
};

}  // namespace

int32_t CudaBackend::device_count() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(const Options& o) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess)
    return Status::error("--device cuda: no usable CUDA driver or device (", cudaGetErrorString(e),
                         ")");
  if (o.device < 0 || o.device >= n)
    return Status::error("--device cuda: device ", o.device, " of ", n, " CUDA devices");
  if (cudaSetDevice(o.device) != cudaSuccess)
    return Status::error("--device cuda: cannot use device ", o.device);
  std::unique_ptr<CudaBackend> be(new CudaBackend(o));
  cudaStream_t s = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  be->stream_ = s;
  if (o.act_quant_fp8) {
    Result<std::unique_ptr<cuda::BlasLt>> blas = cuda::BlasLt::create();
    if (blas && (*blas)->fp8_block_supported()) {
      be->blas_ = std::move(*blas);
    } else {
      log_info("--act-quant fp8: cuBLASLt's FP8 block scaling is not available here (",
               blas ? "needs sm_90 and cuBLASLt >= 12.9" : blas.message(),
               "); the float32 kernel runs over the quantised activations");
    }
  }
  return be;
}

CudaBackend::CudaBackend(const Options& o) : o_(o) {}

CudaBackend::~CudaBackend() {
  for (auto& [host, m] : constants_) cudaFree(m.device);
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

std::string CudaBackend::device_name() const {
  cudaDeviceProp p{};
  cuda_check(cudaGetDeviceProperties(&p, o_.device), "cudaGetDeviceProperties");
  char mem[64];
  std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(p.totalGlobalMem) / (1 << 30));
  return std::string(p.name) + ", " + mem + ", sm_" + std::to_string(p.major) +
         std::to_string(p.minor);
}

void CudaBackend::memory_info(size_t* free_bytes, size_t* total_bytes) const {
  cuda_check(cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
}

Buffer CudaBackend::allocate(size_t bytes, MemoryUse /*use*/) const {
  auto owner = std::make_unique<DeviceMemory>();
  if (bytes > 0) {
    cuda_check(cudaMalloc(&owner->p, bytes), "cudaMalloc of ", bytes, " bytes");
    cuda_check(cudaMemset(owner->p, 0, bytes), "cudaMemset");
    // The memset runs on the legacy stream, which the backend's non-blocking stream does not
    // wait for: allocation is a load-time step, so wait here.
    cuda_check(cudaDeviceSynchronize(), "cudaMemset");
  }
  auto* data = static_cast<uint8_t*>(owner->p);
  return Buffer(data, bytes, MemorySpace::kDevice, std::move(owner));
}

std::unique_ptr<BackendScratch> CudaBackend::make_scratch(const ModelConfig& cfg,
                                                          const WorkspaceLimits& lim) const {
  return std::make_unique<CudaScratch>(cfg, lim);
}

void CudaBackend::upload(void* device_dst, const void* host_src, size_t bytes) const {
  if (bytes == 0) return;
  cuda_check(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice), "upload");
  // From pageable memory cudaMemcpy may return before the DMA lands; the stream must see it.
  cuda_check(cudaDeviceSynchronize(), "upload");
}

void CudaBackend::mirror_constant(const float* host_src, size_t n) {
  const auto* key = reinterpret_cast<const uint8_t*>(host_src);
  if (n == 0 || constants_.count(key) > 0) return;
  Mirror m{n * sizeof(float), nullptr};
  cuda_check(cudaMalloc(&m.device, m.bytes), "cudaMalloc of a constant");
  upload(m.device, host_src, m.bytes);
  constants_[key] = m;
}

void CudaBackend::download(const float* device_src, float* host_dst, int64_t n) const {
  if (n <= 0) return;
  const auto s = static_cast<cudaStream_t>(stream_);
  cuda_check(cudaMemcpyAsync(host_dst, device_src, static_cast<size_t>(n) * sizeof(float),
                             cudaMemcpyDeviceToHost, s),
             "download");
  cuda_check(cudaStreamSynchronize(s), "the step's kernels");
}

void CudaBackend::begin_forward(const ForwardBatch& b, BackendScratch& scratch) const {
  CudaScratch& s = cuda_scratch(scratch);
  cuda_check(cudaSetDevice(o_.device), "cudaSetDevice");  // the calling thread's device
  const std::span<const int32_t> spans[] = {b.tokens,     b.positions,  b.seq_token_begin,
                                            b.seq_kv_len, b.page_table, b.kv_write_slots,
                                            b.logit_rows, b.seq_n_draft};
  static_assert(sizeof(TokenId) == sizeof(int32_t) && sizeof(PageId) == sizeof(int32_t));
  auto padded = [](size_t bytes) { return (bytes + 255) / 256 * 256; };  // each span 256-aligned
  size_t total = 0;
  for (const auto& sp : spans) total += padded(sp.size_bytes());
  s.reserve_batch(total);
  s.staged.clear();
  size_t at = 0;
  for (const auto& sp : spans) {
    if (sp.empty()) continue;
    std::memcpy(s.batch_host + at, sp.data(), sp.size_bytes());
    s.staged.push_back({reinterpret_cast<const uint8_t*>(sp.data()), sp.size_bytes(), at});
    at += padded(sp.size_bytes());
  }
  const auto st = static_cast<cudaStream_t>(stream_);
  // The previous step's kernels may still read batch_dev; the copy is ordered after them.
  cuda_check(cudaMemcpyAsync(s.batch_dev, s.batch_host, at, cudaMemcpyHostToDevice, st), "batch");
  cuda_check(cudaStreamSynchronize(st), "batch upload");  // batch_host is reused next step
  staged_ = &scratch;
}

const void* CudaBackend::to_device(const void* p) const {
  const auto* q = static_cast<const uint8_t*>(p);
  if (staged_ != nullptr) {
    const CudaScratch& s = static_cast<const CudaScratch&>(*staged_);
    for (const CudaScratch::Staged& st : s.staged)
      if (q >= st.host && q < st.host + st.bytes) return s.batch_dev + st.offset + (q - st.host);
  }
  auto it = constants_.upper_bound(q);
  if (it != constants_.begin()) {
    --it;
    if (q < it->first + it->second.bytes)
      return static_cast<uint8_t*>(it->second.device) + (q - it->first);
  }
  return p;
}

void CudaBackend::linear(const Matrix& w, const float* x, int64_t n_tok, float* y,
                         BackendScratch& s) const {
  if (o_.act_quant_fp8 && w.dtype == DType::kF8E4M3) {
    linear_w8a8(w, x, n_tok, y, cuda_scratch(s));
    return;
  }
  DSS_DEV(dev::linear(dev_matrix(w), x, n_tok, y, stream_));
}

void CudaBackend::linear_w8a8(const Matrix& w, const float* x, int64_t n_tok, float* y,
                              CudaScratch& s) const {
  const int64_t N = w.n_rows, K = w.n_cols;
  DSS_CHECK(n_tok * K <= s.act_capacity, "W8A8 scratch of ", s.act_capacity, " values < ", n_tok,
            " x ", K, " (WorkspaceLimits::act_quant?)");
  DSS_DEV(dev::act_quant(x, n_tok, K, o_.act_quant_ue8m0, s.act_codes, s.act_scales, stream_));
  if (blas_ != nullptr && N % 8 == 0 && K % 16 == 0 && (K + 127) / 128 % 4 == 0) {
    const Status st = blas_->gemm_fp8_block(static_cast<const uint8_t*>(w.data), w.scales,
                                            s.act_codes, s.act_scales, y, n_tok, N, K, stream_);
    if (st) return;
    // A shape or alignment the eligibility above let through: a bug to report, not to hide.
    DSS_CHECK(false, "cuBLASLt FP8 GEMM [", N, " x ", K, "] x ", n_tok, " tokens: ", st.message());
  }
  DSS_DEV(dev::act_dequant(s.act_codes, s.act_scales, n_tok, K, s.act_x, stream_));
  DSS_DEV(dev::linear(dev_matrix(w), s.act_x, n_tok, y, stream_));
}

void CudaBackend::linear_pair(const Matrix& w0, float* y0, const Matrix& w1, float* y1,
                              const float* x, int64_t n_tok, BackendScratch& s) const {
  linear(w0, x, n_tok, y0, s);
  linear(w1, x, n_tok, y1, s);
}

void CudaBackend::embed(const Matrix& table, const int32_t* ids, int64_t n, float* h,
                        int64_t row_begin) const {
  DSS_DEV(dev::embed(dev_matrix(table), dev(ids), n, row_begin, h, stream_));
}

void CudaBackend::rmsnorm_rows(const float* x, const Vector& w, int64_t n_rows, int64_t width,
                               float eps, float* y) const {
  DSS_DEV(dev::rmsnorm_rows(x, dev_vector(w), n_rows, width, eps, y, stream_));
}

void CudaBackend::add_rows(const float* x, int64_t n, float* y) const {
  DSS_DEV(dev::add_rows(x, n, y, stream_));
}

void CudaBackend::ffn(const FfnWeights& f, const float* x, int64_t n_tok, float* y,
                      BackendScratch& scratch) const {
  CudaScratch& s = cuda_scratch(scratch);
  const int64_t d_ff = f.gate.n_rows;
  DSS_CHECK(n_tok <= s.limits.max_tokens, "ffn of ", n_tok, " tokens");
  linear(f.gate, x, n_tok, s.gate, scratch);
  linear(f.up, x, n_tok, s.up, scratch);
  DSS_DEV(dev::silu_mul(s.gate, s.up, n_tok * d_ff, s.gate, stream_));
  linear(f.down, s.gate, n_tok, y, scratch);
}

void CudaBackend::mla_rope_rows(const MlaRopeArgs& a, BackendScratch& /*s*/) const {
  dev::MlaRopeDev d;
  d.n_heads = a.shape.n_heads;
  d.d_nope = a.shape.d_nope;
  d.d_rope = a.shape.d_rope;
  d.kv_lora_rank = a.shape.kv_lora_rank;
  d.n_tok = a.n_tok;
  d.d_row = a.d_row;
  d.positions = dev(a.positions);
  d.rope_freqs = dev(a.rope_freqs);
  d.kv_a = a.kv_a;
  d.kv_a_norm = dev_vector(*a.kv_a_norm);
  d.eps = a.eps;
  d.fp8_latent = a.fp8_latent;
  d.q = a.q;
  d.rows = a.rows;
  DSS_DEV(dev::mla_rope_rows(d, stream_));
}

void CudaBackend::indexer_rope_quant(const IndexerRopeArgs& a, BackendScratch& /*s*/) const {
  dev::IndexerRopeDev d;
  d.n_tok = a.n_tok;
  d.n_heads = a.n_heads;
  d.head_dim = a.head_dim;
  d.d_rope = a.d_rope;
  d.d_row = a.d_row;
  d.key_offset = a.key_offset;
  d.positions = dev(a.positions);
  d.rope_freqs = dev(a.rope_freqs);
  d.k_norm_w = dev(a.k_norm_w);
  d.k_norm_b = dev(a.k_norm_b);
  d.k = a.k;
  d.q = a.q;
  d.coef = a.coef;
  d.rows = a.rows;
  DSS_DEV(dev::indexer_rope_quant(d, stream_));
}

void CudaBackend::kv_store_rows(KvCache& kv, int32_t i_layer, const int32_t* slots,
                                const float* rows, int32_t n) const {
  DSS_DEV(
      dev::kv_store_rows(dev_kv(kv, i_layer), dev(slots), rows, n, kv.layout().d_row(), stream_));
}

}  // namespace dss
