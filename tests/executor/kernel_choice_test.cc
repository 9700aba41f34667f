// Kernel choice per conv/dense node (executor/kernel_choice.h) and the executor's per-step plans
// and warnings (executor/executor_plans.cc), with a small synthetic HistoryBest. CPU only: nothing
// here compiles or launches.
#include "executor/kernel_choice.h"

#include "autotvm/python_json.h"
#include "autotvm/record.h"
#include "executor/executor_internal.h"
#include "gmock/gmock.h"
#include "graph/vgg16.h"
#include "gtest/gtest.h"
#include "ops/split.h"
#include "tests/executor/executor_test_util.h"

namespace tunejit {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

autotvm::Target Cuda() { return *autotvm::ParseTarget("cuda"); }
DeviceLimits Limits() { return DeviceLimits::ForArch(GpuArch{9, 0, false}); }

const autotvm::Workload& WorkloadOf(const NodeTask& task, const std::string& name) {
  for (const autotvm::Implementation& impl : task.implementations) {
    if (impl.workload.task_name == name) return impl.workload;
  }
  ADD_FAILURE() << "no implementation " << name;
  return task.implementations.front().workload;
}

void AddRecord(autotvm::HistoryBest& h, const autotvm::Workload& w,
               const autotvm::ConfigEntity& config, double cost, int line) {
  autotvm::MeasureResult result;
  result.costs = {cost};
  h.Add(autotvm::LoadedRecord{autotvm::MakeRecord(Cuda(), w, 0, config, result), "/logs/test.log",
                              line, ""});
}

autotvm::ConfigEntity Fallback(const autotvm::Workload& w) {
  return *FindOpTemplate(w.task_name)->FallbackConfig(w);
}

std::vector<NodeTask> Tasks(const Graph& g, NumericMode precision) {
  absl::StatusOr<std::vector<NodeTask>> t = ExtractTasks(g, precision);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

TEST(KernelChoiceTest, NoHistoryTakesHighestPriorityFallback) {
  const NodeTask conv0 = Tasks(testing::SmallNet(), NumericMode::kFp32)[0];
  ASSERT_EQ(conv0.implementations.size(), 2u);  // direct (10) and winograd (5)
  absl::StatusOr<KernelChoice> c = ChooseKernel(conv0, nullptr, Cuda(), Limits(), Epilogue{});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->candidates.size(), 1u);
  EXPECT_TRUE(c->candidates[0].fallback);
  EXPECT_EQ(c->candidates[0].task_name, "conv2d_nchw.cuda");
  EXPECT_FALSE(c->candidates[0].plan.kernels.empty());
}

TEST(KernelChoiceTest, FastestValidRecordWinsInvalidOneSkippedWithReason) {
  const NodeTask conv0 = Tasks(testing::SmallNet(), NumericMode::kFp32)[0];
  const autotvm::Workload& direct = WorkloadOf(conv0, "conv2d_nchw.cuda");
  const autotvm::Workload& winograd = WorkloadOf(conv0, "conv2d_nchw_winograd.cuda");
  autotvm::HistoryBest h;
  AddRecord(h, winograd, autotvm::ConfigEntity{}, 0.5e-3, 1);  // fastest, but no knobs at all
  AddRecord(h, direct, Fallback(direct), 1e-3, 2);
  const Epilogue e{true, true};
  absl::StatusOr<KernelChoice> c = ChooseKernel(conv0, &h, Cuda(), Limits(), e);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->candidates.size(), 2u);
  EXPECT_FALSE(c->candidates[0].fallback);
  EXPECT_EQ(c->candidates[0].task_name, "conv2d_nchw.cuda");
  EXPECT_EQ(c->candidates[0].record_label, "test.log:2");
  EXPECT_DOUBLE_EQ(c->candidates[0].record_cost, 1e-3);
  EXPECT_TRUE(c->candidates[1].fallback);  // what a failed verification falls back to
  EXPECT_THAT(c->reasons, Contains(HasSubstr("test.log:1 (conv2d_nchw_winograd.cuda): skipped:")));
}

