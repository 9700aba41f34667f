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

#include <string>

#include "graph/graph.h"
#include "graph/weights.h"

namespace tunejit {

std::string GraphFingerprint(const Graph& graph);

// Each weight tensor's bytes are hashed on its own, on `threads` threads (0: one per core), so
// fingerprinting a few hundred MB takes tens of milliseconds on a many-core host; the result is
// the hash of the graph's weight tensors' names and digests, in tensor id order.
std::string WeightsFingerprint(const Graph& graph, const WeightSet& weights, int threads = 0);

}  // namespace tunejit

#endif  // TUNEJIT_GRAPH_FINGERPRINT_H_
