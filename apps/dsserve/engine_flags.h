// Engine flags shared by `generate`, `serve` and `bench-*` (one definition, one help text).
#pragma once

#include <CLI/CLI.hpp>

#include "engine/engine_options.h"

namespace dss::app {

// Adds --model and the engine flags to `cmd`, writing into `o` (which must outlive parsing).
void add_engine_flags(CLI::App* cmd, EngineOptions& o, bool model_required);

// --weight-dtype, --weight-layout, --lm-head-dtype and --matmul-dtype
// (model/runtime/load_options.h), for every command that loads a model: the flag text is parsed
// here, once, into the typed values. The commands default --matmul-dtype to auto (matmul_dtype
// is set to it here); LoadOptions' own default is f32.
void add_weight_flags(CLI::App* cmd, WeightDType& weight_dtype, WeightStorage& weight_layout,
                      WeightDType& lm_head_dtype, MatmulDType& matmul_dtype);
// --speculative-algorithm and its knobs (SGLang's names), for serve, generate and bench-model.
void add_speculative_flags(CLI::App* cmd, SpeculativeOptions& o);
// --act-quant none | fp8.
void add_act_quant_flag(CLI::App* cmd, ActQuant& act_quant);
// --device cpu | cuda.
void add_device_flag(CLI::App* cmd, Device& device);

}  // namespace dss::app