// A saved build plan's step (executor/build_plan.h) gives back the candidate it was made from:
// the same implementation, config and kernels; any difference is refused with the reason.
TEST(KernelChoiceTest, KernelFromPlanRebuildsTheChosenCandidate) {
  const NodeTask conv0 = Tasks(testing::SmallNet(), NumericMode::kFp32)[0];
  const autotvm::Workload& direct = WorkloadOf(conv0, "conv2d_nchw.cuda");
  autotvm::HistoryBest h;
  AddRecord(h, direct, Fallback(direct), 1e-3, 2);
  const Epilogue e{true, true};
  absl::StatusOr<KernelChoice> chosen = ChooseKernel(conv0, &h, Cuda(), Limits(), e);
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  const KernelCandidate& c = chosen->candidates[0];
  PlannedStep planned{.name = "conv0",
                      .kind = "conv2d",
                      .task_name = c.task_name,
                      .workload = autotvm::DumpPythonJson(c.workload.args),
                      .record = autotvm::SerializeRecord(c.record->record),
                      .record_label = c.record_label,
                      .record_cost = c.record_cost};
  absl::StatusOr<KernelChoice> again = KernelFromPlan(conv0, planned, Limits(), e);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->candidates.size(), 1u);
  const KernelCandidate& p = again->candidates[0];
  EXPECT_EQ(p.implementation, c.implementation);
  EXPECT_EQ(p.config.ToString(), c.config.ToString());
  EXPECT_EQ(p.record_label, "test.log:2");
  ASSERT_EQ(p.plan.kernels.size(), c.plan.kernels.size());
  for (size_t k = 0; k < p.plan.kernels.size(); ++k) {
    EXPECT_EQ(p.plan.kernels[k].spec.name_expression, c.plan.kernels[k].spec.name_expression);
  }
  EXPECT_THAT(again->reasons, Contains("build plan: test.log:2 (conv2d_nchw.cuda)"));

  PlannedStep fallback = planned;
  fallback.fallback = true;
  fallback.record.clear();
  absl::StatusOr<KernelChoice> f = KernelFromPlan(conv0, fallback, Limits(), e);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(f->candidates[0].fallback);

  PlannedStep other_task = planned;
  other_task.task_name = "dense_small_batch.cuda";
  EXPECT_THAT(KernelFromPlan(conv0, other_task, Limits(), e).status().message(),
              HasSubstr("no implementation dense_small_batch.cuda"));
  PlannedStep other_shape = planned;
  other_shape.workload = "[]";
  EXPECT_THAT(KernelFromPlan(conv0, other_shape, Limits(), e).status().message(),
              HasSubstr("its workload differs from the plan's"));
  PlannedStep bad_record = planned;
  bad_record.record = "{";
  EXPECT_TRUE(absl::IsFailedPrecondition(KernelFromPlan(conv0, bad_record, Limits(), e).status()));
}

// The plan must list the lowered program's steps, in order, and its scale slots.
TEST(KernelChoiceTest, CheckPlannedStepsComparesTheLoweredProgram) {
  absl::StatusOr<StepProgram> p = LowerToSteps(testing::SmallNet(), NumericMode::kInt8Dp4a);
  ASSERT_TRUE(p.ok()) << p.status();
  BuildPlan plan;
  for (const Step& s : p->steps) {
    plan.steps.push_back({.name = s.name,
                          .kind = std::string(StepKindName(s.kind)),
                          .task_name = s.task >= 0 ? "some.cuda" : ""});
  }
  plan.activation_scales.assign(p->scale_sources.size(), 0.5f);
  EXPECT_TRUE(CheckPlannedSteps(*p, plan).ok()) << CheckPlannedSteps(*p, plan);
  BuildPlan renamed = plan;
  renamed.steps[1].name = "other";
  EXPECT_THAT(CheckPlannedSteps(*p, renamed).message(), HasSubstr("its step 1 is"));
  BuildPlan shorter = plan;
  shorter.steps.pop_back();
  EXPECT_THAT(CheckPlannedSteps(*p, shorter).message(),
              HasSubstr(absl::StrCat("this build lowers to ", p->steps.size())));
  BuildPlan fp32_scales = plan;
  fp32_scales.activation_scales.clear();
  EXPECT_THAT(CheckPlannedSteps(*p, fp32_scales).message(),
              HasSubstr("0 int8 activation scales; this build needs 2"));
}

