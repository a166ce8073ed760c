// The decoder is header-only (templates over the sink) so that per-event
// callbacks inline; this file anchors the library and holds nothing else.
#include "model/decoder.h"
