# cmake -DINPUT=file -DOUTPUT=file.cc -DSYMBOL=name -P embed_bytes.cmake
# Writes a C++ source defining `extern const unsigned char SYMBOL[]` and
# `extern const unsigned long SYMBOL_size` with INPUT's bytes (the JVM agent's
# probe class, compiled by javac at build time).
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n  " bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/embed_bytes.cmake.\n"
  "extern const unsigned char ${SYMBOL}[] = {\n  ${bytes}\n};\n"
  "extern const unsigned long ${SYMBOL}_size = ${size};\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