// A measured record that breaks only tunejit's own search rules (here: accumulators per thread)
// is a candidate like any other, with a note; verification then checks its kernel.
TEST(KernelChoiceTest, MeasuredRecordsAreNotRefusedByTunejitsSearchRules) {
  const NodeTask conv0 = Tasks(testing::SmallNet(), NumericMode::kFp32)[0];
  const autotvm::Workload& direct = WorkloadOf(conv0, "conv2d_nchw.cuda");
  autotvm::ConfigEntity heavy = Fallback(direct);
  for (autotvm::Knob& k : heavy.knobs) {
    if (k.name == "tile_f") k.value = autotvm::Json::array({-1, 1, 1, 8});
    if (k.name == "tile_y" || k.name == "tile_x") k.value = autotvm::Json::array({-1, 1, 1, 16});
  }
  autotvm::HistoryBest h;
  AddRecord(h, direct, heavy, 1e-3, 4);
  absl::StatusOr<KernelChoice> c = ChooseKernel(conv0, &h, Cuda(), Limits(), Epilogue{});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->candidates.size(), 2u);
  EXPECT_FALSE(c->candidates[0].fallback);
  EXPECT_EQ(c->candidates[0].record_label, "test.log:4");
  EXPECT_THAT(c->candidates[0].plan.notes,
              Contains(HasSubstr("2048 accumulators per thread > 256 (registers; the kernel would "
                                 "spill) (a tunejit search rule); it was measured")));
}

TEST(KernelChoiceTest, Int8ConvUsesTheInt8Template) {
  const NodeTask conv1 = Tasks(testing::SmallNet(), NumericMode::kInt8Dp4a)[1];
  ASSERT_TRUE(conv1.int8());
  absl::StatusOr<KernelChoice> c = ChooseKernel(
      conv1, nullptr, Cuda(), Limits(), Epilogue{true, true, Epilogue::Output::kInt8Requantize});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->candidates[0].task_name, "conv2d_NCHWc_int8.cuda");
}

// PlanSteps on a hand-made State (no device): LayerInfo and the fallback warnings.
absl::StatusOr<std::unique_ptr<Executor::State>> PlannedState(const autotvm::HistoryBest* h,
                                                              NumericMode precision,
                                                              Graph graph = testing::SmallNet()) {
  auto s = std::make_unique<Executor::State>();
  s->graph = std::move(graph);
  s->options.history = h;
  s->options.target = Cuda();
  s->limits = Limits();
  absl::StatusOr<StepProgram> p = LowerToSteps(s->graph, precision);
  if (!p.ok()) return p.status();
  s->program = *std::move(p);
  s->scales.assign(s->program.scale_sources.size(), 0.05f);
  absl::Status planned = PlanSteps(*s);
  if (!planned.ok()) return planned;
  return s;
}

TEST(KernelChoiceTest, WarnsLoudlyWhenEveryLayerFallsBack) {
  autotvm::HistoryBest h;  // a record for a conv this network does not have
  Graph other = testing::SmallNet(/*batch=*/7);
  const NodeTask foreign = Tasks(other, NumericMode::kFp32)[0];
  AddRecord(h, foreign.implementations[0].workload, Fallback(foreign.implementations[0].workload),
            1e-3, 5);
  absl::StatusOr<std::unique_ptr<Executor::State>> s = PlannedState(&h, NumericMode::kFp32);
  ASSERT_TRUE(s.ok()) << s.status();
  const ExecutorStats& stats = (*s)->stats;
  EXPECT_EQ(stats.fallback_layers, 3);  // two convs and the dense
  EXPECT_THAT(stats.warnings,
              Contains("conv0: no usable record, fallback config of conv2d_nchw.cuda"));
  EXPECT_THAT(stats.warnings, Contains(HasSubstr("the log has no record for any layer")));
  ASSERT_EQ((*s)->layers.size(), 4u);
  EXPECT_EQ((*s)->layers[0].config, "fallback");
  EXPECT_EQ((*s)->layers[0].fused, "bias+relu");
  EXPECT_EQ((*s)->layers[1].op, "max_pool2d");
  EXPECT_EQ((*s)->layers[1].kernels, 1);
  EXPECT_DOUBLE_EQ((*s)->layers[0].flops, 2.0 * 2 * 8 * 16 * 16 * 4 * 9);
}

