// Android's method traces (ART's .trace: Debug.startMethodTracing,
// `am profile start`, Android Studio's "Java/Kotlin method trace"), read into
// an ImportedTrace. Untrusted input: every read is bounds checked, a file
// that cannot be read is an Error with the byte offset, and a file that
// merely stops early (a device's buffer filled, a streaming trace whose app
// died) is read up to where it stops, with a warning.
//
// Layouts (art/runtime/trace.cc, dmtracedump):
//   non-streaming  a text key ("*version", version line, key=value lines,
//                  "*threads" tid<TAB>name lines, "*methods"
//                  0xID<TAB>class<TAB>name<TAB>signature<TAB>source[<TAB>line]
//                  lines, "*end"), then the binary part: u32 magic 'SLOW',
//                  u16 version, u16 offset of the first record, u64 start
//                  time (µs, wall clock), and in version 3 a u16 record size;
//                  records from that offset.
//   streaming      the binary header first (version | 0xF0), then records
//                  interleaved with special records that start with thread
//                  id 0: op 1 a method line (u16 length, text), op 2 a
//                  thread (u16 tid, u16 length, name), op 3 the summary
//                  (u32 length, the text key without methods), written last.
//   records        v1: u8 thread, u32 method|action, u32 time (9 bytes);
//                  v2: u16 thread, u32 method|action, u32 time (10 bytes);
//                  v3: as v2 with the record size from the header: 14 bytes
//                  when the clock is dual (thread CPU µs, then wall µs).
//   times          wall: µs since the start time; thread CPU: µs since the
//                  thread's first traced event. Action: the low 2 bits of
//                  the method id (0 enter, 1 exit, 2 unroll by an exception).
#pragma once

#include <cstdint>
#include <span>

#include "common/result.h"
#include "import/imported.h"

namespace lookback::import {

// True if `bytes` start like an ART trace: "*version" or the 'SLOW' magic.
bool LooksLikeArtTrace(std::span<const uint8_t> bytes);

Result<ImportedTrace> ParseArtTrace(std::span<const uint8_t> bytes);

}  // namespace lookback::import
