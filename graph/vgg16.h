// File: graph/vgg16.h
// The built-in VGG-16 (torchvision.models.vgg16, configuration "D", no batch norm) as a Graph, for
// a given batch and 224x224 RGB input. Tensor names follow torchvision's state dict, so a
// safetensors export of `model.state_dict()` binds by name (graph/weights.h):
//   features.{0,2,5,7,10,12,14,17,19,21,24,26,28}.{weight,bias}   3x3 convs, padding 1
//   classifier.{0,3,6}.{weight,bias}                              dense 25088->4096->4096->1000
// Node names are the torchvision module names ("features.0" conv, "features.1" relu, "features.4"
// max pool, "classifier.0" dense); bias_add nodes are "<conv/dense>.bias_add". Dropout is identity
// at inference and AdaptiveAvgPool2d((7, 7)) is identity on the 7x7 map a 224x224 input gives, so
// neither appears. The output is "logits" [batch, 1000]; with_softmax adds softmax -> "probs".
//
//   TUNEJIT_ASSIGN_OR_RETURN(Graph g, BuildVgg16({.batch = 128}));
#ifndef TUNEJIT_GRAPH_VGG16_H_
#define TUNEJIT_GRAPH_VGG16_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace tunejit {

struct Vgg16Options {
  int64_t batch = 1;
  bool with_softmax = false;  // torchvision returns logits; TVM's relay testing model adds softmax
};

// The input tensor is "input" [batch, 3, 224, 224] f32. InvalidArgument for batch < 1.
absl::StatusOr<Graph> BuildVgg16(const Vgg16Options& options);

}  // namespace tunejit

#endif  // TUNEJIT_GRAPH_VGG16_H_
