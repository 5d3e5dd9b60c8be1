// Leader election between OS processes (kube_leader_process, see leader_process.cc) against the
// real API server (fixture kube_integration): the leader is frozen with SIGSTOP, killed with
// SIGKILL and stopped with SIGTERM; each time another process must take over in time, and the
// writes the leaders make through their WriteGates must never interleave.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "dovetail/common/test_temp_dir.h"
#include "dovetail/kube/client.h"
#include "gtest/gtest.h"
#include "test/integration/kube/test_env.h"

extern char** environ;

namespace dovetail::kube {
namespace {

using ::dovetail::kube::testing::CreateNamespace;
using ::dovetail::kube::testing::KubeconfigFromEnv;
using ::dovetail::kube::testing::NewRestClient;
using ::dovetail::kube::testing::UniqueName;
using ::dovetail::kube::testing::WaitFor;

constexpr absl::Duration kLease = absl::Seconds(4);
constexpr absl::Duration kRenew = absl::Seconds(3);
constexpr absl::Duration kRetry = absl::Milliseconds(500);

struct Write {
  absl::Time before;  // taken before the gated Update
  absl::Time after;
  int term = 0;
  int64_t seq = 0;
};

// What one process logged (see leader_process.cc).
struct ProcessLog {
  bool started = false;
  bool exited = false;
  std::vector<std::pair<absl::Time, int>> leads;  // (time, term)
  std::vector<std::pair<absl::Time, int>> stops;
  std::vector<Write> writes;
  int WritesInTerm(int term) const {
    int n = 0;
    for (const Write& w : writes) n += w.term == term;
    return n;
  }
};

absl::Time FromNanos(const std::string& s) { return absl::FromUnixNanos(std::stoll(s)); }

// A candidate process; SIGKILLed and reaped on destruction if still running.
class Candidate {
 public:
  Candidate(std::string identity, const std::string& ns, const std::string& dir)
      : identity_(std::move(identity)), log_path_(dir + "/" + identity_ + ".log") {
    std::remove(log_path_.c_str());
    const std::vector<std::string> args = {DOVETAIL_LEADER_PROCESS,
                                           "--namespace",
                                           ns,
                                           "--identity",
                                           identity_,
                                           "--log",
                                           log_path_,
                                           "--lease-ms",
                                           std::to_string(absl::ToInt64Milliseconds(kLease)),
                                           "--renew-ms",
                                           std::to_string(absl::ToInt64Milliseconds(kRenew)),
                                           "--retry-ms",
                                           std::to_string(absl::ToInt64Milliseconds(kRetry))};
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) pid_ = -1;
  }
  ~Candidate() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      Reap();
    }
  }

  bool spawned() const { return pid_ > 0; }
  bool running() const { return pid_ > 0 && !reaped_; }
  void Signal(int sig) { ::kill(pid_, sig); }
  // Waits for the process to exit; returns its wait status.
  int Reap() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return status;
  }

  ProcessLog Read() const {
    ProcessLog out;
    std::ifstream in(log_path_);
    std::string line;
    while (std::getline(in, line)) {
      const std::vector<std::string> f = absl::StrSplit(line, ' ');
      if (f[0] == "start") out.started = true;
      if (f[0] == "exit") out.exited = true;
      if (f[0] == "lead" && f.size() == 3) out.leads.emplace_back(FromNanos(f[1]), std::stoi(f[2]));
      if (f[0] == "stop" && f.size() == 3) out.stops.emplace_back(FromNanos(f[1]), std::stoi(f[2]));
      if (f[0] == "write" && f.size() == 5) {
        out.writes.push_back({FromNanos(f[1]), FromNanos(f[2]), std::stoi(f[3]), std::stoll(f[4])});
      }
    }
    return out;
  }

  const std::string& identity() const { return identity_; }

 private:
  std::string identity_;
  std::string log_path_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

