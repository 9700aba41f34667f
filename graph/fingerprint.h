// File: graph/fingerprint.h
// SHA-256 fingerprints of a model: its graph (every tensor's name, shape, dtype and kind, every
// node's op, name, inputs, output and attributes) and its weights' bytes. A saved build plan
// (executor/build_plan.h) carries both, so a plan is never applied to another model or to other
// weights. Hex strings of 64 characters.
//
//   const std::string graph_id = GraphFingerprint(graph);
//   const std::string weights_id = WeightsFingerprint(graph, weights, /*threads=*/0);
#ifndef TUNEJIT_GRAPH_FINGERPRINT_H_
#define TUNEJIT_GRAPH_FINGERPRINT_H_

#include <cstddef>
#include <string>

#include "graph/graph.h"
#include "graph/weights.h"

namespace tunejit {

std::string GraphFingerprint(const Graph& graph);

// The weights' fingerprint hashes fixed-size chunks, so one large tensor (VGG-16's first dense
// weight is 411 MB) is hashed on every core too, and the result does not depend on the thread
// count. Precisely: each weight tensor's bytes are cut into chunks of
// kWeightsFingerprintChunkBytes (the last one shorter; an empty tensor has none); the tensor's
// digest is SHA-256 of AppendBytes("tunejit-weight-chunks"), AppendU64(chunk size),
// AppendU64(byte count), then each chunk's raw 32-byte SHA-256 in order; the fingerprint is the
// hex SHA-256 of AppendBytes("tunejit-weights"), AppendU64(weight tensor count), then for each
// weight tensor in tensor id order AppendBytes(name), AppendBytes(raw tensor digest) (encoders of
// common/digest.h). Changing any of this changes every build plan's identity: bump
// kBuildPlanFormatVersion (executor/build_plan.h) with it.
inline constexpr size_t kWeightsFingerprintChunkBytes = size_t{8} << 20;

// The chunks are hashed on `threads` threads (0: one per core), all tensors' chunks together.
std::string WeightsFingerprint(const Graph& graph, const WeightSet& weights, int threads = 0);

}  // namespace tunejit

#endif  // TUNEJIT_GRAPH_FINGERPRINT_H_
