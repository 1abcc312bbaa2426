// A profiler range around one program launch: torch.profiler / the autograd
// profiler show a row "tpu::program <what the program computes>" per launch,
// and (through the PrivateUse1 profiler stubs, profiler_stubs.cpp) the
// device time between the completions captured at its start and end.
#pragma once

#include <ATen/record_function.h>

#include "aten/runtime/kineto_tpu.h"

#include <string>
#include <vector>

namespace torchtpu::aten {

// "tpu::program " + the description, cut to a length a table can show.
std::string ProgramRangeName(const std::string& description);

}  // namespace torchtpu::aten

// Opens the range until the end of the enclosing scope; put it before the
// launch and keep the launch's Runtime::Track() inside the scope. The name is
// built only while a profiler is active (RECORD_FUNCTION checks first).
#define TORCHTPU_PROGRAM_RANGE(description)                                                    \
  RECORD_FUNCTION(::torchtpu::aten::ProgramRangeName(description), std::vector<c10::IValue>()); \
  ::torchtpu::aten::ProgramScope torchtpu_program_scope_(description)
