# Example signatures for Android-style apps: work on the main thread that
# blocks it. Patterns are globs matched against the demangled function name,
# the name without its parameter list, or the short name (last component).
#
#   chain: A >> B    B runs anywhere below A (any depth)
#   chain: A > B     B is called directly by A
#   min: 10ms        the chain's last frame lasts at least this long
#   min-top: 16ms    the chain's first frame lasts at least this long

name: binder-in-draw
description: a synchronous binder transaction while drawing a frame
chain: *::onDraw >> *BpBinder::transact
min: 2ms

name: sleep-after-binder
description: a UI handler sleeps waiting for a binder reply
chain: *::on*Click* >> *::transact* >> *wait*
min: 10ms

name: janky-frame-io
description: file I/O under a frame that missed its 16 ms deadline
chain: *Choreographer*doFrame* >> *::read*
min-top: 16ms

name: lock-in-input
description: input dispatch blocked on a mutex for 5 ms or more
chain: *InputDispatcher*dispatch* >> pthread_mutex_lock
min: 5ms

name: gc-in-scroll
chain: *RecyclerView*onScroll* >> *GarbageCollect*
