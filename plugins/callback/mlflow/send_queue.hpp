#pragma once
// The mlflow callback's background sender: jobs (one REST call or a few)
// queued by the training thread, which never waits on the network, and sent
// in order by one thread of the queue's own. While the tracking server is
// unreachable the front job is tried again with a growing pause (at most
// 5 s) and the rest wait, bounded: past `max_jobs` the oldest droppable job
// goes. One warning when the server is first unreachable, one when it is back.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace skein_mlflow {

// What one try of a job came to.
struct Attempt {
  enum Kind {
    done,          // sent (or nothing to send)
    unreachable,   // no answer (refused, timed out): tried again while the queue runs
    server_error,  // a 5xx answer: tried again a few times, then given up
    rejected,      // a 4xx answer, or a request that cannot succeed: given up at once
  };
  Kind kind = done;
  std::string detail;  // why, for the warning
};

struct Job {
  std::string what;               // for warnings: "metrics of epoch 3"
  std::function<Attempt()> send;  // runs on the queue's thread
  bool droppable = true;          // may go when the queue is full (metrics); not the run's creation
  std::size_t items = 1;          // metrics, params or files in it, for the count of what was lost
};

class SendQueue {
 public:
  // `server`: named in warnings. `warn`: one line (skein::warn), called from
  // either thread. `abort`: set when the queue stops, so the client's request
  // in flight ends at once.
  SendQueue(std::string server, std::size_t max_jobs, std::function<void(const std::string&)> warn);
  ~SendQueue();  // stop()
  SendQueue(const SendQueue&) = delete;
  SendQueue& operator=(const SendQueue&) = delete;

  // Queues a job; never waits for the network. Ignored (counted as lost)
  // after stop().
  void push(Job job);
  // Waits until every queued job is sent or given up, at most `timeout_s`,
  // and no longer than one more try when the server is unreachable (a dead
  // server costs one refused connection, not the whole timeout). Returns
  // whether nothing is left.
  bool drain(double timeout_s);
  // Ends the thread now; what is still queued is lost, and one warning says
  // how much was lost since the last such warning (when any). A request in
  // flight is aborted. Later calls only report what push() lost since.
  void stop();
  // What was never sent (dropped, given up or left at stop): jobs and items.
  std::size_t lost_jobs() const;
  const std::atomic<bool>& aborting() const { return abort_; }

 private:
  void loop();
  void note_outcome(const Job& job, const Attempt& attempt);  // under mutex_

  std::string server_;
  std::size_t max_jobs_;
  std::function<void(const std::string&)> warn_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> jobs_;
  bool busy_ = false;  // the thread holds a job
  bool stopping_ = false;
  bool unreachable_ = false;   // the last try found no server
  long failed_tries_ = 0;      // tries that found no server, ever
  bool hurry_ = false;         // drain(): try again now, no pause
  bool warned_full_ = false;   // one warning per outage for dropped jobs
  int rejections_warned_ = 0;  // at most a few warnings of rejected requests
  std::size_t lost_jobs_ = 0, lost_items_ = 0;
  std::size_t reported_jobs_ = 0, reported_items_ = 0;  // said by stop()'s warning
  std::atomic<bool> abort_{false};
  std::thread thread_;
};

}  // namespace skein_mlflow
