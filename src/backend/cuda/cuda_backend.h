// CudaBackend: the backend seam (backend/backend.h) on one CUDA device, over the kernels of
// kernels/cuda (ops_device.h). The model's weights, KV pool and activations live in device memory
// (allocate); the step's ForwardBatch arrays are host memory, uploaded once per forward
// (begin_forward) and found again by address (to_device); the few constant host arrays the blocks
// pass (RoPE frequencies, the V3.2 indexer's LayerNorm) are uploaded at load (mirror_constant).
//
// Every operation is enqueued on the backend's one stream, in call order; the host waits only
// where it must read a result: the MoE routing (selected in host code by the CPU backend's
// route_token, so both backends pick the same experts from the same router logits), the V3.2
// indexer's top-k, and download (the logits).
//
// What is not here yet (docs/reference.md): tensor parallelism (NCCL), DP attention, the MTP
// module, tensor cores outside W8A8 (cuBLASLt), CUDA graphs, sampling on the device.
//
// Thread-safety: as CpuBackend: const operations, one forward at a time.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "base/status.h"

namespace dss {

namespace cuda {
class BlasLt;  // kernels/cuda/blaslt_gemm.h
}  // namespace cuda

struct CudaScratch;

class CudaBackend {
 public:
  static constexpr bool kDeviceMemory = true;  // Model::forward downloads the logits

  struct Options {
    int32_t device = 0;  // CUDA device ordinal
    // W8A8 (as CpuBackend::Options): an FP8 weight's input quantised per token per 128 values,
    // then cuBLASLt's block-scaled FP8 GEMM where its layouts allow (N % 8, K % 16, ceil(K / 128)
    // % 4 == 0: every DeepSeek-V3 projection), else the float32 kernel over the quantised values.
    bool act_quant_fp8 = false;
    bool act_quant_ue8m0 = false;  // ... with power-of-two scales
  };
  // CUDA devices usable here (0 without a driver or device).
  static int32_t device_count();
  // An error when no CUDA device can be used (driver, ordinal), naming the device.
  static Result<std::unique_ptr<CudaBackend>> create(const Options& o);
  ~CudaBackend();
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  // "NVIDIA H200, 139.8 GiB, sm_90" for logs and /metrics labels.
  std::string device_name() const;
  // Free and total device memory, bytes.
  void memory_info(size_t* free_bytes, size_t* total_bytes) const;

  int32_t n_threads() const { return 1; }
  const Options& options() const { return o_; }

  // Zero-filled device memory (cudaMalloc); CHECK-fails when the device is out of memory.
  Buffer allocate(size_t bytes, MemoryUse use) const;
  std::unique_ptr<BackendScratch> make_scratch(const ModelConfig& cfg,
                                               const WorkspaceLimits& lim) const;
  // Host -> device bytes (synchronous; loading only).
  void upload(void* device_dst, const void* host_src, size_t bytes) const;
  // A device copy of n host floats that stay alive and unchanged as long as this backend (a
  // constant the blocks pass by host pointer); operations given host_src get the copy.
  void mirror_constant(const float* host_src, size_t n);
  // n floats of device memory into host memory, after every operation enqueued before.
  void download(const float* device_src, float* host_dst, int64_t n) const;

  // The step's batch arrays (tokens, positions, slots, page table, ...) into the scratch's
  // device copies: before the forward's first operation. The blocks' host pointers into them
  // then resolve to the copies.
  void begin_forward(const ForwardBatch& b, BackendScratch& s) const;

  void linear(const Matrix& w, const float* x, int64_t n_tok, float* y, BackendScratch& s) const;
  void linear_pair(const Matrix& w0, float* y0, const Matrix& w1, float* y1, const float* x,
                   int64_t n_tok, BackendScratch& s) const;
  void embed(const Matrix& table, const int32_t* ids, int64_t n, float* h, int64_t row_begin) const;
  void rmsnorm_rows(const float* x, const Vector& w, int64_t n_rows, int64_t width, float eps,
                    float* y) const;
  void add_rows(const float* x, int64_t n, float* y) const;
  void ffn(const FfnWeights& f, const float* x, int64_t n_tok, float* y, BackendScratch& s) const;
  void mla_rope_rows(const MlaRopeArgs& a, BackendScratch& s) const;
  void indexer_rope_quant(const IndexerRopeArgs& a, BackendScratch& s) const;
  void kv_store_rows(KvCache& kv, int32_t i_layer, const int32_t* slots, const float* rows,
                     int32_t n) const;
  void mla_prefill(const MlaAttnArgs& a, int32_t i_seq, BackendScratch& s) const;
  void mla_decode(const MlaAttnArgs& a, const int32_t* toks, const int32_t* seqs, int32_t n,
                  BackendScratch& s) const;
  void indexer_select(const IndexerSelectArgs& a, BackendScratch& s) const;
  void moe(const MoeArgs& a, BackendScratch& s) const;

 private:
  explicit CudaBackend(const Options& o);
  // The device address of p: p itself unless it lies in a mirrored constant or in the staged
  // batch of the scratch last given to begin_forward.
  const void* to_device(const void* p) const;
  template <typename T>
  const T* dev(const T* p) const {
    return static_cast<const T*>(to_device(p));
  }
  void linear_w8a8(const Matrix& w, const float* x, int64_t n_tok, float* y, CudaScratch& s) const;

  Options o_;
  void* stream_ = nullptr;              // cudaStream_t
  std::unique_ptr<cuda::BlasLt> blas_;  // W8A8 where cuBLASLt has FP8 block scaling
  struct Mirror {
    size_t bytes = 0;
    void* device = nullptr;
  };
  std::map<const uint8_t*, Mirror> constants_;  // by host address
  mutable BackendScratch* staged_ = nullptr;    // the scratch of the current forward
};

static_assert(ModelBackend<CudaBackend>);

}  // namespace dss
