# docs/c-api.md shows tests/capi/example.c verbatim (the program the tests compile and run): fails unless the
# file's whole text is one ```c block of the page.
#   cmake -DDOC=docs/c-api.md -DEXAMPLE=tests/capi/example.c -P tests/capi/check_example.cmake
file(READ "${DOC}" doc)
file(READ "${EXAMPLE}" example)
string(CONCAT block "```c\n" "${example}" "```\n")
string(FIND "${doc}" "${block}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC} does not hold ${EXAMPLE} verbatim in a ```c block: copy the file into the page")
endif()
message(STATUS "${DOC} shows ${EXAMPLE} verbatim")
