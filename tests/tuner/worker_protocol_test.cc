// The tuner's worker protocol (tuner/worker_protocol.h): every message survives encode -> decode,
// malformed lines are errors naming the field, and the optional GPU tag of 0.2 records
// (autotvm/record.h) parses, serializes only when set, and is rejected when malformed.
#include "tuner/worker_protocol.h"

#include <string>

#include "autotvm/record.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

constexpr char kLine[] =
    R"({"input": ["cuda -model=unknown", "dense_small_batch.cuda", [["TENSOR", [1, 64], "float32"], )"
    R"(["TENSOR", [32, 64], "float32"], null, "float32"], {}], "config": {"index": 17, "code_hash": )"
    R"(null, "entity": [["tile_k", "sp", [-1, 16]]]}, "result": [[0.000123], 0, 1.5, 1700000000.25], )"
    R"("version": 0.2, "tvm_version": "0.7.dev1"})";

autotvm::Record SampleRecord() {
  absl::StatusOr<autotvm::Record> r = autotvm::ParseRecordLine(kLine);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

TEST(WorkerProtocol, HelloRoundTrip) {
  WorkerHello h;
  h.pid = 4242;
  h.gpu = 3;
  h.device = "NVIDIA H200";
  h.arch = GpuArch{9, 0, false};
  h.device_count = 8;
  h.limits = DeviceLimits::ForArch(h.arch);
  h.limits.sm_count = 77;
  h.limits.max_grid_dim[1] = 1234;
  absl::StatusOr<WorkerHello> back = DecodeHello(EncodeHello(h));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->gpu, 3);
  EXPECT_EQ(back->device, "NVIDIA H200");
  EXPECT_EQ(back->arch.ToString(), "sm_90");
  EXPECT_EQ(back->device_count, 8);
  EXPECT_EQ(back->limits.sm_count, 77);
  EXPECT_EQ(back->limits.max_grid_dim[1], 1234);
  EXPECT_EQ(back->limits.arch, h.arch);
  EXPECT_TRUE(back->error.empty());
}

TEST(WorkerProtocol, HelloWithError) {
  WorkerHello h;
  h.pid = 7;
  h.error = "no CUDA device";
  absl::StatusOr<WorkerHello> back = DecodeHello(EncodeHello(h));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->error, "no CUDA device");
}

