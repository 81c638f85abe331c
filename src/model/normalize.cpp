// The line normalizations of lstmlm/normalize.hpp: the repo's Python-exact str.lower() and whitespace set,
// ICU for decompositions and character categories. A build without ICU (LSTMLM_NO_ICU: WebAssembly, where
// emscripten has no ICU offline) refuses the modes that need it: nfkc and ccnet.
#include "lstmlm/normalize.hpp"

#ifndef LSTMLM_NO_ICU
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/uniset.h>
#include <unicode/unistr.h>
#endif

#include <memory>
#include <stdexcept>

#include "lstmlm/error.hpp"
#include "lstmlm/text.hpp"
#include "model/unicode.hpp"

namespace lstmlm {
namespace {

std::u32string decode(std::string_view line) {
  size_t bad = 0;
  auto decoded = model::decode_utf8(line, &bad);
  if (!decoded) throw InputError("invalid UTF-8 at byte " + std::to_string(bad + 1));
  return std::move(*decoded);
}

#ifndef LSTMLM_NO_ICU
void check(UErrorCode status) {
  if (U_FAILURE(status)) throw std::runtime_error(std::string("ICU: ") + u_errorName(status));
}

// ICU may know a newer Unicode than Python 3.11 (Debian 12's ICU 72 is Unicode 15.0). Characters assigned
// after 14.0 (the version of lowercase_table.cpp) are unassigned to Python: no decomposition, category Cn.
// Filtering ICU by age gives exactly that, since decompositions of assigned characters never change.
class Icu {
 public:
  static const Icu& get() {
    static const Icu icu;  // a failed construction throws, and the next call tries again
    return icu;
  }
  icu::UnicodeSet known;  // assigned in Unicode 14.0
  std::unique_ptr<icu::FilteredNormalizer2> nfd, nfkc;

 private:
  Icu() {
    UErrorCode status = U_ZERO_ERROR;
    known.applyPattern(u"[:age=14.0:]", status).freeze();  // frozen: safe to read from any thread
    const icu::Normalizer2* nfd_all = icu::Normalizer2::getNFDInstance(status);
    const icu::Normalizer2* nfkc_all = icu::Normalizer2::getNFKCInstance(status);
    check(status);
    nfd = std::make_unique<icu::FilteredNormalizer2>(*nfd_all, known);
    nfkc = std::make_unique<icu::FilteredNormalizer2>(*nfkc_all, known);
  }
};

icu::UnicodeString normalized(const icu::Normalizer2& form, std::u32string_view s) {
  icu::UnicodeString in;
  for (char32_t c : s) in.append(static_cast<UChar32>(c));
  UErrorCode status = U_ZERO_ERROR;
  icu::UnicodeString out = form.normalize(in, status);
  check(status);
  return out;
}

// cc_net's UNICODE_PUNCT, in its order. Its "１" (U+FF11) entry is never reached: \d has made it "0" first.
struct Punct {
  char32_t from;
  const char* to;
};
constexpr Punct kCcnetPunct[] = {
    {0xFF0C, ","},    // ，
    {0x3002, "."},    // 。
    {0x3001, ","},    // 、
    {0x201E, "\""},   // „
    {0x201D, "\""},   // ”
    {0x201C, "\""},   // “
    {0x00AB, "\""},   // «
    {0x00BB, "\""},   // »
    {0xFF11, "\""},   // １
    {0x300D, "\""},   // 」
    {0x300C, "\""},   // 「
    {0x300A, "\""},   // 《
    {0x300B, "\""},   // 》
    {0x00B4, "'"},    // ´
    {0x2236, ":"},    // ∶
    {0xFF1A, ":"},    // ：
    {0xFF1F, "?"},    // ？
    {0xFF01, "!"},    // ！
    {0xFF08, "("},    // （
    {0xFF09, ")"},    // ）
    {0xFF1B, ";"},    // ；
    {0x2013, "-"},    // –
    {0x2014, " - "},  // —
    {0xFF0E, ". "},   // ．
    {0xFF5E, "~"},    // ～
    {0x2019, "'"},    // ’
    {0x2026, "..."},  // …
    {0x2501, "-"},    // ━
    {0x3008, "<"},    // 〈
    {0x3009, ">"},    // 〉
    {0x3010, "["},    // 【
    {0x3011, "]"},    // 】
    {0xFF05, "%"},    // ％
    {0x25BA, "-"},    // ►
};

const char* ccnet_punct(char32_t c) {
  for (const Punct& p : kCcnetPunct)
    if (p.from == c) return p.to;
  return nullptr;
}

std::string ccnet(std::u32string_view s) {
  // str.strip(): Python's whitespace is Unicode's White_Space plus U+001C-001F, which no ICU predicate is.
  while (!s.empty() && model::is_python_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && model::is_python_space(s.back())) s.remove_suffix(1);
  const Icu& icu = Icu::get();
  // Each later step maps one character of the NFD string on its own, so one pass does them all, in
  // cc_net's order: strip_accents, DIGIT_RE, replace_unicode_punct, remove_non_printing_char.
  icu::UnicodeString nfd = normalized(*icu.nfd, model::lowercase(s));
  std::string out;
  for (int32_t i = 0; i < nfd.length(); i = nfd.moveIndex32(i, 1)) {
    UChar32 c = nfd.char32At(i);
    int type = icu.known.contains(c) ? u_charType(c) : static_cast<int>(U_UNASSIGNED);
    if (type == U_NON_SPACING_MARK || c < 0x20 || (c >= 0x7F && c < 0xA0)) continue;
    if (type == U_DECIMAL_DIGIT_NUMBER) {
      out += '0';
    } else if (const char* p = ccnet_punct(static_cast<char32_t>(c))) {
      out += p;
    } else {
      model::append_utf8(out, static_cast<char32_t>(c));
    }
  }
  return out;
}
#else
[[noreturn]] void no_icu(Normalization n) {
  throw UsageError::option("normalize", std::string(" ") + to_string(n) +
                                            ": needs ICU, which this build (WebAssembly) does not have: use "
                                            "none or lower, or normalize the text before");
}
#endif

}  // namespace

Normalization parse_normalization(std::string_view name) {
  for (auto n : {Normalization::None, Normalization::Lower, Normalization::Nfkc, Normalization::Ccnet})
    if (name == to_string(n)) return n;
  throw UsageError("--normalize: '" + printable(name, 64) + "' is not one of none, lower, nfkc, ccnet");
}

const char* to_string(Normalization n) {
  switch (n) {
    case Normalization::None:
      return "none";
    case Normalization::Lower:
      return "lower";
    case Normalization::Nfkc:
      return "nfkc";
    case Normalization::Ccnet:
      return "ccnet";
  }
  return "?";
}

std::string normalize(std::string_view utf8_line, Normalization n) {
  switch (n) {
    case Normalization::None:
      return std::string(utf8_line);
    case Normalization::Lower:
      return model::encode_utf8(model::lowercase(decode(utf8_line)));
#ifndef LSTMLM_NO_ICU
    case Normalization::Nfkc: {
      std::string out;
      return normalized(*Icu::get().nfkc, decode(utf8_line)).toUTF8String(out);
    }
    case Normalization::Ccnet:
      return ccnet(decode(utf8_line));
#else
    case Normalization::Nfkc:
    case Normalization::Ccnet:
      no_icu(n);
#endif
  }
  return std::string(utf8_line);
}

}  // namespace lstmlm