struct Entry {
  std::string identity;
  int term = 0;
  int64_t seq = 0;
};

std::vector<Entry> ServerLog(Client& client, const std::string& ns) {
  std::vector<Entry> out;
  absl::StatusOr<std::string> body = client.Get(resources::kConfigMaps, ns, "writes");
  EXPECT_TRUE(body.ok()) << body.status();
  if (!body.ok()) return out;
  const std::string log = nlohmann::json::parse(*body)["data"].value("log", "");
  for (const std::string& item :
       std::vector<std::string>(absl::StrSplit(log, ';', absl::SkipEmpty()))) {
    const std::vector<std::string> f = absl::StrSplit(item, '/');
    EXPECT_EQ(f.size(), 3u) << item;
    if (f.size() == 3) out.push_back({f[0], std::stoi(f[1]), std::stoll(f[2])});
  }
  return out;
}

TEST(LeaderProcessIntegrationTest, HandsOverBetweenProcessesOnStopKillAndExit) {
  const RestConfig config = KubeconfigFromEnv();
  auto rest = NewRestClient(config);
  Client client(*rest);
  const std::string ns = UniqueName("leader-procs");
  CreateNamespace(client, ns);
  ASSERT_TRUE(
      client
          .Create(resources::kConfigMaps, ns, R"({"metadata":{"name":"writes"},"data":{"log":""}})")
          .ok());
  const std::string dir = dovetail::testing::ProcessTempDir("leader_process");

  // A leads first.
  Candidate a("a", ns, dir);
  ASSERT_TRUE(a.spawned());
  ASSERT_TRUE(WaitFor([&] { return !a.Read().leads.empty(); }, absl::Seconds(30)));
  Candidate b("b", ns, dir);
  ASSERT_TRUE(b.spawned());
  ASSERT_TRUE(WaitFor([&] { return b.Read().started && a.Read().WritesInTerm(1) >= 5; }));
  // B campaigns for a few retry periods without taking the lease from a live leader.
  absl::SleepFor(kRetry * 4);
  EXPECT_TRUE(b.Read().leads.empty()) << "B took the lease from a renewing leader";

  // 1. Freeze A: B takes over within the lease duration plus the renew deadline.
  const absl::Time frozen = absl::Now();
  a.Signal(SIGSTOP);
  ASSERT_TRUE(WaitFor([&] { return !b.Read().leads.empty(); }, absl::Seconds(30)));
  const absl::Time b_lead = b.Read().leads[0].first;
  EXPECT_LE(b_lead - frozen, kLease + kRenew) << "hand-over after SIGSTOP took too long";
  ASSERT_TRUE(WaitFor([&] { return b.Read().WritesInTerm(1) >= 5; }));

  // A wakes up: it must find it lost the lease, stop leading and not write again.
  a.Signal(SIGCONT);
  ASSERT_TRUE(WaitFor([&] { return !a.Read().stops.empty(); }, absl::Seconds(30)));
  absl::SleepFor(kLease);
  EXPECT_EQ(a.Read().leads.size(), 1u) << "A led again while B renewed";

  // 2. Kill B: A takes over again within the lease duration plus the renew deadline.
  const absl::Time killed = absl::Now();
  b.Signal(SIGKILL);
  b.Reap();
  ASSERT_TRUE(WaitFor([&] { return a.Read().leads.size() == 2; }, absl::Seconds(30)));
  EXPECT_LE(a.Read().leads[1].first - killed, kLease + kRenew)
      << "hand-over after SIGKILL took too long";
  ASSERT_TRUE(WaitFor([&] { return a.Read().WritesInTerm(2) >= 5; }));

  // 3. A exits on SIGTERM and releases the lease: C takes over in less than a lease duration.
  Candidate c("c", ns, dir);
  ASSERT_TRUE(c.spawned());
  ASSERT_TRUE(WaitFor([&] { return c.Read().started; }));
  absl::SleepFor(kRetry * 2);  // C has seen the lease held
  EXPECT_TRUE(c.Read().leads.empty());
  const absl::Time terminated = absl::Now();
  a.Signal(SIGTERM);
  const int a_status = a.Reap();
  EXPECT_TRUE(WIFEXITED(a_status) && WEXITSTATUS(a_status) == 0) << "status " << a_status;
  ASSERT_TRUE(WaitFor([&] { return !c.Read().leads.empty(); }, absl::Seconds(30)));
  EXPECT_LT(c.Read().leads[0].first - terminated, kLease)
      << "a released lease was not taken at once";
  ASSERT_TRUE(WaitFor([&] { return c.Read().WritesInTerm(1) >= 3; }));
  c.Signal(SIGTERM);
  c.Reap();

  // The leaderships in order, as the processes logged them.
  const ProcessLog la = a.Read(), lb = b.Read(), lc = c.Read();
  ASSERT_EQ(la.leads.size(), 2u);
  ASSERT_EQ(lb.leads.size(), 1u);
  ASSERT_EQ(lc.leads.size(), 1u);
  struct Term {
    std::string id;
    int term;
    const ProcessLog* log;
    absl::Time lead;
  };
  const std::vector<Term> terms = {{"a", 1, &la, la.leads[0].first},
                                   {"b", 1, &lb, lb.leads[0].first},
                                   {"a", 2, &la, la.leads[1].first},
                                   {"c", 1, &lc, lc.leads[0].first}};
  for (size_t i = 0; i + 1 < terms.size(); ++i) {
    EXPECT_LT(terms[i].lead, terms[i + 1].lead);
    // Every write of a leadership began (passed its gate) before the next leadership began.
    for (const Write& w : terms[i].log->writes) {
      if (w.term != terms[i].term) continue;
      EXPECT_LT(w.before, terms[i + 1].lead)
          << terms[i].id << "/" << w.term << " write " << w.seq << " began "
          << absl::FormatDuration(w.before - terms[i + 1].lead) << " after " << terms[i + 1].id
          << "/" << terms[i + 1].term << " started leading";
    }
  }

  // The server's order of the writes: one contiguous block per leadership, in that order, with
  // every write a process saw succeed present exactly once, in sequence.
  const std::vector<Entry> entries = ServerLog(client, ns);
  std::vector<std::pair<std::string, int>> blocks;
  std::map<std::pair<std::string, int>, std::vector<int64_t>> seqs;
  for (const Entry& e : entries) {
    const std::pair<std::string, int> key(e.identity, e.term);
    if (blocks.empty() || blocks.back() != key) blocks.push_back(key);
    seqs[key].push_back(e.seq);
  }
  const std::vector<std::pair<std::string, int>> expected_blocks = {
      {"a", 1}, {"b", 1}, {"a", 2}, {"c", 1}};
  EXPECT_EQ(blocks, expected_blocks) << "leaders' writes interleaved";
  std::map<std::string, std::vector<int64_t>> by_process;
  for (const auto& [key, list] : seqs) {
    for (int64_t s : list) by_process[key.first].push_back(s);
  }
  for (const auto& [id, log] :
       std::vector<std::pair<std::string, const ProcessLog*>>{{"a", &la}, {"b", &lb}, {"c", &lc}}) {
    std::vector<int64_t> on_server = by_process[id];
    std::sort(on_server.begin(), on_server.end());
    for (size_t i = 0; i < on_server.size(); ++i) {
      EXPECT_EQ(on_server[i], static_cast<int64_t>(i + 1)) << id << ": duplicate or missing write";
    }
    // A killed process may have made one write it could not log any more.
    const size_t logged = log->writes.size();
    EXPECT_GE(on_server.size(), logged) << id << ": a logged write is missing on the server";
    EXPECT_LE(on_server.size(), logged + (id == "b" ? 1 : 0)) << id;
  }
}

}  // namespace
}  // namespace dovetail::kube