TEST(KernelChoiceTest, RecordForOneLayerIsUsedAndNoGlobalWarning) {
  const NodeTask conv0 = Tasks(testing::SmallNet(), NumericMode::kFp32)[0];
  const autotvm::Workload& direct = WorkloadOf(conv0, "conv2d_nchw.cuda");
  autotvm::HistoryBest h;
  AddRecord(h, direct, Fallback(direct), 2e-5, 9);
  absl::StatusOr<std::unique_ptr<Executor::State>> s = PlannedState(&h, NumericMode::kFp32);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->stats.fallback_layers, 2);
  EXPECT_THAT((*s)->stats.warnings,
              Not(Contains(HasSubstr("the log has no record for any layer"))));
  const LayerInfo& l = (*s)->layers[0];
  EXPECT_FALSE(l.fallback);
  EXPECT_EQ(l.record, "test.log:9");
  EXPECT_EQ(l.task_name, "conv2d_nchw.cuda");
  EXPECT_NE(l.config, "fallback");
  EXPECT_DOUBLE_EQ(l.record_cost, 2e-5);
}

TEST(KernelChoiceTest, Int8StepsPlanQuantizeAndInt8Pool) {
  absl::StatusOr<std::unique_ptr<Executor::State>> s =
      PlannedState(nullptr, NumericMode::kInt8Dp4a);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::vector<LayerInfo>& l = (*s)->layers;
  ASSERT_EQ(l.size(), 5u);
  EXPECT_EQ(l[0].op, "quantize");
  EXPECT_EQ(l[1].dtype, "int8");
  EXPECT_EQ(l[1].task_name, "conv2d_NCHWc_int8.cuda");
  EXPECT_EQ(l[1].fused, "bias+relu+requantize");
  EXPECT_EQ(l[2].dtype, "int8");  // the pool runs on int8
  EXPECT_EQ((*s)->steps[2].plan.kernels[0].spec.name_expression,
            "tunejit::max_pool2d<signed char>");
  EXPECT_EQ(l[4].dtype, "float32");
  // The conv's int8 plan packs its weights once (kPrepare) and runs the rest every time.
  EXPECT_GE(l[1].kernels, 1);
}

