// The C interface to Google Benchmark declared in gbench_shim.h: registration, the timed loop,
// the progress line, the --table reporter and the exit status.
#include "gbench_shim.h"

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

using Clock = std::chrono::steady_clock;

struct bench_state {
  benchmark::State *s;
  Clock::time_point t0, t1;
  bool started = false;
  bool time_calls = false; // bench_time_each_call: also keep the fastest call
  Clock::time_point last;  // the previous bench_keep_running call, when time_calls
  double best = 0;         // the fastest call so far (seconds), 0 before one has ended
};

namespace {

std::vector<std::string> g_names; // every registered benchmark, in order
std::string g_table_header;

std::string format(const char *fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// ---- Progress: "[k/N] name" on stderr as each benchmark starts ------------------------------

class Progress {
public:
  void begin(size_t total) {
    total_ = total;
    tty_ = isatty(STDERR_FILENO) != 0;
    start_ = Clock::now();
  }
  // Called on every entry into a benchmark function; gbench enters several times per benchmark
  // (to size the iteration count), so only a new name counts.
  void entered(const std::string &name) {
    if (total_ == 0 || name == current_) return;
    current_ = name;
    done_++;
    double s = std::chrono::duration<double>(Clock::now() - start_).count();
    if (tty_) {
      std::fprintf(stderr, "\r\033[K[%zu/%zu %3.0fs] %s", done_, total_, s, name.c_str());
      shown_ = true;
    } else if (done_ * 10 / total_ != (done_ - 1) * 10 / total_ || done_ == 1) {
      std::fprintf(stderr, "simdgrad_bench: %zu/%zu benchmarks (%.0f s): %s\n", done_, total_, s,
                   name.c_str());
    }
    std::fflush(stderr);
  }
  // Before a line goes to stdout (the same terminal, usually): wipe the progress line.
  void clear() {
    if (!shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
  }

private:
  size_t total_ = 0, done_ = 0;
  bool tty_ = false, shown_ = false;
  std::string current_;
  Clock::time_point start_;
};
Progress g_progress;

// gbench's own selection (benchmark_register.cc): "all" or empty is everything, a leading '-'
// negates, the rest is a POSIX extended regex matched anywhere in the name.
size_t count_selected(std::string spec) {
  if (spec.empty() || spec == "all") return g_names.size();
  if (spec.empty() || spec == "all") spec = ".";
  bool negate = !spec.empty() && spec[0] == '-';
  if (negate) spec.erase(0, 1);
  try {
    std::regex re(spec, std::regex::extended | std::regex::nosubs);
    size_t n = 0;
    for (const std::string &name : g_names) n += std::regex_search(name, re) != negate;
    return n;
  } catch (const std::regex_error &) {
    return 0; // gbench reports the bad filter itself
  }
}

// ---- The table ----------------------------------------------------------------------------

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

// "<op>/<backend>/<shape>/threads:<T>" into its fields (anything else: op is the whole name).
struct Name {
  std::string op, backend, shape, threads;
};
Name split_name(const std::string &full) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t slash = full.find('/', start);
    parts.push_back(full.substr(start, slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  Name n;
  if (parts.size() != 4 || parts[3].rfind("threads:", 0) != 0) {
    n.op = full;
    return n;
  }
  n.op = parts[0], n.backend = parts[1], n.shape = parts[2], n.threads = parts[3].substr(8);
  return n;
}

// One row per benchmark as it finishes. "vs scalar" and "vs openblas" divide the time of the
// scalar backend (or OpenBLAS) for the same op, shape and threads by this row's: bench.h
// registers those first.
class TableReporter : public benchmark::BenchmarkReporter {
public:
  explicit TableReporter(bool openblas) : openblas_(openblas) {}

  bool ReportContext(const Context &ctx) override {
    std::printf("simdgrad_bench: %d CPUs; times are wall time per call\n%s\n",
                ctx.cpu_info.num_cpus, g_table_header.c_str());
    header();
    return true;
  }

  void ReportRuns(const std::vector<Run> &runs) override {
    g_progress.clear();
    for (const Run &r : runs) {
      // With repetitions, the median stands for the group (a neighbour's burst on a shared machine
      // moves the mean, not the median); a single run stands for itself.
      if (r.run_type == Run::RT_Aggregate ? r.aggregate_name != "median" : r.repetitions > 1)
        continue;
      Name n = split_name(r.run_name.function_name);
      if (!last_op_.empty() && n.op != last_op_) std::printf("\n");
      last_op_ = n.op;
      if (r.error_occurred) {
        errors_++;
        if (n.backend == "scalar") scalar_failed_.insert(r.run_name.function_name);
        std::printf("%-30s %-11s %-8s %3s  error: %s\n", n.op.c_str(), n.shape.c_str(),
                    n.backend.c_str(), n.threads.c_str(), r.error_message.c_str());
        continue;
      }
      double seconds = r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
      double bytes = counter(r, "bytes_per_second"), flops = counter(r, "FLOPS");
      double pct = counter(r, "pct_roofline");
      unsigned flags = (unsigned)counter(r, "roof_flags");
      std::string key = n.op + "/" + n.shape + "/" + n.threads, vs_scalar, vs_blas;
      if (n.backend == "scalar") scalar_[key] = seconds;
      if (n.backend == "openblas") openblas_time_[key] = seconds;
      double best = counter(r, "best_call_s");
      if (n.backend == "openblas" && best > 0) openblas_best_[key] = best;
      std::string fastest;
      if (best > 0) {
        double best_pct = counter(r, "best_pct_roofline");
        fastest = "  fastest call " + human_time(best);
        if (best_pct > 0) fastest += format(", %.0f%% of roof", best_pct);
        if (n.backend != "openblas" && openblas_best_.count(key))
          fastest += format(", %.2fx openblas", openblas_best_[key] / best);
      }
      if (n.backend != "scalar" && scalar_.count(key))
        vs_scalar = format("%.2fx", scalar_[key] / seconds);
      else if (n.backend != "scalar" && !n.backend.empty())
        no_scalar_.push_back(n.op + "/scalar/" + n.shape + "/threads:" + n.threads);
      // 1: judged against a roof that measured inconsistently; 2: above 105% (a model error)
      std::string pct_cell = pct > 0 ? format("%.0f%%", pct) : "-";
      if (flags & 2) pct_cell = "!" + pct_cell, model_errors_++;
      if (flags & 1) pct_cell += "?", inconsistent_++;
      if (n.backend != "openblas" && openblas_time_.count(key))
        vs_blas = format("%.2fx", openblas_time_[key] / seconds);
      char line[256];
      int len = std::snprintf(line, sizeof line, "%-30s %-11s %-8s %3s %10s %8s %8s %6s %9s %11s",
                              n.op.c_str(), n.shape.c_str(), n.backend.c_str(), n.threads.c_str(),
                              human_time(seconds).c_str(),
                              bytes > 0 ? format("%.1f", bytes / 1e9).c_str() : "-",
                              flops > 0 ? format("%.1f", flops / 1e9).c_str() : "-",
                              pct_cell.c_str(), vs_scalar.c_str(), vs_blas.c_str());
      if (len >= (int)sizeof line) len = (int)sizeof line - 1;
      while (len > 0 && line[len - 1] == ' ') line[--len] = 0;
      std::printf("%s%s%s\n", line, fastest.c_str(), extras(r).c_str()); // no empty padding
    }
    std::fflush(stdout);
  }

  int errors() const { return errors_; }

  // What the marks in the table mean, and why "vs scalar" is empty where it is.
  void footer() {
    if (model_errors_)
      std::printf("\n! %d row(s) ran faster than the roofline allows, above 105%%: a model error "
                  "(the bytes or FLOPs counted, or the roof measured), not a speed; see "
                  "docs/bench.md\n",
                  model_errors_);
    if (inconsistent_)
      std::printf("%s? %d row(s) judged against a roof that measured inconsistently twice "
                  "(marked ! in the header): run again on a quieter machine\n",
                  model_errors_ ? "" : "\n", inconsistent_);
    size_t filtered = 0, failed = 0, absent = 0;
    for (const std::string &name : no_scalar_) {
      bool registered = false;
      for (const std::string &g : g_names) registered |= g == name;
      if (!registered)
        absent++;
      else if (scalar_failed_.count(name))
        failed++;
      else
        filtered++;
    }
    if (!no_scalar_.empty()) {
      std::printf("\n\"vs scalar\" is empty on %zu row(s):", no_scalar_.size());
      if (filtered) std::printf(" %zu whose scalar row the filter left out", filtered);
      if (failed)
        std::printf("%s %zu whose scalar row reported an error", filtered ? ";" : "", failed);
      if (absent)
        std::printf("%s %zu with no scalar row registered (it runs on one backend only, or its "
                    "scalar row is not in this suite)",
                    filtered || failed ? ";" : "", absent);
      std::printf("\n");
    }
    std::fflush(stdout);
  }

private:
  // What some rows measure besides the columns: training throughput, the profiler's cost.
  static std::string extras(const Run &r) {
    std::string out;
    double images = counter(r, "images_per_second");
    double off = counter(r, "profile_off_s"), on = counter(r, "profile_on_s");
    double bwd = counter(r, "backward_FLOPS"), bwd_pct = counter(r, "backward_pct_peak");
    if (images > 0) out += format("  %.0f images/s", images);
    if (bwd > 0) out += format("  backward alone %.1f GFLOP/s", bwd / 1e9);
    if (bwd_pct > 0) out += format(" (%.0f%% of peak)", bwd_pct);
    if (off > 0 && on > 0)
      out += "  profiler off " + human_time(off) + ", on " + human_time(on) +
             format(" (%+.1f%%)", 100 * (on / off - 1));
    return out;
  }

  void header() {
    std::printf("%-30s %-11s %-8s %3s %10s %8s %8s %6s %9s", "op", "shape", "backend", "thr",
                "time", "GB/s", "GFLOP/s", "%roof", "vs scalar");
    if (openblas_) std::printf(" %11s", "vs openblas");
    std::printf("\n%s\n", std::string(openblas_ ? 112 : 100, '-').c_str());
  }

  bool openblas_;
  int errors_ = 0;
  // seconds, by "<op>/<shape>/<threads>": the mean call, and OpenBLAS's fastest
  std::map<std::string, double> scalar_, openblas_time_, openblas_best_;
  std::string last_op_; // a blank line separates ops
  int model_errors_ = 0, inconsistent_ = 0;
  std::vector<std::string> no_scalar_; // the scalar rows missing for a "vs scalar" cell
  std::set<std::string> scalar_failed_;
};

// Any other format: gbench's own reporter, counting the errors on the way.
class CountingReporter : public benchmark::BenchmarkReporter {
public:
  explicit CountingReporter(benchmark::BenchmarkReporter *inner) : inner_(inner) {}
  bool ReportContext(const Context &ctx) override { return inner_->ReportContext(ctx); }
  void ReportRuns(const std::vector<Run> &runs) override {
    g_progress.clear();
    for (const Run &r : runs) errors_ += r.error_occurred;
    inner_->ReportRuns(runs);
  }
  void Finalize() override { inner_->Finalize(); }
  int errors() const { return errors_; }

private:
  benchmark::BenchmarkReporter *inner_;
  int errors_ = 0;
};

bool has_flag(int argc, char **argv, const char *flag) {
  size_t len = std::strlen(flag);
  for (int i = 1; i < argc; i++)
    if (std::strncmp(argv[i], flag, len) == 0 && (argv[i][len] == '\0' || argv[i][len] == '='))
      return std::strcmp(argv[i] + len, "=false") != 0 && std::strcmp(argv[i] + len, "=0") != 0;
  return false;
}

} // namespace

extern "C" {

int64_t bench_count_selected(int argc, char **argv) {
  std::string spec;
  for (int i = 1; i < argc; i++)
    if (std::strncmp(argv[i], "--benchmark_filter=", 19) == 0) spec = argv[i] + 19;
  return (int64_t)count_selected(spec);
}

void bench_register(const char *name, bench_fn fn, void *arg) {
  g_names.emplace_back(name);
  std::string n = name;
  benchmark::RegisterBenchmark(name, [fn, arg, n](benchmark::State &s) {
    g_progress.entered(n);
    bench_state st{&s, {}, {}, false, false, {}, 0};
    fn(&st, arg);
  });
}

// The wall clock around gbench's loop: started before the first KeepRunning, stopped when one
// returns false (gbench's own timer runs between the same two calls).
static void start(bench_state *st) {
  if (st->started) return;
  st->started = true;
  st->t0 = Clock::now();
}
static int stop_unless(bench_state *st, bool more) {
  if (!more) st->t1 = Clock::now();
  return more;
}

int bench_keep_running(bench_state *st) {
  start(st);
  if (st->time_calls) {
    Clock::time_point now = Clock::now();
    double call = std::chrono::duration<double>(now - st->last).count();
    if (st->last != Clock::time_point{} && (st->best == 0 || call < st->best)) st->best = call;
    st->last = now;
  }
  return stop_unless(st, st->s->KeepRunning());
}
void bench_time_each_call(bench_state *st) { st->time_calls = true; }
double bench_best_call(bench_state *st) { return st->best; }
int bench_keep_running_batch(bench_state *st, int64_t n) {
  start(st);
  return stop_unless(st, st->s->KeepRunningBatch(n));
}
int64_t bench_iterations(bench_state *st) { return st->s->iterations(); }
double bench_elapsed(bench_state *st) {
  return std::chrono::duration<double>(st->t1 - st->t0).count();
}

void bench_counter(bench_state *st, const char *name, double v) {
  st->s->counters[name] = benchmark::Counter(v);
}
void bench_set_label(bench_state *st, const char *label) { st->s->SetLabel(label); }
void bench_skip_with_error(bench_state *st, const char *msg) { st->s->SkipWithError(msg); }

void bench_add_context(const char *key, const char *value) {
  benchmark::AddCustomContext(key, value);
}
void bench_set_table_header(const char *text) { g_table_header = text; }

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
  if (has_flag(argc, argv, "--benchmark_format")) table = false; // the format asked for wins
  bool listing = has_flag(argc, argv, "--benchmark_list_tests");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  size_t selected = count_selected(benchmark::GetBenchmarkFilter());
  if (selected == 0) {
    std::fprintf(stderr, "simdgrad_bench: --benchmark_filter=%s matches no benchmark\n",
                 benchmark::GetBenchmarkFilter().c_str());
    return 3;
  }
  if (!listing) g_progress.begin(selected);
  int errors;
  if (table) {
    bool openblas = false;
    for (const std::string &n : g_names) openblas |= n.find("/openblas/") != std::string::npos;
    TableReporter reporter(openblas);
    benchmark::RunSpecifiedBenchmarks(&reporter);
    g_progress.clear();
    reporter.footer();
    errors = reporter.errors();
  } else {
    CountingReporter reporter(benchmark::CreateDefaultDisplayReporter());
    benchmark::RunSpecifiedBenchmarks(&reporter);
    errors = reporter.errors();
  }
  g_progress.clear();
  benchmark::Shutdown();
  if (errors) std::fprintf(stderr, "simdgrad_bench: %d benchmark(s) reported an error\n", errors);
  return errors ? 2 : 0;
}

} // extern "C"
