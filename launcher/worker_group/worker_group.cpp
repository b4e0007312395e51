#include "worker_group.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iostream>
#include <algorithm>
#include <map>
#include <fstream>
#include <stdexcept>

#include "skein/host/exit_codes.hpp"
#include "skein/host/failure_report.hpp"
#include "skein/detail/json.hpp"

extern char** environ;

namespace skein::launcher {

namespace {

volatile sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

struct Stream {
  int fd = -1;
  int rank = 0;
  bool is_err = false;
  std::string pending;  // bytes after the last newline
};

struct Worker {
  pid_t pid = 0;
  int rank = 0;
  bool running = true;
  std::string last_error_line;
  std::string error_file;
  int status = 0;
};

// The failure a worker reported; time_us is -1 when it reported none.
struct Report {
  long long time_us = -1;  // since the epoch
  std::string message;
  int exit_code = 1;       // the code the worker was exiting with
};

Report reported_failure(const Worker& w) {
  std::ifstream in(w.error_file);
  if (w.error_file.empty() || !in) return {};
  try {
    auto j = nlohmann::json::parse(in);
    return {j.at("time_us").get<long long>(), j.at("message").get<std::string>(),
            j.value("exit_code", exit_code::kFailure)};
  } catch (const std::exception&) {
    return {};
  }
}

std::string now_string() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// The environment for a worker: ours, with the spec's variables replacing ours.
std::vector<std::string> build_env(const WorkerSpec& spec) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : spec.env) vars[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : vars) out.push_back(k + "=" + v);
  return out;
}

