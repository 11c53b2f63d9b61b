// What `dsserve inspect` reports about a loaded checkpoint, as one JSON object: architecture and
// shapes, quantisation, tensors by dtype (elements and bytes; FP8 / INT8 scale tensors as their
// own F32 entries), total bytes and files, KV-cache bytes per token for each --kv-cache-dtype
// (docs/kv_layout.md; V3.2 rows include the indexer key) and the context limit.
#pragma once

#include "io/json.h"
#include "model/runtime/model.h"

namespace dss {

OrderedJson model_summary(const Model& m);

}  // namespace dss
