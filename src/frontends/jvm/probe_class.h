// The class the inlined probes call: java.lang.LookbackProbe
// (src/frontends/jvm/java/probe/java/lang/LookbackProbe.java), compiled by
// javac at build time as part of java.base and embedded here. The agent
// defines it into java.base (boot loader, package java.lang) once the VM has
// started, so that every class, java.base's included, can call it:
//
//   public static boolean on, direct;           // set by the agent
//   public static void enter(int id) / exit(int id)
//       tracing off: a static load and a branch; on: the untimed record of a
//       dense fast-clock ring written with plain stores into the ring, or a
//       call of enterNative/exitNative (natives.cc), the recorder's hot path
//   public static native String renaming(Thread t, String name);
//       Thread.setName's first call (the rename hook, rewriter.h)
//
// Its natives layout/bind (natives.cc) hand it the ring's layout and each
// thread's ring.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lookback::jvm {

inline constexpr const char* kProbeClass = "java/lang/LookbackProbe";
inline constexpr const char* kProbeOnField = "on";

// The class file. carrier_thread: the JVM has virtual threads (JDK 19 and
// later), whose Thread.currentThread() is not the platform thread that owns
// the ring; the probe then calls Thread.currentCarrierThread() instead (a
// package-private method of java.lang.Thread, reachable from java.lang).
std::vector<uint8_t> ProbeClassBytes(bool carrier_thread);

// Replaces the Utf8 constant `from` with `to` in a class file's constant
// pool (nothing else in a class file points into the pool by offset). False,
// and `bytes` untouched, if the pool is malformed or holds no such constant.
bool ReplaceUtf8Constant(std::vector<uint8_t>* bytes, const std::string& from, const std::string& to);

}  // namespace lookback::jvm
