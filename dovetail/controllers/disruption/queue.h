// The orchestration queue of voluntary disruption (docs/disruption.md, "The orchestration
// queue"): carries out the Commands the DisruptionController decided, replacements first.
//
// StartCommand (synchronous, on the caller's thread):
//   1. refuses a command one of whose candidates is already held by the queue (AlreadyExists);
//   2. taints each candidate Node karpenter.sh/disrupted:NoSchedule and sets the candidate
//      NodeClaim's condition DisruptionReason=True (reason Empty | Underutilized | Drifted), and
//      (best effort) annotates it dovetail.sh/decision-id with Command::decision_id. For a
//      pure delete a candidate that cannot be tainted is dropped from the command (its writes are
//      undone); for a replace any failure aborts the command;
//   3. creates the replacement NodeClaims (launch::BuildNodeClaim with the candidate's
//      NodePool, annotated with the decision ID) and puts each into the cluster state at once, so
//      provisioning counts it as capacity; a failed create deletes the replacements already
//      created, undoes step 2 and aborts;
//   4. only then marks the candidates for deletion in the cluster state (provisioning now plans
//      room for their pods, which the replacements provide) and nominates the replacements;
//   5. queues the command with a deadline of now + CommandTimeout(queued commands).
// The worker (Start/Stop, or Reconcile() driven by tests) looks at every queued command each
// `poll`; commands wait in parallel. Decide() says what to do: when every replacement NodeClaim is
// Initialized, the candidate NodeClaims are deleted (event DisruptionTerminating on the Node and
// NodeClaim; karpenter_nodeclaims_disrupted_total) and the termination controller drains them;
// while replacements launch, DisruptionLaunching then DisruptionWaitingReadiness events go to the
// candidate NodeClaims; a replacement that is deleted (confirmed with the API server), or the
// deadline passing, rolls the command back: untaint, clear the condition, unmark
// (karpenter_voluntary_disruption_queue_failures_total). Rollback writes that fail are retried on
// the next poll; the candidates stay held until they succeed.
//
// Involuntary commands (CommandOptions::involuntary; DisruptionController::Replace, replacer.h)
// share the steps with these differences: no DisruptionReason condition (upstream's interruption
// sets none); with cordon=false neither the taint nor the deletion mark until the command
// terminates (mark only: the termination controller taints) or is upgraded to cordon; they never
// roll back: DecideInvoluntary terminates when every replacement is Initialized and
// delete_when_ready, when a replacement is gone and delete_when_ready (provisioning then takes the
// pods), or at the deadline, and otherwise waits; while they wait their replacements are
// nominated again every poll, so that disruption does not remove them while they sit empty.
// Their metrics: karpenter_nodeclaims_created_total and karpenter_nodeclaims_disrupted_total with
// reason = lowercased CommandOptions::reason, never karpenter_voluntary_disruption_*.
// MakeInvoluntary upgrades a queued command (voluntary or not) in place.
//
// The queue's writes go through QueueWriter (KubeQueueWriter in production) so the bookkeeping is
// unit-tested with a fake. Thread-safe: StartCommand, MakeInvoluntary, Find, Held, size and stats
// from any thread; Reconcile, MakeInvoluntary and Find are serialised with each other (Find may
// wait for a Reconcile in progress).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "dovetail/apis/v1/nodeclaim.h"
#include "dovetail/apis/v1/nodepool.h"
#include "dovetail/common/clock.h"
#include "dovetail/common/work_in_progress.h"
#include "dovetail/controllers/disruption/disruption.h"
#include "dovetail/kube/event_recorder.h"
#include "dovetail/metrics/registry.h"
#include "dovetail/state/cluster.h"

