#include "platform/bank/internal/libxml.h"

#include <libxml/globals.h>
#include <libxml/parser.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace gpunex::platform::bank::internal {

void InitLibxml() {
  static std::once_flag once;
  std::call_once(once, [] { xmlInitParser(); });
}

namespace {

// libxml2 initialises itself on the first call of many of its functions, without a lock:
// two threads making their first calls at once both set up its globals (seen: a mutex
// made twice, one leaked, under the sanitizers). Initialised when the program loads,
// before any thread of ours runs, that first call cannot race.
const bool kInitialisedAtLoad = (InitLibxml(), true);

}  // namespace

XmlErrors::XmlErrors()
    : previous_structured_(xmlStructuredError),
      previous_structured_context_(xmlStructuredErrorContext),
      previous_generic_(xmlGenericError),
      previous_generic_context_(xmlGenericErrorContext) {
  InitLibxml();
  xmlSetStructuredErrorFunc(this, &XmlErrors::Structured);
  xmlSetGenericErrorFunc(this, &XmlErrors::Generic);
}

XmlErrors::~XmlErrors() {
  xmlSetStructuredErrorFunc(previous_structured_context_, previous_structured_);
  xmlSetGenericErrorFunc(previous_generic_context_, previous_generic_);
}

void XmlErrors::Structured(void* self, XmlErrorArg error) {
  if (!self || !error) return;
  std::string message = error->message ? error->message : "unknown libxml2 error";
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
    message.pop_back();
  }
  if (error->line > 0) message = "line " + std::to_string(error->line) + ": " + message;
  static_cast<XmlErrors*>(self)->Add(std::move(message));
}

void XmlErrors::Generic(void* self, const char* format, ...) {
  if (!self || !format) return;
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  std::string message = buf;
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
    message.pop_back();
  }
  if (!message.empty()) static_cast<XmlErrors*>(self)->Add(std::move(message));
}

void XmlErrors::Add(std::string message) {
  // A pathological document can raise an error per node: keep the first ones.
  constexpr size_t kMaxKept = 100;
  if (messages_.size() < kMaxKept) messages_.push_back(std::move(message));
}

std::string XmlErrors::Summary(std::string_view fallback, size_t max) const {
  if (messages_.empty()) return std::string(fallback);
  std::string out;
  for (size_t i = 0; i < messages_.size() && i < max; ++i) {
    if (i > 0) out += "; ";
    out += messages_[i];
  }
  if (messages_.size() > max) {
    out += "; and " + std::to_string(messages_.size() - max) + " more";
  }
  return out;
}

}  // namespace gpunex::platform::bank::internal
