// cuBLASLt GEMM wrapper (kernels/cuda/blaslt_gemm.h).
//
// Where the FP8 block-scaling requirements come from (the code was written without a GPU; the
// test checks them on one):
//  - cublasLt.h (CUDA 13.1): VEC128_32F is "a CUDA_R_32F scaling factor for each 128-element block
//    in the innermost dimension", BLK128x128_32F "for each 128x128-element block"; fast
//    accumulation (DESC_FAST_ACCUM) stays at its default 0.
//  - NVIDIA CUDALibrarySamples cuBLASLt/LtBlk128x128Fp8Matmul: TN, COMPUTE_32F with scale type 32F,
//    modes set through A/B_SCALE_MODE and the scale tensors through A/B_SCALE_POINTER.
//  - NVIDIA TransformerEngine common/gemm/cublaslt_gemm.cu and tests/pytorch/test_float8_blockwise_
//    gemm_exact.py: block-scaled GEMMs are TN only with lda = ldb = k, k % 16 == 0, m % 8 == 0,
//    n % 8 == 0 when B is 1D (VEC128) scaled ("observed"); 1Dx1D, 1Dx2D, 2Dx1D but never 2Dx2D;
//    float32 and bf16 D are both tested.
//  - TransformerEngine Float8BlockQuantizer.get_scale_shape (its "GEMM-ready" layouts): 1D scales
//    of an [M, K] operand are [ceil(K/128), round_up(M, 4)], 2D scales are
//    [ceil(M/128), round_up(ceil(K/128), 4)], both row-major.
//  - PyTorch _scaled_mm (aten/src/ATen/native/cuda/Blas.cpp, test/test_scaled_matmul_cuda.py):
//    "1x128 blocks need scales to be outer-dim-major"; 128x128 scales padded to L4 =
//    round_up(K/128, 4); no fast accumulation with block scaling; sm_90 and cuBLAS >= 12.9 only.
//  - cuBLAS docs https://docs.nvidia.com/cuda/cublas/#cublasltmatmul (FP8 needs A transposed and B
//    not: "TN") and #tensor-core-usage (16-byte aligned pointers and leading dimensions).
#include "kernels/cuda/blaslt_gemm.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <initializer_list>
#include <map>
#include <tuple>
#include <type_traits>

#include "base/check.h"

namespace dss::cuda {
namespace {

constexpr int64_t kBlock = 128;     // DeepSeek's scale block
constexpr int64_t kTokenAlign = 8;  // FP8: GEMM n % 8 == 0 when B is VEC128-scaled
constexpr uint32_t kAlignBytes = 16;
constexpr size_t kMaxPlans = 512;  // beyond this the cache is cleared (T varies with the batch)

enum class Kind : int { kBf16, kFp8Block };

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }
size_t align256(size_t bytes) { return (bytes + 255) & ~size_t{255}; }

Status lt_status(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return Status::error("cuBLASLt ", what, ": ", cublasLtGetStatusName(s), " (",
                       cublasLtGetStatusString(s), ")");
}

Status rt_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::ok();
  return Status::error("CUDA ", what, ": ", cudaGetErrorString(e));
}

// unique_ptr for cuBLASLt's opaque descriptor handles.
template <typename H, cublasStatus_t (*Destroy)(H)>
struct LtDeleter {
  void operator()(H h) const { Destroy(h); }
};
template <typename H, cublasStatus_t (*Destroy)(H)>
using LtPtr = std::unique_ptr<std::remove_pointer_t<H>, LtDeleter<H, Destroy>>;
using MatmulDesc = LtPtr<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using Layout = LtPtr<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using Preference = LtPtr<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

Status make_layout(Layout& out, cudaDataType type, int64_t rows, int64_t cols, int64_t ld) {
  cublasLtMatrixLayout_t l = nullptr;
  DSS_RETURN_IF_ERROR(lt_status(cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows),
                                                           static_cast<uint64_t>(cols), ld),
                                "layout"));
  out.reset(l);
  return Status::ok();
}

