// Per-thread sampling (lookback record --sample, docs/sampling.md): every
// interval of the thread's CPU time (or of wall time) a signal makes the
// thread write one sample of its own counters into its SampleBuffer. The
// control thread polls each sampled thread's scheduler state and writes the
// changes into the same buffer's state log. Both are dumped with the rings
// (FORMAT.md, SAMPLES).
//
// Single writer per log, no locks: the thread's signal handler is the only
// writer of its samples (the signal is not re-entered while its handler
// runs; the first and last samples are taken while the timer is disarmed),
// the control thread the only writer of the state log. Readers use the
// ring's protocol: load pos (acquire), copy, fence, reload pos, drop what
// may have been overwritten.
#pragma once

#include <time.h>

#include <cstdint>
#include <vector>

#include "format/format.h"

namespace lookback::rt {

struct Ring;

inline constexpr uint64_t kSampleCapacity = 4096;  // 4 s at 1 ms (power of two)
inline constexpr uint64_t kStateCapacity = 1024;   // state changes kept per thread

struct SampleBuffer {
  uint64_t pos = 0;        // samples ever written (owner); release-published
  uint64_t state_pos = 0;  // state changes ever written (control thread); release-published
  uint32_t flags = 0;      // format::SampleFlag
  int perf_fd = -1;        // the task-clock event driving this thread's samples, or -1
  timer_t timer{};         // the POSIX timer driving them, when has_timer
  bool has_timer = false;
  int stat_fd = -1;        // control thread: /proc/self/task/TID/stat, kept open
  char last_state = 0;     // control thread: last state logged
  uint64_t map_bytes = 0;
  uint64_t states[kStateCapacity][2];  // (tsc, state letter)
  uint64_t samples[kSampleCapacity][format::kSampleFields];
};

// Reads the sampling configuration once at initialisation; installs the
// signal handler. Says (once) why sampling cannot run, if it cannot.
void InitSampling();
bool SamplingOn();
// On the thread, when its ring is set up / in its exit hook: first sample and
// arm the timer / disarm it and take the last sample.
void StartThreadSampling(Ring* r);
void StopThreadSampling(Ring* r);
// On a sampled thread that is about to write a dump at exit or exec: one more
// sample, so that the thread's samples reach the end of what the dump shows
// (a thread that waited since its last timer sample would otherwise end with
// a stale one, or have only its first).
void SampleThisThreadNow();
// Releases a ring's sample buffer (caller holds ControlMutex(), or is the
// forked child's only thread).
void FreeSampleBuffer(Ring* r);
// In a forked child: the forking thread's timer did not survive the fork.
void SamplingAfterForkChild();
// Control thread: polls the state of every sampled thread (and the process's
// RSS) when due. Returns the CLOCK_MONOTONIC ns of the next poll (0: never).
uint64_t PollThreadStates(uint64_t now_ns);

// Copies a live buffer's samples (fields flattened) and state changes;
// returns the samples overwritten before the copy.
uint64_t SnapshotSamples(const SampleBuffer& s, std::vector<uint64_t>* samples, std::vector<uint64_t>* states);

}  // namespace lookback::rt
