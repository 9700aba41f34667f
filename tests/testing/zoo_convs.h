// File: tests/testing/zoo_convs.h
// The convolutions of the torchvision zoo (tests/data/zoo_convs.txt, written by
// scripts/zoo_conv_shapes.py), for tests that check a rule over every shape a real model has.
// Header-only.
#ifndef TUNEJIT_TESTS_TESTING_ZOO_CONVS_H_
#define TUNEJIT_TESTS_TESTING_ZOO_CONVS_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "autotvm/workload.h"
#include "tests/testing/test_data.h"

namespace tunejit::testing {

// Every line of zoo_convs.txt ("c h w co kh kw stride_h stride_w pad_top pad_left pad_bottom
// pad_right dilation_h dilation_w groups") as a float32 NCHW conv of batch 1; empty when the file
// is missing, and a line that does not parse is left out (the caller checks the count).
inline std::vector<autotvm::Conv2dParams> ZooConvs() {
  std::ifstream in(RepoTestData("zoo_convs.txt"));
  std::vector<autotvm::Conv2dParams> convs;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    autotvm::Conv2dParams p;
    p.n = 1;
    p.layout = "NCHW";
    p.data_dtype = p.kernel_dtype = p.out_dtype = "float32";
    fields >> p.ci >> p.h >> p.w >> p.co >> p.kh >> p.kw >> p.stride_h >> p.stride_w >> p.pad_top >>
        p.pad_left >> p.pad_bottom >> p.pad_right >> p.dilation_h >> p.dilation_w >> p.groups;
    if (!fields.fail()) convs.push_back(p);
  }
  return convs;
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_TESTING_ZOO_CONVS_H_