template <typename T>
Status set_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v) {
  return lt_status(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)), "descriptor attribute");
}

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kAlignBytes == 0; }

// The per-call preconditions (see the header): shape rules and 16-byte alignment.
Status check_call(const char* kind, int64_t n_tokens, int64_t n_rows, int64_t n_cols,
                  int64_t col_multiple, std::initializer_list<const void*> ptrs) {
  if (n_tokens < 0 || n_rows <= 0 || n_cols <= 0)
    return Status::error(kind, " GEMM: bad shape T=", n_tokens, " N=", n_rows, " K=", n_cols);
  if (n_rows % 8 != 0)
    return Status::error(kind, " GEMM: N=", n_rows, " must be a multiple of 8 (T=", n_tokens,
                         " K=", n_cols, ")");
  if (n_cols % col_multiple != 0)
    return Status::error(kind, " GEMM: K=", n_cols, " must be a multiple of ", col_multiple,
                         " (16-byte rows; T=", n_tokens, " N=", n_rows, ")");
  for (const void* p : ptrs)
    if (p == nullptr || !aligned(p))
      return Status::error(kind, " GEMM: every device pointer must be non-null and ", kAlignBytes,
                           "-byte aligned (T=", n_tokens, " N=", n_rows, " K=", n_cols, ")");
  return Status::ok();
}

// Descriptors and the heuristic's algorithm for one (kind, n, n_valid, N, K).
struct Plan {
  MatmulDesc op;
  Layout a, b, d;       // W [N, K] (op T), x (op N, n columns), y column-major [N, n]
  Layout s_src, s_dst;  // FP8: x scales [n_valid, Kb] row-major -> [Kb, n] row-major (transpose)
  cublasLtMatmulAlgo_t algo{};
};

}  // namespace

struct BlasLt::Impl {
  // Key: kind, n (GEMM columns incl. padding), n_valid (real tokens), N, K.
  using Key = std::tuple<Kind, int64_t, int64_t, int64_t, int64_t>;

  BlasLtConfig cfg;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatrixTransformDesc_t transpose = nullptr;  // f32, C = op_T(A)
  bool fp8_block_ok = false;                          // sm_90 and cuBLASLt >= 12.9
  int sm = 0;                                         // compute capability, major * 10 + minor
  void* device = nullptr;                             // the one allocation; the buffers below
  void* workspace = nullptr;                          // cfg.workspace_bytes
  float* x_scales_t = nullptr;       // [ceil(max_cols/128), round_up(max_tokens, 8)] f32
  float* tail_x_scales_t = nullptr;  // [ceil(max_cols/128), 8] f32
  uint8_t* tail_x = nullptr;         // [8, max_cols] e4m3
  float* tail_y = nullptr;           // [8, max_rows] f32
  std::map<Key, std::unique_ptr<Plan>> plans;

  ~Impl() {
    plans.clear();
    if (transpose) cublasLtMatrixTransformDescDestroy(transpose);
    if (handle) cublasLtDestroy(handle);
    if (device) cudaFree(device);
  }

  Status allocate();
  Result<Plan*> plan(const Key& key, const void* a_scales, const void* b_scales);
  Status matmul(Plan& p, const void* w, const void* x, float* y, void* stream);
  Status fp8_pass(Plan& p, const uint8_t* w, const float* w_scales, const uint8_t* x,
                  const float* x_scales, float* y, float* x_scales_t, void* stream);
};

