// EventQueue: an Engine listener's events handed to a waiting loop in order (soak, picture bench):
// the listener pushes on the worker thread, the loop pops with a bounded wait.
#pragma once
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "engine/events.h"

namespace adtree::engine {

class EventQueue {
 public:
  void push(Event e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      q_.push_back(std::move(e));
    }
    cv_.notify_one();
  }
  // The next event, or false after `timeout_s` without one.
  bool pop(Event& out, double timeout_s) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                      [&] { return !q_.empty(); })) {
      return false;
    }
    out = std::move(q_.front());
    q_.pop_front();
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> q_;
};

}  // namespace adtree::engine
