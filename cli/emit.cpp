#include "emit.hpp"

namespace lstmlm::cli {

Emitter::Emitter(Format f) : format_(f), writer_(make_writer(f)) {}

void Emitter::begin(const Table& t) { writer_->begin(t, buf_); }
void Emitter::emit(const Record& r) { writer_->record(r, buf_); }
void Emitter::raw(std::string_view s) { buf_ += s; }

void Emitter::write_pending() {
  out_.write(buf_);
  buf_.clear();
}

void Emitter::flush() {
  write_pending();
  out_.flush();
}

void Emitter::end() {
  writer_->end(buf_);
  flush();
}

}  // namespace lstmlm::cli