Status BlasLt::Impl::allocate() {
  const int64_t kb = ceil_div(cfg.max_cols, kBlock);
  const size_t ws = align256(cfg.workspace_bytes);
  const size_t sxt = align256(static_cast<size_t>(kb * round_up(cfg.max_tokens, kTokenAlign)) * 4);
  const size_t tsxt = align256(static_cast<size_t>(kb * kTokenAlign) * 4);
  const size_t tx = align256(static_cast<size_t>(kTokenAlign * cfg.max_cols));
  const size_t ty = align256(static_cast<size_t>(kTokenAlign * cfg.max_rows) * 4);
  DSS_RETURN_IF_ERROR(rt_status(cudaMalloc(&device, ws + sxt + tsxt + tx + ty), "cudaMalloc"));
  auto* base = static_cast<uint8_t*>(device);
  workspace = base;
  x_scales_t = reinterpret_cast<float*>(base + ws);
  tail_x_scales_t = reinterpret_cast<float*>(base + ws + sxt);
  tail_x = base + ws + sxt + tsxt;
  tail_y = reinterpret_cast<float*>(base + ws + sxt + tsxt + tx);
  // The tail buffers' padding rows are read by the 8-token GEMM (their outputs are dropped): zero
  // them once so they hold finite values before the first call.
  return rt_status(cudaMemset(tail_x_scales_t, 0, tsxt + tx + ty), "cudaMemset");
}

