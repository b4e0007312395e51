#include "send_queue.hpp"

#include <algorithm>
#include <chrono>
#include <exception>

namespace skein_mlflow {
namespace {

constexpr double kFirstPause_s = 0.2, kLongestPause_s = 5;
constexpr int kServerErrorTries = 3;   // a 5xx answer: tries of one job
constexpr int kRejectionWarnings = 3;  // then one line saying more are not shown

std::chrono::duration<double> seconds(double s) { return std::chrono::duration<double>(s); }

}  // namespace

SendQueue::SendQueue(std::string server, std::size_t max_jobs, std::function<void(const std::string&)> warn)
    : server_(std::move(server)), max_jobs_(std::max<std::size_t>(1, max_jobs)), warn_(std::move(warn)) {
  thread_ = std::thread([this] { loop(); });
}

SendQueue::~SendQueue() { stop(); }

void SendQueue::push(Job job) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_) {
    ++lost_jobs_, lost_items_ += job.items;
    return;
  }
  if (jobs_.size() >= max_jobs_) {
    const auto oldest = std::find_if(jobs_.begin(), jobs_.end(), [](const Job& j) { return j.droppable; });
    if (oldest != jobs_.end()) {
      if (!warned_full_)
        warn_("mlflow: " + std::to_string(max_jobs_) + " requests wait for " + server_ +
              " (max_queue): dropping the oldest metrics (" + oldest->what + ") and more as needed");
      warned_full_ = true;
      ++lost_jobs_, lost_items_ += oldest->items;
      jobs_.erase(oldest);
    }
  }
  jobs_.push_back(std::move(job));
  changed_.notify_all();
}

void SendQueue::note_outcome(const Job& job, const Attempt& attempt) {
  if (attempt.kind == Attempt::done) return;
  ++lost_jobs_, lost_items_ += job.items;
  if (rejections_warned_ < kRejectionWarnings)
    warn_("mlflow: " + server_ + " did not take " + job.what + ": " + attempt.detail);
  else if (rejections_warned_ == kRejectionWarnings)
    warn_("mlflow: further requests " + server_ + " did not take are not shown");
  ++rejections_warned_;
}

void SendQueue::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  double pause_s = kFirstPause_s;
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    busy_ = true;
    int server_errors = 0;
    while (true) {
      lock.unlock();
      Attempt attempt;
      try {
        attempt = job.send();
      } catch (const std::exception& e) {
        attempt = {Attempt::rejected, e.what()};
      }
      lock.lock();
      if (stopping_) {
        if (attempt.kind != Attempt::done) ++lost_jobs_, lost_items_ += job.items;
        busy_ = false;
        changed_.notify_all();
        return;
      }
      if (attempt.kind == Attempt::unreachable) {
        ++failed_tries_;
        if (!unreachable_)
          warn_("mlflow: tracking server " + server_ + " unreachable (" + attempt.detail +
                "); training goes on, and what it logs waits to be sent when the server is back");
        unreachable_ = true;
        changed_.notify_all();  // drain() stops waiting on a dead server
        if (!hurry_) changed_.wait_for(lock, seconds(pause_s), [&] { return stopping_ || hurry_; });
        hurry_ = false;
        pause_s = std::min(pause_s * 2, kLongestPause_s);
        if (stopping_) {
          ++lost_jobs_, lost_items_ += job.items;
          busy_ = false;
          changed_.notify_all();
          return;
        }
        continue;
      }
      pause_s = kFirstPause_s;
      if (unreachable_) {
        warn_("mlflow: tracking server " + server_ + " reachable again; sending the " +
              std::to_string(jobs_.size() + 1) + " requests that waited");
        unreachable_ = false;
        warned_full_ = false;
      }
      if (attempt.kind == Attempt::server_error && ++server_errors < kServerErrorTries) {
        changed_.wait_for(lock, seconds(kFirstPause_s * server_errors), [&] { return stopping_; });
        if (!stopping_) continue;
      }
      note_outcome(job, attempt);
      break;
    }
    busy_ = false;
    changed_.notify_all();
  }
}

bool SendQueue::drain(double timeout_s) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(seconds(timeout_s));
  const long failed_before = failed_tries_;
  hurry_ = true;  // a job pausing after a failed try is tried again now
  changed_.notify_all();
  changed_.wait_until(lock, deadline,
                      [&] { return stopping_ || (jobs_.empty() && !busy_) || failed_tries_ > failed_before; });
  hurry_ = false;
  return jobs_.empty() && !busy_;
}

void SendQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      stopping_ = true;
      abort_ = true;
      for (const auto& job : jobs_) ++lost_jobs_, lost_items_ += job.items;
      jobs_.clear();
      changed_.notify_all();
    }
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  if (lost_jobs_ > reported_jobs_) {
    const std::size_t jobs = lost_jobs_ - reported_jobs_;
    warn_("mlflow: " + std::to_string(jobs) + (jobs == 1 ? " request (" : " requests (") +
          std::to_string(lost_items_ - reported_items_) + " metrics, params, tags or files) not sent to " + server_ +
          "; given up");
  }
  reported_jobs_ = lost_jobs_, reported_items_ = lost_items_;
}

std::size_t SendQueue::lost_jobs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lost_jobs_;
}

}  // namespace skein_mlflow