namespace dovetail::controllers::disruption {

// Event reasons of the queue, as upstream's orchestration queue names them.
inline constexpr std::string_view kEventDisruptionLaunching = "DisruptionLaunching";
inline constexpr std::string_view kEventDisruptionWaitingReadiness = "DisruptionWaitingReadiness";
inline constexpr std::string_view kEventDisruptionTerminating = "DisruptionTerminating";

struct QueueOptions {
  absl::Duration poll = absl::Seconds(1);  // how often queued commands are looked at
  // Deadline of a command: clamp(per_command × queued commands, min_timeout, max_timeout).
  absl::Duration timeout_per_command = absl::Milliseconds(80);
  absl::Duration min_timeout = absl::Minutes(10);
  absl::Duration max_timeout = absl::Hours(1);
  // How long the replacements stay nominated (disruption does not pick them meanwhile).
  absl::Duration nomination = absl::Seconds(20);
  bool min_values_strict = true;  // MIN_VALUES_POLICY for the replacement NodeClaims
};

// clamp(timeout_per_command × queued_commands, min_timeout, max_timeout).
absl::Duration CommandTimeout(size_t queued_commands, const QueueOptions& options);

// "Underutilized" | "Empty" | "Drifted": the DisruptionReason condition's reason.
std::string_view ReasonName(apis::v1::DisruptionReason reason);
// The metrics' lowercase reason label: "underutilized" | "empty" | "drifted".
std::string ReasonLabel(apis::v1::DisruptionReason reason);

// What the queue knows of one replacement NodeClaim.
struct ReplacementState {
  std::string name;
  bool exists = false;    // still in the cluster state (or, when not, on the API server)
  bool deleting = false;  // has a deletion timestamp
  bool launched = false;  // has a provider id
  bool initialized = false;
};

// kWaitDeadline: an involuntary command whose replacements are ready (or gone) waits for its
// deadline (delete_when_ready=false).
enum class QueueAction { kWaitLaunch, kWaitReadiness, kTerminate, kRollback, kWaitDeadline };
struct QueueDecision {
  QueueAction action = QueueAction::kWaitLaunch;
  std::string reason;  // for kRollback (and kTerminate of involuntary commands): why
};

// A replacement gone or deleting ⇒ rollback; every replacement initialized ⇒ terminate (also
// past the deadline); past the deadline ⇒ rollback; some not launched ⇒ wait launch; else wait
// readiness. A command without replacements terminates at once.
QueueDecision Decide(std::span<const ReplacementState> replacements, absl::Time now,
                     absl::Time deadline);

// Involuntary commands never roll back: past the deadline ⇒ terminate; a replacement gone or
// deleting ⇒ terminate when delete_when_ready, else wait for the deadline; every replacement
// initialized ⇒ terminate when delete_when_ready, else wait for the deadline; some not launched ⇒
// wait launch; else wait readiness.
QueueDecision DecideInvoluntary(std::span<const ReplacementState> replacements, absl::Time now,
                                absl::Time deadline, bool delete_when_ready);

// Per-command options of Queue::StartCommand. A voluntary command (involuntary=false) reads only
// `deadline`; the other fields shape involuntary commands (see above).
struct CommandOptions {
  bool involuntary = false;
  // Default: now + CommandTimeout(queued commands).
  std::optional<absl::Time> deadline;
  // Terminate as soon as every replacement is Initialized (else only at the deadline).
  bool delete_when_ready = true;
  // Taint karpenter.sh/disrupted:NoSchedule and mark for deletion at once.
  bool cordon = true;
  // Events, logs, the command id's prefix and (lowercased) the metrics' reason label, e.g.
  // "SpotInterrupted".
  std::string reason;
  // The metrics' reason label when not empty (else `reason` lowercased).
  std::string metric_reason;
};

// The writes the queue (and the controller's crash recovery) make. Implementations are idempotent:
// NotFound on undo operations is success.
class QueueWriter {
 public:
  virtual ~QueueWriter() = default;
  // Adds karpenter.sh/disrupted:NoSchedule to the Node.
  virtual absl::Status Taint(const std::string& node) = 0;
  // Removes every karpenter.sh/disrupted taint from the Node.
  virtual absl::Status Untaint(const std::string& node) = 0;
  // Sets DisruptionReason=True(reason) on the NodeClaim's status.
  virtual absl::Status SetDisruptionReason(const std::string& node_claim,
                                           std::string_view reason) = 0;
  // Removes the DisruptionReason condition.
  virtual absl::Status ClearDisruptionReason(const std::string& node_claim) = 0;
  // Returns the stored object.
  virtual absl::StatusOr<apis::v1::NodeClaim> CreateNodeClaim(const apis::v1::NodeClaim& claim) = 0;
  // NotFound is success; `uid` (when not empty) is a precondition.
  virtual absl::Status DeleteNodeClaim(const std::string& name, const std::string& uid) = 0;
  // Whether the NodeClaim exists and is not being deleted, asked of the API server.
  virtual absl::StatusOr<bool> NodeClaimAlive(const std::string& name) = 0;
  // Sets annotation key=value on the NodeClaim (the decision ID). The default does nothing
  // (writers that do not keep annotations).
  virtual absl::Status AnnotateNodeClaim(const std::string& node_claim, std::string_view key,
                                         std::string_view value) {
    (void)node_claim, (void)key, (void)value;
    return absl::OkStatus();
  }
  // Best effort (rate-limited events are dropped).
  virtual void Event(const kube::ObjectReference& regarding, std::string_view type,
                     std::string_view reason, std::string_view note) = 0;
};

// QueueWriter over kube::Client: read-modify-write merge patches with resourceVersion
// preconditions, retried on conflict.
class KubeQueueWriter final : public QueueWriter {
 public:
  KubeQueueWriter(kube::Client& client, kube::EventRecorder& events, const Clock& clock)
      : client_(client), events_(events), clock_(clock) {}
  absl::Status Taint(const std::string& node) override;
  absl::Status Untaint(const std::string& node) override;
  absl::Status SetDisruptionReason(const std::string& node_claim, std::string_view reason) override;
  absl::Status ClearDisruptionReason(const std::string& node_claim) override;
  absl::StatusOr<apis::v1::NodeClaim> CreateNodeClaim(const apis::v1::NodeClaim& claim) override;
  absl::Status DeleteNodeClaim(const std::string& name, const std::string& uid) override;
  absl::StatusOr<bool> NodeClaimAlive(const std::string& name) override;
  absl::Status AnnotateNodeClaim(const std::string& node_claim, std::string_view key,
                                 std::string_view value) override;
  void Event(const kube::ObjectReference& regarding, std::string_view type, std::string_view reason,
             std::string_view note) override;