// --precision fp16: VGG-16's convs after the first and its dense layers are the Hopper
// tensor-core tasks (fp16 in and out, but float32 logits), each one the template can implement
// and plan with its fallback config; the 3-channel first conv runs on the stem template, which
// reads the float32 NCHW input and weight as the graph has them.
TEST(KernelChoiceTest, Fp16TasksAreTensorCoreTemplates) {
  Vgg16Options options;
  options.batch = 128;
  absl::StatusOr<Graph> g = BuildVgg16(options);
  ASSERT_TRUE(g.ok()) << g.status();
  const std::vector<NodeTask> tasks = Tasks(*g, NumericMode::kFp16TensorCores);
  ASSERT_EQ(tasks.size(), 16u);
  const autotvm::Workload& stem = tasks[0].implementations[0].workload;
  absl::StatusOr<autotvm::Conv2dParams> stem_p = autotvm::ParseConv2dWorkload(stem);
  ASSERT_TRUE(stem_p.ok()) << stem_p.status();
  EXPECT_EQ(stem_p->ci, 3);
  EXPECT_EQ(stem_p->h, 224);
  EXPECT_EQ(stem_p->kh * stem_p->kw, 9);
  EXPECT_EQ(stem_p->pad_top, 1);
  EXPECT_TRUE(stem_p->nhwc_out);
  for (size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_EQ(tasks[i].forms.float_nchw_data, i == 0) << tasks[i].name;
    ASSERT_EQ(tasks[i].implementations.size(), 1u) << tasks[i].name;
    const autotvm::Workload& w = tasks[i].implementations[0].workload;
    // The last conv of each block (features.2, 7, 14, 21, 28) absorbs its 2x2 max pool.
    const bool pooled = i == 1 || i == 3 || i == 6 || i == 9 || i == 12;
    EXPECT_EQ(tasks[i].pool >= 0, pooled) << tasks[i].name;
    EXPECT_EQ(w.task_name, i == 0   ? "conv2d_nchw_stem_mma.cuda"
                           : pooled ? "conv2d_nhwc_wgmma_pool.cuda"
                           : i < 13 ? "conv2d_nhwc_wgmma.cuda"
                                    : "dense_wgmma.cuda")
        << tasks[i].name;
    EXPECT_EQ(w.args[0][2], i == 0 ? "float32" : "float16") << tasks[i].name;
    // fp16 activations inside the network; the logits (classifier.6) leave in float32.
    EXPECT_EQ(w.args.back(), i + 1 < tasks.size() ? "float16" : "float32") << tasks[i].name;
    const OpTemplate* op = FindOpTemplate(w.task_name);
    ASSERT_NE(op, nullptr);
    EXPECT_TRUE(op->CanImplement(w).ok()) << tasks[i].name << ": " << op->CanImplement(w);
    EXPECT_TRUE(op->Specialize(w, Fallback(w), Limits(), Epilogue{}).ok()) << tasks[i].name;
    EXPECT_TRUE(tasks[i].half()) << tasks[i].name;
    EXPECT_EQ(tasks[i].half_output, i + 1 < tasks.size()) << tasks[i].name;
  }

  EXPECT_EQ(ResolveNumericMode("fp16", false).value(), NumericMode::kFp16TensorCores);
  EXPECT_EQ(PrecisionName(NumericMode::kFp16TensorCores), "fp16");
}

