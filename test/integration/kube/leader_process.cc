// One leader-election candidate as an OS process, for leader_process_integration_test.cc.
//
//   kube_leader_process --namespace NS --identity ID --log FILE
//                       [--lease-ms 4000 --renew-ms 3000 --retry-ms 500]
//
// Campaigns for the Lease NS/dovetail-process-test with a LeaderElector of its own. While it
// leads, a writer appends "ID/TERM/SEQ;" to data.log of the ConfigMap NS/writes through a Client
// guarded by the elector's WriteGate (read, append, update with the read resourceVersion: the
// API server orders all writes). TERM counts this process's leaderships from 1.
// Every step is appended to FILE as one line with the wall-clock time in Unix nanoseconds, which
// all processes on the machine share:
//   start <t>            lead <t> <term>           stop <t> <term>
//   write <t_before> <t_after> <term> <seq>        exit <t>
// The line is written with one write(2) before the next step, so a SIGKILL loses nothing logged.
// SIGTERM/SIGINT: stop writing, stop the elector (a leader releases the lease), exit 0.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "dovetail/common/clock.h"
#include "dovetail/kube/client.h"
#include "dovetail/kube/config.h"
#include "dovetail/kube/errors.h"
#include "dovetail/kube/leader_election.h"
#include "dovetail/kube/rest_client.h"
#include "nlohmann/json.hpp"

namespace dovetail::kube {
namespace {

struct Args {
  std::string ns;
  std::string identity;
  std::string log;
  int64_t lease_ms = 4000;
  int64_t renew_ms = 3000;
  int64_t retry_ms = 500;
};

bool ParseArgs(int argc, char** argv, Args& args) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--namespace") {
      args.ns = value;
    } else if (flag == "--identity") {
      args.identity = value;
    } else if (flag == "--log") {
      args.log = value;
    } else if (flag == "--lease-ms") {
      args.lease_ms = std::atoll(value);
    } else if (flag == "--renew-ms") {
      args.renew_ms = std::atoll(value);
    } else if (flag == "--retry-ms") {
      args.retry_ms = std::atoll(value);
    } else {
      return false;
    }
  }
  return !args.ns.empty() && !args.identity.empty() && !args.log.empty();
}

class Log {
 public:
  explicit Log(const std::string& path)
      : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {}
  ~Log() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  void Line(const std::string& line) {
    const std::string text = line + "\n";
    absl::MutexLock lock(&mu_);
    (void)!::write(fd_, text.data(), text.size());
  }

 private:
  int fd_;
  absl::Mutex mu_;
};

int64_t NowNanos() { return absl::ToUnixNanos(absl::Now()); }

int Main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, args)) {
    std::cerr << "usage: kube_leader_process --namespace NS --identity ID --log FILE "
                 "[--lease-ms N --renew-ms N --retry-ms N]\n";
    return 2;
  }
  // Signals are taken by sigwait() below, never by another thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  Log log(args.log);
  if (!log.ok()) {
    std::cerr << "cannot open " << args.log << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  absl::StatusOr<RestConfig> config = LoadDefaultConfig();
  if (!config.ok()) {
    std::cerr << config.status() << "\n";
    return 1;
  }
  config->qps = 0;
  auto elector_rest = RestClient::Create(*config);
  auto writer_rest = RestClient::Create(*config);
  if (!elector_rest.ok() || !writer_rest.ok()) {
    std::cerr << "cannot create REST clients\n";
    return 1;
  }

  RealClock clock;
  WriteGate gate(&clock);
  std::atomic<int> term{0};
  std::atomic<bool> leading{false};
  LeaderElectionConfig election{.lease_namespace = args.ns,
                                .lease_name = "dovetail-process-test",
                                .identity = args.identity,
                                .lease_duration = absl::Milliseconds(args.lease_ms),
                                .renew_deadline = absl::Milliseconds(args.renew_ms),
                                .retry_period = absl::Milliseconds(args.retry_ms)};
  LeaderElector elector(
      std::move(*elector_rest), election, clock, &gate,
      LeaderCallbacks{.on_started_leading =
                          [&] {
                            const int t = ++term;
                            log.Line(absl::StrCat("lead ", NowNanos(), " ", t));
                            leading.store(true);
                          },
                      .on_stopped_leading =
                          [&] {
                            leading.store(false);
                            log.Line(absl::StrCat("stop ", NowNanos(), " ", term.load()));
                          }});

  std::atomic<bool> done{false};
  std::thread writer([&] {
    Client reader(**writer_rest);
    Client gated(**writer_rest, &gate);
    int64_t seq = 0;
    while (!done.load()) {
      if (!leading.load() || !gate.is_open()) {
        absl::SleepFor(absl::Milliseconds(10));
        continue;
      }
      const int t = term.load();
      absl::StatusOr<std::string> body = reader.Get(resources::kConfigMaps, args.ns, "writes");
      if (!body.ok()) continue;
      nlohmann::json cm = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
      if (cm.is_discarded()) continue;
      cm["data"]["log"] =
          cm["data"].value("log", "") + absl::StrCat(args.identity, "/", t, "/", seq + 1, ";");
      const int64_t before = NowNanos();
      // The gate is checked inside Update; the resourceVersion read above makes a write that was
      // overtaken by another writer a conflict.
      if (gated.Update(resources::kConfigMaps, args.ns, "writes", cm.dump()).ok()) {
        ++seq;
        log.Line(absl::StrCat("write ", before, " ", NowNanos(), " ", t, " ", seq));
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  });

  log.Line(absl::StrCat("start ", NowNanos()));
  elector.Start();
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  done.store(true);
  writer.join();
  elector.Stop();
  log.Line(absl::StrCat("exit ", NowNanos()));
  return 0;
}

}  // namespace
}  // namespace dovetail::kube

int main(int argc, char** argv) { return dovetail::kube::Main(argc, argv); }