 private:
  kube::Client& client_;
  kube::EventRecorder& events_;
  const Clock& clock_;
};

kube::ObjectReference NodeRef(const state::StateNode& node);
kube::ObjectReference NodeClaimRef(const state::StateNode& node);

// Crash recovery (docs/disruption.md): removes every karpenter.sh/disrupted taint and
// DisruptionReason condition from the StateNodes whose key is not in `held`, that are neither
// being deleted nor marked for deletion and whose NodeClaim records no involuntary command
// (involuntary_record.h: its controller resumes it) (a process killed between tainting and
// deleting leaves them behind). Returns how many taints and conditions were removed; errors: the
// first write that failed (the others are still tried).
absl::StatusOr<int> RemoveStaleDisruptionMarks(const state::Cluster& cluster,
                                               const absl::flat_hash_set<std::string>& held,
                                               QueueWriter& writer);

// What Queue::Find reports of a queued command.
struct CommandInfo {
  std::string id;
  std::string decision_id;  // Command::decision_id
  bool involuntary = false;
  bool delete_when_ready = true;
  bool cordon = true;
  absl::Time deadline;
  std::string reason;                     // "Underutilized", "SpotInterrupted", ...
  std::vector<std::string> replacements;  // NodeClaim names
};

struct QueueStats {
  int64_t started = 0;
  int64_t rejected = 0;  // StartCommand errors (held candidates, writes that failed)
  int64_t terminated = 0;
  int64_t rolled_back = 0;
};

class Queue {
 public:
  // Everything passed must outlive the queue; `metrics` may be null.
  Queue(state::Cluster& cluster, const Clock& clock, metrics::Registry* metrics,
        QueueWriter& writer, QueueOptions options = {});
  ~Queue();
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  void Start();  // the worker thread
  void Stop();   // idempotent; queued commands stay queued

  // Steps 1-5 above. `node_pools` by name (ClusterView::node_pools): the replacements' pools.
  // Returns the command's id. Errors: AlreadyExists (a candidate is held), InvalidArgument (no
  // candidates, a replacement's NodePool unknown), else the failed write's error after undoing.
  absl::StatusOr<std::string> StartCommand(
      const Command& command,
      const absl::flat_hash_map<std::string, apis::v1::NodePool>& node_pools,
      const CommandOptions& options = {});

  // Makes the queued command that holds `node` (a StateNode key or a NodeClaim name) involuntary:
  // it never rolls back (one rolling back is resumed), its deadline becomes the earlier of the
  // two, delete_when_ready and cordon are OR-ed with the command's (a voluntary command counts as
  // delete_when_ready and cordon), and its reason becomes options.reason when that is not empty.
  // When cordon turns true the candidates are tainted and marked for deletion now (a failed taint
  // is retried every poll). Returns the command's id. Errors: NotFound when no queued command
  // holds the node.
  absl::StatusOr<std::string> MakeInvoluntary(std::string_view node, const CommandOptions& options);

  // One look at every queued command (the worker calls it every `poll`).
  void Reconcile();
  // When the worker's Reconcile in flight began (common/work_in_progress.h); nullopt between
  // them.
  std::optional<absl::Time> OldestWorkStart() const { return work_.OldestStart(); }

  // StateNode keys of the candidates the queue holds, voluntary and involuntary alike
  // (ClusterView::queued, and RemoveStaleDisruptionMarks's `held`).
  absl::flat_hash_set<std::string> Held() const;
  // The queued command holding `node` (StateNode key or NodeClaim name); nullopt when none does.
  std::optional<CommandInfo> Find(std::string_view node) const;
  size_t size() const;
  QueueStats stats() const;