TEST(WorkerProtocol, RequestRoundTrip) {
  WorkerRequest r;
  r.seq = 99;
  r.record = SampleRecord();
  r.fault = "hang";
  absl::StatusOr<WorkerRequest> back = DecodeRequest(EncodeRequest(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kind, RequestKind::kMeasure);
  EXPECT_EQ(back->seq, 99);
  EXPECT_EQ(back->fault, "hang");
  EXPECT_EQ(back->record.index, 17);
  EXPECT_EQ(back->record.workload.Key(), r.record.workload.Key());
  EXPECT_EQ(back->record.config.ToJson(), r.record.config.ToJson());
  EXPECT_EQ(back->record.target.text, "cuda -model=unknown");
  EXPECT_EQ(back->stop_above, 0);  // absent: no early stop
  r.stop_above = 0.0125;
  back = DecodeRequest(EncodeRequest(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_DOUBLE_EQ(back->stop_above, 0.0125);
}

TEST(WorkerProtocol, RequestWithoutResultStillEncodes) {
  // The parent sends records it has not measured yet (no costs).
  WorkerRequest r;
  r.seq = 1;
  r.record = SampleRecord();
  r.record.result = {};
  absl::StatusOr<WorkerRequest> back = DecodeRequest(EncodeRequest(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->record.index, 17);
}

TEST(WorkerProtocol, QuitRoundTrip) {
  WorkerRequest q;
  q.kind = RequestKind::kQuit;
  absl::StatusOr<WorkerRequest> back = DecodeRequest(EncodeRequest(q));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->kind, RequestKind::kQuit);
}

TEST(WorkerProtocol, ReplyRoundTrip) {
  WorkerReply r;
  r.seq = 5;
  r.measurement.result.costs = {1.5e-4, 2.5e-4};
  r.measurement.result.error_no = 4;
  r.measurement.result.all_cost = 0.75;
  r.measurement.result.timestamp = 1700000001.5;
  r.measurement.message = "illegal address \"quoted\"\nsecond line";
  r.fatal = true;
  absl::StatusOr<WorkerReply> back = DecodeReply(EncodeReply(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->seq, 5);
  EXPECT_EQ(back->measurement.result.costs, (std::vector<double>{1.5e-4, 2.5e-4}));
  EXPECT_EQ(back->measurement.result.error_no, 4);
  EXPECT_DOUBLE_EQ(back->measurement.result.all_cost, 0.75);
  EXPECT_DOUBLE_EQ(back->measurement.result.timestamp, 1700000001.5);
  EXPECT_EQ(back->measurement.message, r.measurement.message);
  EXPECT_TRUE(back->fatal);
  EXPECT_EQ(EncodeReply(r).find('\n'), std::string::npos) << "one message per line";
}

TEST(WorkerProtocol, ReadyRoundTrip) {
  WorkerReply r;
  r.seq = 12;
  r.ready = true;
  absl::StatusOr<WorkerReply> back = DecodeReply(EncodeReply(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->ready);
  EXPECT_EQ(back->seq, 12);
  EXPECT_FALSE(DecodeReply(R"({"op": "ready"})").ok());
}

TEST(WorkerProtocol, LongMessagesAreCut) {
  WorkerReply r;
  r.measurement = FailedMeasurement(3, std::string(1 << 20, 'x'), 1.0);
  const std::string line = EncodeReply(r);
  EXPECT_LT(line.size(), 100u << 10);
  absl::StatusOr<WorkerReply> back = DecodeReply(line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->measurement.result.error_no, 3);
}

TEST(WorkerProtocol, BadInput) {
  const char* bad_replies[] = {
      "",
      "not json",
      "[1, 2]",
      R"({"seq": 1, "result": [[1.0], 0, 0, 0]})",                   // no op
      R"({"op": "hello", "seq": 1, "result": [[1.0], 0, 0, 0]})",    // wrong op
      R"({"op": "result", "result": [[1.0], 0, 0, 0]})",             // no seq
      R"({"op": "result", "seq": -1, "result": [[1.0], 0, 0, 0]})",  // negative seq
      R"({"op": "result", "seq": 1})",                               // no result
      R"({"op": "result", "seq": 1, "result": [[], 0, 0, 0]})",      // empty costs
      R"({"op": "result", "seq": 1, "result": [[1.0], 9, 0, 0]})",   // error_no range
      R"({"op": "result", "seq": 1, "result": [[1.0], 0, -1, 0]})",  // negative all_cost
      R"({"op": "result", "seq": 1, "result": [["x"], 0, 0, 0]})",   // cost not a number
      R"({"op": "result", "seq": 1, "result": [[1.0], 0, 0]})",      // 3 elements
      R"({"op": "result", "seq": 1, "result": [[1.0], 0, 0, 0], "fatal": 1})",
      R"({"op": "result", "seq": 1, "result": [[1.0], 0, 0, 0], "message": 5})",
  };
  for (const char* line : bad_replies) {
    absl::StatusOr<WorkerReply> r = DecodeReply(line);
    EXPECT_FALSE(r.ok()) << line;
    if (!r.ok()) {
      EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
    }
  }
  const std::string good_record = autotvm::SerializeRecord(SampleRecord());
  nlohmann::json escaped = good_record;
  const std::string bad_requests[] = {
      R"({"op": "measure", "record": )" + escaped.dump() + "}",  // no seq
      R"({"op": "measure", "seq": 1})",                          // no record
      R"({"op": "measure", "seq": 1, "record": "{}"})",          // bad record
      R"({"op": "measure", "seq": 1, "record": )" + escaped.dump() + R"(, "fault": "boom"})",
      R"({"op": "measure", "seq": 1, "record": 5})",
      R"({"op": "measure", "seq": 1, "record": )" + escaped.dump() + R"(, "stop_above": -1})",
      R"({"op": "measure", "seq": 1, "record": )" + escaped.dump() + R"(, "stop_above": "1"})",
      R"({"op": "dance"})",
  };
  for (const std::string& line : bad_requests) EXPECT_FALSE(DecodeRequest(line).ok()) << line;
  EXPECT_TRUE(
      DecodeRequest(R"({"op": "measure", "seq": 1, "record": )" + escaped.dump() + "}").ok());
  const char* bad_hellos[] = {
      R"({"op": "hello"})",                                                      // no pid
      R"({"op": "hello", "pid": 1, "gpu": 0, "device": "x", "arch": "sm_90"})",  // no count
      R"({"op": "hello", "pid": 1, "gpu": 0, "device": "x", "arch": "banana", "device_count": 1,
          "limits": {}})",
      R"({"op": "hello", "pid": 1, "gpu": 0, "device": "x", "arch": "sm_90", "device_count": 1,
          "limits": {"max_threads_per_block": 0}})",
  };
  for (const char* line : bad_hellos) EXPECT_FALSE(DecodeHello(line).ok()) << line;
}

TEST(RecordGpuTag, AbsentTagRoundTripsByteForByte) {
  autotvm::Record r = SampleRecord();
  EXPECT_EQ(r.gpu, -1);
  EXPECT_EQ(autotvm::SerializeRecord(r), kLine);
}

TEST(RecordGpuTag, TagIsWrittenLastAndParsedBack) {
  autotvm::Record r = SampleRecord();
  r.gpu = 2;
  r.device = "NVIDIA H200";
  const std::string line = autotvm::SerializeRecord(r);
  const std::string want = std::string(kLine).substr(0, std::string(kLine).size() - 1) +
                           R"(, "tunejit": {"gpu": 2, "device": "NVIDIA H200"}})";
  EXPECT_EQ(line, want);
  absl::StatusOr<autotvm::Record> back = autotvm::ParseRecordLine(line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->gpu, 2);
  EXPECT_EQ(back->device, "NVIDIA H200");
  EXPECT_EQ(autotvm::SerializeRecord(*back), line);
}

TEST(RecordGpuTag, MalformedTagIsAnError) {
  const std::string head = std::string(kLine).substr(0, std::string(kLine).size() - 1);
  for (const char* tag : {R"("tunejit": 5)", R"("tunejit": {"gpu": -1})",
                          R"("tunejit": {"gpu": "0"})", R"("tunejit": {"device": 7})"}) {
    absl::StatusOr<autotvm::Record> r = autotvm::ParseRecordLine(head + ", " + tag + "}");
    EXPECT_FALSE(r.ok()) << tag;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("tunejit"), std::string::npos) << r.status();
    }
  }
}

}  // namespace
}  // namespace tunejit
