// The class the inlined probes call: java.lang.LookbackProbe, defined by the
// agent into java.base (boot loader, package java.lang) once the VM has
// started, so that every class — java.base's included — can call it.
//
//   public final class java.lang.LookbackProbe {
//     public static boolean on;                  // set by the agent when tracing starts
//     public static void enter(int id) { if (on) enterNative(id); }
//     public static void exit(int id)  { if (on) exitNative(id); }
//     private static native void enterNative(int id);   // natives.cc
//     private static native void exitNative(int id);
//     // Thread.setName's first call (the rename hook, rewriter.h): returns the
//     // name to set, and tells lookback the thread's new name.
//     public static native String renaming(Thread t, String name);
//   }
//
// enter/exit are tiny, so the JIT inlines them into every caller: with
// tracing off the probe costs a static load and a branch; with it on, a
// critical JNI call (natives.cc). Written here byte by byte (class version
// 49: no StackMapTable needed for the one branch) rather than compiled from
// Java, because javac refuses java.lang sources without module patching and
// the agent should not need a JDK to build.
#pragma once

#include <cstdint>
#include <vector>

namespace lookback::jvm {

inline constexpr const char* kProbeClass = "java/lang/LookbackProbe";
inline constexpr const char* kProbeOnField = "on";

std::vector<uint8_t> ProbeClassBytes();

}  // namespace lookback::jvm