// --precision int8 --tensor-cores: every conv of VGG-16 plans its fallback config on the
// tensor-core template with the epilogues the executor gives it: requantize to int8 between int8
// convs (and after the float16 stem), dequantize to float32 before the classifier.
TEST(KernelChoiceTest, Int8TensorCoreConvsPlanTheExecutorsEpilogues) {
  absl::StatusOr<Graph> g = BuildVgg16({.batch = 128});
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<std::vector<NodeTask>> tasks = ExtractTasks(*g, NumericMode::kInt8TensorCores);
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  // The RGB stem, which the int8 rule keeps float, runs on the stem template (float16 products)
  // and requantizes its float32 accumulators.
  const NodeTask& stem = tasks->front();
  EXPECT_EQ(stem.mode, NumericMode::kFp16TensorCores);
  EXPECT_TRUE(stem.forms.float_nchw_data && stem.forms.nhwc && !stem.int8());
  // The same workload as at --precision fp16 (float16 output), so fp16 logs' records apply.
  absl::StatusOr<std::vector<NodeTask>> fp16 = ExtractTasks(*g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(fp16.ok()) << fp16.status();
  EXPECT_EQ(stem.implementations[0].workload.Key(),
            fp16->front().implementations[0].workload.Key());
  absl::StatusOr<KernelChoice> stem_choice = ChooseKernel(
      stem, nullptr, Cuda(), Limits(), Epilogue{true, true, Epilogue::Output::kInt8Requantize});
  ASSERT_TRUE(stem_choice.ok()) << stem_choice.status();
  EXPECT_EQ(stem_choice->candidates[0].task_name, "conv2d_nchw_stem_mma.cuda");
  int planned = 0;
  for (const NodeTask& t : *tasks) {
    if (!t.forms.nhwc || t.half()) continue;
    EXPECT_EQ(t.mode, NumericMode::kInt8TensorCores) << t.name;
    for (Epilogue::Output out : {Epilogue::Output::kInt8Requantize, Epilogue::Output::kFloat32}) {
      absl::StatusOr<KernelChoice> c =
          ChooseKernel(t, nullptr, Cuda(), Limits(), Epilogue{true, true, out});
      ASSERT_TRUE(c.ok()) << t.name << ": " << c.status();
      EXPECT_EQ(c->candidates[0].task_name,
                t.pool >= 0 ? "conv2d_nhwc_wgmma_pool.cuda" : "conv2d_nhwc_wgmma.cuda");
    }
    ++planned;
  }
  EXPECT_EQ(planned, 12);
}

// A pooled conv without records of its own runs the convolution's best record (a log tuned before
// the pooled task existed), its pool after the kernel when the tile cannot take it; once the log
// has the pooled task's records, those are chosen.
TEST(KernelChoiceTest, PooledConvTakesTheConvsRecordsUntilItHasItsOwn) {
  absl::StatusOr<Graph> g = BuildVgg16({.batch = 128});
  ASSERT_TRUE(g.ok()) << g.status();
  const NodeTask conv =
      Tasks(*g, NumericMode::kFp16TensorCores)[1];  // features.2, then features.4's pool
  ASSERT_GE(conv.pool, 0);
  const autotvm::Workload& pooled = WorkloadOf(conv, "conv2d_nhwc_wgmma_pool.cuda");
  autotvm::Workload unpooled = pooled;
  unpooled.task_name = "conv2d_nhwc_wgmma.cuda";
  auto config = [](int64_t th, int64_t tw, int64_t im2col) {
    return autotvm::ConfigEntity{{OtherKnob("tile_h", th), OtherKnob("tile_w", tw),
                                  OtherKnob("tile_n", 64), OtherKnob("stages", 4),
                                  OtherKnob("consumer_wg", 2), OtherKnob("pingpong", 0),
                                  OtherKnob("im2col", im2col), OtherKnob("cluster", 1)}};
  };
  const DeviceLimits hopper = DeviceLimits::ForArch(GpuArch{9, 0, true});
  const Epilogue e{true, true};
  autotvm::HistoryBest h;
  AddRecord(h, unpooled, config(4, 64, 1), 1e-3, 1);
  absl::StatusOr<KernelChoice> borrowed = ChooseKernel(conv, &h, Cuda(), hopper, e);
  ASSERT_TRUE(borrowed.ok()) << borrowed.status();
  const KernelCandidate& first = borrowed->candidates[0];
  EXPECT_FALSE(first.fallback);
  EXPECT_EQ(first.task_name, "conv2d_nhwc_wgmma_pool.cuda");
  EXPECT_EQ(first.record_label, "test.log:1 (conv2d_nhwc_wgmma.cuda's)");
  EXPECT_EQ(first.plan.kernels.size(), 2u);  // im2col tiles: the pool after the kernel
  AddRecord(h, pooled, config(8, 16, 0), 1.2e-3, 2);
  absl::StatusOr<KernelChoice> own = ChooseKernel(conv, &h, Cuda(), hopper, e);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->candidates[0].record_label, "test.log:2");
  EXPECT_EQ(own->candidates[0].plan.kernels.size(), 1u);  // pooled in the kernel
  EXPECT_EQ(own->candidates.size(), 2u);                  // and the fallback; no borrowing
}

