// The structural signature of a node: an exact byte encoding of everything
// that shapes its program (op, attributes, argument types, views, writes).
// Built by appending integers, never by rendering text, so a cache hit costs
// no lowering. Two nodes share a program exactly when their signatures match.
#pragma once

#include <string>

#include "graph/node.h"

namespace torchtpu::graph {

std::string Signature(const Node& node);

}  // namespace torchtpu::graph