pid_t spawn(const WorkerSpec& spec, int out_fd, int err_fd) {
  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls (the launcher may have threads).
  std::vector<std::string> env = build_env(spec);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t launcher = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot start a worker: ") + std::strerror(errno));
  if (pid == 0) {
    // A worker must not outlive its launcher (killed with -9, say): it would
    // hold its peers in collectives until they time out.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(1);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execve(argv[0], argv.data(), envp.data());
    const char msg[] = "skein: error: cannot execute the worker program\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  return pid;
}

void emit(const Stream& s, const std::string& line, bool quiet, std::vector<Worker>& workers) {
  if (s.is_err && !line.empty()) workers[s.rank].last_error_line = line;
  if (s.rank != 0 && quiet && !s.is_err) return;
  std::ostream& out = s.is_err ? std::cerr : std::cout;
  if (s.rank != 0) out << "[rank " << s.rank << "] ";
  out << line << '\n';
  out.flush();
}

void catch_interrupts() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// The root cause among the failed workers: a worker of the first failures
// killed by a signal (it could report nothing), else the earliest reported
// failure of any rank (peers of a failed worker fail after it), else the
// first one reaped. Fills the failure fields of `result`.
void find_root_cause(const std::vector<Worker*>& first_failures, std::vector<Worker>& workers,
                     GroupResult& result) {
  Worker* root = first_failures.front();
  bool by_signal = false;
  for (Worker* w : first_failures) {
    if (WIFSIGNALED(w->status) && !by_signal) {
      root = w;
      by_signal = true;
    }
  }
  Report report;
  if (!by_signal) {
    for (auto& w : workers) {
      if (w.pid == 0 || (WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0)) continue;
      Report r = reported_failure(w);
      if (r.time_us >= 0 && (report.time_us < 0 || r.time_us < report.time_us)) {
        root = &w;
        report = r;
      }
    }
  } else {
    report = reported_failure(*root);
  }
  result.rank = root->rank;
  result.pid = root->pid;
  result.exit_code = WIFEXITED(root->status) ? WEXITSTATUS(root->status) : 0;
  result.signal = WIFSIGNALED(root->status) ? WTERMSIG(root->status) : 0;
  if (!by_signal && report.time_us >= 0) {
    // It reported first, then our SIGTERM may have ended it before it
    // could exit: its failure, and the code it was exiting with, stand.
    result.exit_code = report.exit_code;
    result.signal = 0;
  }
  // As the worker would print it (a worker of another build, or a line that
  // is not its report, may still carry Gloo's advice).
  result.last_error_line = core::failure_line(report.time_us >= 0 ? report.message : root->last_error_line);
}

// One node's running workers: their output streams, their exits, and the
// stop (SIGTERM, then SIGKILL after the grace period) once one fails.
class Group {
 public:
  Group(const std::vector<WorkerSpec>& specs, const GroupOptions& options) : options_(options) {
    int max_rank = 0;
    for (const auto& s : specs) max_rank = std::max(max_rank, s.rank);
    workers_.resize(static_cast<std::size_t>(max_rank) + 1);
    for (const auto& spec : specs) start(spec);
  }

  GroupResult run() {
    while (running_ > 0 || !streams_.empty()) {
      relay_output();
      reap_exited();
      if (g_interrupted && !stopping_) {
        result_.interrupted = true;
        result_.when = now_string();
        stop_all();
      }
      if (stopping_ && std::chrono::steady_clock::now() > kill_deadline_) {
        for (pid_t p : pids_) kill(p, SIGKILL);
        kill_deadline_ = std::chrono::steady_clock::time_point::max();
      }
    }
    if (result_.failed) find_root_cause(first_failures_, workers_, result_);
    return result_;
  }

 private:
  void start(const WorkerSpec& spec) {
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
      throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
    pid_t pid = spawn(spec, out[1], err[1]);
    close(out[1]);
    close(err[1]);
    if (static_cast<std::size_t>(spec.rank) >= workers_.size()) workers_.resize(static_cast<std::size_t>(spec.rank) + 1);
    Worker& w = workers_[static_cast<std::size_t>(spec.rank)];
    w.pid = pid;
    w.rank = spec.rank;
    w.error_file = spec.error_file;
    pids_.push_back(pid);
    streams_.push_back({out[0], spec.rank, false, ""});
    streams_.push_back({err[0], spec.rank, true, ""});
    ++running_;
  }

  // Relays whole lines from the workers' pipes; the poll timeout only bounds
  // how soon exits and signals are noticed.
  void relay_output() {
    std::vector<pollfd> fds;
    for (const auto& s : streams_) fds.push_back({s.fd, POLLIN, 0});
    int ready = fds.empty() ? 0 : poll(fds.data(), fds.size(), 100);
    if (fds.empty()) usleep(50 * 1000);
    if (ready <= 0) return;
    for (std::size_t i = fds.size(); i-- > 0;) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Stream& stream = streams_[i];
      char buf[8192];
      ssize_t n = read(stream.fd, buf, sizeof buf);
      if (n > 0) {
        stream.pending.append(buf, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = stream.pending.find('\n')) != std::string::npos) {
          emit(stream, stream.pending.substr(0, nl), options_.quiet_ranks, workers_);
          stream.pending.erase(0, nl + 1);
        }
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (!stream.pending.empty()) emit(stream, stream.pending, options_.quiet_ranks, workers_);
        close(stream.fd);
        streams_.erase(streams_.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }

  // Collects exited workers; the first failures stop the others.
  void reap_exited() {
    int status = 0;
    pid_t pid;
    std::vector<Worker*> failed_now;
    std::vector<WorkerSpec> replacements;
    while (running_ > 0 && (pid = waitpid(-1, &status, WNOHANG)) > 0) {
      --running_;
      for (auto& w : workers_) {
        if (w.pid != pid) continue;
        w.running = false;
        w.status = status;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
        if (WIFSIGNALED(status) && options_.on_lost && !stopping_) {
          AfterLoss after = options_.on_lost({w.rank, w.pid, WTERMSIG(status), w.error_file});
          if (after.spec) replacements.push_back(std::move(*after.spec));
          if (after.go_on || after.spec) continue;
        }
        failed_now.push_back(&w);
      }
      pids_.erase(std::remove(pids_.begin(), pids_.end(), pid), pids_.end());
    }
    if (!failed_now.empty() && !result_.failed && !stopping_) {
      result_.failed = true;
      result_.when = now_string();
      first_failures_ = failed_now;
      stop_all();
    }
    if (!stopping_)
      for (const auto& spec : replacements) start(spec);  // after the loop: start() may move workers_
  }

  void stop_all() {
    if (stopping_) return;
    stopping_ = true;
    for (pid_t pid : pids_) {
      kill(pid, SIGTERM);
      kill(pid, SIGCONT);  // a stopped worker gets the SIGTERM too
    }
    kill_deadline_ = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<long>(options_.grace_s * 1000));
  }

  const GroupOptions& options_;
  std::vector<Worker> workers_;
  std::vector<Stream> streams_;
  std::vector<pid_t> pids_;
  int running_ = 0;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point kill_deadline_ = std::chrono::steady_clock::time_point::max();
  GroupResult result_;
  std::vector<Worker*> first_failures_;
};

}  // namespace

GroupResult run_workers(const std::vector<WorkerSpec>& specs, const GroupOptions& options) {
  catch_interrupts();
  Group group(specs, options);
  return group.run();
}

}  // namespace skein::launcher
