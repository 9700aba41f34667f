// File: autotvm/record_check.h
// Index <-> entity consistency of one record against our config space for its workload and
// target (what `tunejit log check` reports). TopHub's converted conv2d_nchw.cuda records list
// tile_rx before tile_ry with the two labels swapped (docs/tvm-templates.md section 1.7): such a
// record is reported as kSwappedLabels, not as an inconsistency. TVM itself applies entities by
// knob name and never reads the index, and so do we. A record written before a knob was added
// (knobs are added last, their old behaviour first) lacks it: kLacksLaterKnobs, valid.
//
// The spaces are the op templates' (ops/op_template.h CheckRecord builds the record's and calls
// this one).
//
//   RecordCheck c = CheckRecord(record, &space);
//   if (c.verdict == RecordCheck::kInconsistent) std::cerr << c.message;
#ifndef TUNEJIT_AUTOTVM_RECORD_CHECK_H_
#define TUNEJIT_AUTOTVM_RECORD_CHECK_H_

#include <cstdint>
#include <string>

#include "autotvm/config_space.h"
#include "autotvm/record.h"

namespace tunejit::autotvm {

struct RecordCheck {
  enum Verdict {
    kConsistent,     // index decodes to the entity and the entity encodes to the index
    kSwappedLabels,  // consistent once tile_rx/tile_ry labels are swapped back
    // Valid: written before knobs that the space appends last with the old behaviour first; the
    // templates read each missing knob as its first value, which keeps the record's index.
    kLacksLaterKnobs,
    kNoSpace,       // task name we have no space for (or a 0.1 record without an index)
    kInconsistent,  // a real problem: see message
  };
  Verdict verdict = kInconsistent;
  int64_t entity_index = -1;  // the entity's index by knob name (-1 if not in the space)
  int64_t space_size = 0;
  std::string message;
};

const char* RecordCheckVerdictName(RecordCheck::Verdict verdict);

// `space` is the record's workload's space on its target; nullptr when no template defines one
// (kNoSpace).
RecordCheck CheckRecord(const Record& record, const ConfigSpace* space);

}  // namespace tunejit::autotvm

#endif  // TUNEJIT_AUTOTVM_RECORD_CHECK_H_
