// The baseline in a build without cuDNN: same API, every attempt to use it says how to get it.
#include "baseline/cudnn_network.h"

namespace tunejit {

bool CudnnBaselineAvailable() { return false; }

absl::StatusOr<std::unique_ptr<CudnnNetwork>> CudnnNetwork::Create(const Device&, const Graph&,
                                                                   const WeightSet&,
                                                                   BaselinePrecision) {
  return absl::UnimplementedError("this build has no cuDNN (install cuDNN 9 and reconfigure)");
}

}  // namespace tunejit