// A rank-3 matmul at fp32 is a tuned step of batch_matmul.cuda reading its second operand as the
// graph's [B, K, N] (OperandForms::y_kn, kernel BatchMatmulIo<1, ...>): the fallback without a
// log, a record first (then the fallback) when the log has one.
TEST(KernelChoiceTest, Fp32BatchedMatmulIsATunedBatchMatmulStep) {
  const Graph g = testing::BatchMatmulNet();
  const std::vector<NodeTask> tasks = Tasks(g, NumericMode::kFp32);
  ASSERT_EQ(tasks.size(), 2u);
  ASSERT_EQ(tasks[0].implementations.size(), 1u);
  const autotvm::Workload& w = tasks[0].implementations[0].workload;
  EXPECT_EQ(w.task_name, "batch_matmul.cuda");
  EXPECT_EQ(autotvm::DumpPythonJson(w.args),
            R"([["TENSOR", [2, 5, 8], "float32"], ["TENSOR", [1, 6, 8], "float32"]])");
  EXPECT_TRUE(tasks[0].forms.y_kn);
  EXPECT_EQ(tasks[0].mode, NumericMode::kFp32);
  EXPECT_DOUBLE_EQ(tasks[0].flops, 2.0 * 2 * 5 * 6 * 8);
  EXPECT_EQ(autotvm::DumpPythonJson(tasks[1].implementations[0].workload.args),
            R"([["TENSOR", [2, 5, 6], "float32"], ["TENSOR", [2, 3, 6], "float32"]])");

  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp32);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->steps.size(), 2u);
  EXPECT_EQ(p->steps[0].kind, StepKind::kMatMul);
  EXPECT_EQ(p->steps[0].task, 0);
  EXPECT_EQ(p->steps[1].task, 1);
  ASSERT_EQ(p->steps[0].operands.size(), 2u);
  EXPECT_EQ(g.tensor(p->steps[0].operands[1].weight).name, "w1");

  absl::StatusOr<KernelChoice> none = ChooseKernel(tasks[0], nullptr, Cuda(), Limits(), Epilogue{});
  ASSERT_TRUE(none.ok()) << none.status();
  ASSERT_EQ(none->candidates.size(), 1u);
  EXPECT_TRUE(none->candidates[0].fallback);
  EXPECT_EQ(none->candidates[0].task_name, "batch_matmul.cuda");
  ASSERT_EQ(none->candidates[0].plan.kernels.size(), 1u);
  EXPECT_THAT(none->candidates[0].plan.kernels[0].spec.name_expression,
              HasSubstr("tunejit::BatchMatmulIo<1, "));

  autotvm::HistoryBest h;
  autotvm::ConfigEntity config = Fallback(w);
  config.knobs[0] = SplitKnob("tile_y", {-1, 5, 1});
  AddRecord(h, w, config, 3e-6, 4);
  absl::StatusOr<KernelChoice> c = ChooseKernel(tasks[0], &h, Cuda(), Limits(), Epilogue{});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->candidates.size(), 2u);
  EXPECT_FALSE(c->candidates[0].fallback);
  EXPECT_EQ(c->candidates[0].record_label, "test.log:4");
  EXPECT_THAT(c->candidates[0].plan.kernels[0].spec.name_expression,
              HasSubstr("BatchMatmulTile<5, 1, "));
  EXPECT_THAT(c->candidates[0].plan.kernels[0].spec.name_expression,
              HasSubstr("tunejit::BatchMatmulIo<1, "));
  EXPECT_TRUE(c->candidates[1].fallback);

  // Through the executor's planning: the first step takes the record, the second falls back.
  absl::StatusOr<std::unique_ptr<Executor::State>> s =
      PlannedState(&h, NumericMode::kFp32, testing::BatchMatmulNet());
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ((*s)->layers.size(), 2u);
  EXPECT_EQ((*s)->layers[0].op, "matmul");
  EXPECT_EQ((*s)->layers[0].task_name, "batch_matmul.cuda");
  EXPECT_EQ((*s)->layers[0].record, "test.log:4");
  EXPECT_TRUE((*s)->layers[1].fallback);
  EXPECT_EQ((*s)->stats.fallback_layers, 1);
}

// Other matmuls keep tensor_ops.cu's untuned kernel: the tensor-core modes (float32 tensor ops
// there) and ranks other than 3.
TEST(KernelChoiceTest, OtherMatmulsStayUntunedTensorOps) {
  const Graph g = testing::BatchMatmulNet();
  EXPECT_TRUE(Tasks(g, NumericMode::kFp16TensorCores).empty());
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  for (const Step& step : p->steps) EXPECT_EQ(step.task, -1) << step.name;

  Graph rank4;
  const int x = rank4.AddTensor({"input", {2, 2, 5, 8}, DType::kF32, TensorKind::kInput});
  const int w = rank4.AddTensor({"w", {2, 2, 8, 6}, DType::kF32, TensorKind::kWeight});
  ASSERT_TRUE(rank4.AddNode("mm", OpKind::kMatMul, {x, w}, {}, "out", TensorKind::kOutput).ok());
  EXPECT_TRUE(Tasks(rank4, NumericMode::kFp32).empty());
  absl::StatusOr<StepProgram> q = LowerToSteps(rank4, NumericMode::kFp32);
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_EQ(q->steps.size(), 1u);
  EXPECT_EQ(q->steps[0].task, -1);
}

}  // namespace
}  // namespace tunejit
