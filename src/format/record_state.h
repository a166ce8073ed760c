// The state a thread's records are decoded against: the announced epoch and
// the four base slots. One implementation for every decoder of ring records
// (the reader's model/decoder.h, and the runtime's window trimming and
// detectors), so they cannot disagree about what a window holds.
//
// A window of a ring starts mid-stream: the records before the first EPOCH
// and before the first FN_BASE of each slot were written under the state that
// those announcements replaced, and each announcement says what that was
// (EPOCH: epochs since the previous one; FN_BASE: the slot's previous base).
// Prime() reads it forward from the window's start; FORMAT.md ("The bound")
// says how far it has to look and why every record then decodes.
#pragma once

#include <cstdint>

#include "format/format.h"

namespace lookback::format {

class RecordState {
 public:
  static constexpr uint64_t kUnknown = ~uint64_t{0};

  constexpr RecordState() = default;
  explicit constexpr RecordState(RecordLayout layout) : layout_(layout) {}

  // Sets the state in force before the window's first announcements. `get(i)`
  // returns record i of n. Stops once the epoch and every slot the window can
  // refer to are known (one sync suffices), so it reads at most a sync
  // interval plus a few records of a well-formed window.
  template <class Get>
  uint64_t Prime(uint64_t n, Get&& get) {
    bool epoch_seen = false;
    unsigned seen = 0;        // slots whose first FN_BASE was read
    unsigned need = 0;        // slots some record so far may have used
    bool in_use_known = false;
    uint64_t i = 0;
    for (; i < n; ++i) {
      const uint64_t r = get(i);
      if (IsEvent(r)) {
        if (!in_use_known) need |= 1u << EventSlot(r, layout_);
        continue;
      }
      const auto kind = static_cast<ControlKind>(ControlKindOf(r));
      if (kind == ControlKind::kEpoch && !epoch_seen) {
        epoch_seen = true;
        const uint64_t delta = EpochDelta(r, layout_), value = EpochValue(r, layout_);
        epoch_ = delta != EpochDeltaMax(layout_) && delta <= value ? value - delta : kUnknown;
      } else if (kind == ControlKind::kFnBase) {
        const unsigned s = FnBaseSlot(r, layout_);
        if (!in_use_known) {
          // Slots only ever fill up: the set in use here covers every record before.
          need |= FnBaseInUse(r, layout_) & ~(1u << s);
          if (!FnBasePreviousKnown(r)) need &= ~(1u << s);  // the slot was empty before
          in_use_known = true;
        }
        if ((seen & (1u << s)) == 0) {
          seen |= 1u << s;
          base_[s] = FnBasePreviousKnown(r) ? FnBasePrevious(r) : kUnknown;
        }
      }
      if (epoch_seen && in_use_known && (need & ~seen) == 0) break;
    }
    return i;
  }

  // Applies a control record (EPOCH, FN_BASE; others leave the state alone).
  void Apply(uint64_t r) {
    switch (static_cast<ControlKind>(ControlKindOf(r))) {
      case ControlKind::kEpoch: epoch_ = EpochValue(r, layout_); break;
      case ControlKind::kFnBase: base_[FnBaseSlot(r, layout_)] = FnBaseValue(r); break;
      default: break;
    }
  }

  // An EVENT's full timestamp and key; false if the state it needs is unknown.
  bool Decode(uint64_t r, uint64_t* tsc, uint64_t* key) const {
    const uint64_t base = base_[EventSlot(r, layout_)];
    if (epoch_ == kUnknown || base == kUnknown) return false;
    *tsc = (epoch_ << layout_.tsc_low_bits) | EventTscLow(r, layout_);
    *key = (base << 32) | EventKeyLow(r);
    return true;
  }

  uint64_t epoch() const { return epoch_; }
  uint64_t base(unsigned slot) const { return base_[slot]; }
  void set_epoch(uint64_t e) { epoch_ = e; }
  void set_base(unsigned slot, uint64_t b) { base_[slot] = b; }
  RecordLayout layout() const { return layout_; }

 private:
  RecordLayout layout_ = kLayout;
  uint64_t epoch_ = kUnknown;
  uint64_t base_[kBaseSlots] = {kUnknown, kUnknown, kUnknown, kUnknown};
};

}  // namespace lookback::format