 private:
  struct Entry {
    std::string id;
    std::string decision_id;  // Command::decision_id
    Method method;
    apis::v1::DisruptionReason reason;
    std::vector<state::StateNode> candidates;
    std::vector<std::string> replacements;  // NodeClaim names
    std::string decision;                   // "delete" | "replace"
    absl::Time deadline;
    QueueAction last_event = QueueAction::kTerminate;  // none sent yet
    bool involuntary = false;
    bool delete_when_ready = true;
    bool cordon = true;
    bool cordoned = false;     // tainted (every candidate) and marked for deletion
    std::string reason_name;   // events and logs: "Underutilized", "SpotInterrupted", ...
    std::string reason_label;  // metrics: lowercased reason_name
    bool rolling_back = false;
    std::string rollback_reason;
    // Undo steps still to do (rollback retries them).
    absl::flat_hash_set<std::string> tainted;      // node names
    absl::flat_hash_set<std::string> conditioned;  // NodeClaim names
  };

  // Undoes what is recorded in `entry`; false while some write still fails.
  bool Undo(Entry& entry);

  // The steps of StartCommand (see the comment at the top).
  // The entry of `command`: method, reason, decision and the involuntary options; no id yet.
  static std::shared_ptr<Entry> NewEntry(const Command& command, const CommandOptions& options);
  // Step 1: holds `keys` and gives the entry its id. Errors: AlreadyExists (counted rejected)
  // when one is already held.
  absl::Status Reserve(Entry& entry, const std::vector<std::string>& keys);
  void Release(const std::vector<std::string>& keys);
  // Undoes step 2 (best effort), releases `keys`, counts the command rejected; returns `status`.
  absl::Status Abort(Entry& entry, const std::vector<std::string>& keys,
                     const absl::Status& status);
  // Step 2: a pure delete drops (and releases, and removes from `keys`) each candidate it cannot
  // taint; a replace stops at the first failed write and returns its error.
  absl::Status TaintCandidates(const Command& command, Entry& entry,
                               std::vector<std::string>& keys);
  // Step 3; a failed create deletes the replacements already created and returns its error.
  absl::Status CreateReplacements(
      const Command& command,
      const absl::flat_hash_map<std::string, apis::v1::NodePool>& node_pools, Entry& entry);
  // Step 4: marks `keys` for deletion (with cordon), nominates the replacements and the
  // command's destinations.
  void MarkAndNominate(const Command& command, Entry& entry, const std::vector<std::string>& keys);
  // Step 5: the deadline, the entry queued and counted started.
  void Enqueue(const std::shared_ptr<Entry>& entry, const CommandOptions& options);

  // The steps of Reconcile for one command not rolling back: the replacements' states, cordon
  // (involuntary), Decide and its action.
  void Advance(Entry& entry, absl::Time now);
  // What the cluster state (else the API server) says of each replacement.
  std::vector<ReplacementState> ReplacementStates(const Entry& entry);
  // Nominates the replacements that exist and are not being deleted.
  void NominateReplacements(std::span<const ReplacementState> replacements);
  // kWaitDeadline, kWaitLaunch, kWaitReadiness: a log line or events, once per action.
  void AnnounceWait(Entry& entry, QueueAction action);
  // Deletes the candidate NodeClaims (marking `keys` first when not cordoned); once all are
  // deleted: events, metrics, and the command finishes.
  void Terminate(Entry& entry, const QueueDecision& decision, const std::vector<std::string>& keys);
  // Unmarks `keys` and sets the entry rolling back (Undo then runs every look until it is done).
  void BeginRollback(Entry& entry, const QueueDecision& decision,
                     const std::vector<std::string>& keys);
  // Taints the candidates not yet tainted and marks them all for deletion; sets entry.cordoned
  // when every taint succeeded.
  void Cordon(Entry& entry);
  // The entry whose candidates include `node` (key or NodeClaim name); null when none.
  std::shared_ptr<Entry> FindLocked(std::string_view node) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finish(const std::string& id);
  void Loop();

  state::Cluster& cluster_;
  const Clock& clock_;
  QueueWriter& writer_;
  const QueueOptions options_;
  metrics::Counter* queue_failures_ = nullptr;
  metrics::Counter* disrupted_ = nullptr;
  metrics::Counter* created_ = nullptr;

  // Serialises Reconcile, MakeInvoluntary and Find: entries change under it.
  mutable absl::Mutex reconcile_mu_;
  mutable absl::Mutex mu_;
  // Entries are shared with Reconcile, which works on them outside mu_ under reconcile_mu_.
  absl::flat_hash_map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> held_ ABSL_GUARDED_BY(mu_);
  QueueStats stats_ ABSL_GUARDED_BY(mu_);
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;

  std::atomic<bool> running_{false};
  WorkInProgress work_;  // the worker's Reconcile in flight
  std::unique_ptr<absl::Notification> stop_;
  std::thread thread_;
};

}  // namespace dovetail::controllers::disruption
