# Signatures for tests/programs/fleet.cc (the fleet corpus): a click that
# waits on a binder reply fires only on the hosts run with `binder`.

name: binder-on-click
description: a click handler blocks on a binder reply
chain: on_click >> binder_call > wait_reply
min: 1ms

# Never in the corpus: parsing under a click.
name: parse-on-click
chain: on_click >> *parse*
