# Signatures for tests/programs/timing.cc (the analyses' test program).
# Only sleep-after-binder should match it (twice, ~20 ms each); the others
# describe chains the program does not have.

name: sleep-after-binder
description: a click handler blocks on a binder reply (Hubble's case study)
chain: on_click >> binder_call > wait_reply
min: 10ms

# wait_reply never runs directly under idle_tick.
name: wait-in-idle-tick
chain: idle_tick > wait_reply

# Parsing is only done while rendering, never on a click.
name: parse-on-click
chain: on_click >> *parse*

# slow_parse takes ~30 ms: a 1 s threshold keeps it out (with room for a
# loaded machine that stretches the spin).
name: very-slow-parse
chain: handle_request >> slow_parse
min: 1s
