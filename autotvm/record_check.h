// File: autotvm/record_check.h
// Index <-> entity consistency of one record against our config space for its workload and
// target (what `tunejit log check` reports). TopHub's converted conv2d_nchw.cuda records list
// tile_rx before tile_ry with the two labels swapped (docs/tvm-templates.md section 1.7): such a
// record is reported as kSwappedLabels, not as an inconsistency. TVM itself applies entities by
// knob name and never reads the index, and so do we.
//
//   RecordCheck c = CheckRecord(record);
//   if (c.verdict == RecordCheck::kInconsistent) std::cerr << c.message;
#ifndef TUNEJIT_AUTOTVM_RECORD_CHECK_H_
#define TUNEJIT_AUTOTVM_RECORD_CHECK_H_

#include <cstdint>
#include <string>

#include "autotvm/record.h"

namespace tunejit::autotvm {

struct RecordCheck {
  enum Verdict {
    kConsistent,     // index decodes to the entity and the entity encodes to the index
    kSwappedLabels,  // consistent once tile_rx/tile_ry labels are swapped back
    kNoSpace,        // task name we have no space for (or a 0.1 record without an index)
    kInconsistent,   // a real problem: see message
  };
  Verdict verdict = kInconsistent;
  int64_t entity_index = -1;  // the entity's index by knob name (-1 if not in the space)
  int64_t space_size = 0;
  std::string message;
};

const char* RecordCheckVerdictName(RecordCheck::Verdict verdict);

RecordCheck CheckRecord(const Record& record);

}  // namespace tunejit::autotvm

#endif  // TUNEJIT_AUTOTVM_RECORD_CHECK_H_
