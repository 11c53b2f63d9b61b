// Engine flags shared by `generate`, `serve` and `bench-*` (one definition, one help text).
#pragma once

#include <CLI/CLI.hpp>

#include "engine/engine_options.h"

namespace dss::app {

// Adds --model and the engine flags to `cmd`, writing into `o` (which must outlive parsing).
void add_engine_flags(CLI::App* cmd, EngineOptions& o, bool model_required);

// --weight-dtype, --weight-layout, --lm-head-dtype and --matmul-dtype (model/runtime/model.h
// LoadOptions), for every command that loads a model. The commands default --matmul-dtype to
// auto (matmul_dtype is set to it here); LoadOptions' own default is f32.
void add_weight_flags(CLI::App* cmd, std::string& weight_dtype, std::string& weight_layout,
                      std::string& lm_head_dtype, std::string& matmul_dtype);

}  // namespace dss::app