Result<Plan*> BlasLt::Impl::plan(const Key& key, const void* a_scales, const void* b_scales) {
  if (auto it = plans.find(key); it != plans.end()) return it->second.get();
  if (plans.size() >= kMaxPlans) plans.clear();
  const auto [kind, n, n_valid, n_rows, n_cols] = key;
  const bool fp8 = kind == Kind::kFp8Block;
  const char* name = fp8 ? "fp8_block" : "bf16";
  const cudaDataType ab_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  auto p = std::make_unique<Plan>();

  cublasLtMatmulDesc_t op = nullptr;
  DSS_RETURN_IF_ERROR(
      lt_status(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "descriptor"));
  p->op.reset(op);
  DSS_RETURN_IF_ERROR(set_attr(op, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T));
  DSS_RETURN_IF_ERROR(set_attr(op, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N));
  if (fp8) {
    const int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    const int32_t b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    DSS_RETURN_IF_ERROR(set_attr(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, a_mode));
    DSS_RETURN_IF_ERROR(set_attr(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, b_mode));
    DSS_RETURN_IF_ERROR(set_attr(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, a_scales));
    DSS_RETURN_IF_ERROR(set_attr(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, b_scales));
    const int64_t kb = ceil_div(n_cols, kBlock);
    DSS_RETURN_IF_ERROR(make_layout(p->s_src, CUDA_R_32F, kb, n_valid, kb));
    DSS_RETURN_IF_ERROR(make_layout(p->s_dst, CUDA_R_32F, n_valid, kb, n));
  }
  DSS_RETURN_IF_ERROR(make_layout(p->a, ab_type, n_cols, n_rows, n_cols));
  DSS_RETURN_IF_ERROR(make_layout(p->b, ab_type, n_cols, n, n_cols));
  DSS_RETURN_IF_ERROR(make_layout(p->d, CUDA_R_32F, n_rows, n, n_rows));

  cublasLtMatmulPreference_t pref_raw = nullptr;
  DSS_RETURN_IF_ERROR(lt_status(cublasLtMatmulPreferenceCreate(&pref_raw), "preference"));
  const Preference pref(pref_raw);
  const uint64_t ws_bytes = cfg.workspace_bytes;
  DSS_RETURN_IF_ERROR(lt_status(
      cublasLtMatmulPreferenceSetAttribute(pref_raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &ws_bytes, sizeof(ws_bytes)),
      "preference attribute"));
  for (auto attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    DSS_RETURN_IF_ERROR(lt_status(
        cublasLtMatmulPreferenceSetAttribute(pref_raw, attr, &kAlignBytes, sizeof(kAlignBytes)),
        "preference attribute"));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int n_results = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(
      handle, op, p->a.get(), p->b.get(), p->d.get(), p->d.get(), pref_raw, 1, &result, &n_results);
  if (s != CUBLAS_STATUS_SUCCESS || n_results == 0) {
    return Status::error(
        "cuBLASLt has no ", name, " algorithm for T=", n_valid, " (GEMM n=", n, ") N=", n_rows,
        " K=", n_cols, " on sm_", sm, ": ",
        s == CUBLAS_STATUS_SUCCESS ? "0 heuristic results" : cublasLtGetStatusName(s));
  }
  p->algo = result.algo;
  Plan* raw = p.get();
  plans.emplace(key, std::move(p));
  return raw;
}

Status BlasLt::Impl::matmul(Plan& p, const void* w, const void* x, float* y, void* stream) {
  const float one = 1.0f, zero = 0.0f;
  return lt_status(cublasLtMatmul(handle, p.op.get(), &one, w, p.a.get(), x, p.b.get(), &zero, y,
                                  p.d.get(), y, p.d.get(), &p.algo, workspace, cfg.workspace_bytes,
                                  static_cast<cudaStream_t>(stream)),
                   "matmul");
}

// One FP8 GEMM over p's n columns: transpose the x scales into x_scales_t, point the descriptor at
// this call's scales, run.
Status BlasLt::Impl::fp8_pass(Plan& p, const uint8_t* w, const float* w_scales, const uint8_t* x,
                              const float* x_scales, float* y, float* x_scales_t, void* stream) {
  const float one = 1.0f, zero = 0.0f;
  DSS_RETURN_IF_ERROR(
      lt_status(cublasLtMatrixTransform(handle, transpose, &one, x_scales, p.s_src.get(), &zero,
                                        nullptr, nullptr, x_scales_t, p.s_dst.get(),
                                        static_cast<cudaStream_t>(stream)),
                "x-scale transpose"));
  const void* ws = w_scales;
  const void* xs = x_scales_t;
  DSS_RETURN_IF_ERROR(set_attr(p.op.get(), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, ws));
  DSS_RETURN_IF_ERROR(set_attr(p.op.get(), CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, xs));
  return matmul(p, w, x, y, stream);
}

BlasLt::BlasLt(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BlasLt::~BlasLt() = default;

bool BlasLt::fp8_block_supported() const { return impl_->fp8_block_ok; }
size_t BlasLt::n_plans() const { return impl_->plans.size(); }

Result<std::unique_ptr<BlasLt>> BlasLt::create(const BlasLtConfig& cfg) {
  if (cfg.max_tokens <= 0 || cfg.max_rows <= 0 || cfg.max_cols <= 0)
    return Status::error("BlasLt: max_tokens, max_rows and max_cols must be positive");
  auto m = std::make_unique<Impl>();
  m->cfg = cfg;
  int dev = 0, major = 0, minor = 0;
  DSS_RETURN_IF_ERROR(rt_status(cudaGetDevice(&dev), "cudaGetDevice"));
  DSS_RETURN_IF_ERROR(rt_status(
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "device attribute"));
  DSS_RETURN_IF_ERROR(rt_status(
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "device attribute"));
  m->sm = major * 10 + minor;
  // Block scaling with these two modes is a Hopper feature (Blackwell uses the MX modes).
  m->fp8_block_ok = major == 9 && cublasLtGetVersion() >= 120900;
  DSS_RETURN_IF_ERROR(lt_status(cublasLtCreate(&m->handle), "create"));
  DSS_RETURN_IF_ERROR(
      lt_status(cublasLtMatrixTransformDescCreate(&m->transpose, CUDA_R_32F), "transform"));
  const int32_t op_t = CUBLAS_OP_T;
  DSS_RETURN_IF_ERROR(
      lt_status(cublasLtMatrixTransformDescSetAttribute(
                    m->transpose, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA, &op_t, sizeof(op_t)),
                "transform attribute"));
  DSS_RETURN_IF_ERROR(m->allocate());
  return std::unique_ptr<BlasLt>(new BlasLt(std::move(m)));
}

Status BlasLt::gemm_bf16(const uint16_t* w, const uint16_t* x, float* y, int64_t n_tokens,
                         int64_t n_rows, int64_t n_cols, void* stream) {
  const Status ok = check_call("bf16", n_tokens, n_rows, n_cols, 8, {w, x, y});
  if (!ok.is_ok() || n_tokens == 0) return ok;
  const Impl::Key key{Kind::kBf16, n_tokens, n_tokens, n_rows, n_cols};
  DSS_ASSIGN_OR_RETURN(Plan * p, impl_->plan(key, nullptr, nullptr));
  return impl_->matmul(*p, w, x, y, stream);
}

Status BlasLt::gemm_fp8_block(const uint8_t* w, const float* w_scales, const uint8_t* x,
                              const float* x_scales, float* y, int64_t n_tokens, int64_t n_rows,
                              int64_t n_cols, void* stream) {
  Impl& m = *impl_;
  if (!m.fp8_block_ok)
    return Status::error(
        "fp8_block GEMM: cuBLASLt 128x128/1x128 block scaling needs sm_90 and "
        "cuBLASLt >= 12.9 (device sm_",
        m.sm, ", cuBLASLt ", cublasLtGetVersion(), ")");
  const Status ok =
      check_call("fp8_block", n_tokens, n_rows, n_cols, 16, {w, w_scales, x, x_scales, y});
  if (!ok.is_ok() || n_tokens == 0) return ok;
  if (n_tokens > m.cfg.max_tokens || n_rows > m.cfg.max_rows || n_cols > m.cfg.max_cols)
    return Status::error("fp8_block GEMM: T=", n_tokens, " N=", n_rows, " K=", n_cols,
                         " exceeds the BlasLt limits (", m.cfg.max_tokens, ", ", m.cfg.max_rows,
                         ", ", m.cfg.max_cols, ")");
  const int64_t kb = ceil_div(n_cols, kBlock);
  const int64_t t_main = n_tokens / kTokenAlign * kTokenAlign;
  const int64_t t_tail = n_tokens - t_main;
  if (t_main > 0) {
    const Impl::Key key{Kind::kFp8Block, t_main, t_main, n_rows, n_cols};
    DSS_ASSIGN_OR_RETURN(Plan * p, m.plan(key, w_scales, m.x_scales_t));
    DSS_RETURN_IF_ERROR(m.fp8_pass(*p, w, w_scales, x, x_scales, y, m.x_scales_t, stream));
  }
  if (t_tail > 0) {
    // The last T % 8 tokens: staged into 8-token buffers (rows beyond t_tail hold stale finite
    // values whose outputs are dropped), then the valid output rows copied out.
    const auto s = static_cast<cudaStream_t>(stream);
    const Impl::Key key{Kind::kFp8Block, kTokenAlign, t_tail, n_rows, n_cols};
    DSS_ASSIGN_OR_RETURN(Plan * p, m.plan(key, w_scales, m.tail_x_scales_t));
    DSS_RETURN_IF_ERROR(rt_status(
        cudaMemcpyAsync(m.tail_x, x + t_main * n_cols, static_cast<size_t>(t_tail * n_cols),
                        cudaMemcpyDeviceToDevice, s),
        "copy x tail"));
    DSS_RETURN_IF_ERROR(m.fp8_pass(*p, w, w_scales, m.tail_x, x_scales + t_main * kb, m.tail_y,
                                   m.tail_x_scales_t, stream));
    DSS_RETURN_IF_ERROR(
        rt_status(cudaMemcpyAsync(y + t_main * n_rows, m.tail_y,
                                  static_cast<size_t>(t_tail * n_rows) * sizeof(float),
                                  cudaMemcpyDeviceToDevice, s),
                  "copy y tail"));
  }
  return Status::ok();
}

int64_t blaslt_weight_scale_cols(int64_t n_cols) { return round_up(ceil_div(n_cols, kBlock), 4); }

std::vector<float> blaslt_weight_scales(std::span<const float> scales, int64_t n_rows,
                                        int64_t n_cols) {
  const int64_t sr = ceil_div(n_rows, kBlock), sc = ceil_div(n_cols, kBlock);
  const int64_t ld = blaslt_weight_scale_cols(n_cols);
  DSS_CHECK(static_cast<int64_t>(scales.size()) == sr * sc, "scales=", scales.size(),
            " n_rows=", n_rows, " n_cols=", n_cols);
  std::vector<float> out(static_cast<size_t>(sr * ld), 0.0f);
  for (int64_t r = 0; r < sr; ++r)
    std::memcpy(out.data() + r * ld, scales.data() + r * sc, static_cast<size_t>(sc) * 4);
  return out;
}

}  // namespace dss::cuda
