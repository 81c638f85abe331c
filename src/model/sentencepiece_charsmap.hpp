// The normalizer tables of a SentencePiece model, checked before the model reaches libsentencepiece: the
// library follows the double-array trie inside a table (darts-clone) without any bounds check, so a crafted
// table makes it read far outside the model and crash the process on its first text.
#pragma once
#include <string>
#include <string_view>

namespace lstmlm::model {

// What is wrong with one precompiled_charsmap blob, "" when no lookup libsentencepiece can make on it
// leaves it (the bounds are listed in sentencepiece_charsmap.cpp).
std::string charsmap_problem(std::string_view blob);

// Throws ModelError naming `path` when the serialized ModelProto `proto` is not a readable protobuf or when
// a precompiled_charsmap of its normalizer_spec or denormalizer_spec has a problem.
void check_normalizer_tables(std::string_view proto, const std::string& path);

}  // namespace lstmlm::model
