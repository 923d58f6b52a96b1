// The C interface to Google Benchmark declared in gbench_shim.h, and the --table reporter.
#include "gbench_shim.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

benchmark::State &S(bench_state *st) { return *reinterpret_cast<benchmark::State *>(st); }

benchmark::internal::Benchmark *reg(const char *name, bench_fn fn, void *arg) {
  return benchmark::RegisterBenchmark(
      name, [fn, arg](benchmark::State &s) { fn(reinterpret_cast<bench_state *>(&s), arg); });
}

std::string format(const char *fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string human_time(double seconds) {
  if (seconds < 1e-6) return format("%.1f ns", seconds * 1e9);
  if (seconds < 1e-3) return format("%.2f us", seconds * 1e6);
  if (seconds < 1) return format("%.2f ms", seconds * 1e3);
  return format("%.2f s", seconds);
}

double counter(const benchmark::BenchmarkReporter::Run &r, const char *name) {
  auto it = r.counters.find(name);
  return it == r.counters.end() ? 0 : it->second.value;
}

// One row per run, for names "<op>/<backend>" with one argument (the size). Rows print as their
// runs finish; "vs scalar" divides the scalar backend's time for the same op and size (it runs
// first: bench_ops.c registers the scalar backend first for each op and size).
class TableReporter : public benchmark::BenchmarkReporter {
public:
  bool ReportContext(const Context &ctx) override {
    std::FILE *out = stdout;
    std::fprintf(out, "%d CPUs at %.0f MHz; times are wall time per call, one thread\n\n",
                 ctx.cpu_info.num_cpus, ctx.cpu_info.cycles_per_second / 1e6);
    std::fprintf(out, "%-20s %9s  %-8s %11s %16s %10s  %s\n", "op", "size", "backend", "time",
                 "throughput", "vs scalar", "note");
    std::fprintf(out, "%s\n", std::string(100, '-').c_str());
    return true;
  }

  void ReportRuns(const std::vector<Run> &runs) override {
    for (const Run &r : runs) {
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "mean") continue;
      std::string fn = r.run_name.function_name, op = fn, backend;
      size_t slash = fn.rfind('/');
      if (slash != std::string::npos) {
        op = fn.substr(0, slash);
        backend = fn.substr(slash + 1);
      }
      std::string size = r.run_name.args;
      if (r.run_type == Run::RT_Aggregate) op += " (mean)";
      if (!last_op_.empty() && op != last_op_) std::printf("\n");
      last_op_ = op;
      if (r.error_occurred) {
        std::printf("%-20s %9s  %-8s  error: %s\n", op.c_str(), size.c_str(), backend.c_str(),
                    r.error_message.c_str());
        continue;
      }
      double seconds = r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
      std::string rate = "-";
      if (double flops = counter(r, "FLOPS"))
        rate = format("%.2f GFLOP/s", flops / 1e9);
      else if (double bytes = counter(r, "bytes_per_second"))
        rate = format("%.2f GB/s", bytes / 1e9);
      else if (double items = counter(r, "items_per_second"))
        rate = format("%.2f Mop/s", items / 1e6);
      std::string key = op + "/" + size, speedup;
      if (backend == "scalar")
        scalar_[key] = seconds;
      else if (scalar_.count(key))
        speedup = format("%.2fx", scalar_[key] / seconds);
      std::printf("%-20s %9s  %-8s %11s %16s %10s  %s\n", op.c_str(), size.c_str(), backend.c_str(),
                  human_time(seconds).c_str(), rate.c_str(), speedup.c_str(),
                  r.report_label.c_str());
    }
    std::fflush(stdout);
  }

private:
  std::map<std::string, double> scalar_; // seconds per call, by "<op>/<size>"
  std::string last_op_;                  // a blank line separates ops
};

} // namespace

extern "C" {

void bench_register(const char *name, bench_fn fn, void *arg) { reg(name, fn, arg); }

void bench_register_args(const char *name, bench_fn fn, void *arg, const int64_t *args, int nargs) {
  auto *b = reg(name, fn, arg);
  for (int i = 0; i < nargs; i++) b->Arg(args[i]);
}

int bench_keep_running(bench_state *st) { return S(st).KeepRunning(); }
int bench_keep_running_batch(bench_state *st, int64_t n) { return S(st).KeepRunningBatch(n); }
int64_t bench_range(bench_state *st, int i) { return S(st).range(static_cast<size_t>(i)); }
int64_t bench_iterations(bench_state *st) { return S(st).iterations(); }
void bench_set_items_processed(bench_state *st, int64_t v) { S(st).SetItemsProcessed(v); }
void bench_set_bytes_processed(bench_state *st, int64_t v) { S(st).SetBytesProcessed(v); }

void bench_counter(bench_state *st, const char *name, double v, int is_rate) {
  S(st).counters[name] =
      benchmark::Counter(v, is_rate ? benchmark::Counter::kIsRate : benchmark::Counter::kDefaults);
}

void bench_set_label(bench_state *st, const char *label) { S(st).SetLabel(label); }
void bench_pause(bench_state *st) { S(st).PauseTiming(); }
void bench_resume(bench_state *st) { S(st).ResumeTiming(); }
void bench_skip_with_error(bench_state *st, const char *msg) { S(st).SkipWithError(msg); }

int bench_main(int argc, char **argv) {
  bool table = false;
  int kept = 0;
  for (int i = 0; i < argc; i++) {
    if (i > 0 && std::strcmp(argv[i], "--table") == 0)
      table = true;
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (table) {
    TableReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
  } else {
    benchmark::RunSpecifiedBenchmarks();
  }
  benchmark::Shutdown();
  return 0;
}

} // extern "C"
