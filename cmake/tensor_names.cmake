# Generates format/tensor_names.hpp (tensor names and gate order of format v1) from
# src/format/tensor_names.json at configure time. lstmlm.format (python/lstmlm/format) reads the same file.
# Sets LSTMLM_GENERATED_INCLUDE_DIR: the directory that holds format/tensor_names.hpp.
set(LSTMLM_TENSOR_SPEC ${CMAKE_CURRENT_SOURCE_DIR}/src/format/tensor_names.json)
set(LSTMLM_GENERATED_INCLUDE_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${LSTMLM_TENSOR_SPEC}
  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/tensor_names.hpp.in)
file(READ ${LSTMLM_TENSOR_SPEC} _spec)

string(JSON _ngates LENGTH "${_spec}" gate_order)
set(LSTMLM_GATE_COUNT ${_ngates})
set(LSTMLM_GATE_ORDER "")
set(LSTMLM_GATE_INDICES "")
math(EXPR _last "${_ngates} - 1")
foreach(_i RANGE ${_last})
  string(JSON _g GET "${_spec}" gate_order ${_i})
  if(NOT _g MATCHES "^[a-z]$")
    message(FATAL_ERROR "${LSTMLM_TENSOR_SPEC}: gate_order[${_i}] '${_g}' is not one lowercase letter")
  endif()
  string(TOUPPER ${_g} _G)
  string(APPEND LSTMLM_GATE_ORDER ${_g})
  string(APPEND LSTMLM_GATE_INDICES "inline constexpr int kGate${_G} = ${_i};\n")
endforeach()

set(LSTMLM_TENSOR_FUNCTIONS "")
string(JSON _ntensors LENGTH "${_spec}" tensors)
math(EXPR _last "${_ntensors} - 1")
foreach(_i RANGE ${_last})
  string(JSON _key MEMBER "${_spec}" tensors ${_i})
  string(JSON _name GET "${_spec}" tensors ${_key})
  if(NOT _key MATCHES "^[a-z_][a-z0-9_]*$" OR NOT _name MATCHES "^[A-Za-z0-9_.{}]+$")
    message(FATAL_ERROR "${LSTMLM_TENSOR_SPEC}: tensors.${_key} = '${_name}' is not a plain name")
  endif()
  string(FIND "${_name}" "{k}" _pos)
  if(_pos EQUAL -1)
    string(APPEND LSTMLM_TENSOR_FUNCTIONS "inline std::string ${_key}() { return \"${_name}\"; }\n")
  else()
    string(SUBSTRING "${_name}" 0 ${_pos} _prefix)
    math(EXPR _after "${_pos} + 3")
    string(SUBSTRING "${_name}" ${_after} -1 _suffix)
    set(_tail "")
    if(NOT _suffix STREQUAL "")
      set(_tail " s += \"${_suffix}\";")
    endif()
    # Appended, not "a" + b: GCC 12 gives a false -Wrestrict on operator+(const char*, std::string&&).
    string(APPEND LSTMLM_TENSOR_FUNCTIONS "inline std::string ${_key}(std::size_t k) {\n"
      "  std::string s = \"${_prefix}\";\n  s += std::to_string(k);${_tail}\n  return s;\n}\n")
  endif()
endforeach()

configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/tensor_names.hpp.in
  ${LSTMLM_GENERATED_INCLUDE_DIR}/format/tensor_names.hpp @ONLY)
